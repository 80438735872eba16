//! The merge of a federated search: the hits of every query (local lists and the remotes'
//! lists) merged by their weighted ranking details, ties to the earlier query, with pinned
//! hits placed and each hit's `_federation` marks written.

use std::cmp::Ordering;
use std::collections::HashSet;

use serde_json::{Map, Value, json};
use shards::search::weighted_score::{WeightedValue, compare_weighted, weighted_values};

use crate::host::search::ShardSearchHit;

use crate::search::pins::{pinned_position, place_pins};
use crate::search::remote::{self, RemoteHit, RemoteResult};
use crate::search::response::HitWriter;

use super::federated::RunQuery;

/// What the `_federation` of a local hit carries beyond its index, position and score.
pub(super) struct HitMarks {
    /// `remote`: this instance's name (`null` when unnamed), when any query named a remote.
    pub(super) remote: Option<Option<String>>,
    /// `weightedScoreValues` and `extra_document`, for an instance that asked as a remote.
    pub(super) score_values: bool,
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
pub(super) struct MergeWindow {
    pub(super) offset: usize,
    pub(super) limit: usize,
    pub(super) distinct: bool,
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
pub(super) fn merged_hits(
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
pub(super) fn add_remote_facets(local: &mut Option<Map<String, Value>>, remotes: &[RemoteResult]) {
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
