//! The writer of a write phase: sends the phase's documents to the index as NDJSON payloads,
//! either on a steady clock (a fixed rate) or as fast as the server finishes them (keeping a
//! fixed number of its own tasks unfinished), and keeps the uid of every task it enqueued.
//!
//! Invariants: the documents are sent in their order, each once, in payloads of `batch`
//! documents (the last may be smaller); at a fixed rate, payload `k` is due `k · batch / rate`
//! seconds after the start, and a payload that cannot leave on time leaves at once, never
//! skipped (the largest delay is reported); unbounded, the writer never has more than
//! `pending_tasks` of its tasks enqueued or processing; the writer stops at its deadline, when
//! its documents run out, or at the first write or task poll that fails, and it says which.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::compare::client::Client;
use crate::compare::setup::{get_json, ndjson_payload, post_ndjson};

/// Pause between two polls of the status of the writer's oldest unfinished task.
pub const TASK_STATUS_POLL_INTERVAL: Duration = Duration::from_millis(10);
/// The statuses a task no longer leaves.
const FINISHED_STATUSES: [&str; 3] = ["succeeded", "failed", "canceled"];

/// How the writer paces its payloads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum WritePacing {
    /// Payloads on a steady clock, `documents_per_second` on average.
    FixedRate { documents_per_second: f64 },
    /// The next payload as soon as fewer than `pending_tasks` of the writer's tasks are
    /// unfinished.
    Unbounded { pending_tasks: usize },
}

/// What one writer sends, where and how.
#[derive(Debug, Clone, Copy)]
pub struct WritePlan<'a> {
    /// The index written to.
    pub index_uid: &'a str,
    /// The documents to send, in order (NDJSON lines).
    pub documents: &'a [String],
    /// Documents per payload.
    pub batch: usize,
    /// The pacing.
    pub pacing: WritePacing,
    /// No payload leaves after this instant; none: until the documents run out.
    pub deadline: Option<Instant>,
}

/// What the writer did.
#[derive(Debug, Clone, PartialEq)]
pub struct WriterOutcome {
    /// Documents sent and enqueued.
    pub documents_sent: usize,
    /// Payloads sent and enqueued.
    pub payloads_sent: usize,
    /// The uid of each enqueued task, in order.
    pub task_uids: Vec<u64>,
    /// From the first payload's send to the last one's answer.
    pub sending: Duration,
    /// Fixed rate: the most a payload left after it was due.
    pub most_late: Duration,
    /// Every document was sent before the deadline (an unbounded writer ran out).
    pub ran_out: bool,
    /// Why the writer stopped early, when a write or a poll failed.
    pub error: Option<String>,
}

/// When payload `index` is due at a fixed rate: `index · batch / rate` after `start`.
pub fn due_time(start: Instant, index: usize, batch: usize, documents_per_second: f64) -> Instant {
    start + Duration::from_secs_f64(index as f64 * batch as f64 / documents_per_second)
}

/// Sends `payload` to the plan's index; answers its task's uid.
fn send_payload(client: &mut Client, path: &str, payload: &[String]) -> Result<u64, String> {
    let response = post_ndjson(client, path, "send documents", &ndjson_payload(payload))?;
    response.json()?["taskUid"]
        .as_u64()
        .ok_or_else(|| "a document write was answered without a taskUid".to_string())
}

/// Whether task `uid` finished (succeeded, failed or was canceled).
fn is_finished(client: &mut Client, uid: u64) -> Result<bool, String> {
    let task = get_json(client, &format!("/tasks/{uid}"))?;
    Ok(
        matches!(&task["status"], Value::String(status) if FINISHED_STATUSES.contains(&status.as_str())),
    )
}

/// Waits until fewer than `pending_tasks` of `unfinished` (oldest first) are unfinished, or
/// the deadline passes; finished ones are removed.
fn wait_for_room(
    client: &mut Client,
    unfinished: &mut std::collections::VecDeque<u64>,
    pending_tasks: usize,
    deadline: Option<Instant>,
) -> Result<(), String> {
    while unfinished.len() >= pending_tasks.max(1) {
        let Some(&oldest) = unfinished.front() else {
            break;
        };
        if is_finished(client, oldest)? {
            unfinished.pop_front();
        } else if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
            break;
        } else {
            std::thread::sleep(TASK_STATUS_POLL_INTERVAL);
        }
    }
    Ok(())
}

/// Runs the writer of `plan` on `client` until it is done; never panics on a server error.
pub fn write(client: &mut Client, plan: &WritePlan) -> WriterOutcome {
    let path = format!("/indexes/{}/documents", plan.index_uid);
    let start = Instant::now();
    let mut outcome = WriterOutcome {
        documents_sent: 0,
        payloads_sent: 0,
        task_uids: Vec::new(),
        sending: Duration::ZERO,
        most_late: Duration::ZERO,
        ran_out: false,
        error: None,
    };
    let mut unfinished = std::collections::VecDeque::new();
    for (index, payload) in plan.documents.chunks(plan.batch.max(1)).enumerate() {
        let waited = match plan.pacing {
            WritePacing::FixedRate {
                documents_per_second,
            } => {
                let due = due_time(start, index, plan.batch, documents_per_second);
                match due.checked_duration_since(Instant::now()) {
                    Some(wait) => std::thread::sleep(wait),
                    None => outcome.most_late = outcome.most_late.max(due.elapsed()),
                }
                Ok(())
            }
            WritePacing::Unbounded { pending_tasks } => {
                wait_for_room(client, &mut unfinished, pending_tasks, plan.deadline)
            }
        };
        if plan
            .deadline
            .is_some_and(|deadline| Instant::now() >= deadline)
        {
            break;
        }
        match waited.and_then(|()| send_payload(client, &path, payload)) {
            Ok(uid) => {
                outcome.task_uids.push(uid);
                unfinished.push_back(uid);
                outcome.payloads_sent += 1;
                outcome.documents_sent += payload.len();
                outcome.sending = start.elapsed();
            }
            Err(error) => {
                outcome.error = Some(error);
                return outcome;
            }
        }
    }
    outcome.ran_out = outcome.documents_sent == plan.documents.len();
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_rate_payloads_are_due_on_a_steady_clock() {
        let start = Instant::now();
        // 7,500 documents/s in payloads of 2,500: one every third of a second.
        assert_eq!(due_time(start, 0, 2500, 7500.0), start);
        assert_eq!(
            due_time(start, 3, 2500, 7500.0) - start,
            Duration::from_secs(1)
        );
        assert_eq!(
            due_time(start, 120, 2500, 7500.0) - start,
            Duration::from_secs(40)
        );
    }
}
