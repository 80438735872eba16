//! The writer of a round: on its own thread, every [`WRITE_INTERVAL`] it sends the leader a
//! payload of new documents and of new versions of documents it sent before, and records
//! every payload the leader accepted (202) with its task uid. A payload the leader did not
//! accept (it was down) is not recorded; its documents are never updated again.
//!
//! Invariant: versions only grow, one per payload, and payloads are sent one at a time, so
//! a later accepted payload has a greater task uid on the leader and a greater version.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{MASTER_KEY, json_request, raw_to};

/// The pause between two payloads.
const WRITE_INTERVAL: Duration = Duration::from_millis(300);
/// New documents per payload.
const NEW_PER_PAYLOAD: u64 = 6;
/// Documents sent before that each payload writes again.
const UPDATED_PER_PAYLOAD: usize = 4;

/// A payload the leader accepted.
#[derive(Debug, Clone)]
pub struct AcceptedWrite {
    pub task_uid: u64,
    /// The documents' ids and the version they carry.
    pub documents: Vec<(u64, u64)>,
}

/// The writer thread and what it recorded.
pub struct Writer {
    stop: Arc<AtomicBool>,
    accepted: Arc<Mutex<Vec<AcceptedWrite>>>,
    thread: Option<JoinHandle<()>>,
}

impl Writer {
    /// Starts writing to the leader at `leader` (`host:port`), choosing documents with
    /// `seed`.
    pub fn start(leader: String, seed: u64) -> Writer {
        let stop = Arc::new(AtomicBool::new(false));
        let accepted = Arc::new(Mutex::new(Vec::new()));
        let thread = {
            let (stop, accepted) = (stop.clone(), accepted.clone());
            std::thread::spawn(move || write_until_stopped(&leader, seed, &stop, &accepted))
        };
        Writer {
            stop,
            accepted,
            thread: Some(thread),
        }
    }

    /// Stops the writer and answers every payload the leader accepted, in order.
    pub fn stop(mut self) -> Vec<AcceptedWrite> {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            thread.join().expect("the writer does not panic");
        }
        self.accepted
            .lock()
            .expect("the writer does not panic")
            .clone()
    }
}

fn write_until_stopped(
    leader: &str,
    seed: u64,
    stop: &AtomicBool,
    accepted: &Mutex<Vec<AcceptedWrite>>,
) {
    let mut random = fastrand::Rng::with_seed(seed);
    let mut sent: Vec<u64> = Vec::new();
    let mut next_id = 0;
    let mut version = 0;
    while !stop.load(Ordering::SeqCst) {
        version += 1;
        let mut documents: Vec<(u64, u64)> = (next_id..next_id + NEW_PER_PAYLOAD)
            .map(|id| (id, version))
            .collect();
        if !sent.is_empty() {
            for _ in 0..UPDATED_PER_PAYLOAD {
                let id = sent[random.usize(..sent.len())];
                if documents.iter().all(|(already, _)| *already != id) {
                    documents.push((id, version));
                }
            }
        }
        let body: Vec<Value> = documents
            .iter()
            .map(|(id, version)| json!({"id": id, "version": version, "title": format!("book {id} version {version}")}))
            .collect();
        let request = json_request(
            "POST",
            "/indexes/books/documents",
            Some(MASTER_KEY),
            &Value::Array(body).to_string(),
        );
        let answer = raw_to(leader, &request).filter(|response| response.status == 202);
        if let Some(task_uid) = answer.and_then(|response| response.json()["taskUid"].as_u64()) {
            sent.extend(next_id..next_id + NEW_PER_PAYLOAD);
            next_id += NEW_PER_PAYLOAD;
            accepted
                .lock()
                .expect("the round does not panic while it holds the lock")
                .push(AcceptedWrite {
                    task_uid,
                    documents,
                });
        }
        std::thread::sleep(WRITE_INTERVAL);
    }
}
