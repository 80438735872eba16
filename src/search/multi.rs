//! `POST /multi-search`: several searches in one request, answered side by side, or, with
//! `federation`, merged into one list of hits.
//!
//! Decoding: the body is `{"queries": [...], "federation"?: {...}}`; each query is a search
//! (decoded at `.queries[i]`, so messages point into the request) plus `indexUid` and
//! `federationOptions`. Every error met while running query `i` is answered with
//! ``Inside `.queries[i]`: `` before its message, and a missing index is a 400 there.
//!
//! Federated merge: every query returns its first `federation.offset + federation.limit`
//! hits; as in Meilisearch, the queries of one index are merged first (a document found by
//! several of them appears once, at its first place), then the indexes' lists, each time by
//! comparing the heads' weighted details rule group by rule group, sort values in between
//! (`shards::search::weighted_score`), ties going to the earlier query: each query's own
//! order is kept, and a sorted query stays in its sort order against another sorted on the
//! same field. `facetsByIndex` counts, per index, the documents any of that index's queries
//! counts (with a distinct attribute, those its distinct left, as Meilisearch's candidates);
//! `mergeFacets` adds those counts across indexes.
//!
//! Across the network: a query whose `federationOptions.remote` names another instance (or
//! every query of `useNetwork: true`, one copy per remote) goes to that remote
//! ([`super::remote`]); its hits join the merge as one more list, compared by their
//! `weightedScoreValues`, and its totals and facets are added to this instance's. A request
//! from another instance (`Meili-Proxy-Search: true`) answers each hit's
//! `weightedScoreValues` so that the caller can merge it the same way.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashSet};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use deserr::{DeserializeError, Deserr, IntoValue, ValuePointerRef};
use serde_json::{Map, Value, json};
use shards::search::weighted_score::{WeightedValue, compare_weighted, weighted_values};

use crate::auth::AuthContext;
use crate::control::features::RuntimeFeatures;
use crate::coordinator::Coordinator;
use crate::coordinator::catalog::IndexRecord;
use crate::decode::JsonError;
use crate::errors::{Code, ResponseError, codes};
use crate::host::search::{CountedQuery, FacetsOfQueries, MatchCountOfQueries, ShardSearchHit};
use crate::personalization::Personalization;

use super::execute::{SearchOutcome, execute, shard_request};
use super::facets::MergedFacets;
use super::parameters::{SEARCH_LIMIT_DEFAULT, SearchBody, decode_at};
use super::pins::{pinned_position, place_pins};
use super::prepare::{PreparedSearch, check_facets, fuse_filters, prepare};
use super::remote::{self, NetworkContext, RemoteHit, RemoteQueries, RemoteResult};
use super::response::HitWriter;
use super::shard_partition::{ReadKey, shard_copies, shard_filter};

/// HTTP status of a missing index inside a multi-search.
const MISSING_INDEX_STATUS: u16 = 400;
/// The action text of the `network` gate on remote federated search.
const REMOTE_SEARCH_ACTION: &str = "Performing a remote federated search";
/// The action text of the `network` gate on `federationOptions.queryPosition`.
const QUERY_POSITION_ACTION: &str = "Using `federationOptions.queryPosition`";
/// The action text of the `network` gate on `useNetwork`.
pub const USE_NETWORK_ACTION: &str = "passing `useNetwork` in a search query";

/// A query's `showPerformanceDetails`, which a federated query may only leave out or `null`.
const PERFORMANCE_DETAILS_FIELD: &str = "showPerformanceDetails";

/// `mergeFacets.maxValuesPerFacet` when absent.
const MERGED_VALUES_PER_FACET_DEFAULT: usize = 100;

/// The request body.
#[derive(Debug, Deserr)]
#[deserr(error = JsonError, rename_all = camelCase, deny_unknown_fields)]
pub struct MultiSearchBody {
    queries: Vec<Value>,
    #[deserr(default)]
    federation: Option<FederationBody>,
}

/// `federation`.
#[derive(Debug, Deserr)]
#[deserr(error = JsonError, rename_all = camelCase, deny_unknown_fields)]
struct FederationBody {
    #[deserr(default = SEARCH_LIMIT_DEFAULT, error = JsonError<codes::InvalidSearchLimit>)]
    limit: usize,
    #[deserr(default, error = JsonError<codes::InvalidSearchOffset>)]
    offset: usize,
    #[deserr(default, error = JsonError<codes::InvalidSearchPage>)]
    page: Option<usize>,
    #[deserr(default, error = JsonError<codes::InvalidSearchHitsPerPage>)]
    hits_per_page: Option<usize>,
    #[deserr(default, error = JsonError<codes::InvalidMultiSearchFacetsByIndex>)]
    facets_by_index: BTreeMap<String, Option<Vec<String>>>,
    #[deserr(default, error = JsonError<codes::InvalidMultiSearchMergeFacets>)]
    merge_facets: Option<MergeFacetsBody>,
    #[deserr(default, error = JsonError<codes::InvalidSearchDistinct>)]
    distinct: Option<String>,
    #[deserr(default, error = JsonError<codes::InvalidSearchShowPerformanceDetails>)]
    show_performance_details: bool,
}

/// `federation.mergeFacets`.
#[derive(Debug, Deserr)]
#[deserr(error = JsonError<codes::InvalidMultiSearchMergeFacets>, rename_all = camelCase, deny_unknown_fields)]
struct MergeFacetsBody {
    #[deserr(default, error = JsonError<codes::InvalidMultiSearchMaxValuesPerFacet>)]
    max_values_per_facet: Option<usize>,
}

/// `federationOptions.weight`: a float of at least 0.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Weight(f64);

/// Why a weight was refused.
#[derive(Debug)]
struct NegativeWeight;

impl std::fmt::Display for NegativeWeight {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("the value of `weight` is invalid, expected a positive float (>= 0.0).")
    }
}

impl std::error::Error for NegativeWeight {}

impl<E> Deserr<E> for Weight
where
    E: DeserializeError + deserr::MergeWithError<NegativeWeight>,
{
    fn deserialize_from_value<V: IntoValue>(
        value: deserr::Value<V>,
        location: ValuePointerRef,
    ) -> Result<Self, E> {
        let weight = f64::deserialize_from_value(value, location)?;
        if weight >= 0.0 {
            Ok(Weight(weight))
        } else {
            Err(deserr::take_cf_content(E::merge(
                None,
                NegativeWeight,
                location,
            )))
        }
    }
}

/// `federationOptions`.
#[derive(Debug, Default, Deserr)]
#[deserr(error = JsonError, rename_all = camelCase, deny_unknown_fields)]
struct FederationOptions {
    #[deserr(default, error = JsonError<codes::InvalidMultiSearchWeight>)]
    weight: Option<Weight>,
    #[deserr(default, error = JsonError<codes::InvalidMultiSearchRemote>)]
    remote: Option<String>,
    #[deserr(default, error = JsonError<codes::InvalidMultiSearchQueryPosition>)]
    query_position: Option<usize>,
}

/// One query of the request.
struct IndexQuery {
    index_uid: String,
    body: SearchBody,
    options: Option<FederationOptions>,
    /// Which of `offset`, `limit`, `page`, `hitsPerPage` the query set, in that order.
    pagination: Option<&'static str>,
    /// Whether the query set `showPerformanceDetails` to a value other than `null`: 1.41
    /// refuses even `false` in a federated query, and reads `null` (what its own remotes
    /// send) as absent.
    performance_details_given: bool,
}

impl IndexQuery {
    /// The query as a remote is sent it: its search parameters and `indexUid` (the caller
    /// adds `federationOptions`).
    fn remote_json(&self) -> Result<Map<String, Value>, serde_json::Error> {
        let mut json = Map::new();
        json.insert("indexUid".to_owned(), Value::String(self.index_uid.clone()));
        if let Value::Object(parameters) = serde_json::to_value(&self.body)? {
            json.extend(parameters);
        }
        Ok(json)
    }

    /// A copy for one remote of a networked query.
    fn clone_for_remote(&self) -> IndexQuery {
        IndexQuery {
            index_uid: self.index_uid.clone(),
            body: self.body.clone(),
            options: None,
            pagination: self.pagination,
            performance_details_given: self.performance_details_given,
        }
    }
}

/// Decodes one query at `.queries[position]`.
fn decode_query(position: usize, value: Value) -> Result<IndexQuery, ResponseError> {
    let root = ValuePointerRef::Origin;
    let queries = root.push_key("queries");
    let location = queries.push_index(position);
    let mut object = match value {
        Value::Object(object) => object,
        other => {
            let error: JsonError = deserr::take_cf_content(JsonError::error::<Value>(
                None,
                deserr::ErrorKind::IncorrectValueKind {
                    actual: other.into_value(),
                    accepted: &[deserr::ValueKind::Map],
                },
                location,
            ));
            return Err(error.into_response_error());
        }
    };
    let index_uid = match object.remove("indexUid") {
        None => {
            return Err(
                JsonError::<codes::MissingIndexUid>::missing_field("indexUid", location)
                    .into_response_error(),
            );
        }
        Some(Value::String(uid)) if crate::auth::index_pattern::is_valid_index_uid(&uid) => uid,
        Some(Value::String(uid)) => return Err(ResponseError::invalid_index_uid(&uid)),
        Some(other) => {
            let error: JsonError<codes::InvalidIndexUid> =
                deserr::take_cf_content(JsonError::error::<Value>(
                    None,
                    deserr::ErrorKind::IncorrectValueKind {
                        actual: other.into_value(),
                        accepted: &[deserr::ValueKind::String],
                    },
                    location.push_key("indexUid"),
                ));
            return Err(error.into_response_error());
        }
    };
    let options = match object.remove("federationOptions") {
        None | Some(Value::Null) => None,
        Some(value) => Some(
            FederationOptions::deserialize_from_value(
                value.into_value(),
                location.push_key("federationOptions"),
            )
            .map_err(JsonError::into_response_error)?,
        ),
    };
    let pagination = ["offset", "limit", "page", "hitsPerPage"]
        .into_iter()
        .find(|name| object.get(*name).is_some_and(|value| !value.is_null()));
    let performance_details_given = match object.get(PERFORMANCE_DETAILS_FIELD) {
        Some(Value::Null) => {
            object.remove(PERFORMANCE_DETAILS_FIELD);
            false
        }
        given => given.is_some(),
    };
    let body =
        decode_at(Value::Object(object), location).map_err(JsonError::into_response_error)?;
    Ok(IndexQuery {
        index_uid,
        body,
        options,
        pagination,
        performance_details_given,
    })
}

/// ``Inside `.queries[i]`: `` before the message; a missing index answers 400.
fn inside_query(position: usize, error: ResponseError) -> ResponseError {
    let error = if error.code == Code::IndexNotFound {
        error.with_status(MISSING_INDEX_STATUS)
    } else {
        error
    };
    error.prefixed(&format!("Inside `.queries[{position}]`: "))
}

/// Runs a multi-search; without `federation`, each query's `personalize` reorders its hits
/// through `personalization`.
pub async fn multi_search(
    coordinator: &Rc<Coordinator>,
    body: MultiSearchBody,
    context: &AuthContext,
    features: RuntimeFeatures,
    network: &NetworkContext,
    personalization: &Personalization,
) -> Result<Map<String, Value>, ResponseError> {
    let started = Instant::now();
    let mut queries = Vec::with_capacity(body.queries.len());
    for (position, value) in body.queries.into_iter().enumerate() {
        queries.push(decode_query(position, value)?);
    }
    for (position, query) in queries.iter_mut().enumerate() {
        if !context.is_index_authorized(&query.index_uid) {
            return Err(inside_query(position, ResponseError::invalid_api_key()));
        }
        if let Some(rules) = context.index_search_rules(&query.index_uid) {
            query.body.filter = fuse_filters(rules.filter, query.body.filter.take());
        }
    }
    match body.federation {
        None => independent(coordinator, queries, context, features, personalization).await,
        Some(federation) => {
            if network.is_proxy {
                network.check_enabled(REMOTE_SEARCH_ACTION)?;
            }
            federated(coordinator, queries, federation, network, started, features).await
        }
    }
}

/// Without `federation`: one result per query, in order.
async fn independent(
    coordinator: &Rc<Coordinator>,
    queries: Vec<IndexQuery>,
    context: &AuthContext,
    features: RuntimeFeatures,
    personalization: &Personalization,
) -> Result<Map<String, Value>, ResponseError> {
    let mut results = Vec::with_capacity(queries.len());
    for (position, query) in queries.into_iter().enumerate() {
        if query.options.is_some() {
            return Err(inside_query(
                position,
                ResponseError::new(
                    Code::InvalidMultiSearchFederationOptions,
                    "Using `federationOptions` is not allowed in a non-federated search.\n - Hint: remove `federationOptions` from the query or add `federation` to the request.",
                ),
            ));
        }
        let result = super::single::search_index(
            coordinator,
            &query.index_uid,
            query.body,
            context,
            features,
            personalization,
        )
        .await
        .map_err(|error| inside_query(position, error))?;
        let mut with_index = Map::new();
        with_index.insert("indexUid".to_owned(), Value::String(query.index_uid));
        with_index.extend(result);
        results.push(Value::Object(with_index));
    }
    let mut answer = Map::new();
    answer.insert("results".to_owned(), Value::Array(results));
    Ok(answer)
}

/// The refusals of a query inside a federated search, in Meilisearch's order and 1.50's
/// words (the caller adds ``Inside `.queries[i]`: ``).
fn check_federated_query(
    query: &IndexQuery,
    federation: &FederationBody,
) -> Result<(), ResponseError> {
    if let Some(parameter) = query.pagination {
        return Err(ResponseError::new(
            Code::InvalidMultiSearchQueryPagination,
            format!(
                "Using pagination options is not allowed in federated queries.\n - Hint: remove `{parameter}` from the query or remove `federation` from the request\n - Hint: pass `federation.limit` and `federation.offset` for pagination in federated search"
            ),
        ));
    }
    if let Some(facets) = query
        .body
        .facets
        .as_ref()
        .filter(|facets| !facets.is_empty())
    {
        return Err(ResponseError::new(
            Code::InvalidMultiSearchQueryFacets,
            format!(
                "Using facet options is not allowed in federated queries.\n - Hint: remove `facets` from the query or remove `federation` from the request\n - Hint: pass `federation.facetsByIndex.{}: {facets:?}` for facets in federated search",
                query.index_uid
            ),
        ));
    }
    if query.body.personalize.is_some() {
        return Err(ResponseError::new(
            Code::InvalidMultiSearchQueryPersonalization,
            "Using `.personalize` is not allowed in federated queries.\n - Hint: remove `personalize` from the query or remove `federation` from the request\n - Hint: pass `federation.personalize` for personalization in federated search",
        ));
    }
    let has_remote = query
        .options
        .as_ref()
        .is_some_and(|options| options.remote.is_some());
    if has_remote && query.body.use_network == Some(true) {
        return Err(remote_and_use_network());
    }
    if query.performance_details_given {
        return Err(ResponseError::new(
            Code::InvalidMultiSearchQueryShowPerformanceDetails,
            "Using `.showPerformanceDetails` is not allowed in federated queries.\n - Hint: remove `showPerformanceDetails` from the query or remove `federation` from the request",
        ));
    }
    if query.body.distinct.is_some() && federation.distinct.is_some() {
        return Err(ResponseError::new(
            Code::InvalidMultiSearchDistinct,
            "Using `distinct` options is not allowed in federated queries when it also appears in `.federation.distinct`.\n - Hint: remove `distinct` from the query or remove `federation` from the request\n  - Note: `distinct` at the query level is discouraged in federated search.",
        ));
    }
    Ok(())
}

/// One query of a federated search, run.
struct RunQuery {
    record: Arc<IndexRecord>,
    prepared: PreparedSearch,
    outcome: SearchOutcome,
    weight: f64,
    position: usize,
}

/// The part of the merged list a federated search answers, from its `federation` object.
struct FederatedWindow {
    /// `page` or `hitsPerPage` was given: the answer counts pages instead of an offset.
    page_mode: bool,
    offset: usize,
    limit: usize,
}

impl FederatedWindow {
    fn new(federation: &FederationBody) -> FederatedWindow {
        let page_mode = federation.page.is_some() || federation.hits_per_page.is_some();
        let (offset, limit) = if page_mode {
            let hits_per_page = federation.hits_per_page.unwrap_or(SEARCH_LIMIT_DEFAULT);
            match federation.page.unwrap_or(1).checked_sub(1) {
                Some(previous) => (previous.saturating_mul(hits_per_page), hits_per_page),
                None => (0, 0),
            }
        } else {
            (federation.offset, federation.limit)
        };
        FederatedWindow {
            page_mode,
            offset,
            limit,
        }
    }
}

/// With `federation`: one merged list, of local hits and of the remotes' hits.
async fn federated(
    coordinator: &Rc<Coordinator>,
    queries: Vec<IndexQuery>,
    federation: FederationBody,
    network: &NetworkContext,
    started: Instant,
    features: RuntimeFeatures,
) -> Result<Map<String, Value>, ResponseError> {
    let window = FederatedWindow::new(&federation);
    let mut stages = super::stages::StageTimer::new();
    let partitioned = partition(queries, &federation, network)?;
    let in_flight = remote::start(
        partitioned.remote,
        &remote_federation(&federation),
        network.before_change,
        network.availability.clone(),
    );
    let runs = run_local_queries(
        coordinator,
        partitioned.local,
        network,
        &federation,
        &window,
        features,
    )
    .await?;
    stages.finish("federating results > search");
    let (remote_results, remote_errors) = remote::finish(in_flight).await;
    let mut facets_by_index =
        facets_by_index(coordinator, &runs, &federation, &partitioned.remote_indexes).await?;
    add_remote_facets(&mut facets_by_index, &remote_results);
    stages.finish("federating results > facets");
    let remote_total: u64 = remote_results.iter().map(|result| result.total).sum();
    let total = federated_total(coordinator, &runs).await? + remote_total;
    let marks = HitMarks {
        remote: (partitioned.has_remote && !network.is_proxy)
            .then(|| network.network.local.clone()),
        score_values: network.is_proxy,
    };
    let merge = MergeWindow {
        offset: window.offset,
        limit: window.limit,
        distinct: federation.distinct.is_some(),
    };
    let (mut hits, semantic_hits) = merged_hits(&runs, &remote_results, &merge, &marks);
    if features.foreign_keys {
        let records: Vec<&IndexRecord> = runs.iter().map(|run| run.record.as_ref()).collect();
        super::hydration::hydrate_federated_hits(coordinator, &records, &mut hits).await?;
    }
    let processing_time = slowest_time(started, &remote_results);
    let mut result = Map::new();
    result.insert("hits".to_owned(), Value::Array(hits));
    result.insert("processingTimeMs".to_owned(), json!(processing_time));
    insert_federated_pagination(&mut result, &federation, &window, total);
    insert_federated_facets(&mut result, &federation, facets_by_index);
    result.insert(
        "requestUid".to_owned(),
        Value::String(uuid::Uuid::now_v7().to_string()),
    );
    if partitioned.has_remote {
        insert_remote_errors(&mut result, remote_errors);
    }
    let semantic = runs
        .iter()
        .any(|run| run.outcome.semantic_hit_count.is_some());
    if semantic {
        result.insert("semanticHitCount".to_owned(), json!(semantic_hits));
    }
    if federation.show_performance_details {
        stages.finish("federating results > merge");
        result.insert(
            "performanceDetails".to_owned(),
            Value::Object(stages.into_details()),
        );
    }
    Ok(result)
}

/// `processingTimeMs` of a federated search: this instance's time or the slowest remote's.
fn slowest_time(started: Instant, remotes: &[RemoteResult]) -> u128 {
    remotes
        .iter()
        .map(|result| u128::from(result.processing_time_ms))
        .fold(started.elapsed().as_millis(), u128::max)
}

/// A query of a federated search that runs here.
struct LocalQuery {
    query: IndexQuery,
    /// Its place in the request.
    position: usize,
    /// The place its hits name (`federationOptions.queryPosition`, else `position`).
    query_position: usize,
    weight: f64,
}

/// The queries of a federated search, split between this instance and the remotes.
struct Partitioned {
    local: Vec<LocalQuery>,
    remote: RemoteQueries,
    /// The indexes some remote query searches.
    remote_indexes: HashSet<String>,
    /// Whether any query named a remote (this instance included).
    has_remote: bool,
}

/// Where and how a query of a federated search runs.
struct QueryTarget {
    position: usize,
    weight: f64,
    query_position: usize,
}

impl QueryTarget {
    /// The target of copy number `copy` of a networked query: its own position in a
    /// single-index search across the network, the query's otherwise.
    fn for_copy(&self, copy: usize, network: &NetworkContext) -> QueryTarget {
        match network.numbered_copies {
            true => QueryTarget {
                position: copy,
                weight: self.weight,
                query_position: copy,
            },
            false => QueryTarget { ..*self },
        }
    }
}

impl Partitioned {
    /// Sends `query` to the remote `name`: run here when that is this instance, else
    /// queued for that remote, which must be registered.
    fn send(
        &mut self,
        query: IndexQuery,
        name: &str,
        target: &QueryTarget,
        network: &NetworkContext,
    ) -> Result<(), ResponseError> {
        self.send_with_fallbacks(query, name, target, network, Vec::new())
    }

    /// As [`Partitioned::send`], the query to be asked of `fallbacks` in turn when the
    /// remote fails.
    fn send_with_fallbacks(
        &mut self,
        query: IndexQuery,
        name: &str,
        target: &QueryTarget,
        network: &NetworkContext,
        fallbacks: Vec<(String, crate::network::Remote)>,
    ) -> Result<(), ResponseError> {
        self.has_remote = true;
        if network.network.is_local(name) {
            self.local.push(LocalQuery {
                query,
                position: target.position,
                query_position: target.query_position,
                weight: target.weight,
            });
            return Ok(());
        }
        let remote = network.network.remotes.get(name).ok_or_else(|| {
            ResponseError::new(
                Code::InvalidMultiSearchRemote,
                format!(
                    "Invalid `queries[{}].federation_options.remote`: remote `{name}` is not registered",
                    target.position
                ),
            )
        })?;
        self.remote_indexes.insert(query.index_uid.clone());
        let json = query.remote_json().map_err(ResponseError::internal)?;
        self.remote.push_with_fallbacks(
            name,
            remote,
            json,
            (target.weight, target.query_position),
            fallbacks,
        );
        Ok(())
    }
}

impl Partitioned {
    /// Sends one copy of `query` per network shard, each restricted to its shard and asked
    /// of one owner (the others as fallbacks), with `useNetwork: false` so that no owner
    /// fans out again (see [`super::shard_partition`]).
    fn send_by_shard(
        &mut self,
        query: &IndexQuery,
        target: &QueryTarget,
        network: &NetworkContext,
    ) -> Result<(), ResponseError> {
        let parameters = query
            .body
            .without_page_json()
            .map_err(ResponseError::internal)?;
        let read = ReadKey::of(&query.index_uid, &parameters);
        let copies = shard_copies(&network.network, &network.availability, read);
        for (copy, shard) in copies.into_iter().enumerate() {
            let target = target.for_copy(copy, network);
            let mut copy = query.clone_for_remote();
            copy.body.use_network = Some(false);
            copy.body.filter = shard_filter(copy.body.filter.take(), &shard.shard);
            let mut owners = shard.owners.into_iter();
            let Some(first) = owners.next() else {
                continue;
            };
            let fallbacks: Vec<(String, crate::network::Remote)> = owners
                .filter_map(|name| {
                    let remote = network.network.remotes.get(&name)?.clone();
                    Some((name, remote))
                })
                .collect();
            self.send_with_fallbacks(copy, &first, &target, network, fallbacks)?;
        }
        Ok(())
    }
}

/// `useNetwork: true` beside `federationOptions.remote` (the caller adds
/// ``Inside `.queries[i]`: ``).
fn remote_and_use_network() -> ResponseError {
    ResponseError::new(
        Code::InvalidMultiSearchFederationOptions,
        "Using `.useNetwork` is not allowed as the same time as `.federationOptions.remote`.\n  - Hint: to perform an explicit query against a remote, remove `.useNetwork`.\n  - Hint: to automatically perform queries against the entire network, remove `.federationOptions.remote`.",
    )
}

/// Checks every query and sends each where its `federationOptions.remote` (or
/// `useNetwork`) says: here when it names none or this instance, else to that remote, which
/// must be registered.
fn partition(
    queries: Vec<IndexQuery>,
    federation: &FederationBody,
    network: &NetworkContext,
) -> Result<Partitioned, ResponseError> {
    let mut partitioned = Partitioned {
        local: Vec::new(),
        remote: RemoteQueries::default(),
        remote_indexes: HashSet::new(),
        has_remote: false,
    };
    for (position, mut query) in queries.into_iter().enumerate() {
        check_federated_query(&query, federation).map_err(|error| inside_query(position, error))?;
        let options = query.options.take().unwrap_or_default();
        let use_network = query.body.use_network.take();
        if use_network.is_some() {
            network.check_enabled(USE_NETWORK_ACTION)?;
        }
        let target = QueryTarget {
            position,
            weight: options.weight.map_or(1.0, |weight| weight.0),
            query_position: match options.query_position {
                Some(query_position) => {
                    network.check_enabled(QUERY_POSITION_ACTION)?;
                    query_position
                }
                None => position,
            },
        };
        // Meilisearch's default: a networked query when the network shards (has a leader).
        let networked = use_network.unwrap_or_else(|| network.network.is_sharding());
        match options.remote {
            Some(name) => {
                network.check_enabled(REMOTE_SEARCH_ACTION)?;
                partitioned.send(query, &name, &target, network)?;
            }
            None if networked && network.network.is_sharding() => {
                network.check_enabled(REMOTE_SEARCH_ACTION)?;
                partitioned.send_by_shard(&query, &target, network)?;
            }
            // Without a leader, a networked query asks every remote once (this
            // instance only when it is one of them), as Meilisearch partitions by remote.
            None if networked => {
                network.check_enabled(REMOTE_SEARCH_ACTION)?;
                let names: Vec<String> = network.network.remotes.keys().cloned().collect();
                for (copy, name) in names.iter().enumerate() {
                    let target = target.for_copy(copy, network);
                    partitioned.send(query.clone_for_remote(), name, &target, network)?;
                }
            }
            None => partitioned.local.push(LocalQuery {
                query,
                position,
                query_position: target.query_position,
                weight: target.weight,
            }),
        }
    }
    Ok(partitioned)
}

/// The `federation` a remote is sent: every hit up to the end of the asked page, from the
/// first, and the facets per index; never `mergeFacets`.
fn remote_federation(federation: &FederationBody) -> Map<String, Value> {
    let mut remote = Map::new();
    let page_mode = federation.page.is_some() || federation.hits_per_page.is_some();
    if page_mode {
        let hits_per_page = federation.hits_per_page.unwrap_or(SEARCH_LIMIT_DEFAULT);
        match federation.page {
            Some(0) => {
                remote.insert("page".to_owned(), json!(0));
                remote.insert("hitsPerPage".to_owned(), json!(hits_per_page));
            }
            page => {
                let pages = page.unwrap_or(1);
                remote.insert("page".to_owned(), json!(1));
                remote.insert(
                    "hitsPerPage".to_owned(),
                    json!(pages.saturating_mul(hits_per_page)),
                );
            }
        }
    } else {
        remote.insert(
            "limit".to_owned(),
            json!(federation.offset.saturating_add(federation.limit)),
        );
        remote.insert("offset".to_owned(), json!(0));
    }
    if !federation.facets_by_index.is_empty() {
        remote.insert(
            "facetsByIndex".to_owned(),
            json!(federation.facets_by_index),
        );
    }
    if let Some(distinct) = &federation.distinct {
        remote.insert("distinct".to_owned(), json!(distinct));
    }
    remote
}

/// `remoteErrors`: each failed remote's error object, by name.
fn insert_remote_errors(
    result: &mut Map<String, Value>,
    remote_errors: std::collections::BTreeMap<String, ResponseError>,
) {
    let errors: Map<String, Value> = remote_errors
        .into_iter()
        .map(|(name, error)| (name, error.to_value()))
        .collect();
    result.insert("remoteErrors".to_owned(), Value::Object(errors));
}

/// Runs the local queries of a federated search in turn, their `_shard` conditions naming
/// the shards of the network the search is partitioned by.
async fn run_local_queries(
    coordinator: &Rc<Coordinator>,
    locals: Vec<LocalQuery>,
    network: &NetworkContext,
    federation: &FederationBody,
    window: &FederatedWindow,
    features: RuntimeFeatures,
) -> Result<Vec<RunQuery>, ResponseError> {
    let mut runs = Vec::with_capacity(locals.len());
    for local in locals {
        let shards = network.filter_shards.clone();
        let run = run_federated_query(coordinator, local, shards, federation, window, features);
        runs.push(run.await?);
    }
    Ok(runs)
}

/// Checks and runs a local query of a federated search for the first `offset + limit` hits
/// of its index, under the federation's `distinct`; an error names the query.
async fn run_federated_query(
    coordinator: &Rc<Coordinator>,
    local: LocalQuery,
    filter_shards: Option<shards::network_shards::NetworkShards>,
    federation: &FederationBody,
    window: &FederatedWindow,
    features: RuntimeFeatures,
) -> Result<RunQuery, ResponseError> {
    let LocalQuery {
        query,
        position,
        query_position,
        weight,
    } = local;
    let mut body = query.body;
    body.offset = Some(0);
    body.limit = Some(window.offset.saturating_add(window.limit));
    if federation.distinct.is_some() {
        body.distinct = federation.distinct.clone();
    }
    let record = coordinator
        .index(&query.index_uid)
        .map_err(|error| inside_query(position, error))?;
    let mut prepared = prepare(&record, body, features, filter_shards)
        .map_err(|error| inside_query(position, error))?;
    super::pins::attach_pins(coordinator, features, &query.index_uid, &mut prepared);
    let outcome = execute(coordinator, &record, &prepared)
        .await
        .map_err(|error| inside_query(position, error))?;
    Ok(RunQuery {
        record,
        prepared,
        outcome,
        weight,
        position: query_position,
    })
}

/// The pagination keys of a federated answer: pages in page mode, otherwise the offset,
/// the limit and the estimated total.
fn insert_federated_pagination(
    result: &mut Map<String, Value>,
    federation: &FederationBody,
    window: &FederatedWindow,
    total: u64,
) {
    if window.page_mode {
        let hits_per_page = federation.hits_per_page.unwrap_or(SEARCH_LIMIT_DEFAULT) as u64;
        let total_pages = if hits_per_page == 0 {
            0
        } else {
            total.div_ceil(hits_per_page)
        };
        result.insert("hitsPerPage".to_owned(), json!(hits_per_page));
        result.insert("page".to_owned(), json!(federation.page.unwrap_or(1)));
        result.insert("totalPages".to_owned(), json!(total_pages));
        result.insert("totalHits".to_owned(), json!(total));
    } else {
        result.insert("limit".to_owned(), json!(window.limit));
        result.insert("offset".to_owned(), json!(window.offset));
        result.insert("estimatedTotalHits".to_owned(), json!(total));
    }
}

/// The facet keys of a federated answer: merged over the indexes under `mergeFacets`,
/// otherwise per index; none when no facets were asked.
fn insert_federated_facets(
    result: &mut Map<String, Value>,
    federation: &FederationBody,
    facets_by_index: Option<Map<String, Value>>,
) {
    // Like 1.41, no facet key at all when no index computed facets.
    let facets_by_index = facets_by_index.filter(|by_index| !by_index.is_empty());
    match (&federation.merge_facets, facets_by_index) {
        (Some(merge), Some(by_index)) => {
            let max = merge
                .max_values_per_facet
                .unwrap_or(MERGED_VALUES_PER_FACET_DEFAULT);
            let (distribution, stats) = merge_index_facets(&by_index, max);
            result.insert("facetDistribution".to_owned(), Value::Object(distribution));
            result.insert("facetStats".to_owned(), Value::Object(stats));
        }
        (None, Some(by_index)) => {
            result.insert("facetsByIndex".to_owned(), Value::Object(by_index));
        }
        (_, None) => {}
    }
}

/// What the `_federation` of a local hit carries beyond its index, position and score.
struct HitMarks {
    /// `remote`: this instance's name (`null` when unnamed), when any query named a remote.
    remote: Option<Option<String>>,
    /// `weightedScoreValues` and `extra_document`, for an instance that asked as a remote.
    score_values: bool,
}

impl HitMarks {
    /// The `_federation` of a local hit.
    fn federation(&self, index_uid: &str, position: usize, hit: &WeightedHit<'_>) -> Value {
        let mut federation = Map::new();
        federation.insert("indexUid".to_owned(), json!(index_uid));
        federation.insert("queriesPosition".to_owned(), json!(position));
        federation.insert("weightedRankingScore".to_owned(), json!(hit.weighted));
        if let Some(local) = &self.remote {
            federation.insert("remote".to_owned(), json!(local));
        }
        if self.score_values {
            federation.insert(
                remote::WEIGHTED_SCORE_VALUES.to_owned(),
                remote::score_values_json(&hit.values),
            );
            federation.insert(remote::EXTRA_DOCUMENT.to_owned(), json!({}));
            if let HitSource::Local { hit, .. } = hit.source
                && let Some(position) = pinned_position(&hit.hit)
            {
                federation.insert(remote::PINNED_POSITION.to_owned(), json!(position));
            }
        }
        Value::Object(federation)
    }
}

/// Where a hit of the federated merge comes from.
#[derive(Clone, Copy)]
enum HitSource<'a> {
    /// A local query's run and its hit.
    Local {
        run: usize,
        hit: &'a ShardSearchHit,
    },
    Remote(&'a RemoteHit),
}

/// A hit of the federated merge, with what the merge compares.
struct WeightedHit<'a> {
    source: HitSource<'a>,
    values: Vec<WeightedValue>,
    /// `_rankingScore × weight`.
    weighted: f64,
    /// The query position its hits name.
    position: usize,
}

impl<'a> WeightedHit<'a> {
    fn local(runs: &[RunQuery], run: usize, hit: &'a ShardSearchHit) -> WeightedHit<'a> {
        let weight = runs[run].weight;
        WeightedHit {
            source: HitSource::Local { run, hit },
            values: weighted_values(&hit.hit.details, weight),
            weighted: hit.hit.score * weight,
            position: runs[run].position,
        }
    }

    fn remote(hit: &'a RemoteHit) -> WeightedHit<'a> {
        WeightedHit {
            source: HitSource::Remote(hit),
            values: hit.values.clone(),
            weighted: hit.weighted_score,
            position: hit.position,
        }
    }

    /// Whether `self` goes before `other`: by their weighted values, ties to the earlier query.
    fn goes_before(&self, other: &WeightedHit<'_>) -> bool {
        match compare_weighted(&self.values, self.weighted, &other.values, other.weighted) {
            Ordering::Greater => true,
            Ordering::Equal => self.position < other.position,
            Ordering::Less => false,
        }
    }
}

/// Merges lists each in its own order, taking each time the head that goes first.
fn merge_heads(lists: Vec<Vec<WeightedHit<'_>>>) -> Vec<WeightedHit<'_>> {
    let mut lists: Vec<std::vec::IntoIter<WeightedHit<'_>>> =
        lists.into_iter().map(Vec::into_iter).collect();
    let mut heads: Vec<Option<WeightedHit<'_>>> = lists.iter_mut().map(Iterator::next).collect();
    let mut merged = Vec::new();
    loop {
        let mut best: Option<usize> = None;
        for (list, head) in heads.iter().enumerate() {
            let Some(head) = head else { continue };
            let better = match best.and_then(|best| heads[best].as_ref()) {
                Some(current) => head.goes_before(current),
                None => true,
            };
            if better {
                best = Some(list);
            }
        }
        let Some(best) = best else {
            return merged;
        };
        let next = lists[best].next();
        if let Some(hit) = std::mem::replace(&mut heads[best], next) {
            merged.push(hit);
        }
    }
}

/// The part of the merged list answered, and whether `federation.distinct` applies.
struct MergeWindow {
    offset: usize,
    limit: usize,
    distinct: bool,
}

/// Per index, its local queries' hits merged (each query's own order kept, a document found
/// by several queries once, at its first place, and under `federation.distinct` a hit
/// sharing a value with one before it left out), cut to `wanted`.
fn local_lists(runs: &[RunQuery], wanted: usize, distinct: bool) -> Vec<Vec<WeightedHit<'_>>> {
    let mut indexes: Vec<&str> = Vec::new();
    for run in runs {
        if !indexes.contains(&run.record.uid.as_str()) {
            indexes.push(&run.record.uid);
        }
    }
    indexes
        .iter()
        .map(|uid| {
            let lists = (0..runs.len())
                .filter(|run| runs[*run].record.uid == *uid)
                .map(|run| {
                    let hits = runs[run].outcome.hits.iter();
                    hits.filter(|hit| pinned_position(&hit.hit).is_none())
                        .map(|hit| WeightedHit::local(runs, run, hit))
                        .collect()
                })
                .collect();
            let mut seen: HashSet<u32> = HashSet::new();
            let mut taken: HashSet<&str> = HashSet::new();
            let mut merged = merge_heads(lists);
            merged.retain(|hit| {
                let HitSource::Local { hit, .. } = hit.source else {
                    return true;
                };
                let values = &hit.hit.distinct_values;
                if !seen.insert(hit.hit.id)
                    || (distinct && values.iter().any(|value| taken.contains(value.as_str())))
                {
                    return false;
                }
                taken.extend(values.iter().map(String::as_str));
                true
            });
            merged.truncate(wanted);
            merged
        })
        .collect()
}

/// The federated merge, as Meilisearch's: each index's list ([`local_lists`]) and each
/// remote's list (already merged by the remote) merged by comparing their heads' weighted
/// values rule group by rule group, sort values in between, ties to the earlier query; cut
/// to the window. Federation `distinct` applies within each index here and within each
/// remote there, not between a remote's hits and this instance's. Pinned hits (of dynamic
/// search rules, here or at a remote) stay out of the merge and are placed over the merged
/// list at their positions ([`place_pins`]).
fn merged_hits(
    runs: &[RunQuery],
    remotes: &[RemoteResult],
    window: &MergeWindow,
    marks: &HitMarks,
) -> (Vec<Value>, u32) {
    let writers: Vec<HitWriter<'_>> = runs
        .iter()
        .map(|run| HitWriter::new(&run.record, &run.prepared, &run.outcome))
        .collect();
    let wanted = window.offset.saturating_add(window.limit);
    let mut lists = local_lists(runs, wanted, window.distinct);
    lists.extend(remotes.iter().map(|result| {
        let ranked = result
            .hits
            .iter()
            .filter(|hit| hit.pinned_position.is_none());
        ranked.map(WeightedHit::remote).collect()
    }));
    let pins = pinned_hits(runs, remotes);
    let merged = merge_heads(lists);
    // As Meilisearch counts them: the ranked hits of the window, or with pins, every ranked
    // hit up to the window's end (among which the pins are then placed).
    let ranked: Vec<WeightedHit<'_>> = if pins.is_empty() {
        merged
            .into_iter()
            .skip(window.offset)
            .take(window.limit)
            .collect()
    } else {
        merged.into_iter().take(wanted).collect()
    };
    let semantic_hits = ranked
        .iter()
        .filter(|hit| match hit.source {
            HitSource::Local { hit, .. } => hit.semantic,
            HitSource::Remote(hit) => hit.semantic,
        })
        .count() as u32;
    let page = if pins.is_empty() {
        ranked
    } else {
        place_pins(pins, window.offset, window.limit, ranked)
    };
    let mut hits = Vec::new();
    for merged in page {
        match merged.source {
            HitSource::Local { run, hit } => {
                let query = &runs[run];
                let federation = marks.federation(&query.record.uid, query.position, &merged);
                hits.push(Value::Object(writers[run].federated_hit(
                    hit,
                    query.outcome.attribute_unified,
                    federation,
                )));
            }
            HitSource::Remote(hit) => {
                hits.push(Value::Object(hit.document.clone()));
            }
        }
    }
    (hits, semantic_hits)
}

/// The hits dynamic search rules pinned, each with its position, in placing order, as
/// Meilisearch places them over the federated list: by position, then the local ones by
/// index uid and query order, then the remotes' in their order.
fn pinned_hits<'a>(
    runs: &'a [RunQuery],
    remotes: &'a [RemoteResult],
) -> Vec<(u32, WeightedHit<'a>)> {
    let mut local = Vec::new();
    for (run, query) in runs.iter().enumerate() {
        for hit in &query.outcome.hits {
            if let Some(position) = pinned_position(&hit.hit) {
                local.push((position, query.record.uid.as_str(), run, hit));
            }
        }
    }
    local.sort_by_key(|(position, uid, run, _)| (*position, *uid, *run));
    let mut pins: Vec<(u32, WeightedHit<'a>)> = local
        .into_iter()
        .map(|(position, _, run, hit)| (position, WeightedHit::local(runs, run, hit)))
        .collect();
    for hit in remotes.iter().flat_map(|result| &result.hits) {
        if let Some(position) = hit.pinned_position {
            pins.push((position, WeightedHit::remote(hit)));
        }
    }
    pins.sort_by_key(|(position, _)| *position);
    pins
}

/// Adds every remote's `facetsByIndex` to the local one: counts summed value by value,
/// numbers' extremes widened.
fn add_remote_facets(local: &mut Option<Map<String, Value>>, remotes: &[RemoteResult]) {
    let Some(by_index) = local.as_mut() else {
        return;
    };
    for remote_facets in remotes
        .iter()
        .filter_map(|result| result.facets_by_index.as_ref())
    {
        for (index_uid, facets) in remote_facets {
            match by_index.get_mut(index_uid) {
                Some(existing) => add_index_facets(existing, facets),
                None => {
                    by_index.insert(index_uid.clone(), facets.clone());
                }
            }
        }
    }
}

/// Adds one index's facets (`{"distribution", "stats"}`) of a remote to this instance's.
fn add_index_facets(existing: &mut Value, remote: &Value) {
    for (field, values) in remote["distribution"].as_object().into_iter().flatten() {
        let Some(distribution) = existing["distribution"].as_object_mut() else {
            continue;
        };
        let counts = distribution
            .entry(field.clone())
            .or_insert_with(|| json!({}));
        for (value, count) in values.as_object().into_iter().flatten() {
            let Some(counts) = counts.as_object_mut() else {
                continue;
            };
            let summed = counts.get(value).and_then(Value::as_u64).unwrap_or(0)
                + count.as_u64().unwrap_or(0);
            counts.insert(value.clone(), json!(summed));
        }
    }
    for (field, extremes) in remote["stats"].as_object().into_iter().flatten() {
        let Some(stats) = existing["stats"].as_object_mut() else {
            continue;
        };
        let (Some(min), Some(max)) = (extremes["min"].as_f64(), extremes["max"].as_f64()) else {
            continue;
        };
        let widened = match stats.get(field) {
            Some(old) => json!({
                "min": old["min"].as_f64().map_or(min, |old| old.min(min)),
                "max": old["max"].as_f64().map_or(max, |old| old.max(max)),
            }),
            None => json!({"min": min, "max": max}),
        };
        stats.insert(field.clone(), widened);
    }
}

/// The documents the queries match, each document of an index counted once however many of
/// its queries match it (one query's total needs no shard asked again).
async fn federated_total(
    coordinator: &Rc<Coordinator>,
    runs: &[RunQuery],
) -> Result<u64, ResponseError> {
    let mut total = 0u64;
    let mut counted: HashSet<&str> = HashSet::new();
    for run in runs {
        let uid = run.record.uid.as_str();
        if !counted.insert(uid) {
            continue;
        }
        let index_runs: Vec<&RunQuery> = runs
            .iter()
            .filter(|other| other.record.uid == uid)
            .collect();
        if let [only] = index_runs.as_slice() {
            total += only.outcome.total;
            continue;
        }
        for answer in coordinator
            .ask_every_shard(&run.record.shard_set(), |shard| MatchCountOfQueries {
                queries: counted_queries(&index_runs, shard),
            })
            .await
        {
            total += answer?;
        }
    }
    Ok(total)
}

/// The queries of one index as shard `shard` counts them: each query's request and, with a
/// distinct attribute, the documents its search left on that shard.
fn counted_queries(index_runs: &[&RunQuery], shard: u32) -> Vec<CountedQuery> {
    index_runs
        .iter()
        .map(|run| CountedQuery {
            request: shard_request(&run.prepared),
            narrowing: run
                .outcome
                .distinct_narrowings
                .as_ref()
                .and_then(|narrowings| narrowings.get(shard as usize).cloned()),
        })
        .collect()
}

/// An index `facetsByIndex` names that no query uses: it must exist and its facets must be
/// filterable, as Meilisearch checks them; it then adds nothing to the answer.
fn check_unused_index_facets(
    coordinator: &Rc<Coordinator>,
    index_uid: &str,
    facets: Option<&[String]>,
) -> Result<(), ResponseError> {
    let prefix = format!("Inside `.federation.facetsByIndex.{index_uid}`: ");
    let note = format!("\n - Note: index `{index_uid}` is not used in queries");
    let Some(record) = coordinator.catalog().get(index_uid).cloned() else {
        return Err(ResponseError::new(
            Code::IndexNotFound,
            format!("{prefix}Index `{index_uid}` not found.{note}"),
        )
        .with_status(MISSING_INDEX_STATUS));
    };
    let Some(facets) = facets.filter(|facets| !facets.is_empty()) else {
        return Ok(());
    };
    // Meilisearch 1.50 gives the search's own code here, as it does below.
    check_index_facets(&record, facets, |message| {
        ResponseError::new(
            Code::InvalidSearchFacets,
            format!("{prefix}{message}{note}"),
        )
    })
}

/// Checks that `facets` are filterable in `record`; `error` words the refusal.
fn check_index_facets(
    record: &IndexRecord,
    facets: &[String],
    error: impl FnOnce(String) -> ResponseError,
) -> Result<(), ResponseError> {
    let rules = shards::filter::FilterableRules::from_setting(
        &record.settings.setting_view("filterableAttributes"),
    )
    .map_err(ResponseError::internal)?;
    check_facets(&rules, facets).map_err(error)
}

/// `facetsByIndex`: per index named, the facet counts of the documents matching any of its
/// queries, as `{"distribution", "stats"}`.
async fn facets_by_index(
    coordinator: &Rc<Coordinator>,
    runs: &[RunQuery],
    federation: &FederationBody,
    remote_indexes: &HashSet<String>,
) -> Result<Option<Map<String, Value>>, ResponseError> {
    if federation.facets_by_index.is_empty() {
        return Ok(None);
    }
    let mut by_index = Map::new();
    for (index_uid, facets) in &federation.facets_by_index {
        let index_runs: Vec<&RunQuery> = runs
            .iter()
            .filter(|run| run.record.uid == *index_uid)
            .collect();
        let prefix = format!("Inside `.federation.facetsByIndex.{index_uid}`: ");
        let Some(first) = index_runs.first() else {
            // An index only remotes search is checked by those remotes.
            if !remote_indexes.contains(index_uid) {
                check_unused_index_facets(coordinator, index_uid, facets.as_deref())?;
            }
            continue;
        };
        let Some(facets) = facets.as_ref() else {
            continue;
        };
        if facets.is_empty() {
            // 1.41 answers an index asked for no facet with empty counts.
            by_index.insert(
                index_uid.clone(),
                json!({ "distribution": {}, "stats": {} }),
            );
            continue;
        }
        let record = &first.record;
        // Meilisearch 1.50 words this as an error of the index's first query.
        let query = format!("Inside `.queries[{}]`: ", first.position);
        check_index_facets(record, facets, |message| {
            ResponseError::new(
                Code::InvalidSearchFacets,
                format!("{query}{prefix}{message}"),
            )
        })?;
        let answers = coordinator
            .ask_every_shard(&record.shard_set(), |shard| FacetsOfQueries {
                queries: counted_queries(&index_runs, shard),
                facets: facets.clone(),
            })
            .await;
        let mut merged = MergedFacets::default();
        for answer in answers {
            merged.add(answer?);
        }
        let candidates: u64 = index_runs.iter().map(|run| run.outcome.total).sum();
        by_index.insert(
            index_uid.clone(),
            json!({
                "distribution": Value::Object(merged.distribution(&record.settings, candidates)),
                "stats": Value::Object(merged.stats()),
            }),
        );
    }
    Ok(Some(by_index))
}

/// `mergeFacets`: every index's counts added value by value (at most `max` values per
/// facet, in value order), and the extreme numbers of every index.
fn merge_index_facets(
    by_index: &Map<String, Value>,
    max: usize,
) -> (Map<String, Value>, Map<String, Value>) {
    let mut distribution: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    let mut stats: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    for facets in by_index.values() {
        if let Some(fields) = facets["distribution"].as_object() {
            for (field, values) in fields {
                let merged = distribution.entry(field.clone()).or_default();
                for (value, count) in values.as_object().into_iter().flatten() {
                    *merged.entry(value.clone()).or_insert(0) += count.as_u64().unwrap_or(0);
                }
            }
        }
        if let Some(fields) = facets["stats"].as_object() {
            for (field, extremes) in fields {
                let (Some(min), Some(max)) = (extremes["min"].as_f64(), extremes["max"].as_f64())
                else {
                    continue;
                };
                let entry = stats.entry(field.clone()).or_insert((min, max));
                entry.0 = entry.0.min(min);
                entry.1 = entry.1.max(max);
            }
        }
    }
    let distribution = distribution
        .into_iter()
        .map(|(field, values)| {
            let values: Map<String, Value> = values
                .into_iter()
                .take(max)
                .map(|(value, count)| (value, json!(count)))
                .collect();
            (field, Value::Object(values))
        })
        .collect();
    let stats = stats
        .into_iter()
        .map(|(field, (min, max))| (field, json!({"min": min, "max": max})))
        .collect();
    (distribution, stats)
}

/// Decodes the request body.
pub fn decode_body(value: Value) -> Result<MultiSearchBody, ResponseError> {
    crate::decode::decode_json_value::<MultiSearchBody, JsonError>(value)
}
