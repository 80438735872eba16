//! Giving free pages' disk blocks back (`Database::release_free_pages`), on a real file.

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]
#![allow(clippy::unwrap_used)]

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use storage_engine::{Database, Error, Options};

/// Bytes per unit of `st_blocks`.
const STAT_BLOCK_BYTES: u64 = 512;
const ENTRIES: u32 = 20_000;

fn allocated_bytes(path: &Path) -> u64 {
    std::fs::metadata(path).expect("metadata succeeds").blocks() * STAT_BLOCK_BYTES
}

fn key(index: u32) -> Vec<u8> {
    format!("key{index:08}").into_bytes()
}

fn value(index: u32, round: u32) -> Vec<u8> {
    format!("value {index} of round {round} {}", "x".repeat(100)).into_bytes()
}

fn write_round(database: &Database, round: u32) {
    let write = database.begin_write().expect("begin_write succeeds");
    let tree = write.create_tree("values").expect("create_tree succeeds");
    for index in 0..ENTRIES {
        tree.put(&key(index), &value(index, round))
            .expect("put succeeds");
    }
    write.commit().expect("commit succeeds");
}

fn assert_round(database: &Database, round: u32) {
    let read = database.begin_read();
    let tree = read
        .open_tree("values")
        .expect("open_tree succeeds")
        .expect("the tree exists");
    for index in (0..ENTRIES).step_by(97) {
        assert_eq!(
            tree.get(&key(index)).expect("get succeeds"),
            Some(value(index, round).as_slice())
        );
    }
}

#[test]
fn released_free_pages_leave_the_disk_and_the_data_intact() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let path = directory.path().join("store.pages");
    let database = Database::open(&path, Options::default()).expect("open succeeds");
    write_round(&database, 0);
    // Rewriting every value copies every leaf: the first round's pages become free.
    write_round(&database, 1);
    let stats = database.stats();
    assert!(stats.free_pages > 0, "{stats:?}");
    let before = allocated_bytes(&path);

    let below_minimum = database
        .release_free_pages(stats.free_pages + 1)
        .expect("release_free_pages succeeds");
    assert_eq!(
        below_minimum.pages, 0,
        "fewer pages than asked: nothing released"
    );
    assert_eq!(below_minimum.held_back_pages, stats.free_pages);
    assert_eq!(below_minimum.pending_pages, 0, "no reader holds a page");
    assert_eq!(allocated_bytes(&path), before);
    let released = database
        .release_free_pages(stats.free_pages)
        .expect("release_free_pages succeeds");
    let after = allocated_bytes(&path);
    assert_eq!(
        released.pages, stats.free_pages,
        "no reader: all are reusable"
    );
    assert_eq!(released.held_back_pages, 0);
    assert!(released.runs >= 1 && released.runs <= released.pages);
    let page_bytes = stats.page_bytes;
    assert!(
        before - after >= released.pages * page_bytes * 9 / 10,
        "allocated {before} -> {after} bytes for {} pages released",
        released.pages
    );
    assert_eq!(database.stats(), stats, "the committed state is unchanged");
    database
        .check_integrity()
        .expect("check_integrity succeeds");
    assert_round(&database, 1);

    let again = database
        .release_free_pages(0)
        .expect("release_free_pages succeeds");
    assert_eq!(again.pages, 0, "released records are not punched twice");

    // Writers reuse released pages like any free page, and the file reopens whole.
    write_round(&database, 2);
    assert!(database.stats().allocated_pages <= stats.allocated_pages + stats.free_pages);
    drop(database);
    let database = Database::open(&path, Options::default()).expect("open succeeds");
    database
        .check_integrity()
        .expect("check_integrity succeeds");
    assert_round(&database, 2);
}

#[test]
fn pages_a_snapshot_still_reads_are_not_released() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let path = directory.path().join("store.pages");
    let database = Database::open(&path, Options::default()).expect("open succeeds");
    write_round(&database, 0);
    let snapshot = database.begin_read();
    write_round(&database, 1);
    let released = database
        .release_free_pages(0)
        .expect("release_free_pages succeeds");
    let freed_by_round_one = database.stats().free_pages;
    assert!(
        released.pages < freed_by_round_one,
        "{} of {freed_by_round_one} released while a snapshot reads them",
        released.pages
    );
    assert_eq!(
        released.pages + released.pending_pages,
        freed_by_round_one,
        "every free page is either released or held by the snapshot"
    );
    // The old snapshot still reads round 0 in full.
    let tree = snapshot
        .open_tree("values")
        .expect("open_tree succeeds")
        .expect("the tree exists");
    for index in 0..ENTRIES {
        assert_eq!(
            tree.get(&key(index)).expect("get succeeds"),
            Some(value(index, 0).as_slice())
        );
    }
    drop(snapshot);
    let later = database
        .release_free_pages(0)
        .expect("release_free_pages succeeds");
    assert_eq!(released.pages + later.pages, freed_by_round_one);
    assert_eq!(later.pending_pages, 0);
}

#[test]
fn release_waits_for_the_writer() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let database = Database::open(&directory.path().join("store.pages"), Options::default())
        .expect("open succeeds");
    let write = database.begin_write().expect("begin_write succeeds");
    assert!(matches!(
        database.release_free_pages(0),
        Err(Error::WriteInProgress)
    ));
    write.abort();
    assert_eq!(
        database
            .release_free_pages(0)
            .expect("release_free_pages succeeds")
            .pages,
        0
    );
}
