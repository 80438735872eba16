//! Write-tree handles remember the leaf they last inserted into; that shortcut must never
//! change what the tree holds. Long-lived handles (two on the same tree, one on another) put
//! ascending runs and random keys, overwrite with values that grow past the leaf or into
//! overflow pages, delete, get, and see the tree dropped under them; every get and the final
//! contents must equal a `BTreeMap` model, before and after commit, and the integrity check
//! must pass. Seed: `LEAF_CACHE_SEED` (default fixed, printed); cases: `LEAF_CACHE_CASES`.
// A test file is a test module: its scenario functions read top to bottom as one story, so the
// 70-line limit of the engine's own code does not apply here.
#![allow(clippy::too_many_lines)]

use std::collections::BTreeMap;
use std::ops::Bound;

use storage_engine::io::SimulatedIo;
use storage_engine::{Database, Direction, Options, SyncMode, WriteTree};

const DEFAULT_SEED: u64 = 0x1EAF_CAC4;
const DEFAULT_CASES: u64 = 6;
const OPERATIONS_PER_CASE: usize = 6_000;
const CAPACITY_BYTES: usize = 64 << 20;
const TREE_NAMES: [&str; 2] = ["words", "other"];

fn seed() -> u64 {
    let seed = std::env::var("LEAF_CACHE_SEED")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(DEFAULT_SEED);
    println!("seed: {seed}");
    seed
}

fn cases() -> u64 {
    std::env::var("LEAF_CACHE_CASES")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(DEFAULT_CASES)
}

/// xorshift64*: small, deterministic.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound
    }

    fn key(&mut self) -> Vec<u8> {
        format!("w{:03}\u{ff}{:05}", self.below(60), self.below(3_000)).into_bytes()
    }

    fn value(&mut self) -> Vec<u8> {
        let length = match self.below(40) {
            0 => 1_500 + self.below(6_000),
            1..=4 => 200 + self.below(900),
            _ => self.below(40),
        };
        let fill = self.next() as u8;
        (0..length)
            .map(|index| fill.wrapping_add(index as u8))
            .collect()
    }
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn contents(tree: &WriteTree<'_>) -> Model {
    tree.range(Bound::Unbounded, Bound::Unbounded, Direction::Forward)
        .expect("range reads")
        .map(|entry| {
            let (key, value) = entry.expect("entry reads");
            (key, value.into_owned())
        })
        .collect()
}

fn run_case(random: &mut Random, case: u64) {
    let io = SimulatedIo::new(CAPACITY_BYTES, 1);
    let options = Options {
        maximum_size_bytes: CAPACITY_BYTES as u64,
        sync_mode: SyncMode::None,
        ..Options::default()
    };
    let database = Database::open_with_io(Box::new(io), options).expect("database opens");
    let mut models: [Model; 2] = [Model::new(), Model::new()];
    let write = database.begin_write().expect("write begins");
    let handles = [
        write.create_tree(TREE_NAMES[0]).expect("tree opens"),
        write.create_tree(TREE_NAMES[0]).expect("tree opens"),
        write.create_tree(TREE_NAMES[1]).expect("tree opens"),
    ];
    let tree_of = [0, 0, 1];
    let mut run_key: Option<(Vec<u8>, u32)> = None;
    for step in 0..OPERATIONS_PER_CASE {
        let handle = random.below(3) as usize;
        let model = &mut models[tree_of[handle]];
        match random.below(100) {
            0..=44 => {
                // An ascending run of keys under one prefix, as a word's positions.
                let (prefix, next) = match run_key.take() {
                    Some(run) if random.below(30) != 0 => run,
                    _ => (random.key(), 0),
                };
                let mut key = prefix.clone();
                key.extend_from_slice(&next.to_be_bytes());
                let value = random.value();
                handles[handle].put(&key, &value).expect("put succeeds");
                model.insert(key, value);
                run_key = Some((prefix, next + 1 + random.below(3) as u32));
            }
            45..=64 => {
                let key = match model
                    .keys()
                    .nth(random.below(model.len() as u64 + 1) as usize)
                {
                    Some(existing) if random.below(2) == 0 => existing.clone(),
                    _ => random.key(),
                };
                let value = random.value();
                handles[handle].put(&key, &value).expect("put succeeds");
                model.insert(key, value);
            }
            65..=79 => {
                let key = match model
                    .keys()
                    .nth(random.below(model.len() as u64 + 1) as usize)
                {
                    Some(existing) => existing.clone(),
                    None => random.key(),
                };
                let removed = handles[handle].delete(&key).expect("delete succeeds");
                assert_eq!(
                    removed,
                    model.remove(&key).is_some(),
                    "case {case} step {step}"
                );
            }
            80..=98 => {
                let key = match model
                    .keys()
                    .nth(random.below(model.len() as u64 + 1) as usize)
                {
                    Some(existing) if random.below(3) != 0 => existing.clone(),
                    _ => random.key(),
                };
                let stored = handles[handle].get(&key).expect("get succeeds");
                assert_eq!(
                    stored.as_deref(),
                    model.get(&key).map(Vec::as_slice),
                    "case {case} step {step}"
                );
            }
            _ => {
                if random.below(8) == 0 {
                    write
                        .delete_tree(TREE_NAMES[tree_of[handle]])
                        .expect("delete_tree succeeds");
                    model.clear();
                }
            }
        }
    }
    for (handle, tree) in [(0, 0), (2, 1)] {
        assert_eq!(contents(&handles[handle]), models[tree], "case {case}");
        assert_eq!(
            handles[handle].len().expect("len reads"),
            models[tree].len() as u64
        );
    }
    drop(handles);
    write.commit().expect("commit succeeds");
    let read = database.begin_read();
    for (name, model) in TREE_NAMES.iter().zip(&models) {
        let stored: Model = match read.open_tree(name).expect("tree opens") {
            Some(tree) => tree
                .range(Bound::Unbounded, Bound::Unbounded, Direction::Forward)
                .expect("range reads")
                .map(|entry| {
                    let (key, value) = entry.expect("entry reads");
                    (key.to_vec(), value.to_vec())
                })
                .collect(),
            None => Model::new(),
        };
        assert_eq!(&stored, model, "case {case} after commit");
    }
    drop(read);
    database
        .check_integrity()
        .expect("the committed trees pass the integrity check");
}

#[test]
fn cached_leaves_give_what_searches_from_the_root_give() {
    let mut random = Random(seed() | 1);
    for case in 0..cases() {
        run_case(&mut random, case);
    }
}
