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
//! (or one held twice) fails the batch as corruption instead of leaving two documents under one
//! id; lookups of the batch (a later operation on the same id) see the ids held here before
//! the tree, through an index built at the first lookup.

use rustc_hash::FxHashMap;
use storage_engine::WriteTransaction;

use super::word_changes::ALLOCATION_SLACK_BYTES;
use crate::error::{ShardError, ShardResult};
use crate::index::keys::document_key;
use crate::index::trees::EXTERNAL_IDS_TREE;

/// Heap bytes one held id takes besides its text: its slot and its allocation's slack.
const HELD_ID_BYTES: usize = size_of::<(Box<str>, Option<u32>)>() + ALLOCATION_SLACK_BYTES;
/// Heap bytes one entry of the lookup index takes besides its text: its map slot, doubled for
/// the spare slots a hash map keeps (it grows by doubling), and its key's allocation slack.
const INDEX_ENTRY_BYTES: usize = 2 * size_of::<(Box<str>, usize)>() + ALLOCATION_SLACK_BYTES;

/// The error of an id held for two documents.
fn held_twice() -> ShardError {
    ShardError::corrupted("the batch created two documents under one id")
}

/// External id → internal id of the documents a batch created since its last flush.
#[derive(Debug, Default)]
pub(super) struct NewExternalIds {
    /// In creation order; `None` once the document was deleted again.
    held: Vec<(Box<str>, Option<u32>)>,
    /// External id → its place in `held`: built at the batch's first lookup (a batch that
    /// only creates documents under assigned ids never looks up), kept up to date after.
    index: Option<FxHashMap<Box<str>, usize>>,
    /// Heap bytes of the held ids and the index, as they are counted when added.
    bytes: usize,
}

impl NewExternalIds {
    /// Holds `external_id` as the id of the new document `id`. Once the index is built, an id
    /// already held is refused at once; before, [`NewExternalIds::place_of`] or
    /// [`NewExternalIds::write`] refuses it.
    pub fn insert(&mut self, external_id: &str, id: u32) -> ShardResult<()> {
        let place = self.held.len();
        if let Some(index) = &mut self.index {
            if index.contains_key(external_id) {
                return Err(held_twice());
            }
            index.insert(external_id.into(), place);
            self.bytes += external_id.len() + INDEX_ENTRY_BYTES;
        }
        self.held.push((external_id.into(), Some(id)));
        self.bytes += external_id.len() + HELD_ID_BYTES;
        Ok(())
    }

    /// The place in `held` of `external_id`, building the index if this is the first lookup;
    /// an id held twice is corruption.
    fn place_of(&mut self, external_id: &str) -> ShardResult<Option<usize>> {
        if self.held.is_empty() {
            return Ok(None);
        }
        let index = match &mut self.index {
            Some(index) => index,
            None => {
                let mut index = FxHashMap::default();
                for (place, (held, id)) in self.held.iter().enumerate() {
                    if id.is_some() {
                        if index.insert(held.clone(), place).is_some() {
                            return Err(held_twice());
                        }
                        self.bytes += held.len() + INDEX_ENTRY_BYTES;
                    }
                }
                self.index.insert(index)
            }
        };
        Ok(index.get(external_id).copied())
    }

    /// The internal id held for `external_id`.
    pub fn get(&mut self, external_id: &str) -> ShardResult<Option<u32>> {
        Ok(self
            .place_of(external_id)?
            .and_then(|place| self.held[place].1))
    }

    /// Forgets `external_id` (its document was deleted in the same batch); answers whether it
    /// was held.
    pub fn remove(&mut self, external_id: &str) -> ShardResult<bool> {
        let Some(place) = self.place_of(external_id)? else {
            return Ok(false);
        };
        if let Some(index) = &mut self.index {
            index.remove(external_id);
        }
        Ok(self.held[place].1.take().is_some())
    }

    /// About the heap bytes the held ids take.
    pub fn estimated_bytes(&self) -> usize {
        self.bytes
    }

    /// Writes every held id into `external_ids`, in key order, and forgets them; an id the
    /// tree already stores, or held twice, is corruption (the batch fails, nothing is
    /// overwritten).
    pub fn write(&mut self, transaction: &WriteTransaction) -> ShardResult<()> {
        self.index = None;
        self.bytes = 0;
        let mut held: Vec<(Box<str>, u32)> = std::mem::take(&mut self.held)
            .into_iter()
            .filter_map(|(external_id, id)| id.map(|id| (external_id, id)))
            .collect();
        if held.is_empty() {
            return Ok(());
        }
        held.sort_unstable_by(|left, right| left.0.cmp(&right.0));
        if held.windows(2).any(|pair| pair[0].0 == pair[1].0) {
            return Err(held_twice());
        }
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
            held.insert(external_id, id).expect("a new id is held");
        }
        assert_eq!(held.get("ab").expect("a lookup"), Some(4));
        assert!(held.remove("c").expect("a removal"));
        assert!(
            !held.remove("c").expect("a removal"),
            "an id is forgotten once"
        );
        assert!(held.estimated_bytes() > 0);
        let write = database.begin_write().expect("a write begins");
        held.write(&write).expect("the ids are written");
        write.commit().expect("the write commits");
        assert_eq!(held.estimated_bytes(), 0);
        assert_eq!(
            held.get("a").expect("a lookup"),
            None,
            "written ids are no longer held"
        );
        let expected: Vec<(Vec<u8>, Vec<u8>)> = [("a", 1), ("ab", 4), ("b", 2)]
            .into_iter()
            .map(|(external_id, id)| (external_id.as_bytes().to_vec(), document_key(id).to_vec()))
            .collect();
        assert_eq!(stored_ids(&database), expected);
    }

    #[test]
    fn an_id_deleted_and_created_again_is_written_once() {
        let (_directory, database) = scratch_database();
        let mut held = NewExternalIds::default();
        held.insert("a", 1).expect("a new id is held");
        assert!(held.remove("a").expect("a removal"));
        held.insert("a", 2).expect("a deleted id is held again");
        assert_eq!(held.get("a").expect("a lookup"), Some(2));
        let write = database.begin_write().expect("a write begins");
        held.write(&write).expect("the ids are written");
        write.commit().expect("the write commits");
        assert_eq!(
            stored_ids(&database),
            vec![(b"a".to_vec(), document_key(2).to_vec())]
        );
    }

    #[test]
    fn an_id_held_twice_is_refused_by_the_insert_the_lookup_or_the_write() {
        let (_directory, database) = scratch_database();
        // Indexed already: the second insert is refused.
        let mut held = NewExternalIds::default();
        held.insert("x", 0).expect("a new id is held");
        assert_eq!(held.get("y").expect("a lookup"), None);
        held.insert("b", 3).expect("a new id is held");
        assert!(matches!(held.insert("b", 4), Err(ShardError::Corrupted(_))));
        // Not indexed yet: the first lookup (here a deletion) is refused.
        let mut held = NewExternalIds::default();
        held.insert("b", 3).expect("held before any lookup");
        held.insert("b", 4).expect("held before any lookup");
        assert!(matches!(held.remove("b"), Err(ShardError::Corrupted(_))));
        // Never looked up: the write is refused.
        let mut held = NewExternalIds::default();
        held.insert("b", 3).expect("held before any lookup");
        held.insert("b", 4).expect("held before any lookup");
        let write = database.begin_write().expect("a write begins");
        assert!(matches!(held.write(&write), Err(ShardError::Corrupted(_))));
        write.abort();
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
        held.insert("free", 1).expect("a new id is held");
        held.insert("taken", 2).expect("a new id is held");
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
