//! Crash safety of the write path: a client streams additions, updates and deletions to two
//! indexes while the server is killed with SIGKILL at random moments; after each restart
//! every acknowledged task must reach a terminal state, and each index must hold exactly the
//! documents a model gets by applying the succeeded tasks in uid order.
//!
//! Each request carries `customMetadata=<operation number>`, so even a task whose 202 was
//! lost in the crash is matched to the operation that created it.

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]

use crate::common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Options, Server, json_request, request};
use serde_json::{Map, Value, json};

/// Rounds of stream-then-kill on the same data directory.
const CRASH_ROUNDS: usize = 4;
/// Document ids per index (small, so operations overlap).
const DOCUMENT_IDS: u64 = 40;
const INDEXES: [&str; 2] = ["alpha", "beta"];
/// Operations the client has ready per round (the kill comes long before it runs out).
const OPERATIONS_PER_ROUND: usize = 400;
/// The kill comes this many milliseconds after the server started, plus up to
/// `KILL_DELAY_SPREAD_MILLISECONDS` more.
const KILL_DELAY_MIN_MILLISECONDS: u64 = 100;
const KILL_DELAY_SPREAD_MILLISECONDS: u64 = 700;

/// One operation of the stream.
#[derive(Debug, Clone)]
enum Operation {
    Replace(Vec<Value>),
    Update(Vec<Value>),
    Delete(Vec<String>),
}

/// A small deterministic generator (xorshift), seeded per run.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound
    }
}

fn operation(random: &mut Random, number: u64) -> (usize, Operation) {
    let index = random.below(INDEXES.len() as u64) as usize;
    let count = 1 + random.below(6);
    let ids: Vec<u64> = (0..count).map(|_| random.below(DOCUMENT_IDS)).collect();
    let operation = match random.below(4) {
        0 | 1 => Operation::Replace(
            ids.iter()
                .map(|id| json!({"id": id, "written_by": number, "color": random.below(3)}))
                .collect(),
        ),
        2 => Operation::Update(
            ids.iter()
                .map(|id| json!({"id": id, "updated_by": number}))
                .collect(),
        ),
        _ => Operation::Delete(ids.iter().map(u64::to_string).collect()),
    };
    (index, operation)
}

fn send(server_url: &str, index: &str, operation: &Operation, number: u64) -> Option<u64> {
    let (method, path, body) = match operation {
        Operation::Replace(documents) => (
            "POST",
            format!("/indexes/{index}/documents?customMetadata={number}"),
            Value::from(documents.clone()).to_string(),
        ),
        Operation::Update(documents) => (
            "PUT",
            format!("/indexes/{index}/documents?customMetadata={number}"),
            Value::from(documents.clone()).to_string(),
        ),
        Operation::Delete(ids) => (
            "POST",
            format!("/indexes/{index}/documents/delete-batch?customMetadata={number}"),
            Value::from(ids.clone()).to_string(),
        ),
    };
    let response = common::raw_to(server_url, &json_request(method, &path, None, &body))?;
    (response.status == 202).then(|| {
        response.json()["taskUid"]
            .as_u64()
            .expect("as_u64 finds a value of that type")
    })
}

fn apply(model: &mut BTreeMap<String, Map<String, Value>>, operation: &Operation) {
    match operation {
        Operation::Replace(documents) => {
            for document in documents {
                let id = document["id"].to_string();
                model.insert(
                    id,
                    document
                        .as_object()
                        .expect("as_object finds a value of that type")
                        .clone(),
                );
            }
        }
        Operation::Update(documents) => {
            for document in documents {
                let id = document["id"].to_string();
                let entry = model.entry(id).or_default();
                for (key, value) in document
                    .as_object()
                    .expect("as_object finds a value of that type")
                {
                    entry.insert(key.clone(), value.clone());
                }
            }
        }
        Operation::Delete(ids) => {
            for id in ids {
                model.remove(id);
            }
        }
    }
}

fn wait_idle(server: &Server) {
    for _ in 0..1500 {
        let pending = server
            .raw(&request(
                "GET",
                "/tasks?statuses=enqueued,processing&limit=1",
                None,
            ))
            .json();
        if pending["total"] == 0 {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("tasks still pending after 30 s");
}

/// Every task of the server, oldest first.
fn all_tasks(server: &Server) -> Vec<Value> {
    let mut tasks = Vec::new();
    let mut from: Option<u64> = None;
    loop {
        let path = match from {
            Some(from) => format!("/tasks?limit=1000&from={from}"),
            None => "/tasks?limit=1000".to_owned(),
        };
        let page = server.raw(&request("GET", &path, None)).json();
        tasks.extend(
            page["results"]
                .as_array()
                .expect("as_array finds a value of that type")
                .iter()
                .cloned(),
        );
        match page["next"].as_u64() {
            Some(next) => from = Some(next),
            None => break,
        }
    }
    tasks.reverse();
    tasks
}

fn documents_of(server: &Server, index: &str) -> BTreeMap<String, Map<String, Value>> {
    let response = server.raw(&request(
        "GET",
        &format!("/indexes/{index}/documents?limit=1000"),
        None,
    ));
    if response.status == 404 {
        return BTreeMap::new();
    }
    response.json()["results"]
        .as_array()
        .expect("as_array finds a value of that type")
        .iter()
        .map(|document| {
            (
                document["id"].to_string(),
                document
                    .as_object()
                    .expect("as_object finds a value of that type")
                    .clone(),
            )
        })
        .collect()
}

#[test]
fn every_acknowledged_task_ends_and_the_documents_match_the_succeeded_tasks_after_crashes() {
    let seed = std::env::var("CORESEARCH_CRASH_SEED")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(0x5eed_c0de_u64);
    println!("seed {seed}");
    let mut random = Random(seed | 1);
    let scratch = tempfile::tempdir().expect("tempdir succeeds");
    let data = scratch.path().join("data.ms");
    let sent: Arc<Mutex<BTreeMap<u64, (usize, Operation)>>> = Arc::default();
    let mut acknowledged: Vec<u64> = Vec::new();
    let mut number = 0u64;
    for round in 0..CRASH_ROUNDS {
        let server = Server::start_on(&data, &Options::default());
        let url = server.address.to_string();
        let stop = Arc::new(AtomicBool::new(false));
        let operations: Vec<(u64, usize, Operation)> = (0..OPERATIONS_PER_ROUND)
            .map(|_| {
                number += 1;
                let (index, operation) = operation(&mut random, number);
                (number, index, operation)
            })
            .collect();
        let client = {
            let stop = stop.clone();
            let sent = sent.clone();
            std::thread::spawn(move || {
                let mut acknowledged = Vec::new();
                for (number, index, operation) in operations {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    sent.lock()
                        .expect("lock succeeds")
                        .insert(number, (index, operation.clone()));
                    match send(&url, INDEXES[index], &operation, number) {
                        Some(uid) => acknowledged.push(uid),
                        None => break,
                    }
                }
                acknowledged
            })
        };
        let delay = KILL_DELAY_MIN_MILLISECONDS + random.below(KILL_DELAY_SPREAD_MILLISECONDS);
        std::thread::sleep(Duration::from_millis(delay));
        server.kill();
        stop.store(true, Ordering::SeqCst);
        let round_acknowledged = client.join().expect("join succeeds");
        println!(
            "round {round}: killed after {delay} ms, {} tasks acknowledged",
            round_acknowledged.len()
        );
        acknowledged.extend(round_acknowledged);
    }

    let server = Server::start_on(&data, &Options::default());
    wait_idle(&server);
    let tasks = all_tasks(&server);
    let by_uid: BTreeMap<u64, &Value> = tasks
        .iter()
        .map(|task| {
            (
                task["uid"]
                    .as_u64()
                    .expect("as_u64 finds a value of that type"),
                task,
            )
        })
        .collect();
    for uid in &acknowledged {
        let task = by_uid
            .get(uid)
            .unwrap_or_else(|| panic!("acknowledged task {uid} is lost"));
        let status = task["status"]
            .as_str()
            .expect("as_str finds a value of that type");
        assert!(
            status == "succeeded" || status == "failed",
            "task {uid} ended {status}: {task}"
        );
    }
    let sent = sent.lock().expect("lock succeeds");
    let mut models: Vec<BTreeMap<String, Map<String, Value>>> = vec![BTreeMap::new(); 2];
    for task in &tasks {
        if task["status"] != "succeeded" {
            continue;
        }
        let number: u64 = task["customMetadata"]
            .as_str()
            .expect("as_str finds a value of that type")
            .parse()
            .expect("parse succeeds");
        let (index, operation) = &sent[&number];
        assert_eq!(task["indexUid"], INDEXES[*index]);
        apply(&mut models[*index], operation);
    }
    for (position, index) in INDEXES.iter().enumerate() {
        let stored = documents_of(&server, index);
        assert_eq!(
            stored, models[position],
            "index {index} differs from the model of its succeeded tasks (seed {seed})"
        );
    }
    println!(
        "{} tasks in all, {} acknowledged, documents match the model",
        tasks.len(),
        acknowledged.len()
    );
}
