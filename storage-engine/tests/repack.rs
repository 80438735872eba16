//! Repacking a tree (`WriteTransaction::repack_tree`): the same entries in fewer pages, older
//! snapshots untouched, the old pages free once committed.

use std::collections::BTreeMap;
use std::ops::Bound;

use storage_engine::{Database, Direction, Options};

const ENTRIES: u64 = 30_000;

fn key(index: u64) -> Vec<u8> {
    format!("key{index:08}").into_bytes()
}

/// Entries of `name` in the last commit.
fn entries(database: &Database, name: &str) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let read = database.begin_read();
    let tree = read
        .open_tree(name)
        .expect("open_tree succeeds")
        .expect("the tree exists");
    tree.range(Bound::Unbounded, Bound::Unbounded, Direction::Forward)
        .expect("range succeeds")
        .map(|entry| {
            let (key, value) = entry.expect("the entry reads");
            (key.to_vec(), value.to_vec())
        })
        .collect()
}

/// Fills tree `values` in scattered key order over many commits, as batches do: leaves split
/// in halves and stay partly empty. One value is large enough for an overflow run.
fn fill(database: &Database) {
    for batch in 0..10u64 {
        let write = database.begin_write().expect("begin_write succeeds");
        let tree = write.create_tree("values").expect("create_tree succeeds");
        for index in (0..ENTRIES).filter(|index| (index * 7919) % 10 == batch) {
            tree.put(&key(index), format!("value {index}").as_bytes())
                .expect("put succeeds");
        }
        if batch == 0 {
            tree.put(b"large", &vec![7u8; 20_000])
                .expect("put succeeds");
        }
        write.commit().expect("commit succeeds");
    }
}

#[test]
fn a_repacked_tree_holds_the_same_entries_in_fewer_pages() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let path = directory.path().join("store.pages");
    let database = Database::open(&path, Options::default()).expect("open succeeds");
    fill(&database);
    let before = entries(&database, "values");
    assert_eq!(before.len() as u64, ENTRIES + 1);
    let used_before = database.stats().used_pages;

    let snapshot = database.begin_read();
    let write = database.begin_write().expect("begin_write succeeds");
    assert!(write.repack_tree("values").expect("repack_tree succeeds"));
    assert!(!write.repack_tree("missing").expect("repack_tree succeeds"));
    write.commit().expect("commit succeeds");

    assert_eq!(entries(&database, "values"), before);
    let read = database.begin_read();
    assert_eq!(
        read.tree_names().expect("tree_names succeeds"),
        vec!["values".to_owned()]
    );
    let old = snapshot
        .open_tree("values")
        .expect("open_tree succeeds")
        .expect("the tree exists");
    assert_eq!(
        old.get(&key(12_345)).expect("get succeeds"),
        Some(&b"value 12345"[..])
    );
    drop(snapshot);
    database
        .check_integrity()
        .expect("check_integrity succeeds");

    // The old pages are free now: the live tree takes clearly fewer pages.
    let stats = database.stats();
    let used_after = stats.used_pages;
    assert!(
        used_after * 10 < used_before * 9,
        "used pages before {used_before}, after {used_after} ({stats:?})"
    );
    drop(read);
    drop(database);
    let reopened = Database::open(&path, Options::default()).expect("open succeeds");
    reopened
        .check_integrity()
        .expect("check_integrity succeeds");
    assert_eq!(entries(&reopened, "values"), before);
}

#[test]
fn a_repack_under_a_small_memory_budget_spills_and_keeps_every_entry() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let path = directory.path().join("store.pages");
    let options = Options {
        write_memory_bytes_max: Some(16 * storage_engine::PAGE_BYTES_DEFAULT as u64),
        ..Options::default()
    };
    let database = Database::open(&path, options).expect("open succeeds");
    fill(&database);
    let before = entries(&database, "values");
    let write = database.begin_write().expect("begin_write succeeds");
    write.repack_tree("values").expect("repack_tree succeeds");
    assert!(write.changed_bytes() <= 32 * storage_engine::PAGE_BYTES_DEFAULT as u64);
    write.commit().expect("commit succeeds");
    assert_eq!(entries(&database, "values"), before);
    database
        .check_integrity()
        .expect("check_integrity succeeds");
}
