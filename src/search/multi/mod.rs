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
//!
//! Files: this one decodes the body and dispatches; [`independent`] answers the queries side
//! by side; [`federated`] runs them locally and on remotes and assembles the one answer;
//! [`merge`] merges their hits; [`federated_facets`] counts and merges their facets.

use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Instant;

use deserr::{DeserializeError, Deserr, IntoValue, ValuePointerRef};
use serde_json::{Map, Value};

use crate::auth::AuthContext;
use crate::control::features::RuntimeFeatures;
use crate::coordinator::Coordinator;
use crate::decode::JsonError;
use crate::errors::{Code, ResponseError, codes};
use crate::personalization::Personalization;

use super::parameters::{SEARCH_LIMIT_DEFAULT, SearchBody, decode_at};
use super::prepare::fuse_filters;
use super::remote::NetworkContext;

mod federated;
mod federated_facets;
mod independent;
mod merge;

use federated::federated;
use independent::independent;

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

/// Decodes the request body.
pub fn decode_body(value: Value) -> Result<MultiSearchBody, ResponseError> {
    crate::decode::decode_json_value::<MultiSearchBody, JsonError>(value)
}
