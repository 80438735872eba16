//! A sharded network of real instances growing from two shards to four while it serves
//! (Meilisearch Enterprise's `networkTopologyChange`, spoken with its import protocol):
//! a network search during the change sees every document exactly once; each instance's
//! change task ends only when the documents are where the new topology says on it; a new
//! instance creates each index once, however many instances send it documents.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use common::Server;
use common::network::{network_options, remote_of, start_network_instance};
use serde_json::{Value, json};

/// The instances, the first one the leader.
const NAMES: [&str; 4] = ["ms0", "ms1", "ms2", "ms3"];
/// The documents of the network.
const DOCUMENTS: u64 = 10_000;
/// How long a change of the whole network may take.
const CHANGE_WAIT: Duration = Duration::from_secs(240);
/// The pause between two looks at a change.
const CHANGE_POLL_INTERVAL: Duration = Duration::from_millis(100);

fn start_instance() -> Server {
    start_network_instance(&network_options(2))
}

/// The first `count` instances as remotes.
fn remotes(servers: &[Server], count: usize) -> Value {
    let remotes: serde_json::Map<String, Value> = NAMES
        .iter()
        .zip(servers)
        .take(count)
        .map(|(name, server)| ((*name).to_owned(), remote_of(server)))
        .collect();
    Value::Object(remotes)
}

/// One shard per instance of the first `count`, named after it.
fn shards(count: usize) -> Value {
    let shards: serde_json::Map<String, Value> = NAMES
        .iter()
        .take(count)
        .map(|name| (format!("s-{name}"), json!({"remotes": [name]})))
        .collect();
    Value::Object(shards)
}

fn latest_change(server: &Server) -> Value {
    let page = server
        .send("GET", "/tasks?types=networkTopologyChange&limit=1", None)
        .json();
    page["results"][0].clone()
}

fn is_finished(task: &Value) -> bool {
    matches!(
        task["status"].as_str(),
        Some("succeeded" | "failed" | "canceled")
    )
}

/// Waits until the latest change of `server` is finished; answers it.
fn wait_for_change(server: &Server) -> Value {
    let started = Instant::now();
    loop {
        let change = latest_change(server);
        if is_finished(&change) {
            assert_eq!(change["status"], "succeeded", "{change}");
            return change;
        }
        assert!(started.elapsed() < CHANGE_WAIT, "{change}");
        std::thread::sleep(CHANGE_POLL_INTERVAL);
    }
}

/// Waits until nothing waits in `server`'s queue.
fn wait_until_idle(server: &Server) {
    let started = Instant::now();
    loop {
        let page = server
            .send("GET", "/tasks?statuses=enqueued,processing&limit=1", None)
            .json();
        if page["total"] == 0 {
            return;
        }
        assert!(started.elapsed() < CHANGE_WAIT, "{page}");
        std::thread::sleep(CHANGE_POLL_INTERVAL);
    }
}

/// Four instances, the first two sharding [`DOCUMENTS`] books (shards `s-ms0`, `s-ms1`).
fn two_of_four_sharding_books() -> Vec<Server> {
    let servers: Vec<Server> = NAMES.iter().map(|_| start_instance()).collect();
    let body = json!({"self": "ms0", "leader": "ms0", "remotes": remotes(&servers, 2), "shards": shards(2)});
    let response = servers[0].send("PATCH", "/network", Some(&body));
    assert_eq!(response.status, 202, "{}", response.text());
    for server in &servers[..2] {
        wait_for_change(server);
    }
    let documents: Vec<Value> = (0..DOCUMENTS)
        .map(|id| json!({"id": id, "title": format!("book number {id}"), "year": 1900 + id % 120}))
        .collect();
    let response = servers[0].send("POST", "/indexes/books/documents", Some(&json!(documents)));
    assert_eq!(response.status, 202, "{}", response.text());
    let settings =
        json!({"filterableAttributes": ["year"], "pagination": {"maxTotalHits": DOCUMENTS}});
    let response = servers[0].send("PATCH", "/indexes/books/settings", Some(&settings));
    assert_eq!(response.status, 202, "{}", response.text());
    for server in &servers[..2] {
        wait_until_idle(server);
    }
    servers
}

/// The leader's change from two shards to four.
fn grow_to_four(servers: &[Server]) {
    let body = json!({"remotes": remotes(servers, 4), "shards": shards(4)});
    let response = servers[0].send("PATCH", "/network", Some(&body));
    assert_eq!(response.status, 202, "{}", response.text());
}

/// Every document id of the books on `server`.
fn document_ids(server: &Server) -> BTreeSet<String> {
    common::network::document_ids(server, "books")
}

/// The ids `name` holds once the network has four shards.
fn share_of(name: &str) -> BTreeSet<String> {
    let names: Vec<String> = NAMES.iter().map(|name| format!("s-{name}")).collect();
    (0..DOCUMENTS)
        .map(|id| id.to_string())
        .filter(|id| {
            let shard = shards::rendezvous::rendezvous_winner(names.iter().map(String::as_str), id);
            shard == Some(format!("s-{name}").as_str())
        })
        .collect()
}

/// A network search of every book on `server`: its ids in hit order, its total, its remote
/// errors.
fn network_search(server: &Server) -> (Vec<String>, u64, Value) {
    let query = json!({"q": "", "limit": DOCUMENTS, "attributesToRetrieve": ["id"]});
    let response = server.send("POST", "/indexes/books/search", Some(&query));
    assert_eq!(response.status, 200, "{}", response.text());
    let answer = response.json();
    let ids = answer["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|hit| hit["id"].to_string())
        .collect();
    let total = answer["estimatedTotalHits"].as_u64().unwrap();
    (ids, total, answer["remoteErrors"].clone())
}

#[test]
fn a_network_search_during_a_change_sees_every_document_exactly_once() {
    let servers = two_of_four_sharding_books();
    grow_to_four(&servers);
    let mut searches_during_the_change = 0;
    let started = Instant::now();
    for round in 0.. {
        let changing = servers
            .iter()
            .any(|server| !is_finished(&latest_change(server)));
        // Every instance coordinates searches, the new ones (which own nothing yet) too.
        let server = &servers[round % servers.len()];
        let (ids, total, remote_errors) = network_search(server);
        let distinct: BTreeSet<&String> = ids.iter().collect();
        assert_eq!(
            remote_errors,
            json!({}),
            "round {round}: {} {}",
            server.send("GET", "/network", None).text(),
            latest_change(server)
        );
        assert_eq!(total, DOCUMENTS, "round {round} on {}", NAMES[round % 4]);
        assert_eq!(ids.len() as u64, DOCUMENTS, "round {round}");
        assert_eq!(
            distinct.len() as u64,
            DOCUMENTS,
            "round {round}: a document twice"
        );
        if !changing {
            break;
        }
        searches_during_the_change += 1;
        assert!(started.elapsed() < CHANGE_WAIT, "the change did not end");
    }
    assert!(
        searches_during_the_change >= 2,
        "only {searches_during_the_change} searches ran during the change"
    );
    for server in &servers {
        wait_until_idle(server);
    }
    for (name, server) in NAMES.iter().zip(&servers) {
        assert_eq!(document_ids(server), share_of(name), "{name}");
    }
}

#[test]
fn a_change_ends_when_every_document_is_in_place() {
    let servers = two_of_four_sharding_books();
    let held_before: Vec<BTreeSet<String>> = servers.iter().map(document_ids).collect();
    grow_to_four(&servers);
    for (position, name) in NAMES.iter().enumerate() {
        let change = wait_for_change(&servers[position]);
        // Nothing else is awaited: the task's end is the moment the documents are in place.
        let held = document_ids(&servers[position]);
        assert_eq!(held, share_of(name), "{name} when its change ended");
        assert_eq!(change["details"]["message"], "Finished", "{change}");
        let moved = held_before[position].difference(&held).count() as u64;
        assert_eq!(change["details"]["movedDocuments"], moved, "{change}");
        // Every import it received was processed before it ended.
        let imports = servers[position]
            .send(
                "GET",
                "/tasks?types=documentAdditionOrUpdate&limit=1000",
                None,
            )
            .json();
        for import in imports["results"].as_array().unwrap() {
            if import["network"]["import_from"].is_object() {
                assert_eq!(import["status"], "succeeded", "{import}");
                assert!(
                    import["finishedAt"].as_str() <= change["finishedAt"].as_str(),
                    "{import} after {change}"
                );
            }
        }
        // Its last batch deleted what it no longer holds, as Meilisearch's does.
        let batch = servers[position]
            .send("GET", &format!("/batches/{}", change["batchUid"]), None)
            .json();
        let trace = batch["stats"]["progressTrace"].as_object().unwrap();
        assert!(
            trace
                .keys()
                .any(|step| step == "processing tasks > deleting documents"),
            "{batch}"
        );
    }
}

#[test]
fn a_new_instance_creates_each_index_once() {
    let servers = two_of_four_sharding_books();
    grow_to_four(&servers);
    for server in &servers {
        wait_for_change(server);
        wait_until_idle(server);
    }
    for (name, server) in NAMES.iter().zip(&servers) {
        let failed = server.send("GET", "/tasks?statuses=failed", None).json();
        assert_eq!(failed["total"], 0, "{name}: {failed}");
        let creations = server
            .send("GET", "/tasks?types=indexCreation", None)
            .json();
        let expected = if ["ms2", "ms3"].contains(name) { 1 } else { 0 };
        assert_eq!(creations["total"], expected, "{name}: {creations}");
        let filterable = server.send("GET", "/indexes/books/settings/filterable-attributes", None);
        assert_eq!(filterable.json(), json!(["year"]), "{name}");
    }
}

/// The documents of the write that keeps `ms1` busy before it can export.
const SLOW_WRITE_DOCUMENTS: u64 = 60_000;
/// The pause between two looks at a task while watching its status.
const STATUS_POLL_INTERVAL: Duration = Duration::from_millis(5);

/// Registers through the leader a write of documents only `ms1` keeps, and waits until
/// `ms1` has it: `ms1` indexes it before it exports in the next change (it was registered
/// before), while `ms0` is done with it at once.
fn keep_ms1_busy(servers: &[Server]) {
    let old_shards = ["s-ms0", "s-ms1"];
    let documents: Vec<Value> = (DOCUMENTS..)
        .filter(|id| {
            shards::rendezvous::rendezvous_winner(old_shards, &id.to_string()) == Some("s-ms1")
        })
        .take(SLOW_WRITE_DOCUMENTS as usize)
        .map(|id| json!({"id": id, "title": format!("late book {id}"), "year": 1990}))
        .collect();
    let response = servers[0].send("POST", "/indexes/books/documents", Some(&json!(documents)));
    assert_eq!(response.status, 202, "{}", response.text());
    let write = response.json()["taskUid"].as_u64().unwrap();
    let forwarded = Instant::now();
    while !servers[0]
        .send("GET", &format!("/tasks/{write}"), None)
        .json()["network"]["remote_tasks"]["ms1"]["taskUid"]
        .is_u64()
    {
        assert!(
            forwarded.elapsed() < CHANGE_WAIT,
            "the write never reached ms1"
        );
        std::thread::sleep(STATUS_POLL_INTERVAL);
    }
}

/// Watches the change `uid` of `server` until it ends, checking the dates of each status
/// seen; answers the ended task and the views seen `enqueued` after a batch held it.
fn watch_change(server: &Server, uid: u64) -> (Value, Vec<Value>) {
    let mut waiting = Vec::new();
    let started = Instant::now();
    loop {
        let change = server.send("GET", &format!("/tasks/{uid}"), None).json();
        match change["status"].as_str() {
            Some("enqueued") if !change["batchUid"].is_null() => {
                assert_eq!(change["startedAt"], Value::Null, "{change}");
                waiting.push(change.clone());
            }
            Some("enqueued") => {}
            Some("processing") => {
                assert!(change["startedAt"].is_string(), "{change}");
                assert!(change["batchUid"].is_u64(), "{change}");
            }
            _ => return (change, waiting),
        }
        assert_eq!(change["finishedAt"], Value::Null, "{change}");
        assert!(started.elapsed() < CHANGE_WAIT, "{change}");
        std::thread::sleep(STATUS_POLL_INTERVAL);
    }
}

/// Meilisearch 1.41's statuses of a change between its batches: a new instance that
/// processed the imports of one sender and waits for another's shows its change `enqueued`
/// (no start date, the uid of the batch of imports that carried it, which counts it
/// `enqueued`); in a batch it is `processing` with that batch's start; once succeeded, its
/// start is that of its last batch.
#[test]
fn a_change_waiting_for_imports_is_enqueued_between_its_batches() {
    let servers = two_of_four_sharding_books();
    keep_ms1_busy(&servers);
    grow_to_four(&servers);
    let new_instance = &servers[2];
    let uid = latest_change(new_instance)["uid"].as_u64().unwrap();
    let (change, waiting) = watch_change(new_instance, uid);
    assert_eq!(change["status"], "succeeded", "{change}");
    eprintln!("seen enqueued between batches {} times", waiting.len());
    let waited = waiting
        .iter()
        .find(|seen| {
            seen["details"]["message"]
                .as_str()
                .is_some_and(|message| message.starts_with("Importing documents"))
        })
        .unwrap_or_else(|| panic!("never seen waiting for imports: {waiting:?}"));
    // The batch it names ran imports (of the index or of documents), carrying the change,
    // and counts it enqueued.
    let batch = new_instance
        .send("GET", &format!("/batches/{}", waited["batchUid"]), None)
        .json();
    assert!(batch["finishedAt"].is_string(), "{batch}");
    assert_eq!(batch["stats"]["status"]["enqueued"], 1, "{batch}");
    assert_eq!(
        batch["stats"]["types"]["networkTopologyChange"], 1,
        "{batch}"
    );
    assert!(batch["stats"]["totalNbTasks"].as_u64() > Some(1), "{batch}");
    let strategy =
        format!("stopped after batching network task with id {uid} and a batch of import tasks: ");
    assert!(
        batch["batchStrategy"]
            .as_str()
            .is_some_and(|text| text.starts_with(&strategy)),
        "{batch}"
    );
    // Succeeded: started when its last batch started, which counts it succeeded.
    let last = new_instance
        .send("GET", &format!("/batches/{}", change["batchUid"]), None)
        .json();
    assert_eq!(change["startedAt"], last["startedAt"], "{change} {last}");
    assert_eq!(last["stats"]["status"], json!({"succeeded": 1}), "{last}");
    for server in &servers {
        wait_until_idle(server);
    }
}
