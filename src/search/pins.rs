//! Dynamic search rules applied to a search, as Meilisearch 1.41 applies them (with the
//! `dynamicSearchRules` feature on): the active rules whose conditions hold pin documents at
//! positions of the results.
//!
//! Which pins ([`resolve_pins`]): a rule applies when it is `active` and each of its
//! conditions holds — `isEmpty` when the query text is absent or blank (or not, for
//! `false`), `contains` when the lowercased query text contains the condition's text
//! normalized as a facet value, `time` when now is within its bounds. Each of its actions
//! whose selector names a document id, and this index or no index, pins that document at
//! its position. A document pinned by several rules keeps the pin of the rule with the
//! smallest `priority` (a rule without one comes last; on a tie, the first rule by uid and
//! action order); pins are ordered by position, then priority.
//!
//! How they are placed ([`execute_pinned`]): pinned documents are left out of the ranking
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

use super::execute::{SearchOutcome, execute_organic, index_filter_error, shard_request};
use super::prepare::PreparedSearch;
use crate::control::dynamic_search_rules::{Condition, DynamicSearchRule, DynamicSearchRules};
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

/// A pin before the choice between rules: its priority and its order among the actions.
struct Candidate<'a> {
    document_id: &'a str,
    position: u32,
    /// The rule's priority, `u64::MAX` when it has none.
    priority: u64,
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
    let pins = resolve_pins(
        &rules,
        prepared.body.q.as_deref(),
        index_uid,
        OffsetDateTime::now_utc(),
    );
    if pins.is_empty() {
        return;
    }
    prepared.pinned_documents = Some(Arc::new(
        pins.iter().map(|pin| pin.document_id.clone()).collect(),
    ));
    prepared.pins = pins;
}

/// The pins of `rules` for the query text `q` on `index_uid` at `now`, in placing order.
pub fn resolve_pins(
    rules: &DynamicSearchRules,
    q: Option<&str>,
    index_uid: &str,
    now: OffsetDateTime,
) -> Vec<Pin> {
    let query = q.map(str::to_lowercase);
    let mut chosen: Vec<Candidate<'_>> = Vec::new();
    for rule in rules.values() {
        if !applies(rule, query.as_deref(), now) {
            continue;
        }
        let priority = rule.priority.unwrap_or(u64::MAX);
        for action in &rule.actions {
            let selector = &action.selector;
            let Some(document_id) = selector.id.as_deref() else {
                continue;
            };
            if selector
                .index_uid
                .as_deref()
                .is_some_and(|uid| uid != index_uid)
            {
                continue;
            }
            let crate::control::dynamic_search_rules::PinAction::Pin { position } = action.action;
            let candidate = Candidate {
                document_id,
                position,
                priority,
            };
            match chosen
                .iter_mut()
                .find(|other| other.document_id == document_id)
            {
                Some(other) if candidate.priority < other.priority => *other = candidate,
                Some(_) => {}
                None => chosen.push(candidate),
            }
        }
    }
    // Stable: equal positions and priorities keep the rules' uid order.
    chosen.sort_by_key(|candidate| (candidate.position, candidate.priority));
    chosen
        .into_iter()
        .map(|candidate| Pin {
            document_id: candidate.document_id.to_owned(),
            position: candidate.position,
        })
        .collect()
}

/// Whether `rule` applies to the lowercased query text `query` at `now`.
fn applies(rule: &DynamicSearchRule, query: Option<&str>, now: OffsetDateTime) -> bool {
    rule.active
        && rule
            .conditions
            .iter()
            .all(|condition| holds(condition, query, now))
}

fn holds(condition: &Condition, query: Option<&str>, now: OffsetDateTime) -> bool {
    match condition {
        Condition::Query {
            is_empty: Some(is_empty),
            ..
        } => *is_empty == query.is_none_or(|query| query.trim().is_empty()),
        Condition::Query {
            contains: Some(text),
            ..
        } => query.is_some_and(|query| query.contains(&shards::filter::normalize_facet(text))),
        Condition::Query { .. } => true,
        Condition::Time { start, end } => {
            start.is_none_or(|start| now >= start) && end.is_none_or(|end| now <= end)
        }
    }
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

/// Runs `prepared`, whose rules pin documents: the pinned documents the filter selects,
/// then the ranking without them for the first `offset + limit` hits, then the window with
/// the pins placed (see the module documentation).
pub async fn execute_pinned(
    coordinator: &Rc<Coordinator>,
    record: &IndexRecord,
    prepared: &PreparedSearch,
) -> Result<SearchOutcome, ResponseError> {
    let (pinned, pinned_facets) = pinned_hits(coordinator, record, prepared).await?;
    let mut organic = prepared.clone();
    organic.pins = Vec::new();
    organic.offset = 0;
    organic.limit = prepared.offset.saturating_add(prepared.limit);
    let positions: Vec<u32> = pinned.iter().map(|(position, _)| *position).collect();
    let mut outcome = execute_organic(coordinator, record, &organic, &positions).await?;
    outcome.total += pinned.len() as u64;
    if let Some(merged) = outcome.facets.as_mut() {
        for counts in pinned_facets {
            merged.add(counts);
        }
    }
    let ranked = std::mem::take(&mut outcome.hits);
    outcome.hits = place_pins(pinned, prepared.offset, prepared.limit, ranked);
    if prepared
        .semantic
        .as_ref()
        .is_some_and(|semantic| semantic.semantic_only)
    {
        // Meilisearch counts every hit of a semantic-only search, pinned ones included.
        outcome.semantic_hit_count = Some(outcome.hits.len() as u32);
    }
    Ok(outcome)
}

/// The pinned documents of `prepared` the filter selects, each with its position, in placing
/// order, with each shard's facet counts of them when `facets` is asked.
async fn pinned_hits(
    coordinator: &Rc<Coordinator>,
    record: &IndexRecord,
    prepared: &PreparedSearch,
) -> Result<(Vec<(u32, ShardSearchHit)>, Vec<ShardFacetCounts>), ResponseError> {
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
    Ok((pinned, facets))
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
    use serde_json::json;

    fn rules(list: serde_json::Value) -> DynamicSearchRules {
        let list: Vec<DynamicSearchRule> = serde_json::from_value(list).unwrap();
        list.into_iter()
            .map(|rule| (rule.uid.clone(), rule))
            .collect()
    }

    fn pin(id: &str, position: u32) -> serde_json::Value {
        json!({"selector": {"id": id}, "action": {"type": "pin", "position": position}})
    }

    fn ids(pins: &[Pin]) -> Vec<(&str, u32)> {
        pins.iter()
            .map(|pin| (pin.document_id.as_str(), pin.position))
            .collect()
    }

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

    #[test]
    fn the_smallest_priority_wins_a_document_and_orders_equal_positions() {
        let rules = rules(json!([
            {"uid": "a", "actions": [pin("1", 3), pin("2", 0)]},
            {"uid": "b", "priority": 5, "actions": [pin("1", 1), pin("3", 0)]},
            {"uid": "c", "priority": 9, "active": false, "actions": [pin("4", 0)]},
        ]));
        let pins = resolve_pins(&rules, Some("x"), "movies", OffsetDateTime::now_utc());
        assert_eq!(ids(&pins), [("3", 0), ("2", 0), ("1", 1)]);
    }

    #[test]
    fn conditions_read_the_query_the_time_and_the_index() {
        let now = OffsetDateTime::now_utc();
        let rules = rules(json!([
            {"uid": "empty", "conditions": [{"scope": "query", "isEmpty": true}],
             "actions": [pin("e", 0)]},
            {"uid": "contains", "conditions": [{"scope": "query", "contains": " RETURNS "}],
             "actions": [{"selector": {"indexUid": "movies", "id": "c"}, "action": {"type": "pin", "position": 1}}]},
            {"uid": "past", "conditions": [{"scope": "time", "end": "2000-01-01T00:00:00Z"}],
             "actions": [pin("p", 2)]},
        ]));
        assert_eq!(ids(&resolve_pins(&rules, None, "movies", now)), [("e", 0)]);
        assert_eq!(
            ids(&resolve_pins(&rules, Some("  "), "movies", now)),
            [("e", 0)]
        );
        assert_eq!(
            ids(&resolve_pins(&rules, Some("Batman Returns"), "movies", now)),
            [("c", 1)]
        );
        assert!(resolve_pins(&rules, Some("Batman Returns"), "books", now).is_empty());
    }
}
