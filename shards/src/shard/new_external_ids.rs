//! The external ids a batch gives documents it creates, kept in memory and written to
//! `external_ids` once per flush, in key order, through a merge writer.
//!
//! Why: a new document's external id lands at a random place in `external_ids` (ids are the
//! users' strings), so putting it at once costs a descent and a leaf copy per document, and
//! looking it up first (to learn that it is new) another descent. The coordinator already
//! learned, for the whole batch, which ids its shards do not store when it assigned them
//! internal ids ([`super::apply::PreparedBatch::assign_ids`]), so a document with an assigned
//! id is known to be new; its id waits here and is written with the others, sorted.
//!
//! Invariants: an id held here is in no stored entry of `external_ids` when it is written —
//! the write checks it against the stored value the merge writer sees anyway, and a stored id
//! fails the batch as corruption instead of leaving two documents under one id; lookups of
//! the batch (a later operation on the same id) see the ids held here before the tree.

use rustc_hash::FxHashMap;
use storage_engine::WriteTransaction;

use super::EXTERNAL_IDS_TREE;
use super::error::{ShardError, ShardResult};
use super::keys::document_key;
use super::word_changes::ALLOCATION_SLACK_BYTES;

/// Heap bytes one held id takes besides its text: its map slot and its allocation's slack.
const HELD_ID_BYTES: usize = size_of::<(Box<str>, u32)>() + ALLOCATION_SLACK_BYTES;

/// External id → internal id of the documents a batch created since its last flush.
#[derive(Debug, Default)]
pub(super) struct NewExternalIds {
    ids: FxHashMap<Box<str>, u32>,
    /// Heap bytes of the held ids, as [`NewExternalIds::insert`] counts them.
    bytes: usize,
}

impl NewExternalIds {
    /// Holds `external_id` as the id of the new document `id`.
    pub fn insert(&mut self, external_id: &str, id: u32) {
        if self.ids.insert(external_id.into(), id).is_none() {
            self.bytes += external_id.len() + HELD_ID_BYTES;
        }
    }

    /// The internal id held for `external_id`.
    pub fn get(&self, external_id: &str) -> Option<u32> {
        self.ids.get(external_id).copied()
    }

    /// Forgets `external_id` (its document was deleted in the same batch); answers whether it
    /// was held.
    pub fn remove(&mut self, external_id: &str) -> bool {
        match self.ids.remove(external_id) {
            Some(_) => {
                self.bytes = self.bytes.saturating_sub(external_id.len() + HELD_ID_BYTES);
                true
            }
            None => false,
        }
    }

    /// About the heap bytes the held ids take.
    pub fn estimated_bytes(&self) -> usize {
        self.bytes
    }

    /// Writes every held id into `external_ids`, in key order, and forgets them; an id the
    /// tree already stores is corruption (the batch fails, nothing is overwritten).
    pub fn write(&mut self, transaction: &WriteTransaction) -> ShardResult<()> {
        if self.ids.is_empty() {
            return Ok(());
        }
        self.bytes = 0;
        let mut held: Vec<(Box<str>, u32)> = std::mem::take(&mut self.ids).into_iter().collect();
        held.sort_unstable_by(|left, right| left.0.cmp(&right.0));
        let tree = transaction.create_tree(EXTERNAL_IDS_TREE)?;
        let mut merge = tree.merge_writer();
        for (external_id, id) in held {
            if merge.seek(external_id.as_bytes())?.is_some() {
                return Err(ShardError::corrupted(
                    "a document created by the batch has an id the shard already stores",
                ));
            }
            merge.put(&document_key(id))?;
        }
        merge.finish()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::ops::Bound;

    use storage_engine::Direction;

    use super::*;
    use crate::test_database::scratch_database;

    fn stored_ids(database: &storage_engine::Database) -> Vec<(Vec<u8>, Vec<u8>)> {
        let read = database.begin_read();
        let tree = read
            .open_tree(EXTERNAL_IDS_TREE)
            .expect("the catalog reads")
            .expect("the tree exists");
        tree.range(Bound::Unbounded, Bound::Unbounded, Direction::Forward)
            .expect("the tree reads")
            .map(|entry| {
                let (key, value) = entry.expect("an entry reads");
                (key.to_vec(), value.to_vec())
            })
            .collect()
    }

    #[test]
    fn held_ids_are_written_sorted_and_removed_ones_are_not() {
        let (_directory, database) = scratch_database();
        let mut held = NewExternalIds::default();
        for (external_id, id) in [("b", 2), ("a", 1), ("c", 3), ("ab", 4)] {
            held.insert(external_id, id);
        }
        assert_eq!(held.get("ab"), Some(4));
        assert!(held.remove("c"));
        assert!(!held.remove("c"), "an id is forgotten once");
        assert!(held.estimated_bytes() > 0);
        let write = database.begin_write().expect("a write begins");
        held.write(&write).expect("the ids are written");
        write.commit().expect("the write commits");
        assert_eq!(held.estimated_bytes(), 0);
        assert_eq!(held.get("a"), None, "written ids are no longer held");
        let expected: Vec<(Vec<u8>, Vec<u8>)> = [("a", 1), ("ab", 4), ("b", 2)]
            .into_iter()
            .map(|(external_id, id)| (external_id.as_bytes().to_vec(), document_key(id).to_vec()))
            .collect();
        assert_eq!(stored_ids(&database), expected);
    }

    #[test]
    fn an_id_already_stored_fails_the_write_and_keeps_the_stored_entry() {
        let (_directory, database) = scratch_database();
        let write = database.begin_write().expect("a write begins");
        write
            .create_tree(EXTERNAL_IDS_TREE)
            .expect("the tree opens")
            .put(b"taken", &document_key(7))
            .expect("the entry is stored");
        write.commit().expect("the write commits");

        let mut held = NewExternalIds::default();
        held.insert("free", 1);
        held.insert("taken", 2);
        let write = database.begin_write().expect("a write begins");
        let outcome = held.write(&write);
        assert!(
            matches!(outcome, Err(ShardError::Corrupted(_))),
            "{outcome:?}"
        );
        write.abort();
        assert_eq!(
            stored_ids(&database),
            vec![(b"taken".to_vec(), document_key(7).to_vec())]
        );
    }
}
