//! What the server's own task records say about a writer's tasks: how many documents it
//! indexed and how fast, and how far behind its task queue got.
//!
//! Invariants: every figure comes from the server's timestamps (`enqueuedAt`, `finishedAt`)
//! and counts (`details.receivedDocuments`, `details.indexedDocuments`), never from the
//! harness's clock; the backlog is exact, not sampled: it is the largest number of tasks (and
//! of their received documents) enqueued and not yet finished at any instant, found by
//! sweeping the enqueue and finish events in time order, a finish before an enqueue at the
//! same instant. Tasks are read only after every one of them finished.

use serde_json::Value;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::compare::client::Client;
use crate::compare::setup::get_json;

/// Task uids asked in one `GET /tasks?uids=…` (keeps the request line short).
pub const UIDS_PER_REQUEST: usize = 100;

/// One finished task of the writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskTimes {
    /// When the server enqueued it.
    pub enqueued: OffsetDateTime,
    /// When it finished.
    pub finished: OffsetDateTime,
    /// Documents in its payload.
    pub received_documents: u64,
    /// Documents it indexed (0 unless it succeeded).
    pub indexed_documents: u64,
    /// It succeeded.
    pub succeeded: bool,
}

/// The writer's tasks summed up.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TaskFigures {
    /// Tasks read.
    pub tasks: usize,
    /// Tasks that did not succeed.
    pub unsuccessful: usize,
    /// Documents indexed.
    pub indexed_documents: u64,
    /// Indexed documents per second, from the first enqueue to the last finish.
    pub indexed_per_second: f64,
    /// The most tasks enqueued or processing at once.
    pub most_tasks_behind: usize,
    /// The most received documents not yet indexed at once.
    pub most_documents_behind: u64,
    /// The longest time from a task's enqueue to its finish, in seconds.
    pub longest_task_wait_seconds: f64,
}

/// The RFC 3339 timestamp `field` of a task record (`enqueuedAt`, `startedAt`, `finishedAt`).
pub fn timestamp(task: &Value, field: &str) -> Result<OffsetDateTime, String> {
    let text = task[field]
        .as_str()
        .ok_or_else(|| format!("task {} has no {field}: {task}", task["uid"]))?;
    OffsetDateTime::parse(text, &Rfc3339)
        .map_err(|error| format!("task {} {field} {text:?}: {error}", task["uid"]))
}

/// The times and counts of one task record.
pub fn task_times(task: &Value) -> Result<TaskTimes, String> {
    let count = |field: &str| task["details"][field].as_u64().unwrap_or(0);
    Ok(TaskTimes {
        enqueued: timestamp(task, "enqueuedAt")?,
        finished: timestamp(task, "finishedAt")?,
        received_documents: count("receivedDocuments"),
        indexed_documents: count("indexedDocuments"),
        succeeded: task["status"] == "succeeded",
    })
}

/// Reads the records of tasks `uids`, every one of which must have finished.
pub fn read_tasks(client: &mut Client, uids: &[u64]) -> Result<Vec<TaskTimes>, String> {
    let mut tasks = Vec::with_capacity(uids.len());
    for group in uids.chunks(UIDS_PER_REQUEST) {
        let list: Vec<String> = group.iter().map(u64::to_string).collect();
        let path = format!("/tasks?uids={}&limit={}", list.join(","), group.len());
        let answer = get_json(client, &path)?;
        let records = answer["results"]
            .as_array()
            .ok_or_else(|| format!("GET {path}: no results: {answer}"))?;
        if records.len() != group.len() {
            return Err(format!(
                "GET {path} answered {} tasks of {}",
                records.len(),
                group.len()
            ));
        }
        for record in records {
            tasks.push(task_times(record)?);
        }
    }
    Ok(tasks)
}

/// The largest backlog of `tasks`: (tasks, received documents) enqueued and not finished.
fn most_behind(tasks: &[TaskTimes]) -> (usize, u64) {
    // (instant, finish first, task change, document change)
    let mut events: Vec<(OffsetDateTime, bool, i64, i64)> = Vec::with_capacity(2 * tasks.len());
    for task in tasks {
        let documents = i64::try_from(task.received_documents).unwrap_or(i64::MAX);
        events.push((task.enqueued, false, 1, documents));
        events.push((task.finished, true, -1, -documents));
    }
    // At one instant a finish (true) sorts before an enqueue (false) with `Reverse`.
    events.sort_by_key(|(instant, finish, _, _)| (*instant, std::cmp::Reverse(*finish)));
    let (mut tasks_behind, mut documents_behind) = (0_i64, 0_i64);
    let (mut most_tasks, mut most_documents) = (0_i64, 0_i64);
    for (_, _, task_change, document_change) in events {
        tasks_behind += task_change;
        documents_behind += document_change;
        most_tasks = most_tasks.max(tasks_behind);
        most_documents = most_documents.max(documents_behind);
    }
    (
        usize::try_from(most_tasks).unwrap_or(0),
        u64::try_from(most_documents).unwrap_or(0),
    )
}

/// `tasks` summed up; `None` without a task.
pub fn task_figures(tasks: &[TaskTimes]) -> Option<TaskFigures> {
    let first_enqueued = tasks.iter().map(|task| task.enqueued).min()?;
    let last_finished = tasks.iter().map(|task| task.finished).max()?;
    let indexed_documents: u64 = tasks.iter().map(|task| task.indexed_documents).sum();
    let span = (last_finished - first_enqueued).as_seconds_f64();
    let (most_tasks_behind, most_documents_behind) = most_behind(tasks);
    Some(TaskFigures {
        tasks: tasks.len(),
        unsuccessful: tasks.iter().filter(|task| !task.succeeded).count(),
        indexed_documents,
        indexed_per_second: if span > 0.0 {
            indexed_documents as f64 / span
        } else {
            0.0
        },
        most_tasks_behind,
        most_documents_behind,
        longest_task_wait_seconds: tasks
            .iter()
            .map(|task| (task.finished - task.enqueued).as_seconds_f64())
            .fold(0.0, f64::max),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn record(enqueued: &str, finished: &str, documents: u64) -> TaskTimes {
        task_times(&json!({
            "uid": 1,
            "status": "succeeded",
            "enqueuedAt": enqueued,
            "finishedAt": finished,
            "details": {"receivedDocuments": documents, "indexedDocuments": documents},
        }))
        .unwrap()
    }

    #[test]
    fn the_backlog_rate_and_wait_come_from_the_server_timestamps() {
        // Three payloads one second apart; the second waits for the first, the third starts
        // just when the second finishes.
        let tasks = [
            record("2026-01-01T00:00:00Z", "2026-01-01T00:00:01.5Z", 1000),
            record(
                "2026-01-01T00:00:01Z",
                "2026-01-01T00:00:02.000000000Z",
                2000,
            ),
            record("2026-01-01T00:00:02Z", "2026-01-01T00:00:04Z", 1000),
        ];
        let figures = task_figures(&tasks).unwrap();
        assert_eq!(figures.tasks, 3);
        assert_eq!(figures.unsuccessful, 0);
        assert_eq!(figures.indexed_documents, 4000);
        assert!((figures.indexed_per_second - 1000.0).abs() < 1e-9);
        // Two tasks (3,000 documents) were behind between 1 s and 1.5 s; at 2 s one finished
        // as the next was enqueued, which is not a backlog of two.
        assert_eq!(figures.most_tasks_behind, 2);
        assert_eq!(figures.most_documents_behind, 3000);
        assert!((figures.longest_task_wait_seconds - 2.0).abs() < 1e-9);
        assert_eq!(task_figures(&[]), None);
    }

    #[test]
    fn a_failed_task_counts_no_indexed_document() {
        let failed = task_times(&json!({
            "uid": 7,
            "status": "failed",
            "enqueuedAt": "2026-01-01T00:00:00.123456Z",
            "finishedAt": "2026-01-01T00:00:00.5Z",
            "details": {"receivedDocuments": 10, "indexedDocuments": 0},
        }))
        .unwrap();
        let figures = task_figures(&[failed]).unwrap();
        assert_eq!((figures.unsuccessful, figures.indexed_documents), (1, 0));
        assert!(task_times(&json!({"uid": 8, "enqueuedAt": "yesterday"})).is_err());
    }
}
