//! Document dictionaries: a shard that reaches `DICTIONARY_TRAINING_DOCUMENTS` documents trains
//! one in that batch's transaction and stores its documents with it; every document reads back
//! exactly as sent (by id, as JSON, in listings) before and after a reopen, the documents take
//! far fewer bytes than lz4 or raw gave them, index rebuilds read them, a compaction stores the
//! documents the sample left out with the dictionary, a grown shard trains a newer one (and a
//! compaction then drops the older), `DeleteAll` drops the dictionary, an id is never
//! reused, and a chunk analysed ahead that trains the dictionary part way stores what one
//! analysed in place stores.

#![allow(clippy::unwrap_used, clippy::too_many_lines)]

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use serde_json::{Map, Value, json};
use shards::analysis::TextSettings;
use shards::filter::{Filter, evaluate};
use shards::shard::codec::{
    self, DICTIONARY_RETRAINING_GROWTH, DICTIONARY_TRAINING_DOCUMENTS, TAG_ZSTD_DICTIONARY,
};
use shards::shard::{
    AHEAD_OPERATIONS_MIN, AheadJob, AheadRunner, ListQuery, Operation, Repack, Shard,
};
use storage_engine::{Direction, Options, SyncMode};

const DOCUMENTS_TREE: &str = "documents";
const DICTIONARIES_TREE: &str = "document_dictionaries";

fn options() -> Options {
    Options {
        sync_mode: SyncMode::None,
        ..Options::default()
    }
}

fn open(path: &Path) -> Shard {
    let shard = Shard::open(&path.join("shard.pages"), options()).expect("open succeeds");
    shard
        .set_text_settings(TextSettings {
            searchable_attributes: Some(vec!["name".to_owned()]),
            ..TextSettings::default()
        })
        .expect("text settings apply");
    shard
}

/// A package-like document; `long` gives it a summary several times longer.
fn document(index: usize, long: bool) -> Map<String, Value> {
    let mut state = (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = |modulo: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % modulo
    };
    let words = [
        "fast",
        "library",
        "python",
        "client",
        "async",
        "toolkit",
        "for",
        "the",
        "data",
        "web",
        "api",
        "parser",
        "simple",
        "plugin",
        "django",
        "test",
        "utilities",
        "machine",
        "learning",
    ];
    let summary_words = if long { 60 } else { 8 };
    let summary: Vec<&str> = (0..summary_words)
        .map(|_| words[next(words.len() as u64) as usize])
        .collect();
    let licenses = ["MIT", "BSD", "Apache 2.0", "GPL"];
    let name = format!(
        "{}-{}{}",
        words[next(19) as usize],
        words[next(19) as usize],
        next(1000)
    );
    let version = format!("{}.{}.{}", next(5), next(20), next(10));
    let (year, rank, license) = (2000 + next(26), next(100_000), licenses[next(4) as usize]);
    let value = json!({
        "id": index,
        "name": name,
        "summary": summary.join(" "),
        "version": version,
        "year": year,
        "rank": rank,
        "license": license,
    });
    match value {
        Value::Object(map) => map,
        _ => unreachable!(),
    }
}

fn apply_range(shard: &Shard, batch: u64, range: std::ops::Range<usize>, long: bool) {
    let operations = range
        .map(|index| Operation::Replace {
            external_id: index.to_string(),
            document: document(index, long),
        })
        .collect();
    shard.apply(batch, operations).expect("batch applies");
}

/// `(key, stored value)` of every entry of `tree`.
fn entries(shard: &Shard, tree: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
    let read = shard.database().begin_read();
    let Some(tree) = read.open_tree(tree).expect("tree opens") else {
        return Vec::new();
    };
    tree.range(
        std::ops::Bound::Unbounded,
        std::ops::Bound::Unbounded,
        Direction::Forward,
    )
    .expect("range")
    .map(|entry| {
        let (key, value) = entry.expect("entry");
        (key.to_vec(), value.to_vec())
    })
    .collect()
}

fn dictionary_ids(shard: &Shard) -> Vec<u32> {
    entries(shard, DICTIONARIES_TREE)
        .iter()
        .map(|(key, _)| {
            u32::from_be_bytes(
                key[..]
                    .try_into()
                    .expect("document keys are 4-byte internal ids"),
            )
        })
        .collect()
}

/// How many documents are stored with dictionary `id`, and with none.
fn stored_forms(shard: &Shard, id: u32) -> (usize, usize) {
    let documents = entries(shard, DOCUMENTS_TREE);
    let with = documents
        .iter()
        .filter(|(_, value)| codec::dictionary_of(value) == Some(id))
        .count();
    let without = documents
        .iter()
        .filter(|(_, value)| value[0] != TAG_ZSTD_DICTIONARY)
        .count();
    (with, without)
}

/// Every document of `0..count` reads back exactly: by external id, as stored JSON, and in a
/// listing of all of them.
fn assert_reads_back(shard: &Shard, count: usize, long: impl Fn(usize) -> bool) {
    let snapshot = shard.read().expect("read succeeds");
    assert_eq!(snapshot.count(), count as u64);
    for index in 0..count {
        let expected = document(index, long(index));
        let found = snapshot
            .document(&index.to_string(), None)
            .expect("document reads")
            .expect("document exists");
        assert_eq!(found, expected);
        assert!(found.keys().eq(expected.keys()), "key order of {index}");
        let id = snapshot
            .internal_id(&index.to_string())
            .expect("id reads")
            .expect("id exists");
        let json = snapshot
            .document_json(id)
            .expect("json reads")
            .expect("exists");
        assert_eq!(json, codec::document_json(&expected));
    }
    let query = ListQuery {
        offset: 0,
        limit: count,
        ..ListQuery::default()
    };
    let (page, total) = snapshot.documents(&query, None).expect("listing reads");
    assert_eq!(total, count as u64);
    assert_eq!(page.len(), count);
    for (_, listed) in page {
        let index = listed["id"]
            .as_u64()
            .expect("every listed document has a numeric id") as usize;
        assert_eq!(listed, document(index, long(index)));
    }
}

#[test]
fn a_shard_trains_a_dictionary_that_shrinks_its_documents_and_survives_reopen() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let threshold = DICTIONARY_TRAINING_DOCUMENTS as usize;
    let total = threshold + 2_000;
    let old_form_bytes: usize = (0..total)
        .map(|index| codec::compress(&codec::document_json(&document(index, false))).len())
        .sum();
    {
        let shard = open(directory.path());
        // Below the threshold: no dictionary, documents in the old forms.
        apply_range(&shard, 1, 0..threshold - 1_000, false);
        assert!(dictionary_ids(&shard).is_empty());
        assert_eq!(stored_forms(&shard, 0), (0, threshold - 1_000));
        // The batch that crosses it trains one, stores its sample (here: every document)
        // again with it, and writes the rest of the batch with it.
        apply_range(&shard, 2, threshold - 1_000..total, false);
        assert_eq!(dictionary_ids(&shard), vec![0]);
        assert_eq!(stored_forms(&shard, 0), (total, 0));
        assert_reads_back(&shard, total, |_| false);

        let stored: usize = entries(&shard, DOCUMENTS_TREE)
            .iter()
            .map(|(_, value)| value.len())
            .sum();
        let stats = shard.stats().expect("stats read");
        assert_eq!(stats.raw_document_bytes, stored as u64);
        assert!(
            stored * 2 < old_form_bytes,
            "{stored} bytes with the dictionary, {old_form_bytes} without"
        );
    }
    let shard = open(directory.path());
    assert_reads_back(&shard, total, |_| false);
    // Writing after a reopen loads the dictionary again; an unchanged document stays as is.
    let before = entries(&shard, DOCUMENTS_TREE);
    let outcome = shard
        .apply(
            3,
            vec![
                Operation::Replace {
                    external_id: "5".to_owned(),
                    document: document(5, false),
                },
                Operation::Delete {
                    external_id: "6".to_owned(),
                },
                Operation::Replace {
                    external_id: "6".to_owned(),
                    document: document(6, false),
                },
            ],
        )
        .expect("batch applies");
    assert_eq!(outcome.replaced, 2);
    assert_eq!(entries(&shard, DOCUMENTS_TREE), before);
    assert_eq!(dictionary_ids(&shard), vec![0]);
    // Rebuilding the indexes from the stored documents reads them through the dictionary.
    shard
        .set_filterable_fields(&json!(["license", "year"]))
        .expect("facets rebuild");
    shard
        .set_text_settings(TextSettings {
            searchable_attributes: Some(vec!["summary".to_owned()]),
            ..TextSettings::default()
        })
        .expect("text index rebuilds");
    let snapshot = shard.read().expect("read succeeds");
    let rules = snapshot.settings().filterable_rules().clone();
    let filter = Filter::parse("license = MIT")
        .expect("parse succeeds")
        .expect("the filter exists");
    let source = snapshot.facet_source();
    let found = evaluate(&filter, &rules, &source).expect("evaluate succeeds");
    let expected = (0..total)
        .filter(|&index| document(index, false)["license"] == "MIT")
        .count();
    assert_eq!(found.len(), expected as u64);
    drop(snapshot);
    assert_reads_back(&shard, total, |_| false);
}

#[test]
fn documents_the_sample_left_out_are_recompressed_by_the_compaction() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let threshold = DICTIONARY_TRAINING_DOCUMENTS as usize;
    let total = threshold + 500;
    let shard = open(directory.path());
    // Long documents: the 4 MiB sample holds only part of the shard when it trains.
    apply_range(&shard, 1, 0..total, true);
    assert_eq!(dictionary_ids(&shard), vec![0]);
    let (with, without) = stored_forms(&shard, 0);
    assert!(
        without > 0 && with + without == total,
        "{with} with, {without} without"
    );
    let before = shard.stats().expect("stats").raw_document_bytes;
    shard
        .repack(Repack::Everything, &AtomicBool::new(false))
        .expect("repack succeeds");
    assert_eq!(stored_forms(&shard, 0), (total, 0));
    let after = shard.stats().expect("stats").raw_document_bytes;
    assert!(
        after < before,
        "{after} after the compaction, {before} before"
    );
    let stored: usize = entries(&shard, DOCUMENTS_TREE)
        .iter()
        .map(|(_, value)| value.len())
        .sum();
    assert_eq!(after, stored as u64);
    assert_reads_back(&shard, total, |_| true);
    drop(shard);
    let shard = open(directory.path());
    assert_reads_back(&shard, total, |_| true);
}

#[test]
fn delete_all_drops_the_dictionary_and_the_next_one_takes_a_new_id() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let threshold = DICTIONARY_TRAINING_DOCUMENTS as usize;
    let shard = open(directory.path());
    apply_range(&shard, 1, 0..threshold, false);
    assert_eq!(dictionary_ids(&shard), vec![0]);
    shard
        .apply(2, vec![Operation::DeleteAll])
        .expect("delete all applies");
    assert!(dictionary_ids(&shard).is_empty());
    apply_range(&shard, 3, 0..100, false);
    assert_eq!(stored_forms(&shard, 0), (0, 100));
    assert_reads_back(&shard, 100, |_| false);
    // An uncommitted training takes no id.
    let mut prepared = shard.prepare(4).expect("prepares");
    prepared
        .apply_chunk(
            (100..threshold)
                .map(|index| Operation::Replace {
                    external_id: index.to_string(),
                    document: document(index, false),
                })
                .collect(),
        )
        .expect("chunk applies");
    drop(prepared);
    assert!(dictionary_ids(&shard).is_empty());
    apply_range(&shard, 4, 100..threshold, false);
    assert_eq!(dictionary_ids(&shard), vec![1]);
    assert_eq!(stored_forms(&shard, 1), (threshold, 0));
    drop(shard);
    let shard = open(directory.path());
    assert_reads_back(&shard, threshold, |_| false);
}

#[test]
fn a_grown_shard_trains_a_newer_dictionary_and_the_compaction_drops_the_older() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let threshold = DICTIONARY_TRAINING_DOCUMENTS as usize;
    let retraining = threshold * DICTIONARY_RETRAINING_GROWTH as usize;
    let shard = open(directory.path());
    apply_range(&shard, 1, 0..threshold, false);
    assert_eq!(dictionary_ids(&shard), vec![0]);
    apply_range(&shard, 2, threshold..retraining - 1, false);
    assert_eq!(dictionary_ids(&shard), vec![0]);
    apply_range(&shard, 3, retraining - 1..retraining + 100, false);
    assert_eq!(dictionary_ids(&shard), vec![0, 1]);
    let total = retraining + 100;
    // The newer dictionary's sample and the documents after it use it; the rest keep the
    // older one.
    let (older, none) = stored_forms(&shard, 0);
    let (newer, _) = stored_forms(&shard, 1);
    assert_eq!(none, 0);
    assert_eq!(older + newer, total);
    assert!(older > 0 && newer > 100, "{older} older, {newer} newer");
    assert_reads_back(&shard, total, |_| false);
    drop(shard);
    let shard = open(directory.path());
    assert_reads_back(&shard, total, |_| false);
    shard
        .repack(Repack::Everything, &AtomicBool::new(false))
        .expect("repack succeeds");
    assert_eq!(dictionary_ids(&shard), vec![1]);
    assert_eq!(stored_forms(&shard, 1), (total, 0));
    assert_reads_back(&shard, total, |_| false);
    drop(shard);
    let shard = open(directory.path());
    assert_reads_back(&shard, total, |_| false);
}

#[test]
fn a_chunk_analysed_ahead_across_the_training_stores_what_one_analysed_in_place_stores() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    // One chunk that trains the dictionary part way: the documents after it were compressed
    // ahead without it and must be compressed again with it.
    let count = DICTIONARY_TRAINING_DOCUMENTS as usize + AHEAD_OPERATIONS_MIN * 8;
    let operations: Vec<Operation> = (0..count)
        .map(|index| Operation::Replace {
            external_id: index.to_string(),
            document: document(index, false),
        })
        .collect();
    let mut shards = Vec::new();
    for (name, ahead) in [("in_place", false), ("ahead", true)] {
        let path = directory.path().join(name);
        std::fs::create_dir(&path).expect("shard directory created");
        let shard = open(&path);
        let mut prepared = shard.prepare(1).expect("batch prepares");
        if ahead {
            let runner: AheadRunner = Arc::new(|job: AheadJob| {
                std::thread::spawn(job);
            });
            prepared.analyze_ahead_with(runner);
        }
        prepared
            .apply_chunk(operations.clone())
            .expect("chunk applies");
        prepared.commit().expect("batch commits");
        shards.push(shard);
    }
    let [in_place, ahead] = &shards[..] else {
        unreachable!("two shards");
    };
    assert_eq!(dictionary_ids(ahead), vec![0]);
    let (with, _) = stored_forms(ahead, 0);
    let after_training = count - DICTIONARY_TRAINING_DOCUMENTS as usize;
    assert!(
        with >= after_training,
        "{with} documents use the dictionary"
    );
    for tree in [
        DOCUMENTS_TREE,
        DICTIONARIES_TREE,
        "word_documents",
        "external_ids",
    ] {
        assert_eq!(entries(ahead, tree), entries(in_place, tree), "{tree}");
    }
    assert_reads_back(ahead, count, |_| false);
}
