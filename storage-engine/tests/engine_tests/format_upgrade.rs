//! A file of format version 2 (wide leaf cells), written by the build before compact leaves
//! (`tests/fixtures/format-2.store`, 65 pages of 4 KiB), opens, reads, and turns version 3
//! as it is written: leaves changed by puts and deletes, by a merge writer and by a repack
//! are written compact, the untouched ones stay wide, and both read alike after reopening.
//!
//! The fixture holds two trees, written in two commits by that build:
//! - `words`: `key{i:08}` → [`fixture_value`] for `i` in `0..3000` not divisible by 3 (six
//!   values in overflow runs);
//! - `pairs`: `i` (u32 big-endian) → `[1, 2, 3, 4]` for `i` in `0..800`.

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;

use storage_engine::{Database, Options};

use crate::common::state::{Model, read_state};

type Entries = BTreeMap<Vec<u8>, Vec<u8>>;

/// Bytes of one page of the fixture.
const FIXTURE_PAGE_BYTES: usize = 4096;
/// Where a commit slot keeps its format version (after the 8 magic bytes).
const SLOT_VERSION_OFFSET: usize = 8;

fn fixture_value(index: u32) -> Vec<u8> {
    if index % 500 == 7 {
        vec![(index % 251) as u8; 3_000 + index as usize]
    } else {
        format!("value {index}").into_bytes()
    }
}

fn fixture_entries() -> (Entries, Entries) {
    let words = (0..3_000_u32)
        .filter(|index| index % 3 != 0)
        .map(|index| (format!("key{index:08}").into_bytes(), fixture_value(index)))
        .collect();
    let pairs = (0..800_u32)
        .map(|index| (index.to_be_bytes().to_vec(), vec![1, 2, 3, 4]))
        .collect();
    (words, pairs)
}

/// Checks that the last commit holds exactly the trees `words` and `pairs`, with these
/// entries.
fn assert_holds(database: &Database, words: &Entries, pairs: &Entries) {
    let expected = Model::from([
        ("words".to_owned(), words.clone()),
        ("pairs".to_owned(), pairs.clone()),
    ]);
    assert_eq!(read_state(database), expected);
}

/// Pages of tree `name`'s branches and leaves in the last commit.
fn tree_pages(database: &Database, name: &str) -> u64 {
    let read = database.begin_read();
    let tree = read
        .open_tree(name)
        .expect("open_tree reads")
        .expect("the tree exists");
    tree.fill().expect("fill reads").pages
}

/// The format versions of the two commit slots (pages 0 and 1).
fn slot_versions(path: &std::path::Path) -> [u32; 2] {
    let bytes = std::fs::read(path).expect("the file reads");
    [0, 1].map(|slot| {
        let at = slot * FIXTURE_PAGE_BYTES + SLOT_VERSION_OFFSET;
        u32::from_le_bytes(bytes[at..at + 4].try_into().expect("four bytes"))
    })
}

#[test]
fn a_version_2_file_reads_and_turns_version_3_as_it_is_written() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let path = directory.path().join("format-2.store");
    let fixture =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/format-2.store");
    std::fs::copy(&fixture, &path).expect("the fixture copies");
    assert_eq!(slot_versions(&path), [2, 2], "the fixture is of version 2");
    let options = || Options {
        page_bytes: FIXTURE_PAGE_BYTES,
        create: false,
        ..Options::default()
    };
    let (mut words, mut pairs) = fixture_entries();
    {
        let database = Database::open(&path, options()).expect("a version 2 file opens");
        database.check_integrity().expect("the fixture is sound");
        assert_holds(&database, &words, &pairs);

        // Puts and deletes through the editor: the leaves they reach are converted.
        let write = database.begin_write().expect("begin_write succeeds");
        let tree = write.create_tree("words").expect("the tree opens");
        for index in (1..3_000_u32).step_by(7) {
            let key = format!("key{index:08}").into_bytes();
            if index % 2 == 0 {
                tree.delete(&key).expect("delete succeeds");
                words.remove(&key);
            } else {
                let value = format!("new {index}").into_bytes();
                tree.put(&key, &value).expect("put succeeds");
                words.insert(key, value);
            }
        }
        // The merge writer copies the untouched entries of the leaves it rewrites.
        let pairs_tree = write.create_tree("pairs").expect("the tree opens");
        let mut merge = pairs_tree.merge_writer();
        for index in (0..800_u32).step_by(50) {
            let key = index.to_be_bytes().to_vec();
            assert_eq!(
                merge.seek(&key).expect("seek succeeds"),
                Some(&[1, 2, 3, 4][..])
            );
            merge.put(&[9]).expect("put succeeds");
            pairs.insert(key, vec![9]);
        }
        merge.finish().expect("finish succeeds");
        write.commit().expect("commit succeeds");
        database.check_integrity().expect("a mixed file is sound");
        assert!(
            slot_versions(&path).contains(&3),
            "the commit wrote version 3"
        );
        assert_holds(&database, &words, &pairs);
    }
    let database = Database::open(&path, options()).expect("the written file opens");
    database
        .check_integrity()
        .expect("the reopened file is sound");
    assert_holds(&database, &words, &pairs);

    // A full repack writes every leaf of `words` compact: the same entries in fewer pages.
    let pages_before = tree_pages(&database, "words");
    let write = database.begin_write().expect("begin_write succeeds");
    write
        .repack_tree("words", 100, &AtomicBool::new(false))
        .expect("repack succeeds");
    write.commit().expect("commit succeeds");
    let pages_after = tree_pages(&database, "words");
    assert!(
        pages_after < pages_before,
        "{pages_after} pages, not fewer than {pages_before}"
    );
    database
        .check_integrity()
        .expect("the repacked file is sound");
    assert_holds(&database, &words, &pairs);
}
