//! The search response: each hit as Meilisearch writes it, and the result object around them.
//!
//! A hit is the document reduced to the retrieved attributes (`attributesToRetrieve` within
//! `displayedAttributes`), with `_vectors` only under `retrieveVectors` and `_geoDistance`
//! under a `_geoPoint(…)` sort rule (when the written document shows its `_geo`), then
//! `_formatted`
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
use std::collections::BTreeSet;

use shards::filter::haversine_distance_meters;
use shards::search::format::{
    FieldVisibility, FormatOptions, HitFormatter, QueryLanguages, QueryMatcher,
};
use shards::search::{SearchSort, details_json};
use shards::shard::select_fields;

use crate::coordinator::catalog::IndexRecord;
use crate::settings::text_settings::text_settings;

use super::outcome::SearchOutcome;
use super::parameters::SEARCH_LIMIT_DEFAULT;
use super::prepare::PreparedSearch;
use super::shard_request::canonical_locales;
use crate::host::search::ShardSearchHit;

/// The reserved field of user-provided embeddings.
const VECTORS_FIELD: &str = "_vectors";
const GEO_FIELD: &str = "_geo";
const GEO_DISTANCE_FIELD: &str = "_geoDistance";
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
    let writer = HitWriter::new(record, prepared, &outcome);
    let hits = writer.write_all(&outcome.hits, outcome.attribute_unified);
    let mut result = Map::new();
    result.insert("hits".to_owned(), Value::Array(hits));
    result.insert(
        "query".to_owned(),
        Value::String(body.q.clone().unwrap_or_default()),
    );
    if let (true, Some(vector)) = (body.retrieve_vectors, &outcome.query_vector) {
        let vector = vector
            .iter()
            .copied()
            .map(shards::vectors::stored::float_json);
        result.insert("queryVector".to_owned(), Value::Array(vector.collect()));
    }
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
    if let Some(count) = outcome.semantic_hit_count {
        result.insert("semanticHitCount".to_owned(), json!(count));
    }
    result
}

/// What every hit of one search is written with.
pub struct HitWriter<'a> {
    prepared: &'a PreparedSearch,
    displayed: Option<&'a Vec<String>>,
    /// `attributesToRetrieve`, unless it retrieves everything displayed.
    retrieve: Option<Vec<String>>,
    /// The query's words, when some attribute is highlighted or cropped or match positions
    /// are asked for.
    matcher: Option<QueryMatcher>,
    options: FormatOptions,
    /// Every field path of the hits to write: highlighting or cropping a name that no
    /// document has is ignored, as Meilisearch ignores fields its index does not know.
    known_fields: BTreeSet<String>,
}

impl<'a> HitWriter<'a> {
    pub fn new(
        record: &'a IndexRecord,
        prepared: &'a PreparedSearch,
        outcome: &SearchOutcome,
    ) -> HitWriter<'a> {
        let hits = &outcome.hits;
        let body = &prepared.body;
        let retrieve = body
            .attributes_to_retrieve
            .as_ref()
            .filter(|attributes| !attributes.iter().any(|name| name == EVERY_ATTRIBUTE))
            .cloned();
        let options = FormatOptions {
            attributes_to_highlight: body.attributes_to_highlight.clone().unwrap_or_default(),
            attributes_to_crop: body.attributes_to_crop.clone().unwrap_or_default(),
            crop_length: body.crop_length,
            crop_marker: body.crop_marker.clone(),
            highlight_pre_tag: body.highlight_pre_tag.clone(),
            highlight_post_tag: body.highlight_post_tag.clone(),
            show_matches_position: body.show_matches_position,
        };
        let formats = !options.attributes_to_highlight.is_empty()
            || !options.attributes_to_crop.is_empty()
            || options.show_matches_position;
        let matcher = formats.then(|| {
            let languages = QueryLanguages {
                requested: body.locales.as_deref().map(canonical_locales),
                analysed: outcome.query_languages.clone(),
            };
            QueryMatcher::new(
                &text_settings(&record.settings),
                body.q.as_deref().unwrap_or(""),
                &outcome.query_words,
                &languages,
            )
        });
        let mut known_fields = BTreeSet::new();
        if formats {
            for hit in hits {
                collect_paths(&hit.document, "", &mut known_fields);
            }
        }
        HitWriter {
            prepared,
            displayed: record.settings.displayed_attributes.as_ref(),
            retrieve,
            matcher,
            options,
            known_fields,
        }
    }

    /// Writes `hits` (all of this search), building the formatter once.
    pub fn write_all(&self, hits: &[ShardSearchHit], attribute_unified: bool) -> Vec<Value> {
        self.with_formatter(|formatter| {
            hits.iter()
                .map(|hit| Value::Object(self.hit(hit, attribute_unified, None, formatter)))
                .collect()
        })
    }

    /// One hit with `_federation` (a federated search's hits come one by one).
    pub fn federated_hit(
        &self,
        hit: &ShardSearchHit,
        attribute_unified: bool,
        federation: Value,
    ) -> Map<String, Value> {
        self.with_formatter(|formatter| {
            self.hit(hit, attribute_unified, Some(federation), formatter)
        })
    }

    /// Runs `body` with the formatter of this search (`None` when nothing is formatted).
    fn with_formatter<R>(&self, body: impl FnOnce(Option<&HitFormatter<'_>>) -> R) -> R {
        let Some(matcher) = &self.matcher else {
            return body(None);
        };
        let is_known = |path: &str| self.known_fields.contains(path);
        let fields = FieldVisibility {
            displayed: self.displayed.map(Vec::as_slice),
            is_known: &is_known,
        };
        matcher.with_hit_formatter(&self.options, &fields, |formatter| body(Some(formatter)))
    }

    /// One hit as Meilisearch writes it; `federation` (a federated search's `_federation`)
    /// follows the document's own fields.
    fn hit(
        &self,
        hit: &ShardSearchHit,
        attribute_unified: bool,
        federation: Option<Value>,
        formatter: Option<&HitFormatter<'_>>,
    ) -> Map<String, Value> {
        let body = &self.prepared.body;
        let displayed = match self.displayed {
            Some(attributes) => select_fields(&hit.document, attributes),
            None => hit.document.clone(),
        };
        let mut retrieved = match &self.retrieve {
            Some(attributes) => select_fields(&displayed, attributes),
            None => displayed,
        };
        if body.retrieve_vectors {
            if !retrieved.contains_key(VECTORS_FIELD) {
                retrieved.insert(VECTORS_FIELD.to_owned(), Value::Object(Map::new()));
            }
        } else {
            retrieved.remove(VECTORS_FIELD);
        }
        if let Some(distance) = self.geo_distance(&retrieved) {
            retrieved.insert(GEO_DISTANCE_FIELD.to_owned(), json!(distance));
        }
        let formatted = formatter.map(|formatter| formatter.format(&hit.document, &retrieved));
        let mut written = retrieved;
        if let Some(federation) = federation {
            written.insert("_federation".to_owned(), federation);
        }
        if let Some(formatted) = formatted {
            if let Some(document) = formatted.formatted {
                written.insert("_formatted".to_owned(), Value::Object(document));
            }
            if let Some(positions) = formatted.matches_position {
                written.insert("_matchesPosition".to_owned(), Value::Object(positions));
            }
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

impl HitWriter<'_> {
    /// `_geoDistance`: with a `_geoPoint(…)` sort rule (the first one), the rounded distance in
    /// meters to the point of the written document's `_geo` (numbers or numeric strings);
    /// `None` when the document shows no such point.
    fn geo_distance(&self, written: &Map<String, Value>) -> Option<u64> {
        let target = self.prepared.sort.iter().find_map(|rule| match rule {
            SearchSort::Geo(rule) => Some(rule.point),
            SearchSort::Field(_) => None,
        })?;
        let geo = written.get(GEO_FIELD)?;
        let coordinate = |value: Option<&Value>| match value? {
            Value::Number(number) => number.as_f64(),
            Value::String(text) => text.parse().ok(),
            _ => None,
        };
        let point = [coordinate(geo.get("lat"))?, coordinate(geo.get("lng"))?];
        let meters = haversine_distance_meters(target, point).round();
        // A distance on Earth is far below u64::MAX meters: the cast neither wraps nor clips.
        Some(meters as u64)
    }
}

/// Every dotted path of `object` (objects nested in arrays included) into `paths`.
fn collect_paths(object: &Map<String, Value>, prefix: &str, paths: &mut BTreeSet<String>) {
    for (key, value) in object {
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        collect_value_paths(value, &path, paths);
        paths.insert(path);
    }
}

fn collect_value_paths(value: &Value, path: &str, paths: &mut BTreeSet<String>) {
    match value {
        Value::Object(object) => collect_paths(object, path, paths),
        Value::Array(items) => {
            for item in items {
                collect_value_paths(item, path, paths);
            }
        }
        _ => {}
    }
}
