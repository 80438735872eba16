//! The proximity rank of a words bucket's documents from the pair trees, without reading any
//! document's occurrences.
//!
//! Proximity prices each pair of kept terms that stand side by side in the query by how close
//! two of their fewest-typo occurrences stand in one field: proximity 1 to 3, or far (every
//! proximity from [`PROXIMITY_MAX`] on). The pair trees hold every two words 1 to
//! [`PAIR_DISTANCE_MAX`] positions apart in a field, which is exactly enough: a pair's cost in
//! a document is `p - 1` for the lowest proximity `p` at which the trees find it there, and
//! the far cost elsewhere; a bucket splits by the sum of its pairs' costs, as the typo rule
//! splits by the sum of its terms' typos.
//!
//! The best sub-bucket (every pair side by side) is read first, narrowing the bucket pair after
//! pair; the farther proximities are read only when it cannot fill the page.
//!
//! Invariant: a document's cost is exactly the one [`super::ranking`] computes from its
//! occurrences (per typo level, the alternatives with that many typos that are a fewest-typo
//! match somewhere in the documents concerned; a cached prefix's longer words count only after
//! the term before, see [`super::prefix_cache`]). Where pairs cannot tell ([`WordPairs`]'s
//! `None`: a phrase, a left prefix, a prefix starting too many words read backward), nothing
//! is split here and the caller reads occurrences.

use std::collections::BTreeMap;

use roaring::RoaringBitmap;

use crate::analysis::ProximityPrecision;
use crate::error::ShardResult;
use crate::index::trees::PAIR_DISTANCE_MAX;

use super::bitmap_union::union_of_owned;
use super::ranking::PROXIMITY_MAX;
use super::rule_bitmaps::{BucketCosts, TermCosts, lowest_costs, split_by_cost_sum};
use super::terms::Alternative;
use super::word_pairs::WordPairs;

// The pair trees reach every proximity that is not far, and no farther.
const _: () = assert!(PROXIMITY_MAX as usize == PAIR_DISTANCE_MAX + 1);

/// The cost of a far pair (no two occurrences closer than [`PROXIMITY_MAX`]).
const FAR_COST: u32 = PROXIMITY_MAX - 1;

impl BucketCosts<'_> {
    /// The documents of `bucket` holding every adjacent pair of kept terms side by side in one
    /// field (proximity's best sub-bucket); `None` when pairs cannot tell (proximity by
    /// attribute, or a pair of alternatives [`WordPairs`] cannot read that matches there).
    pub fn side_by_side(&self, bucket: &RoaringBitmap) -> ShardResult<Option<RoaringBitmap>> {
        if self.context.proximity_precision != ProximityPrecision::ByWord {
            return Ok(None);
        }
        let mut pairs = WordPairs::open(self.read)?;
        let mut best = bucket.clone();
        for index in self.context.adjacent_pair_starts(self.kept) {
            let Some(found) = self.pair_at(&mut pairs, index, 1, &best)? else {
                return Ok(None);
            };
            best = found;
            if best.is_empty() {
                break;
            }
        }
        Ok(Some(best))
    }

    /// `bucket` split by proximity, best first, empty sub-buckets left out; `None` when pairs
    /// cannot tell (as for [`BucketCosts::side_by_side`]).
    pub fn split_by_proximity(
        &self,
        bucket: &RoaringBitmap,
    ) -> ShardResult<Option<Vec<RoaringBitmap>>> {
        if self.context.proximity_precision != ProximityPrecision::ByWord {
            return Ok(None);
        }
        let mut pairs = WordPairs::open(self.read)?;
        let mut costs: Vec<TermCosts> = Vec::new();
        for index in self.context.adjacent_pair_starts(self.kept) {
            let mut by_cost = BTreeMap::from([(FAR_COST, bucket.clone())]);
            // Proximity `p` costs `p - 1`.
            for (cost, proximity) in (0..FAR_COST).zip(1..=PAIR_DISTANCE_MAX) {
                let Some(found) = self.pair_at(&mut pairs, index, proximity, bucket)? else {
                    return Ok(None);
                };
                by_cost.insert(cost, found);
            }
            costs.push(lowest_costs(by_cost));
        }
        Ok(Some(split_by_cost_sum(bucket, &costs)))
    }

    /// The documents of `within` where the kept terms at `index` and `index + 1` (in
    /// `kept.terms`) stand at `proximity` through their fewest-typo alternatives, or `None`
    /// when pairs cannot tell.
    fn pair_at(
        &self,
        pairs: &mut WordPairs<'_>,
        index: usize,
        proximity: usize,
        within: &RoaringBitmap,
    ) -> ShardResult<Option<RoaringBitmap>> {
        let right_term = self.kept.terms[index + 1];
        let forward_only = self
            .context
            .forward_only
            .get(right_term)
            .copied()
            .flatten()
            .map(usize::from);
        let mut holding = Vec::new();
        for (left_typos, left_documents) in &self.typos[index] {
            for (right_typos, right_documents) in &self.typos[index + 1] {
                let scope = &(left_documents & right_documents) & within;
                if scope.is_empty() {
                    continue;
                }
                let lefts = self.matching_within(index, *left_typos, &scope);
                let rights = self.matching_within(index + 1, *right_typos, &scope);
                for (_, left) in &lefts {
                    for (right_index, right) in &rights {
                        let backward = forward_only != Some(*right_index);
                        let Some(found) =
                            pairs.alternatives_at(left, right, proximity, backward, &scope)?
                        else {
                            return Ok(None);
                        };
                        holding.push(found);
                    }
                }
            }
        }
        Ok(Some(union_of_owned(holding)))
    }

    /// The alternatives (with their indexes) of the kept term at `position` (in `kept.terms`)
    /// with `typos` typos that are one of the term's fewest-typo matches in some document of
    /// `within`: an alternative matching in none of them cannot place a pair there.
    fn matching_within(
        &self,
        position: usize,
        typos: u32,
        within: &RoaringBitmap,
    ) -> Vec<(usize, &Alternative)> {
        let term = self.kept.terms[position];
        self.resolved[term]
            .alternatives
            .iter()
            .zip(&self.ranked_by[position])
            .enumerate()
            .filter(|(_, (alternative, ranked_by))| {
                u32::from(alternative.typos) == typos && !ranked_by.is_disjoint(within)
            })
            .map(|(index, (alternative, _))| (index, alternative))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use serde_json::json;

    use crate::search::SearchQuery;
    use crate::search::query::MatchingStrategy;
    use crate::search::refine::tests::DOCUMENTS_SPLIT_ONE_BY_ONE;
    use crate::shard::Shard;
    use crate::test_database::{replacement, scratch_shard};
    use crate::test_random::Random;

    /// Documents of the test shard.
    const DOCUMENTS: u64 = 400;
    /// Random searches compared with the full evaluation.
    const SEARCHES: usize = 120;

    /// Words the documents are made of: a cached prefix (`fox` starts more than 100 words, so
    /// its longer words count only after the word before), a prefix outside the cache (`bro`),
    /// words a typo apart (`quick`/`quack`), and filler.
    fn vocabulary() -> Vec<String> {
        let mut words: Vec<String> = [
            "quick", "quack", "fox", "brown", "broth", "jumps", "over", "lazy", "dog", "the",
        ]
        .iter()
        .map(|word| (*word).to_owned())
        .collect();
        words.extend((0..110).map(|number| format!("fox{number}")));
        words
    }

    fn text(random: &mut Random, words: &[String]) -> String {
        let length = 1 + random.below(9);
        (0..length)
            .map(|_| {
                // The first ten words (the query's) much more often than the generated ones.
                let pick = if random.below(4) == 0 {
                    random.below(words.len() as u64)
                } else {
                    random.below(10)
                };
                words[pick as usize].as_str()
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// A shard of [`DOCUMENTS`] random documents, with its directory.
    fn shard(random: &mut Random) -> (tempfile::TempDir, Shard) {
        let (directory, shard) = scratch_shard();
        let words = vocabulary();
        let operations = (0..DOCUMENTS)
            .map(|id| {
                let (title, body) = (text(random, &words), text(random, &words));
                replacement(id, json!({"id": id, "title": title, "body": body}))
            })
            .collect();
        shard.apply(1, operations).expect("apply succeeds");
        (directory, shard)
    }

    /// Every page of a two- or three-word search, whose proximity the pair trees rank without
    /// reading any document, equals the full evaluation's (every field named: occurrences read
    /// per document), for prefixes in and out of the cache, typos, reversed and farther pairs.
    #[test]
    fn pages_ranked_by_pair_trees_equal_the_full_evaluation() {
        let mut random = Random(0x0DDB_A11C_AB1E_5EED);
        let (_directory, shard) = shard(&mut random);
        let snapshot = shard.read().expect("read succeeds");
        let words = vocabulary();
        let mut compared = 0;
        for _ in 0..SEARCHES {
            let terms = 2 + random.below(2);
            let mut q = (0..terms)
                .map(|_| words[random.below(10) as usize].as_str())
                .collect::<Vec<_>>()
                .join(" ");
            if random.below(2) == 0 {
                // The last word becomes a prefix: `fo`, `fox`, `bro`...
                let cut = q.len() - random.below(3) as usize;
                q.truncate(cut);
            } else {
                q.push(' ');
            }
            let query = SearchQuery {
                q: Some(q.clone()),
                limit: 1 + random.below(12) as usize,
                offset: random.below(60) as usize,
                matching_strategy: if random.below(2) == 0 {
                    MatchingStrategy::All
                } else {
                    MatchingStrategy::Last
                },
                ..SearchQuery::default()
            };
            DOCUMENTS_SPLIT_ONE_BY_ONE.with(|count| count.set(0));
            let hits = snapshot.search(&query).expect("search succeeds");
            // No alternative here is a phrase or a left prefix, and `bro` starts two words:
            // the pair trees rank every bucket.
            assert_eq!(DOCUMENTS_SPLIT_ONE_BY_ONE.with(Cell::get), 0, "{q:?}");
            let full = SearchQuery {
                attributes_to_search_on: Some(vec!["title".to_owned(), "body".to_owned()]),
                ..query.clone()
            };
            let full_hits = snapshot.search(&full).expect("search succeeds");
            assert_eq!(hits.hits, full_hits.hits, "{q:?} {query:?}");
            assert_eq!(hits.total, full_hits.total, "{q:?}");
            compared += usize::from(!hits.hits.is_empty());
        }
        assert!(compared > 60, "most searches find documents: {compared}");
    }
}
