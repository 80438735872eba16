//! Basic behaviour of the page store through its public API, on a real file.
#![allow(clippy::unwrap_used)]

use std::ops::Bound;

use storage_engine::{Database, Direction, Error, KEY_BYTES_MAX, Options};

fn open(directory: &tempfile::TempDir) -> Database {
    Database::open(&directory.path().join("store.pages"), Options::default()).unwrap()
}

fn key(index: u32) -> Vec<u8> {
    format!("key{index:08}").into_bytes()
}

#[test]
fn committed_values_survive_reopening() {
    let directory = tempfile::tempdir().unwrap();
    {
        let database = open(&directory);
        let write = database.begin_write().unwrap();
        let tree = write.create_tree("documents").unwrap();
        for index in 0..5000 {
            tree.put(&key(index), format!("value {index}").as_bytes()).unwrap();
        }
        tree.put(b"", b"").unwrap();
        write.commit().unwrap();
        database.check_integrity().unwrap();
    }
    let database = open(&directory);
    let read = database.begin_read();
    let tree = read.open_tree("documents").unwrap().unwrap();
    assert_eq!(tree.len(), 5001);
    assert_eq!(tree.get(&key(1234)).unwrap(), Some(b"value 1234".as_slice()));
    assert_eq!(tree.get(b"").unwrap(), Some(b"".as_slice()));
    assert_eq!(tree.get(b"missing").unwrap(), None);
    let report = database.check_integrity().unwrap();
    assert_eq!(report.entries, 5001);
}

#[test]
fn ranges_iterate_in_both_directions_within_bounds() {
    let directory = tempfile::tempdir().unwrap();
    let database = open(&directory);
    let write = database.begin_write().unwrap();
    let tree = write.create_tree("t").unwrap();
    for index in 0..3000 {
        tree.put(&key(index * 2), b"v").unwrap();
    }
    write.commit().unwrap();
    let read = database.begin_read();
    let tree = read.open_tree("t").unwrap().unwrap();
    let start = key(101);
    let end = key(2001);
    let forward: Vec<Vec<u8>> = tree
        .range(Bound::Included(&start), Bound::Excluded(&end), Direction::Forward)
        .unwrap()
        .map(|entry| entry.unwrap().0.to_vec())
        .collect();
    let expected: Vec<Vec<u8>> = (51..1001).map(|index| key(index * 2)).collect();
    assert_eq!(forward, expected);
    let backward: Vec<Vec<u8>> = tree
        .range(Bound::Included(&start), Bound::Excluded(&end), Direction::Backward)
        .unwrap()
        .map(|entry| entry.unwrap().0.to_vec())
        .collect();
    assert_eq!(backward, expected.iter().rev().cloned().collect::<Vec<_>>());
    assert_eq!(tree.first().unwrap().unwrap().0, key(0).as_slice());
    assert_eq!(tree.last().unwrap().unwrap().0, key(5998).as_slice());
    let prefixed = tree.prefix(b"key0000001", Direction::Forward).unwrap().count();
    assert_eq!(prefixed, 5);
}

#[test]
fn a_key_past_the_maximum_is_refused() {
    let directory = tempfile::tempdir().unwrap();
    let database = open(&directory);
    let write = database.begin_write().unwrap();
    let tree = write.create_tree("t").unwrap();
    tree.put(&vec![7u8; KEY_BYTES_MAX], b"fits").unwrap();
    let error = tree.put(&vec![7u8; KEY_BYTES_MAX + 1], b"too long").unwrap_err();
    assert!(matches!(error, Error::KeyTooLarge { length, maximum } if length == KEY_BYTES_MAX + 1 && maximum == KEY_BYTES_MAX));
    write.commit().unwrap();
    database.check_integrity().unwrap();
}

#[test]
fn large_values_use_overflow_runs_and_are_freed() {
    let directory = tempfile::tempdir().unwrap();
    let database = open(&directory);
    let big: Vec<u8> = (0..3_000_000u32).map(|index| (index % 253) as u8).collect();
    let write = database.begin_write().unwrap();
    let tree = write.create_tree("t").unwrap();
    tree.put(b"big", &big).unwrap();
    tree.put(b"medium", &big[..5000]).unwrap();
    assert_eq!(tree.get(b"big").unwrap().unwrap().as_ref(), big.as_slice());
    write.commit().unwrap();
    database.check_integrity().unwrap();
    {
        let read = database.begin_read();
        let tree = read.open_tree("t").unwrap().unwrap();
        assert_eq!(tree.get(b"big").unwrap().unwrap(), big.as_slice());
        assert_eq!(tree.get(b"medium").unwrap().unwrap(), &big[..5000]);
    }
    let write = database.begin_write().unwrap();
    write.open_tree("t").unwrap().unwrap().delete(b"big").unwrap();
    write.commit().unwrap();
    let write = database.begin_write().unwrap();
    write.commit().unwrap();
    let stats = database.stats();
    assert!(stats.free_pages > 700, "the run's pages are free: {stats:?}");
    database.check_integrity().unwrap();
}

#[test]
fn a_snapshot_keeps_its_view_across_commits() {
    let directory = tempfile::tempdir().unwrap();
    let database = open(&directory);
    let write = database.begin_write().unwrap();
    let tree = write.create_tree("t").unwrap();
    for index in 0..2000 {
        tree.put(&key(index), b"old").unwrap();
    }
    write.commit().unwrap();
    let snapshot = database.begin_read();
    for round in 0..5 {
        let write = database.begin_write().unwrap();
        let tree = write.open_tree("t").unwrap().unwrap();
        for index in 0..2000 {
            if index % 3 == round % 3 {
                tree.delete(&key(index)).unwrap();
            } else {
                tree.put(&key(index), b"new").unwrap();
            }
        }
        write.commit().unwrap();
    }
    let tree = snapshot.open_tree("t").unwrap().unwrap();
    assert_eq!(tree.len(), 2000);
    for entry in tree.range(Bound::Unbounded, Bound::Unbounded, Direction::Forward).unwrap() {
        assert_eq!(entry.unwrap().1, b"old");
    }
    drop(snapshot);
    database.check_integrity().unwrap();
}

#[test]
fn only_one_write_transaction_at_a_time() {
    let directory = tempfile::tempdir().unwrap();
    let database = open(&directory);
    let write = database.begin_write().unwrap();
    assert!(matches!(database.begin_write(), Err(Error::WriteInProgress)));
    write.abort();
    database.begin_write().unwrap().commit().unwrap();
}

#[test]
fn abort_discards_changes_and_trees() {
    let directory = tempfile::tempdir().unwrap();
    let database = open(&directory);
    let write = database.begin_write().unwrap();
    write.create_tree("kept").unwrap().put(b"a", b"1").unwrap();
    write.commit().unwrap();
    let write = database.begin_write().unwrap();
    write.create_tree("dropped").unwrap().put(b"b", b"2").unwrap();
    write.open_tree("kept").unwrap().unwrap().put(b"a", b"changed").unwrap();
    write.abort();
    let read = database.begin_read();
    assert!(read.open_tree("dropped").unwrap().is_none());
    assert_eq!(read.open_tree("kept").unwrap().unwrap().get(b"a").unwrap(), Some(b"1".as_slice()));
    assert_eq!(read.tree_names().unwrap(), vec!["kept".to_string()]);
    database.check_integrity().unwrap();
}

#[test]
fn deleting_a_tree_frees_its_pages() {
    let directory = tempfile::tempdir().unwrap();
    let database = open(&directory);
    let write = database.begin_write().unwrap();
    let tree = write.create_tree("t").unwrap();
    for index in 0..4000 {
        tree.put(&key(index), &[1u8; 100]).unwrap();
    }
    write.create_tree("other").unwrap().put(b"x", b"y").unwrap();
    write.commit().unwrap();
    let write = database.begin_write().unwrap();
    assert!(write.delete_tree("t").unwrap());
    assert!(!write.delete_tree("missing").unwrap());
    write.commit().unwrap();
    let stats = database.stats();
    assert_eq!(stats.tree_count, 1);
    let report = database.check_integrity().unwrap();
    assert_eq!(report.trees, 1);
    assert_eq!(report.entries, 1);
}
