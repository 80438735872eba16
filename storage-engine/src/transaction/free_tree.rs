//! The free tree as the transaction layer reads and writes it: every record read back at open
//! (and by the integrity check), and the commit's update that deletes the records a
//! transaction took and writes its own.
//!
//! The records' format is `free_space::free_list`; the in-memory mirror they fill is
//! `free_space::free_pages`. This file adds what needs a B+tree: the free tree is an ordinary
//! tree of the page store, walked with a `Cursor` and changed copy-on-write with the `Editor`.
//!
//! Invariants: a page is listed in one record at most (`read_all` refuses a page listed twice;
//! `update` lists the pages in hand and the pages freed, which are disjoint); the free tree's
//! own pages are reachable, never listed (pages the update frees go to the allocator's
//! `spare` set and are listed, never allocated again within the update); the update's work
//! follows the records taken and written, not the size of the free tree.

use std::collections::{BTreeMap, BTreeSet};

use crate::btree::cursor::{Cursor, Seek, Source};
use crate::btree::editor::Editor;
use crate::error::{Error, Result};
use crate::free_space::free_list::{self, RecordKey};
use crate::free_space::free_pages::{Allocator, Records};
use crate::page_store::layout::NO_PAGE;
use crate::page_store::meta::CommitState;
use crate::page_store::page::{Pointer, ValueSlot};
use crate::page_store::pager::Pager;

/// Rounds of the free-tree update before giving up: each round records the pages the
/// previous round's edits allocated or freed; two or three rounds settle in practice.
const FREE_TREE_ROUNDS_MAX: usize = 64;

/// Rounds of the free-tree update that may allocate from the pages in hand; later rounds
/// allocate from the file's end (`Allocator::from_end_only`). An allocation from the pages in
/// hand removes the lowest of them, which shifts every record of the transaction (records
/// are cut from the sorted pages), and rewriting them can split a leaf, which allocates
/// again: a transaction with many records could go on like this past
/// [`FREE_TREE_ROUNDS_MAX`] (seen once under sustained writes: a batch failed with "free-tree
/// update did not settle").
const FREE_TREE_ROUNDS_REUSING: usize = 4;

/// The records a commit adds to the free tree, and the in-memory state they become.
pub struct FreeTreeUpdate {
    /// Root of the new free tree.
    pub root: Option<Pointer>,
    /// Pages the new free tree lists.
    pub free_pages: u64,
    /// Records of pages reusable at once (the unused rest of the pages taken).
    pub reusable: Records,
    /// Records of pages this transaction freed, waiting for older snapshots.
    pub pending: Records,
}

/// The records one round of the update wants in the tree: (reusable at once, pending).
type WantedRecords = (Records, Records);

/// Every record of the free tree at `root` of a state whose high-water mark is
/// `high_water_pages`, checked: keys well formed, pages in the file and listed once.
pub fn read_all(
    pager: &Pager,
    root: Option<Pointer>,
    high_water_pages: u64,
) -> Result<BTreeMap<RecordKey, Vec<u64>>> {
    let source = Source { pager, dirty: None };
    let at_page = root.map_or(NO_PAGE, |root| root.page);
    let mut records = BTreeMap::new();
    let mut listed = BTreeSet::new();
    let mut cursor = Cursor::seek(source, root, Seek::End, true)?;
    while let Some((key, value)) = cursor.current()? {
        let key =
            RecordKey::decode(key).ok_or(Error::corrupted(at_page, "malformed free-page key"))?;
        let pages = free_list::decode_pages(value, high_water_pages, at_page)?;
        for page in &pages {
            if !listed.insert(*page) {
                return Err(Error::corrupted(*page, "free page listed twice"));
            }
        }
        records.insert(key, pages);
        cursor.advance(true)?;
    }
    Ok(records)
}

/// Updates the free tree of `base` through `editor` (the committing transaction's dirty
/// nodes and allocator): deletes the records the transaction took pages from and writes its
/// own records, repeating until the edits of the free tree itself (which allocate and free
/// pages) leave nothing unrecorded; then encodes the tree's dirty pages into `pages`.
///
/// Why the rounds settle: pages the update frees go to the allocator's `spare` set, which
/// it lists as free but never allocates from again, so a page cannot shuttle between "in
/// the tree" and "listed free". After [`FREE_TREE_ROUNDS_REUSING`] rounds, allocations come
/// from the file's end only: the pages in hand and the pages freed can then only grow, each
/// growth being a tree page freed for good (a copy-on-write of a committed page, or a merge),
/// and the records change only when they grow, so the rounds stop after a few more.
/// `FREE_TREE_ROUNDS_MAX` turns a bug here into an error, not a hang.
pub fn update(
    editor: &mut Editor<'_>,
    base: &CommitState,
    pages: &mut Vec<(u64, Box<[u8]>)>,
) -> Result<FreeTreeUpdate> {
    let settled = update_rounds(editor, base, pages);
    editor.allocator.from_end_only = false;
    settled
}

/// The rounds of [`update`] until the records settle.
fn update_rounds(
    editor: &mut Editor<'_>,
    base: &CommitState,
    pages: &mut Vec<(u64, Box<[u8]>)>,
) -> Result<FreeTreeUpdate> {
    let transaction_id = base.transaction_id + 1;
    let mut root = base.free_tree;
    let mut deleted = 0;
    let mut written: Option<WantedRecords> = None;
    for round in 0..FREE_TREE_ROUNDS_MAX {
        if round == FREE_TREE_ROUNDS_REUSING {
            editor.allocator.from_end_only = true;
        }
        root = delete_taken_records(editor, root, &mut deleted)?;
        let (in_hand, freed) = pages_to_list(editor.allocator);
        let wanted = records_for(transaction_id, &in_hand, &freed);
        if written.as_ref() == Some(&wanted) {
            let listed_pages = in_hand.len() as u64 + freed.len() as u64;
            return settle(editor, root, pages, base.free_pages, listed_pages, wanted);
        }
        root = rewrite_records(editor, root, written.as_ref(), &wanted)?;
        written = Some(wanted);
    }
    Err(Error::corrupted(
        root.map_or(NO_PAGE, |root| root.page),
        "free-tree update did not settle",
    ))
}

/// Deletes from the tree at `root` the records taken since the first `deleted` of them were
/// deleted. Deleting may allocate, which may take more records: loops until all are gone.
fn delete_taken_records(
    editor: &mut Editor<'_>,
    mut root: Option<Pointer>,
    deleted: &mut usize,
) -> Result<Option<Pointer>> {
    while let Some(key) = editor.allocator.taken.keys().nth(*deleted).copied() {
        root = editor.delete(root, &key.encode())?.0;
        *deleted += 1;
    }
    Ok(root)
}

/// The pages the transaction's records must list, each sorted: those in hand (the spare set
/// of the update, which this call starts, and the pages reusable at once), and those freed.
fn pages_to_list(allocator: &mut Allocator) -> (Vec<u64>, Vec<u64>) {
    let spare = allocator.spare.get_or_insert_default();
    let mut in_hand: Vec<u64> = spare.iter().copied().collect();
    in_hand.extend(allocator.reusable.iter().copied());
    in_hand.sort_unstable();
    let mut freed = allocator.freed.clone();
    freed.sort_unstable();
    (in_hand, freed)
}

/// The records transaction `transaction_id` writes: the pages in hand (reusable at once)
/// and the pages it freed, each sorted and cut into record-sized chunks, numbered in turn.
fn records_for(transaction_id: u64, in_hand: &[u64], freed: &[u64]) -> WantedRecords {
    let mut sequence = 0u32;
    let mut next_key = || {
        let key = RecordKey {
            transaction_id,
            sequence,
        };
        sequence += 1;
        key
    };
    let reusable = free_list::chunks(in_hand)
        .map(|chunk| (next_key(), chunk.to_vec()))
        .collect();
    let pending = free_list::chunks(freed)
        .map(|chunk| (next_key(), chunk.to_vec()))
        .collect();
    (reusable, pending)
}

/// Makes the tree at `root` hold `wanted` instead of `written` (the previous round's
/// records): deletes the records no longer wanted, inserts the new and changed ones.
fn rewrite_records(
    editor: &mut Editor<'_>,
    mut root: Option<Pointer>,
    written: Option<&WantedRecords>,
    wanted: &WantedRecords,
) -> Result<Option<Pointer>> {
    let stale: Vec<RecordKey> = written
        .iter()
        .flat_map(|(reusable, pending)| reusable.keys().chain(pending.keys()))
        .filter(|key| !wanted.0.contains_key(key) && !wanted.1.contains_key(key))
        .copied()
        .collect();
    for key in stale {
        root = editor.delete(root, &key.encode())?.0;
    }
    for (key, record_pages) in wanted.0.iter().chain(wanted.1.iter()) {
        let unchanged = written.is_some_and(|(reusable, pending)| {
            reusable.get(key).or_else(|| pending.get(key)) == Some(record_pages)
        });
        if unchanged {
            continue;
        }
        let value = free_list::encode_pages(record_pages);
        root = Some(
            editor
                .insert(root, &key.encode(), ValueSlot::Inline(&value))?
                .0,
        );
    }
    Ok(root)
}

/// The settled update: encodes the tree at `root` into `pages` and counts the pages the new
/// free tree lists (those of `base_free_pages` not taken, plus `listed_pages`).
fn settle(
    editor: &mut Editor<'_>,
    root: Option<Pointer>,
    pages: &mut Vec<(u64, Box<[u8]>)>,
    base_free_pages: u64,
    listed_pages: u64,
    wanted: WantedRecords,
) -> Result<FreeTreeUpdate> {
    let root = root.map(|root| editor.finalize(root, pages)).transpose()?;
    let taken_pages: u64 = editor
        .allocator
        .taken
        .values()
        .map(|pages| pages.len() as u64)
        .sum();
    let free_pages = base_free_pages.saturating_sub(taken_pages) + listed_pages;
    debug_assert!(editor.dirty.is_empty(), "every dirty node was encoded");
    let (reusable, pending) = wanted;
    debug_assert!(
        lists_each_page_once(&reusable, &pending),
        "a page is listed in one record at most"
    );
    Ok(FreeTreeUpdate {
        root,
        free_pages,
        reusable,
        pending,
    })
}

/// Whether no page appears twice across the records (checked in debug builds only).
fn lists_each_page_once(reusable: &Records, pending: &Records) -> bool {
    let mut seen = BTreeSet::new();
    reusable
        .values()
        .chain(pending.values())
        .flatten()
        .all(|page| seen.insert(*page))
}
