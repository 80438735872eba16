//! The search response: each hit as Meilisearch writes it, and the result object around them.
//!
//! A hit is the document reduced to the retrieved attributes (`attributesToRetrieve` within
//! `displayedAttributes`), with `_vectors` only under `retrieveVectors`, then `_formatted`
//! (when an attribute is highlighted or cropped), `_matchesPosition` (under
//! `showMatchesPosition`), `_rankingScore` and `_rankingScoreDetails`, in that key order.
//! The result object's keys follow Meilisearch's order: `hits`, `query`, `processingTimeMs`,
//! the pagination fields of the mode, `facetDistribution` and `facetStats` (when `facets` was
//! given), `requestUid`.
//!
//! Invariants: `offset` echoes the clamped offset and `limit` the requested one;
//! `estimatedTotalHits`, `totalHits` and `totalPages` never count past
//! `pagination.maxTotalHits`.

use serde_json::{Map, Value, json};
use shards::search::details_json;
use shards::shard::select_fields;

use crate::coordinator::catalog::IndexRecord;

use super::execute::SearchOutcome;
use super::parameters::SEARCH_LIMIT_DEFAULT;
use super::prepare::PreparedSearch;
use super::shard_search::ShardSearchHit;

/// The reserved field of user-provided embeddings.
const VECTORS_FIELD: &str = "_vectors";
/// The attribute name meaning "every displayed attribute".
const EVERY_ATTRIBUTE: &str = "*";

/// Builds the result object of one search (without `indexUid`, which multi-search adds).
pub fn search_result(
    record: &IndexRecord,
    prepared: &PreparedSearch,
    outcome: SearchOutcome,
    processing_time_ms: u128,
    request_uid: &str,
) -> Map<String, Value> {
    let body = &prepared.body;
    let total = outcome.total.min(prepared.max_total_hits as u64);
    let formatter = HitFormatter::new(record, prepared, &outcome.query_words);
    let hits: Vec<Value> = outcome
        .hits
        .iter()
        .map(|hit| Value::Object(formatter.hit(hit, outcome.attribute_unified, None)))
        .collect();
    let mut result = Map::new();
    result.insert("hits".to_owned(), Value::Array(hits));
    result.insert(
        "query".to_owned(),
        Value::String(body.q.clone().unwrap_or_default()),
    );
    result.insert("processingTimeMs".to_owned(), json!(processing_time_ms));
    if prepared.is_page_mode() {
        let hits_per_page = body.hits_per_page.unwrap_or(SEARCH_LIMIT_DEFAULT) as u64;
        let total_pages = if hits_per_page == 0 {
            0
        } else {
            total.div_ceil(hits_per_page)
        };
        result.insert("hitsPerPage".to_owned(), json!(hits_per_page));
        result.insert("page".to_owned(), json!(body.page.unwrap_or(1)));
        result.insert("totalPages".to_owned(), json!(total_pages));
        result.insert("totalHits".to_owned(), json!(total));
    } else {
        result.insert(
            "limit".to_owned(),
            json!(body.limit.unwrap_or(SEARCH_LIMIT_DEFAULT)),
        );
        result.insert("offset".to_owned(), json!(prepared.offset));
        result.insert("estimatedTotalHits".to_owned(), json!(total));
    }
    if let Some(facets) = &outcome.facets {
        result.insert(
            "facetDistribution".to_owned(),
            Value::Object(facets.distribution(&record.settings, outcome.total)),
        );
        result.insert("facetStats".to_owned(), Value::Object(facets.stats()));
    }
    result.insert(
        "requestUid".to_owned(),
        Value::String(request_uid.to_owned()),
    );
    result
}

/// What every hit of one search is written with.
pub struct HitFormatter<'a> {
    prepared: &'a PreparedSearch,
    displayed: Option<&'a Vec<String>>,
    /// `attributesToRetrieve`, unless it retrieves everything displayed.
    retrieve: Option<Vec<String>>,
}

impl<'a> HitFormatter<'a> {
    pub fn new(
        record: &'a IndexRecord,
        prepared: &'a PreparedSearch,
        _query_words: &[Vec<String>],
    ) -> HitFormatter<'a> {
        let body = &prepared.body;
        let retrieve = body
            .attributes_to_retrieve
            .as_ref()
            .filter(|attributes| !attributes.iter().any(|name| name == EVERY_ATTRIBUTE))
            .cloned();
        HitFormatter {
            prepared,
            displayed: record.settings.displayed_attributes.as_ref(),
            retrieve,
        }
    }

    /// Whether `path` is displayed.
    fn is_displayed(&self, path: &str) -> bool {
        match self.displayed {
            None => true,
            Some(attributes) => attributes.iter().any(|attribute| {
                attribute == EVERY_ATTRIBUTE
                    || attribute == path
                    || path
                        .strip_prefix(attribute.as_str())
                        .is_some_and(|rest| rest.starts_with('.'))
            }),
        }
    }

    /// One hit as Meilisearch writes it; `federation` (a federated search's `_federation`)
    /// follows the document's own fields.
    pub fn hit(
        &self,
        hit: &ShardSearchHit,
        attribute_unified: bool,
        federation: Option<Value>,
    ) -> Map<String, Value> {
        let body = &self.prepared.body;
        let displayed = match self.displayed {
            Some(attributes) => select_fields(&hit.document, attributes),
            None => hit.document.clone(),
        };
        let mut retrieved = match &self.retrieve {
            Some(attributes) => select_fields(&displayed, attributes),
            None => displayed.clone(),
        };
        if body.retrieve_vectors {
            if !retrieved.contains_key(VECTORS_FIELD) {
                retrieved.insert(VECTORS_FIELD.to_owned(), Value::Object(Map::new()));
            }
        } else {
            retrieved.remove(VECTORS_FIELD);
        }
        let mut written = retrieved.clone();
        if let Some(federation) = federation {
            written.insert("_federation".to_owned(), federation);
        }
        if body.show_ranking_score {
            written.insert("_rankingScore".to_owned(), json!(hit.hit.score));
        }
        if body.show_ranking_score_details {
            written.insert(
                "_rankingScoreDetails".to_owned(),
                Value::Object(details_json(&hit.hit.details, attribute_unified)),
            );
        }
        written
    }
}
