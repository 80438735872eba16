//! Corruption tests: a flipped byte in any page gives `Error::Corrupted` (or, in a free
//! page, changes nothing) — never a panic or a wrong answer; a damaged commit slot falls
//! back to the older slot's state.

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::ops::Bound;

use storage_engine::io::SimulatedIo;
use storage_engine::{Database, Direction, Error, Options, Result};

const CAPACITY_BYTES: usize = 8 << 20;
const PAGE_BYTES: usize = 4096;
type Model = BTreeMap<String, Vec<(Vec<u8>, Vec<u8>)>>;

fn options() -> Options {
    Options {
        maximum_size_bytes: CAPACITY_BYTES as u64,
        ..Options::default()
    }
}

fn read_all(database: &Database) -> Result<Model> {
    let read = database.begin_read();
    let mut model = Model::new();
    for name in read.tree_names()? {
        let tree = read.open_tree(&name)?.expect("listed trees exist");
        let mut entries = Vec::new();
        for entry in tree.range(Bound::Unbounded, Bound::Unbounded, Direction::Forward)? {
            let (key, value) = entry?;
            entries.push((key.to_vec(), value.to_vec()));
        }
        let backward = tree
            .range(Bound::Unbounded, Bound::Unbounded, Direction::Backward)?
            .count();
        assert_eq!(backward, entries.len());
        for (key, value) in &entries {
            assert_eq!(tree.get(key)?, Some(value.as_slice()));
        }
        model.insert(name, entries);
    }
    Ok(model)
}

fn open_image(image: &[u8]) -> Result<Database> {
    Database::open_with_io(
        Box::new(SimulatedIo::from_image(image, CAPACITY_BYTES, 0)),
        options(),
    )
}

/// Builds a file with two commits; returns (image, state after the first, after the second).
fn build() -> (Vec<u8>, Model, Model) {
    let io = SimulatedIo::new(CAPACITY_BYTES, 3);
    let database =
        Database::open_with_io(Box::new(io.clone()), options()).expect("open_with_io succeeds");
    let write = database.begin_write().expect("begin_write succeeds");
    for tree_index in 0..3 {
        let tree = write
            .create_tree(&format!("tree{tree_index}"))
            .expect("create_tree succeeds");
        for index in 0..400u32 {
            let value = vec![(index % 256) as u8; (index as usize * 7) % 300];
            tree.put(format!("key{index:05}").as_bytes(), &value)
                .expect("put succeeds");
        }
        tree.put(b"overflow", &vec![9u8; 20_000])
            .expect("put succeeds");
    }
    write.commit().expect("commit succeeds");
    let first = read_all(&database).expect("read_all succeeds");
    let write = database.begin_write().expect("begin_write succeeds");
    let tree = write
        .open_tree("tree1")
        .expect("open_tree finds a value")
        .expect("the value exists");
    for index in (0..400u32).step_by(3) {
        tree.delete(format!("key{index:05}").as_bytes())
            .expect("delete succeeds");
    }
    tree.put(b"overflow", &vec![5u8; 9000])
        .expect("put succeeds");
    write.commit().expect("commit succeeds");
    let second = read_all(&database).expect("read_all succeeds");
    assert_ne!(first, second);
    let used_bytes = database.stats().allocated_pages as usize * PAGE_BYTES;
    drop(database);
    let mut image = io.written_image();
    image.truncate(used_bytes);
    (image, first, second)
}

fn outcome(image: &[u8]) -> Result<Model> {
    let database = open_image(image)?;
    let model = read_all(&database)?;
    database.check_integrity()?;
    Ok(model)
}

#[test]
fn a_flipped_byte_in_any_page_is_detected_or_harmless() {
    let (image, _, expected) = build();
    let pages = image.len() / PAGE_BYTES;
    let mut detected = 0;
    for page in 2..pages {
        for offset in [0usize, 8, 17, 2049, PAGE_BYTES - 1] {
            let mut damaged = image.clone();
            damaged[page * PAGE_BYTES + offset] ^= 0x41;
            match outcome(&damaged) {
                Ok(model) => {
                    assert_eq!(model, expected, "page {page} offset {offset}: wrong answer")
                }
                Err(Error::Corrupted { .. }) => detected += 1,
                Err(other) => panic!("page {page} offset {offset}: unexpected error {other}"),
            }
        }
    }
    println!("{detected} damaged images detected as corrupted across {pages} pages");
    assert!(detected > 0);
}

#[test]
fn a_damaged_newest_slot_falls_back_to_the_older_commit() {
    let (image, first, second) = build();
    assert_eq!(outcome(&image).expect("outcome succeeds"), second);
    // The second commit (transaction 2) lives in slot 0; the first in slot 1.
    for offset in [0usize, 9, 16, 30, 60, 87] {
        let mut damaged = image.clone();
        damaged[offset] ^= 0x08;
        assert_eq!(
            outcome(&damaged).expect("outcome succeeds"),
            first,
            "newest slot damaged at {offset}"
        );
        let mut damaged = image.clone();
        damaged[PAGE_BYTES + offset] ^= 0x08;
        assert_eq!(
            outcome(&damaged).expect("outcome succeeds"),
            second,
            "older slot damaged at {offset}"
        );
        let mut damaged = image.clone();
        damaged[offset] ^= 0x08;
        damaged[PAGE_BYTES + offset] ^= 0x08;
        assert!(matches!(
            outcome(&damaged),
            Err(Error::Corrupted { page: 0, .. })
        ));
    }
}
