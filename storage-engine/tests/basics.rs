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
            tree.put(&key(index), format!("value {index}").as_bytes())
                .unwrap();
        }
        tree.put(b"", b"").unwrap();
        write.commit().unwrap();
        database.check_integrity().unwrap();
    }
    let database = open(&directory);
    let read = database.begin_read();
    let tree = read.open_tree("documents").unwrap().unwrap();
    assert_eq!(tree.len(), 5001);
    assert_eq!(
        tree.get(&key(1234)).unwrap(),
        Some(b"value 1234".as_slice())
    );
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
        .range(
            Bound::Included(&start),
            Bound::Excluded(&end),
            Direction::Forward,
        )
        .unwrap()
        .map(|entry| entry.unwrap().0.to_vec())
        .collect();
    let expected: Vec<Vec<u8>> = (51..1001).map(|index| key(index * 2)).collect();
    assert_eq!(forward, expected);
    let backward: Vec<Vec<u8>> = tree
        .range(
            Bound::Included(&start),
            Bound::Excluded(&end),
            Direction::Backward,
        )
        .unwrap()
        .map(|entry| entry.unwrap().0.to_vec())
        .collect();
    assert_eq!(backward, expected.iter().rev().cloned().collect::<Vec<_>>());
    assert_eq!(tree.first().unwrap().unwrap().0, key(0).as_slice());
    assert_eq!(tree.last().unwrap().unwrap().0, key(5998).as_slice());
    let prefixed = tree
        .prefix(b"key0000001", Direction::Forward)
        .unwrap()
        .count();
    assert_eq!(prefixed, 5);
}

#[test]
fn a_key_past_the_maximum_is_refused() {
    let directory = tempfile::tempdir().unwrap();
    let database = open(&directory);
    let write = database.begin_write().unwrap();
    let tree = write.create_tree("t").unwrap();
    tree.put(&vec![7u8; KEY_BYTES_MAX], b"fits").unwrap();
    let error = tree
        .put(&vec![7u8; KEY_BYTES_MAX + 1], b"too long")
        .unwrap_err();
    assert!(
        matches!(error, Error::KeyTooLarge { length, maximum } if length == KEY_BYTES_MAX + 1 && maximum == KEY_BYTES_MAX)
    );
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
    write
        .open_tree("t")
        .unwrap()
        .unwrap()
        .delete(b"big")
        .unwrap();
    write.commit().unwrap();
    let write = database.begin_write().unwrap();
    write.commit().unwrap();
    let stats = database.stats();
    assert!(
        stats.free_pages > 700,
        "the run's pages are free: {stats:?}"
    );
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
    for entry in tree
        .range(Bound::Unbounded, Bound::Unbounded, Direction::Forward)
        .unwrap()
    {
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
    assert!(matches!(
        database.begin_write(),
        Err(Error::WriteInProgress)
    ));
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
    write
        .create_tree("dropped")
        .unwrap()
        .put(b"b", b"2")
        .unwrap();
    write
        .open_tree("kept")
        .unwrap()
        .unwrap()
        .put(b"a", b"changed")
        .unwrap();
    write.abort();
    let read = database.begin_read();
    assert!(read.open_tree("dropped").unwrap().is_none());
    assert_eq!(
        read.open_tree("kept").unwrap().unwrap().get(b"a").unwrap(),
        Some(b"1".as_slice())
    );
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

fn scrambled(index: u32) -> u32 {
    index.wrapping_mul(2_654_435_761) % 1_000_003
}

#[test]
fn deleting_everything_in_random_order_merges_back_to_an_empty_tree() {
    let directory = tempfile::tempdir().unwrap();
    let database = open(&directory);
    let count = 30_000u32;
    let write = database.begin_write().unwrap();
    let tree = write.create_tree("t").unwrap();
    for index in 0..count {
        let key = format!("{:010}", scrambled(index));
        tree.put(
            key.as_bytes(),
            &vec![(index % 200) as u8; (index % 120) as usize],
        )
        .unwrap();
    }
    write.commit().unwrap();
    database.check_integrity().unwrap();
    for round in 0..3u32 {
        let write = database.begin_write().unwrap();
        let tree = write.open_tree("t").unwrap().unwrap();
        for index in (0..count).filter(|index| index % 3 == round) {
            let key = format!("{:010}", scrambled(index.wrapping_mul(7) % count));
            tree.delete(key.as_bytes()).unwrap();
        }
        write.commit().unwrap();
        database.check_integrity().unwrap();
    }
    let read = database.begin_read();
    let tree = read.open_tree("t").unwrap().unwrap();
    assert_eq!(tree.len(), 0);
    assert!(tree.first().unwrap().is_none());
    let stats = database.stats();
    let report = database.check_integrity().unwrap();
    // Commit slots, the catalog leaf and the free tree's pages: nothing else is in use.
    assert!(
        stats.used_pages <= 3 + report.free_list_pages,
        "an empty tree keeps almost nothing: {stats:?} {report:?}"
    );
}

#[test]
fn sequential_inserts_fill_pages() {
    let directory = tempfile::tempdir().unwrap();
    let database = open(&directory);
    let write = database.begin_write().unwrap();
    let tree = write.create_tree("t").unwrap();
    for index in 0..20_000u32 {
        tree.put(&index.to_be_bytes(), &[5u8; 100]).unwrap();
    }
    write.commit().unwrap();
    let report = database.check_integrity().unwrap();
    let entry_bytes = 20_000 * (4 + 100 + 7 + 2);
    let tree_bytes = report.tree_pages * 4096;
    assert!(
        tree_bytes < entry_bytes * 110 / 100,
        "pages are nearly full: {report:?}"
    );
}

#[test]
fn growing_past_the_maximum_size_is_map_full_and_aborts_cleanly() {
    let directory = tempfile::tempdir().unwrap();
    let options = Options {
        initial_size_bytes: 0,
        maximum_size_bytes: 64 * 4096,
        ..Options::default()
    };
    let database = Database::open(&directory.path().join("small.pages"), options).unwrap();
    let write = database.begin_write().unwrap();
    write
        .create_tree("t")
        .unwrap()
        .put(b"kept", b"value")
        .unwrap();
    write.commit().unwrap();
    let write = database.begin_write().unwrap();
    let tree = write.create_tree("t").unwrap();
    let error = (0..10_000u32)
        .map(|index| tree.put(&key(index), &[3u8; 200]))
        .find_map(Result::err)
        .expect("the file fills up");
    assert!(
        matches!(error, Error::MapFull { maximum_bytes } if maximum_bytes == 64 * 4096),
        "{error}"
    );
    assert!(matches!(
        tree.put(b"more", b"x"),
        Err(Error::TransactionFailed)
    ));
    assert!(matches!(write.commit(), Err(Error::TransactionFailed)));
    let read = database.begin_read();
    let tree = read.open_tree("t").unwrap().unwrap();
    assert_eq!(tree.len(), 1);
    assert_eq!(tree.get(b"kept").unwrap(), Some(b"value".as_slice()));
    database.check_integrity().unwrap();
    let write = database.begin_write().unwrap();
    write
        .create_tree("t")
        .unwrap()
        .put(b"after", b"fits")
        .unwrap();
    write.commit().unwrap();
}

/// Size of the large-value test; set `STORAGE_LARGE_VALUE_BYTES=1073741825` for 1 GiB + 1.
fn large_value_bytes() -> usize {
    std::env::var("STORAGE_LARGE_VALUE_BYTES")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or((64 << 20) + 1)
}

#[test]
fn a_very_large_value_round_trips_through_reopening() {
    let length = large_value_bytes();
    println!("large value of {length} bytes (STORAGE_LARGE_VALUE_BYTES)");
    let directory = tempfile::tempdir().unwrap();
    let value: Vec<u8> = (0..length).map(|index| (index % 251) as u8).collect();
    {
        let database = open(&directory);
        let write = database.begin_write().unwrap();
        let tree = write.create_tree("blobs").unwrap();
        tree.put(b"large", &value).unwrap();
        tree.put(b"empty", b"").unwrap();
        write.commit().unwrap();
    }
    let database = open(&directory);
    let read = database.begin_read();
    let tree = read.open_tree("blobs").unwrap().unwrap();
    assert!(tree.get(b"large").unwrap().unwrap() == value.as_slice());
    assert_eq!(tree.get(b"empty").unwrap(), Some(b"".as_slice()));
    database.check_integrity().unwrap();
}

/// Pages a one-entry commit may change (data leaf, catalog leaf, a few free-tree pages and
/// the commit slot), however long the free list is.
const SMALL_COMMIT_PAGES_CHANGED_MAX: usize = 12;

#[test]
fn a_small_commit_writes_pages_in_proportion_to_its_changes_not_to_the_free_list() {
    const PAGE_BYTES: usize = 4096;
    const FREED_PAGES: usize = 12_000;
    let io = storage_engine::io::SimulatedIo::new(64 << 20, 1);
    let options = Options {
        maximum_size_bytes: 64 << 20,
        ..Options::default()
    };
    let database = Database::open_with_io(Box::new(io.clone()), options).unwrap();
    let write = database.begin_write().unwrap();
    let big = write.create_tree("big").unwrap();
    big.put(b"value", &vec![7u8; FREED_PAGES * PAGE_BYTES])
        .unwrap();
    write.create_tree("small").unwrap().put(b"0", b"0").unwrap();
    write.commit().unwrap();
    let write = database.begin_write().unwrap();
    write.delete_tree("big").unwrap();
    write.commit().unwrap();
    assert!(database.stats().free_pages >= FREED_PAGES as u64);
    for round in 1..=20u32 {
        let before = io.written_image();
        let write = database.begin_write().unwrap();
        let small = write.open_tree("small").unwrap().unwrap();
        small.put(&round.to_be_bytes(), b"a small value").unwrap();
        write.commit().unwrap();
        let after = io.written_image();
        let changed = after
            .chunks(PAGE_BYTES)
            .zip(before.chunks(PAGE_BYTES))
            .filter(|(new, old)| new != old)
            .count();
        println!("round {round}: {changed} pages changed");
        assert!(
            changed <= SMALL_COMMIT_PAGES_CHANGED_MAX,
            "round {round}: {changed} pages changed, free pages {}",
            database.stats().free_pages
        );
    }
    database.check_integrity().unwrap();
}
