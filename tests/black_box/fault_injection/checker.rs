//! What a round must find once its faults healed: every document of an accepted write on
//! exactly the instances of its shard, at the latest version accepted for it, listed once by
//! the network; every task finished, and no accepted write failed.
//!
//! Reported, each with the ids or tasks concerned:
//! - lost: an owner of the document's shard does not hold it;
//! - stale: an owner holds an older version than the latest accepted;
//! - misplaced: an instance that owns none of the document's shards holds it;
//! - duplicated: a networked listing, read page by page, gives the document twice;
//! - unended: a task still `enqueued` or `processing` when the round gave up waiting;
//! - failed writes: an accepted write whose task did not succeed.

use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::workload::AcceptedWrite;
use crate::common::Server;
use crate::common::network::{documents_of, owners_of};

/// How long every instance's queue has to empty once the faults healed.
const SETTLE_WAIT: Duration = Duration::from_secs(120);
/// Pause between two looks at a queue.
const SETTLE_POLL: Duration = Duration::from_millis(100);
/// Documents per page of the networked listing.
const LISTING_PAGE: u64 = 250;
/// Ids or tasks shown per kind of anomaly.
const SHOWN_MAX: usize = 10;

/// The anomalies of one round.
#[derive(Debug, Default)]
pub struct Report {
    pub lost: Vec<String>,
    pub stale: Vec<String>,
    pub misplaced: Vec<String>,
    pub duplicated: Vec<String>,
    pub unended: Vec<String>,
    pub failed_writes: Vec<String>,
    /// Documents of accepted writes, and the instances read.
    pub documents: usize,
    pub instances: usize,
}

impl Report {
    pub fn is_clean(&self) -> bool {
        [
            &self.lost,
            &self.stale,
            &self.misplaced,
            &self.duplicated,
            &self.unended,
            &self.failed_writes,
        ]
        .iter()
        .all(|anomalies| anomalies.is_empty())
    }
}

impl fmt::Display for Report {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            formatter,
            "{} documents on {} instances",
            self.documents, self.instances
        )?;
        let kinds = [
            ("lost", &self.lost),
            ("stale", &self.stale),
            ("misplaced", &self.misplaced),
            ("duplicated", &self.duplicated),
            ("unended tasks", &self.unended),
            ("failed writes", &self.failed_writes),
        ];
        for (kind, anomalies) in kinds {
            let shown: Vec<&String> = anomalies.iter().take(SHOWN_MAX).collect();
            writeln!(formatter, "{kind}: {} {shown:?}", anomalies.len())?;
        }
        Ok(())
    }
}

/// Waits for every queue to empty, then checks `servers` (the leader first) against the
/// writes the leader accepted.
pub fn check(servers: &[Server], accepted: &[AcceptedWrite]) -> Report {
    let mut report = Report {
        instances: servers.len(),
        ..Report::default()
    };
    for (position, server) in servers.iter().enumerate() {
        report.unended.extend(
            unended_tasks(server)
                .into_iter()
                .map(|task| format!("instance {position}: {task}")),
        );
    }
    if !report.unended.is_empty() {
        return report;
    }
    let latest = latest_versions(&servers[0], accepted, &mut report);
    report.documents = latest.len();
    let shards = servers[0].send("GET", "/network", None).json()["shards"].clone();
    let names = instance_names(&servers[0]);
    let held: Vec<BTreeMap<String, Value>> = servers
        .iter()
        .map(|server| documents_of(server, "books", "id,version"))
        .collect();
    for (id, version) in &latest {
        let owners = owners_of(&shards, &id.to_string());
        for (name, documents) in names.iter().zip(&held) {
            let stored = documents.get(&id.to_string());
            match (owners.contains(name), stored) {
                (true, None) => report.lost.push(format!("{id} on {name}")),
                (true, Some(document)) if document["version"].as_u64() < Some(*version) => {
                    report
                        .stale
                        .push(format!("{id} on {name}: {document} < {version}"));
                }
                (false, Some(_)) => report.misplaced.push(format!("{id} on {name}")),
                _ => {}
            }
        }
    }
    report.duplicated = listed_twice(&servers[0]);
    report
}

/// The tasks of `server` that do not end within [`SETTLE_WAIT`].
fn unended_tasks(server: &Server) -> Vec<String> {
    let started = Instant::now();
    loop {
        let pending = server
            .send("GET", "/tasks?statuses=enqueued,processing&limit=100", None)
            .json();
        let tasks = pending["results"].as_array().cloned().unwrap_or_default();
        if tasks.is_empty() {
            return Vec::new();
        }
        if started.elapsed() >= SETTLE_WAIT {
            return tasks
                .iter()
                .map(|task| format!("{} {} {}", task["uid"], task["type"], task["details"]))
                .collect();
        }
        std::thread::sleep(SETTLE_POLL);
    }
}

/// The latest version accepted for each document; accepted writes whose task did not
/// succeed go to the report.
fn latest_versions(
    leader: &Server,
    accepted: &[AcceptedWrite],
    report: &mut Report,
) -> BTreeMap<u64, u64> {
    let mut latest = BTreeMap::new();
    for write in accepted {
        let task = leader
            .send("GET", &format!("/tasks/{}", write.task_uid), None)
            .json();
        if task["status"] != "succeeded" {
            report.failed_writes.push(task.to_string());
            continue;
        }
        for (id, version) in &write.documents {
            let entry = latest.entry(*id).or_insert(*version);
            *entry = (*entry).max(*version);
        }
    }
    latest
}

/// Every instance's name, in the order of `servers`: the leader's remotes sorted by name,
/// which the rounds name `ms0`, `ms1`, … in the order of their servers.
fn instance_names(leader: &Server) -> Vec<String> {
    let network = leader.send("GET", "/network", None).json();
    network["remotes"]
        .as_object()
        .map(|remotes| remotes.keys().cloned().collect())
        .unwrap_or_default()
}

/// The ids a networked listing on `leader`, read page by page, gives more than once.
fn listed_twice(leader: &Server) -> Vec<String> {
    let mut seen: BTreeMap<u64, usize> = BTreeMap::new();
    let mut offset = 0;
    loop {
        let body = json!({"offset": offset, "limit": LISTING_PAGE, "fields": ["id"]});
        let page = leader
            .send("POST", "/indexes/books/documents/fetch", Some(&body))
            .json();
        let results = page["results"].as_array().cloned().unwrap_or_default();
        for document in &results {
            if let Some(id) = document["id"].as_u64() {
                *seen.entry(id).or_insert(0) += 1;
            }
        }
        if (results.len() as u64) < LISTING_PAGE {
            break;
        }
        offset += LISTING_PAGE;
    }
    seen.into_iter()
        .filter(|(_, times)| *times > 1)
        .map(|(id, times)| format!("{id} ×{times}"))
        .collect()
}
