//! One timed export: `POST /export` on the source with the target's URL (and key), then
//! polls of the source's task and of the target until the export task succeeded and the
//! target holds every document with no task enqueued or processing.
//!
//! Two times, both from just before the request: until the harness saw the export task
//! succeeded (Meilisearch 1.41 finishes it once the target accepted every payload, before the
//! target indexed them), and until the target was complete. The CPU time of both instances
//! is measured over the same span, from `/proc` (every thread of each process).
//!
//! Invariants: the target counts as complete only after the export task succeeded, at the
//! first poll that finds it holding exactly the expected documents with nothing pending and
//! no failed task; polls are [`EXPORT_POLL_INTERVAL`] apart, so each time is at most one
//! interval (plus a poll's requests) late; an export task that does not succeed, a target
//! that holds another number of documents once nothing is pending, or a failed task on the
//! target fails the measurement.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::compare::client::Client;
use crate::compare::server::ServerProcess;
use crate::compare::setup::{any_task_pending, document_count, get_json};
use crate::compare::task::{ENQUEUED_WITH_OK_STATUS, FinishedTask, enqueue, poll_task};
use crate::network::resources::{InstanceUsage, UsageMeter};

/// Pause between two polls of the source's task and the target.
pub const EXPORT_POLL_INTERVAL: Duration = Duration::from_millis(50);
/// The longest wait for an export, from the request until the target is complete.
pub const EXPORT_TIMEOUT: Duration = Duration::from_secs(2 * 3600);
/// The names of the two instances in the CPU figures.
pub const SOURCE_NAME: &str = "source";
/// See [`SOURCE_NAME`].
pub const TARGET_NAME: &str = "target";

/// One instance taking part, with a client of it.
pub struct Participant<'a> {
    /// Its process.
    pub server: &'a ServerProcess,
    /// A client of it.
    pub client: &'a mut Client,
}

/// What the export took.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportFigures {
    /// Documents the source held and exported.
    pub documents: u64,
    /// From the request until the harness saw the export task succeeded.
    pub task_succeeded_after: Duration,
    /// The export task's `enqueuedAt` to `finishedAt`, in seconds.
    pub task_enqueued_to_finished_seconds: f64,
    /// From the request until the target held every document, nothing pending.
    pub target_complete_after: Duration,
    /// Document tasks the target registered (its payloads).
    pub target_document_tasks: u64,
    /// CPU and peak memory of the source and the target, in that order, over the span.
    pub usage: Vec<InstanceUsage>,
}

impl ExportFigures {
    /// Documents per second until the export task succeeded.
    pub fn task_documents_per_second(&self) -> f64 {
        self.documents as f64
            / self
                .task_succeeded_after
                .as_secs_f64()
                .max(f64::MIN_POSITIVE)
    }

    /// Documents per second until the target was complete.
    pub fn complete_documents_per_second(&self) -> f64 {
        self.documents as f64
            / self
                .target_complete_after
                .as_secs_f64()
                .max(f64::MIN_POSITIVE)
    }

    /// The usage of the instance named `name`.
    pub fn usage_of(&self, name: &str) -> Option<&InstanceUsage> {
        self.usage.iter().find(|usage| usage.name == name)
    }
}

/// The `POST /export` body: every index, to `url`, with `api_key` when the target has one.
pub fn export_body(url: &str, api_key: Option<&str>) -> Value {
    match api_key {
        Some(key) => json!({"url": url, "apiKey": key}),
        None => json!({"url": url}),
    }
}

/// Whether the target is complete: every document of `index_uid`, nothing pending; an error
/// when nothing is pending but the count is wrong, or a task failed.
fn target_complete(client: &mut Client, index_uid: &str, expected: u64) -> Result<bool, String> {
    let held = document_count(client, index_uid)?;
    if any_task_pending(client)? {
        return Ok(false);
    }
    let failed = get_json(client, "/tasks?statuses=failed&limit=1")?;
    if failed["total"] != 0 {
        return Err(format!(
            "the target has failed tasks: {}",
            failed["results"]
        ));
    }
    if held != expected {
        return Err(format!(
            "the target holds {held} documents of {expected}, and nothing is pending"
        ));
    }
    Ok(true)
}

/// Document tasks the target registered.
fn document_tasks(client: &mut Client) -> Result<u64, String> {
    let answer = get_json(client, "/tasks?types=documentAdditionOrUpdate&limit=1")?;
    answer["total"]
        .as_u64()
        .ok_or_else(|| format!("GET /tasks answered no total: {answer}"))
}

/// Exports every index of `source` to `target` and waits until the target holds the
/// `expected` documents of `index_uid`.
pub fn timed_export(
    source: Participant,
    target: Participant,
    index_uid: &str,
    expected: u64,
) -> Result<ExportFigures, String> {
    let target_spec = &target.server.spec;
    let body = export_body(
        &format!("http://{}", target_spec.address()),
        target_spec.master_key.as_deref(),
    );
    let meter = UsageMeter::start(&[
        (SOURCE_NAME.to_string(), source.server.pid),
        (TARGET_NAME.to_string(), target.server.pid),
    ])?;
    let asked = Instant::now();
    let uid = enqueue(
        source.client,
        "POST",
        "/export",
        &body,
        ENQUEUED_WITH_OK_STATUS,
    )?;
    let mut task: Option<FinishedTask> = None;
    loop {
        if task.is_none() {
            task = poll_task(source.client, uid)?;
        }
        match &task {
            Some(finished) if !finished.succeeded() => {
                return Err(format!("export: {}", finished.failure()));
            }
            Some(finished) if target_complete(target.client, index_uid, expected)? => {
                let target_complete_after = asked.elapsed();
                let usage = meter.finish();
                return Ok(ExportFigures {
                    documents: expected,
                    task_succeeded_after: finished.seen_finished.duration_since(asked),
                    task_enqueued_to_finished_seconds: finished.enqueued_to_finished_seconds(),
                    target_complete_after,
                    target_document_tasks: document_tasks(target.client)?,
                    usage,
                });
            }
            _ => {}
        }
        if asked.elapsed() > EXPORT_TIMEOUT {
            return Err(format!(
                "the export did not complete within {EXPORT_TIMEOUT:?}"
            ));
        }
        std::thread::sleep(EXPORT_POLL_INTERVAL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_export_body_carries_the_key_only_when_the_target_has_one() {
        assert_eq!(
            export_body("http://127.0.0.1:7811", Some("key")),
            json!({"url": "http://127.0.0.1:7811", "apiKey": "key"})
        );
        assert_eq!(
            export_body("http://127.0.0.1:7811", None),
            json!({"url": "http://127.0.0.1:7811"})
        );
    }
}
