//! A compacted copy of a read snapshot ([`ReadTransaction::copy_compacted`]): every named tree
//! the snapshot holds, written in key order into a new page store file, what a backup of a
//! live database needs.
//!
//! Why a copy of the entries and not of the pages: the source file holds free pages (left by
//! copy-on-write, some still read by older snapshots), half-full leaves and a grown tail;
//! writing the entries again through a [`crate::MergeWriter`] fills the leaves to about
//! [`crate::MERGE_LEAF_FILL_PERCENT`], and the file is cut at its high-water mark, so the copy
//! holds only live pages. The source is only read: its writers go on meanwhile, and the copy
//! is the state of the snapshot, whatever they commit.
//!
//! Invariants:
//! - the destination is a new file (an existing one is refused and left as it is);
//! - once the call returns `Ok`, the destination holds exactly the trees and entries of the
//!   snapshot, committed and synced, and ends at its high-water mark;
//! - a failure leaves a destination to discard (the caller removes it); the source is never
//!   changed either way;
//! - the copy's write transaction keeps at most [`COPY_WRITE_MEMORY_BYTES`] of changed pages
//!   in memory, whatever the size of the snapshot.

use std::fs::OpenOptions;
use std::ops::Bound;
use std::path::Path;

use crate::btree::cursor::Direction;
use crate::error::Result;
use crate::transaction::database::Database;
use crate::transaction::options::{Options, SyncMode};
use crate::transaction::read_transaction::ReadTransaction;

/// Most bytes of changed pages the copy's write transaction keeps in memory before it writes
/// them to their places in the new file.
pub const COPY_WRITE_MEMORY_BYTES: u64 = 32 << 20;

/// What a compacted copy wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactedCopy {
    /// Named trees copied.
    pub trees: u64,
    /// Entries copied, over every tree.
    pub entries: u64,
    /// Length of the new file in bytes.
    pub file_bytes: u64,
}

impl ReadTransaction {
    /// Writes every tree of this snapshot into the new page store file `destination`, with
    /// the source's page size, and syncs it (see the module documentation).
    pub fn copy_compacted(&self, destination: &Path) -> Result<CompactedCopy> {
        // Refuses an existing file before anything is written to it.
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(destination)?;
        let options = Options {
            page_bytes: self.page_bytes(),
            sync_mode: SyncMode::Full,
            create: true,
            write_memory_bytes_max: Some(COPY_WRITE_MEMORY_BYTES),
            ..Options::default()
        };
        let copy = Database::open(destination, options)?;
        let write = copy.begin_write()?;
        let names = self.tree_names()?;
        let mut entries = 0;
        for name in &names {
            let Some(source) = self.open_tree(name)? else {
                continue;
            };
            let tree = write.create_tree(name)?;
            let mut writer = tree.merge_writer();
            for entry in source.range(Bound::Unbounded, Bound::Unbounded, Direction::Forward)? {
                let (key, value) = entry?;
                writer.seek(key)?;
                writer.put(value)?;
                entries += 1;
            }
            writer.finish()?;
        }
        write.commit()?;
        let stats = copy.stats();
        drop(copy);
        let file_bytes = stats.allocated_pages * stats.page_bytes;
        let file = OpenOptions::new().write(true).open(destination)?;
        file.set_len(file_bytes)?;
        file.sync_all()?;
        Ok(CompactedCopy {
            trees: names.len() as u64,
            entries,
            file_bytes,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::transaction::options::Options;

    /// A tree's name and entries.
    type TreeContents = (String, Vec<(Vec<u8>, Vec<u8>)>);

    /// Every tree of `database`'s last commit, entry by entry.
    fn contents(database: &Database) -> Vec<TreeContents> {
        let read = database.begin_read();
        read.tree_names()
            .unwrap()
            .into_iter()
            .map(|name| {
                let tree = read.open_tree(&name).unwrap().unwrap();
                let entries = tree
                    .range(Bound::Unbounded, Bound::Unbounded, Direction::Forward)
                    .unwrap()
                    .map(|entry| {
                        let (key, value) = entry.unwrap();
                        (key.to_vec(), value.to_vec())
                    })
                    .collect();
                (name, entries)
            })
            .collect()
    }

    #[test]
    fn a_copy_holds_the_snapshot_in_fewer_pages_while_the_source_changes() {
        let directory = tempfile::tempdir().unwrap();
        let source = Database::open(&directory.path().join("source"), Options::default()).unwrap();
        // Many small entries, some large ones (overflow pages), then most of them deleted
        // one by one: the source keeps free pages and sparse leaves.
        for round in 0..4u32 {
            let write = source.begin_write().unwrap();
            let words = write.create_tree("words").unwrap();
            let large = write.create_tree("large").unwrap();
            for number in 0..5_000u32 {
                let key = format!("{:08}", number * 4 + round);
                words.put(key.as_bytes(), &number.to_le_bytes()).unwrap();
            }
            large
                .put(
                    &round.to_be_bytes(),
                    &vec![u8::try_from(round).unwrap(); 20_000],
                )
                .unwrap();
            write.create_tree("empty").unwrap();
            write.commit().unwrap();
        }
        let write = source.begin_write().unwrap();
        let words = write.open_tree("words").unwrap().unwrap();
        for number in (0..20_000u32).filter(|number| number % 3 != 0) {
            words.delete(format!("{number:08}").as_bytes()).unwrap();
        }
        write.commit().unwrap();
        let expected = contents(&source);
        let read = source.begin_read();
        // A commit after the snapshot began is not in the copy.
        let write = source.begin_write().unwrap();
        write.create_tree("later").unwrap().put(b"k", b"v").unwrap();
        write.commit().unwrap();

        let destination = directory.path().join("copy");
        let copied = read.copy_compacted(&destination).unwrap();
        assert_eq!(copied.trees, 3);
        assert_eq!(copied.entries, 6_667 + 4);
        assert_eq!(
            std::fs::metadata(&destination).unwrap().len(),
            copied.file_bytes
        );
        assert!(
            copied.file_bytes < source.stats().file_bytes / 2,
            "{copied:?} against {:?}",
            source.stats()
        );
        // An existing destination is refused and left as it is.
        assert!(read.copy_compacted(&destination).is_err());
        assert_eq!(
            std::fs::metadata(&destination).unwrap().len(),
            copied.file_bytes
        );

        let copy = Database::open(&destination, Options::default()).unwrap();
        copy.check_integrity().unwrap();
        assert_eq!(contents(&copy), expected);
        // The copy is a page store like any other: it takes writes and grows again.
        let write = copy.begin_write().unwrap();
        write
            .create_tree("more")
            .unwrap()
            .put(b"k", &[7; 9_000])
            .unwrap();
        write.commit().unwrap();
        copy.check_integrity().unwrap();
    }
}
