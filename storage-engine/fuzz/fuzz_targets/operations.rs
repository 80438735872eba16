//! Fuzz target: an operation sequence decoded from the input runs against the page store
//! (on the simulated backend) and a `BTreeMap` model; every read must agree, commits and
//! aborts must behave, a reopened file must hold the committed state and pass the
//! integrity check. Run: `cargo +nightly fuzz run operations` in `storage-engine/`.
#![no_main]

use std::collections::BTreeMap;
use std::ops::Bound;

use libfuzzer_sys::fuzz_target;
use storage_engine::io::SimulatedIo;
use storage_engine::{Database, Direction, Options};

const CAPACITY_BYTES: usize = 8 << 20;
type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn options() -> Options {
    Options { maximum_size_bytes: CAPACITY_BYTES as u64, ..Options::default() }
}

/// Reads the input as a stream of small integers.
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn byte(&mut self) -> Option<u8> {
        let (first, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(*first)
    }

    fn key(&mut self) -> Option<Vec<u8>> {
        let length = self.byte()? % 24;
        let seed = self.byte()?;
        Some((0..length).map(|index| seed.wrapping_add(index / 4)).collect())
    }
}

fn contents(database: &Database) -> Model {
    let read = database.begin_read();
    let Some(tree) = read.open_tree("fuzz").expect("catalog reads") else {
        return Model::new();
    };
    tree.range(Bound::Unbounded, Bound::Unbounded, Direction::Forward)
        .expect("range")
        .map(|entry| {
            let (key, value) = entry.expect("entry");
            (key.to_vec(), value.to_vec())
        })
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    let mut io = SimulatedIo::new(CAPACITY_BYTES, 0);
    let mut database = Database::open_with_io(Box::new(io.clone()), options()).expect("opens");
    let mut committed = Model::new();
    let mut pending = Model::new();
    let mut write = None;
    while let Some(opcode) = input.byte() {
        match opcode % 8 {
            0..=2 => {
                let Some(key) = input.key() else { break };
                let Some(length_byte) = input.byte() else { break };
                let length = usize::from(length_byte) * usize::from(length_byte % 7 + 1) * 4;
                let value = vec![length_byte; length];
                let write = write.get_or_insert_with(|| database.begin_write().expect("begin"));
                write.create_tree("fuzz").expect("tree").put(&key, &value).expect("put");
                pending.insert(key, value);
            }
            3 => {
                let Some(key) = input.key() else { break };
                let write = write.get_or_insert_with(|| database.begin_write().expect("begin"));
                let deleted = write.create_tree("fuzz").expect("tree").delete(&key).expect("delete");
                assert_eq!(deleted, pending.remove(&key).is_some());
            }
            4 => {
                let (Some(start), Some(backward)) = (input.key(), input.byte()) else { break };
                let write = write.get_or_insert_with(|| database.begin_write().expect("begin"));
                let direction = if backward % 2 == 0 { Direction::Forward } else { Direction::Backward };
                let tree = write.create_tree("fuzz").expect("tree");
                let found: Vec<Vec<u8>> = tree
                    .range(Bound::Included(&start), Bound::Unbounded, direction)
                    .expect("range")
                    .map(|entry| entry.expect("entry").0)
                    .collect();
                let mut expected: Vec<Vec<u8>> = pending
                    .range::<Vec<u8>, _>((Bound::Included(&start), Bound::Unbounded))
                    .map(|(key, _)| key.clone())
                    .collect();
                if direction == Direction::Backward {
                    expected.reverse();
                }
                assert_eq!(found, expected);
            }
            5 => {
                if let Some(write) = write.take() {
                    write.commit().expect("commit");
                    committed = pending.clone();
                }
            }
            6 => {
                if let Some(write) = write.take() {
                    write.abort();
                    pending = committed.clone();
                }
            }
            _ => {
                drop(write.take());
                pending = committed.clone();
                database.check_integrity().expect("integrity");
                drop(database);
                io = SimulatedIo::from_image(&io.written_image(), CAPACITY_BYTES, 0);
                database = Database::open_with_io(Box::new(io.clone()), options()).expect("reopens");
                assert_eq!(contents(&database), committed);
            }
        }
    }
    if let Some(write) = write.take() {
        write.commit().expect("commit");
        committed = pending;
    }
    assert_eq!(contents(&database), committed);
    database.check_integrity().expect("integrity");
});
