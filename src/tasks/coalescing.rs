//! Write coalescing under search load (DESIGN.md §2 "search before indexing", issue 43): while
//! searches are being served, a small batch of document additions waits a little for the
//! payloads right behind it, so that the writes arrive as fewer, bigger batches.
//!
//! Why: a batch's indexing CPU is mostly its commit, which merges the postings of every word
//! the batch touches and updates the word dictionary. Frequent words are touched by every
//! batch, so their postings are rewritten once per batch whatever its size: replacing
//! documents at 7,500/s cost 16.1 s of indexing CPU in 2,500-document batches, 11.8 s in
//! 7,500-document batches and 9.2 s in 15,000-document batches (`replace_cpu.py`, 120,000
//! replacements of a 200,000-document index). Search latency under writes follows the CPU
//! indexing takes from the cores (`tuning/results/search-under-writes-2026-11-26b.md`), so
//! fewer batches are what keeps search p99 near its idle value. With no search running the
//! scheduler never waits: indexing alone runs at full speed, as before.
//!
//! What it costs: under search load a task of a small batch becomes visible up to
//! [`COALESCING_WINDOW`] later than it would have. A batch that already holds
//! [`COALESCING_DOCUMENTS`] documents, or that the auto-batcher closed for another reason
//! (a task that cannot join, a task or size limit), starts at once.
//!
//! Invariants: only document addition/update batches wait (deletions, settings and every
//! other kind start at once), and only when no other task waits behind them; a batch never
//! waits past [`COALESCING_WINDOW`] after its oldest task was enqueued; waiting changes only
//! when a batch starts, never what it does.

use std::time::Duration;

use time::OffsetDateTime;

use super::autobatch::{BatchKind, BatchPlan, NextBatch, StopReason};
use super::model::{Details, Task};

/// The longest a batch waits for more payloads, counted from its oldest task's enqueueing.
pub const COALESCING_WINDOW: Duration = Duration::from_secs(1);

/// A batch holding at least this many documents starts at once.
pub const COALESCING_DOCUMENTS: u64 = 10_000;

/// Searches count as running while one was received this recently.
pub const SEARCH_ACTIVITY_WINDOW: Duration = Duration::from_millis(500);

/// Whether a search was received within [`SEARCH_ACTIVITY_WINDOW`].
pub fn searches_running() -> bool {
    crate::runtime::search_activity::since_last_search()
        .is_some_and(|since| since < SEARCH_ACTIVITY_WINDOW)
}

/// How long `next` should wait for more payloads before it starts (`None`: start now), given
/// the `waiting` tasks it was formed from and whether searches are running.
pub fn pause(
    next: &NextBatch,
    waiting: &[Task],
    searches_running: bool,
    now: OffsetDateTime,
) -> Option<Duration> {
    if !searches_running || !may_grow(next) {
        return None;
    }
    let tasks: Vec<&Task> = waiting
        .iter()
        .filter(|task| next.task_uids.contains(&task.uid))
        .collect();
    if documents_of(&tasks) >= COALESCING_DOCUMENTS {
        return None;
    }
    let oldest = tasks.iter().map(|task| task.enqueued_at).min()?;
    let waited = now - oldest;
    let window = time::Duration::try_from(COALESCING_WINDOW).ok()?;
    let left = window - waited;
    if left <= time::Duration::ZERO {
        return None;
    }
    Duration::try_from(left).ok()
}

/// Whether `next` adds or updates documents and took every waiting task: one more payload
/// for the same index would join it, and no other task waits behind it.
fn may_grow(next: &NextBatch) -> bool {
    let adds_documents = matches!(
        next.plan,
        BatchPlan::Index {
            kind: BatchKind::DocumentOperation { .. },
            ..
        }
    );
    let exhausted = next.stop_reason == StopReason::ExhaustedEnqueuedTasks;
    adds_documents && exhausted && next.network_change.is_none()
}

/// The documents the tasks received.
fn documents_of(tasks: &[&Task]) -> u64 {
    tasks
        .iter()
        .map(|task| match task.details {
            Some(Details::DocumentAdditionOrUpdate {
                received_documents, ..
            }) => received_documents,
            _ => 0,
        })
        .sum()
}
