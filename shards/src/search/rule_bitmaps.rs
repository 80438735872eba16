//! The typo, attribute-rank and word-position ranks of a words bucket's documents, from
//! bitmaps alone: per kept term, the documents at each cost (the rank a rule takes away for
//! that term), then a bucket split by the sum of its terms' costs. The typo split is here; the
//! attribute-rank and word-position splits read their slots best first
//! ([`super::slot_split`]), proximity reads the pair trees ([`super::proximity_bitmaps`]).
//!
//! - typo: a term's cost in a document is the fewest typos of the alternatives found there
//!   (alternatives' documents from `word_documents`, prefix ranges and phrases);
//! - attribute rank: among the alternatives with that fewest number of typos, the lowest
//!   weight of a field holding one (`word_fields`), capped at the weight maximum;
//! - word position: among the same alternatives, the lowest distance cost of a position
//!   bucket holding one (`word_position_buckets`);
//! - proximity: per adjacent pair of terms, the closest their fewest-typo alternatives stand
//!   (the pair trees, see [`super::proximity_bitmaps`] and [`super::word_pairs`]).
//!
//! Invariant: each cost is exactly the one [`super::ranking`] computes from the document's
//! occurrences for the same rule, so splitting by the summed costs orders like the rules'
//! ranks (their maxima are the same for every document of a words bucket). Attribute rank and
//! word position look at a term's fewest-typo single-word occurrences and at its fewest-typo
//! phrases' first words wherever they occur in a document holding the phrase (`positioned` in
//! [`super::ranking`]); here each alternative's slots are read within the documents where it
//! is one of the term's fewest-typo matches (`BucketCosts::ranked_by`), a phrase's slots
//! being its first word's, and a document keeps its lowest cost over them: the same minimum,
//! whatever mix of single words and phrases (splits, multi-word synonyms) a term has.
//! Proximity's pairs cannot be read for a phrase alternative, so the bitmap split gives up
//! (`None`) only when a phrase is a fewest-typo match in a document of the sub-bucket it
//! splits: a split costs one typo, so a sub-bucket whose terms all match without typos never
//! reads it.

use std::collections::BTreeMap;
use std::sync::Arc;

use roaring::{MultiOps, RoaringBitmap};
use storage_engine::{Direction, ReadTransaction};

use crate::error::ShardResult;
use crate::index::inverted::{
    bitmap_or_empty, bitmap_within, keys_extending, position_prefix, split_word_slot_key,
};
use crate::index::trees::WORD_FIELDS_TREE;

use super::bitmap_union::union_of;
use super::prefix_unions::{ComputedUnion, PrefixUnions, SlotUnion, UnionKind};
use super::ranking::{Kept, RankingContext, word_position_cost};
use super::term_postings::TermPostings;
use super::terms::{Alternative, ResolvedTerm};

/// Positions below this are their own position bucket (see
/// [`crate::index::inverted::bucketed_position`]).
pub const EXACT_POSITIONS: u16 = 16;

/// Cost → the documents of the words bucket where a term has that cost (ascending costs,
/// disjoint sets).
pub type TermCosts = Vec<(u32, RoaringBitmap)>;

/// The per-term typo costs of one words bucket, computed once and reused for every
/// sub-bucket (all of them, or when the typo rule comes first, only the levels its best-first
/// split read, see [`super::typo_split`]); attribute-rank and word-position costs are read for
/// each sub-bucket they split.
pub struct BucketCosts<'a> {
    pub(super) read: &'a ReadTransaction,
    /// The commit's unions over prefix expansions.
    pub(super) prefixes: &'a PrefixUnions,
    pub(super) context: &'a RankingContext<'a>,
    pub(super) resolved: &'a [ResolvedTerm],
    pub(super) kept: &'a Kept,
    /// Per kept term (in `kept.terms` order), its fewest typos: in every document of the
    /// bucket, or in every document of the sub-buckets a best-first typo split made ready.
    pub(super) typos: Vec<TermCosts>,
    /// Per kept term, per alternative, the documents of the words bucket where the
    /// alternative is one of the term's fewest-typo matches: the only documents its fields
    /// and positions can rank (empty for most typo alternatives, whose slots are then not read).
    pub(super) ranked_by: Vec<Vec<RoaringBitmap>>,
}

impl<'a> BucketCosts<'a> {
    /// The typo levels of every kept term over `bucket`.
    pub fn compute(
        read: &'a ReadTransaction,
        prefixes: &'a PrefixUnions,
        context: &'a RankingContext<'a>,
        resolved: &'a [ResolvedTerm],
        kept: &'a Kept,
        alternatives: &[Arc<TermPostings>],
        bucket: &RoaringBitmap,
    ) -> ShardResult<BucketCosts<'a>> {
        let mut costs = BucketCosts::unranked(read, prefixes, context, resolved, kept);
        for &term in &kept.terms {
            let in_bucket = alternatives
                .get(term)
                .map(|postings| postings.alternatives_within(bucket))
                .unwrap_or_default();
            let levels = typo_levels(&resolved[term], &in_bucket);
            costs
                .ranked_by
                .push(at_own_level(&resolved[term], in_bucket, &levels));
            costs.typos.push(levels);
        }
        Ok(costs)
    }

    /// Costs with no typo level known yet (see [`BucketCosts::first_by_typo`]).
    pub fn unranked(
        read: &'a ReadTransaction,
        prefixes: &'a PrefixUnions,
        context: &'a RankingContext<'a>,
        resolved: &'a [ResolvedTerm],
        kept: &'a Kept,
    ) -> BucketCosts<'a> {
        BucketCosts {
            read,
            prefixes,
            context,
            resolved,
            kept,
            typos: Vec::with_capacity(kept.terms.len()),
            ranked_by: Vec::with_capacity(kept.terms.len()),
        }
    }

    /// `bucket` split by typo rank, best first.
    pub fn split_by_typo(&self, bucket: &RoaringBitmap) -> Vec<RoaringBitmap> {
        split_by_cost_sum(bucket, &self.typos)
    }

    /// The attribute-rank cost of a document without a searched field holding the term.
    pub(super) fn attribute_rank_worst(&self) -> u32 {
        u32::from(self.context.weight_max)
    }

    /// The attribute-rank cost of a field holding a term (`None`: not searched).
    pub(super) fn attribute_rank_cost(&self, _term: usize, field: u16) -> Option<u32> {
        self.context
            .fields
            .get(&field)
            .map(|searched| u32::from(searched.weight.min(self.context.weight_max)))
    }

    /// The word-position cost of a position bucket holding term `term` through an
    /// alternative where it is the `window_offset`-th of the terms sharing it.
    pub(super) fn word_position_cost(
        &self,
        term: usize,
        window_offset: u8,
        position: u16,
    ) -> Option<u32> {
        let query_position = self.context.terms[term].position;
        Some(word_position_cost(
            u32::from(position),
            query_position,
            window_offset,
        ))
    }
}

/// A term's fewest typos per document of a bucket, from its alternatives' documents in it.
/// Each typo count's documents are one union of its alternatives' (a prefix term with a typo
/// has hundreds: or-ing them one by one into the growing level was quadratic, 30 % of a
/// one-word search's CPU).
fn typo_levels(term: &ResolvedTerm, in_bucket: &[RoaringBitmap]) -> TermCosts {
    let mut by_typos: BTreeMap<u32, Vec<&RoaringBitmap>> = BTreeMap::new();
    for (alternative, documents) in term.alternatives.iter().zip(in_bucket) {
        if !documents.is_empty() {
            by_typos
                .entry(u32::from(alternative.typos))
                .or_default()
                .push(documents);
        }
    }
    lowest_costs(
        by_typos
            .into_iter()
            .map(|(typos, documents)| (typos, union_of(&documents)))
            .collect(),
    )
}

/// Per alternative of `term`, its documents (`in_bucket`: those of the bucket) among those
/// where its number of typos is the term's fewest (`levels`, from [`typo_levels`]). At the
/// lowest level, every document of such an alternative has its fewest typos already.
fn at_own_level(
    term: &ResolvedTerm,
    in_bucket: Vec<RoaringBitmap>,
    levels: &TermCosts,
) -> Vec<RoaringBitmap> {
    let lowest = levels.first().map(|(typos, _)| *typos);
    term.alternatives
        .iter()
        .zip(in_bucket)
        .map(|(alternative, documents)| {
            let typos = u32::from(alternative.typos);
            if lowest == Some(typos) {
                return documents;
            }
            within_level(levels, typos, &documents)
        })
        .collect()
}

/// An alternative's `documents` among those where `typos` is the term's fewest (`levels`,
/// from [`typo_levels`] or a best-first split); none when that level is not among them.
pub(super) fn within_level(
    levels: &[(u32, RoaringBitmap)],
    typos: u32,
    documents: &RoaringBitmap,
) -> RoaringBitmap {
    levels
        .iter()
        .find(|(level, _)| *level == typos)
        .map(|(_, at_level)| documents & at_level)
        .unwrap_or_default()
}

/// Makes "documents with some occurrence at this cost" disjoint: each document keeps its
/// lowest cost.
pub(super) fn lowest_costs(by_cost: BTreeMap<u32, RoaringBitmap>) -> TermCosts {
    let mut seen = RoaringBitmap::new();
    let mut lowest = Vec::with_capacity(by_cost.len());
    for (cost, documents) in by_cost {
        let new = documents - &seen;
        seen |= &new;
        if !new.is_empty() {
            lowest.push((cost, new));
        }
    }
    lowest
}

/// `bucket` split by the sum of the terms' costs, lowest sum (best rank) first.
pub fn split_by_cost_sum(bucket: &RoaringBitmap, terms: &[TermCosts]) -> Vec<RoaringBitmap> {
    sums_by_cost(bucket, terms, u32::MAX)
        .into_values()
        .collect()
}

/// The documents of `documents` at a cost of every term, by their sum of costs, sums above
/// `ceiling` left out (no term: every document at sum 0).
pub fn sums_by_cost<'t>(
    documents: &RoaringBitmap,
    terms: impl IntoIterator<Item = &'t TermCosts>,
    ceiling: u32,
) -> BTreeMap<u32, RoaringBitmap> {
    let mut terms = terms.into_iter();
    let Some(first) = terms.next() else {
        return BTreeMap::from([(0, documents.clone())]);
    };
    // The first term's costs start the sums: no copy of `documents` is made.
    let mut sums: BTreeMap<u32, RoaringBitmap> = first
        .iter()
        .take_while(|(cost, _)| *cost <= ceiling)
        .map(|(cost, at_cost)| (*cost, documents & at_cost))
        .filter(|(_, holding)| !holding.is_empty())
        .collect();
    for costs in terms {
        let mut next: BTreeMap<u32, RoaringBitmap> = BTreeMap::new();
        for (sum, holding) in &sums {
            for (cost, at_cost) in costs {
                let total = sum.saturating_add(*cost);
                if total > ceiling {
                    break;
                }
                let both = holding & at_cost;
                if !both.is_empty() {
                    *next.entry(total).or_default() |= both;
                }
            }
        }
        sums = next;
    }
    sums
}

/// The slots (fields or position buckets) of `tree` holding an alternative's positioned word,
/// not read yet: a slot's documents are decoded only when [`AlternativeSlots::documents`]
/// asks. A phrase's positioned word is its first word, anywhere in the documents asked for
/// (which hold only documents where the phrase is a fewest-typo match of its term, see
/// `BucketCosts::ranked_by`).
pub(super) enum AlternativeSlots<'t> {
    /// A prefix: the commit's union over its expansions, not restricted to any documents.
    Prefix(Arc<SlotUnion>),
    /// A word: its slots in ascending order, each with its stored bitmap.
    Word(Vec<(u16, &'t [u8])>),
}

impl AlternativeSlots<'_> {
    /// The slots the alternative occurs in, ascending.
    pub(super) fn keys(&self) -> Vec<u16> {
        match self {
            AlternativeSlots::Prefix(union) => union.keys().copied().collect(),
            AlternativeSlots::Word(slots) => slots.iter().map(|(slot, _)| *slot).collect(),
        }
    }

    /// The documents of `within` where the alternative occurs in `slot`.
    pub(super) fn documents(
        &self,
        slot: u16,
        within: &RoaringBitmap,
    ) -> ShardResult<RoaringBitmap> {
        match self {
            AlternativeSlots::Prefix(union) => Ok(union
                .get(&slot)
                .map(|documents| documents & within)
                .unwrap_or_default()),
            AlternativeSlots::Word(slots) => {
                let stored = slots
                    .binary_search_by_key(&slot, |(key, _)| *key)
                    .ok()
                    .map(|index| slots[index].1);
                bitmap_within(stored, within)
            }
        }
    }
}

/// The slots of `tree` where an alternative's positioned word occurs: a prefix's union as the
/// commit keeps it, or a word's own keys with their stored bitmaps.
pub(super) fn alternative_slots<'t>(
    read: &'t ReadTransaction,
    prefixes: &PrefixUnions,
    tree: &str,
    alternative: &Alternative,
) -> ShardResult<AlternativeSlots<'t>> {
    let Some(word) = alternative.words.iter().flatten().next() else {
        return Ok(AlternativeSlots::Word(Vec::new()));
    };
    if alternative.prefix && alternative.words.len() == 1 {
        let kind = if tree == WORD_FIELDS_TREE {
            UnionKind::Fields
        } else {
            UnionKind::PositionBuckets
        };
        let union = prefixes.union(kind, word, || prefix_slot_union(read, tree, word))?;
        return Ok(AlternativeSlots::Prefix(union));
    }
    let Some(tree) = read.open_tree(tree)? else {
        return Ok(AlternativeSlots::Word(Vec::new()));
    };
    let mut slots = Vec::new();
    for entry in tree.prefix(&position_prefix(word), Direction::Forward)? {
        let (key, value) = entry?;
        let (_, slot) = split_word_slot_key(key)?;
        slots.push((slot, value));
    }
    Ok(AlternativeSlots::Word(slots))
}

/// Per slot of `tree`, the documents of every word longer than `prefix` that starts with it.
pub(super) fn prefix_slot_union(
    read: &ReadTransaction,
    tree: &str,
    prefix: &str,
) -> ShardResult<ComputedUnion> {
    let mut slots: BTreeMap<u16, Vec<RoaringBitmap>> = BTreeMap::new();
    let mut keys_read = 0;
    if let Some(tree) = read.open_tree(tree)? {
        for entry in keys_extending(&tree, prefix)? {
            let (key, value) = entry?;
            let (key_word, slot) = split_word_slot_key(key)?;
            if key_word.len() == prefix.len() {
                // The word itself is its own alternative, not a prefix expansion.
                continue;
            }
            keys_read += 1;
            slots
                .entry(slot)
                .or_default()
                .push(bitmap_or_empty(Some(value))?);
        }
    }
    // One multi-way union per slot: or-ing thousands of bitmaps one by one is quadratic.
    Ok(ComputedUnion {
        union: slots
            .into_iter()
            .map(|(slot, bitmaps)| (slot, bitmaps.union()))
            .collect(),
        keys_read,
    })
}
