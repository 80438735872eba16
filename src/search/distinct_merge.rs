//! Distinct applied once over the candidates of every shard of an index, as Meilisearch's
//! bucket sort applies it over one index: in rank order, a hit is kept unless it shares a
//! value with a hit already kept; the pass stops once `target` hits are kept and the bucket of
//! the last one (the hits equal to it on every ranking rule) is done.
//!
//! Each shard sent its candidates up to some hit, after which it has more only in later
//! buckets (`shards::search::distinct`). A hit can be judged only when no shard that has
//! more could still send a hit ranked before it; when one could, [`select`] names the shards
//! to ask for more instead.
//!
//! For an exact count, [`select_by_id`] runs the same rule over every shard's remaining
//! valued documents in internal id order (ids are allocated index-wide, so this is the order
//! of one index).
//!
//! Invariant: the result is the one a single shard holding every document would give, and
//! depends neither on how documents are spread over shards nor on how many each sent.

use std::cmp::Ordering;
use std::collections::BTreeSet;

use shards::search::distinct::same_bucket;
use shards::search::{ShardHit, compare_details};

/// What one shard sent.
pub struct ShardCandidates<'a> {
    /// Its candidates, best first.
    pub hits: &'a [ShardHit],
    /// It has no more.
    pub complete: bool,
}

/// The hits distinct keeps.
#[derive(Debug, Default, PartialEq)]
pub struct Selection {
    /// `(shard, position among its candidates)` of each hit kept, best first.
    pub kept: Vec<(usize, usize)>,
    /// Every value of the hits kept.
    pub taken: BTreeSet<String>,
    /// Some hit was left out for a `rankingScoreThreshold`.
    pub below_threshold: bool,
}

/// The outcome of a pass over what the shards sent.
#[derive(Debug, PartialEq)]
pub enum Merge {
    Done(Selection),
    /// These shards must send more before the pass can go on.
    NeedMore(Vec<usize>),
}

/// The rank order of hits of one index.
fn order(left: &ShardHit, right: &ShardHit) -> Ordering {
    compare_details(&left.details, &right.details).then(left.id.cmp(&right.id))
}

/// Whether a shard whose last candidate is `last` (and that has more) may still send a hit
/// ranked before `hit` or in its bucket.
fn may_precede(hit: &ShardHit, last: &ShardHit) -> bool {
    if last.details.is_empty() {
        hit.id > last.id
    } else {
        compare_details(&hit.details, &last.details) == Ordering::Greater
    }
}

/// Keeps `target` hits of `shards` (see the module documentation); hits scoring below
/// `threshold` are left out as if they did not match.
pub fn select(shards: &[ShardCandidates<'_>], target: usize, threshold: Option<f64>) -> Merge {
    let mut selection = Selection::default();
    if target == 0 {
        return Merge::Done(selection);
    }
    let mut cursors = vec![0usize; shards.len()];
    let mut anchor: Option<&ShardHit> = None;
    loop {
        let next = shards
            .iter()
            .enumerate()
            .filter_map(|(shard, sent)| sent.hits.get(cursors[shard]).map(|hit| (shard, hit)))
            .min_by(|left, right| order(left.1, right.1));
        let Some((shard, hit)) = next else {
            let incomplete: Vec<usize> = (0..shards.len())
                .filter(|shard| !shards[*shard].complete)
                .collect();
            if anchor.is_some() || incomplete.is_empty() {
                return Merge::Done(selection);
            }
            return Merge::NeedMore(incomplete);
        };
        // The anchor was judged, so every hit of its bucket has been sent.
        if anchor.is_some_and(|anchor| !same_bucket(&anchor.details, &hit.details)) {
            return Merge::Done(selection);
        }
        let blocking: Vec<usize> = (0..shards.len())
            .filter(|other| {
                !shards[*other].complete
                    && shards[*other]
                        .hits
                        .last()
                        .is_none_or(|last| may_precede(hit, last))
            })
            .collect();
        if !blocking.is_empty() {
            return Merge::NeedMore(blocking);
        }
        let position = cursors[shard];
        cursors[shard] += 1;
        if threshold.is_some_and(|threshold| hit.score < threshold) {
            selection.below_threshold = true;
            continue;
        }
        let values = &hit.distinct_values;
        if values.iter().any(|value| selection.taken.contains(value)) {
            continue;
        }
        selection.taken.extend(values.iter().cloned());
        selection.kept.push((shard, position));
        if selection.kept.len() == target {
            anchor = Some(hit);
        }
    }
}

/// Of every shard's documents (each list in internal id order, with their values), the ones
/// kept by distinct in internal id order, per shard.
pub fn select_by_id(lists: &[Vec<(u32, Vec<String>)>]) -> Vec<Vec<u32>> {
    let mut merged: Vec<(u32, usize, &[String])> = lists
        .iter()
        .enumerate()
        .flat_map(|(shard, list)| {
            list.iter()
                .map(move |(document, values)| (*document, shard, values.as_slice()))
        })
        .collect();
    merged.sort_by_key(|(document, ..)| *document);
    let mut taken: BTreeSet<&str> = BTreeSet::new();
    let mut kept = vec![Vec::new(); lists.len()];
    for (document, shard, values) in merged {
        if values.iter().any(|value| taken.contains(value.as_str())) {
            continue;
        }
        taken.extend(values.iter().map(String::as_str));
        kept[shard].push(document);
    }
    kept
}

#[cfg(test)]
mod tests {
    use shards::search::{Rank, ScoreDetail};

    use super::*;

    /// A hit ranked by one rule at `rank` out of 10, holding `values`.
    fn hit(id: u32, rank: u32, values: &[&str]) -> ShardHit {
        ShardHit {
            id,
            score: f64::from(rank) / 10.0,
            details: vec![ScoreDetail::Proximity(Rank { rank, max_rank: 10 })],
            matched_words: Vec::new(),
            distinct_values: values.iter().map(|value| (*value).to_owned()).collect(),
        }
    }

    fn kept_ids(shards: &[Vec<ShardHit>], selection: &Selection) -> Vec<u32> {
        selection
            .kept
            .iter()
            .map(|(shard, position)| shards[*shard][*position].id)
            .collect()
    }

    fn complete(shards: &[Vec<ShardHit>]) -> Vec<ShardCandidates<'_>> {
        shards
            .iter()
            .map(|hits| ShardCandidates {
                hits,
                complete: true,
            })
            .collect()
    }

    #[test]
    fn a_document_dropped_excludes_nothing_across_shards() {
        // Shard 1 alone would keep 2 and drop 3 (they share `c`); but 1 (shard 0) takes `b`
        // first, so 2 is dropped and 3 is kept.
        let shards = vec![
            vec![hit(1, 9, &["b"])],
            vec![hit(2, 8, &["b", "c"]), hit(3, 7, &["c"])],
        ];
        let Merge::Done(selection) = select(&complete(&shards), 10, None) else {
            panic!("every shard is complete");
        };
        assert_eq!(kept_ids(&shards, &selection), vec![1, 3]);
    }

    #[test]
    fn the_bucket_of_the_last_hit_kept_is_finished() {
        let shards = vec![
            vec![hit(1, 9, &["a"]), hit(2, 8, &["b"]), hit(4, 8, &["a", "c"])],
            vec![hit(3, 8, &["d"]), hit(5, 7, &["e"])],
        ];
        let Merge::Done(selection) = select(&complete(&shards), 2, None) else {
            panic!("every shard is complete");
        };
        assert_eq!(kept_ids(&shards, &selection), vec![1, 2, 3]);
        assert!(!selection.taken.contains("c") && selection.taken.contains("d"));
    }

    #[test]
    fn a_shard_that_may_send_better_hits_is_asked_for_more() {
        let first = vec![hit(1, 9, &["a"]), hit(2, 8, &["a"])];
        let second = vec![hit(3, 9, &["b"])];
        let shards = [
            ShardCandidates {
                hits: &first,
                complete: true,
            },
            ShardCandidates {
                hits: &second,
                complete: false,
            },
        ];
        assert_eq!(select(&shards, 3, None), Merge::NeedMore(vec![1]));
        assert!(matches!(select(&shards, 2, None), Merge::Done(_)));
    }

    #[test]
    fn the_exact_pass_goes_by_internal_id() {
        let lists = vec![
            vec![(4, vec!["a".to_owned(), "b".to_owned()])],
            vec![(2, vec!["b".to_owned()]), (7, vec!["a".to_owned()])],
        ];
        assert_eq!(select_by_id(&lists), vec![Vec::<u32>::new(), vec![2, 7]]);
    }
}
