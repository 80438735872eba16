//! The facets of a federated search: `facetsByIndex` (each index's documents counted once
//! over its queries) or, with `mergeFacets`, one distribution merged over the indexes, and
//! the checks of the indexes `facetsByIndex` names.

use std::collections::{BTreeMap, HashSet};
use std::rc::Rc;

use serde_json::{Map, Value, json};

use crate::coordinator::Coordinator;
use crate::coordinator::catalog::IndexRecord;
use crate::errors::{Code, ResponseError};
use crate::host::search::FacetsOfQueries;

use crate::search::facets::MergedFacets;
use crate::search::prepare::check_facets;

use super::federated::{RunQuery, counted_queries};
use super::{FederationBody, MERGED_VALUES_PER_FACET_DEFAULT, MISSING_INDEX_STATUS};

/// The facet keys of a federated answer: merged over the indexes under `mergeFacets`,
/// otherwise per index; none when no facets were asked.
pub(super) fn insert_federated_facets(
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
pub(super) async fn facets_by_index(
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
