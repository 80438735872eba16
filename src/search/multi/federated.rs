//! Federated multi-search: the queries run on this instance's shards and on remotes, and
//! their hits are merged into one list ([`super::merge`]) with one total, one page and the
//! facets of [`super::federated_facets`].

use std::collections::HashSet;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use serde_json::{Map, Value, json};

use crate::control::features::RuntimeFeatures;
use crate::coordinator::Coordinator;
use crate::coordinator::catalog::IndexRecord;
use crate::errors::{Code, ResponseError};
use crate::host::search::{CountedQuery, MatchCountOfQueries};

use crate::search::execute::execute;
use crate::search::outcome::SearchOutcome;
use crate::search::parameters::SEARCH_LIMIT_DEFAULT;
use crate::search::prepare::{PreparedSearch, prepare};
use crate::search::remote::{self, NetworkContext, RemoteQueries, RemoteResult};
use crate::search::shard_partition::{ReadKey, shard_copies, shard_filter};
use crate::search::shard_request::shard_request;

use super::federated_facets::{facets_by_index, insert_federated_facets};
use super::merge::{HitMarks, MergeWindow, add_remote_facets, merged_hits};
use super::{
    FederationBody, IndexQuery, QUERY_POSITION_ACTION, REMOTE_SEARCH_ACTION, USE_NETWORK_ACTION,
    inside_query,
};

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
pub(super) struct RunQuery {
    pub(super) record: Arc<IndexRecord>,
    pub(super) prepared: PreparedSearch,
    pub(super) outcome: SearchOutcome,
    pub(super) weight: f64,
    pub(super) position: usize,
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
pub(super) async fn federated(
    coordinator: &Rc<Coordinator>,
    queries: Vec<IndexQuery>,
    federation: FederationBody,
    network: &NetworkContext,
    started: Instant,
    features: RuntimeFeatures,
) -> Result<Map<String, Value>, ResponseError> {
    let window = FederatedWindow::new(&federation);
    let mut stages = crate::search::stages::StageTimer::new();
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
        crate::search::hydration::hydrate_federated_hits(coordinator, &records, &mut hits).await?;
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
    /// fans out again (see [`crate::search::shard_partition`]).
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
    crate::search::pins::attach_pins(coordinator, features, &query.index_uid, &mut prepared);
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
pub(super) fn counted_queries(index_runs: &[&RunQuery], shard: u32) -> Vec<CountedQuery> {
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
