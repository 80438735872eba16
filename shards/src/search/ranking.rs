//! The ranking rules on one document: from where each query term occurs in it, the rank every
//! rule gives it, as Meilisearch's bucket sort would (words, typo, proximity, attribute rank,
//! word position, exactness; sort values come from the facet indexes).
//!
//! Invariants: every rank depends only on the document and the query (never on other
//! documents), so scores from different shards compare. Maximum ranks follow Meilisearch's
//! graph costs computed on the query alone: typo `Σ allowed typos`, proximity 3 per adjacent
//! pair of query terms, attribute rank `weight_max` per term, word position 10 per term,
//! exactness 1 per term. Rules after `words` look only at the terms the matching strategy kept
//! for the document.

use crate::analysis::ProximityPrecision;
use crate::index::inverted::{FieldLengths, bucketed_position};

use super::occurrences::{SearchedFields, TermOccurrence};
use super::query::{MatchingStrategy, QueryTerm, TermKind};
use super::score::{ExactAttribute, Rank, ScoreDetail};

/// Proximity at and beyond which words are "far" (Meilisearch's `MAX_DISTANCE`).
pub const PROXIMITY_MAX: u32 = 4;
/// Cost of the worst word position of one term.
pub const WORD_POSITION_COST_MAX: u32 = 10;

/// The query-wide inputs of ranking.
pub struct RankingContext<'a> {
    pub terms: &'a [QueryTerm],
    pub strategy: MatchingStrategy,
    /// Groups of term indexes, in the order the matching strategy drops them (phrases and the
    /// last group, when there is no phrase, are never dropped).
    pub removal_order: Vec<Vec<usize>>,
    pub proximity_precision: ProximityPrecision,
    pub weight_max: u16,
    pub fields: &'a SearchedFields,
    /// Per term, the fewest typos its `maxTypoCount` allows: an n-gram alternative costs
    /// typos even on terms that allow none (from the query alone, see
    /// [`super::terms::typo_floors`]).
    pub typo_floors: Vec<u8>,
    /// Per term, the alternative whose occurrences count for proximity only after the term
    /// before (a cached prefix's longer words, see [`super::prefix_cache`]).
    pub forward_only: Vec<Option<u16>>,
}

/// The terms kept for a document and how many terms were dropped.
pub struct Kept {
    pub terms: Vec<usize>,
    pub removed: u32,
}

impl RankingContext<'_> {
    /// The terms kept for a document matching `matched` (per term), `None` when it does not
    /// match the query.
    pub fn kept(&self, matched: &[bool]) -> Option<Kept> {
        if matched.iter().all(|matched| *matched) {
            return Some(Kept {
                terms: (0..self.terms.len()).collect(),
                removed: 0,
            });
        }
        if self.strategy == MatchingStrategy::All {
            return None;
        }
        let mut removed: Vec<usize> = Vec::new();
        for group in &self.removal_order {
            removed.extend(group);
            let terms: Vec<usize> = (0..self.terms.len())
                .filter(|index| !removed.contains(index))
                .collect();
            if terms.iter().all(|index| matched[*index]) {
                let removed = u32::try_from(removed.len()).unwrap_or(u32::MAX);
                return Some(Kept { terms, removed });
            }
        }
        None
    }

    /// The terms kept by the documents of words bucket `level` (0: every term; then one
    /// more removal group per level).
    pub fn kept_at_level(&self, level: usize) -> Kept {
        let removed: Vec<usize> = self
            .removal_order
            .iter()
            .take(level)
            .flatten()
            .copied()
            .collect();
        Kept {
            terms: (0..self.terms.len())
                .filter(|index| !removed.contains(index))
                .collect(),
            removed: u32::try_from(removed.len()).unwrap_or(u32::MAX),
        }
    }

    /// The `words` rule's rank.
    pub fn words(&self, kept: &Kept) -> ScoreDetail {
        let phrase_words: usize = self
            .terms
            .iter()
            .filter(|term| matches!(term.kind, TermKind::Phrase { .. }))
            .map(QueryTerm::word_count)
            .sum();
        let removable = match self.strategy {
            MatchingStrategy::All => 0,
            _ => self.removal_order.iter().map(Vec::len).sum(),
        };
        let max = 1 + phrase_words.saturating_sub(1) + removable;
        let max = u32::try_from(max).unwrap_or(u32::MAX);
        ScoreDetail::Words {
            matching_words: max.saturating_sub(kept.removed),
            max_matching_words: max,
        }
    }

    pub fn typo(&self, kept: &Kept, occurrences: &[Vec<TermOccurrence>]) -> ScoreDetail {
        let mut typo_count = 0;
        let mut max_typo_count = 0;
        for &index in &kept.terms {
            let floor = self.typo_floors.get(index).copied().unwrap_or(0);
            max_typo_count += u32::from(self.terms[index].typos_max().max(floor));
            let fewest = occurrences[index]
                .iter()
                .map(|occurrence| occurrence.typos)
                .min()
                .unwrap_or(0);
            typo_count += u32::from(fewest);
        }
        ScoreDetail::Typo {
            typo_count,
            max_typo_count,
        }
    }

    /// The pairs of kept terms that stand side by side in the query (what proximity ranks).
    pub fn adjacent_pairs(&self, kept: &Kept) -> u32 {
        let adjacent = self.adjacent_pair_starts(kept).count();
        u32::try_from(adjacent).unwrap_or(u32::MAX)
    }

    /// The positions in `kept.terms` of the left terms of the pairs proximity ranks: kept
    /// terms standing side by side in the query.
    pub fn adjacent_pair_starts<'k>(&'k self, kept: &'k Kept) -> impl Iterator<Item = usize> + 'k {
        let terms = self.terms;
        kept.terms
            .windows(2)
            .enumerate()
            .filter(move |(_, pair)| terms[pair[0]].end_position + 1 == terms[pair[1]].position)
            .map(|(index, _)| index)
    }

    pub fn proximity(&self, kept: &Kept, occurrences: &[Vec<TermOccurrence>]) -> ScoreDetail {
        let worst = PROXIMITY_MAX - 1;
        let mut pairs = 0;
        let mut cost = 0;
        for index in self.adjacent_pair_starts(kept) {
            let (left, right) = (kept.terms[index], kept.terms[index + 1]);
            pairs += 1;
            let best = match self.proximity_precision {
                // As Meilisearch's rules refine the paths the typo rule chose, proximity
                // looks only at each term's occurrences with its fewest typos.
                ProximityPrecision::ByWord => {
                    let right_occurrences = fewest_typos(&occurrences[right]);
                    let forward_only = self.forward_only.get(right).copied().flatten();
                    let (after_only, both): (Vec<TermOccurrence>, Vec<TermOccurrence>) =
                        right_occurrences
                            .into_iter()
                            .partition(|occurrence| Some(occurrence.alternative) == forward_only);
                    let left_occurrences = fewest_typos(&occurrences[left]);
                    let both_ways = closest_proximity(&left_occurrences, &both, true);
                    let after = closest_proximity(&left_occurrences, &after_only, false);
                    match (both_ways, after) {
                        (Some(one), Some(other)) => Some(one.min(other)),
                        (one, other) => one.or(other),
                    }
                }
                ProximityPrecision::ByAttribute => {
                    let same_field =
                        occurrences[left]
                            .iter()
                            .filter(|left| left.is_match())
                            .any(|left| {
                                occurrences[right]
                                    .iter()
                                    .filter(|right| right.is_match())
                                    .any(|right| right.field == left.field)
                            });
                    if same_field { Some(1) } else { None }
                }
            };
            cost += best.map_or(worst, |proximity| proximity.min(PROXIMITY_MAX) - 1);
        }
        let max_rank = 1 + worst * pairs;
        ScoreDetail::Proximity(Rank {
            rank: max_rank.saturating_sub(cost),
            max_rank,
        })
    }

    pub fn attribute_rank(&self, kept: &Kept, occurrences: &[Vec<TermOccurrence>]) -> ScoreDetail {
        let weight_max = u32::from(self.weight_max);
        let mut cost = 0;
        for &index in &kept.terms {
            let best = positioned(&occurrences[index])
                .filter_map(|occurrence| self.fields.get(&occurrence.field))
                .map(|field| u32::from(field.weight).min(weight_max))
                .min()
                .unwrap_or(weight_max);
            cost += best;
        }
        let count = u32::try_from(kept.terms.len()).unwrap_or(u32::MAX);
        let max_rank = 1 + weight_max * count;
        ScoreDetail::AttributeRank(Rank {
            rank: max_rank.saturating_sub(cost),
            max_rank,
        })
    }

    pub fn word_position(&self, kept: &Kept, occurrences: &[Vec<TermOccurrence>]) -> ScoreDetail {
        let mut cost = 0;
        for &index in &kept.terms {
            let query_position = self.terms[index].position;
            let best = positioned(&occurrences[index])
                .map(|occurrence| {
                    let position = u32::from(bucketed_position(occurrence.start));
                    word_position_cost(position, query_position, occurrence.window_offset)
                })
                .min()
                .unwrap_or(WORD_POSITION_COST_MAX);
            cost += best;
        }
        let count = u32::try_from(kept.terms.len()).unwrap_or(u32::MAX);
        let max_rank = 1 + WORD_POSITION_COST_MAX * count;
        ScoreDetail::WordPosition(Rank {
            rank: max_rank.saturating_sub(cost),
            max_rank,
        })
    }

    /// The two halves of `exactness`: how the query matched a whole attribute, then how many
    /// kept terms occur exactly.
    pub fn exactness(
        &self,
        kept: &Kept,
        occurrences: &[Vec<TermOccurrence>],
        field_lengths: FieldLengths<'_>,
    ) -> [ScoreDetail; 2] {
        let matching_words = kept
            .terms
            .iter()
            .filter(|index| {
                occurrences[**index]
                    .iter()
                    .any(|occurrence| occurrence.exact && occurrence.is_match())
            })
            .count();
        let count = |value: usize| u32::try_from(value).unwrap_or(u32::MAX);
        [
            ScoreDetail::ExactAttribute(self.exact_attribute(kept, occurrences, field_lengths)),
            ScoreDetail::ExactWords {
                matching_words: count(matching_words),
                max_matching_words: count(kept.terms.len()),
            },
        ]
    }

    /// The number of words a field must hold to match the kept terms exactly (the
    /// `ExactMatch` half of exactness).
    pub fn exact_match_length(&self, kept: &Kept) -> u32 {
        kept.terms
            .iter()
            .map(|index| self.terms[*index].end_position - self.terms[*index].position + 1)
            .sum()
    }

    /// The exactness of a document matching no searched field exactly and holding
    /// `exact_terms` of the kept terms exactly: at the start of a field when it holds every
    /// kept term exactly (the best it can have), else no exact match. For a document with
    /// every term exact this is a ceiling, for the others their exactness.
    pub fn exactness_without_exact_match(
        &self,
        kept: &Kept,
        exact_terms: usize,
    ) -> [ScoreDetail; 2] {
        let count = |value: usize| u32::try_from(value).unwrap_or(u32::MAX);
        let attribute = if exact_terms >= kept.terms.len() {
            ExactAttribute::MatchesStart
        } else {
            ExactAttribute::NoExactMatch
        };
        [
            ScoreDetail::ExactAttribute(attribute),
            ScoreDetail::ExactWords {
                matching_words: count(exact_terms.min(kept.terms.len())),
                max_matching_words: count(kept.terms.len()),
            },
        ]
    }

    /// The exactness of a document with a searched field holding exactly the kept terms (the
    /// best there is).
    pub fn exactness_exact_match(&self, kept: &Kept) -> [ScoreDetail; 2] {
        let count = u32::try_from(kept.terms.len()).unwrap_or(u32::MAX);
        [
            ScoreDetail::ExactAttribute(ExactAttribute::ExactMatch),
            ScoreDetail::ExactWords {
                matching_words: count,
                max_matching_words: count,
            },
        ]
    }

    /// The exactness of a document holding every kept term exactly, no searched field
    /// starting with them.
    pub fn exactness_off_field_starts(&self, kept: &Kept) -> [ScoreDetail; 2] {
        let count = u32::try_from(kept.terms.len()).unwrap_or(u32::MAX);
        [
            ScoreDetail::ExactAttribute(ExactAttribute::NoExactMatch),
            ScoreDetail::ExactWords {
                matching_words: count,
                max_matching_words: count,
            },
        ]
    }

    fn exact_attribute(
        &self,
        kept: &Kept,
        occurrences: &[Vec<TermOccurrence>],
        field_lengths: FieldLengths<'_>,
    ) -> ExactAttribute {
        let all_positions = self.exact_match_length(kept);
        let starts_at = |index: usize, field: u16| {
            let wanted = bucketed_query_position(self.terms[index].position);
            occurrences[index].iter().any(|occurrence| {
                occurrence.exact
                    && occurrence.is_match()
                    && occurrence.field == field
                    && bucketed_position(occurrence.start) == wanted
            })
        };
        let mut result = ExactAttribute::NoExactMatch;
        for field in self.fields.keys() {
            if !kept.terms.iter().all(|index| starts_at(*index, *field)) {
                continue;
            }
            let length = field_lengths.get(*field);
            if u32::from(length) == all_positions {
                return ExactAttribute::ExactMatch;
            }
            result = ExactAttribute::MatchesStart;
        }
        result
    }
}

/// The matching occurrences of a term that carry its fewest typos (phrase anchors excluded).
fn fewest_typos(occurrences: &[TermOccurrence]) -> Vec<TermOccurrence> {
    let matching = || {
        occurrences
            .iter()
            .filter(|occurrence| occurrence.is_match())
    };
    let fewest = matching().map(|occurrence| occurrence.typos).min();
    matching()
        .filter(|occurrence| Some(occurrence.typos) == fewest)
        .cloned()
        .collect()
}

/// What the attribute and word-position rules look at for a term: among its occurrences with
/// the fewest typos (Meilisearch's later rules refine the paths the typo rule chose), those of
/// single words and a phrase's anchors (its first word's occurrences), never a phrase's own
/// occurrence. A word term may have a phrase alternative (its split, a multi-word synonym):
/// its single-word occurrences still count beside that phrase's anchors.
fn positioned(occurrences: &[TermOccurrence]) -> impl Iterator<Item = &TermOccurrence> {
    let fewest = occurrences.iter().map(|occurrence| occurrence.typos).min();
    occurrences.iter().filter(move |occurrence| {
        Some(occurrence.typos) == fewest
            && (occurrence.anchor || occurrence.start == occurrence.end)
    })
}

/// The smallest proximity between an occurrence of `left` and one of `right` in the same field
/// (`None` when they never share a field); with `backward` false, only occurrences of `right`
/// after one of `left` count.
fn closest_proximity(
    left: &[TermOccurrence],
    right: &[TermOccurrence],
    backward: bool,
) -> Option<u32> {
    let mut right_sorted: Vec<(u16, u16, bool)> = right
        .iter()
        .map(|occurrence| (occurrence.field, occurrence.start, occurrence.shared))
        .collect();
    right_sorted.sort_unstable();
    let mut best: Option<u32> = None;
    for occurrence in left {
        let key = (occurrence.field, occurrence.end);
        let index = right_sorted.partition_point(|(field, start, _)| (*field, *start) < key);
        let mut consider = |candidate: Option<&(u16, u16, bool)>| {
            let Some(&(field, start, shared)) = candidate else {
                return;
            };
            if field != occurrence.field {
                return;
            }
            if start == occurrence.end {
                // One occurrence matched both terms: an n-gram or multi-word synonym stands
                // for adjacent words; the same plain word twice is no proximity at all.
                if shared && occurrence.shared {
                    best = Some(1);
                }
                return;
            }
            let (lhs, rhs) = (u32::from(occurrence.end), u32::from(start));
            let proximity = if lhs <= rhs { rhs - lhs } else { lhs - rhs + 1 };
            best = Some(best.map_or(proximity, |current| current.min(proximity)));
        };
        // The nearest following start (past those equal to this end) and the nearest before.
        let mut following = index;
        while let Some(candidate) = right_sorted.get(following) {
            consider(Some(candidate));
            if (candidate.0, candidate.1) != key {
                break;
            }
            following += 1;
        }
        if backward {
            consider(
                index
                    .checked_sub(1)
                    .and_then(|before| right_sorted.get(before)),
            );
        }
    }
    best
}

/// The position bucket of a term's place in the query.
pub(super) fn bucketed_query_position(position: u32) -> u16 {
    bucketed_position(u16::try_from(position).unwrap_or(u16::MAX))
}

/// Cost of a word standing `distance` positions from where the query has it.
/// The word-position cost of a term at query position `query_position` found at document
/// position `position`, as the `window_offset`-th of the terms sharing the occurrence (0 for
/// a term alone): Meilisearch measures a shared occurrence from the first sharing term's
/// query position, each later term one further.
pub fn word_position_cost(position: u32, query_position: u32, window_offset: u8) -> u32 {
    let offset = u32::from(window_offset);
    debug_assert!(
        query_position >= offset,
        "a window's terms stand one query position apart from its first"
    );
    let start = query_position.saturating_sub(offset);
    cost_from_distance(position.abs_diff(start).saturating_add(offset))
}

pub fn cost_from_distance(distance: u32) -> u32 {
    match distance {
        0 => 0,
        1 => 1,
        2..=4 => 2,
        5..=7 => 3,
        8..=11 => 4,
        12..=16 => 5,
        17..=24 => 6,
        25..=64 => 7,
        65..=256 => 8,
        257..=1024 => 9,
        _ => 10,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(field: u16, position: u16, shared: bool) -> TermOccurrence {
        TermOccurrence {
            anchor: false,
            field,
            start: position,
            end: position,
            typos: 0,
            exact: true,
            shared,
            window_offset: 0,
            alternative: 0,
        }
    }

    #[test]
    fn distance_costs_grow_by_buckets() {
        let expected = [
            (0, 0),
            (1, 1),
            (4, 2),
            (7, 3),
            (11, 4),
            (16, 5),
            (24, 6),
            (64, 7),
        ];
        for (distance, cost) in expected {
            assert_eq!(cost_from_distance(distance), cost, "{distance}");
        }
        assert_eq!(cost_from_distance(2000), WORD_POSITION_COST_MAX);
    }

    #[test]
    fn closest_proximity_is_directional_and_per_field() {
        // Right after: 1; right before: distance + 1; other field: none.
        assert_eq!(
            closest_proximity(&[at(0, 3, false)], &[at(0, 4, false)], true),
            Some(1)
        );
        assert_eq!(
            closest_proximity(&[at(0, 4, false)], &[at(0, 3, false)], true),
            Some(2)
        );
        assert_eq!(
            closest_proximity(&[at(0, 3, false)], &[at(1, 4, false)], true),
            None
        );
        assert_eq!(
            closest_proximity(
                &[at(0, 3, false)],
                &[at(0, 3, false), at(0, 9, false)],
                true
            ),
            Some(6)
        );
        // Only after: the word before does not count.
        assert_eq!(
            closest_proximity(&[at(0, 4, false)], &[at(0, 3, false)], false),
            None
        );
        assert_eq!(
            closest_proximity(
                &[at(0, 4, false)],
                &[at(0, 3, false), at(0, 6, false)],
                false
            ),
            Some(2)
        );
        // One shared occurrence standing for both words.
        assert_eq!(
            closest_proximity(&[at(0, 3, true)], &[at(0, 3, true)], true),
            Some(1)
        );
    }
}
