//! Dynamic search rules applied to a search, as Meilisearch 1.50 applies them (with the
//! `dynamicSearchRules` feature on): the active rules whose conditions hold pin documents at
//! positions of the results.
//!
//! Which pins: see [`super::rule_matching`] (the rules that apply, by precedence, within
//! the fuel's limits).
//!
//! How they are placed ([`pinned_hits`], [`organic_search`], [`place_pinned`], which
//! `super::execute` runs in that order): pinned documents are left out of the ranking
//! (whatever the query, they need not match it) and kept only when the search's filter
//! selects them; the ranking then runs for the first `offset + limit` hits and the pins are
//! merged in ([`place_pins`]): walking the merged list, a pin takes its place once its
//! position is reached, and when the ranked hits run out the remaining pins follow in order.
//! Pinned documents count in `estimatedTotalHits`/`totalHits` and in the facet distribution;
//! their `_rankingScore` is 1 and their `_rankingScoreDetails` are `{"pin": {"order": 0,
//! "position": p}}`; neither `rankingScoreThreshold` nor `distinct` removes them.
//!
//! In a federated search each query places its index's pins in its own list; the merge then
//! takes them out again and places them over the federated list (by position, then index
//! uid and query order, then the remotes', whose hits carry `_federation.pinnedPosition`).
//!
//! Invariant: one search asks the shards for its pinned documents once; they are never
//! among the ranked hits, so no document appears twice.
//!
//! Known difference: with a distinct attribute and an exhaustive count (`page` or
//! `hitsPerPage`), Meilisearch runs distinct once more over the ranked matches and the pins
//! together, so a pin sharing its distinct value with a match (or another pin) is not counted
//! in `totalHits` and the facets; here every pin counts.

use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;

use shards::search::{FieldFacetCounts, ScoreDetail, ShardHit};
use time::OffsetDateTime;

use super::outcome::SearchOutcome;
use super::prepare::PreparedSearch;
use super::rule_matching::{RuleContext, resolve_pins};
use super::shard_request::{index_filter_error, shard_request};
use crate::control::features::RuntimeFeatures;
use crate::coordinator::Coordinator;
use crate::coordinator::catalog::IndexRecord;
use crate::errors::ResponseError;
use crate::host::pinned::{PinnedAnswer, PinnedDocuments};
use crate::host::search::{ShardFoundHit, ShardSearchHit};

/// One shard's facet counts of its pinned documents.
type ShardFacetCounts = BTreeMap<String, FieldFacetCounts>;

/// A document a rule pins, and the position it goes to (from 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pin {
    pub document_id: String,
    pub position: u32,
}

/// Adds the pins of the rules to `prepared`, a search of `index_uid` (nothing without the
/// feature or without a matching rule).
pub fn attach_pins(
    coordinator: &Coordinator,
    features: RuntimeFeatures,
    index_uid: &str,
    prepared: &mut PreparedSearch,
) {
    if !features.dynamic_search_rules {
        return;
    }
    let rules = coordinator.dynamic_search_rules();
    if rules.is_empty() {
        return;
    }
    let fuel = super::rule_fuel::current();
    let context = RuleContext::new(
        prepared.body.q.as_deref(),
        OffsetDateTime::now_utc(),
        fuel.max_counted_words,
    );
    let pins = resolve_pins(&rules, index_uid, &context, fuel);
    if pins.is_empty() {
        return;
    }
    prepared.pinned_documents = Some(Arc::new(
        pins.iter().map(|pin| pin.document_id.clone()).collect(),
    ));
    prepared.pins = pins;
}

/// The list `organic` with `pinned` (by position, in placing order) merged in, from `skip`,
/// at most `take` items: walking the merged list, the next pin goes in once its position is
/// reached, or when `organic` has run out.
pub fn place_pins<T>(pinned: Vec<(u32, T)>, skip: usize, take: usize, organic: Vec<T>) -> Vec<T> {
    if pinned.is_empty() {
        return organic.into_iter().skip(skip).take(take).collect();
    }
    let end = skip.saturating_add(take);
    let mut pinned = pinned.into_iter().peekable();
    let mut organic = organic.into_iter().peekable();
    let mut placed = Vec::new();
    let mut index = 0usize;
    while index < end {
        let pin_due = match pinned.peek() {
            Some((position, _)) => *position as usize <= index || organic.peek().is_none(),
            None => false,
        };
        let next = if pin_due {
            pinned.next().map(|(_, item)| item)
        } else {
            organic.next()
        };
        let Some(item) = next else { break };
        if index >= skip {
            placed.push(item);
        }
        index += 1;
    }
    placed
}

/// How many of the first `wanted` places of a list go to ranked hits when pins take their
/// places at `pin_positions` (ranked hits being plenty).
pub fn ranked_places(pin_positions: &[u32], wanted: usize) -> usize {
    if pin_positions.is_empty() {
        return wanted;
    }
    let pins = pin_positions
        .iter()
        .map(|position| (*position, false))
        .collect();
    place_pins(pins, 0, wanted, vec![true; wanted])
        .into_iter()
        .filter(|ranked| *ranked)
        .count()
}

/// The pinned documents a search's filter selects, each with its position, in placing order,
/// and each shard's facet counts of them.
pub struct Pinned {
    hits: Vec<(u32, ShardSearchHit)>,
    facets: Vec<ShardFacetCounts>,
}

impl Pinned {
    /// The places the pinned documents take.
    pub fn positions(&self) -> Vec<u32> {
        self.hits.iter().map(|(position, _)| *position).collect()
    }
}

/// The ranking a pinned search runs: without the pins, the first `offset + limit` hits, among
/// which the pins are then placed (see the module documentation).
pub fn organic_search(prepared: &PreparedSearch) -> PreparedSearch {
    let mut organic = prepared.clone();
    organic.pins = Vec::new();
    organic.offset = 0;
    organic.limit = prepared.offset.saturating_add(prepared.limit);
    organic
}

/// The answer of `prepared` from the ranking of [`organic_search`] and the `pinned`
/// documents: totals and facets with the pins counted, and the window with the pins placed.
pub fn place_pinned(
    mut outcome: SearchOutcome,
    pinned: Pinned,
    prepared: &PreparedSearch,
) -> SearchOutcome {
    outcome.total += pinned.hits.len() as u64;
    if let Some(merged) = outcome.facets.as_mut() {
        for counts in pinned.facets {
            merged.add(counts);
        }
    }
    let ranked = std::mem::take(&mut outcome.hits);
    outcome.hits = place_pins(pinned.hits, prepared.offset, prepared.limit, ranked);
    if prepared
        .semantic
        .as_ref()
        .is_some_and(|semantic| semantic.semantic_only)
    {
        // Meilisearch counts every hit of a semantic-only search, pinned ones included.
        outcome.semantic_hit_count = Some(outcome.hits.len() as u32);
    }
    outcome
}

/// The pinned documents of `prepared` the filter selects, each with its position, in placing
/// order, with each shard's facet counts of them when `facets` is asked.
pub async fn pinned_hits(
    coordinator: &Rc<Coordinator>,
    record: &IndexRecord,
    prepared: &PreparedSearch,
) -> Result<Pinned, ResponseError> {
    let request = shard_request(prepared);
    let answers = coordinator
        .ask_every_shard(&record.shard_set(), |_| PinnedDocuments {
            request: request.clone(),
        })
        .await;
    let mut found: Vec<(usize, ShardFoundHit)> = Vec::new();
    let mut facets = Vec::new();
    for answer in answers {
        let PinnedAnswer {
            hits,
            facets: counts,
        } = answer.map_err(|error| index_filter_error(record, error))?;
        found.extend(hits);
        facets.extend(counts);
    }
    found.sort_by_key(|(place, _)| *place);
    let mut pinned = Vec::with_capacity(found.len());
    for (place, hit) in found {
        let Some(pin) = prepared.pins.get(place) else {
            return Err(ResponseError::internal("a shard answered an unknown pin"));
        };
        pinned.push((pin.position, pinned_hit(hit, pin.position)?));
    }
    Ok(Pinned {
        hits: pinned,
        facets,
    })
}

/// A pinned document as a hit: score 1, its details the pin alone.
fn pinned_hit(found: ShardFoundHit, position: u32) -> Result<ShardSearchHit, ResponseError> {
    let mut hit = found.decoded()?;
    hit.hit = ShardHit {
        details: vec![ScoreDetail::Pin { position }],
        ..hit.hit
    };
    hit.semantic = false;
    Ok(hit)
}

/// Whether `hit` is a pinned document (its details are a pin).
pub fn pinned_position(hit: &ShardHit) -> Option<u32> {
    match hit.details.first() {
        Some(ScoreDetail::Pin { position }) => Some(*position),
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn pins_walk_into_the_list_and_follow_it_when_it_runs_out() {
        let organic = vec!["o1", "o2"];
        let pinned = vec![(10, "p10"), (20, "p20")];
        assert_eq!(
            place_pins(pinned.clone(), 0, 10, organic.clone()),
            ["o1", "o2", "p10", "p20"]
        );
        assert_eq!(place_pins(pinned, 2, 2, organic), ["p10", "p20"]);
        let many = vec!["a", "b", "c", "d"];
        assert_eq!(
            place_pins(vec![(0, "x"), (2, "y")], 1, 3, many),
            ["a", "y", "b"]
        );
        assert_eq!(
            place_pins(Vec::<(u32, &str)>::new(), 1, 1, vec!["a", "b"]),
            ["b"]
        );
        assert_eq!(ranked_places(&[0, 1, 9], 3), 1);
        assert_eq!(ranked_places(&[0, 0], 3), 1);
        assert_eq!(ranked_places(&[5], 3), 3);
        assert_eq!(ranked_places(&[], 3), 3);
    }
}
