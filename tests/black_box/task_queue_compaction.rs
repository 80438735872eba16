//! `POST /tasks/compact`: Meilisearch's `feature_not_enabled` while the
//! `taskQueueCompactionRoute` feature is off; once on, the answer Meilisearch 1.41 gives
//! (200, `preSize`, `postSize`, `status`, `actionRequired`), a queue file that is no bigger
//! on disk afterwards, a queue that keeps taking tasks, and every task and batch as it was
//! after a restart.

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]

use crate::common;

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use common::{MASTER_KEY, Options, Server};
use serde_json::{Value, json};

/// Bytes per unit of `st_blocks`.
const STAT_BLOCK_BYTES: u64 = 512;

fn options() -> Options {
    Options {
        master_key: Some(MASTER_KEY.to_owned()),
        ..Options::default()
    }
}

/// The disk bytes of the task queue's file.
fn queue_disk_bytes(data_directory: &Path) -> u64 {
    std::fs::metadata(data_directory.join("tasks.store"))
        .expect("the queue file exists")
        .blocks()
        * STAT_BLOCK_BYTES
}

/// A size as the answer writes it (`456 KiB`, `1 MiB`, `12345 B`), in bytes.
fn size_bytes(text: &str) -> u64 {
    let (number, unit) = text.split_once(' ').expect("`number unit`");
    let number: u64 = number.parse().expect("a whole number of units");
    let multiplier = match unit {
        "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "KB" => 1_000,
        "MB" => 1_000_000,
        other => panic!("unit {other}"),
    };
    number * multiplier
}

fn enable(server: &Server) {
    let response = server.send(
        "PATCH",
        "/experimental-features",
        Some(&json!({"taskQueueCompactionRoute": true})),
    );
    assert_eq!(response.status, 200, "{}", response.text());
}

/// Every task and every batch, newest first.
fn every_task_and_batch(server: &Server) -> (Value, Value) {
    let tasks = server.send("GET", "/tasks?limit=10000", None);
    assert_eq!(tasks.status, 200);
    let batches = server.send("GET", "/batches?limit=10000", None);
    assert_eq!(batches.status, 200);
    (
        tasks.json()["results"].clone(),
        batches.json()["results"].clone(),
    )
}

#[test]
fn compaction_answers_feature_not_enabled_until_the_feature_is_on() {
    let server = Server::start_with(options());
    let response = server.send("POST", "/tasks/compact", None);
    assert_eq!(response.status, 400);
    assert_eq!(
        response.json(),
        json!({
            "message": "Using the /tasks/compact route requires enabling the `task queue compaction route` experimental feature. See https://github.com/orgs/meilisearch/discussions/883",
            "code": "feature_not_enabled",
            "type": "invalid_request",
            "link": "https://docs.meilisearch.com/errors#feature_not_enabled",
        })
    );
    // The route is POST only: `GET /tasks/compact` is no read of a task called `compact`.
    assert_eq!(server.send("GET", "/tasks/compact", None).status, 405);
    enable(&server);
    let response = server.send("POST", "/tasks/compact", None);
    assert_eq!(response.status, 200, "{}", response.text());
}

#[test]
fn compaction_shrinks_or_keeps_the_queue_file_and_every_task_survives_a_restart() {
    let scratch = tempfile::tempdir().expect("tempdir succeeds");
    let data_directory = scratch.path().join("data.ms");
    let server = Server::start_on(&data_directory, &options());
    // Tasks with large records, most of them deleted afterwards: the queue's pages are left
    // sparse.
    let mut last = 0;
    for round in 0..60 {
        let synonyms: serde_json::Map<String, Value> = (0..20)
            .map(|word| {
                (
                    format!("word-{round}-{word}-{}", "x".repeat(40)),
                    json!([format!("other-{round}-{word}-{}", "y".repeat(40))]),
                )
            })
            .collect();
        let response = server.send(
            "PATCH",
            "/indexes/movies/settings",
            Some(&json!({"synonyms": synonyms})),
        );
        assert_eq!(response.status, 202, "{}", response.text());
        last = response.json()["taskUid"].as_u64().expect("a task uid");
    }
    server.wait_task(last);
    let deletion = server.send(
        "DELETE",
        "/tasks?uids=0,2,4,6,8,10,12,14,16,18,20,22,24,26,28,30,32,34,36,38,40,42,44,46,48,50",
        None,
    );
    assert_eq!(deletion.status, 200, "{}", deletion.text());
    let deletion = server.wait_task(deletion.json()["taskUid"].clone());
    assert_eq!(deletion["status"], "succeeded", "{deletion}");
    let (tasks_before, batches_before) = every_task_and_batch(&server);

    enable(&server);
    let disk_before = queue_disk_bytes(&data_directory);
    let response = server.send("POST", "/tasks/compact", None);
    assert_eq!(response.status, 200, "{}", response.text());
    let summary = response.json();
    assert_eq!(summary["status"], "succeeded");
    assert_eq!(summary["actionRequired"], "you must restart your instance");
    assert_eq!(
        summary.as_object().expect("an object").len(),
        4,
        "preSize, postSize, status, actionRequired: {summary}"
    );
    let pre = size_bytes(summary["preSize"].as_str().expect("preSize"));
    let post = size_bytes(summary["postSize"].as_str().expect("postSize"));
    let disk_after = queue_disk_bytes(&data_directory);
    println!("queue file: {pre} -> {post} bytes (disk {disk_before} -> {disk_after})");
    assert!(post <= pre, "{summary}");
    assert!(disk_after <= disk_before, "{disk_before} -> {disk_after}");
    assert_eq!(post, disk_after, "postSize is the file's disk bytes");
    assert!(post < pre, "sparse pages were given back: {summary}");

    // Nothing changed for the reader, and the queue keeps taking tasks.
    assert!(
        every_task_and_batch(&server) == (tasks_before.clone(), batches_before.clone()),
        "the compaction changed no task and no batch"
    );
    let added = server.send(
        "POST",
        "/indexes/movies/documents",
        Some(&json!([{"id": 1}])),
    );
    assert_eq!(added.status, 202, "{}", added.text());
    let added_uid = added.json()["taskUid"].clone();
    assert_eq!(server.wait_task(added_uid.clone())["status"], "succeeded");
    let (tasks_after, _) = every_task_and_batch(&server);

    // And after a restart, every task and batch is still there.
    let log = data_directory.with_extension("stderr.log");
    let status = server.stop();
    assert!(
        status.success(),
        "{status:?} {}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    let restarted = Server::start_on(&data_directory, &options());
    let (tasks_restarted, batches_restarted) = every_task_and_batch(&restarted);
    assert!(
        tasks_restarted == tasks_after,
        "every task survives the restart ({} tasks before, {} after)",
        tasks_after.as_array().map_or(0, Vec::len),
        tasks_restarted.as_array().map_or(0, Vec::len)
    );
    assert_eq!(
        tasks_restarted.as_array().map(Vec::len),
        Some(tasks_before.as_array().map_or(0, Vec::len) + 1)
    );
    let old_batches = batches_before.as_array().expect("batches");
    let kept: Vec<&Value> = batches_restarted
        .as_array()
        .expect("batches")
        .iter()
        .filter(|batch| old_batches.iter().any(|old| old["uid"] == batch["uid"]))
        .collect();
    assert!(
        kept == old_batches.iter().collect::<Vec<_>>(),
        "every batch survives the restart"
    );
    let document = restarted.send("GET", "/indexes/movies/documents/1", None);
    assert_eq!(document.status, 200, "{}", document.text());
    // The restarted queue compacts again and still registers.
    enable(&restarted);
    assert_eq!(restarted.send("POST", "/tasks/compact", None).status, 200);
    let next = restarted.send("DELETE", "/indexes/movies", None);
    assert_eq!(next.status, 202);
    assert_eq!(
        next.json()["taskUid"].as_u64(),
        added_uid.as_u64().map(|uid| uid + 1)
    );
}
