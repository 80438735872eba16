//! Batching never changes what a shard stores: the same operations applied in one batch, one
//! operation per batch, or in batches and chunks of random sizes leave every tree (documents,
//! external ids, fields, facets, geo points and the whole inverted index) byte for byte equal,
//! with replacements, updates, deletions, re-additions and `DeleteAll` mixed in. The one
//! exception is where `word_position_chunks` cuts a word's documents into chunks, which
//! depends on the batches: that tree is compared document by document (each document's bytes
//! equal). Analysing chunks ahead on another thread (`PreparedBatch::analyze_ahead_with`),
//! with documents sent partly as text, stores the same bytes again, and fails on a document
//! that does not parse as analysing in place does.
//!
//! The random operations use a fixed seed (printed; `SHARD_BATCHING_SEED` replaces it,
//! `SHARD_BATCHING_CASES` sets the number of cases).

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]

use crate::common;

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use shards::analysis::TextSettings;
use shards::index::position_chunks::{ChunkDocuments, split_chunk_key};
use shards::shard::{AHEAD_OPERATIONS_MIN, AheadJob, AheadRunner, Operation, Shard};
use storage_engine::Direction;

const DEFAULT_SEED: u64 = 0xBA7C_4ED5;
const DEFAULT_CASES: u64 = 3;
/// Operations of one case.
const OPERATIONS_PER_CASE: usize = 400;
/// Distinct external ids, few enough that updates and deletions hit live documents.
const EXTERNAL_IDS: u64 = 90;
/// The `meta` record that names the last applied batch (it differs by design).
const APPLIED_BATCH_RECORD: &[u8] = b"applied_batch";
const WORDS: [&str; 20] = [
    "quick",
    "quack",
    "brown",
    "fox",
    "jumps",
    "over",
    "lazy",
    "dog",
    "wonder",
    "ponder",
    "the",
    "hello",
    "help",
    "helicopter",
    "sun",
    "flower",
    "héllo",
    "東京",
    "a",
    "ab",
];

fn seed() -> u64 {
    let seed = std::env::var("SHARD_BATCHING_SEED")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(DEFAULT_SEED);
    println!("seed: {seed}");
    seed
}

fn cases() -> u64 {
    std::env::var("SHARD_BATCHING_CASES")
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

    /// Up to 40 words, so some words reach the far position buckets.
    fn text(&mut self) -> String {
        let longest = if self.below(8) == 0 { 40 } else { 6 };
        let count = 1 + self.below(longest);
        (0..count)
            .map(|_| WORDS[self.below(WORDS.len() as u64) as usize])
            .collect::<Vec<_>>()
            .join(match self.below(4) {
                0 => ". ",
                1 => ", ",
                _ => " ",
            })
    }

    fn document(&mut self, id: u64) -> Map<String, Value> {
        let mut document = Map::new();
        document.insert("id".into(), json!(id));
        document.insert("name".into(), json!(self.text()));
        if self.below(2) == 0 {
            document.insert(
                "summary".into(),
                json!([self.text(), {"inner": self.text()}]),
            );
        }
        if self.below(3) != 0 {
            document.insert("year".into(), json!(2000 + self.below(25)));
        }
        if self.below(4) == 0 {
            document.insert("tag".into(), json!(WORDS[self.below(5) as usize]));
        }
        if self.below(6) == 0 {
            document.insert(
                "_geo".into(),
                json!({"lat": self.below(90), "lng": self.below(180)}),
            );
        }
        document
    }

    fn operations(&mut self) -> Vec<Operation> {
        let mut live: BTreeMap<u64, Map<String, Value>> = BTreeMap::new();
        let mut operations = Vec::with_capacity(OPERATIONS_PER_CASE);
        for index in 0..OPERATIONS_PER_CASE {
            let id = self.below(EXTERNAL_IDS);
            let operation = match self.below(20) {
                0 if index == OPERATIONS_PER_CASE / 2 => {
                    live.clear();
                    Operation::DeleteAll
                }
                0..=3 => {
                    live.remove(&id);
                    Operation::Delete {
                        external_id: id.to_string(),
                    }
                }
                4..=6 if live.contains_key(&id) => {
                    // An update, folded into a whole document as the caller does.
                    let mut document = live[&id].clone();
                    document.insert("name".into(), json!(self.text()));
                    live.insert(id, document.clone());
                    Operation::Replace {
                        external_id: id.to_string(),
                        document,
                    }
                }
                _ => {
                    let document = self.document(id);
                    live.insert(id, document.clone());
                    Operation::Replace {
                        external_id: id.to_string(),
                        document,
                    }
                }
            };
            operations.push(operation);
        }
        operations
    }
}

fn configured(directory: &tempfile::TempDir, name: &str) -> Shard {
    let shard = common::open_shard(directory, name);
    shard
        .set_facet_settings(
            &json!(["year", "tag", "_geo"]),
            &["year".to_owned(), "name".to_owned()],
        )
        .expect("facet settings apply");
    shard
        .set_text_settings(TextSettings {
            searchable_attributes: Some(vec!["name".to_owned(), "summary".to_owned()]),
            stop_words: ["the".to_owned()].into(),
            ..TextSettings::default()
        })
        .expect("text settings apply");
    shard
}

/// Tree name → its entries, raw.
type Dump = BTreeMap<String, Vec<(Vec<u8>, Vec<u8>)>>;

/// Every non-empty tree's entries, raw; `meta` without the applied batch uid.
fn dump(shard: &Shard) -> Dump {
    let read = shard.database().begin_read();
    let mut trees = BTreeMap::new();
    for name in read.tree_names().expect("tree names read") {
        let tree = read
            .open_tree(&name)
            .expect("a listed tree opens")
            .expect("a listed tree exists");
        let entries: Vec<(Vec<u8>, Vec<u8>)> = tree
            .range(Bound::Unbounded, Bound::Unbounded, Direction::Forward)
            .expect("range reads")
            .map(|entry| {
                let (key, value) = entry.expect("entry reads");
                (key.to_vec(), value.to_vec())
            })
            .filter(|(key, _)| !(name == "meta" && key == APPLIED_BATCH_RECORD))
            .collect();
        let entries = if name == "word_position_chunks" {
            per_document(&entries)
        } else {
            entries
        };
        if !entries.is_empty() {
            trees.insert(name, entries);
        }
    }
    trees
}

/// `word_position_chunks` entries one per (word, document): word ‖ `0xFF` ‖ document → its
/// encoded occurrences. How a word's documents are cut into chunks depends on the batches they came
/// in; what the chunks hold does not.
fn per_document(chunks: &[(Vec<u8>, Vec<u8>)]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut entries = Vec::new();
    for (key, value) in chunks {
        let (word, first) = split_chunk_key(key).expect("a chunk key");
        for entry in ChunkDocuments::new(first, value) {
            let (document, occurrences) = entry.expect("the chunk decodes");
            let mut key = word.to_vec();
            key.push(0xFF);
            key.extend_from_slice(&document.to_be_bytes());
            entries.push((key, occurrences.to_vec()));
        }
    }
    entries
}

/// Applies `operations` cut into batches of the sizes `next_size` gives; each batch goes in
/// chunks of up to `chunk` operations.
fn apply_in_batches(
    shard: &Shard,
    operations: &[Operation],
    next_size: impl FnMut() -> usize,
    chunk: usize,
) {
    apply_batches(shard, operations, None, next_size, || chunk);
}

/// Runs each job handed to it on a new thread, as the server's analysis thread would.
fn thread_runner() -> AheadRunner {
    Arc::new(|job: AheadJob| {
        std::thread::spawn(job);
    })
}

/// `operations` with every other written document sent as text, as a payload's documents
/// reach a shard.
fn partly_as_text(operations: &[Operation]) -> Vec<Operation> {
    operations
        .iter()
        .enumerate()
        .map(|(index, operation)| match operation {
            Operation::Replace {
                external_id,
                document,
            } if index % 2 == 0 => Operation::ReplaceText {
                external_id: external_id.clone(),
                text: serde_json::to_vec(document)
                    .expect("a document serializes")
                    .into_boxed_slice(),
            },
            other => other.clone(),
        })
        .collect()
}

/// Applies `operations` in batches of the sizes `next_size` gives, in chunks of `next_chunk`
/// operations, each analysed ahead by `runner` (if any) when it is long enough.
fn apply_batches(
    shard: &Shard,
    operations: &[Operation],
    runner: Option<&AheadRunner>,
    mut next_size: impl FnMut() -> usize,
    mut next_chunk: impl FnMut() -> usize,
) {
    let mut rest = operations;
    let mut batch_uid = 1;
    while !rest.is_empty() {
        let size = next_size().clamp(1, rest.len());
        let (batch, after) = rest.split_at(size);
        let mut prepared = shard.prepare(batch_uid).expect("batch prepares");
        if let Some(runner) = runner {
            prepared.analyze_ahead_with(Arc::clone(runner));
        }
        let mut chunks = batch;
        while !chunks.is_empty() {
            let (chunk, later) = chunks.split_at(next_chunk().clamp(1, chunks.len()));
            prepared.apply_chunk(chunk.to_vec()).expect("chunk applies");
            chunks = later;
        }
        prepared.commit().expect("batch commits");
        rest = after;
        batch_uid += 1;
    }
}

#[test]
fn chunks_analysed_ahead_store_the_trees_of_chunks_analysed_in_place() {
    let mut random = Random(seed() | 1);
    for case in 0..cases() {
        let operations = random.operations();
        let directory = tempfile::tempdir().expect("temporary directory");
        let whole = configured(&directory, "whole.pages");
        apply_in_batches(&whole, &operations, || usize::MAX, usize::MAX);
        let expected = dump(&whole);

        let texts = partly_as_text(&operations);
        let ahead = configured(&directory, "ahead.pages");
        apply_batches(
            &ahead,
            &texts,
            Some(&thread_runner()),
            || usize::MAX,
            || usize::MAX,
        );
        assert_eq!(dump(&ahead), expected, "case {case}: one chunk ahead");

        // A helper that never runs its job leaves every chunk to the batch thread.
        let dropping: AheadRunner = Arc::new(drop);
        let alone = configured(&directory, "alone.pages");
        apply_batches(&alone, &texts, Some(&dropping), || usize::MAX, || 100);
        assert_eq!(dump(&alone), expected, "case {case}: the helper never ran");

        // Chunks long enough to go ahead and short ones that stay, in random batches.
        let mut sizes = Random(random.next() | 1);
        let mixed = configured(&directory, "mixed.pages");
        let mut chunks = Random(random.next() | 1);
        apply_batches(
            &mixed,
            &texts,
            Some(&thread_runner()),
            || 1 + sizes.below(200) as usize,
            || {
                let longest = (2 * AHEAD_OPERATIONS_MIN) as u64;
                1 + chunks.below(longest) as usize
            },
        );
        assert_eq!(dump(&mixed), expected, "case {case}: random chunks ahead");
    }
}

#[test]
fn a_text_that_does_not_parse_fails_its_chunk_analysed_ahead_as_in_place() {
    let mut operations: Vec<Operation> = (0..2 * AHEAD_OPERATIONS_MIN)
        .map(|index| Operation::ReplaceText {
            external_id: index.to_string(),
            text: format!(r#"{{"id":{index},"name":"quick fox {index}"}}"#)
                .into_bytes()
                .into_boxed_slice(),
        })
        .collect();
    operations[AHEAD_OPERATIONS_MIN] = Operation::ReplaceText {
        external_id: "broken".to_owned(),
        text: b"{\"id\": \"broken\", \"name\": [1, }"
            .to_vec()
            .into_boxed_slice(),
    };
    let directory = tempfile::tempdir().expect("temporary directory");
    let mut errors = Vec::new();
    for (name, ahead) in [("in_place.pages", false), ("ahead.pages", true)] {
        let shard = configured(&directory, name);
        let mut prepared = shard.prepare(1).expect("batch prepares");
        if ahead {
            prepared.analyze_ahead_with(thread_runner());
        }
        let error = prepared
            .apply_chunk(operations.clone())
            .expect_err("a broken document fails its chunk");
        drop(prepared);
        assert_eq!(
            shard.read().expect("shard reads").count(),
            0,
            "{name}: nothing stored"
        );
        errors.push(error.to_string());
    }
    assert_eq!(errors[0], errors[1]);
}

#[test]
fn one_batch_one_operation_per_batch_and_random_batches_store_the_same_trees() {
    let mut random = Random(seed() | 1);
    for case in 0..cases() {
        let operations = random.operations();
        let directory = tempfile::tempdir().expect("temporary directory");

        let whole = configured(&directory, "whole.pages");
        apply_in_batches(&whole, &operations, || usize::MAX, usize::MAX);
        let expected = dump(&whole);
        for tree in [
            "documents",
            "word_documents",
            "word_position_chunks",
            "word_pairs",
            "facet_numbers",
        ] {
            assert!(expected.contains_key(tree), "case {case}: {tree} is filled");
        }

        let single = configured(&directory, "single.pages");
        apply_in_batches(&single, &operations, || 1, 1);
        assert_eq!(
            dump(&single),
            expected,
            "case {case}: one operation per batch"
        );

        let mut sizes = Random(random.next() | 1);
        let mixed = configured(&directory, "mixed.pages");
        let chunk = 1 + sizes.below(16) as usize;
        apply_in_batches(&mixed, &operations, || 1 + sizes.below(60) as usize, chunk);
        assert_eq!(dump(&mixed), expected, "case {case}: random batches");
        let report = mixed
            .database()
            .check_integrity()
            .expect("integrity check runs");
        println!("case {case}: {report:?}");

        // Pending changes bounded to nothing: every chunk's changes are written to the trees
        // before the next, all in one transaction.
        let bounded = configured(&directory, "bounded.pages");
        bounded.bound_pending_changes(1);
        apply_in_batches(&bounded, &operations, || usize::MAX, chunk);
        assert_eq!(dump(&bounded), expected, "case {case}: bounded changes");
        bounded
            .database()
            .check_integrity()
            .expect("integrity check runs");

        // Rebuilds after a settings change, with and without the bound, store the same trees.
        let settings = TextSettings {
            searchable_attributes: Some(vec!["summary".to_owned(), "name".to_owned()]),
            stop_words: ["a".to_owned()].into(),
            ..TextSettings::default()
        };
        for shard in [&whole, &bounded] {
            assert!(
                shard
                    .set_text_settings(settings.clone())
                    .expect("text settings apply"),
                "case {case}: the settings change"
            );
        }
        assert_eq!(dump(&bounded), dump(&whole), "case {case}: bounded rebuild");
    }
}

#[test]
fn batches_applied_in_turns_store_the_trees_of_batches_applied_at_once() {
    let mut random = Random(seed() | 1);
    for case in 0..cases() {
        let operations = partly_as_text(&random.operations());
        let directory = tempfile::tempdir().expect("temporary directory");
        let at_once = configured(&directory, "at-once.pages");
        apply_batches(
            &at_once,
            &operations,
            Some(&thread_runner()),
            || usize::MAX,
            || 100,
        );
        let expected = dump(&at_once);

        // The batch thread and its helper both give their CPU back every turn, as the
        // server's indexing and analysis threads do.
        let in_turns: AheadRunner = Arc::new(|job: AheadJob| {
            std::thread::spawn(|| {
                turns::take_turns_on_this_thread();
                job();
            });
        });
        let mut sizes = Random(random.next() | 1);
        let shard = configured(&directory, "in-turns.pages");
        std::thread::scope(|scope| {
            scope.spawn(|| {
                turns::take_turns_on_this_thread();
                apply_batches(
                    &shard,
                    &operations,
                    Some(&in_turns),
                    || 1 + sizes.below(300) as usize,
                    || 100,
                );
            });
        });
        assert_eq!(dump(&shard), expected, "case {case}: applied in turns");
    }
}
