//! Merge writers (`WriteTree::merge_writer`): changes in ascending key order, each changed leaf
//! rewritten once. Random merges (puts of small, medium and overflow values, deletes, keys left
//! as they are) into random trees are checked against a model: what each seek answers, the
//! entries and counts after the merge, inside the transaction and after commit and reopen, with
//! and without spilling, and the integrity check (page accounting, key bounds, leaf depth)
//! after every commit.

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]

use crate::common;

use std::collections::BTreeMap;
use std::ops::Bound;

use common::state::{Random, read_state};
use storage_engine::{Database, Direction, Error, Options, PAGE_BYTES_DEFAULT, WriteTransaction};

type Entries = BTreeMap<Vec<u8>, Vec<u8>>;

/// The budget of the spilling databases, in pages.
const BUDGET_PAGES: u64 = 24;

fn open(directory: &tempfile::TempDir, spilling: bool) -> Database {
    let options = Options {
        write_memory_bytes_max: spilling.then_some(BUDGET_PAGES * PAGE_BYTES_DEFAULT as u64),
        ..Options::default()
    };
    Database::open(&directory.path().join("merge.store"), options).expect("open succeeds")
}

fn key(random: &mut Random, space: u64) -> Vec<u8> {
    let mut key = format!("k{:07}", random.below(space)).into_bytes();
    if random.below(40) == 0 {
        key.resize(20 + random.below(900) as usize, b'x');
    }
    key
}

fn value(random: &mut Random) -> Vec<u8> {
    let length = match random.below(30) {
        0 => 1500 + random.below(20_000),
        1..=3 => 200 + random.below(1300),
        _ => random.below(60),
    };
    let fill = random.below(256) as u8;
    (0..length)
        .map(|index| fill.wrapping_add(index as u8))
        .collect()
}

fn tree_entries(write: &WriteTransaction, name: &str) -> Entries {
    let tree = write.create_tree(name).expect("create_tree succeeds");
    tree.range(Bound::Unbounded, Bound::Unbounded, Direction::Forward)
        .expect("range succeeds")
        .map(|entry| {
            let (key, value) = entry.expect("the entry reads");
            (key, value.to_vec())
        })
        .collect()
}

/// One random merge into tree `name`, with puts into `other` between its steps when `busy`
/// (so that a spilling transaction spills in the middle of the merge); checks every seek.
fn random_merge(
    write: &WriteTransaction,
    random: &mut Random,
    entries: &mut Entries,
    other: &mut Entries,
    busy: bool,
) {
    let space = [50, 2_000, 200_000][random.below(3) as usize];
    let count = [1, 20, 400, 6_000][random.below(4) as usize];
    let mut keys: Vec<Vec<u8>> = (0..count).map(|_| key(random, space)).collect();
    if random.below(3) == 0 {
        // Stored keys, so that replacements and deletions are common.
        keys.extend(entries.keys().filter(|_| random.below(4) == 0).cloned());
    }
    keys.sort();
    keys.dedup();
    let tree = write.create_tree("merged").expect("create_tree succeeds");
    let side = write.create_tree("side").expect("create_tree succeeds");
    let mut merge = tree.merge_writer();
    for key in keys {
        let stored = merge.seek(&key).expect("seek succeeds").map(<[u8]>::to_vec);
        assert_eq!(stored.as_ref(), entries.get(&key), "seek of {key:?}");
        match random.below(10) {
            0..=1 => {
                merge.delete().expect("delete succeeds");
                entries.remove(&key);
            }
            2 => {}
            _ => {
                let value = value(random);
                merge.put(&value).expect("put succeeds");
                entries.insert(key, value);
            }
        }
        if busy && random.below(8) == 0 {
            let side_key = self::key(random, 100_000);
            let side_value = value(random);
            side.put(&side_key, &side_value).expect("put succeeds");
            other.insert(side_key, side_value);
        }
    }
    merge.finish().expect("finish succeeds");
    assert_eq!(tree.len().expect("len succeeds"), entries.len() as u64);
}

fn check_merges(seed: u64, spilling: bool) {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let mut database = open(&directory, spilling);
    let mut random = Random(seed);
    let mut committed: (Entries, Entries) = Default::default();
    for round in 0..30 {
        let write = database.begin_write().expect("begin_write succeeds");
        let (mut entries, mut other) = committed.clone();
        if random.below(4) == 0 {
            // Ordinary puts and deletes first, so merges meet trees of every shape.
            let tree = write.create_tree("merged").expect("create_tree succeeds");
            for _ in 0..random.below(2_000) {
                let key = key(&mut random, 20_000);
                if random.below(4) == 0 {
                    tree.delete(&key).expect("delete succeeds");
                    entries.remove(&key);
                } else {
                    let value = value(&mut random);
                    tree.put(&key, &value).expect("put succeeds");
                    entries.insert(key, value);
                }
            }
        }
        for _ in 0..1 + random.below(3) {
            let busy = random.below(2) == 0;
            random_merge(&write, &mut random, &mut entries, &mut other, busy);
        }
        assert_eq!(
            tree_entries(&write, "merged"),
            entries,
            "seed {seed} round {round}"
        );
        if random.below(6) == 0 {
            write.abort();
        } else {
            write.commit().expect("commit succeeds");
            committed = (entries, other);
        }
        if random.below(5) == 0 {
            drop(database);
            database = open(&directory, spilling);
        }
        database
            .check_integrity()
            .unwrap_or_else(|error| panic!("seed {seed} round {round}: {error}"));
        let state = read_state(&database);
        let empty = Entries::new();
        assert_eq!(state.get("merged").unwrap_or(&empty), &committed.0);
        assert_eq!(state.get("side").unwrap_or(&empty), &committed.1);
    }
}

#[test]
fn merges_match_a_model() {
    for seed in 0..6 {
        check_merges(seed, false);
    }
}

#[test]
fn merges_match_a_model_while_the_transaction_spills() {
    for seed in 100..106 {
        check_merges(seed, true);
    }
}

#[test]
fn a_merge_fills_an_empty_tree_with_full_leaves() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let database = open(&directory, true);
    let write = database.begin_write().expect("begin_write succeeds");
    let tree = write.create_tree("merged").expect("create_tree succeeds");
    let mut merge = tree.merge_writer();
    for index in 0..100_000u32 {
        let key = format!("word{index:08}");
        assert_eq!(merge.seek(key.as_bytes()).expect("seek succeeds"), None);
        merge.put(&index.to_be_bytes()).expect("put succeeds");
    }
    merge.finish().expect("finish succeeds");
    write.commit().expect("commit succeeds");
    let report = database.check_integrity().expect("the tree is sound");
    assert_eq!(report.entries, 100_000);
    let read = database.begin_read();
    let fill = read
        .open_tree("merged")
        .expect("open_tree succeeds")
        .expect("the tree exists")
        .fill()
        .expect("fill succeeds");
    assert!(
        fill.fraction() > 0.85,
        "leaves written by a merge are nearly full: {fill:?}"
    );
}

#[test]
fn keys_out_of_order_are_refused_and_change_nothing() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let database = open(&directory, false);
    let write = database.begin_write().expect("begin_write succeeds");
    let tree = write.create_tree("merged").expect("create_tree succeeds");
    tree.put(b"b", b"stored").expect("put succeeds");
    let mut merge = tree.merge_writer();
    merge.seek(b"c").expect("seek succeeds");
    merge.put(b"new").expect("put succeeds");
    assert!(matches!(merge.seek(b"a"), Err(Error::KeysOutOfOrder)));
    assert!(matches!(merge.seek(b"c"), Err(Error::KeysOutOfOrder)));
    assert!(matches!(merge.put(b"again"), Err(Error::NothingSought)));
    merge.finish().expect("finish succeeds");
    let expected: Entries = [
        (b"b".to_vec(), b"stored".to_vec()),
        (b"c".to_vec(), b"new".to_vec()),
    ]
    .into();
    assert_eq!(tree_entries(&write, "merged"), expected);
    write.commit().expect("commit succeeds");
}

#[test]
fn a_put_or_delete_needs_a_key_sought_before_it() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let database = open(&directory, false);
    let write = database.begin_write().expect("begin_write succeeds");
    let tree = write.create_tree("merged").expect("create_tree succeeds");
    let mut merge = tree.merge_writer();
    assert!(matches!(merge.put(b"value"), Err(Error::NothingSought)));
    assert!(matches!(merge.delete(), Err(Error::NothingSought)));
    merge.seek(b"key").expect("seek succeeds");
    merge.put(b"value").expect("put succeeds");
    assert!(matches!(merge.delete(), Err(Error::NothingSought)));
    merge.finish().expect("finish succeeds");
    assert_eq!(tree.len().expect("len succeeds"), 1);
}

#[test]
fn a_writer_dropped_before_finishing_its_changes_fails_the_transaction() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let database = open(&directory, false);
    let write = database.begin_write().expect("begin_write succeeds");
    let tree = write.create_tree("merged").expect("create_tree succeeds");
    let mut merge = tree.merge_writer();
    merge.seek(b"key").expect("seek succeeds");
    merge.put(b"value").expect("put succeeds");
    drop(merge);
    assert!(matches!(write.commit(), Err(Error::TransactionFailed)));
    let write = database.begin_write().expect("begin_write succeeds");
    let tree = write.create_tree("merged").expect("create_tree succeeds");
    let mut merge = tree.merge_writer();
    merge.seek(b"key").expect("seek succeeds");
    drop(merge);
    write
        .commit()
        .expect("a writer that changed nothing leaves the transaction sound");
}

#[test]
fn leaves_a_merge_empties_are_merged_away() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let database = open(&directory, false);
    let keys: Vec<String> = (0..20_000u32)
        .map(|index| format!("word{index:08}"))
        .collect();
    let write = database.begin_write().expect("begin_write succeeds");
    let tree = write.create_tree("merged").expect("create_tree succeeds");
    for key in &keys {
        tree.put(key.as_bytes(), b"a value of some length")
            .expect("put succeeds");
    }
    write.commit().expect("commit succeeds");
    let pages = |database: &Database| {
        let read = database.begin_read();
        let tree = read.open_tree("merged").expect("open_tree succeeds");
        tree.expect("the tree exists")
            .fill()
            .expect("fill succeeds")
    };
    let before = pages(&database);
    // Every key but one in ten, then every key.
    for keep_every in [10, 1] {
        let write = database.begin_write().expect("begin_write succeeds");
        let tree = write.create_tree("merged").expect("create_tree succeeds");
        let mut merge = tree.merge_writer();
        for (index, key) in keys.iter().enumerate() {
            if merge.seek(key.as_bytes()).expect("seek succeeds").is_some()
                && (keep_every == 1 || index % keep_every != 0)
            {
                merge.delete().expect("delete succeeds");
            }
        }
        merge.finish().expect("finish succeeds");
        write.commit().expect("commit succeeds");
        database.check_integrity().expect("the tree is sound");
        let after = pages(&database);
        if keep_every == 10 {
            assert!(
                after.pages * 4 < before.pages,
                "{after:?} against {before:?}"
            );
        } else {
            assert_eq!(after.pages, 0, "an emptied tree has no pages");
        }
    }
}

/// A key of `KEY_BYTES_MAX`-ish length: few fit a leaf, so trees of a few dozen keys are deep.
fn long_key(index: u32) -> Vec<u8> {
    let mut key = format!("k{index:08}").into_bytes();
    key.resize(900, b'x');
    key
}

/// Fills trees `t1`..`t6` with `count` long keys (by merges or puts), then deletes the last
/// 1..=6 keys of each (by merges or deletes): emptying the last leaf under a branch of one
/// child (what an append at the right edge leaves) must leave no empty leaf behind.
fn fill_then_delete_the_last_keys(count: u32, merged_puts: bool, merged_deletes: bool) {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let database = open(&directory, false);
    let trees = 6u32.min(count);
    let write = database.begin_write().expect("begin_write succeeds");
    for deleted in 1..=trees {
        let tree = write
            .create_tree(&format!("t{deleted}"))
            .expect("create_tree succeeds");
        if merged_puts {
            let mut merge = tree.merge_writer();
            for index in 0..count {
                merge.seek(&long_key(index)).expect("seek succeeds");
                merge.put(b"value").expect("put succeeds");
            }
            merge.finish().expect("finish succeeds");
        } else {
            for index in 0..count {
                tree.put(&long_key(index), b"value").expect("put succeeds");
            }
        }
    }
    write.commit().expect("commit succeeds");
    let write = database.begin_write().expect("begin_write succeeds");
    for deleted in 1..=trees {
        let tree = write
            .create_tree(&format!("t{deleted}"))
            .expect("create_tree succeeds");
        if merged_deletes {
            let mut merge = tree.merge_writer();
            for index in count - deleted..count {
                let stored = merge.seek(&long_key(index)).expect("seek succeeds");
                assert!(stored.is_some());
                merge.delete().expect("delete succeeds");
            }
            merge.finish().expect("finish succeeds");
        } else {
            for index in count - deleted..count {
                assert!(tree.delete(&long_key(index)).expect("delete succeeds"));
            }
        }
        assert_eq!(
            tree.len().expect("len succeeds"),
            u64::from(count - deleted)
        );
    }
    write.commit().expect("commit succeeds");
    database.check_integrity().unwrap_or_else(|error| {
        panic!("{count} keys, merged puts {merged_puts}, merged deletes {merged_deletes}: {error}")
    });
}

#[test]
fn emptying_the_last_leaf_under_a_branch_of_one_child_leaves_no_empty_leaf() {
    for count in 1..120 {
        for (merged_puts, merged_deletes) in
            [(true, true), (true, false), (false, true), (false, false)]
        {
            fill_then_delete_the_last_keys(count, merged_puts, merged_deletes);
        }
    }
}
