//! Write coalescing under search load (issue 43, `src/tasks/coalescing.rs`): while a client
//! searches, small document payloads sent in quick succession are indexed in one batch,
//! which starts within the coalescing window of the first payload; with no search running,
//! a payload's batch starts at once.

#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::Server;
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// The server's coalescing window (`tasks::coalescing::COALESCING_WINDOW`).
const COALESCING_WINDOW: Duration = Duration::from_secs(1);
/// Longer than the server's `SEARCH_ACTIVITY_WINDOW`: searches count as stopped after it.
const SEARCHES_FORGOTTEN_AFTER: Duration = Duration::from_millis(800);
/// Slack for a loaded machine on the latest start a coalesced batch may have.
const START_SLACK: Duration = Duration::from_millis(1500);

fn payload(first_id: u64) -> Value {
    json!(
        (first_id..first_id + 10)
            .map(|id| json!({"id": id, "title": format!("book {id}")}))
            .collect::<Vec<_>>()
    )
}

fn enqueue(server: &Server, body: &Value) -> Value {
    let response = server.send("POST", "/indexes/books/documents", Some(body));
    assert_eq!(response.status, 202, "{}", response.text());
    response.json()["taskUid"].clone()
}

fn instant(task: &Value, field: &str) -> OffsetDateTime {
    OffsetDateTime::parse(task[field].as_str().unwrap(), &Rfc3339).unwrap()
}

/// Searches the index in a loop until `stop` is set.
fn search_until(
    address: std::net::SocketAddr,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let request = common::json_request(
            "POST",
            "/indexes/books/search",
            None,
            &json!({"q": "book"}).to_string(),
        );
        while !stop.load(Ordering::SeqCst) {
            let answer = common::raw_to(&address.to_string(), &request);
            assert!(answer.is_some_and(|answer| answer.status == 200));
        }
    })
}

#[test]
fn payloads_sent_while_searches_run_are_indexed_in_one_batch_started_within_the_window() {
    let server = Server::start();
    let first = enqueue(&server, &payload(0));
    assert_eq!(server.wait_task(&first)["status"], "succeeded");
    let stop = Arc::new(AtomicBool::new(false));
    let searcher = search_until(server.address, stop.clone());
    std::thread::sleep(Duration::from_millis(200));
    let uids: Vec<Value> = (1..4)
        .map(|round| {
            let uid = enqueue(&server, &payload(round * 100));
            std::thread::sleep(Duration::from_millis(150));
            uid
        })
        .collect();
    let tasks: Vec<Value> = uids.iter().map(|uid| server.wait_task(uid)).collect();
    stop.store(true, Ordering::SeqCst);
    searcher.join().unwrap();
    for task in &tasks {
        assert_eq!(task["status"], "succeeded", "{task}");
        assert_eq!(task["batchUid"], tasks[0]["batchUid"], "{tasks:?}");
    }
    let waited = instant(&tasks[0], "startedAt") - instant(&tasks[0], "enqueuedAt");
    assert!(
        waited <= COALESCING_WINDOW + START_SLACK,
        "the batch started {waited} after its first payload"
    );
    // Searches stopped: the next payload's batch does not wait for more.
    std::thread::sleep(SEARCHES_FORGOTTEN_AFTER);
    let alone = server.wait_task(enqueue(&server, &payload(1_000)));
    let waited = instant(&alone, "startedAt") - instant(&alone, "enqueuedAt");
    assert!(
        waited < COALESCING_WINDOW,
        "started {waited} after enqueueing"
    );
    let count = server.send("GET", "/indexes/books/stats", None).json();
    assert_eq!(count["numberOfDocuments"], 50, "{count}");
}
