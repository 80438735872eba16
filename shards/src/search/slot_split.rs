//! The attribute-rank and word-position splits of a words bucket, read only as far as the
//! page needs ([`super::best_first`]).
//!
//! Under either rule a kept term's cost in a document is the lowest cost of a slot (a field
//! or a position bucket) holding one of the term's fewest-typo alternatives there, or the
//! rule's worst cost without one ([`super::rule_bitmaps`]); a document ranks by the sum over
//! the kept terms. A term's levels are its slots grouped by cost, which the slot keys give
//! without reading a bitmap, so a level's bitmaps are decoded and intersected only when the
//! best-first split reaches its cost. The eager split intersected every slot of every term
//! with the bucket: for a word in most documents, every position bucket of it.
//!
//! Invariant: a term's level at a cost is the union of its alternatives' slots at that cost,
//! each within the documents where the alternative is one of the term's fewest-typo matches
//! (`BucketCosts::ranked_by`), exactly the sets the eager split took its lowest cost from.

use std::collections::{BTreeMap, VecDeque};

use roaring::RoaringBitmap;

use crate::error::ShardResult;
use crate::index::trees::{WORD_FIELDS_TREE, WORD_POSITION_BUCKETS_TREE};

use super::best_first::{CostLevels, FirstSubBuckets, first_by_cost_sum};
use super::ranking::WORD_POSITION_COST_MAX;
use super::rule_bitmaps::{AlternativeSlots, BucketCosts, alternative_slots};

/// One kept term's slots below the worst cost, grouped by cost and read one cost at a time.
struct SlotLevels<'t> {
    /// Per alternative that ranks some document of the bucket: its slots, and the documents
    /// of the bucket it ranks.
    sources: Vec<(AlternativeSlots<'t>, RoaringBitmap)>,
    /// Ascending cost → the (source, slot) pairs at that cost, not read yet.
    levels: VecDeque<(u32, Vec<(usize, u16)>)>,
}

impl CostLevels for SlotLevels<'_> {
    fn next_cost(&self) -> Option<u32> {
        self.levels.front().map(|(cost, _)| *cost)
    }

    fn read_next(&mut self) -> ShardResult<RoaringBitmap> {
        let mut at_cost = RoaringBitmap::new();
        if let Some((_, slots)) = self.levels.pop_front() {
            for (source, slot) in slots {
                let (slots, within) = &self.sources[source];
                at_cost |= slots.documents(slot, within)?;
            }
        }
        Ok(at_cost)
    }
}

impl<'a> BucketCosts<'a> {
    /// `bucket` split by attribute rank until `needed` documents are ranked.
    pub fn first_by_attribute_rank(
        &self,
        bucket: &RoaringBitmap,
        needed: u64,
    ) -> ShardResult<FirstSubBuckets> {
        self.first_by_slot_costs(
            bucket,
            WORD_FIELDS_TREE,
            self.attribute_rank_worst(),
            |term, _, field| self.attribute_rank_cost(term, field),
            needed,
        )
    }

    /// `bucket` split by word position until `needed` documents are ranked.
    pub fn first_by_word_position(
        &self,
        bucket: &RoaringBitmap,
        needed: u64,
    ) -> ShardResult<FirstSubBuckets> {
        self.first_by_slot_costs(
            bucket,
            WORD_POSITION_BUCKETS_TREE,
            WORD_POSITION_COST_MAX,
            |term, window_offset, position| self.word_position_cost(term, window_offset, position),
            needed,
        )
    }

    /// The best-first split by a rule's summed slot costs: `cost` prices a term's slot through
    /// an alternative at a window offset (`None`: not searched), and a term without a priced
    /// slot below `worst` in a document costs `worst` there.
    fn first_by_slot_costs(
        &self,
        bucket: &RoaringBitmap,
        tree: &str,
        worst: u32,
        cost: impl Fn(usize, u8, u16) -> Option<u32>,
        needed: u64,
    ) -> ShardResult<FirstSubBuckets> {
        let mut terms: Vec<(Box<dyn CostLevels + 'a>, Option<u32>)> = Vec::new();
        for (position, &term) in self.kept.terms.iter().enumerate() {
            let levels = self.slot_levels(position, term, bucket, tree, worst, &cost)?;
            terms.push((Box::new(levels), Some(worst)));
        }
        first_by_cost_sum(bucket, terms, needed)
    }

    /// The levels of the kept term `term` (at `position` in `kept.terms`) over `bucket`:
    /// every slot of its ranking alternatives priced below `worst`, grouped by cost, none read.
    fn slot_levels(
        &self,
        position: usize,
        term: usize,
        bucket: &RoaringBitmap,
        tree: &str,
        worst: u32,
        cost: &impl Fn(usize, u8, u16) -> Option<u32>,
    ) -> ShardResult<SlotLevels<'a>> {
        let mut sources = Vec::new();
        let mut by_cost: BTreeMap<u32, Vec<(usize, u16)>> = BTreeMap::new();
        let alternatives = self.resolved[term].alternatives.iter();
        for (alternative, ranked_by) in alternatives.zip(&self.ranked_by[position]) {
            // Only the documents where the alternative is one of the term's fewest-typo
            // matches rank by its slots.
            let within = ranked_by & bucket;
            if within.is_empty() {
                continue;
            }
            let slots = alternative_slots(self.read, self.prefixes, tree, alternative)?;
            let source = sources.len();
            for slot in slots.keys() {
                match cost(term, alternative.window_offset, slot) {
                    Some(cost) if cost < worst => {
                        by_cost.entry(cost).or_default().push((source, slot));
                    }
                    _ => {}
                }
            }
            sources.push((slots, within));
        }
        Ok(SlotLevels {
            sources,
            levels: by_cost.into_iter().collect(),
        })
    }
}
