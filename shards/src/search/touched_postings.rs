//! The postings of a batch's touched words on the batch's commit, restricted to the documents
//! the batch touched: what a carried prefix entry adds (see [`super::prefix_carry`]), read
//! once per word and shared by every prefix the word extends (`python` serves `p`, `py`,
//! `pyt`… in one read).
//!
//! Invariant: an answer is the word's bitmap in the kind's tree (per slot for the slot trees)
//! intersected with the touched documents, as the commit `read` sees it; empty slots are left
//! out.

use std::collections::HashMap;

use roaring::RoaringBitmap;
use storage_engine::{Direction, ReadTransaction, ReadTree};

use super::prefix_unions::{SlotUnion, UnionKind};
use crate::error::ShardResult;
use crate::index::inverted::{position_prefix, split_word_slot_key};
use crate::index::stored_bitmap::intersection_within;
use crate::index::trees::{WORD_DOCUMENTS_TREE, WORD_FIELDS_TREE, WORD_POSITION_BUCKETS_TREE};
use crate::shard::word_touches::TouchedWords;

/// The touched postings of one commit, read as asked.
pub struct TouchedPostings<'t> {
    touched: &'t TouchedWords,
    /// The trees of [`UnionKind::Documents`], [`UnionKind::Fields`] and
    /// [`UnionKind::PositionBuckets`], in that order.
    trees: [Option<ReadTree<'t>>; 3],
    /// Per kind (same order), what each word read so far answered.
    read: [HashMap<Box<[u8]>, SlotUnion>; 3],
}

impl<'t> TouchedPostings<'t> {
    pub fn open(read: &'t ReadTransaction, touched: &'t TouchedWords) -> ShardResult<Self> {
        Ok(TouchedPostings {
            touched,
            trees: [
                read.open_tree(WORD_DOCUMENTS_TREE)?,
                read.open_tree(WORD_FIELDS_TREE)?,
                read.open_tree(WORD_POSITION_BUCKETS_TREE)?,
            ],
            read: Default::default(),
        })
    }

    /// What the batch touched.
    pub fn touched(&self) -> &'t TouchedWords {
        self.touched
    }

    /// The `word_documents` value of `word` on the commit (borrowed from the commit's pages).
    pub fn stored(&self, word: &[u8]) -> ShardResult<Option<&'t [u8]>> {
        match &self.trees[0] {
            Some(tree) => Ok(tree.get(word)?),
            None => Ok(None),
        }
    }

    /// The touched documents holding `word` on the commit, per slot of `kind`'s tree
    /// ([`UnionKind::Documents`]: slot 0).
    pub fn of(&mut self, kind: UnionKind, word: &[u8]) -> ShardResult<&SlotUnion> {
        let index = kind_index(kind);
        if !self.read[index].contains_key(word) {
            let slots = self.read_slots(kind, word)?;
            self.read[index].insert(word.into(), slots);
        }
        Ok(&self.read[index][word])
    }

    fn read_slots(&self, kind: UnionKind, word: &[u8]) -> ShardResult<SlotUnion> {
        let documents = self.touched.documents();
        let mut slots = SlotUnion::new();
        let Some(tree) = &self.trees[kind_index(kind)] else {
            return Ok(slots);
        };
        if kind == UnionKind::Documents {
            if let Some(stored) = tree.get(word)? {
                insert_found(&mut slots, 0, intersection_within(stored, documents)?);
            }
            return Ok(slots);
        }
        for entry in tree.prefix(&position_prefix(word), Direction::Forward)? {
            let (key, stored) = entry?;
            let (_, slot) = split_word_slot_key(key)?;
            insert_found(&mut slots, slot, intersection_within(stored, documents)?);
        }
        Ok(slots)
    }
}

fn kind_index(kind: UnionKind) -> usize {
    match kind {
        UnionKind::Documents => 0,
        UnionKind::Fields => 1,
        UnionKind::PositionBuckets => 2,
    }
}

fn insert_found(slots: &mut SlotUnion, slot: u16, found: RoaringBitmap) {
    if !found.is_empty() {
        slots.insert(slot, found);
    }
}
