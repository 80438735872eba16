//! Repacking a tree (`WriteTransaction::repack_tree`): the same entries in fewer pages, older
//! snapshots untouched, the old pages free once committed.

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]

use std::collections::BTreeMap;
use std::ops::Bound;

use std::sync::atomic::AtomicBool;

use storage_engine::{Database, Direction, Options, Repacked};

/// An interrupt flag never set.
static NO_INTERRUPT: AtomicBool = AtomicBool::new(false);

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
    assert_eq!(
        write
            .repack_tree("values", 100, &NO_INTERRUPT)
            .expect("repack_tree succeeds"),
        Repacked::Done
    );
    assert_eq!(
        write
            .repack_tree("missing", 100, &NO_INTERRUPT)
            .expect("repack_tree succeeds"),
        Repacked::NoSuchTree
    );
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
    write
        .repack_tree("values", 100, &NO_INTERRUPT)
        .expect("repack_tree succeeds");
    assert!(write.changed_bytes() <= 32 * storage_engine::PAGE_BYTES_DEFAULT as u64);
    write.commit().expect("commit succeeds");
    assert_eq!(entries(&database, "values"), before);
    database
        .check_integrity()
        .expect("check_integrity succeeds");
}

/// The fill of tree `name` in the last commit.
fn tree_fill(database: &Database, name: &str) -> storage_engine::TreeFill {
    let read = database.begin_read();
    let tree = read
        .open_tree(name)
        .expect("open_tree succeeds")
        .expect("the tree exists");
    tree.fill().expect("fill succeeds")
}

#[test]
fn fill_counts_the_tree_pages_and_rises_when_repacked() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let path = directory.path().join("store.pages");
    let database = Database::open(&path, Options::default()).expect("open succeeds");
    fill(&database);
    let scattered = tree_fill(&database, "values");
    let report = database
        .check_integrity()
        .expect("check_integrity succeeds");
    // Every page the integrity walk counts is a tree page of the one tree or a page of its
    // overflow run, and the tree's bytes are all of them.
    assert_eq!(scattered.pages, report.tree_pages - catalog_pages(&report));
    assert!(scattered.overflow_pages > 0, "the large value has a run");
    assert_eq!(scattered.overflow_pages, report.overflow_pages);
    assert_eq!(
        scattered.bytes(),
        (scattered.pages + report.overflow_pages) * scattered.page_bytes
    );
    assert!(
        scattered.fraction() < 0.8,
        "halved leaves: {:.2}",
        scattered.fraction()
    );
    assert!(scattered.spare_pages() > scattered.pages / 5);

    let write = database.begin_write().expect("begin_write succeeds");
    write
        .repack_tree(
            "values",
            storage_engine::REPACK_LEAF_FILL_PERCENT,
            &NO_INTERRUPT,
        )
        .expect("repack_tree succeeds");
    write.commit().expect("commit succeeds");
    let repacked = tree_fill(&database, "values");
    // Leaves filled to the repack's fill factor, branches full.
    let fill = storage_engine::REPACK_LEAF_FILL_PERCENT as f64 / 100.0;
    assert!(
        (fill - 0.05..=fill + 0.02).contains(&repacked.fraction()),
        "pages filled to {fill}: {:.3}",
        repacked.fraction()
    );
    assert!(repacked.pages < scattered.pages);

    let write = database.begin_write().expect("begin_write succeeds");
    write
        .repack_tree("values", 100, &NO_INTERRUPT)
        .expect("repack_tree succeeds");
    write.commit().expect("commit succeeds");
    let full = tree_fill(&database, "values");
    assert!(full.fraction() > 0.95, "full pages: {:.3}", full.fraction());
    assert!(full.pages < repacked.pages);
    assert!(full.spare_pages() <= full.pages / 20);
}

/// The catalog's own tree pages: one root leaf for a catalog of one tree.
fn catalog_pages(report: &storage_engine::IntegrityReport) -> u64 {
    assert_eq!(report.trees, 1, "one tree in the catalog");
    1
}

#[test]
fn an_empty_tree_counts_as_full() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let database = Database::open(&directory.path().join("store.pages"), Options::default())
        .expect("open succeeds");
    let write = database.begin_write().expect("begin_write succeeds");
    write.create_tree("empty").expect("create_tree succeeds");
    write.commit().expect("commit succeeds");
    let fill = tree_fill(&database, "empty");
    assert_eq!((fill.pages, fill.used_bytes, fill.spare_pages()), (0, 0, 0));
    assert_eq!(fill.fraction(), 1.0);
}

#[test]
fn an_interrupted_repack_leaves_the_tree_as_it_was() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let path = directory.path().join("store.pages");
    let database = Database::open(&path, Options::default()).expect("open succeeds");
    fill(&database);
    let before = entries(&database, "values");
    let fill_before = tree_fill(&database, "values");
    // Set from the start: the copy stops after its first run of entries, partly built.
    let interrupt = AtomicBool::new(true);
    assert!(before.len() > storage_engine::INTERRUPT_CHECK_ENTRIES);
    let write = database.begin_write().expect("begin_write succeeds");
    assert_eq!(
        write
            .repack_tree("values", 100, &interrupt)
            .expect("repack_tree succeeds"),
        Repacked::Interrupted
    );
    // The transaction stays usable and commits only what else it changed.
    write
        .create_tree("other")
        .expect("create_tree succeeds")
        .put(b"key", b"value")
        .expect("put succeeds");
    write.commit().expect("commit succeeds");
    assert_eq!(entries(&database, "values"), before);
    assert_eq!(tree_fill(&database, "values"), fill_before);
    let read = database.begin_read();
    assert_eq!(
        read.tree_names().expect("tree_names succeeds"),
        vec!["other".to_owned(), "values".to_owned()]
    );
    drop(read);
    database
        .check_integrity()
        .expect("check_integrity succeeds");
}
