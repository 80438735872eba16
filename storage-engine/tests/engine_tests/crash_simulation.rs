//! Crash simulation: a randomized workload runs on the simulated disk, which at every sync
//! point builds crash images (the durable image plus a random subset of the unsynced
//! writes, some torn at sector granularity). Every image must reopen to the last
//! acknowledged commit — or, for a crash at a commit's final sync, possibly the commit in
//! flight — and pass the integrity check. Transactions past a small memory budget spill their
//! changed pages early, so the images also hold those unsynced writes.
//! Knobs: `STORAGE_CRASH_SEED`, `STORAGE_CRASH_COMMITS` (default 40),
//! `STORAGE_CRASH_VARIANTS` (crash images per sync point, default 3).

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]
#![allow(clippy::unwrap_used)]

use crate::common;

use common::state::{Model, Random, read_state};
use storage_engine::io::SimulatedIo;
use storage_engine::{Database, Error, Options, SyncMode};

const CAPACITY_BYTES: usize = 16 << 20;

/// Changed pages a transaction keeps in memory: the larger transactions spill, so crash
/// images also hold the early, unsynced writes of a transaction that never committed.
const WRITE_MEMORY_PAGES: u64 = 16;

fn options() -> Options {
    Options {
        maximum_size_bytes: CAPACITY_BYTES as u64,
        sync_mode: SyncMode::Full,
        write_memory_bytes_max: Some(
            WRITE_MEMORY_PAGES * storage_engine::PAGE_BYTES_DEFAULT as u64,
        ),
        ..Options::default()
    }
}

fn environment_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

/// Applies one random transaction's changes to `model` and to the database.
fn random_changes(
    random: &mut Random,
    database: &Database,
    model: &mut Model,
) -> storage_engine::WriteTransaction {
    let write = database.begin_write().expect("begin_write succeeds");
    let operations = match random.below(4) {
        0 => 1,
        1 => 10,
        _ => 1 + random.below(300),
    };
    for _ in 0..operations {
        let name = format!("tree{}", random.below(3));
        let key = format!("key{:05}", random.below(2000)).into_bytes();
        let tree = write.create_tree(&name).expect("create_tree succeeds");
        let entries = model.entry(name.clone()).or_default();
        match random.below(10) {
            0..=2 => {
                tree.delete(&key).expect("delete succeeds");
                entries.remove(&key);
            }
            3 if random.below(10) == 0 => {
                let value = vec![random.below(256) as u8; 5000 + random.below(30_000) as usize];
                tree.put(&key, &value).expect("put succeeds");
                entries.insert(key, value);
            }
            _ => {
                let value = vec![random.below(256) as u8; random.below(300) as usize];
                tree.put(&key, &value).expect("put succeeds");
                entries.insert(key, value);
            }
        }
    }
    write
}

/// Reopens a crash image and returns its state, after the integrity check.
fn reopen(image: &[u8]) -> Model {
    let io = SimulatedIo::from_image(image, CAPACITY_BYTES, 0);
    let database = Database::open_with_io(Box::new(io), options()).expect("open_with_io succeeds");
    database
        .check_integrity()
        .expect("check_integrity succeeds");
    read_state(&database)
}

#[test]
fn every_crash_image_reopens_to_the_last_committed_state() {
    let seed = environment_number("STORAGE_CRASH_SEED", 0xc0ffee);
    let commits = environment_number("STORAGE_CRASH_COMMITS", 40);
    let variants = environment_number("STORAGE_CRASH_VARIANTS", 3) as usize;
    println!("crash simulation: seed {seed}, {commits} commits, {variants} images per sync point");
    let mut random = Random(seed);
    let io = SimulatedIo::new(CAPACITY_BYTES, seed);
    let database =
        Database::open_with_io(Box::new(io.clone()), options()).expect("open_with_io succeeds");
    io.record_crash_images(variants);
    let mut committed = Model::new();
    let mut images_checked = 0;
    let mut snapshot = None;
    let mut pages_released = 0;
    for round in 0..commits {
        if random.below(3) == 0 {
            // Punched free pages read as zero: no snapshot, live or after a crash, may need
            // them.
            pages_released += database
                .release_free_pages(0)
                .expect("release_free_pages succeeds")
                .pages;
            assert_eq!(read_state(&database), committed);
        }
        let mut next = committed.clone();
        let write = random_changes(&mut random, &database, &mut next);
        if random.below(8) == 0 {
            write.abort();
            assert!(io.take_crash_images().is_empty(), "an abort never syncs");
            continue;
        }
        if random.below(4) == 0 {
            // A reader held across commits keeps freed pages from reuse; drop it sometimes.
            snapshot = if snapshot.is_some() {
                None
            } else {
                Some(database.begin_read())
            };
        }
        let first_sync = io.sync_count() + 1;
        write.commit().expect("commit succeeds");
        let last_sync = io.sync_count();
        for image in io.take_crash_images() {
            let state = reopen(&image.bytes);
            let acknowledged = state == committed;
            let in_flight = image.sync_index == last_sync && state == next;
            assert!(
                acknowledged || in_flight,
                "seed {seed} round {round}: crash at sync {} (commit syncs {first_sync}..={last_sync}) reopened to another state",
                image.sync_index
            );
            images_checked += 1;
        }
        committed = next;
        assert_eq!(read_state(&database), committed);
    }
    drop(snapshot);
    database
        .check_integrity()
        .expect("check_integrity succeeds");
    println!("checked {images_checked} crash images, {pages_released} pages released");
    assert!(pages_released > 0, "the workload frees pages to release");
    assert!(
        images_checked as u64 >= commits,
        "too few crash images checked"
    );
}

#[test]
fn a_failed_sync_poisons_the_database_and_reopening_recovers() {
    let io = SimulatedIo::new(CAPACITY_BYTES, 7);
    let database =
        Database::open_with_io(Box::new(io.clone()), options()).expect("open_with_io succeeds");
    let write = database.begin_write().expect("begin_write succeeds");
    write
        .create_tree("t")
        .expect("create_tree succeeds")
        .put(b"a", b"1")
        .expect("put succeeds");
    write.commit().expect("commit succeeds");
    io.fail_at_sync(io.sync_count() + 2);
    let write = database.begin_write().expect("begin_write succeeds");
    write
        .create_tree("t")
        .expect("create_tree succeeds")
        .put(b"b", b"2")
        .expect("put succeeds");
    assert!(matches!(write.commit(), Err(Error::Io(_))));
    assert!(matches!(database.begin_write(), Err(Error::Poisoned)));
    drop(database);
    let state = reopen(&io.durable_image());
    assert_eq!(state["t"].get(b"a".as_slice()), Some(&b"1".to_vec()));
}
