//! Snapshots against the server binary (issue 41, item 3): `POST /snapshots` writes
//! `<db name>.snapshot` into `--snapshot-dir`, `--import-snapshot` brings it back at start,
//! `--schedule-snapshot` takes them on its own.
//!
//! - a round trip: indexes with settings, an embedder and `_vectors`, keys, features,
//!   webhooks, network, tasks and batches snapshotted, imported into a new server and
//!   compared there, searches included; compacted and uncompacted
//!   (`--experimental-no-snapshot-compaction`) snapshots both restore;
//! - a snapshot taken during heavy writes restores to a committed state: the tasks that had
//!   succeeded are there with all their documents, the ones waiting come back waiting (with
//!   their payloads) and run, the later ones are absent, no task is half applied;
//! - a kill -9 during a snapshot leaves the earlier snapshot whole and no partial one; the
//!   instance restarts and takes the interrupted snapshot again;
//! - corrupt, truncated, foreign and future snapshots stop the start with a message and
//!   leave no data directory; `--ignore-missing-snapshot` and
//!   `--ignore-snapshot-if-db-exists` decide as Meilisearch does;
//! - `--schedule-snapshot` (and `MEILI_SCHEDULE_SNAPSHOT`) registers snapshots on its own;
//! - the route's authorization and errors; S3 options refuse the start.

#![allow(clippy::unwrap_used, clippy::too_many_lines)]

use crate::common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{MASTER_KEY, Options, Server, json_request, request};
use serde_json::{Value, json};

/// How long a start that must fail may take.
const FAILING_START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a test waits for something the server does on its own.
const WAIT: Duration = Duration::from_secs(60);

fn options(extra: &[&str]) -> Options {
    Options {
        master_key: Some(MASTER_KEY.to_string()),
        extra_arguments: extra.iter().map(|argument| argument.to_string()).collect(),
        ..Options::default()
    }
}

/// Sends a write and waits for its task to succeed.
fn succeed(server: &Server, method: &str, path: &str, body: Option<&Value>) -> Value {
    let response = server.send(method, path, body);
    assert_eq!(response.status, 202, "{method} {path}: {}", response.text());
    let task = server.wait_task(&response.json()["taskUid"]);
    assert_eq!(task["status"], "succeeded", "{method} {path}: {task}");
    task
}

/// The snapshot directory the test harness gives a server.
fn snapshot_directory(server: &Server) -> PathBuf {
    server.data_directory.with_extension("snapshots")
}

/// The snapshot file of `server`: named after its data directory, as Meilisearch names it.
fn snapshot_file(server: &Server) -> PathBuf {
    let name = server.data_directory.file_name().unwrap().to_string_lossy();
    snapshot_directory(server).join(format!("{name}.snapshot"))
}

/// Takes a snapshot and answers its task.
fn take_snapshot(server: &Server) -> Value {
    let response = server.send("POST", "/snapshots", None);
    assert_eq!(response.status, 202, "{}", response.text());
    let summary = response.json();
    assert_eq!(summary["type"], "snapshotCreation", "{summary}");
    assert_eq!(summary["status"], "enqueued", "{summary}");
    assert_eq!(summary["indexUid"], Value::Null, "{summary}");
    let task = server.wait_task(&summary["taskUid"]);
    assert_eq!(task["status"], "succeeded", "{task}");
    assert!(task.get("details").is_none(), "{task}");
    assert!(snapshot_file(server).is_file());
    task
}

fn get(server: &Server, path: &str) -> Value {
    let response = server.send("GET", path, None);
    assert_eq!(response.status, 200, "GET {path}: {}", response.text());
    response.json()
}

/// A search's answer, without its processing time and request uid.
fn post(server: &Server, path: &str, body: &Value) -> Value {
    let response = server.send("POST", path, Some(body));
    assert_eq!(response.status, 200, "POST {path}: {}", response.text());
    let mut answer = response.json();
    let object = answer.as_object_mut().unwrap();
    object.remove("processingTimeMs");
    object.remove("requestUid");
    answer
}

/// Fills a server with what a snapshot must carry; answers the searches to compare.
fn populate(server: &Server) -> Vec<(String, Value)> {
    let movies: Vec<Value> = (0..300)
        .map(|n| {
            let word = ["carol", "drama", "comedy"][n % 3];
            let genre = ["drama", "comedy", "horror"][n % 3];
            json!({"id": n, "title": format!("movie {n} {word}"), "year": 1950 + n % 70,
                   "genre": genre})
        })
        .collect();
    succeed(
        server,
        "POST",
        "/indexes/movies/documents",
        Some(&json!(movies)),
    );
    succeed(
        server,
        "PATCH",
        "/indexes/movies/settings",
        Some(&json!({
            "filterableAttributes": ["genre", "year"],
            "sortableAttributes": ["year"],
            "synonyms": {"film": ["movie"]},
            "stopWords": ["the"],
            "rankingRules": ["words", "sort", "typo", "proximity", "attribute", "exactness"],
        })),
    );
    // Deleted documents leave free pages behind in the shard files.
    succeed(
        server,
        "POST",
        "/indexes/movies/documents/delete",
        Some(&json!({"filter": "year < 1960"})),
    );
    succeed(
        server,
        "POST",
        "/indexes",
        Some(&json!({"uid": "books", "primaryKey": "isbn"})),
    );
    let books = json!([{"isbn": "a-1", "name": "Dune"}, {"isbn": "b-2", "name": "Emma"}]);
    succeed(server, "PUT", "/indexes/books/documents", Some(&books));
    succeed(
        server,
        "PATCH",
        "/indexes/vectors/settings",
        Some(&json!({"embedders": {"e": {"source": "userProvided", "dimensions": 3}}})),
    );
    let vectors = json!([
        {"id": 1, "text": "north", "_vectors": {"e": [1.0, 0.0, 0.0]}},
        {"id": 2, "text": "east", "_vectors": {"e": [0.0, 1.0, 0.0]}},
        {"id": 3, "text": "up", "_vectors": {"e": {"embeddings": [[0.0, 0.0, 1.0]], "regenerate": false}}},
        {"id": 4, "text": "none", "_vectors": {"e": null}},
    ]);
    succeed(server, "POST", "/indexes/vectors/documents", Some(&vectors));
    let response = server.send(
        "POST",
        "/indexes/books/documents",
        Some(&json!([{"name": "no id"}])),
    );
    let failed = server.wait_task(&response.json()["taskUid"]);
    assert_eq!(failed["status"], "failed");
    vec![
        (
            "/indexes/movies/search".to_owned(),
            json!({"q": "carol", "limit": 50}),
        ),
        (
            "/indexes/movies/search".to_owned(),
            json!({"q": "film", "filter": "genre = drama AND year > 1990", "sort": ["year:desc"],
                   "facets": ["genre"]}),
        ),
        ("/indexes/books/search".to_owned(), json!({"q": "dun"})),
        (
            "/indexes/vectors/search".to_owned(),
            json!({"vector": [0.9, 0.1, 0.0], "hybrid": {"embedder": "e", "semanticRatio": 1.0},
                   "retrieveVectors": true, "showRankingScore": true}),
        ),
    ]
}

/// The control state a snapshot must carry.
fn set_control_state(server: &Server) {
    let body = json!({"actions": ["search", "documents.get"], "indexes": ["movies"],
                      "expiresAt": "2090-01-01T00:00:00Z", "name": "reader"});
    assert_eq!(server.send("POST", "/keys", Some(&body)).status, 201);
    let features = json!({"editDocumentsByFunction": true, "network": true, "renderRoute": true,
                          "disableDocumentsFetchQueue": true});
    let response = server.send("PATCH", "/experimental-features", Some(&features));
    assert_eq!(response.status, 200);
    // A loopback address nothing listens on: deliveries fail without leaving the machine.
    let webhook = json!({"url": "http://127.0.0.1:9/hook", "headers": {"authorization": "TOKEN"}});
    assert_eq!(server.send("POST", "/webhooks", Some(&webhook)).status, 201);
    let network = json!({"self": "ms-0", "remotes": {
        "ms-0": {"url": "http://127.0.0.1:1", "searchApiKey": "s"},
        "ms-1": {"url": "http://127.0.0.1:2", "writeApiKey": "w"}}});
    let response = server.send("PATCH", "/network", Some(&network));
    assert_eq!(response.status, 200, "{}", response.text());
}

/// Every document of `index`, with vectors, in id order.
fn documents(server: &Server, index: &str) -> Vec<Value> {
    let page = get(
        server,
        &format!("/indexes/{index}/documents?limit=100000&retrieveVectors=true"),
    );
    let mut all = page["results"].as_array().unwrap().clone();
    all.sort_by_key(|document| document.to_string());
    all
}

/// The last task and batch before a snapshot: what the instance held when it was taken.
fn before(snapshot_task: &Value) -> (u64, u64) {
    (
        snapshot_task["uid"].as_u64().unwrap() - 1,
        snapshot_task["batchUid"].as_u64().unwrap() - 1,
    )
}

/// The state of the instance a snapshot restores, as the API shows it; tasks and batches up
/// to `before` (see [`before`]).
fn instance_state(server: &Server, searches: &[(String, Value)], before: (u64, u64)) -> Vec<Value> {
    let (task, batch) = before;
    let mut state = vec![
        get(server, "/indexes"),
        get(server, "/keys?limit=100"),
        get(server, "/experimental-features"),
        get(server, "/webhooks"),
        get(server, "/network"),
        get(server, &format!("/tasks?limit=1000&from={task}"))["results"].clone(),
        get(server, &format!("/batches?limit=1000&from={batch}"))["results"].clone(),
    ];
    for index in ["movies", "books", "vectors"] {
        state.push(json!(documents(server, index)));
        state.push(get(server, &format!("/indexes/{index}/settings")));
        let stats = get(server, &format!("/indexes/{index}/stats"));
        state.push(json!([
            stats["numberOfDocuments"],
            stats["fieldDistribution"]
        ]));
    }
    for (path, query) in searches {
        state.push(post(server, path, query));
    }
    state
}

/// Starts a server on a new data directory in `scratch` from the snapshot `snapshot`.
fn restore(scratch: &Path, name: &str, snapshot: &Path, extra: &[&str]) -> Server {
    let snapshot = snapshot.to_string_lossy().into_owned();
    let mut arguments = vec!["--import-snapshot", snapshot.as_str()];
    arguments.extend_from_slice(extra);
    Server::start_on(&scratch.join(name), &options(&arguments))
}

#[test]
fn a_snapshot_brings_back_every_document_setting_key_task_and_search() {
    let source = Server::start_with(options(&[]));
    let searches = populate(&source);
    set_control_state(&source);
    let snapshot_task = take_snapshot(&source);
    let snapshot_uid = snapshot_task["uid"].as_u64().unwrap();
    let expected = instance_state(&source, &searches, before(&snapshot_task));

    let scratch = tempfile::tempdir().unwrap();
    let restored = restore(scratch.path(), "restored.ms", &snapshot_file(&source), &[]);
    assert_eq!(
        instance_state(&restored, &searches, before(&snapshot_task)),
        expected
    );
    // The snapshot's own task is not in the snapshot (as in Meilisearch): it is not run
    // again. Task uids only grow: its uid is not given again.
    let tasks = get(&restored, "/tasks?limit=1000");
    assert_eq!(tasks["total"].as_u64().unwrap(), snapshot_uid, "{tasks:#}");
    assert!(
        tasks["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|task| task["type"] != "snapshotCreation"),
        "{tasks}"
    );
    let task = succeed(
        &restored,
        "POST",
        "/indexes/movies/documents",
        Some(&json!([{"id": 1000, "title": "new carol"}])),
    );
    assert_eq!(task["uid"].as_u64().unwrap(), snapshot_uid + 1);
    let hits = post(
        &restored,
        "/indexes/movies/search",
        &json!({"q": "new carol"}),
    );
    assert_eq!(hits["hits"][0]["id"], 1000, "{hits}");
    // The restored keys are the same keys: a search key works on the restored instance.
    let reader = get(&restored, "/keys?limit=100")["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|key| key["name"] == "reader")
        .unwrap()["key"]
        .as_str()
        .unwrap()
        .to_owned();
    let response = restored.raw(&json_request(
        "POST",
        "/indexes/movies/search",
        Some(&reader),
        r#"{"q": "carol"}"#,
    ));
    assert_eq!(response.status, 200, "{}", response.text());
    // A snapshot of the restored instance restores again.
    take_snapshot(&restored);
    drop(restored);
    let twice = restore(
        scratch.path(),
        "twice.ms",
        &scratch
            .path()
            .join("restored.snapshots/restored.ms.snapshot"),
        &[],
    );
    assert_eq!(documents(&twice, "movies").len(), 251);
}

#[test]
fn compacted_and_uncompacted_snapshots_restore_the_same_indexes() {
    let scratch = tempfile::tempdir().unwrap();
    let database = scratch.path().join("data.ms");
    let server = Server::start_on(&database, &options(&[]));
    let searches = populate(&server);
    set_control_state(&server);
    let compacted_task = take_snapshot(&server);
    let compacted = scratch.path().join("compacted.snapshot");
    std::fs::copy(snapshot_file(&server), &compacted).unwrap();
    drop(server);
    let server = Server::start_on(
        &database,
        &options(&["--experimental-no-snapshot-compaction"]),
    );
    take_snapshot(&server);
    let uncompacted = snapshot_file(&server);
    let before = before(&compacted_task);
    let expected = instance_state(&server, &searches, before);
    drop(server);

    // The compacted shard files hold the same trees in fewer pages.
    let shard_bytes = |snapshot: &Path| -> u64 {
        let unpacked = tempfile::tempdir().unwrap();
        coresearch::tasks::snapshot::archive::unpack_archive(snapshot, unpacked.path()).unwrap();
        let mut total = 0;
        let mut pending = vec![unpacked.path().join("data/indexes")];
        while let Some(directory) = pending.pop() {
            for entry in std::fs::read_dir(directory).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    pending.push(path);
                } else if path
                    .extension()
                    .is_some_and(|extension| extension == "store")
                {
                    total += std::fs::metadata(&path).unwrap().len();
                }
            }
        }
        total
    };
    let (small, large) = (shard_bytes(&compacted), shard_bytes(&uncompacted));
    assert!(
        small < large,
        "compacted {small} bytes, uncompacted {large}"
    );
    for (name, snapshot) in [("a.ms", &compacted), ("b.ms", &uncompacted)] {
        let restored = restore(scratch.path(), name, snapshot, &[]);
        assert_eq!(
            instance_state(&restored, &searches, before),
            expected,
            "{name}"
        );
    }
}

/// Documents per write of the heavy-writes test.
const DOCUMENTS_PER_WRITE: usize = 50;

/// The documents of write `write`: ids `write * DOCUMENTS_PER_WRITE ..`, tagged with it.
fn write_documents(write: usize) -> Value {
    let documents: Vec<Value> = (0..DOCUMENTS_PER_WRITE)
        .map(|n| {
            let id = write * DOCUMENTS_PER_WRITE + n;
            json!({"id": id, "write": write, "text": format!("write {write} document {n}")})
        })
        .collect();
    json!(documents)
}

/// Which documents of each write `server` holds: write → count.
fn documents_by_write(server: &Server) -> BTreeMap<u64, usize> {
    let mut counts = BTreeMap::new();
    for document in documents(server, "stream") {
        *counts
            .entry(document["write"].as_u64().unwrap())
            .or_default() += 1;
    }
    counts
}

#[test]
fn a_snapshot_taken_during_heavy_writes_restores_a_committed_state() {
    let server = Server::start_with(options(&[]));
    succeed(
        &server,
        "PATCH",
        "/indexes/stream/settings",
        Some(&json!({"filterableAttributes": ["write"]})),
    );
    let address = server.address.to_string();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut acknowledged = Vec::new();
            let mut write = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let body = write_documents(write).to_string();
                let raw =
                    json_request("POST", "/indexes/stream/documents", Some(MASTER_KEY), &body);
                let response = common::raw_to(&address, &raw).unwrap();
                assert_eq!(response.status, 202, "{}", response.text());
                acknowledged.push((write, response.json()["taskUid"].as_u64().unwrap()));
                write += 1;
            }
            acknowledged
        })
    };
    // Let writes pile up, snapshot in their midst, and keep writing for a while.
    std::thread::sleep(Duration::from_millis(700));
    let response = server.send("POST", "/snapshots", None);
    assert_eq!(response.status, 202);
    let snapshot_uid = response.json()["taskUid"].as_u64().unwrap();
    let snapshot_task = server.wait_task(snapshot_uid);
    assert_eq!(snapshot_task["status"], "succeeded", "{snapshot_task}");
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let acknowledged = writer.join().unwrap();
    let started_at = snapshot_task["startedAt"].as_str().unwrap().to_owned();
    // Every task before the snapshot, as it was then: succeeded before it started, or
    // still waiting.
    let mut succeeded_before = Vec::new();
    for &(write, uid) in &acknowledged {
        let task = server.wait_task(uid);
        assert_eq!(task["status"], "succeeded", "{task}");
        if task["finishedAt"].as_str().unwrap() < started_at.as_str() {
            succeeded_before.push((write, uid, task));
        }
    }
    assert!(
        !succeeded_before.is_empty(),
        "no write finished before the snapshot"
    );
    assert!(
        succeeded_before.len() < acknowledged.len(),
        "every write finished before the snapshot"
    );
    // The server's scratch directory goes with it: the snapshot is kept elsewhere.
    let scratch = tempfile::tempdir().unwrap();
    let snapshot = scratch.path().join("kept.snapshot");
    std::fs::copy(snapshot_file(&server), &snapshot).unwrap();
    drop(server);
    let restored = restore(scratch.path(), "restored.ms", &snapshot, &[]);
    // The writes that had succeeded are there as they were, with the same batch.
    for (_, uid, task) in &succeeded_before {
        let restored_task = get(&restored, &format!("/tasks/{uid}"));
        assert_eq!(&restored_task, task);
    }
    // The restored queue is a prefix of the acknowledged writes: every task it holds after
    // those is one that was waiting, and runs now.
    let restored_uids: Vec<u64> = get(
        &restored,
        "/tasks?limit=100000&types=documentAdditionOrUpdate",
    )["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|task| task["uid"].as_u64().unwrap())
        .collect();
    let kept: Vec<(usize, u64)> = acknowledged
        .iter()
        .copied()
        .filter(|(_, uid)| restored_uids.contains(uid))
        .collect();
    assert_eq!(kept.len(), restored_uids.len());
    assert_eq!(
        &acknowledged[..kept.len()],
        &kept[..],
        "a prefix of the writes"
    );
    assert!(
        kept.len() < acknowledged.len(),
        "writes after the snapshot are not in it"
    );
    println!(
        "writes: {} acknowledged, {} succeeded before the snapshot, {} in it",
        acknowledged.len(),
        succeeded_before.len(),
        kept.len()
    );
    for &(_, uid) in &kept {
        let task = restored.wait_task(uid);
        assert_eq!(task["status"], "succeeded", "{task}");
    }
    // No write is half applied: each kept write has all its documents, the others none.
    let by_write = documents_by_write(&restored);
    let expected: BTreeMap<u64, usize> = kept
        .iter()
        .map(|(write, _)| (*write as u64, DOCUMENTS_PER_WRITE))
        .collect();
    assert_eq!(by_write, expected);
    let filtered = post(
        &restored,
        "/indexes/stream/search",
        &json!({"filter": format!("write = {}", kept.last().unwrap().0), "limit": 1000}),
    );
    assert_eq!(filtered["estimatedTotalHits"], DOCUMENTS_PER_WRITE);
}

/// Documents in the heavy index: enough bytes that a snapshot of them takes a while.
const HEAVY_DOCUMENTS: usize = 20_000;

/// Fills the index `heavy` with [`HEAVY_DOCUMENTS`] documents of about 2 KB each.
fn index_heavy(server: &Server) {
    succeed(
        server,
        "PATCH",
        "/indexes/heavy/settings",
        Some(&json!({"searchableAttributes": ["title"]})),
    );
    let documents: Vec<Value> = (0..HEAVY_DOCUMENTS)
        .map(|n| {
            let payload: String = (0..200)
                .map(|k| format!("{:09}", n * 7919 + k * 104_729))
                .collect();
            json!({"id": n, "title": format!("heavy {n}"), "payload": payload})
        })
        .collect();
    succeed(
        server,
        "POST",
        "/indexes/heavy/documents",
        Some(&json!(documents)),
    );
}

/// The entries of `directory` (none when it is missing).
fn entries(directory: &Path) -> Vec<String> {
    std::fs::read_dir(directory)
        .map(|entries| {
            entries
                .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Waits until a snapshot is being written in `directory` (its staging directory exists).
fn wait_for_a_snapshot_in_progress(directory: &Path) {
    let started = Instant::now();
    while !entries(directory)
        .iter()
        .any(|name| name.ends_with(".snapshot.staging"))
    {
        assert!(started.elapsed() < WAIT, "the snapshot never started");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn a_kill_during_a_snapshot_leaves_the_earlier_snapshot_whole_and_the_instance_restarts() {
    let scratch = tempfile::tempdir().unwrap();
    let database = scratch.path().join("data.ms");
    let server = Server::start_on(&database, &options(&[]));
    index_heavy(&server);
    take_snapshot(&server);
    let earlier = snapshot_file(&server);
    let earlier_bytes = std::fs::read(&earlier).unwrap();
    let directory = snapshot_directory(&server);
    succeed(
        &server,
        "POST",
        "/indexes/heavy/documents",
        Some(&json!([{"id": "later", "title": "after the first snapshot"}])),
    );
    let response = server.send("POST", "/snapshots", None);
    assert_eq!(response.status, 202);
    let interrupted_uid = response.json()["taskUid"].as_u64().unwrap();
    wait_for_a_snapshot_in_progress(&directory);
    server.kill();
    assert_eq!(
        std::fs::read(&earlier).unwrap(),
        earlier_bytes,
        "the earlier snapshot changed"
    );
    let names = entries(&directory);
    assert_eq!(
        names
            .iter()
            .filter(|name| name.ends_with(".snapshot"))
            .count(),
        1,
        "{names:?}"
    );
    // The earlier snapshot still restores whole.
    let restored = restore(scratch.path(), "restored.ms", &earlier, &[]);
    let stats = get(&restored, "/indexes/heavy/stats");
    assert_eq!(stats["numberOfDocuments"], HEAVY_DOCUMENTS as u64);
    assert_eq!(
        get(&restored, "/indexes/heavy/documents/123")["title"],
        "heavy 123"
    );
    drop(restored);
    // The instance restarts intact and takes the interrupted snapshot again.
    let server = Server::start_on(&database, &options(&[]));
    let task = server.wait_task(interrupted_uid);
    assert_eq!(task["status"], "succeeded", "{task}");
    let names = entries(&directory);
    assert_eq!(names, vec!["data.ms.snapshot".to_owned()], "no leftovers");
    assert_eq!(
        get(&server, "/indexes/heavy/stats")["numberOfDocuments"],
        HEAVY_DOCUMENTS as u64 + 1
    );
    drop(server);
    let restored = restore(scratch.path(), "again.ms", &earlier, &[]);
    assert_eq!(
        get(&restored, "/indexes/heavy/documents/later")["title"],
        "after the first snapshot"
    );
}

#[test]
fn a_document_addition_waiting_during_the_snapshot_comes_back_and_runs() {
    let server = Server::start_with(options(&[]));
    // A long batch holds the queue: the addition and the snapshot wait behind it, and the
    // snapshot goes first (snapshots come before index batches).
    let documents: Vec<Value> = (0..HEAVY_DOCUMENTS)
        .map(|n| json!({"id": n, "title": format!("heavy {n} {}", "word ".repeat(40))}))
        .collect();
    let heavy = server.send("POST", "/indexes/heavy/documents", Some(&json!(documents)));
    assert_eq!(heavy.status, 202);
    let waiting = server.send(
        "POST",
        "/indexes/waiting/documents",
        Some(&json!([{"id": 1, "title": "waited"}])),
    );
    assert_eq!(waiting.status, 202);
    let waiting_uid = waiting.json()["taskUid"].as_u64().unwrap();
    let snapshot = server.send("POST", "/snapshots", None);
    let snapshot_task = server.wait_task(&snapshot.json()["taskUid"]);
    assert_eq!(snapshot_task["status"], "succeeded", "{snapshot_task}");
    let addition = server.wait_task(waiting_uid);
    assert!(
        addition["startedAt"].as_str().unwrap() > snapshot_task["startedAt"].as_str().unwrap(),
        "the addition ran after the snapshot: {addition}"
    );
    // The server's scratch directory goes with it: the snapshot is kept elsewhere.
    let scratch = tempfile::tempdir().unwrap();
    let file = scratch.path().join("kept.snapshot");
    std::fs::copy(snapshot_file(&server), &file).unwrap();
    drop(server);
    let restored = restore(scratch.path(), "restored.ms", &file, &[]);
    let task = restored.wait_task(waiting_uid);
    assert_eq!(task["status"], "succeeded", "{task}");
    assert_eq!(
        get(&restored, "/indexes/waiting/documents/1")["title"],
        "waited"
    );
}

/// Starts the binary with `arguments`, which must fail; answers its error output.
fn failing_start(arguments: &[&str]) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_coresearch"))
        .args([
            "--http-addr",
            "127.0.0.1:0",
            "--cores",
            "2",
            "--no-analytics",
        ])
        .args(arguments)
        .env("MEILI_LOG_LEVEL", "WARN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > FAILING_START_TIMEOUT {
            child.kill().unwrap();
            panic!("{arguments:?} did not stop");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut errors = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut errors)
        .unwrap();
    assert!(!status.success(), "{arguments:?} started: {errors}");
    errors
}

/// A zstd-compressed tar of `files` (path, content), in order.
fn zstd_tar(path: &Path, files: &[(&str, &[u8])]) {
    let mut builder = tar::Builder::new(Vec::new());
    for (name, content) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(content.len() as u64);
        header.set_mode(0o644);
        // The name's bytes as given, `..` included (the builder refuses those).
        header.as_gnu_mut().unwrap().name[..name.len()].copy_from_slice(name.as_bytes());
        header.set_cksum();
        builder.append(&header, *content).unwrap();
    }
    let tar = builder.into_inner().unwrap();
    let mut encoder =
        zstd::stream::write::Encoder::new(std::fs::File::create(path).unwrap(), 1).unwrap();
    encoder.write_all(&tar).unwrap();
    encoder.finish().unwrap();
}

/// What a zstd stream decompresses to (`None`: it does not decompress whole).
fn decompressed(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut content = Vec::new();
    zstd::Decoder::new(bytes)
        .ok()?
        .read_to_end(&mut content)
        .ok()?;
    Some(content)
}

/// The snapshot with one byte flipped, at or after its middle, where the flip changes what it
/// decompresses to. A flip in the compressed stream can leave the content as it was (an
/// unused entry of an entropy table, say); such a snapshot is whole and imports, so it tests
/// nothing here.
fn flipped_in_content(bytes: &[u8]) -> Vec<u8> {
    let original = decompressed(bytes);
    (bytes.len() / 2..bytes.len())
        .map(|position| {
            let mut flipped = bytes.to_vec();
            flipped[position] ^= 0x20;
            flipped
        })
        .find(|flipped| decompressed(flipped) != original)
        .expect("some flip in the second half changes the content")
}

#[test]
fn corrupt_truncated_foreign_and_future_snapshots_stop_the_start_and_leave_nothing() {
    let source = Server::start_with(options(&[]));
    succeed(
        &source,
        "POST",
        "/indexes/movies/documents",
        Some(&json!(
            (0..2000)
                .map(|n| json!({"id": n, "title": format!("movie {n}")}))
                .collect::<Vec<_>>()
        )),
    );
    take_snapshot(&source);
    let bytes = std::fs::read(snapshot_file(&source)).unwrap();
    drop(source);
    let scratch = tempfile::tempdir().unwrap();
    let flipped = flipped_in_content(&bytes);
    let header = |version: u32| {
        format!(
            r#"{{"format":"coresearch-snapshot","formatVersion":{version},"dataFormatVersion":1,"createdBy":"9.0.0","createdAt":"2030-01-01T00:00:00Z"}}"#
        )
    };
    let mut cases: Vec<(&str, PathBuf, &str)> = Vec::new();
    for (name, content, message) in [
        (
            "truncated",
            bytes[..bytes.len() / 2].to_vec(),
            "is damaged or truncated",
        ),
        (
            "tail-cut",
            bytes[..bytes.len() - 5].to_vec(),
            "is damaged or truncated",
        ),
        ("flipped", flipped, "is damaged or truncated"),
        (
            "garbage",
            b"this is not a snapshot".to_vec(),
            "is not a coresearch snapshot",
        ),
        (
            "meilisearch",
            vec![0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00],
            "as Meilisearch writes its snapshots",
        ),
    ] {
        let path = scratch.path().join(format!("{name}.snapshot"));
        std::fs::write(&path, content).unwrap();
        cases.push((name, path, message));
    }
    let future = scratch.path().join("future.snapshot");
    zstd_tar(&future, &[("snapshot.json", header(2).as_bytes())]);
    cases.push((
        "future",
        future,
        "was written by coresearch 9.0.0 in snapshot format 2",
    ));
    let foreign = scratch.path().join("foreign.snapshot");
    zstd_tar(&foreign, &[("VERSION", b"1.41.0")]);
    cases.push(("foreign", foreign, "is not a coresearch snapshot"));
    let unlisted = scratch.path().join("unlisted.snapshot");
    zstd_tar(
        &unlisted,
        &[
            ("snapshot.json", header(1).as_bytes()),
            ("data/coresearch-format", b"x"),
            ("manifest.json", br#"{"files": {}}"#),
        ],
    );
    cases.push((
        "unlisted",
        unlisted,
        "`data/coresearch-format` is not in its manifest",
    ));
    let escaping = scratch.path().join("escaping.snapshot");
    zstd_tar(
        &escaping,
        &[
            ("snapshot.json", header(1).as_bytes()),
            ("data/../../x", b"x"),
        ],
    );
    cases.push(("escaping", escaping, "unexpected entry"));
    for (name, snapshot, message) in cases {
        let database = scratch.path().join(format!("{name}.ms"));
        let errors = failing_start(&[
            "--db-path",
            &database.to_string_lossy(),
            "--import-snapshot",
            &snapshot.to_string_lossy(),
        ]);
        assert!(
            errors.contains("could not import the snapshot"),
            "{name}: {errors}"
        );
        assert!(
            errors.contains(message),
            "{name}: expected `{message}` in {errors}"
        );
        assert!(!database.exists(), "{name}: a data directory was left");
    }
    let left: Vec<String> = entries(scratch.path())
        .into_iter()
        .filter(|name| name.starts_with('.'))
        .collect();
    assert!(left.is_empty(), "staging folders were left: {left:?}");
    assert!(!scratch.path().join("x").exists());
}

#[test]
fn missing_snapshots_and_existing_databases_are_decided_as_meilisearch_does() {
    let scratch = tempfile::tempdir().unwrap();
    let missing = scratch.path().join("missing.snapshot");
    let database = scratch.path().join("data.ms");
    let database_text = database.to_string_lossy().into_owned();
    let missing_text = missing.to_string_lossy().into_owned();
    let errors = failing_start(&[
        "--db-path",
        &database_text,
        "--import-snapshot",
        &missing_text,
    ]);
    assert!(
        errors.contains(&format!("snapshot doesn't exist at {}", missing.display())),
        "{errors}"
    );
    assert!(!database.exists());
    // Ignored, the server starts empty.
    let server = Server::start_on(
        &database,
        &options(&[
            "--import-snapshot",
            &missing_text,
            "--ignore-missing-snapshot",
        ]),
    );
    succeed(
        &server,
        "POST",
        "/indexes/kept/documents",
        Some(&json!([{"id": 1}])),
    );
    take_snapshot(&server);
    let snapshot = snapshot_file(&server);
    drop(server);
    let snapshot_text = snapshot.to_string_lossy().into_owned();
    let errors = failing_start(&[
        "--db-path",
        &database_text,
        "--import-snapshot",
        &snapshot_text,
    ]);
    let canonical = database.canonicalize().unwrap();
    assert!(
        errors.contains(&format!(
            "database already exists at {canonical:?}, try to delete it or rename it"
        )),
        "{errors}"
    );
    // Ignored, the existing database is opened unchanged.
    let server = Server::start_on(
        &database,
        &options(&[
            "--import-snapshot",
            &snapshot_text,
            "--ignore-snapshot-if-db-exists",
        ]),
    );
    succeed(
        &server,
        "POST",
        "/indexes/second/documents",
        Some(&json!([{"id": 2}])),
    );
    let uids: Vec<String> = get(&server, "/indexes")["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|index| index["uid"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(uids, vec!["kept".to_owned(), "second".to_owned()]);
    drop(server);
    // The flags need `--import-snapshot`, and a dump and a snapshot are not imported together.
    for arguments in [
        vec!["--ignore-missing-snapshot"],
        vec!["--ignore-snapshot-if-db-exists"],
        vec![
            "--import-snapshot",
            &snapshot_text,
            "--import-dump",
            "x.dump",
        ],
    ] {
        let mut all = vec!["--db-path", &database_text];
        all.extend(arguments.iter().copied());
        let errors = failing_start(&all);
        assert!(errors.contains("Usage:"), "{arguments:?}: {errors}");
    }
    // An empty directory is no database: the snapshot is imported into it.
    let empty = scratch.path().join("empty.ms");
    std::fs::create_dir(&empty).unwrap();
    let server = Server::start_on(&empty, &options(&["--import-snapshot", &snapshot_text]));
    assert_eq!(get(&server, "/indexes")["total"], 1);
}

#[test]
fn scheduled_snapshots_are_taken_on_their_own() {
    let server = Server::start_with(options(&["--schedule-snapshot", "1"]));
    succeed(
        &server,
        "POST",
        "/indexes/movies/documents",
        Some(&json!([{"id": 1}])),
    );
    let started = Instant::now();
    let succeeded = loop {
        let tasks = get(&server, "/tasks?types=snapshotCreation&statuses=succeeded");
        if tasks["total"].as_u64().unwrap() >= 2 {
            break tasks;
        }
        assert!(started.elapsed() < WAIT, "no scheduled snapshot: {tasks}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(succeeded["results"][0]["indexUid"], Value::Null);
    let file = snapshot_file(&server);
    let scratch = tempfile::tempdir().unwrap();
    let restored = restore(scratch.path(), "restored.ms", &file, &[]);
    assert_eq!(get(&restored, "/indexes/movies/documents/1")["id"], 1);
    drop(restored);
    drop(server);
    // The environment variable, and a server without the option takes none.
    let server = Server::start_with(Options {
        environment: vec![("MEILI_SCHEDULE_SNAPSHOT".to_owned(), "1".to_owned())],
        ..options(&[])
    });
    let started = Instant::now();
    while get(&server, "/tasks?types=snapshotCreation")["total"] == 0 {
        assert!(
            started.elapsed() < WAIT,
            "no scheduled snapshot from the variable"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let quiet = Server::start_with(options(&[]));
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(get(&quiet, "/tasks?types=snapshotCreation")["total"], 0);
}

#[test]
fn only_a_key_over_every_index_creates_a_snapshot_and_failures_fail_the_task() {
    let server = Server::start_with(options(&[]));
    let response = server.raw(&request("POST", "/snapshots", None));
    assert_eq!(response.status, 401, "{}", response.text());
    assert_eq!(response.json()["code"], "missing_authorization_header");
    let body = json!({"actions": ["*"], "indexes": ["movies"], "expiresAt": null});
    let restricted = server.send("POST", "/keys", Some(&body)).json()["key"]
        .as_str()
        .unwrap()
        .to_owned();
    let response = server.raw(&json_request("POST", "/snapshots", Some(&restricted), ""));
    assert_eq!(response.status, 403, "{}", response.text());
    assert_eq!(response.json()["code"], "invalid_api_key");
    for action in ["snapshots.create", "snapshots.*", "*"] {
        let body = json!({"actions": [action], "indexes": ["*"], "expiresAt": null});
        let key = server.send("POST", "/keys", Some(&body)).json()["key"]
            .as_str()
            .unwrap()
            .to_owned();
        let response = server.raw(&json_request("POST", "/snapshots", Some(&key), "{}"));
        assert_eq!(response.status, 202, "{action}: {}", response.text());
        assert_eq!(response.json()["type"], "snapshotCreation");
    }
    let body = json!({"actions": ["dumps.create"], "indexes": ["*"], "expiresAt": null});
    let other = server.send("POST", "/keys", Some(&body)).json()["key"]
        .as_str()
        .unwrap()
        .to_owned();
    let response = server.raw(&json_request("POST", "/snapshots", Some(&other), ""));
    assert_eq!(response.status, 403, "{}", response.text());
    drop(server);

    // A snapshot directory that cannot be created fails the task with the I/O error.
    let scratch = tempfile::tempdir().unwrap();
    let blocked = scratch.path().join("a-file");
    std::fs::write(&blocked, "not a directory").unwrap();
    let server = Server::start_on(
        &scratch.path().join("data.ms"),
        &options(&["--snapshot-dir", &blocked.to_string_lossy()]),
    );
    let response = server.send("POST", "/snapshots", None);
    let task = server.wait_task(&response.json()["taskUid"]);
    assert_eq!(task["status"], "failed", "{task}");
    assert_eq!(task["error"]["code"], "io_error", "{task}");
    assert_eq!(task["error"]["type"], "system", "{task}");
    assert!(
        task["error"]["message"]
            .as_str()
            .unwrap()
            .contains("os error"),
        "{task}"
    );
    // The instance goes on.
    succeed(
        &server,
        "POST",
        "/indexes/movies/documents",
        Some(&json!([{"id": 1}])),
    );
}

#[test]
fn s3_snapshot_options_refuse_the_start_after_meilisearch_s_checks() {
    let scratch = tempfile::tempdir().unwrap();
    let database = scratch.path().join("data.ms");
    let database_text = database.to_string_lossy().into_owned();
    let bucket = [
        "--s3-bucket-url",
        "https://s3.eu-west-1.amazonaws.com",
        "--s3-bucket-region",
        "eu-west-1",
        "--s3-bucket-name",
        "backups",
        "--s3-snapshot-prefix",
        "prod",
    ];
    // Meilisearch's checks first (clap's messages).
    let mut incomplete = vec!["--db-path", database_text.as_str()];
    incomplete.extend_from_slice(&bucket);
    let errors = failing_start(&incomplete);
    assert!(
        errors.contains("the following required arguments were not provided"),
        "{errors}"
    );
    // Complete options: refused, naming them.
    let mut complete = incomplete.clone();
    complete.extend(["--s3-access-key", "a", "--s3-secret-key", "s"]);
    let errors = failing_start(&complete);
    assert!(
        errors.contains("S3 snapshots are not supported"),
        "{errors}"
    );
    assert!(errors.contains("--s3-bucket-url"), "{errors}");
    assert!(!database.exists(), "nothing was created");
}
