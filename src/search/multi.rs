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

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashSet};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use deserr::{DeserializeError, Deserr, IntoValue, ValuePointerRef};
use serde_json::{Map, Value, json};
use shards::search::weighted_score::{WeightedValue, compare_weighted, weighted_values};

use crate::auth::AuthContext;
use crate::coordinator::Coordinator;
use crate::coordinator::catalog::IndexRecord;
use crate::decode::JsonError;
use crate::errors::{Code, ResponseError, codes};
use crate::host::search::{CountedQuery, FacetsOfQueries, MatchCountOfQueries, ShardSearchHit};

use super::execute::{SearchOutcome, execute, shard_request};
use super::facets::MergedFacets;
use super::parameters::{PersonalizeParameter, SEARCH_LIMIT_DEFAULT, SearchBody, decode_at};
use super::prepare::{PreparedSearch, check_facets, fuse_filters, prepare};
use super::response::HitWriter;

/// HTTP status of a missing index inside a multi-search.
const MISSING_INDEX_STATUS: u16 = 400;
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
    /// Accepted as Meilisearch accepts it; personalization needs an external service that
    /// this server does not call.
    #[deserr(default, error = JsonError<codes::InvalidSearchPersonalize>)]
    #[allow(dead_code)]
    personalize: Option<PersonalizeParameter>,
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
    let body =
        decode_at(Value::Object(object), location).map_err(JsonError::into_response_error)?;
    Ok(IndexQuery {
        index_uid,
        body,
        options,
        pagination,
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

/// Runs a multi-search.
pub async fn multi_search(
    coordinator: &Rc<Coordinator>,
    body: MultiSearchBody,
    context: &AuthContext,
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
        None => independent(coordinator, queries, context).await,
        Some(federation) => federated(coordinator, queries, federation, started).await,
    }
}

/// Without `federation`: one result per query, in order.
async fn independent(
    coordinator: &Rc<Coordinator>,
    queries: Vec<IndexQuery>,
    context: &AuthContext,
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
        let result =
            super::single::search_index(coordinator, &query.index_uid, query.body, context)
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

/// The refusals of a query inside a federated search.
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
    if let Some(remote) = query
        .options
        .as_ref()
        .and_then(|options| options.remote.as_ref())
    {
        // No network is configured on this server yet, so no remote is registered.
        return Err(ResponseError::new(
            Code::InvalidMultiSearchRemote,
            format!("Invalid `.federation_options.remote`: remote `{remote}` is not registered"),
        ));
    }
    if query.body.personalize.is_some() {
        return Err(ResponseError::new(
            Code::InvalidMultiSearchQueryPersonalization,
            "Using `.personalize` is not allowed in federated queries.\n - Hint: remove `personalize` from the query or remove `federation` from the request\n - Hint: pass `federation.personalize` for personalization in federated search",
        ));
    }
    if query.body.show_performance_details {
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

/// With `federation`: one merged list.
async fn federated(
    coordinator: &Rc<Coordinator>,
    queries: Vec<IndexQuery>,
    federation: FederationBody,
    started: Instant,
) -> Result<Map<String, Value>, ResponseError> {
    let window = FederatedWindow::new(&federation);
    let mut stages = super::stages::StageTimer::new();
    let mut runs = Vec::with_capacity(queries.len());
    for (position, query) in queries.into_iter().enumerate() {
        runs.push(run_federated_query(coordinator, query, position, &federation, &window).await?);
    }
    stages.finish("federating results > search");
    let facets_by_index = facets_by_index(coordinator, &runs, &federation).await?;
    stages.finish("federating results > facets");
    let total = federated_total(coordinator, &runs).await?;
    let (hits, semantic_hits) = merged_hits(
        &runs,
        window.offset,
        window.limit,
        federation.distinct.is_some(),
    );
    let mut result = Map::new();
    result.insert("hits".to_owned(), Value::Array(hits));
    result.insert(
        "processingTimeMs".to_owned(),
        json!(started.elapsed().as_millis()),
    );
    insert_federated_pagination(&mut result, &federation, &window, total);
    insert_federated_facets(&mut result, &federation, facets_by_index);
    let semantic = runs
        .iter()
        .any(|run| run.outcome.semantic_hit_count.is_some());
    result.insert(
        "requestUid".to_owned(),
        Value::String(uuid::Uuid::now_v7().to_string()),
    );
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

/// Checks and runs the query at `position` of a federated search for the first
/// `offset + limit` hits of its index, under the federation's `distinct`; an error names
/// the query.
async fn run_federated_query(
    coordinator: &Rc<Coordinator>,
    query: IndexQuery,
    position: usize,
    federation: &FederationBody,
    window: &FederatedWindow,
) -> Result<RunQuery, ResponseError> {
    check_federated_query(&query, federation).map_err(|error| inside_query(position, error))?;
    let weight = query
        .options
        .as_ref()
        .and_then(|options| options.weight)
        .map_or(1.0, |weight| weight.0);
    let query_position = query
        .options
        .as_ref()
        .and_then(|options| options.query_position)
        .unwrap_or(position);
    let mut body = query.body;
    body.offset = Some(0);
    body.limit = Some(window.offset.saturating_add(window.limit));
    if federation.distinct.is_some() {
        body.distinct = federation.distinct.clone();
    }
    let record = coordinator
        .index(&query.index_uid)
        .map_err(|error| inside_query(position, error))?;
    let prepared = prepare(&record, body).map_err(|error| inside_query(position, error))?;
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

/// A hit of one query, with what the federated merge compares.
struct WeightedHit<'a> {
    /// The query's run.
    run: usize,
    hit: &'a ShardSearchHit,
    values: Vec<WeightedValue>,
    /// `_rankingScore × weight`.
    weighted: f64,
}

impl<'a> WeightedHit<'a> {
    fn new(runs: &[RunQuery], run: usize, hit: &'a ShardSearchHit) -> WeightedHit<'a> {
        let weight = runs[run].weight;
        WeightedHit {
            run,
            hit,
            values: weighted_values(&hit.hit.details, weight),
            weighted: hit.hit.score * weight,
        }
    }

    /// Whether `self` goes before `other`: by their weighted values, ties to the earlier query.
    fn goes_before(&self, other: &WeightedHit<'_>, runs: &[RunQuery]) -> bool {
        match compare_weighted(&self.values, self.weighted, &other.values, other.weighted) {
            Ordering::Greater => true,
            Ordering::Equal => runs[self.run].position < runs[other.run].position,
            Ordering::Less => false,
        }
    }
}

/// Merges lists each in its own order, taking each time the head that goes first.
fn merge_heads<'a>(lists: Vec<Vec<WeightedHit<'a>>>, runs: &[RunQuery]) -> Vec<WeightedHit<'a>> {
    let mut lists: Vec<std::vec::IntoIter<WeightedHit<'a>>> =
        lists.into_iter().map(Vec::into_iter).collect();
    let mut heads: Vec<Option<WeightedHit<'a>>> = lists.iter_mut().map(Iterator::next).collect();
    let mut merged = Vec::new();
    loop {
        let mut best: Option<usize> = None;
        for (list, head) in heads.iter().enumerate() {
            let Some(head) = head else { continue };
            let better = match best.and_then(|best| heads[best].as_ref()) {
                Some(current) => head.goes_before(current, runs),
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

/// The federated merge, as Meilisearch's: per index, its queries' hits merged (each query's
/// own order kept, a document found by several queries once, at its first place, and under
/// `federation.distinct` a hit sharing a value with one before it left out) and cut to
/// `offset + limit`; then the indexes' lists merged the same way and cut to
/// `offset..offset + limit`.
fn merged_hits(
    runs: &[RunQuery],
    offset: usize,
    limit: usize,
    distinct: bool,
) -> (Vec<Value>, u32) {
    let writers: Vec<HitWriter<'_>> = runs
        .iter()
        .map(|run| HitWriter::new(&run.record, &run.prepared, &run.outcome))
        .collect();
    let wanted = offset.saturating_add(limit);
    let mut indexes: Vec<&str> = Vec::new();
    for run in runs {
        if !indexes.contains(&run.record.uid.as_str()) {
            indexes.push(&run.record.uid);
        }
    }
    let by_index: Vec<Vec<WeightedHit<'_>>> = indexes
        .iter()
        .map(|uid| {
            let lists = (0..runs.len())
                .filter(|run| runs[*run].record.uid == *uid)
                .map(|run| {
                    let hits = runs[run].outcome.hits.iter();
                    hits.map(|hit| WeightedHit::new(runs, run, hit)).collect()
                })
                .collect();
            let mut seen: HashSet<u32> = HashSet::new();
            let mut taken: HashSet<&str> = HashSet::new();
            let mut merged = merge_heads(lists, runs);
            merged.retain(|hit| {
                let values = &hit.hit.hit.distinct_values;
                if !seen.insert(hit.hit.hit.id)
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
        .collect();
    let mut hits = Vec::new();
    let mut semantic_hits = 0u32;
    for merged in merge_heads(by_index, runs)
        .into_iter()
        .skip(offset)
        .take(limit)
    {
        let run = &runs[merged.run];
        semantic_hits += u32::from(merged.hit.semantic);
        let federation = json!({
            "indexUid": run.record.uid,
            "queriesPosition": run.position,
            "weightedRankingScore": merged.weighted,
        });
        hits.push(Value::Object(writers[merged.run].federated_hit(
            merged.hit,
            run.outcome.attribute_unified,
            federation,
        )));
    }
    (hits, semantic_hits)
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
    check_index_facets(&record, facets, |message| {
        ResponseError::new(
            Code::InvalidMultiSearchFacets,
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
            check_unused_index_facets(coordinator, index_uid, facets.as_deref())?;
            continue;
        };
        let Some(facets) = facets.as_ref().filter(|facets| !facets.is_empty()) else {
            continue;
        };
        let record = &first.record;
        let note = format!(
            "\n - Note: index `{index_uid}` used in `.queries[{}]`",
            first.position
        );
        check_index_facets(record, facets, |message| {
            ResponseError::new(
                Code::InvalidMultiSearchFacets,
                format!("{prefix}{message}{note}"),
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
