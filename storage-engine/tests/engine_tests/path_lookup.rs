//! `ReadTree::path_lookup` answers exactly what `ReadTree::get` answers, and its `at_or_below`
//! exactly what a backward `ReadTree::range` starts at, for keys asked in ascending order (its
//! fast case), descending order and any order, present or absent, on a tree several levels
//! deep.

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]

use std::ops::Bound;

use storage_engine::{Database, Direction, Options};

/// Entries in the tree: enough for a tree of three levels at the default page size.
const ENTRIES: u32 = 60_000;

fn key(index: u32) -> Vec<u8> {
    // Even indexes only, so that odd ones are absent keys between present ones.
    format!("word\u{ff}{:010}", index * 2).into_bytes()
}

fn probe(index: u32) -> Vec<u8> {
    format!("word\u{ff}{index:010}").into_bytes()
}

fn filled_database(directory: &tempfile::TempDir) -> Database {
    let database = Database::open(&directory.path().join("store.pages"), Options::default())
        .expect("open succeeds");
    let write = database.begin_write().expect("begin_write succeeds");
    let tree = write
        .create_tree("positions")
        .expect("create_tree succeeds");
    for index in 0..ENTRIES {
        tree.put(&key(index), &index.to_be_bytes())
            .expect("put succeeds");
    }
    write.commit().expect("commit succeeds");
    database
}

fn compare_lookups(database: &Database, probes: &[u32]) {
    let read = database.begin_read();
    let tree = read
        .open_tree("positions")
        .expect("open_tree succeeds")
        .expect("the tree exists");
    let mut lookup = tree.path_lookup();
    let mut below = tree.path_lookup();
    for &index in probes {
        let wanted = probe(index);
        let expected = tree.get(&wanted).expect("get succeeds");
        let found = lookup.get(&wanted).expect("path lookup succeeds");
        assert_eq!(found, expected, "probe {index}");
        let expected = tree
            .range(
                Bound::Unbounded,
                Bound::Included(&wanted),
                Direction::Backward,
            )
            .expect("range succeeds")
            .next()
            .transpose()
            .expect("range reads");
        let found = below.at_or_below(&wanted).expect("at_or_below succeeds");
        assert_eq!(found, expected, "at or below probe {index}");
    }
}

#[test]
fn ascending_and_descending_runs_find_what_get_finds() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let database = filled_database(&directory);
    let ascending: Vec<u32> = (0..ENTRIES * 2 + 10).step_by(3).collect();
    compare_lookups(&database, &ascending);
    let descending: Vec<u32> = ascending.iter().rev().copied().collect();
    compare_lookups(&database, &descending);
    // Keys outside the tree's range on both sides.
    compare_lookups(&database, &[ENTRIES * 4, 0, ENTRIES * 4, 1]);
}

#[test]
fn a_missing_tree_root_finds_nothing() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let database = Database::open(&directory.path().join("store.pages"), Options::default())
        .expect("open succeeds");
    let write = database.begin_write().expect("begin_write succeeds");
    write.create_tree("empty").expect("create_tree succeeds");
    write.commit().expect("commit succeeds");
    let read = database.begin_read();
    let tree = read
        .open_tree("empty")
        .expect("open_tree succeeds")
        .expect("the tree exists");
    let mut lookup = tree.path_lookup();
    assert_eq!(lookup.get(b"anything").expect("lookup succeeds"), None);
    assert_eq!(
        lookup.at_or_below(b"anything").expect("lookup succeeds"),
        None
    );
}

#[test]
fn any_order_of_probes_finds_what_get_finds() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let database = filled_database(&directory);
    let seed: u64 = 0x5eed_1007;
    println!("seed {seed:#x}");
    let mut state = seed;
    let mut next = move || {
        // xorshift64: deterministic, no dependency.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        u32::try_from(state % u64::from(ENTRIES * 2 + 10)).expect("below u32::MAX")
    };
    for _ in 0..8 {
        let probes: Vec<u32> = (0..500).map(|_| next()).collect();
        compare_lookups(&database, &probes);
        let mut sorted = probes.clone();
        sorted.sort_unstable();
        compare_lookups(&database, &sorted);
    }
}

#[test]
fn lookups_after_deletions_find_what_get_and_range_find() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let database = filled_database(&directory);
    let write = database.begin_write().expect("begin_write succeeds");
    let tree = write.open_tree("positions").expect("open_tree succeeds");
    let tree = tree.expect("the tree exists");
    // Runs of deleted keys leave separators above the first key left in a leaf, or leaves
    // emptied of their first keys: the entry at or below a key is then in the leaf before.
    for index in 0..ENTRIES {
        if index % 500 < 120 || (index / 7) % 3 == 0 {
            tree.delete(&key(index)).expect("delete succeeds");
        }
    }
    write.commit().expect("commit succeeds");
    let ascending: Vec<u32> = (0..ENTRIES * 2 + 10).collect();
    compare_lookups(&database, &ascending);
    let descending: Vec<u32> = ascending.iter().rev().step_by(5).copied().collect();
    compare_lookups(&database, &descending);
}
