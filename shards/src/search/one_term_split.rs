//! The attribute-rank and word-position splits of a bucket for a search with one kept term,
//! read only as far as the page needs.
//!
//! With one term, a document's cost under either rule is the lowest cost of a slot (a field or
//! a position bucket) holding one of the term's fewest-typo alternatives, or the rule's worst
//! cost without one ([`super::rule_bitmaps`]). The sub-buckets in rank order are therefore the
//! documents at the lowest cost, then those left at the next cost, and so on. A short prefix
//! such as `py` holds a large share of a shard, and a page of ten is usually filled from the
//! first sub-bucket. The eager split intersects every slot with the bucket; this one
//! intersects only the slots of the costs the page reaches.
//!
//! Invariants:
//! - the ready sub-buckets are exactly the first ones of the eager split, in order, and hold
//!   at least `needed` documents unless the bucket has fewer;
//! - the documents after them come back unsplit, unless every cost below the worst was read:
//!   then they all cost the worst and form the last ready sub-bucket.

use std::collections::BTreeMap;

use roaring::RoaringBitmap;

use crate::error::ShardResult;
use crate::index::trees::{WORD_FIELDS_TREE, WORD_POSITION_BUCKETS_TREE};

use super::ranking::WORD_POSITION_COST_MAX;
use super::rule_bitmaps::{BucketCosts, alternative_slots};

/// The first sub-buckets of a split, best first, and the documents not split yet.
pub struct FirstSubBuckets {
    pub ready: Vec<RoaringBitmap>,
    /// Documents ranked after every ready sub-bucket, not split by the rule.
    pub unsplit: Option<RoaringBitmap>,
}

impl BucketCosts<'_> {
    /// Whether the search keeps exactly one term (the condition for the splits below).
    pub fn one_term(&self) -> bool {
        self.kept.terms.len() == 1
    }

    /// `bucket` split by attribute rank until `needed` documents are ranked (only when
    /// [`Self::one_term`]).
    pub fn first_by_attribute_rank(
        &self,
        bucket: &RoaringBitmap,
        needed: u64,
    ) -> ShardResult<FirstSubBuckets> {
        self.first_by_slot_costs(
            bucket,
            WORD_FIELDS_TREE,
            self.attribute_rank_worst(),
            |term, field| self.attribute_rank_cost(term, field),
            needed,
        )
    }

    /// `bucket` split by word position until `needed` documents are ranked (only when
    /// [`Self::one_term`]).
    pub fn first_by_word_position(
        &self,
        bucket: &RoaringBitmap,
        needed: u64,
    ) -> ShardResult<FirstSubBuckets> {
        self.first_by_slot_costs(
            bucket,
            WORD_POSITION_BUCKETS_TREE,
            WORD_POSITION_COST_MAX,
            // One term: no alternative is shared, every window offset is 0.
            |term, position| self.word_position_cost(term, 0, position),
            needed,
        )
    }

    /// The lazy split by a rule's slot costs: slots are grouped by cost without reading a
    /// bitmap, then each cost's documents are read in ascending order while fewer than
    /// `needed` are ranked.
    fn first_by_slot_costs(
        &self,
        bucket: &RoaringBitmap,
        tree: &str,
        worst: u32,
        cost: impl Fn(usize, u16) -> Option<u32>,
        needed: u64,
    ) -> ShardResult<FirstSubBuckets> {
        let term = self.kept.terms[0];
        let mut sources = Vec::new();
        let mut slots_by_cost: BTreeMap<u32, Vec<(usize, u16)>> = BTreeMap::new();
        let alternatives = self.resolved[term].alternatives.iter();
        for (alternative, ranked_by) in alternatives.zip(&self.ranked_by[0]) {
            // Only the documents where the alternative is one of the term's fewest-typo
            // matches rank by its slots.
            let within = ranked_by & bucket;
            if within.is_empty() {
                continue;
            }
            let slots = alternative_slots(self.read, self.prefixes, tree, alternative)?;
            let source = sources.len();
            for slot in slots.keys() {
                match cost(term, slot) {
                    Some(cost) if cost < worst => {
                        slots_by_cost.entry(cost).or_default().push((source, slot))
                    }
                    _ => {}
                }
            }
            sources.push((slots, within));
        }
        let mut rest = bucket.clone();
        let mut ready = Vec::new();
        let mut ranked = 0;
        for slots in slots_by_cost.into_values() {
            if ranked >= needed {
                return Ok(FirstSubBuckets {
                    ready,
                    unsplit: Some(rest).filter(|rest| !rest.is_empty()),
                });
            }
            let mut at_cost = RoaringBitmap::new();
            for (source, slot) in slots {
                let (slots, within) = &sources[source];
                at_cost |= slots.documents(slot, within)?;
            }
            // A document keeps its lowest cost.
            at_cost &= &rest;
            if at_cost.is_empty() {
                continue;
            }
            rest -= &at_cost;
            ranked += at_cost.len();
            ready.push(at_cost);
        }
        if !rest.is_empty() {
            ready.push(rest);
        }
        Ok(FirstSubBuckets {
            ready,
            unsplit: None,
        })
    }
}
