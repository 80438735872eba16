//! A search of one index across the network (`useNetwork: true`, the default when the
//! network has a leader), as Meilisearch 1.41 runs it: the query becomes a federated
//! multi-search of one networked query, whose copies each get a query position of their own
//! — one per remote of the network without a leader (this instance searches its own index
//! only when it is one of the remotes), one per network shard with a leader (see
//! [`super::shard_partition`]) — and the federated answer is turned back into a search
//! answer: hits keep their `_federation`, the index's facets become `facetDistribution` and
//! `facetStats`, and `remoteErrors` tells which remotes failed.
//!
//! What moves to the federation: `offset`, `limit`, `page`, `hitsPerPage`, `distinct`,
//! `showPerformanceDetails`, and `facets` (as `facetsByIndex` of the index).
//!
//! `personalize` stays here: the merged page is reordered once, on this instance, within
//! the budget of the index's `searchCutoffMs` (its default when this instance does not have
//! the index), as Meilisearch 1.41 reorders a networked search's answer.
//!
//! Invariant: the copies sent to remotes carry no `useNetwork` (without a leader) or
//! `useNetwork: false` (with one), so no instance fans out again.

use std::rc::Rc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::multi::{decode_body, multi_search};
use super::parameters::SearchBody;
use super::personalize::{personalize_result, take_personalize};
use super::prepare::SEARCH_CUTOFF_MS_DEFAULT;
use super::remote::NetworkContext;
use crate::auth::AuthContext;
use crate::control::features::RuntimeFeatures;
use crate::coordinator::Coordinator;
use crate::errors::ResponseError;
use crate::personalization::Personalization;

/// The keys of a federated answer a search answer keeps, in the search answer's order
/// (after `hits` and `query`); the facets are added where `facetDistribution` goes.
const KEPT_KEYS: &[&str] = &[
    "processingTimeMs",
    "hitsPerPage",
    "page",
    "totalPages",
    "totalHits",
    "limit",
    "offset",
    "estimatedTotalHits",
];

/// The keys that follow the facets.
const TRAILING_KEYS: &[&str] = &[
    "requestUid",
    "remoteErrors",
    "semanticHitCount",
    "performanceDetails",
];

/// Runs `body` on `index_uid` across the network; `personalize` reorders the merged page
/// through `personalization`.
pub async fn search_across_network(
    coordinator: &Rc<Coordinator>,
    index_uid: &str,
    mut body: SearchBody,
    context: &AuthContext,
    features: RuntimeFeatures,
    network: &NetworkContext,
    personalization: &Personalization,
) -> Result<Map<String, Value>, ResponseError> {
    let deadline = search_deadline(coordinator, index_uid);
    let personalize = take_personalize(&mut body);
    // The one query is networked: by shard when the network has a leader (its default), by
    // remote otherwise; its copies are numbered apart.
    body.use_network = (!network.network.is_sharding()).then_some(true);
    let federation = federation_of(index_uid, &mut body);
    let query = body.q.clone().unwrap_or_default();
    let mut parameters = match serde_json::to_value(&body).map_err(ResponseError::internal)? {
        Value::Object(parameters) => parameters,
        _ => Map::new(),
    };
    parameters.insert("indexUid".to_owned(), json!(index_uid));
    let request = decode_body(json!({ "federation": federation, "queries": [parameters] }))?;
    let network = NetworkContext {
        numbered_copies: true,
        ..network.clone()
    };
    let federated = multi_search(
        coordinator,
        request,
        context,
        features,
        &network,
        personalization,
    )
    .await?;
    let mut answer = search_answer(federated, index_uid, query);
    if let Some(request) = &personalize {
        personalize_result(personalization, &mut answer, request, deadline).await?;
    }
    Ok(answer)
}

/// The end of the search's budget: `searchCutoffMs` of the index here, or its default.
fn search_deadline(coordinator: &Coordinator, index_uid: &str) -> Option<Instant> {
    let budget = coordinator
        .index(index_uid)
        .ok()
        .and_then(|record| record.settings.search_cutoff_ms)
        .unwrap_or(SEARCH_CUTOFF_MS_DEFAULT);
    Instant::now().checked_add(Duration::from_millis(budget))
}

/// Takes the federation-level parameters out of `body`.
fn federation_of(index_uid: &str, body: &mut SearchBody) -> Map<String, Value> {
    let mut federation = Map::new();
    let moved = [
        ("offset", body.offset.take()),
        ("limit", body.limit.take()),
        ("page", body.page.take()),
        ("hitsPerPage", body.hits_per_page.take()),
    ];
    for (key, value) in moved {
        if let Some(value) = value {
            federation.insert(key.to_owned(), json!(value));
        }
    }
    if let Some(distinct) = body.distinct.take() {
        federation.insert("distinct".to_owned(), json!(distinct));
    }
    if std::mem::take(&mut body.show_performance_details) {
        federation.insert("showPerformanceDetails".to_owned(), json!(true));
    }
    if let Some(facets) = body.facets.take().filter(|facets| !facets.is_empty()) {
        federation.insert("facetsByIndex".to_owned(), json!({ index_uid: facets }));
    }
    federation
}

/// The federated answer as a search answer of `index_uid`.
fn search_answer(
    mut federated: Map<String, Value>,
    index_uid: &str,
    query: String,
) -> Map<String, Value> {
    let mut answer = Map::new();
    answer.insert(
        "hits".to_owned(),
        federated.remove("hits").unwrap_or_else(|| json!([])),
    );
    answer.insert("query".to_owned(), Value::String(query));
    for key in KEPT_KEYS {
        if let Some(value) = federated.remove(*key) {
            answer.insert((*key).to_owned(), value);
        }
    }
    let facets = federated
        .remove("facetsByIndex")
        .and_then(|mut by_index| by_index.get_mut(index_uid).map(Value::take));
    if let Some(mut facets) = facets {
        answer.insert(
            "facetDistribution".to_owned(),
            facets["distribution"].take(),
        );
        answer.insert("facetStats".to_owned(), facets["stats"].take());
    }
    for key in TRAILING_KEYS {
        if let Some(value) = federated.remove(*key) {
            answer.insert((*key).to_owned(), value);
        }
    }
    answer
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_federated_answer_reads_as_a_search_answer() {
        let federated = json!({
            "hits": [{"id": 1}], "processingTimeMs": 3, "limit": 20, "offset": 0,
            "estimatedTotalHits": 1,
            "facetsByIndex": {"movies": {"distribution": {"genre": {"drama": 1}}, "stats": {}}},
            "requestUid": "r", "remoteErrors": {}
        });
        let Value::Object(federated) = federated else {
            unreachable!()
        };
        let answer = search_answer(federated, "movies", "carol".to_owned());
        assert_eq!(
            serde_json::to_string(&answer).unwrap(),
            r#"{"hits":[{"id":1}],"query":"carol","processingTimeMs":3,"limit":20,"offset":0,"estimatedTotalHits":1,"facetDistribution":{"genre":{"drama":1}},"facetStats":{},"requestUid":"r","remoteErrors":{}}"#
        );
    }
}
