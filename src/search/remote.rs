//! The remote side of a federated search: the queries whose `federationOptions.remote` names
//! another instance of the network are sent to it — one `POST /multi-search` per remote, all
//! in flight while the local queries run — and its hits come back ready to merge.
//!
//! What a remote is sent (as Meilisearch 1.41 sends it): its queries, each with
//! `federationOptions = {weight, remote: null, queryPosition: <position in the request>}`,
//! and the request's `federation` asking for every hit up to the page's end from the first
//! (`offset` 0 and `limit` = offset + limit, or page 1 of `page × hitsPerPage` hits; page 0
//! kept), without `mergeFacets`.
//!
//! What comes back: a remote's answer is kept only when every hit carries
//! `_federation.weightedRankingScore` and `_federation.weightedScoreValues`; otherwise, or
//! when the call fails, the remote is reported in `remoteErrors` and adds no hit. Kept hits
//! lose `weightedScoreValues` and `extra_document` (whose fields join the hit) and gain
//! `_federation.remote`.
//!
//! Invariant: a remote failure never fails the request.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use shards::filter::normalize_facet;
use shards::search::SortValue;
use shards::search::weighted_score::WeightedValue;

use crate::errors::{Code, ResponseError};
use crate::network::Remote;
use crate::network::availability::RemoteAvailability;
use crate::network::remote_call::{missing_in_remote_hit, remote_multi_search};

pub use crate::network::remote_call::WEIGHTED_SCORE_VALUES;
/// `_federation.extra_document`: fields a remote adds to its hit.
pub const EXTRA_DOCUMENT: &str = "extra_document";
/// `_federation.pinnedPosition`: where a dynamic search rule of the remote pinned its hit.
pub const PINNED_POSITION: &str = "pinnedPosition";

/// What a federated search knows of the network.
#[derive(Debug, Clone)]
pub struct NetworkContext {
    /// The network searches are partitioned by (during a topology change, the one before
    /// it until the change switches searches to the new shards).
    pub network: std::sync::Arc<crate::network::Network>,
    /// The shards the `_shard` conditions of the local queries name.
    pub filter_shards: Option<shards::network_shards::NetworkShards>,
    /// The version of the change `network` comes before, when the search is partitioned by
    /// the shards before a topology change (the remotes are told so).
    pub before_change: Option<uuid::Uuid>,
    /// Whether the `network` experimental feature is on.
    pub enabled: bool,
    /// Whether the request came from another instance (`Meili-Proxy-Search: true`).
    pub is_proxy: bool,
    /// Whether each copy of a networked query gets a position of its own (a single-index
    /// search across the network: copy `i` is query `i`) rather than the position of the
    /// query it copies (a federated multi-search).
    pub numbered_copies: bool,
    /// Which remotes answer lately: a shard is asked of its available owners first, and
    /// each remote's failure or answer is recorded there.
    pub availability: std::sync::Arc<crate::network::availability::RemoteAvailability>,
}

impl NetworkContext {
    /// Checks that the `network` feature is on for `action`.
    pub fn check_enabled(&self, action: &str) -> Result<(), ResponseError> {
        crate::network::check_network_enabled(self.enabled, action)
    }

    /// Whether a read of one index (a document read, a facet search) goes across the network,
    /// as Meilisearch 1.50 decides it: as `useNetwork` says (given, it needs the `network`
    /// feature), by default when the network has a leader, never for another instance's
    /// read.
    pub fn reads_across(&self, use_network: Option<bool>) -> Result<bool, ResponseError> {
        if use_network.is_some() {
            self.check_enabled(super::multi::USE_NETWORK_ACTION)?;
        }
        Ok(!self.is_proxy && use_network.unwrap_or(self.network.is_sharding()))
    }
}

/// The queries of one federated search sent to each remote, by remote name.
#[derive(Debug, Default)]
pub struct RemoteQueries {
    by_remote: BTreeMap<String, (Remote, Vec<RemoteQuery>)>,
}

/// One query for a remote, with the other instances that may answer it instead.
#[derive(Debug, Clone)]
pub struct RemoteQuery {
    /// The query as the remote is sent it.
    json: Value,
    /// Who to ask next when the remote fails, in order (see [`super::remote_failover`]).
    pub(super) fallbacks: Vec<(String, Remote)>,
    /// The remotes that failed to answer it so far.
    pub(super) failed_by: Vec<String>,
}

impl RemoteQueries {
    /// Adds the query at `position` (its JSON as the request gave it, without
    /// `federationOptions`) for the remote `name`.
    pub fn push(
        &mut self,
        name: &str,
        remote: &Remote,
        query: Map<String, Value>,
        weight: f64,
        position: usize,
    ) {
        self.push_with_fallbacks(name, remote, query, (weight, position), Vec::new());
    }

    /// Adds the query at `position` with `weight` for the remote `name`, to be asked of
    /// `fallbacks` in turn should it fail.
    pub fn push_with_fallbacks(
        &mut self,
        name: &str,
        remote: &Remote,
        mut query: Map<String, Value>,
        (weight, position): (f64, usize),
        fallbacks: Vec<(String, Remote)>,
    ) {
        query.insert(
            "federationOptions".to_owned(),
            json!({ "weight": weight, "remote": null, "queryPosition": position }),
        );
        let query = RemoteQuery {
            json: Value::Object(query),
            fallbacks,
            failed_by: Vec::new(),
        };
        self.add(name, remote, query);
    }

    /// Adds `query` for the remote `name`.
    pub(super) fn add(&mut self, name: &str, remote: &Remote, query: RemoteQuery) {
        self.by_remote
            .entry(name.to_owned())
            .or_insert_with(|| (remote.clone(), Vec::new()))
            .1
            .push(query);
    }

    pub fn is_empty(&self) -> bool {
        self.by_remote.is_empty()
    }

    /// The queries by remote name (for tests).
    #[cfg(test)]
    pub(super) fn into_queries(self) -> Vec<(String, Vec<RemoteQuery>)> {
        self.by_remote
            .into_iter()
            .map(|(name, (_, queries))| (name, queries))
            .collect()
    }
}

/// One remote's hits and figures, ready to merge.
#[derive(Debug)]
pub struct RemoteResult {
    pub name: String,
    pub hits: Vec<RemoteHit>,
    /// `estimatedTotalHits` (or `totalHits`) of the remote.
    pub total: u64,
    pub processing_time_ms: u64,
    /// The remote's `facetsByIndex`, when it answered some.
    pub facets_by_index: Option<Map<String, Value>>,
}

/// A hit of a remote.
#[derive(Debug)]
pub struct RemoteHit {
    pub document: Map<String, Value>,
    /// The groups the hit is compared by (its `weightedScoreValues`).
    pub values: Vec<WeightedValue>,
    pub weighted_score: f64,
    pub position: usize,
    /// Whether the hit was ranked by its vector (it counts in `semanticHitCount`).
    pub semantic: bool,
    /// Where a dynamic search rule of the remote pinned it (`_federation.pinnedPosition`).
    pub pinned_position: Option<u32>,
}

/// One remote's search, in flight, with the queries it was sent.
pub(super) struct Search {
    pub(super) name: String,
    pub(super) queries: Vec<RemoteQuery>,
    task: crate::runtime::Task<Result<Value, ResponseError>>,
}

/// The searches sent, in flight.
pub struct InFlight {
    searches: Vec<Search>,
    /// Where each remote's failure or answer is recorded.
    availability: Arc<RemoteAvailability>,
    /// The `federation` every remote is sent (again, to the next owner of a failed query).
    federation: Map<String, Value>,
    /// The change the queries were partitioned before, if any.
    before_change: Option<uuid::Uuid>,
}

/// Sends every remote its queries with `federation`, all at once, saying when they were
/// partitioned before the change `before_change`.
pub fn start(
    queries: RemoteQueries,
    federation: &Map<String, Value>,
    before_change: Option<uuid::Uuid>,
    availability: Arc<RemoteAvailability>,
) -> InFlight {
    let mut searches = Vec::with_capacity(queries.by_remote.len());
    for (name, (remote, remote_queries)) in queries.by_remote {
        let bodies: Vec<Value> = remote_queries
            .iter()
            .map(|query| query.json.clone())
            .collect();
        let body = json!({ "queries": bodies, "federation": federation });
        let task = crate::runtime::spawn(async move {
            let client = crate::outgoing::shared::core_client()
                .ok_or_else(|| ResponseError::internal("remote search outside of a core"))?;
            remote_multi_search(&client, &remote, &body, before_change).await
        });
        searches.push(Search {
            name,
            queries: remote_queries,
            task,
        });
    }
    InFlight {
        searches,
        availability,
        federation: federation.clone(),
        before_change,
    }
}

/// Waits for every remote: their results, and the error of each remote that failed. The
/// queries of a failed remote that name other owners are asked of the next one, round after
/// round (see [`super::remote_failover`]); a remote counts as failed in the answer only when
/// a query it could not answer found no other owner that could.
pub async fn finish(in_flight: InFlight) -> (Vec<RemoteResult>, BTreeMap<String, ResponseError>) {
    let InFlight {
        mut searches,
        availability,
        federation,
        before_change,
    } = in_flight;
    let mut results = Vec::new();
    let mut failover = super::remote_failover::Failover::default();
    while !searches.is_empty() {
        for search in searches {
            let answer = search.task.await;
            match answer.and_then(|answer| remote_result(&search.name, answer)) {
                Ok(result) => {
                    availability.answered(&search.name);
                    results.push(result);
                }
                Err(error) => {
                    record_failure(&availability, &search.name, &error);
                    failover.failed(search.name, search.queries, error);
                }
            }
        }
        let retries = failover.next_round();
        if retries.is_empty() {
            break;
        }
        searches = start(retries, &federation, before_change, availability.clone()).searches;
    }
    (results, failover.errors())
}

/// A remote that failed with a server-side error (5xx: unreachable, timed out, failing) is
/// unavailable for a while, as Meilisearch 1.50 marks it; a refusal (4xx) says nothing of
/// whether it answers.
pub fn record_failure(availability: &RemoteAvailability, name: &str, error: &ResponseError) {
    if error.status() >= 500 {
        availability.failed(name);
    }
}

/// A remote's answer as a result, or the error naming what its hits lack.
fn remote_result(name: &str, answer: Value) -> Result<RemoteResult, ResponseError> {
    let Value::Object(mut answer) = answer else {
        return Err(missing_in_remote_hit("hits"));
    };
    let hits = match answer.remove("hits") {
        Some(Value::Array(hits)) => hits,
        _ => return Err(missing_in_remote_hit("hits")),
    };
    let hits = hits
        .into_iter()
        .map(|hit| remote_hit(name, hit))
        .collect::<Result<Vec<_>, _>>()?;
    let total = ["estimatedTotalHits", "totalHits"]
        .iter()
        .find_map(|key| answer.get(*key).and_then(Value::as_u64))
        .unwrap_or(0);
    let facets_by_index = match answer.remove("facetsByIndex") {
        Some(Value::Object(facets)) => Some(facets),
        _ => None,
    };
    Ok(RemoteResult {
        name: name.to_owned(),
        hits,
        total,
        processing_time_ms: answer
            .get("processingTimeMs")
            .and_then(Value::as_u64)
            .unwrap_or(0),
        facets_by_index,
    })
}

/// One hit of remote `name`, its `_federation` checked and rewritten.
fn remote_hit(name: &str, hit: Value) -> Result<RemoteHit, ResponseError> {
    let Value::Object(mut document) = hit else {
        return Err(missing_in_remote_hit("._federation"));
    };
    let Some(Value::Object(federation)) = document.get_mut("_federation") else {
        return Err(missing_in_remote_hit("._federation"));
    };
    let score_values = federation
        .remove(WEIGHTED_SCORE_VALUES)
        .ok_or_else(|| missing_in_remote_hit("._federation.weightedScoreValues"))?;
    let values = parse_score_values(&score_values).map_err(|reason| {
        ResponseError::new(
            Code::RemoteBadResponse,
            format!("could not parse weighted score values in the remote hit: {reason}"),
        )
    })?;
    let weighted_score = federation
        .get("weightedRankingScore")
        .and_then(Value::as_f64)
        .ok_or_else(|| missing_in_remote_hit("._federation.weightedRankingScore"))?;
    let position = federation
        .get("queriesPosition")
        .and_then(Value::as_u64)
        .and_then(|position| usize::try_from(position).ok())
        .ok_or_else(|| missing_in_remote_hit("._federation.queriesPosition"))?;
    let extra = federation.remove(EXTRA_DOCUMENT);
    let pinned_position = federation
        .remove(PINNED_POSITION)
        .and_then(|position| position.as_u64())
        .and_then(|position| u32::try_from(position).ok());
    federation.insert("remote".to_owned(), Value::String(name.to_owned()));
    // Meilisearch joins a pinned hit's extra fields to nothing: it drops them.
    if let (Some(Value::Object(extra)), None) = (extra, pinned_position) {
        document.extend(extra);
    }
    Ok(RemoteHit {
        document,
        values,
        weighted_score,
        position,
        semantic: is_semantic(&score_values),
        pinned_position,
    })
}

/// Weighted values as `weightedScoreValues` carries them: `{"weightedScore": s}`,
/// `{"sort": {"asc", "value"}}`, `{"geoSort": {"asc", "distance"}}`, `{"vectorSort": s}`.
pub fn score_values_json(values: &[WeightedValue]) -> Value {
    let groups: Vec<Value> = values
        .iter()
        .map(|value| match value {
            WeightedValue::Score(score) => json!({ "weightedScore": score }),
            WeightedValue::Vector(score) => json!({ "vectorSort": score }),
            WeightedValue::Sort { ascending, value } => {
                let shown = match value {
                    SortValue::Number(number) => json!(number),
                    SortValue::String { original, .. } => json!(original),
                    SortValue::Missing => Value::Null,
                };
                json!({ "sort": { "asc": ascending, "value": shown } })
            }
            WeightedValue::GeoSort {
                ascending,
                distance,
            } => json!({ "geoSort": { "asc": ascending, "distance": distance } }),
        })
        .collect();
    Value::Array(groups)
}

/// The weighted values of a remote hit's `weightedScoreValues`, or why they do not read.
pub fn parse_score_values(values: &Value) -> Result<Vec<WeightedValue>, String> {
    let groups = values.as_array().ok_or("expected an array")?;
    groups.iter().map(parse_score_value).collect()
}

fn parse_score_value(group: &Value) -> Result<WeightedValue, String> {
    let number = |value: &Value| {
        value
            .as_f64()
            .ok_or(format!("expected a number in `{group}`"))
    };
    let ascending = |value: &Value| {
        value["asc"]
            .as_bool()
            .ok_or(format!("expected `asc` in `{group}`"))
    };
    if let Some(score) = group.get("weightedScore") {
        return Ok(WeightedValue::Score(number(score)?));
    }
    if let Some(score) = group.get("vectorSort") {
        return Ok(WeightedValue::Vector(number(score)?));
    }
    if let Some(sort) = group.get("sort") {
        let value = match &sort["value"] {
            Value::Number(value) => SortValue::Number(value.as_f64().unwrap_or_default()),
            Value::String(text) => SortValue::String {
                normalized: normalize_facet(text),
                original: text.clone(),
            },
            _ => SortValue::Missing,
        };
        return Ok(WeightedValue::Sort {
            ascending: ascending(sort)?,
            value,
        });
    }
    if let Some(geo) = group.get("geoSort") {
        return Ok(WeightedValue::GeoSort {
            ascending: ascending(geo)?,
            distance: geo["distance"].as_f64(),
        });
    }
    Err(format!("unknown group `{group}`"))
}

/// Whether the score values hold a `vectorSort` group.
fn is_semantic(score_values: &Value) -> bool {
    score_values
        .as_array()
        .is_some_and(|groups| groups.iter().any(|group| group.get("vectorSort").is_some()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_remote_hit_loses_its_score_values_and_gains_its_remote() {
        let hit = json!({
            "id": 1,
            "_federation": {
                "indexUid": "movies", "queriesPosition": 2, "weightedRankingScore": 0.5,
                "weightedScoreValues": [{"vectorSort": 0.5}], "extra_document": {"joined": true}
            }
        });
        let hit = remote_hit("ms1", hit).unwrap();
        assert_eq!(hit.position, 2);
        assert!(hit.semantic);
        assert_eq!(
            Value::Object(hit.document),
            json!({"id": 1, "_federation": {"indexUid": "movies", "queriesPosition": 2,
                "weightedRankingScore": 0.5, "remote": "ms1"}, "joined": true})
        );
    }

    #[test]
    fn a_hit_without_score_values_makes_the_remote_an_error() {
        let answer =
            json!({"hits": [{"_federation": {"weightedRankingScore": 1.0, "queriesPosition": 0}}]});
        let error = remote_result("ms1", answer).unwrap_err();
        assert_eq!(error.code, crate::errors::Code::RemoteBadResponse);
        assert!(
            error
                .message
                .starts_with("remote hit does not contain `._federation.weightedScoreValues`")
        );
    }
}
