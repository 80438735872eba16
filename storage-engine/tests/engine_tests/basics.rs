//! Basic behaviour of the page store through its public API, on a real file.

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]
#![allow(clippy::unwrap_used)]

use std::ops::Bound;

use storage_engine::{Database, Direction, Error, KEY_BYTES_MAX, Options, stored_entry_bytes};

fn open(directory: &tempfile::TempDir) -> Database {
    Database::open(&directory.path().join("store.pages"), Options::default())
        .expect("open succeeds")
}

fn key(index: u32) -> Vec<u8> {
    format!("key{index:08}").into_bytes()
}

#[test]
fn committed_values_survive_reopening() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    {
        let database = open(&directory);
        let write = database.begin_write().expect("begin_write succeeds");
        let tree = write
            .create_tree("documents")
            .expect("create_tree succeeds");
        for index in 0..5000 {
            tree.put(&key(index), format!("value {index}").as_bytes())
                .expect("put succeeds");
        }
        tree.put(b"", b"").expect("put succeeds");
        write.commit().expect("commit succeeds");
        database
            .check_integrity()
            .expect("check_integrity succeeds");
    }
    let database = open(&directory);
    let read = database.begin_read();
    let tree = read
        .open_tree("documents")
        .expect("open_tree finds a value")
        .expect("the value exists");
    assert_eq!(tree.len(), 5001);
    assert_eq!(
        tree.get(&key(1234)).expect("get finds a value"),
        Some(b"value 1234".as_slice())
    );
    assert_eq!(
        tree.get(b"").expect("get finds a value"),
        Some(b"".as_slice())
    );
    assert_eq!(tree.get(b"missing").expect("get finds a value"), None);
    let report = database
        .check_integrity()
        .expect("check_integrity succeeds");
    assert_eq!(report.entries, 5001);
}

#[test]
fn ranges_iterate_in_both_directions_within_bounds() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let database = open(&directory);
    let write = database.begin_write().expect("begin_write succeeds");
    let tree = write.create_tree("t").expect("create_tree succeeds");
    for index in 0..3000 {
        tree.put(&key(index * 2), b"v").expect("put succeeds");
    }
    write.commit().expect("commit succeeds");
    let read = database.begin_read();
    let tree = read
        .open_tree("t")
        .expect("open_tree finds a value")
        .expect("the value exists");
    let start = key(101);
    let end = key(2001);
    let forward: Vec<Vec<u8>> = tree
        .range(
            Bound::Included(&start),
            Bound::Excluded(&end),
            Direction::Forward,
        )
        .expect("range succeeds")
        .map(|entry| entry.expect("`entry` holds a value").0.to_vec())
        .collect();
    let expected: Vec<Vec<u8>> = (51..1001).map(|index| key(index * 2)).collect();
    assert_eq!(forward, expected);
    let backward: Vec<Vec<u8>> = tree
        .range(
            Bound::Included(&start),
            Bound::Excluded(&end),
            Direction::Backward,
        )
        .expect("range succeeds")
        .map(|entry| entry.expect("`entry` holds a value").0.to_vec())
        .collect();
    assert_eq!(backward, expected.iter().rev().cloned().collect::<Vec<_>>());
    assert_eq!(
        tree.first()
            .expect("first finds a value")
            .expect("the value exists")
            .0,
        key(0).as_slice()
    );
    assert_eq!(
        tree.last()
            .expect("last finds a value")
            .expect("the value exists")
            .0,
        key(5998).as_slice()
    );
    let prefixed = tree
        .prefix(b"key0000001", Direction::Forward)
        .expect("prefix succeeds")
        .count();
    assert_eq!(prefixed, 5);
}

#[test]
fn a_key_past_the_maximum_is_refused() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let database = open(&directory);
    let write = database.begin_write().expect("begin_write succeeds");
    let tree = write.create_tree("t").expect("create_tree succeeds");
    tree.put(&vec![7u8; KEY_BYTES_MAX], b"fits")
        .expect("put succeeds");
    let error = tree
        .put(&vec![7u8; KEY_BYTES_MAX + 1], b"too long")
        .unwrap_err();
    assert!(
        matches!(error, Error::KeyTooLarge { length, maximum } if length == KEY_BYTES_MAX + 1 && maximum == KEY_BYTES_MAX)
    );
    write.commit().expect("commit succeeds");
    database
        .check_integrity()
        .expect("check_integrity succeeds");
}

#[test]
fn large_values_use_overflow_runs_and_are_freed() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let database = open(&directory);
    let big: Vec<u8> = (0..3_000_000u32).map(|index| (index % 253) as u8).collect();
    let write = database.begin_write().expect("begin_write succeeds");
    let tree = write.create_tree("t").expect("create_tree succeeds");
    tree.put(b"big", &big).expect("put succeeds");
    tree.put(b"medium", &big[..5000]).expect("put succeeds");
    assert_eq!(
        tree.get(b"big")
            .expect("get finds a value")
            .expect("the value exists")
            .as_ref(),
        big.as_slice()
    );
    write.commit().expect("commit succeeds");
    database
        .check_integrity()
        .expect("check_integrity succeeds");
    {
        let read = database.begin_read();
        let tree = read
            .open_tree("t")
            .expect("open_tree finds a value")
            .expect("the value exists");
        assert_eq!(
            tree.get(b"big")
                .expect("get finds a value")
                .expect("the value exists"),
            big.as_slice()
        );
        assert_eq!(
            tree.get(b"medium")
                .expect("get finds a value")
                .expect("the value exists"),
            &big[..5000]
        );
    }
    let write = database.begin_write().expect("begin_write succeeds");
    write
        .open_tree("t")
        .expect("open_tree finds a value")
        .expect("the value exists")
        .delete(b"big")
        .expect("delete succeeds");
    write.commit().expect("commit succeeds");
    let write = database.begin_write().expect("begin_write succeeds");
    write.commit().expect("commit succeeds");
    let stats = database.stats();
    assert!(
        stats.free_pages > 700,
        "the run's pages are free: {stats:?}"
    );
    database
        .check_integrity()
        .expect("check_integrity succeeds");
}

#[test]
fn a_snapshot_keeps_its_view_across_commits() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let database = open(&directory);
    let write = database.begin_write().expect("begin_write succeeds");
    let tree = write.create_tree("t").expect("create_tree succeeds");
    for index in 0..2000 {
        tree.put(&key(index), b"old").expect("put succeeds");
    }
    write.commit().expect("commit succeeds");
    let snapshot = database.begin_read();
    for round in 0..5 {
        let write = database.begin_write().expect("begin_write succeeds");
        let tree = write
            .open_tree("t")
            .expect("open_tree finds a value")
            .expect("the value exists");
        for index in 0..2000 {
            if index % 3 == round % 3 {
                tree.delete(&key(index)).expect("delete succeeds");
            } else {
                tree.put(&key(index), b"new").expect("put succeeds");
            }
        }
        write.commit().expect("commit succeeds");
    }
    let tree = snapshot
        .open_tree("t")
        .expect("open_tree finds a value")
        .expect("the value exists");
    assert_eq!(tree.len(), 2000);
    for entry in tree
        .range(Bound::Unbounded, Bound::Unbounded, Direction::Forward)
        .expect("range succeeds")
    {
        assert_eq!(entry.expect("`entry` holds a value").1, b"old");
    }
    drop(snapshot);
    database
        .check_integrity()
        .expect("check_integrity succeeds");
}

#[test]
fn a_cloned_snapshot_keeps_its_view_after_the_original_ends() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let database = open(&directory);
    let write = database.begin_write().expect("begin_write succeeds");
    let tree = write.create_tree("t").expect("create_tree succeeds");
    for index in 0..2000 {
        tree.put(&key(index), b"old").expect("put succeeds");
    }
    write.commit().expect("commit succeeds");
    let original = database.begin_read();
    let clone = original.clone();
    assert_eq!(clone.transaction_id(), original.transaction_id());
    drop(original);
    // Pages the old values sat on are freed by these commits; with the clone still pinning
    // its snapshot, none of them may be reused.
    for _ in 0..5 {
        let write = database.begin_write().expect("begin_write succeeds");
        let tree = write
            .open_tree("t")
            .expect("open_tree finds a value")
            .expect("the value exists");
        for index in 0..2000 {
            tree.put(&key(index), b"new value").expect("put succeeds");
        }
        write.commit().expect("commit succeeds");
    }
    let tree = clone
        .open_tree("t")
        .expect("open_tree finds a value")
        .expect("the value exists");
    assert_eq!(tree.len(), 2000);
    for entry in tree
        .range(Bound::Unbounded, Bound::Unbounded, Direction::Forward)
        .expect("range succeeds")
    {
        assert_eq!(entry.expect("`entry` holds a value").1, b"old");
    }
    drop(clone);
    database
        .check_integrity()
        .expect("check_integrity succeeds");
}

#[test]
fn only_one_write_transaction_at_a_time() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let database = open(&directory);
    let write = database.begin_write().expect("begin_write succeeds");
    assert!(matches!(
        database.begin_write(),
        Err(Error::WriteInProgress)
    ));
    write.abort();
    database
        .begin_write()
        .expect("begin_write succeeds")
        .commit()
        .expect("commit succeeds");
}

#[test]
fn abort_discards_changes_and_trees() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let database = open(&directory);
    let write = database.begin_write().expect("begin_write succeeds");
    write
        .create_tree("kept")
        .expect("create_tree succeeds")
        .put(b"a", b"1")
        .expect("put succeeds");
    write.commit().expect("commit succeeds");
    let write = database.begin_write().expect("begin_write succeeds");
    write
        .create_tree("dropped")
        .expect("create_tree succeeds")
        .put(b"b", b"2")
        .expect("put succeeds");
    write
        .open_tree("kept")
        .expect("open_tree finds a value")
        .expect("the value exists")
        .put(b"a", b"changed")
        .expect("put succeeds");
    write.abort();
    let read = database.begin_read();
    assert!(
        read.open_tree("dropped")
            .expect("open_tree finds a value")
            .is_none()
    );
    assert_eq!(
        read.open_tree("kept")
            .expect("open_tree finds a value")
            .expect("the value exists")
            .get(b"a")
            .expect("get finds a value"),
        Some(b"1".as_slice())
    );
    assert_eq!(
        read.tree_names().expect("tree_names succeeds"),
        vec!["kept".to_string()]
    );
    database
        .check_integrity()
        .expect("check_integrity succeeds");
}

#[test]
fn deleting_a_tree_frees_its_pages() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let database = open(&directory);
    let write = database.begin_write().expect("begin_write succeeds");
    let tree = write.create_tree("t").expect("create_tree succeeds");
    for index in 0..4000 {
        tree.put(&key(index), &[1u8; 100]).expect("put succeeds");
    }
    write
        .create_tree("other")
        .expect("create_tree succeeds")
        .put(b"x", b"y")
        .expect("put succeeds");
    write.commit().expect("commit succeeds");
    let write = database.begin_write().expect("begin_write succeeds");
    assert!(write.delete_tree("t").expect("delete_tree succeeds"));
    assert!(!write.delete_tree("missing").expect("delete_tree succeeds"));
    write.commit().expect("commit succeeds");
    let stats = database.stats();
    assert_eq!(stats.tree_count, 1);
    let report = database
        .check_integrity()
        .expect("check_integrity succeeds");
    assert_eq!(report.trees, 1);
    assert_eq!(report.entries, 1);
}

fn scrambled(index: u32) -> u32 {
    index.wrapping_mul(2_654_435_761) % 1_000_003
}

#[test]
fn deleting_everything_in_random_order_merges_back_to_an_empty_tree() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let database = open(&directory);
    let count = 30_000u32;
    let write = database.begin_write().expect("begin_write succeeds");
    let tree = write.create_tree("t").expect("create_tree succeeds");
    for index in 0..count {
        let key = format!("{:010}", scrambled(index));
        tree.put(
            key.as_bytes(),
            &vec![(index % 200) as u8; (index % 120) as usize],
        )
        .expect("put succeeds");
    }
    write.commit().expect("commit succeeds");
    database
        .check_integrity()
        .expect("check_integrity succeeds");
    for round in 0..3u32 {
        let write = database.begin_write().expect("begin_write succeeds");
        let tree = write
            .open_tree("t")
            .expect("open_tree finds a value")
            .expect("the value exists");
        for index in (0..count).filter(|index| index % 3 == round) {
            let key = format!("{:010}", scrambled(index.wrapping_mul(7) % count));
            tree.delete(key.as_bytes()).expect("delete succeeds");
        }
        write.commit().expect("commit succeeds");
        database
            .check_integrity()
            .expect("check_integrity succeeds");
    }
    let read = database.begin_read();
    let tree = read
        .open_tree("t")
        .expect("open_tree finds a value")
        .expect("the value exists");
    assert_eq!(tree.len(), 0);
    assert!(tree.first().expect("first finds a value").is_none());
    let stats = database.stats();
    let report = database
        .check_integrity()
        .expect("check_integrity succeeds");
    // Commit slots, the catalog leaf and the free tree's pages: nothing else is in use.
    assert!(
        stats.used_pages <= 3 + report.free_list_pages,
        "an empty tree keeps almost nothing: {stats:?} {report:?}"
    );
}

#[test]
fn sequential_inserts_fill_pages() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let database = open(&directory);
    let write = database.begin_write().expect("begin_write succeeds");
    let tree = write.create_tree("t").expect("create_tree succeeds");
    for index in 0..20_000u32 {
        tree.put(&index.to_be_bytes(), &[5u8; 100])
            .expect("put succeeds");
    }
    write.commit().expect("commit succeeds");
    let report = database
        .check_integrity()
        .expect("check_integrity succeeds");
    let entry_bytes = 20_000 * (4 + 100 + 7 + 2);
    let tree_bytes = report.tree_pages * 4096;
    assert!(
        tree_bytes < entry_bytes * 110 / 100,
        "pages are nearly full: {report:?}"
    );
}

#[test]
fn growing_past_the_maximum_size_is_map_full_and_aborts_cleanly() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let options = Options {
        initial_size_bytes: 0,
        maximum_size_bytes: 64 * 4096,
        ..Options::default()
    };
    let database =
        Database::open(&directory.path().join("small.pages"), options).expect("open succeeds");
    let write = database.begin_write().expect("begin_write succeeds");
    write
        .create_tree("t")
        .expect("create_tree succeeds")
        .put(b"kept", b"value")
        .expect("put succeeds");
    write.commit().expect("commit succeeds");
    let write = database.begin_write().expect("begin_write succeeds");
    let tree = write.create_tree("t").expect("create_tree succeeds");
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
    let tree = read
        .open_tree("t")
        .expect("open_tree finds a value")
        .expect("the value exists");
    assert_eq!(tree.len(), 1);
    assert_eq!(
        tree.get(b"kept").expect("get finds a value"),
        Some(b"value".as_slice())
    );
    database
        .check_integrity()
        .expect("check_integrity succeeds");
    let write = database.begin_write().expect("begin_write succeeds");
    write
        .create_tree("t")
        .expect("create_tree succeeds")
        .put(b"after", b"fits")
        .expect("put succeeds");
    write.commit().expect("commit succeeds");
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
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let value: Vec<u8> = (0..length).map(|index| (index % 251) as u8).collect();
    {
        let database = open(&directory);
        let write = database.begin_write().expect("begin_write succeeds");
        let tree = write.create_tree("blobs").expect("create_tree succeeds");
        tree.put(b"large", &value).expect("put succeeds");
        tree.put(b"empty", b"").expect("put succeeds");
        write.commit().expect("commit succeeds");
    }
    let database = open(&directory);
    let read = database.begin_read();
    let tree = read
        .open_tree("blobs")
        .expect("open_tree finds a value")
        .expect("the value exists");
    assert!(
        tree.get(b"large")
            .expect("get finds a value")
            .expect("the value exists")
            == value.as_slice()
    );
    assert_eq!(
        tree.get(b"empty").expect("get finds a value"),
        Some(b"".as_slice())
    );
    database
        .check_integrity()
        .expect("check_integrity succeeds");
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
    let database =
        Database::open_with_io(Box::new(io.clone()), options).expect("open_with_io succeeds");
    let write = database.begin_write().expect("begin_write succeeds");
    let big = write.create_tree("big").expect("create_tree succeeds");
    big.put(b"value", &vec![7u8; FREED_PAGES * PAGE_BYTES])
        .expect("put succeeds");
    write
        .create_tree("small")
        .expect("create_tree succeeds")
        .put(b"0", b"0")
        .expect("put succeeds");
    write.commit().expect("commit succeeds");
    let write = database.begin_write().expect("begin_write succeeds");
    write.delete_tree("big").expect("delete_tree succeeds");
    write.commit().expect("commit succeeds");
    assert!(database.stats().free_pages >= FREED_PAGES as u64);
    for round in 1..=20u32 {
        let before = io.written_image();
        let write = database.begin_write().expect("begin_write succeeds");
        let small = write
            .open_tree("small")
            .expect("open_tree finds a value")
            .expect("the value exists");
        small
            .put(&round.to_be_bytes(), b"a small value")
            .expect("put succeeds");
        write.commit().expect("commit succeeds");
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
    database
        .check_integrity()
        .expect("check_integrity succeeds");
}

#[test]
fn unused_bytes_count_free_pages_and_the_grown_tail_and_rise_after_deletions() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let database = open(&directory);
    let write = database.begin_write().expect("begin_write succeeds");
    let tree = write
        .create_tree("documents")
        .expect("create_tree succeeds");
    for index in 0..5000 {
        tree.put(&key(index), &[b'v'; 200]).expect("put succeeds");
    }
    write.commit().expect("commit succeeds");
    let filled = database.stats();
    assert_eq!(
        filled.unused_bytes(),
        filled.file_bytes - filled.used_pages * filled.page_bytes,
        "{filled:?}"
    );
    let write = database.begin_write().expect("begin_write succeeds");
    let tree = write
        .open_tree("documents")
        .expect("open_tree succeeds")
        .expect("the tree exists");
    for index in 0..4900 {
        tree.delete(&key(index)).expect("delete succeeds");
    }
    write.commit().expect("commit succeeds");
    let emptied = database.stats();
    assert!(
        emptied.free_pages > filled.free_pages,
        "{filled:?} {emptied:?}"
    );
    assert!(
        emptied.unused_bytes() > filled.unused_bytes(),
        "{filled:?} {emptied:?}"
    );
    assert!(emptied.unused_bytes() <= emptied.file_bytes);
}

/// Pages (in bytes) that `count` entries of `value_bytes` add to a fresh tree.
fn bytes_taken_by(count: u32, value_bytes: usize) -> (u64, u64) {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let database = open(&directory);
    let before = database.stats().used_pages;
    let write = database.begin_write().expect("begin_write succeeds");
    let tree = write.create_tree("values").expect("create_tree succeeds");
    let value = vec![b'v'; value_bytes];
    for index in 0..count {
        tree.put(&key(index), &value).expect("put succeeds");
    }
    write.commit().expect("commit succeeds");
    let stats = database.stats();
    (
        (stats.used_pages - before) * stats.page_bytes,
        stats.page_bytes,
    )
}

#[test]
fn stored_entry_bytes_prices_entries_as_the_pages_they_take() {
    const ENTRIES: u32 = 400;
    // A value past a quarter page takes a whole overflow page besides its cell.
    let (taken, page_bytes) = bytes_taken_by(ENTRIES, 1_540);
    let priced = u64::from(ENTRIES) * stored_entry_bytes(page_bytes as usize, 11, 1_540) as u64;
    assert!(priced >= u64::from(ENTRIES) * page_bytes, "{priced}");
    assert!(taken >= priced, "taken {taken}, priced {priced}");
    assert!(
        taken <= priced + priced / 10,
        "taken {taken}, priced {priced}"
    );
    // A small value stays inline: leaf pages at least half full hold the priced cells.
    let (taken, page_bytes) = bytes_taken_by(ENTRIES, 200);
    let priced = u64::from(ENTRIES) * stored_entry_bytes(page_bytes as usize, 11, 200) as u64;
    assert!(priced < u64::from(ENTRIES) * 300, "{priced}");
    assert!(taken >= priced, "taken {taken}, priced {priced}");
    assert!(
        taken <= 2 * priced + 4 * page_bytes,
        "taken {taken}, priced {priced}"
    );
}
