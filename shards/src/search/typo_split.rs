//! The typo split of a words bucket, read only as far as the page needs
//! ([`super::best_first`]), when the typo rule is the first to split it.
//!
//! A kept term's typo cost in a document is the fewest typos of its alternatives found there
//! ([`super::rule_bitmaps`]). The eager split intersected every alternative with the bucket
//! and united each typo count's alternatives: for `tools`, every document holding `tool` or
//! another word one typo away, although a page of ten is filled by the documents holding
//! `tools` itself. Here a typo count's alternatives are read only when the best-first split
//! reaches it, and the per-alternative sets the later rules rank by
//! (`BucketCosts::ranked_by`) are made only at the typo counts read.
//!
//! Invariants:
//! - the levels read are exactly the eager split's per-term levels restricted to the
//!   documents whose costs were all read, which include every document of the ready
//!   sub-buckets: the later rules only ever split those (the unsplit rest is never refined
//!   once the ready sub-buckets fill the page);
//! - an alternative whose typo count was not read ranks no document there, as in the eager
//!   split: no document of a ready sub-bucket has its fewest typos at that count.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use roaring::RoaringBitmap;

use crate::error::ShardResult;

use super::best_first::{CostLevels, FirstSubBuckets, first_by_cost_sum};
use super::bitmap_union::union_of;
use super::rule_bitmaps::{BucketCosts, within_level};
use super::term_postings::TermPostings;
use super::terms::ResolvedTerm;

/// One kept term's alternatives grouped by their number of typos, read one count at a time.
struct TypoLevels<'p> {
    postings: &'p TermPostings,
    /// The bucket is every document holding the term: its alternatives need no intersection.
    whole: bool,
    bucket: &'p RoaringBitmap,
    /// Ascending typos → the indexes of the alternatives with that many, not read yet.
    levels: VecDeque<(u32, Vec<usize>)>,
}

impl CostLevels for TypoLevels<'_> {
    fn next_cost(&self) -> Option<u32> {
        self.levels.front().map(|(typos, _)| *typos)
    }

    fn read_next(&mut self) -> ShardResult<RoaringBitmap> {
        let Some((_, indexes)) = self.levels.pop_front() else {
            return Ok(RoaringBitmap::new());
        };
        let alternatives = indexes
            .into_iter()
            .filter_map(|index| self.postings.alternatives.get(index));
        if self.whole {
            let whole: Vec<&RoaringBitmap> = alternatives.collect();
            return Ok(union_of(&whole));
        }
        let within: Vec<RoaringBitmap> = alternatives
            .map(|alternative| alternative & self.bucket)
            .collect();
        Ok(union_of(&within))
    }
}

impl BucketCosts<'_> {
    /// `bucket` split by typo rank until `needed` documents are ranked, keeping the typo
    /// levels read and the sets each alternative ranks by within them. `self` comes from
    /// [`BucketCosts::unranked`].
    pub fn first_by_typo(
        &mut self,
        alternatives: &[Arc<TermPostings>],
        bucket: &RoaringBitmap,
        needed: u64,
    ) -> ShardResult<FirstSubBuckets> {
        debug_assert!(self.typos.is_empty() && self.ranked_by.is_empty());
        let empty = TermPostings::default();
        let postings: Vec<&TermPostings> = self
            .kept
            .terms
            .iter()
            .map(|&term| {
                alternatives
                    .get(term)
                    .map_or(&empty, |postings| &**postings)
            })
            .collect();
        let mut terms: Vec<(Box<dyn CostLevels + '_>, Option<u32>)> = Vec::new();
        for (&term, &postings) in self.kept.terms.iter().zip(&postings) {
            debug_assert!(
                bucket.is_subset(&postings.union),
                "a kept term is in every document"
            );
            let levels = TypoLevels {
                postings,
                whole: is_whole(postings, bucket),
                bucket,
                levels: by_typos(&self.resolved[term]),
            };
            // Every document of the bucket holds each kept term: no document is at no level.
            terms.push((Box::new(levels), None));
        }
        let mut first = first_by_cost_sum(bucket, terms, needed)?;
        let levels = std::mem::take(&mut first.levels);
        for ((&term, postings), levels) in self.kept.terms.iter().zip(postings).zip(levels) {
            let whole = is_whole(postings, bucket);
            self.ranked_by
                .push(ranked_by(&self.resolved[term], postings, &levels, whole));
            self.typos.push(levels);
        }
        Ok(first)
    }
}

/// Whether `bucket` (within the term's documents) is every document holding the term.
fn is_whole(postings: &TermPostings, bucket: &RoaringBitmap) -> bool {
    postings.union.len() == bucket.len()
}

/// The indexes of a term's alternatives by their number of typos, fewest first.
fn by_typos(term: &ResolvedTerm) -> VecDeque<(u32, Vec<usize>)> {
    let mut by_typos: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for (index, alternative) in term.alternatives.iter().enumerate() {
        by_typos
            .entry(u32::from(alternative.typos))
            .or_default()
            .push(index);
    }
    by_typos.into_iter().collect()
}

/// Per alternative, its documents among those of the levels read where its number of typos
/// is the term's fewest; empty when its typo count was not read. With `whole` (the bucket is
/// every document holding the term), an alternative at the lowest level read lies within it
/// whole: that level is every document holding one of its alternatives.
fn ranked_by(
    term: &ResolvedTerm,
    postings: &TermPostings,
    levels: &[(u32, RoaringBitmap)],
    whole: bool,
) -> Vec<RoaringBitmap> {
    let lowest = levels.first().map(|(typos, _)| *typos);
    term.alternatives
        .iter()
        .zip(&postings.alternatives)
        .map(|(alternative, documents)| {
            let typos = u32::from(alternative.typos);
            if whole && lowest == Some(typos) {
                return documents.clone();
            }
            within_level(levels, typos, documents)
        })
        .collect()
}
