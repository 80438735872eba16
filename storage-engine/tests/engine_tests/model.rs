//! Property test: random operation sequences against a `BTreeMap` model — inserts,
//! overwrites, deletes, ranges in both directions, aborts, reopenings and snapshots held
//! across commits. Cases: `STORAGE_PROPTEST_CASES` (default 24); seed:
//! `STORAGE_PROPTEST_SEED` (default fixed, printed).
#![allow(clippy::unwrap_used)]
// A test file is a test module: its scenario functions read top to bottom as one story, so the
// 70-line limit of the engine's own code does not apply here.
#![allow(clippy::too_many_lines)]

use std::collections::BTreeMap;
use std::ops::Bound;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestRunner};
use storage_engine::io::SimulatedIo;
use storage_engine::{Database, Direction, Options, ReadTransaction, SyncMode};

const TREE_NAMES: [&str; 3] = ["alpha", "beta", "gamma"];
const CAPACITY_BYTES: usize = 16 << 20;

type Model = BTreeMap<&'static str, BTreeMap<Vec<u8>, Vec<u8>>>;

#[derive(Debug, Clone)]
enum Operation {
    Put {
        tree: usize,
        key: Vec<u8>,
        value_bytes: usize,
        fill: u8,
    },
    Delete {
        tree: usize,
        key: Vec<u8>,
    },
    Range {
        tree: usize,
        start: Vec<u8>,
        end: Vec<u8>,
        backward: bool,
    },
    DeleteTree {
        tree: usize,
    },
    Commit,
    Abort,
    TakeSnapshot,
    CheckSnapshots,
    DropSnapshot,
    Reopen,
}

fn key_strategy() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        8 => (0u32..300).prop_map(|index| format!("k{index:04}").into_bytes()),
        1 => (0u32..40, 1usize..900).prop_map(|(index, length)| {
            let mut key = format!("long{index:03}").into_bytes();
            key.resize(length.max(key.len()), b'x');
            key
        }),
        1 => Just(Vec::new()),
    ]
}

fn value_bytes_strategy() -> impl Strategy<Value = usize> {
    prop_oneof![10 => 0usize..200, 3 => 200usize..1500, 1 => 1500usize..20_000]
}

fn operation_strategy() -> impl Strategy<Value = Operation> {
    prop_oneof![
        40 => (0..TREE_NAMES.len(), key_strategy(), value_bytes_strategy(), any::<u8>())
            .prop_map(|(tree, key, value_bytes, fill)| Operation::Put { tree, key, value_bytes, fill }),
        15 => (0..TREE_NAMES.len(), key_strategy()).prop_map(|(tree, key)| Operation::Delete { tree, key }),
        5 => (0..TREE_NAMES.len(), key_strategy(), key_strategy(), any::<bool>())
            .prop_map(|(tree, start, end, backward)| Operation::Range { tree, start, end, backward }),
        1 => (0..TREE_NAMES.len()).prop_map(|tree| Operation::DeleteTree { tree }),
        6 => Just(Operation::Commit),
        2 => Just(Operation::Abort),
        2 => Just(Operation::TakeSnapshot),
        2 => Just(Operation::CheckSnapshots),
        1 => Just(Operation::DropSnapshot),
        1 => Just(Operation::Reopen),
    ]
}

fn value_of(length: usize, fill: u8) -> Vec<u8> {
    (0..length)
        .map(|index| fill.wrapping_add(index as u8))
        .collect()
}

fn options() -> Options {
    Options {
        maximum_size_bytes: CAPACITY_BYTES as u64,
        sync_mode: SyncMode::Full,
        ..Options::default()
    }
}

fn check_snapshot(snapshot: &ReadTransaction, model: &Model) {
    let names: Vec<String> = model.keys().map(|name| name.to_string()).collect();
    assert_eq!(snapshot.tree_names().expect("tree_names succeeds"), names);
    for (name, entries) in model {
        let tree = snapshot
            .open_tree(name)
            .expect("open_tree finds a value")
            .expect("the value exists");
        assert_eq!(tree.len(), entries.len() as u64);
        let stored: Vec<(Vec<u8>, Vec<u8>)> = tree
            .range(Bound::Unbounded, Bound::Unbounded, Direction::Forward)
            .expect("range succeeds")
            .map(|entry| {
                let (key, value) = entry.expect("`entry` holds a value");
                (key.to_vec(), value.to_vec())
            })
            .collect();
        let expected: Vec<(Vec<u8>, Vec<u8>)> = entries
            .iter()
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        assert_eq!(stored, expected, "tree {name}");
    }
}

fn run(operations: &[Operation]) {
    let mut io = SimulatedIo::new(CAPACITY_BYTES, 1);
    let mut database =
        Database::open_with_io(Box::new(io.clone()), options()).expect("open_with_io succeeds");
    let mut committed: Model = BTreeMap::new();
    let mut pending: Model = BTreeMap::new();
    let mut write = None;
    let mut snapshots: Vec<(ReadTransaction, Model)> = Vec::new();
    for operation in operations {
        match operation {
            Operation::Put {
                tree,
                key,
                value_bytes,
                fill,
            } => {
                let write = write
                    .get_or_insert_with(|| database.begin_write().expect("begin_write succeeds"));
                let value = value_of(*value_bytes, *fill);
                let name = TREE_NAMES[*tree];
                let handle = write.create_tree(name).expect("create_tree succeeds");
                handle.put(key, &value).expect("put succeeds");
                assert_eq!(
                    handle
                        .get(key)
                        .expect("get finds a value")
                        .expect("the value exists")
                        .as_ref(),
                    value.as_slice()
                );
                pending.entry(name).or_default().insert(key.clone(), value);
            }
            Operation::Delete { tree, key } => {
                let write = write
                    .get_or_insert_with(|| database.begin_write().expect("begin_write succeeds"));
                let name = TREE_NAMES[*tree];
                let expected = pending
                    .get_mut(name)
                    .and_then(|entries| entries.remove(key))
                    .is_some();
                let deleted = match write.open_tree(name).expect("open_tree finds a value") {
                    Some(handle) => handle.delete(key).expect("delete succeeds"),
                    None => false,
                };
                assert_eq!(deleted, expected);
            }
            Operation::Range {
                tree,
                start,
                end,
                backward,
            } => {
                let write = write
                    .get_or_insert_with(|| database.begin_write().expect("begin_write succeeds"));
                let name = TREE_NAMES[*tree];
                let direction = if *backward {
                    Direction::Backward
                } else {
                    Direction::Forward
                };
                let bounds = (
                    Bound::Included(start.as_slice()),
                    Bound::Excluded(end.as_slice()),
                );
                let mut expected: Vec<Vec<u8>> = match (pending.get(name), start <= end) {
                    (Some(entries), true) => entries
                        .range::<[u8], _>(bounds)
                        .map(|(key, _)| key.clone())
                        .collect(),
                    _ => Vec::new(),
                };
                if *backward {
                    expected.reverse();
                }
                let found: Vec<Vec<u8>> =
                    match write.open_tree(name).expect("open_tree finds a value") {
                        Some(handle) if start <= end => handle
                            .range(bounds.0, bounds.1, direction)
                            .expect("range succeeds")
                            .map(|entry| entry.expect("`entry` holds a value").0)
                            .collect(),
                        _ => Vec::new(),
                    };
                assert_eq!(found, expected);
            }
            Operation::DeleteTree { tree } => {
                let write = write
                    .get_or_insert_with(|| database.begin_write().expect("begin_write succeeds"));
                let name = TREE_NAMES[*tree];
                assert_eq!(
                    write.delete_tree(name).expect("delete_tree succeeds"),
                    pending.remove(name).is_some()
                );
            }
            Operation::Commit => {
                if let Some(write) = write.take() {
                    write.commit().expect("commit succeeds");
                    committed = pending.clone();
                }
            }
            Operation::Abort => {
                if let Some(write) = write.take() {
                    write.abort();
                    pending = committed.clone();
                }
            }
            Operation::TakeSnapshot => snapshots.push((database.begin_read(), committed.clone())),
            Operation::CheckSnapshots => {
                for (snapshot, model) in &snapshots {
                    check_snapshot(snapshot, model);
                }
            }
            Operation::DropSnapshot => {
                if !snapshots.is_empty() {
                    snapshots.remove(0);
                }
            }
            Operation::Reopen => {
                drop(write.take());
                pending = committed.clone();
                snapshots.clear();
                database
                    .check_integrity()
                    .expect("check_integrity succeeds");
                drop(database);
                io = SimulatedIo::from_image(&io.written_image(), CAPACITY_BYTES, 1);
                database = Database::open_with_io(Box::new(io.clone()), options())
                    .expect("open_with_io succeeds");
                check_snapshot(&database.begin_read(), &committed);
            }
        }
    }
    if let Some(write) = write.take() {
        write.commit().expect("commit succeeds");
        committed = pending.clone();
    }
    for (snapshot, model) in &snapshots {
        check_snapshot(snapshot, model);
    }
    snapshots.clear();
    check_snapshot(&database.begin_read(), &committed);
    database
        .check_integrity()
        .expect("check_integrity succeeds");
}

fn environment_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

#[test]
fn random_operation_sequences_match_a_btreemap_model() {
    let cases = environment_number("STORAGE_PROPTEST_CASES", 24) as u32;
    let seed = environment_number("STORAGE_PROPTEST_SEED", 0x5eed_0001);
    println!("model test: {cases} cases, seed {seed} (STORAGE_PROPTEST_SEED)");
    let config = Config {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    runner
        .run(
            &proptest::collection::vec(operation_strategy(), 1..400),
            |operations| {
                run(&operations);
                Ok(())
            },
        )
        .expect("run succeeds");
}
