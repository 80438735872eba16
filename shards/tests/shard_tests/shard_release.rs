//! Giving a shard's free pages back to the file system (`Shard::release_free_space`) while
//! readers hold snapshots: the pages a reader still reads are given back once it ends, in
//! the same release, unless the release is interrupted first.

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]

use crate::common;

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use serde_json::json;
use shards::shard::{Operation, PENDING_RELEASE_WAIT_MAX, Shard, ShardSnapshot};

/// An interrupt flag never set.
static NO_INTERRUPT: AtomicBool = AtomicBool::new(false);

const DOCUMENTS: u64 = 2_000;
/// How long the reader keeps its snapshot once the release has started: well within the
/// release's wait for readers.
const READER_HOLDS_FOR: Duration = Duration::from_millis(100);

/// Batch `batch_uid` writing every document anew (the second replaces the first's pages).
fn write_every_document(shard: &Shard, batch_uid: u64) {
    let operations = (0..DOCUMENTS)
        .map(|id| {
            let document = json!({"id": id, "title": format!("title {id} of batch {batch_uid}")});
            Operation::Replace {
                external_id: id.to_string(),
                document: document
                    .as_object()
                    .expect("the document is an object")
                    .clone(),
            }
        })
        .collect();
    shard
        .apply(batch_uid, operations)
        .expect("the batch applies");
}

/// A shard in `directory` whose first batch's pages, freed by a second batch, a reader's
/// snapshot (answered with it) still holds.
fn shard_with_held_pages(directory: &tempfile::TempDir) -> (Shard, ShardSnapshot) {
    let shard = common::open_shard(directory, "shard.pages");
    write_every_document(&shard, 1);
    let snapshot = shard.read().expect("read succeeds");
    write_every_document(&shard, 2);
    (shard, snapshot)
}

#[test]
fn a_release_waits_for_the_readers_and_gives_back_the_pages_they_held() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let (shard, snapshot) = shard_with_held_pages(&directory);
    let released = std::thread::scope(|scope| {
        let release = scope.spawn(|| shard.release_free_space(0, &NO_INTERRUPT));
        std::thread::sleep(READER_HOLDS_FOR);
        drop(snapshot);
        release.join().expect("the release thread ends")
    })
    .expect("release_free_space succeeds");
    assert!(released > 0, "nothing released");
    // Every free page went back in that one release, the held ones included.
    assert_eq!(
        shard
            .release_free_space(0, &NO_INTERRUPT)
            .expect("release_free_space succeeds"),
        0
    );
}

#[test]
fn an_interrupted_release_leaves_the_held_pages_to_the_next() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let (shard, snapshot) = shard_with_held_pages(&directory);
    let interrupted = AtomicBool::new(true);
    let started = std::time::Instant::now();
    shard
        .release_free_space(0, &interrupted)
        .expect("release_free_space succeeds");
    // An interrupted release does not wait for the reader (this thread holds it).
    assert!(started.elapsed() < PENDING_RELEASE_WAIT_MAX / 2);
    drop(snapshot);
    let later = shard
        .release_free_space(0, &NO_INTERRUPT)
        .expect("release_free_space succeeds");
    assert!(later > 0, "the reader held no page of the second batch");
}
