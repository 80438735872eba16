//! A batch committed through `Shard::commit_warmed`: readers keep the commit before the batch
//! while the warming runs, see the batch once it returns, find its word dictionary already
//! built, and are never left on the old commit when the warming panics.

use crate::common;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use serde_json::json;
use shards::shard::{Operation, Shard};

fn replace(id: u32, name: &str) -> Operation {
    Operation::Replace {
        external_id: id.to_string(),
        document: json!({"id": id, "name": name})
            .as_object()
            .expect("an object")
            .clone(),
    }
}

/// Prepares batch `batch_uid` with one document.
fn prepared(shard: &Shard, batch_uid: u64, id: u32, name: &str) -> shards::shard::PreparedBatch {
    let mut batch = shard.prepare(batch_uid).expect("the batch opens");
    batch
        .apply_chunk(vec![replace(id, name)])
        .expect("the chunk applies");
    batch
}

/// A shard in a new directory (keep it while using the shard) holding one document per name,
/// ids from 1.
fn shard_of_names(names: &[&str]) -> (tempfile::TempDir, Shard) {
    let directory = tempfile::tempdir().expect("a temporary directory");
    let shard = common::open_shard(&directory, "shard.pages");
    let documents: Vec<_> = (1..)
        .zip(names)
        .map(|(id, name)| json!({"id": id, "name": name}))
        .collect();
    common::load(&shard, &documents);
    (directory, shard)
}

fn hits(shard: &Shard, q: &str) -> u64 {
    shard
        .read()
        .expect("a snapshot")
        .search(&common::query(q))
        .expect("the search runs")
        .total
}

#[test]
fn readers_see_the_batch_only_after_its_warming_and_find_its_dictionary_built() {
    let (_directory, shard) = shard_of_names(&["alpha"]);
    let batch = prepared(&shard, 2, 2, "bravo");
    let mut seen_during_warming = None;
    shard
        .commit_warmed(
            batch,
            Some(|warming: &shards::shard::ShardSnapshot| {
                // The warming reads the new commit...
                assert_eq!(
                    warming
                        .search(&common::query("bravo"))
                        .expect("the search runs")
                        .total,
                    1
                );
                // ...while readers still read the one before.
                seen_during_warming = Some((hits(&shard, "bravo"), hits(&shard, "alpha")));
            }),
        )
        .expect("the batch commits");
    assert_eq!(seen_during_warming, Some((0, 1)));
    assert_eq!(hits(&shard, "bravo"), 1);
    let snapshot = shard.read().expect("a snapshot");
    let built = snapshot.dictionary().expect("the dictionary");
    let again = shard
        .read()
        .expect("a snapshot")
        .dictionary()
        .expect("the dictionary");
    assert!(Arc::ptr_eq(&built, &again), "one dictionary per commit");
    assert!(built.contains("bravo"));
}

#[test]
fn the_dictionary_searched_before_is_carried_over_with_the_batch_words() {
    let (_directory, shard) = shard_of_names(&["alpha delta", "echo"]);
    assert_eq!(
        hits(&shard, "alpha"),
        1,
        "a search builds the first dictionary"
    );
    // Document 1 loses `alpha` (its only holder) and gains `bravo`; `delta` stays.
    let mut batch = shard.prepare(2).expect("the batch opens");
    batch
        .apply_chunk(vec![replace(1, "bravo delta"), replace(3, "zulu echo")])
        .expect("the chunk applies");
    let mut built_before_any_search = false;
    shard
        .commit_warmed(
            batch,
            Some(|warming: &shards::shard::ShardSnapshot| {
                built_before_any_search = warming.dictionary_is_built();
            }),
        )
        .expect("the batch commits");
    assert!(built_before_any_search, "the merged dictionary was adopted");
    let dictionary = shard
        .read()
        .expect("a snapshot")
        .dictionary()
        .expect("built");
    let words: Vec<String> = dictionary
        .words()
        .into_iter()
        .map(|word| String::from_utf8(word).expect("words are text"))
        .collect();
    // The ids are searchable words too (every attribute is searchable by default).
    assert_eq!(words, ["1", "2", "3", "bravo", "delta", "echo", "zulu"]);
    assert_eq!(hits(&shard, "alpa"), 0, "no typo leads to the deleted word");
    assert_eq!(hits(&shard, "zul"), 1);
}

/// A typo searched on the commit before is carried to the batch's commit over the words the
/// batch changed: the deleted word no longer matches, the created one does.
#[test]
fn a_typo_derived_before_the_batch_matches_the_batch_words_after_it() {
    let (_directory, shard) = shard_of_names(&["brave", "echo"]);
    assert_eq!(hits(&shard, "bravx"), 1, "one typo from `brave`");
    let mut batch = shard.prepare(2).expect("the batch opens");
    batch
        .apply_chunk(vec![replace(1, "other"), replace(3, "bravo")])
        .expect("the chunk applies");
    shard
        .commit_warmed(batch, Some(|_: &shards::shard::ShardSnapshot| {}))
        .expect("the batch commits");
    let found = shard
        .read()
        .expect("a snapshot")
        .search(&common::query("bravx"))
        .expect("the search runs");
    assert_eq!(found.total, 1, "`bravo` matches, `brave` is gone");
}

#[test]
fn a_panicking_warming_leaves_readers_on_the_newest_commit() {
    let (_directory, shard) = shard_of_names(&["alpha"]);
    let batch = prepared(&shard, 2, 2, "bravo");
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        shard.commit_warmed(
            batch,
            Some(|_: &shards::shard::ShardSnapshot| panic!("the warming fails")),
        )
    }));
    assert!(outcome.is_err(), "the panic reaches the caller");
    // The commit is durable; readers now see it (its view made lazily).
    assert_eq!(hits(&shard, "bravo"), 1);
    assert_eq!(hits(&shard, "alpha"), 1);
}

#[test]
fn without_warming_the_commit_is_visible_at_once() {
    let (_directory, shard) = shard_of_names(&["alpha"]);
    let batch = prepared(&shard, 2, 2, "bravo");
    shard
        .commit_warmed(batch, None::<fn(&shards::shard::ShardSnapshot)>)
        .expect("the batch commits");
    assert_eq!(hits(&shard, "bravo"), 1);
}

#[test]
fn a_batch_applied_before_commits_nothing_and_warms_nothing() {
    let (_directory, shard) = shard_of_names(&["alpha"]);
    let batch = prepared(&shard, 1, 2, "bravo");
    assert!(batch.is_already_applied());
    let mut warmed = false;
    shard
        .commit_warmed(
            batch,
            Some(|_: &shards::shard::ShardSnapshot| warmed = true),
        )
        .expect("nothing to commit");
    assert!(!warmed);
    assert_eq!(hits(&shard, "bravo"), 0);
}

#[test]
fn a_repack_keeps_the_caches_of_the_commit_before_and_a_batch_does_not() {
    let directory = tempfile::tempdir().expect("a temporary directory");
    let shard = common::open_shard(&directory, "shard.pages");
    let documents: Vec<_> = (0..400)
        .map(|id| json!({"id": id, "name": format!("word{id} shared")}))
        .collect();
    common::load(&shard, &documents);
    assert_eq!(
        hits(&shard, "shared"),
        400,
        "a search builds the dictionary"
    );
    let before = shard.database().stats().transaction_id;
    shard
        .repack(
            shards::shard::Repack::Everything,
            &std::sync::atomic::AtomicBool::new(false),
        )
        .expect("the repack runs");
    assert!(
        shard.database().stats().transaction_id > before,
        "the repack committed"
    );
    let snapshot = shard.read().expect("a snapshot");
    assert!(
        snapshot.dictionary_is_built(),
        "the repack's commit kept the caches"
    );
    drop(snapshot);
    assert_eq!(hits(&shard, "shared"), 400);
    let batch = prepared(&shard, 2, 1_000, "fresh");
    batch.commit().expect("the batch commits");
    let snapshot = shard.read().expect("a snapshot");
    assert!(
        !snapshot.dictionary_is_built(),
        "a batch's commit starts afresh"
    );
    drop(snapshot);
    assert_eq!(hits(&shard, "fresh"), 1);
}
