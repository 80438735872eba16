//! Best-first splits of a bucket by a sum of per-term costs, read only as far as the page
//! needs.
//!
//! The attribute-rank and word-position rules rank a document by the sum, over the kept
//! terms, of a per-term cost ([`super::rule_bitmaps`]). The eager split
//! ([`super::rule_bitmaps::split_by_cost_sum`]) reads every term's documents at every cost.
//! Here each term gives its cost levels one at a time, in ascending cost, without reading a
//! level before it is needed. A sum `s` is final once every term's levels up to `s` are read:
//! a document whose costs are all read has its sum, and one with a cost not read yet costs
//! more than `s` in that term alone. Sums are taken in ascending order until `needed`
//! documents are ranked. A short prefix such as `py` or a word in most documents holds a large
//! share of a shard, and a page of ten is usually filled from the first sums.
//!
//! Invariants:
//! - the ready sub-buckets are exactly the first ones of the eager split, in order, and hold
//!   at least `needed` documents unless the bucket has fewer;
//! - the documents after them come back unsplit, unless every level of every term was read:
//!   then they are split too, and every sub-bucket is ready.

use roaring::RoaringBitmap;

use crate::error::ShardResult;

use super::rule_bitmaps::{TermCosts, sums_by_cost};

/// The first sub-buckets of a split, best first, and the documents not split yet.
pub struct FirstSubBuckets {
    pub ready: Vec<RoaringBitmap>,
    /// Documents ranked after every ready sub-bucket, not split by the rule.
    pub unsplit: Option<RoaringBitmap>,
    /// Per term, the levels read: each document of the bucket at its lowest cost, for every
    /// document of the ready sub-buckets at least (ascending cost, disjoint).
    pub levels: Vec<TermCosts>,
}

/// One term's cost levels, given in ascending cost and read only when asked.
pub trait CostLevels {
    /// The cost of the next level, known without reading it; `None` once every level was read.
    fn next_cost(&self) -> Option<u32>;

    /// The documents of the bucket holding the term at the next level's cost (some may also
    /// hold it at a lower cost: the split keeps each document's lowest).
    fn read_next(&mut self) -> ShardResult<RoaringBitmap>;
}

/// A term's levels read so far: each document of the bucket at its lowest cost.
struct TermLevels<'s> {
    source: Box<dyn CostLevels + 's>,
    /// The cost of a document of the bucket at no level (`None`: every document is at one).
    worst: Option<u32>,
    /// Disjoint, ascending cost.
    read: TermCosts,
    /// The union of `read`.
    covered: RoaringBitmap,
    /// Every level was read, and the documents at none were given `worst`.
    complete: bool,
}

impl TermLevels<'_> {
    /// Reads the levels costing at most `sum`; completes the term once none is left.
    fn read_through(&mut self, sum: u32, bucket: &RoaringBitmap) -> ShardResult<()> {
        while let Some(cost) = self.source.next_cost().filter(|cost| *cost <= sum) {
            let mut documents = self.source.read_next()?;
            debug_assert!(
                documents.is_subset(bucket),
                "a level lies within the bucket"
            );
            // A document keeps its lowest cost.
            documents -= &self.covered;
            if !documents.is_empty() {
                self.covered |= &documents;
                self.read.push((cost, documents));
            }
        }
        if !self.complete && self.source.next_cost().is_none() {
            self.complete = true;
            let rest = bucket - &self.covered;
            if let Some(worst) = self.worst
                && !rest.is_empty()
            {
                self.covered |= &rest;
                self.read.push((worst, rest));
            }
        }
        Ok(())
    }
}

/// Each term's levels read so far.
fn read_levels<'t>(terms: &'t [TermLevels<'_>]) -> impl Iterator<Item = &'t TermCosts> {
    terms.iter().map(|term| &term.read)
}

/// `bucket` split by the sum of the terms' costs, best first, the sums read until `needed`
/// documents are ranked. Each term comes with the cost of a document at none of its levels
/// (`None`: its levels cover the bucket).
pub fn first_by_cost_sum<'s>(
    bucket: &RoaringBitmap,
    terms: Vec<(Box<dyn CostLevels + 's>, Option<u32>)>,
    needed: u64,
) -> ShardResult<FirstSubBuckets> {
    let mut terms: Vec<TermLevels<'s>> = terms
        .into_iter()
        .map(|(source, worst)| TermLevels {
            source,
            worst,
            read: Vec::new(),
            covered: RoaringBitmap::new(),
            complete: false,
        })
        .collect();
    let mut rest = bucket.clone();
    let mut ready = Vec::new();
    let mut ranked = 0;
    let mut sum = 0;
    while !rest.is_empty() && ranked < needed {
        for term in &mut terms {
            term.read_through(sum, bucket)?;
        }
        if terms.iter().all(|term| term.complete) {
            // Every cost is known: the rest splits like the eager split.
            for at_sum in sums_by_cost(&rest, read_levels(&terms), u32::MAX).into_values() {
                rest -= &at_sum;
                ready.push(at_sum);
            }
            debug_assert!(
                rest.is_empty(),
                "levels without a worst cost cover the bucket"
            );
            break;
        }
        // The documents at a level of every term have every cost read: those summing to
        // `sum` are final, the others cost more.
        let at_sum = documents_at_sum(&rest, &terms, sum);
        if !at_sum.is_empty() {
            rest -= &at_sum;
            ranked += at_sum.len();
            ready.push(at_sum);
        }
        // Every term completes once `sum` passes its highest cost, so this never saturates.
        sum = sum.saturating_add(1);
    }
    Ok(FirstSubBuckets {
        ready,
        unsplit: Some(rest).filter(|rest| !rest.is_empty()),
        levels: terms.into_iter().map(|term| term.read).collect(),
    })
}

/// The documents of `documents` at a read level of every term whose costs sum to `target`:
/// the partial sums of all terms but the last, each completed by the last term's level at
/// the cost left (only the sums up to `target` are formed, not every sum).
fn documents_at_sum(
    documents: &RoaringBitmap,
    terms: &[TermLevels<'_>],
    target: u32,
) -> RoaringBitmap {
    let Some((last, others)) = terms.split_last() else {
        return RoaringBitmap::new();
    };
    let level = |wanted: u32| {
        last.read
            .iter()
            .find(|(cost, _)| *cost == wanted)
            .map(|(_, at_cost)| at_cost)
    };
    if others.is_empty() {
        return level(target)
            .map(|at_cost| documents & at_cost)
            .unwrap_or_default();
    }
    let mut found = RoaringBitmap::new();
    for (sum, holding) in sums_by_cost(documents, read_levels(others), target) {
        if let Some(at_cost) = level(target - sum) {
            found |= holding & at_cost;
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::rule_bitmaps::split_by_cost_sum;
    use crate::test_random::Random;

    /// Levels given from a list, counting how many were read.
    struct Listed<'c> {
        levels: Vec<(u32, RoaringBitmap)>,
        next: usize,
        reads: &'c std::cell::Cell<usize>,
    }

    impl CostLevels for Listed<'_> {
        fn next_cost(&self) -> Option<u32> {
            self.levels.get(self.next).map(|(cost, _)| *cost)
        }

        fn read_next(&mut self) -> ShardResult<RoaringBitmap> {
            self.reads.set(self.reads.get() + 1);
            self.next += 1;
            Ok(self.levels[self.next - 1].1.clone())
        }
    }

    /// Random overlapping levels below `worst`, each over some documents of `0..universe`.
    fn random_levels(random: &mut Random, universe: u32, worst: u32) -> Vec<(u32, RoaringBitmap)> {
        let mut levels = Vec::new();
        for cost in 0..worst {
            if random.below(3) == 0 {
                continue;
            }
            let share = 1 + u64::from(random.below(4));
            let documents = (0..universe).filter(|_| random.below(share) == 0).collect();
            levels.push((cost, documents));
        }
        levels
    }

    /// The eager form of the same costs: each document at its lowest level, else at `worst`.
    fn eager_costs(
        bucket: &RoaringBitmap,
        levels: &[(u32, RoaringBitmap)],
        worst: u32,
    ) -> TermCosts {
        let mut seen = RoaringBitmap::new();
        let mut costs = Vec::new();
        for (cost, documents) in levels {
            let new = &(documents & bucket) - &seen;
            seen |= &new;
            if !new.is_empty() {
                costs.push((*cost, new));
            }
        }
        let rest = bucket - &seen;
        if !rest.is_empty() {
            costs.push((worst, rest));
        }
        costs
    }

    #[test]
    fn the_ready_sub_buckets_are_the_first_of_the_eager_split() {
        let mut random = Random(17);
        for round in 0..300 {
            let universe = 1 + random.below(200);
            let bucket: RoaringBitmap = (0..universe).filter(|_| random.below(4) != 0).collect();
            let worst = 1 + random.below(6);
            let terms = 1 + random.below(3);
            let levels: Vec<_> = (0..terms)
                .map(|_| random_levels(&mut random, universe, worst))
                .collect();
            let needed = u64::from(random.below(u64::from(universe) + 2));
            let eager = split_by_cost_sum(
                &bucket,
                &levels
                    .iter()
                    .map(|levels| eager_costs(&bucket, levels, worst))
                    .collect::<Vec<_>>(),
            );
            let reads = std::cell::Cell::new(0);
            let sources = levels
                .iter()
                .map(|levels| {
                    let source: Box<dyn CostLevels> = Box::new(Listed {
                        // A level gives only documents of the bucket.
                        levels: levels
                            .iter()
                            .map(|(cost, documents)| (*cost, documents & &bucket))
                            .collect(),
                        next: 0,
                        reads: &reads,
                    });
                    (source, Some(worst))
                })
                .collect();
            let first = first_by_cost_sum(&bucket, sources, needed).expect("levels read");
            let ranked: u64 = first.ready.iter().map(RoaringBitmap::len).sum();
            assert!(ranked >= needed.min(bucket.len()), "round {round}");
            assert_eq!(first.ready[..], eager[..first.ready.len()], "round {round}");
            let mut all = first
                .ready
                .iter()
                .fold(RoaringBitmap::new(), |all, ready| all | ready);
            if let Some(unsplit) = &first.unsplit {
                assert!(all.is_disjoint(unsplit), "round {round}");
                all |= unsplit;
            }
            assert_eq!(all, bucket, "round {round}");
        }
    }

    #[test]
    fn a_page_filled_at_the_lowest_cost_reads_no_other_level() {
        let bucket: RoaringBitmap = (0..100).collect();
        let reads = std::cell::Cell::new(0);
        let level = |cost: u32, documents: std::ops::Range<u32>| (cost, documents.collect());
        let sources = (0..2)
            .map(|_| {
                let source: Box<dyn CostLevels> = Box::new(Listed {
                    levels: vec![level(0, 0..50), level(3, 0..100), level(5, 20..90)],
                    next: 0,
                    reads: &reads,
                });
                (source, Some(8))
            })
            .collect();
        let first = first_by_cost_sum(&bucket, sources, 10).expect("levels read");
        assert_eq!(first.ready, vec![(0..50).collect::<RoaringBitmap>()]);
        assert_eq!(first.unsplit, Some((50..100).collect()));
        // One level per term: the costs 3 and 5 were never read.
        assert_eq!(reads.get(), 2);
    }

    #[test]
    fn levels_that_cover_the_bucket_need_no_worst_cost() {
        let bucket: RoaringBitmap = (0..10).collect();
        let reads = std::cell::Cell::new(0);
        let source: Box<dyn CostLevels> = Box::new(Listed {
            levels: vec![(0, (0..3).collect()), (1, (0..10).collect())],
            next: 0,
            reads: &reads,
        });
        let first = first_by_cost_sum(&bucket, vec![(source, None)], 5).expect("levels read");
        assert_eq!(
            first.ready,
            vec![(0..3).collect::<RoaringBitmap>(), (3..10).collect()]
        );
        assert_eq!(first.unsplit, None);
    }
}
