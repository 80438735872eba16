//! Exactness as the last ranking step, without ranking every document of the bucket.
//!
//! Exactness needs each document's occurrences, which for a bucket of a frequent word means
//! thousands of reads, although the page wants a few documents. When exactness is the last
//! step, ties go to the lowest ids, so only the best `remaining` documents by (exactness, id)
//! matter:
//! - a document missing an exact occurrence (the query word or phrase itself) of some kept
//!   term matches no field exactly or at its start; its exactness is the number of terms it
//!   holds exactly, which bitmaps give without reading it;
//! - among the documents holding every term exactly, one can match a field exactly only if
//!   one of its searched fields holds as many words as the kept terms span; `field_word_counts`
//!   gives those documents (field lengths read one by one past the counts it indexes), so
//!   they are found first and ranked fully. The others rank at best
//!   "start of a field, every word exact": they are ranked in ascending id order, a growing
//!   chunk at a time, until `remaining` of them reach that ceiling — no later one can come
//!   before those. Bitmaps tell which documents may reach the ceiling at all
//!   ([`super::field_starts`]): only those are read; the others rank below it unread. With one
//!   term matched through single words, the bitmaps tell exactly which reach it: those rank
//!   at the ceiling unread too.
//!
//! Invariant: the documents returned, grouped by their exactness details best first, hold the
//! first `remaining` documents of the bucket in the order "details, then id"; the documents
//! left out are never among them. The details given from bitmaps equal what
//! [`super::ranking::RankingContext::exactness`] computes for those documents.

use std::collections::BTreeMap;

use roaring::RoaringBitmap;

use crate::error::ShardResult;
use crate::index::inverted::{bitmap_within, field_word_count_key};
use crate::index::trees::FIELD_WORD_COUNTS_TREE;

use super::details::FieldLengthsReader;
use super::field_starts::field_starts;
use super::refine::Refiner;
use super::score::{ScoreDetail, compare_details};
use super::steps::Step;

/// Documents ranked in the first chunk once the documents that may match a field exactly are
/// ranked; each later chunk is twice the one before (each chunk reads the terms' keys anew,
/// a whole prefix range for a prefix term, so the number of chunks must stay logarithmic).
const RANKED_FIRST_CHUNK: usize = 64;

/// Documents grouped by equal details, best group first.
type RankedGroups = Vec<(RoaringBitmap, Vec<ScoreDetail>)>;

impl Refiner<'_> {
    /// `bucket` split by exactness, best first, leaving out documents that cannot be among
    /// its first `remaining` (exactness being the last step).
    pub(super) fn split_by_last_exactness(
        &self,
        bucket: &RoaringBitmap,
        remaining: u64,
    ) -> ShardResult<Vec<RoaringBitmap>> {
        let exact_per_term = self.exact_documents_per_term(bucket);
        let every_term_exact = exact_per_term
            .iter()
            .fold(bucket.clone(), |every, documents| every & documents);
        let mut ranked =
            self.rank_without_every_term_exact(&(bucket - &every_term_exact), &exact_per_term);
        ranked.extend(self.rank_every_term_exact(&every_term_exact, remaining)?);
        Ok(merge_groups(ranked))
    }

    /// Per kept term, the documents of `bucket` holding one of its exact alternatives (the
    /// query word or phrase itself): where it counts as an exact word.
    fn exact_documents_per_term(&self, bucket: &RoaringBitmap) -> Vec<RoaringBitmap> {
        self.kept
            .terms
            .iter()
            .map(|&term| {
                let documents = self
                    .alternatives
                    .get(term)
                    .map(|postings| postings.alternatives.as_slice());
                self.resolved[term]
                    .alternatives
                    .iter()
                    .zip(documents.unwrap_or_default())
                    .filter(|(alternative, _)| alternative.exact)
                    .fold(RoaringBitmap::new(), |union, (_, documents)| {
                        union | (documents & bucket)
                    })
            })
            .collect()
    }

    /// Documents missing an exact occurrence of some kept term match no field exactly or at
    /// its start; their exactness is the number of terms they hold exactly, from bitmaps.
    fn rank_without_every_term_exact(
        &self,
        documents: &RoaringBitmap,
        exact_per_term: &[RoaringBitmap],
    ) -> RankedGroups {
        let mut by_count: BTreeMap<usize, RoaringBitmap> = BTreeMap::from([(0, documents.clone())]);
        for exact in exact_per_term {
            let mut next: BTreeMap<usize, RoaringBitmap> = BTreeMap::new();
            for (count, holding) in by_count {
                let with = &holding & exact;
                let without = holding - &with;
                if !with.is_empty() {
                    *next.entry(count + 1).or_default() |= with;
                }
                if !without.is_empty() {
                    *next.entry(count).or_default() |= without;
                }
            }
            by_count = next;
        }
        by_count
            .into_iter()
            .map(|(count, documents)| {
                let details = self
                    .context
                    .exactness_without_exact_match(self.kept, count)
                    .to_vec();
                (documents, details)
            })
            .collect()
    }

    /// The documents holding every kept term exactly: those that may match a field exactly
    /// in id order until `remaining` of them do, then (when all of them are ranked) those that
    /// may match a field at its start in id order until `remaining` of them reach that
    /// ceiling, or all of them at the ceiling unread when the bitmaps tell exactly which do
    /// ([`super::field_starts::FieldStarts::at_start_is_exact`]); the documents that can do
    /// neither (known from bitmaps) rank below, without being read, when the page reaches them.
    fn rank_every_term_exact(
        &self,
        bucket: &RoaringBitmap,
        remaining: u64,
    ) -> ShardResult<RankedGroups> {
        let starts = field_starts(self.read, self.context, self.resolved, self.kept, bucket)?;
        let (may_match_exactly, may_start, start_is_exact) = match starts {
            Some(starts) => (
                starts.exact_length,
                starts.at_start,
                starts.at_start_is_exact,
            ),
            None => (
                self.documents_with_exact_length(bucket)?,
                bucket.clone(),
                false,
            ),
        };
        let exact_match = self.context.exactness_exact_match(self.kept);
        let (mut ranked, exhausted) =
            self.rank_in_chunks(&may_match_exactly, remaining, &exact_match)?;
        if !exhausted {
            // `remaining` documents match a field exactly: none ranked later comes before them.
            return Ok(ranked);
        }
        let ceiling = self
            .context
            .exactness_without_exact_match(self.kept, self.kept.terms.len());
        let starting = &may_start - &may_match_exactly;
        let exhausted = if start_is_exact {
            // Every one of them matches a field at its start: the ceiling, without reading.
            if !starting.is_empty() {
                ranked.push((starting, ceiling.to_vec()));
            }
            true
        } else {
            let (at_start, exhausted) = self.rank_in_chunks(&starting, remaining, &ceiling)?;
            ranked.extend(at_start);
            exhausted
        };
        let off_starts = bucket - &may_start;
        if exhausted && !off_starts.is_empty() {
            // Every document that may reach the ceiling is ranked and the page wants more.
            let details = self.context.exactness_off_field_starts(self.kept);
            ranked.push((off_starts, details.to_vec()));
        }
        Ok(ranked)
    }

    /// `documents` ranked in ascending id order, a growing chunk at a time, until `remaining`
    /// of them reach `best` (the best exactness they can have); with whether all were ranked.
    fn rank_in_chunks(
        &self,
        documents: &RoaringBitmap,
        remaining: u64,
        best: &[ScoreDetail],
    ) -> ShardResult<(RankedGroups, bool)> {
        let mut ranked = RankedGroups::new();
        let mut unranked = documents.iter();
        let mut at_best = 0_u64;
        let mut chunk_size = RANKED_FIRST_CHUNK;
        while at_best < remaining {
            let chunk: RoaringBitmap = unranked.by_ref().take(chunk_size).collect();
            chunk_size = chunk_size.saturating_mul(2);
            if chunk.is_empty() {
                return Ok((ranked, true));
            }
            for (documents, details) in self.rank_by_document(&chunk, &Step::Exactness)? {
                if compare_details(&details, best).is_eq() {
                    at_best += documents.len();
                }
                ranked.push((documents, details));
            }
        }
        let exhausted = unranked.next().is_none();
        Ok((ranked, exhausted))
    }

    /// The documents of `bucket` with a searched field holding exactly as many words as the
    /// kept terms span: from `field_word_counts` when it indexes that count, else from each
    /// document's field lengths.
    fn documents_with_exact_length(&self, bucket: &RoaringBitmap) -> ShardResult<RoaringBitmap> {
        let wanted = self.context.exact_match_length(self.kept);
        if let Some(found) = self.indexed_exact_length(bucket, wanted)? {
            return Ok(found);
        }
        let mut lengths = FieldLengthsReader::new(self.read)?;
        let mut found = RoaringBitmap::new();
        for document in bucket {
            let field_lengths = lengths.lengths(document)?;
            let exact_length = field_lengths.0.iter().any(|(field, length)| {
                self.context.fields.contains_key(field) && u32::from(*length) == wanted
            });
            if exact_length {
                found.insert(document);
            }
        }
        Ok(found)
    }

    /// The documents of `bucket` with a searched field of `wanted` words, from
    /// `field_word_counts`; `None` when it does not index that count.
    fn indexed_exact_length(
        &self,
        bucket: &RoaringBitmap,
        wanted: u32,
    ) -> ShardResult<Option<RoaringBitmap>> {
        let Ok(count) = u16::try_from(wanted) else {
            return Ok(None);
        };
        let Some(tree) = self.read.open_tree(FIELD_WORD_COUNTS_TREE)? else {
            return Ok(None);
        };
        let mut found = RoaringBitmap::new();
        for field in self.context.fields.keys() {
            let Some(key) = field_word_count_key(*field, count) else {
                return Ok(None);
            };
            found |= bitmap_within(tree.get(&key)?, bucket)?;
        }
        Ok(Some(found))
    }
}

/// The documents of `groups` regrouped by equal details, best group first.
fn merge_groups(mut groups: RankedGroups) -> Vec<RoaringBitmap> {
    groups.sort_by(|left, right| compare_details(&left.1, &right.1));
    let mut merged: RankedGroups = Vec::with_capacity(groups.len());
    for (documents, details) in groups {
        match merged.last_mut() {
            Some((last, last_details)) if compare_details(last_details, &details).is_eq() => {
                *last |= documents;
            }
            _ => merged.push((documents, details)),
        }
    }
    merged.into_iter().map(|(documents, _)| documents).collect()
}
