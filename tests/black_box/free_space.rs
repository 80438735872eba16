//! After a batch, copy-on-write leaves the pages it replaced free in the shard files; once
//! the task queue is empty the server gives their disk blocks back to the file system. Seen
//! from outside: the data the index files hold (their extents, holes left out) comes down to
//! what `/stats` reports as used, and every document is still there, and still writable.

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]

use crate::common;

use std::os::unix::io::AsRawFd;
use std::path::Path;
use std::time::{Duration, Instant};

use common::{MASTER_KEY, Options, Server};
use meilisearch_sdk::client::Client;
use serde_json::{Value, json};

const DOCUMENTS: u64 = 20_000;
/// Free pages a shard keeps rather than release (`IDLE_RELEASE_PAGES_MIN` pages of 4 KiB), times
/// two shards, plus the task queue's file.
const UNRELEASED_BYTES_MAX: u64 = 2 * 256 * 4096 + (1 << 20);
/// Rounds of new documents of the idle repack test, and documents per round but the last
/// (enough that the position trees outgrow the idle policy's spare-page floor).
const SMALL_ROUNDS: u64 = 9;
const SMALL_ROUND_DOCUMENTS: u64 = 3_000;
/// After the idle repack, a compaction keeps at least this share of the used bytes.
const IDLE_REPACKED_PERCENT_MIN: u64 = 72;
/// How long `usedDatabaseSize` stays unchanged before the idle work counts as done: the idle
/// repack commits tree by tree at a low CPU priority, so a busy machine spaces its commits.
const SETTLED_FOR: Duration = Duration::from_secs(5);
/// How long the idle work may take to settle.
const SETTLE_WAIT: Duration = Duration::from_secs(90);
/// Pause between two reads of a size that is settling.
const SETTLE_POLL_INTERVAL: Duration = Duration::from_millis(50);
/// How long the release may take after the last task finished.
const RELEASE_WAIT: Duration = Duration::from_secs(20);

fn documents(round: u64) -> Vec<Value> {
    (0..DOCUMENTS)
        .map(|id| {
            let words: Vec<String> = (0..20)
                .map(|position| format!("word{}", (id * 7 + position) % 997))
                .collect();
            json!({"id": id, "round": round, "title": format!("document {id} {}", words.join(" "))})
        })
        .collect()
}

/// Apparent bytes and bytes of data extents of every file under `directory`.
fn file_bytes(directory: &Path) -> (u64, u64) {
    let mut apparent = 0;
    let mut data = 0;
    for entry in std::fs::read_dir(directory).expect("read_dir succeeds") {
        let entry = entry.expect("a directory entry");
        let metadata = entry.metadata().expect("metadata succeeds");
        if metadata.is_dir() {
            let (inner_apparent, inner_data) = file_bytes(&entry.path());
            apparent += inner_apparent;
            data += inner_data;
        } else {
            apparent += metadata.len();
            data += data_extent_bytes(&entry.path(), metadata.len());
        }
    }
    (apparent, data)
}

/// Bytes of `path` that lie in data extents rather than holes, walked with `SEEK_DATA` and
/// `SEEK_HOLE`. Not `st_blocks`: that also counts the file system's own blocks mapping a
/// fragmented file (an ext4 extent tree grows a block per few hundred extents), which are
/// no page of ours.
fn data_extent_bytes(path: &Path, length: u64) -> u64 {
    let file = std::fs::File::open(path).expect("open succeeds");
    let descriptor = file.as_raw_fd();
    let end = libc::off_t::try_from(length).expect("the length fits off_t");
    let mut data = 0;
    let mut position: libc::off_t = 0;
    while position < end {
        // SAFETY: a plain system call on a descriptor `file` keeps open; no pointers.
        let start = unsafe { libc::lseek(descriptor, position, libc::SEEK_DATA) };
        if start < 0 {
            let error = std::io::Error::last_os_error();
            // ENXIO: only a hole remains up to the end; anything else would undercount.
            assert_eq!(
                error.raw_os_error(),
                Some(libc::ENXIO),
                "SEEK_DATA fails: {error}"
            );
            break;
        }
        // SAFETY: a plain system call on the same open descriptor; no pointers.
        let hole = unsafe { libc::lseek(descriptor, start, libc::SEEK_HOLE) };
        assert!(hole >= start, "SEEK_HOLE fails on {}", path.display());
        data += (hole - start) as u64;
        position = hole;
    }
    data
}

async fn add_round(client: &Client, round: u64) {
    let task = client
        .index("books")
        .add_documents(&documents(round), Some("id"))
        .await
        .expect("add_documents succeeds")
        .wait_for_completion(client, None, Some(Duration::from_secs(120)))
        .await
        .expect("wait_for_completion succeeds");
    assert!(task.is_success(), "{task:?}");
}

fn used_database_size(server: &Server) -> u64 {
    server.send("GET", "/stats", None).json()["usedDatabaseSize"]
        .as_u64()
        .expect("usedDatabaseSize is a number")
}

#[tokio::test]
async fn free_pages_go_back_to_the_file_system_once_the_queue_is_empty() {
    let server = Server::start_with(Options {
        master_key: Some(MASTER_KEY.to_string()),
        ..Options::default()
    });
    let client = Client::new(server.url(), Some(MASTER_KEY)).expect("new succeeds");
    add_round(&client, 0).await;
    // Every document replaced: most pages of the first round become free.
    add_round(&client, 1).await;
    let indexes = server.data_directory.join("indexes");
    let used = used_database_size(&server);
    let started = Instant::now();
    let (apparent, data) = loop {
        let (apparent, data) = file_bytes(&indexes);
        if data <= used + UNRELEASED_BYTES_MAX || started.elapsed() > RELEASE_WAIT {
            break (apparent, data);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        data <= used + UNRELEASED_BYTES_MAX,
        "index files hold {data} bytes of data for {used} bytes used ({apparent} apparent)"
    );
    assert!(
        apparent > used + UNRELEASED_BYTES_MAX,
        "the rewrite left free pages to release ({apparent} apparent, {used} used)"
    );

    // The documents are intact, and writes reuse the released pages.
    add_round(&client, 2).await;
    let index = client.index("books");
    let stats = index.get_stats().await.expect("get_stats succeeds");
    assert_eq!(stats.number_of_documents as u64, DOCUMENTS);
    for id in [0, 4_999, DOCUMENTS - 1] {
        let document: Value = index
            .get_document(&id.to_string())
            .await
            .expect("get_document succeeds");
        assert_eq!(document["round"], 2, "{document}");
        assert!(
            document["title"]
                .as_str()
                .is_some_and(|title| title.starts_with(&format!("document {id} ")))
        );
    }
    let found = server.send(
        "POST",
        "/indexes/books/search",
        Some(&json!({"q": "word996", "limit": 1})),
    );
    assert_eq!(found.status, 200, "{}", found.text());
    assert!(found.json()["estimatedTotalHits"].as_u64() > Some(0));
}

/// What `read` answers once it has stayed the same for [`SETTLED_FOR`]: the idle work done.
/// Polled every [`SETTLE_POLL_INTERVAL`].
async fn settled<T: PartialEq>(what: &str, read: impl Fn() -> T) -> T {
    let started = Instant::now();
    let mut last = (read(), Instant::now());
    loop {
        tokio::time::sleep(SETTLE_POLL_INTERVAL).await;
        let current = read();
        if current != last.0 {
            last = (current, Instant::now());
        } else if last.1.elapsed() >= SETTLED_FOR {
            return current;
        }
        assert!(started.elapsed() < SETTLE_WAIT, "{what} keeps changing");
    }
}

/// `usedDatabaseSize` once it settled.
async fn settled_used_database_size(server: &Server) -> u64 {
    settled("usedDatabaseSize", || used_database_size(server)).await
}

/// The bytes of data the index files hold and `usedDatabaseSize`, once neither changes.
async fn settled_sizes(server: &Server) -> (u64, u64) {
    let indexes = server.data_directory.join("indexes");
    settled("the index files' data or usedDatabaseSize", || {
        (file_bytes(&indexes).1, used_database_size(server))
    })
    .await
}

/// Task `uid` once it succeeded or failed, through raw HTTP.
async fn finished_task(server: &Server, uid: u64) -> Value {
    let started = Instant::now();
    loop {
        let task = server.send("GET", &format!("/tasks/{uid}"), None).json();
        if task["status"] == "succeeded" || task["status"] == "failed" {
            return task;
        }
        assert!(started.elapsed() < RELEASE_WAIT, "{task}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn compaction_gives_back_every_free_page_and_reports_both_sizes() {
    let server = Server::start_with(Options {
        master_key: Some(MASTER_KEY.to_string()),
        ..Options::default()
    });
    let client = Client::new(server.url(), Some(MASTER_KEY)).expect("new succeeds");

    let invalid = server.send("POST", "/indexes/not%20valid/compact", None);
    assert_eq!(invalid.status, 400, "{}", invalid.text());
    assert_eq!(invalid.json()["code"], "invalid_index_uid");
    let missing = server.send("POST", "/indexes/missing/compact", None);
    assert_eq!(missing.status, 202, "{}", missing.text());
    assert_eq!(missing.json()["type"], "indexCompaction");
    let uid = missing.json()["taskUid"].as_u64().expect("a task uid");
    let task = finished_task(&server, uid).await;
    assert_eq!(task["status"], "failed", "{task}");
    assert_eq!(task["error"]["code"], "index_not_found", "{task}");
    assert_eq!(task["error"]["message"], "Index `missing` not found.");

    add_round(&client, 0).await;
    add_round(&client, 1).await;
    // Once the queue is idle the server has already rewritten the sparse trees.
    let used_before = settled_used_database_size(&server).await;
    // The official client's `compact` enqueues the task and reads back its outcome.
    let compaction = client
        .index("books")
        .compact()
        .await
        .expect("compact succeeds");
    let uid = u64::from(compaction.get_task_uid());
    let outcome = compaction
        .wait_for_completion(&client, None, Some(Duration::from_secs(60)))
        .await
        .expect("wait_for_completion succeeds");
    assert!(outcome.is_success(), "{outcome:?}");
    let task = finished_task(&server, uid).await;
    assert_eq!(task["status"], "succeeded", "{task}");
    assert_eq!(task["type"], "indexCompaction");
    for size in ["preCompactionSize", "postCompactionSize"] {
        let text = task["details"][size].as_str().unwrap_or_default();
        assert!(
            text.ends_with("B") && text.starts_with(|first: char| first.is_ascii_digit()),
            "{size}: {task}"
        );
    }
    // Every free page is released: the index files hold data for live pages only. Read
    // once both settle: the idle server's own maintenance may still be committing.
    let (data, used) = settled_sizes(&server).await;
    assert!(
        data <= used,
        "index files hold {data} bytes of data for {used} bytes used"
    );
    let stats = client
        .index("books")
        .get_stats()
        .await
        .expect("get_stats succeeds");
    assert_eq!(stats.number_of_documents as u64, DOCUMENTS);
    // The trees were rewritten in full pages: the live data itself takes less room, and
    // searches find what they found before.
    assert!(
        used < used_before,
        "used {used} bytes after compaction, {used_before} before"
    );
    let results = client
        .index("books")
        .search()
        .with_query("document 7777")
        .with_limit(3)
        .execute::<Value>()
        .await
        .expect("search succeeds");
    // Only document 7777 holds the word `7777` (too short for a typo).
    assert_eq!(results.hits[0].result, documents(1)[7_777]);
    for id in [0, 7_777, DOCUMENTS - 1] {
        let document: Value = client
            .index("books")
            .get_document(&id.to_string())
            .await
            .expect("get_document succeeds");
        assert_eq!(document, documents(1)[id as usize]);
    }
}

/// New documents `ids`, with words shared by every round.
fn new_documents(ids: std::ops::Range<u64>) -> Vec<Value> {
    ids.map(|id| {
        let words: Vec<String> = (0..12)
            .map(|position| format!("term{}", (id * 13 + position * 101) % 4_001))
            .collect();
        json!({"id": id, "title": words.join(" ")})
    })
    .collect()
}

/// The documents of round `round`: [`SMALL_ROUND_DOCUMENTS`] each, and the last round as
/// many as the ones before together.
fn round_documents(round: u64) -> Vec<Value> {
    let first = round * SMALL_ROUND_DOCUMENTS;
    if round + 1 == SMALL_ROUNDS {
        new_documents(first..2 * first)
    } else {
        new_documents(first..first + SMALL_ROUND_DOCUMENTS)
    }
}

async fn compact(client: &Client) {
    let compaction = client
        .index("books")
        .compact()
        .await
        .expect("compact succeeds")
        .wait_for_completion(client, None, Some(Duration::from_secs(60)))
        .await
        .expect("wait_for_completion succeeds");
    assert!(compaction.is_success(), "{compaction:?}");
}

#[tokio::test]
async fn an_idle_server_rewrites_the_trees_batches_left_sparse() {
    let server = Server::start_with(Options {
        master_key: Some(MASTER_KEY.to_string()),
        ..Options::default()
    });
    let client = Client::new(server.url(), Some(MASTER_KEY)).expect("new succeeds");
    // Each round adds to the postings of most words: leaves all over the word trees split in
    // halves. The last round doubles the index, so the idle policy (which waits for a
    // repacked tree to grow) repacks the sparse trees after it.
    for round in 0..SMALL_ROUNDS {
        let task = client
            .index("books")
            .add_documents(&round_documents(round), Some("id"))
            .await
            .expect("add_documents succeeds")
            .wait_for_completion(&client, None, Some(Duration::from_secs(120)))
            .await
            .expect("wait_for_completion succeeds");
        assert!(task.is_success(), "{task:?}");
    }
    let settled = settled_used_database_size(&server).await;
    compact(&client).await;
    let compacted = used_database_size(&server);
    // Measured on this data: left sparse (no idle repack), a compaction keeps 0.69 of the used
    // bytes; with the sparse trees repacked when idle into leaves 90 % full, 0.83 (a
    // compaction also stores the documents written before the shards' dictionary again with
    // it). The rounds are large enough that the position trees of each shard have more spare
    // pages than the idle policy's floor: with 1,500 documents per round, the word trees
    // (written leaf by leaf by merges, so denser) stayed under it and nothing was repacked.
    assert!(
        compacted * 100 >= settled * IDLE_REPACKED_PERCENT_MIN,
        "used {settled} bytes once idle, {compacted} after a compaction"
    );
    let results = client
        .index("books")
        .search()
        .with_query("term17")
        .execute::<Value>()
        .await
        .expect("search succeeds");
    assert!(results.estimated_total_hits > Some(0));
    let last = round_documents(SMALL_ROUNDS - 1)
        .pop()
        .expect("a last document");
    let document: Value = client
        .index("books")
        .get_document(&last["id"].to_string())
        .await
        .expect("get_document succeeds");
    assert_eq!(document, last);
}
