//! Spilling (`Options::write_memory_bytes_max`): a write transaction whose changed pages
//! outgrow the budget writes them to the file early. It must see its own changes, keep its
//! memory near the budget, commit exactly what it would have committed without spilling, and
//! leave the committed state untouched when it aborts.

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]

use crate::common;

use common::state::{Model, Random, read_state};
use storage_engine::{Database, Options, PAGE_BYTES_DEFAULT};

/// The budget of the spilling databases: a handful of pages.
const BUDGET_PAGES: u64 = 8;
/// Pages one operation may change beyond the budget before the spill that follows it: a
/// root-to-leaf path that splits at every level of a small tree.
const PAGES_ONE_OPERATION_CHANGES_MAX: u64 = 16;

fn spilling() -> Options {
    Options {
        write_memory_bytes_max: Some(BUDGET_PAGES * PAGE_BYTES_DEFAULT as u64),
        ..Options::default()
    }
}

/// Runs the same random transactions on `databases`, checking every read inside each
/// transaction against the model, and the budget of the spilling ones after every change.
fn random_transactions(databases: &[(&Database, bool)], seed: u64, transactions: usize) -> Model {
    let mut random = Random(seed);
    let mut model = Model::new();
    for _ in 0..transactions {
        let writes: Vec<_> = databases
            .iter()
            .map(|(database, spills)| {
                (
                    database.begin_write().expect("begin_write succeeds"),
                    *spills,
                )
            })
            .collect();
        let mut pending = model.clone();
        let abort = random.below(5) == 0;
        for _ in 0..1 + random.below(3000) {
            let name = format!("tree{}", random.below(3));
            let key = format!("key{:05}", random.below(4000)).into_bytes();
            let entries = pending.entry(name.clone()).or_default();
            let choice = random.below(20);
            let value = match choice {
                0 => vec![random.below(256) as u8; 5000 + random.below(20_000) as usize],
                _ => vec![random.below(256) as u8; random.below(200) as usize],
            };
            for (write, spills) in &writes {
                let tree = write.create_tree(&name).expect("create_tree succeeds");
                match choice {
                    1..=5 => {
                        tree.delete(&key).expect("delete succeeds");
                    }
                    6..=8 => {
                        let found = tree
                            .get(&key)
                            .expect("get succeeds")
                            .map(|value| value.to_vec());
                        assert_eq!(found.as_ref(), entries.get(&key));
                    }
                    _ => tree.put(&key, &value).expect("put succeeds"),
                }
                if *spills {
                    let bound = (BUDGET_PAGES + PAGES_ONE_OPERATION_CHANGES_MAX)
                        * PAGE_BYTES_DEFAULT as u64;
                    assert!(write.changed_bytes() <= bound, "{}", write.changed_bytes());
                }
            }
            match choice {
                1..=5 => {
                    entries.remove(&key);
                }
                6..=8 => {}
                _ => {
                    entries.insert(key, value);
                }
            }
        }
        for (write, _) in writes {
            if abort {
                write.abort();
            } else {
                write.commit().expect("commit succeeds");
            }
        }
        if !abort {
            pending.retain(|_, entries| !entries.is_empty());
            model = pending;
        }
    }
    model
}

#[test]
fn a_spilling_transaction_commits_what_an_unbounded_one_commits() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let bounded =
        Database::open(&directory.path().join("bounded.pages"), spilling()).expect("open succeeds");
    let unbounded = Database::open(
        &directory.path().join("unbounded.pages"),
        Options::default(),
    )
    .expect("open succeeds");
    let model = random_transactions(&[(&bounded, true), (&unbounded, false)], 7, 12);
    let mut bounded_state = read_state(&bounded);
    bounded_state.retain(|_, entries| !entries.is_empty());
    let mut unbounded_state = read_state(&unbounded);
    unbounded_state.retain(|_, entries| !entries.is_empty());
    assert_eq!(bounded_state, model);
    assert_eq!(unbounded_state, model);
    bounded.check_integrity().expect("check_integrity succeeds");
    drop(bounded);
    let reopened =
        Database::open(&directory.path().join("bounded.pages"), spilling()).expect("open succeeds");
    reopened
        .check_integrity()
        .expect("check_integrity succeeds");
    let mut reopened_state = read_state(&reopened);
    reopened_state.retain(|_, entries| !entries.is_empty());
    assert_eq!(reopened_state, model);
}

#[test]
fn an_aborted_spilling_transaction_leaves_the_committed_state_and_its_snapshots_intact() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let path = directory.path().join("store.pages");
    let database = Database::open(&path, spilling()).expect("open succeeds");
    let write = database.begin_write().expect("begin_write succeeds");
    let tree = write.create_tree("values").expect("create_tree succeeds");
    for index in 0..5_000u32 {
        tree.put(format!("key{index:06}").as_bytes(), b"committed")
            .expect("put succeeds");
    }
    write.commit().expect("commit succeeds");
    let before = read_state(&database);
    let snapshot = database.begin_read();
    let write = database.begin_write().expect("begin_write succeeds");
    let tree = write.create_tree("values").expect("create_tree succeeds");
    for index in 0..5_000u32 {
        tree.put(format!("key{index:06}").as_bytes(), b"spilled and aborted")
            .expect("put succeeds");
    }
    assert!(
        write.changed_bytes()
            <= (BUDGET_PAGES + PAGES_ONE_OPERATION_CHANGES_MAX) * PAGE_BYTES_DEFAULT as u64,
        "the transaction spilled"
    );
    let seen = snapshot
        .open_tree("values")
        .expect("open_tree succeeds")
        .expect("the tree exists");
    assert_eq!(
        seen.get(b"key000042").expect("get succeeds"),
        Some(&b"committed"[..])
    );
    write.abort();
    assert_eq!(read_state(&database), before);
    database
        .check_integrity()
        .expect("check_integrity succeeds");
    drop(snapshot);
    drop(database);
    let reopened = Database::open(&path, spilling()).expect("open succeeds");
    reopened
        .check_integrity()
        .expect("check_integrity succeeds");
    assert_eq!(read_state(&reopened), before);
}

#[test]
fn a_value_read_from_a_spilled_page_does_not_change_when_the_page_is_reused() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let database =
        Database::open(&directory.path().join("store.pages"), spilling()).expect("open succeeds");
    let write = database.begin_write().expect("begin_write succeeds");
    let tree = write.create_tree("values").expect("create_tree succeeds");
    let key = |index: u32| format!("key{index:06}").into_bytes();
    for index in 0..2_000u32 {
        tree.put(&key(index), format!("first {index}").as_bytes())
            .expect("put succeeds");
    }
    // Every page above was spilled: this value is read from a page the transaction wrote.
    let held = tree
        .get(&key(7))
        .expect("get succeeds")
        .expect("the key is stored");
    assert_eq!(&held[..], b"first 7");
    // Rewriting every entry frees each spilled page and allocates it again for other content.
    for round in 0..3 {
        for index in 0..2_000u32 {
            tree.put(
                &key(index),
                format!("round {round} {index} ").repeat(3).as_bytes(),
            )
            .expect("put succeeds");
        }
    }
    assert_eq!(&held[..], b"first 7");
    write.commit().expect("commit succeeds");
    database
        .check_integrity()
        .expect("check_integrity succeeds");
}
