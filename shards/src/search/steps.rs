//! The ranking steps of a search: the index's ranking rules expanded for one query (the
//! `attribute` rule is two steps, `sort` one step per sorted field, `words` moved before the
//! first rule that looks at words), in the order the bucket sort applies them.
//!
//! Invariant: every step appears at most once, except custom sort rules on distinct fields.

use crate::analysis::RankingRule;
use crate::shard::SortRule;

use super::geo_sort::GeoSort;
use super::query::{MatchingStrategy, SearchSort};

/// One step of ranking, in order (`attribute` and `exactness` expand to two details).
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Words,
    Typo,
    Proximity,
    AttributeRank,
    WordPosition,
    Exactness,
    Sort(SortRule),
    GeoSort(GeoSort),
}

/// The ranking steps, as Meilisearch builds them: each rule once; `words` is left out with
/// `matchingStrategy: all`, and otherwise placed before the first rule that looks at words if
/// the settings put it later; a field sorted once is not sorted again.
pub fn steps(rules: &[RankingRule], sort: &[SearchSort], strategy: MatchingStrategy) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut words = strategy == MatchingStrategy::All;
    let mut seen: Vec<&RankingRule> = Vec::new();
    let mut sorted_fields: std::collections::BTreeSet<&str> = std::collections::BTreeSet::new();
    for rule in rules {
        let looks_at_words = matches!(
            rule,
            RankingRule::Typo
                | RankingRule::Proximity
                | RankingRule::Attribute
                | RankingRule::AttributeRank
                | RankingRule::WordPosition
                | RankingRule::Exactness
        );
        if looks_at_words && !words {
            steps.push(Step::Words);
            words = true;
        }
        if !matches!(rule, RankingRule::Custom { .. }) {
            if seen.contains(&rule) {
                continue;
            }
            seen.push(rule);
        }
        match rule {
            RankingRule::Words => {
                if !words {
                    steps.push(Step::Words);
                    words = true;
                }
            }
            RankingRule::Typo => steps.push(Step::Typo),
            RankingRule::Proximity => steps.push(Step::Proximity),
            RankingRule::Attribute => {
                steps.push(Step::AttributeRank);
                steps.push(Step::WordPosition);
            }
            RankingRule::AttributeRank => steps.push(Step::AttributeRank),
            RankingRule::WordPosition => steps.push(Step::WordPosition),
            RankingRule::Exactness => steps.push(Step::Exactness),
            RankingRule::Sort => {
                for sort_rule in sort {
                    match sort_rule {
                        SearchSort::Field(rule) => {
                            if sorted_fields.insert(rule.field.as_str()) {
                                steps.push(Step::Sort(rule.clone()));
                            }
                        }
                        SearchSort::Geo(rule) => steps.push(Step::GeoSort(*rule)),
                    }
                }
            }
            RankingRule::Custom { field, ascending } => {
                if sorted_fields.insert(field.as_str()) {
                    steps.push(Step::Sort(SortRule {
                        field: field.clone(),
                        ascending: *ascending,
                    }));
                }
            }
        }
    }
    steps
}
