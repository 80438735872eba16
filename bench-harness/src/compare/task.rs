//! One task seen from outside: enqueued by a request the server answers 202 with a
//! `taskUid`, then polled (`GET /tasks/{uid}`) until it finished, with the instant the
//! harness first saw it finished beside the server's own timestamps.
//!
//! Invariants: a task counts as finished only in a final status (`succeeded`, `failed`,
//! `canceled`); the server's timestamps are read from the final record only; polls are
//! [`TASK_POLL_INTERVAL`] apart, so the harness's instant is at most one interval (plus one
//! request) after the server's `finishedAt`.

use std::time::{Duration, Instant};

use serde_json::Value;
use time::OffsetDateTime;

use super::client::Client;
use super::setup::{TASK_POLL_INTERVAL, expect_status, get_json};
use crate::writes::task_records::timestamp;

/// The statuses of a task that will not change any more.
pub const FINISHED_STATUSES: [&str; 3] = ["succeeded", "failed", "canceled"];

/// A finished task.
#[derive(Debug, Clone, PartialEq)]
pub struct FinishedTask {
    /// Its uid.
    pub uid: u64,
    /// Its final status.
    pub status: String,
    /// Its final record, whole.
    pub record: Value,
    /// When the server enqueued it.
    pub enqueued_at: OffsetDateTime,
    /// When the server started processing it (none when it never started).
    pub started_at: Option<OffsetDateTime>,
    /// When the server finished it.
    pub finished_at: OffsetDateTime,
    /// When the harness first saw it finished.
    pub seen_finished: Instant,
}

impl FinishedTask {
    /// Whether it succeeded.
    pub fn succeeded(&self) -> bool {
        self.status == "succeeded"
    }

    /// Seconds from its enqueue to its finish, by the server's clock.
    pub fn enqueued_to_finished_seconds(&self) -> f64 {
        (self.finished_at - self.enqueued_at).as_seconds_f64()
    }

    /// Seconds from its start to its finish, by the server's clock.
    pub fn processing_seconds(&self) -> Option<f64> {
        self.started_at
            .map(|started| (self.finished_at - started).as_seconds_f64())
    }

    /// The error the server recorded, or its status when it recorded none.
    pub fn failure(&self) -> String {
        match &self.record["error"] {
            Value::Null => format!("task {} {}", self.uid, self.status),
            error => format!("task {} {}: {error}", self.uid, self.status),
        }
    }

    /// The task's record as the server answered it, read into a finished task.
    fn from_record(record: Value, seen_finished: Instant) -> Result<FinishedTask, String> {
        let uid = record["uid"]
            .as_u64()
            .ok_or_else(|| format!("a task record without a uid: {record}"))?;
        let started_at = match record["startedAt"] {
            Value::Null => None,
            _ => Some(timestamp(&record, "startedAt")?),
        };
        Ok(FinishedTask {
            uid,
            status: record["status"].as_str().unwrap_or_default().to_string(),
            enqueued_at: timestamp(&record, "enqueuedAt")?,
            started_at,
            finished_at: timestamp(&record, "finishedAt")?,
            seen_finished,
            record,
        })
    }
}

/// The status of an answer that enqueued a task.
pub const ENQUEUED_STATUS: u16 = 202;
/// The status Meilisearch answers `POST /tasks/cancel` and `POST /export` with, though they
/// enqueue a task too.
pub const ENQUEUED_WITH_OK_STATUS: u16 = 200;

/// Sends a request that enqueues a task (answered `status`); answers the task's uid.
pub fn enqueue(
    client: &mut Client,
    method: &str,
    path: &str,
    body: &Value,
    status: u16,
) -> Result<u64, String> {
    let step = format!("{method} {path}");
    let response = client
        .send_json(method, path, body)
        .map_err(|error| format!("{step}: {error}"))?;
    expect_status(&step, &response, status)?;
    response.json()?["taskUid"]
        .as_u64()
        .ok_or_else(|| format!("{step} was answered without a taskUid"))
}

/// The status of task `uid` now (`enqueued`, `processing`, or a final one).
pub fn task_status(client: &mut Client, uid: u64) -> Result<String, String> {
    let record = get_json(client, &format!("/tasks/{uid}"))?;
    Ok(record["status"].as_str().unwrap_or_default().to_string())
}

/// Polls task `uid` once: its record when it finished, none while it is enqueued or
/// processing.
pub fn poll_task(client: &mut Client, uid: u64) -> Result<Option<FinishedTask>, String> {
    let record = get_json(client, &format!("/tasks/{uid}"))?;
    let seen = Instant::now();
    let finished = record["status"]
        .as_str()
        .is_some_and(|status| FINISHED_STATUSES.contains(&status));
    if finished {
        FinishedTask::from_record(record, seen).map(Some)
    } else {
        Ok(None)
    }
}

/// Waits until task `uid` finished, for at most `timeout`.
pub fn wait_for_task(
    client: &mut Client,
    uid: u64,
    timeout: Duration,
) -> Result<FinishedTask, String> {
    let started = Instant::now();
    loop {
        if let Some(task) = poll_task(client, uid)? {
            return Ok(task);
        }
        if started.elapsed() > timeout {
            return Err(format!("task {uid} did not finish within {timeout:?}"));
        }
        std::thread::sleep(TASK_POLL_INTERVAL);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_finished_record_gives_its_server_durations_and_its_error() {
        let record = json!({
            "uid": 7,
            "status": "failed",
            "enqueuedAt": "2026-01-01T00:00:00Z",
            "startedAt": "2026-01-01T00:00:01.5Z",
            "finishedAt": "2026-01-01T00:00:04Z",
            "error": {"code": "internal"},
        });
        let task =
            FinishedTask::from_record(record, Instant::now()).expect("a finished record reads");
        assert!(!task.succeeded());
        assert!((task.enqueued_to_finished_seconds() - 4.0).abs() < 1e-9);
        assert!(
            (task
                .processing_seconds()
                .expect("a started task has a processing time")
                - 2.5)
                .abs()
                < 1e-9
        );
        assert!(task.failure().contains("internal"), "{}", task.failure());
        let never_started = json!({
            "uid": 8,
            "status": "canceled",
            "enqueuedAt": "2026-01-01T00:00:00Z",
            "startedAt": null,
            "finishedAt": "2026-01-01T00:00:01Z",
        });
        let task = FinishedTask::from_record(never_started, Instant::now())
            .expect("a record that never started reads");
        assert_eq!(task.processing_seconds(), None);
        assert_eq!(task.failure(), "task 8 canceled");
    }
}
