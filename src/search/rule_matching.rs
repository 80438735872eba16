//! Which dynamic search rules apply to a search, and the documents they pin, as Meilisearch
//! 1.50 decides (with the `dynamicSearchRules` feature on).
//!
//! A rule applies when it is `active` and each part of its conditions holds:
//! - `time`: now is within `start` and `end` (each optional, inclusive);
//! - `query.isEmpty`: the query has no word (`true`) or has one (`false`);
//! - `query.words`: every word of `words` is one of the query's words. Both are cut into
//!   words and normalized by the default analyzer (case, accents), and the query's words are
//!   taken distinct and in sorted order, at most `max_counted_words` of them (see
//!   [`RuleFuel`]).
//!
//! The applying rules are taken by `precedence` (smallest first, rules without one last; a
//! tie keeps the uid order), at most `max_active_rules` of them. Each of their actions whose
//! selector names this index or no index pins its document at its position; a document
//! pinned twice keeps the first pin, from the rule that comes first; at most
//! `max_pin_actions` documents are pinned. Pins are then ordered by position, a tie by the
//! rules' order.
//!
//! Invariant: the word fuel bounds the word lookups of one search; a rule whose `words` could
//! not all be looked up does not apply (never a rule that would not apply with more fuel).

use std::collections::BTreeSet;
use std::sync::LazyLock;

use shards::analysis::{Analyzer, TextSettings};
use time::OffsetDateTime;

use super::pins::Pin;
use super::rule_fuel::RuleFuel;
use crate::control::dynamic_search_rules::{
    Conditions, DynamicSearchRule, DynamicSearchRules, PinAction,
};

/// The analyzer of indexes with default settings: the rules' words and the query's are cut
/// and normalized as such an index cuts them.
static DEFAULT_ANALYZER: LazyLock<Analyzer> =
    LazyLock::new(|| Analyzer::new(&TextSettings::default()));

/// The normalized words of `text`.
pub fn normalized_words(text: &str) -> Vec<String> {
    DEFAULT_ANALYZER.normalize_words(text)
}

/// What a search tells the rules: its query's words and the time.
pub struct RuleContext {
    /// The query's distinct words, sorted, at most the counted ones.
    counted_words: Vec<String>,
    /// Whether the query has no word at all.
    query_is_empty: bool,
    now: OffsetDateTime,
}

impl RuleContext {
    /// The context of query text `q` at `now`, counting at most `max_counted_words` words.
    pub fn new(q: Option<&str>, now: OffsetDateTime, max_counted_words: u8) -> RuleContext {
        let words: BTreeSet<String> = q
            .map(normalized_words)
            .unwrap_or_default()
            .into_iter()
            .collect();
        RuleContext {
            query_is_empty: words.is_empty(),
            counted_words: words
                .into_iter()
                .take(usize::from(max_counted_words))
                .collect(),
            now,
        }
    }
}

/// The pins of `rules` for a search of `index_uid` in `context`, in placing order.
pub fn resolve_pins(
    rules: &DynamicSearchRules,
    index_uid: &str,
    context: &RuleContext,
    fuel: RuleFuel,
) -> Vec<Pin> {
    let mut word_fuel = fuel.word_fuel;
    let mut applying: Vec<&DynamicSearchRule> = rules
        .values()
        .filter(|rule| rule.active && holds(&rule.conditions, context, &mut word_fuel))
        .collect();
    // Stable: equal precedences keep the uid order.
    applying.sort_by_key(|rule| rule.precedence.unwrap_or(u64::MAX));
    let mut pins: Vec<(Pin, usize)> = Vec::new();
    let pin_limit = fuel.max_pin_actions as usize;
    let rules_taken = applying.iter().take(fuel.max_active_rules as usize);
    'rules: for (order, rule) in rules_taken.enumerate() {
        for action in &rule.actions {
            if pins.len() >= pin_limit {
                break 'rules;
            }
            let selector = &action.selector;
            if selector
                .index_uid
                .as_deref()
                .is_some_and(|uid| uid != index_uid)
                || pins.iter().any(|(pin, _)| pin.document_id == selector.id)
            {
                continue;
            }
            let PinAction::Pin { position } = action.action;
            let pin = Pin {
                document_id: selector.id.clone(),
                position,
            };
            pins.push((pin, order));
        }
    }
    pins.sort_by_key(|(pin, order)| (pin.position, *order));
    pins.into_iter().map(|(pin, _)| pin).collect()
}

/// Whether every part of `conditions` holds in `context`; looking up a rule word among the
/// query's words takes one unit of `word_fuel`.
fn holds(conditions: &Conditions, context: &RuleContext, word_fuel: &mut u32) -> bool {
    if let Some(time) = &conditions.time {
        let started = time.start.is_none_or(|start| context.now >= start);
        let not_ended = time.end.is_none_or(|end| context.now <= end);
        if !(started && not_ended) {
            return false;
        }
    }
    let Some(query) = &conditions.query else {
        return true;
    };
    if query
        .is_empty
        .is_some_and(|is_empty| is_empty != context.query_is_empty)
    {
        return false;
    }
    let Some(words) = &query.words else {
        return true;
    };
    let wanted: BTreeSet<String> = normalized_words(words).into_iter().collect();
    if wanted.len() > context.counted_words.len() {
        return false;
    }
    wanted.iter().all(|word| {
        if *word_fuel == 0 {
            return false;
        }
        *word_fuel -= 1;
        context.counted_words.binary_search(word).is_ok()
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rules(list: serde_json::Value) -> DynamicSearchRules {
        let list: Vec<DynamicSearchRule> =
            serde_json::from_value(list).expect("the test data is valid");
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

    fn pins_for(rules: &DynamicSearchRules, q: Option<&str>, fuel: RuleFuel) -> Vec<Pin> {
        let context = RuleContext::new(q, OffsetDateTime::now_utc(), fuel.max_counted_words);
        resolve_pins(rules, "movies", &context, fuel)
    }

    #[test]
    fn the_smallest_precedence_wins_a_document_and_orders_equal_positions() {
        let rules = rules(json!([
            {"uid": "a", "actions": [pin("1", 3), pin("2", 0)]},
            {"uid": "b", "precedence": 5, "actions": [pin("1", 1), pin("3", 0)]},
            {"uid": "c", "precedence": 9, "active": false, "actions": [pin("4", 0)]},
        ]));
        let pins = pins_for(&rules, Some("x"), RuleFuel::default());
        assert_eq!(ids(&pins), [("3", 0), ("2", 0), ("1", 1)]);
    }

    #[test]
    fn conditions_read_the_query_words_the_time_and_the_index() {
        let rules = rules(json!([
            {"uid": "empty", "conditions": {"query": {"isEmpty": true}}, "actions": [pin("e", 0)]},
            {"uid": "words", "conditions": {"query": {"words": "RETURNS batman"}},
             "actions": [{"selector": {"indexUid": "movies", "id": "c"}, "action": {"type": "pin", "position": 1}}]},
            {"uid": "past", "conditions": {"time": {"end": "2000-01-01T00:00:00Z"}},
             "actions": [pin("p", 2)]},
            {"uid": "books", "actions": [{"selector": {"indexUid": "books", "id": "b"}, "action": {"type": "pin", "position": 0}}]},
        ]));
        let fuel = RuleFuel::default();
        assert_eq!(ids(&pins_for(&rules, None, fuel)), [("e", 0)]);
        assert_eq!(ids(&pins_for(&rules, Some("  ?! "), fuel)), [("e", 0)]);
        assert_eq!(
            ids(&pins_for(&rules, Some("Batman Returns"), fuel)),
            [("c", 1)]
        );
        assert_eq!(
            ids(&pins_for(&rules, Some("returns of BATMAN"), fuel)),
            [("c", 1)]
        );
        // A word of the rule missing, or only a prefix of it: no pin.
        assert!(pins_for(&rules, Some("Batman"), fuel).is_empty());
        assert!(pins_for(&rules, Some("Batman Return"), fuel).is_empty());
    }

    #[test]
    fn the_fuel_bounds_words_rules_and_pins() {
        let rules = rules(json!([
            {"uid": "a", "precedence": 1, "conditions": {"query": {"words": "zebra"}}, "actions": [pin("1", 0)]},
            {"uid": "b", "precedence": 2, "actions": [pin("2", 1), pin("3", 2)]},
            {"uid": "c", "precedence": 3, "actions": [pin("4", 3)]},
        ]));
        let fuel = RuleFuel::default();
        let all = pins_for(&rules, Some("apple zebra"), fuel);
        assert_eq!(ids(&all), [("1", 0), ("2", 1), ("3", 2), ("4", 3)]);
        // Only the first counted word (sorted: `apple`) is checked: `zebra` is not counted.
        let one_word = RuleFuel {
            max_counted_words: 1,
            ..fuel
        };
        assert_eq!(
            ids(&pins_for(&rules, Some("apple zebra"), one_word))[0],
            ("2", 1)
        );
        let no_word_fuel = RuleFuel {
            word_fuel: 0,
            ..fuel
        };
        assert_eq!(pins_for(&rules, Some("zebra"), no_word_fuel).len(), 3);
        let two_rules = RuleFuel {
            max_active_rules: 2,
            ..fuel
        };
        assert_eq!(ids(&pins_for(&rules, Some("zebra"), two_rules)).len(), 3);
        let two_pins = RuleFuel {
            max_pin_actions: 2,
            ..fuel
        };
        assert_eq!(
            ids(&pins_for(&rules, Some("zebra"), two_pins)),
            [("1", 0), ("2", 1)]
        );
    }
}
