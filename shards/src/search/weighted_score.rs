//! How Meilisearch orders the hits of different queries in a federated search: each hit's
//! details become weighted values, rule group by rule group ([`weighted_values`]: the ranks
//! of consecutive ranking rules folded into one score times the query's weight, then each
//! sort value, geo distance or vector similarity on its own), and two hits compare value by
//! value ([`compare_weighted`]).
//!
//! So a sorted query keeps its own order against another query sorted on the same field, and
//! the weighted global score decides only where the groups cannot be compared (a score against
//! a sort value, opposite sort directions).
//!
//! Invariant: this is Meilisearch 1.41's comparison (`milli::score_details::
//! weighted_score_values` and the federated search's `weighted_scores::compare`), including
//! its choices: a geo sort compares distances alike in both directions (the greater distance
//! first), and where groups cannot be compared, the side with more groups left wins.

use std::cmp::Ordering;

use super::geo_sort::distance;
use super::score::{Rank, ScoreDetail, SortValue, compare_sort_values};

/// Scores closer than this are equal.
const SCORE_EPSILON: f64 = f64::EPSILON;

/// One group of a hit's details, weighted.
#[derive(Debug, Clone, PartialEq)]
pub enum WeightedValue {
    /// The ranks of consecutive ranking rules, folded, times the weight.
    Score(f64),
    Sort {
        ascending: bool,
        value: SortValue,
    },
    GeoSort {
        ascending: bool,
        distance: Option<f64>,
    },
    /// A vector similarity times the weight.
    Vector(f64),
}

/// The weighted groups of `details` for a query of weight `weight`.
pub fn weighted_values(details: &[ScoreDetail], weight: f64) -> Vec<WeightedValue> {
    let mut values = Vec::new();
    let mut ranks: Option<Rank> = None;
    let flush = |ranks: &mut Option<Rank>, values: &mut Vec<WeightedValue>| {
        if let Some(rank) = ranks.take() {
            values.push(WeightedValue::Score(rank.local_score() * weight));
        }
    };
    for detail in details {
        let value = match detail {
            ScoreDetail::Sort {
                ascending, value, ..
            } => WeightedValue::Sort {
                ascending: *ascending,
                value: value.clone(),
            },
            ScoreDetail::GeoSort { rule, value } => WeightedValue::GeoSort {
                ascending: rule.ascending,
                distance: distance(rule.point, *value),
            },
            ScoreDetail::Vector { similarity } => {
                WeightedValue::Vector(f64::from(similarity.unwrap_or(0.0)) * weight)
            }
            other => {
                if let Some(rank) = other.rank() {
                    ranks = Some(match ranks {
                        Some(outer) => Rank::merge(outer, rank),
                        None => rank,
                    });
                }
                continue;
            }
        };
        flush(&mut ranks, &mut values);
        values.push(value);
    }
    flush(&mut ranks, &mut values);
    values
}

/// Compares two hits by their weighted groups and weighted global scores: `Greater` when
/// `left` goes first.
pub fn compare_weighted(
    left: &[WeightedValue],
    left_global: f64,
    right: &[WeightedValue],
    right_global: f64,
) -> Ordering {
    let global = || left_global.total_cmp(&right_global);
    for (position, pair) in left.iter().zip(right).enumerate() {
        let order = match pair {
            (
                WeightedValue::Score(left) | WeightedValue::Vector(left),
                WeightedValue::Score(right) | WeightedValue::Vector(right),
            ) => {
                if (left - right).abs() <= SCORE_EPSILON {
                    continue;
                }
                left.total_cmp(right)
            }
            (
                WeightedValue::Sort {
                    ascending: left_ascending,
                    value: left,
                },
                WeightedValue::Sort {
                    ascending: right_ascending,
                    value: right,
                },
            ) => {
                if left_ascending != right_ascending {
                    return global();
                }
                // Ours orders `Less` first; Meilisearch's answers `Greater` for the first.
                compare_sort_values(*left_ascending, left, right).reverse()
            }
            (
                WeightedValue::GeoSort {
                    ascending: left_ascending,
                    distance: left,
                },
                WeightedValue::GeoSort {
                    ascending: right_ascending,
                    distance: right,
                },
            ) => {
                if left_ascending != right_ascending {
                    continue;
                }
                match (left, right) {
                    (None, None) => continue,
                    (None, Some(_)) => Ordering::Less,
                    (Some(_), None) => Ordering::Greater,
                    (Some(left), Some(right)) => {
                        if (left - right).abs() <= SCORE_EPSILON {
                            continue;
                        }
                        left.total_cmp(right)
                    }
                }
            }
            _ => {
                // Not comparable: the side with more groups left, then the global score.
                let left_rest = left.len() - position - 1;
                let right_rest = right.len() - position - 1;
                return left_rest.cmp(&right_rest).then_with(global);
            }
        };
        if order != Ordering::Equal {
            return order;
        }
    }
    left.len().cmp(&right.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sort(value: f64) -> ScoreDetail {
        ScoreDetail::Sort {
            field: "price".to_owned(),
            ascending: true,
            value: SortValue::Number(value),
        }
    }

    fn words(matching: u32) -> ScoreDetail {
        ScoreDetail::Words {
            matching_words: matching,
            max_matching_words: 2,
        }
    }

    #[test]
    fn consecutive_ranks_fold_and_sort_values_stand_alone() {
        let values = weighted_values(
            &[
                words(2),
                ScoreDetail::Typo {
                    typo_count: 0,
                    max_typo_count: 1,
                },
                sort(3.0),
                words(1),
            ],
            0.5,
        );
        assert_eq!(
            values,
            vec![
                WeightedValue::Score(0.5),
                WeightedValue::Sort {
                    ascending: true,
                    value: SortValue::Number(3.0)
                },
                WeightedValue::Score(0.25),
            ]
        );
    }

    #[test]
    fn sorted_hits_compare_by_their_sort_values_before_their_scores() {
        let cheap = weighted_values(&[sort(1.0), words(1)], 1.0);
        let dear = weighted_values(&[sort(5.0), words(2)], 1.0);
        assert_eq!(compare_weighted(&cheap, 0.5, &dear, 1.0), Ordering::Greater);
        // A score group against a sort group: more groups left wins, then the global score.
        let ranked = weighted_values(&[words(2)], 1.0);
        assert_eq!(
            compare_weighted(&cheap, 0.5, &ranked, 1.0),
            Ordering::Greater
        );
        assert_eq!(compare_weighted(&ranked, 1.0, &cheap, 0.5), Ordering::Less);
    }
}
