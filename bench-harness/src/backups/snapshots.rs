//! Search latency while snapshots are being taken: a closed-loop search load on the mix
//! while a second thread keeps `POST /snapshots` tasks running back to back.
//!
//! How the window is kept under a snapshot: the load starts only once the first snapshot
//! task is processing (or already finished), and while one snapshot task processes the next
//! is already enqueued behind it, so the server starts it the moment the first ends. When
//! the load ends, the snapshot being written is let finish, and the one enqueued behind it is
//! canceled at once (`POST /tasks/cancel`) unless it already started (then it is let finish
//! too, and counted).
//!
//! Invariants: the snapshot thread has its own connection; the figures of each snapshot
//! come from its task record (the server's clock); the share of the load's measured window
//! spent under a snapshot is the union of the snapshots' `startedAt`..`finishedAt` intervals
//! cut to the window (the window by the harness's clock: from the load's start plus its
//! warm-up, for its measured duration; the server runs on the same machine), so a gap
//! between two snapshots shows as a share below 1; a snapshot that fails fails the phase.
//! The snapshot's size is the snapshot directory's once the last snapshot finished (each
//! snapshot replaces the previous one).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

use serde_json::json;
use time::OffsetDateTime;

use super::dump::BACKUP_TASK_TIMEOUT;
use crate::compare::client::Client;
use crate::compare::disk::disk_usage;
use crate::compare::server::ServerProcess;
use crate::compare::setup::TASK_POLL_INTERVAL;
use crate::compare::side::{LoadSettings, REQUEST_TIMEOUT, load_run_report};
use crate::compare::task::{
    ENQUEUED_STATUS, ENQUEUED_WITH_OK_STATUS, FinishedTask, enqueue, poll_task, task_status,
    wait_for_task,
};
use crate::load::{Pacing, Report, Workload};

/// The snapshot directory, relative to the server's working directory (the default
/// `--snapshot-dir`).
pub const SNAPSHOT_DIRECTORY: &str = "snapshots";

/// What the snapshots during the load did.
#[derive(Debug, Clone, PartialEq)]
pub struct SnapshotFigures {
    /// Snapshots that succeeded, in order.
    pub snapshots: usize,
    /// Of which those that overlapped the measured window.
    pub snapshots_in_window: usize,
    /// Each snapshot's `startedAt` to `finishedAt`, in seconds, in order.
    pub processing_seconds: Vec<f64>,
    /// The share of the measured window spent under a snapshot (0 to 1).
    pub window_covered: f64,
    /// The snapshot file's length, in bytes (the snapshot directory's apparent size).
    pub bytes: u64,
}

impl SnapshotFigures {
    /// The figures of several rounds taken as one: snapshots counted together, every
    /// snapshot's time kept, the share of the measured windows covered averaged over the
    /// rounds (each window is as long), the last round's file size.
    pub fn pooled(rounds: &[SnapshotFigures]) -> Option<SnapshotFigures> {
        let last = rounds.last()?;
        Some(SnapshotFigures {
            snapshots: rounds.iter().map(|round| round.snapshots).sum(),
            snapshots_in_window: rounds.iter().map(|round| round.snapshots_in_window).sum(),
            processing_seconds: rounds
                .iter()
                .flat_map(|round| round.processing_seconds.iter().copied())
                .collect(),
            window_covered: rounds.iter().map(|round| round.window_covered).sum::<f64>()
                / rounds.len() as f64,
            bytes: last.bytes,
        })
    }

    /// The shortest, mean and longest snapshot, in seconds (none without a snapshot).
    pub fn spread_seconds(&self) -> Option<(f64, f64, f64)> {
        let count = self.processing_seconds.len();
        if count == 0 {
            return None;
        }
        let minimum = self
            .processing_seconds
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min);
        let maximum = self.processing_seconds.iter().copied().fold(0.0, f64::max);
        let mean = self.processing_seconds.iter().sum::<f64>() / count as f64;
        Some((minimum, mean, maximum))
    }
}

/// A closed interval of time.
pub type Span = (OffsetDateTime, OffsetDateTime);

/// The share of `window` that the union of `spans` covers (0 for an empty window).
pub fn covered_share(spans: &[Span], window: Span) -> f64 {
    let (window_start, window_end) = window;
    let length = (window_end - window_start).as_seconds_f64();
    if length <= 0.0 {
        return 0.0;
    }
    let mut cut: Vec<Span> = spans
        .iter()
        .map(|&(start, end)| (start.max(window_start), end.min(window_end)))
        .filter(|(start, end)| start < end)
        .collect();
    cut.sort();
    let mut covered = 0.0;
    let mut reached = window_start;
    for (start, end) in cut {
        let from = start.max(reached);
        if end > from {
            covered += (end - from).as_seconds_f64();
            reached = end;
        }
    }
    covered / length
}

/// Waits until task `uid` left `enqueued`.
fn wait_until_started(client: &mut Client, uid: u64) -> Result<(), String> {
    let asked = std::time::Instant::now();
    while task_status(client, uid)? == "enqueued" {
        if asked.elapsed() > BACKUP_TASK_TIMEOUT {
            return Err(format!(
                "snapshot task {uid} did not start within {BACKUP_TASK_TIMEOUT:?}"
            ));
        }
        std::thread::sleep(TASK_POLL_INTERVAL);
    }
    Ok(())
}

/// Cancels task `uid` (`POST /tasks/cancel`) if it has not started yet.
fn cancel_if_enqueued(client: &mut Client, uid: u64) -> Result<(), String> {
    if task_status(client, uid)? == "enqueued" {
        let path = format!("/tasks/cancel?uids={uid}");
        enqueue(client, "POST", &path, &json!({}), ENQUEUED_WITH_OK_STATUS)?;
    }
    Ok(())
}

/// Waits until snapshot `current` finished; once `stop` is set meanwhile, cancels `next`
/// (which waits behind it) if it has not started.
fn finish_current(
    client: &mut Client,
    current: u64,
    next: u64,
    stop: &AtomicBool,
) -> Result<FinishedTask, String> {
    let asked = std::time::Instant::now();
    let mut cancel_sent = false;
    loop {
        if let Some(task) = poll_task(client, current)? {
            return Ok(task);
        }
        if !cancel_sent && stop.load(Ordering::Acquire) {
            cancel_if_enqueued(client, next)?;
            cancel_sent = true;
        }
        if asked.elapsed() > BACKUP_TASK_TIMEOUT {
            return Err(format!(
                "snapshot task {current} did not finish within {BACKUP_TASK_TIMEOUT:?}"
            ));
        }
        std::thread::sleep(TASK_POLL_INTERVAL);
    }
}

/// Takes snapshots back to back until `stop`; signals `started` once the first one runs.
/// Answers the snapshots that ran (a canceled one did not).
fn snapshot_loop(
    client: &mut Client,
    stop: &AtomicBool,
    started: &mpsc::Sender<()>,
) -> Result<Vec<FinishedTask>, String> {
    let mut finished = Vec::new();
    let mut current = enqueue(client, "POST", "/snapshots", &json!({}), ENQUEUED_STATUS)?;
    wait_until_started(client, current)?;
    // The receiver is gone only when the load side gave up; `stop` then ends the loop.
    let _ = started.send(());
    loop {
        if stop.load(Ordering::Acquire) {
            finished.push(wait_for_task(client, current, BACKUP_TASK_TIMEOUT)?);
            break;
        }
        let next = enqueue(client, "POST", "/snapshots", &json!({}), ENQUEUED_STATUS)?;
        finished.push(finish_current(client, current, next, stop)?);
        if stop.load(Ordering::Acquire) {
            cancel_if_enqueued(client, next)?;
            let last = wait_for_task(client, next, BACKUP_TASK_TIMEOUT)?;
            if last.status != "canceled" {
                finished.push(last);
            }
            break;
        }
        current = next;
    }
    match finished.iter().find(|task| !task.succeeded()) {
        Some(failed) => Err(format!("snapshot: {}", failed.failure())),
        None => Ok(finished),
    }
}

/// Runs the search load on `server` while snapshots are taken back to back; the load's full
/// report goes to `report_path`.
pub fn search_under_snapshots(
    server: &ServerProcess,
    workload: &Workload,
    settings: &LoadSettings,
    connections: usize,
    report_path: &Path,
) -> Result<(Report, SnapshotFigures), String> {
    let spec = &server.spec;
    let stop = AtomicBool::new(false);
    let (started_sender, started_receiver) = mpsc::channel();
    let (search, tasks) = std::thread::scope(|scope| {
        let snapshots = scope.spawn(|| {
            let mut client = Client::new(spec.address(), spec.master_key.clone(), REQUEST_TIMEOUT);
            let outcome = snapshot_loop(&mut client, &stop, &started_sender);
            drop(started_sender);
            outcome
        });
        // The sender is dropped without a signal when the first snapshot failed to start.
        let search = match started_receiver.recv() {
            Ok(()) => {
                let load_start = OffsetDateTime::now_utc();
                let figures = load_run_report(
                    server,
                    workload,
                    settings,
                    Pacing::ClosedLoop,
                    connections,
                    report_path,
                );
                let measured_start = load_start + settings.warmup;
                Some((
                    figures,
                    (measured_start, measured_start + settings.duration),
                ))
            }
            Err(_) => None,
        };
        stop.store(true, Ordering::Release);
        let tasks = snapshots
            .join()
            .map_err(|_| "the snapshot thread panicked".to_string())
            .and_then(|outcome| outcome);
        (search, tasks)
    });
    let tasks = tasks?;
    let (figures, window) = search.ok_or("the first snapshot did not start")?;
    let figures = figures?;
    let spans: Vec<Span> = tasks
        .iter()
        .filter_map(|task| Some((task.started_at?, task.finished_at)))
        .collect();
    let snapshots_in_window = spans
        .iter()
        .filter(|(start, end)| *start < window.1 && *end > window.0)
        .count();
    Ok((
        figures,
        SnapshotFigures {
            snapshots: tasks.len(),
            snapshots_in_window,
            processing_seconds: tasks
                .iter()
                .filter_map(FinishedTask::processing_seconds)
                .collect(),
            window_covered: covered_share(&spans, window),
            bytes: disk_usage(&spec.work_dir.join(SNAPSHOT_DIRECTORY)).apparent_bytes,
        },
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Second `second` of a fixed day.
    fn at(second: i64) -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(1_767_225_600 + second)
            .expect("a timestamp in 2026 is valid")
    }

    #[test]
    fn the_covered_share_is_the_union_of_the_spans_cut_to_the_window() {
        let window = (at(10), at(20));
        // One span starts before the window, two overlap each other, one ends after it.
        let spans = [
            (at(8), at(11)),
            (at(12), at(14)),
            (at(13), at(15)),
            (at(19), at(25)),
        ];
        // 10–11, 12–15, 19–20: 5 of 10 seconds.
        assert!((covered_share(&spans, window) - 0.5).abs() < 1e-9);
        assert_eq!(covered_share(&[], window), 0.0);
        assert_eq!(covered_share(&spans, (window.0, window.0)), 0.0);
    }

    #[test]
    fn the_spread_is_the_shortest_mean_and_longest_snapshot() {
        let figures = SnapshotFigures {
            snapshots: 3,
            snapshots_in_window: 3,
            processing_seconds: vec![2.0, 4.0, 3.0],
            window_covered: 1.0,
            bytes: 0,
        };
        assert_eq!(figures.spread_seconds(), Some((2.0, 3.0, 4.0)));
        let none = SnapshotFigures {
            processing_seconds: Vec::new(),
            ..figures
        };
        assert_eq!(none.spread_seconds(), None);
    }
}
