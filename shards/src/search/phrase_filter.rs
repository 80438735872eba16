//! A bitmap pre-filter for phrases: the documents where a phrase's words may stand at their
//! offsets, from the position-bucket bitmaps, before each document's positions are read.
//!
//! Positions below [`EXACT_POSITIONS`] are their own bucket, so a phrase whose first word is at
//! position `q` with every word below that bound shows as word `i` in bucket `q + r_i` (`r_i`:
//! its offset from the first word) for every word at once; a phrase reaching further has its
//! last word at position [`EXACT_POSITIONS`] or beyond, in a bucket that high.
//!
//! Invariant: the filter is a superset of the documents holding the phrase (buckets span every
//! field, so a word here and its neighbour in another field also pass); the caller still
//! checks each remaining document's positions.

use std::collections::BTreeMap;

use roaring::{MultiOps, RoaringBitmap};
use storage_engine::{Direction, ReadTransaction};

use crate::error::ShardResult;
use crate::index::inverted::{bitmap_or_empty, position_prefix, split_word_slot_key};
use crate::index::trees::WORD_POSITION_BUCKETS_TREE;

use super::rule_bitmaps::EXACT_POSITIONS;

/// The documents that may hold the phrase whose real words are `words` (each with its offset
/// in the phrase, ascending), or `None` when the filter cannot narrow anything (one word).
pub fn phrase_candidates(
    read: &ReadTransaction,
    words: &[(usize, &String)],
) -> ShardResult<Option<RoaringBitmap>> {
    let (Some(&(first_offset, _)), Some(&(last_offset, _))) = (words.first(), words.last()) else {
        return Ok(None);
    };
    if words.len() < 2 {
        return Ok(None);
    }
    let Some(tree) = read.open_tree(WORD_POSITION_BUCKETS_TREE)? else {
        return Ok(None);
    };
    let mut buckets = Vec::with_capacity(words.len());
    for (_, word) in words {
        let mut slots: BTreeMap<u16, RoaringBitmap> = BTreeMap::new();
        for entry in tree.prefix(&position_prefix(word), Direction::Forward)? {
            let (key, value) = entry?;
            let (_, slot) = split_word_slot_key(key)?;
            slots.insert(slot, bitmap_or_empty(Some(value))?);
        }
        buckets.push(slots);
    }
    let span = last_offset - first_offset;
    let mut candidates = RoaringBitmap::new();
    for start in 0..usize::from(EXACT_POSITIONS).saturating_sub(span) {
        let mut here: Option<RoaringBitmap> = None;
        for ((offset, _), slots) in words.iter().zip(&buckets) {
            let position = start + (offset - first_offset);
            let at = u16::try_from(position)
                .ok()
                .and_then(|position| slots.get(&position));
            let Some(at) = at else {
                here = Some(RoaringBitmap::new());
                break;
            };
            here = Some(match here {
                Some(documents) => documents & at,
                None => at.clone(),
            });
        }
        if let Some(here) = here {
            candidates |= here;
        }
    }
    if let Some(last) = buckets.last() {
        candidates |= last
            .range(EXACT_POSITIONS..)
            .map(|(_, documents)| documents)
            .union();
    }
    Ok(Some(candidates))
}
