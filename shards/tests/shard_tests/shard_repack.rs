//! Repacking a shard's trees (`Shard::repack`): the idle policy picks exactly the trees whose
//! pages have become sparse, a compaction picks every tree, and neither changes a document or
//! a search answer.
#![allow(clippy::too_many_lines)]

use crate::common;

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;

use serde_json::{Value, json};
use shards::shard::{
    IDLE_REPACK_FILL_BELOW, IDLE_REPACK_GROWTH_PERCENT_MIN, IDLE_REPACK_SPARE_PAGES_MIN, Operation,
    Repack, Shard,
};
use storage_engine::TreeFill;

/// An interrupt flag never set.
static NO_INTERRUPT: AtomicBool = AtomicBool::new(false);

const BATCHES: u64 = 40;
const DOCUMENTS_PER_BATCH: u64 = 500;
const VOCABULARY: u64 = 3_000;

/// A word of the test vocabulary: distinct, spread over the key space.
fn word(index: u64) -> String {
    let mut value = index.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40;
    let mut word = String::new();
    for _ in 0..6 {
        word.push(char::from(b'a' + (value % 26) as u8));
        value /= 26;
    }
    word
}

/// A well-mixed hash (splitmix64's finalizer): adjacent words of a document form pairs that
/// rarely repeat, so `word_pairs` takes scattered inserts like real text.
fn mixed(mut value: u64) -> u64 {
    value = (value ^ (value >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    value = (value ^ (value >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    value ^ (value >> 31)
}

fn document(id: u64) -> Value {
    let words: Vec<String> = (0..8)
        .map(|slot| word(mixed(id * 8 + slot) % VOCABULARY))
        .collect();
    json!({"id": id, "title": words.join(" ")})
}

/// Batch `batch` of new documents: it adds to the postings of most words, so leaves all over
/// the word trees split.
fn apply_batch(shard: &Shard, batch: u64) {
    let operations = (0..DOCUMENTS_PER_BATCH)
        .map(|offset| {
            let id = batch * DOCUMENTS_PER_BATCH + offset;
            let document = document(id);
            Operation::Replace {
                external_id: id.to_string(),
                document: document
                    .as_object()
                    .expect("test documents are objects")
                    .clone(),
            }
        })
        .collect();
    shard
        .apply(batch + 1, operations)
        .expect("the batch applies");
}

fn load_in_batches(shard: &Shard) {
    for batch in 0..BATCHES {
        apply_batch(shard, batch);
    }
}

/// The fill condition of the idle policy.
fn is_sparse(fill: &TreeFill) -> bool {
    fill.fraction() < IDLE_REPACK_FILL_BELOW && fill.spare_pages() >= IDLE_REPACK_SPARE_PAGES_MIN
}

/// The fill of every tree of the shard's last commit, by name.
fn tree_fills(shard: &Shard) -> BTreeMap<String, TreeFill> {
    let read = shard.database().begin_read();
    let mut fills = BTreeMap::new();
    for name in read.tree_names().expect("tree_names succeeds") {
        let tree = read
            .open_tree(&name)
            .expect("open_tree succeeds")
            .expect("a named tree opens");
        fills.insert(name, tree.fill().expect("fill succeeds"));
    }
    fills
}

/// The entry count of every tree of the shard's last commit, by name.
fn tree_lengths(shard: &Shard) -> BTreeMap<String, u64> {
    let read = shard.database().begin_read();
    let mut lengths = BTreeMap::new();
    for name in read.tree_names().expect("tree_names succeeds") {
        let tree = read
            .open_tree(&name)
            .expect("open_tree succeeds")
            .expect("a named tree opens");
        lengths.insert(name, tree.len());
    }
    lengths
}

/// Every stored document and the hits of a few searches, to compare before and after.
fn observed(shard: &Shard) -> (Vec<Option<Vec<u8>>>, Vec<Vec<u32>>) {
    observed_first(shard, BATCHES)
}

/// The documents of the first `batches` batches and the hits of a few searches.
fn observed_first(shard: &Shard, batches: u64) -> (Vec<Option<Vec<u8>>>, Vec<Vec<u32>>) {
    let snapshot = shard.read().expect("read succeeds");
    let documents = (0..(batches * DOCUMENTS_PER_BATCH) as u32)
        .map(|id| snapshot.document_json(id).expect("document_json succeeds"))
        .collect();
    let searches = [word(5), word(17), format!("{} {}", word(40), word(171))]
        .iter()
        .map(|q| {
            let hits = snapshot.search(&common::query(q)).expect("search succeeds");
            hits.hits.iter().map(|hit| hit.id).collect()
        })
        .collect();
    (documents, searches)
}

#[test]
fn idle_repacks_the_sparse_trees_once_and_changes_no_answer() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let shard = common::open_shard(&directory, "shard.pages");
    load_in_batches(&shard);
    let before = observed(&shard);
    assert!(before.1.iter().all(|hits| !hits.is_empty()));

    let fills = tree_fills(&shard);
    assert!(
        shard
            .repack(Repack::Nothing, &NO_INTERRUPT)
            .expect("repack succeeds")
            .repacked
            .is_empty()
    );
    // A task arriving stops the repack: the tree being copied stays as it was.
    let interrupted = shard
        .repack(Repack::Sparse, &AtomicBool::new(true))
        .expect("repack succeeds");
    assert!(interrupted.interrupted, "{interrupted:?}");
    for name in &interrupted.repacked {
        assert!(tree_fills(&shard)[name].fraction() > 0.8, "{name}");
    }
    assert_eq!(observed(&shard), before);
    let repacked = shard
        .repack(Repack::Sparse, &NO_INTERRUPT)
        .expect("repack succeeds")
        .repacked;
    assert!(
        !repacked.is_empty(),
        "scattered inserts leave sparse trees: {fills:?}"
    );
    for (name, fill) in &fills {
        assert_eq!(repacked.contains(name), is_sparse(fill), "{name}: {fill:?}");
    }
    let after = tree_fills(&shard);
    for name in &repacked {
        let (before, after) = (fills[name], after[name]);
        assert!(after.fraction() > 0.8, "{name} repacked: {after:?}");
        assert!(
            after.pages < before.pages,
            "{name}: {before:?} -> {after:?}"
        );
    }
    assert_eq!(observed(&shard), before);

    // Full pages now: nothing left to repack until writes split them again.
    let again = shard
        .repack(Repack::Sparse, &NO_INTERRUPT)
        .expect("repack succeeds")
        .repacked;
    assert!(again.is_empty(), "repacked twice: {again:?}");

    // The room a repack leaves in each leaf absorbs a small batch: no tree turns sparse.
    let lengths = tree_lengths(&shard);
    let mut batch = BATCHES;
    apply_batch(&shard, batch);
    let after_one = tree_fills(&shard);
    for name in &repacked {
        assert!(
            !is_sparse(&after_one[name]),
            "{name}: {:?}",
            after_one[name]
        );
    }
    assert!(
        shard
            .repack(Repack::Sparse, &NO_INTERRUPT)
            .expect("repack succeeds")
            .repacked
            .is_empty()
    );

    // More batches: a repacked tree is copied again only when sparse and grown by a quarter.
    while (batch + 1) * 100 < BATCHES * (100 + 2 * IDLE_REPACK_GROWTH_PERCENT_MIN) {
        batch += 1;
        apply_batch(&shard, batch);
    }
    let (fills, grown_lengths) = (tree_fills(&shard), tree_lengths(&shard));
    let expected: Vec<String> = fills
        .iter()
        .filter(|(name, fill)| {
            let grown = lengths.get(*name).is_none_or(|&before| {
                !repacked.contains(*name)
                    || grown_lengths[*name] * 100 >= before * (100 + IDLE_REPACK_GROWTH_PERCENT_MIN)
            });
            is_sparse(fill) && grown
        })
        .map(|(name, _)| name.clone())
        .collect();
    assert_eq!(
        shard
            .repack(Repack::Sparse, &NO_INTERRUPT)
            .expect("repack succeeds")
            .repacked,
        expected
    );

    let before = observed_first(&shard, BATCHES);
    let everything = shard
        .repack(Repack::Everything, &NO_INTERRUPT)
        .expect("repack succeeds")
        .repacked;
    let snapshot_names = {
        let mut names = everything.clone();
        names.sort();
        names
    };
    assert!(snapshot_names.contains(&"documents".to_owned()));
    assert!(snapshot_names.contains(&"meta".to_owned()));
    assert_eq!(observed_first(&shard, BATCHES), before);
}
