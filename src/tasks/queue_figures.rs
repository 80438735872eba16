//! The task queue's figures for `GET /metrics`, as Meilisearch exports them: the tasks by
//! status, by type and by index (`meilisearch_nb_tasks`), the oldest task still waiting
//! (`meilisearch_task_queue_latency_seconds`), the step times of the last finished batch
//! (`meilisearch_last_finished_batches_progress_trace_ms`), the progress of the batch being
//! processed (`meilisearch_batch_running_progress_trace`, `meilisearch_is_indexing`) and the
//! sizes of the queue's file.
//!
//! Invariants: every count is read from one snapshot of the queue, counted from the
//! secondary trees (each key is one task); the reading runs on the control core's helper
//! thread, so a scrape of a long queue never stalls the control core.

use std::collections::BTreeMap;
use std::ops::Bound;

use serde_json::{Map, Value};
use storage_engine::{Direction, ReadTransaction};
use time::OffsetDateTime;

use super::batch::{Batch, Progress};
use super::control_side::{ControlSide, queue_error};
use super::model::{BatchUid, Kind, Status};
use super::queue::{
    BATCHES_TREE, BY_INDEX_TREE, BY_KIND_TREE, BY_STATUS_TREE, QueueError, QueueResult, TaskQueue,
    decode, trailing_uid,
};
use crate::coordinator::{CONTROL_CORE, Coordinator, CoreRequest};
use crate::errors::ResponseError;

/// The figures of the queue itself.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueFigures {
    /// Tasks per status, every status listed.
    pub statuses: Vec<(&'static str, u64)>,
    /// Tasks per type, every type listed.
    pub kinds: Vec<(&'static str, u64)>,
    /// Tasks per index, for the indexes that have tasks.
    pub indexes: Vec<(String, u64)>,
    /// When the oldest enqueued or processing task was enqueued.
    pub oldest_waiting_enqueued_at: Option<OffsetDateTime>,
    /// The newest finished batch with a succeeded or failed task, and its `progressTrace`.
    pub last_finished_batch: Option<(BatchUid, Map<String, Value>)>,
    /// The size the queue's file may reach.
    pub maximum_bytes: u64,
    /// The bytes of the queue's file that hold live data.
    pub used_bytes: u64,
}

/// The queue's figures and the batch the scheduler is processing.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskFigures {
    pub queue: QueueFigures,
    /// The batch being processed, and where it is.
    pub processing: Option<(BatchUid, Option<Progress>)>,
    /// Registration to visibility of the succeeded document writes since start.
    pub write_visibility: crate::histogram::Histogram,
    /// `--write-visibility-target-seconds` (`None`: no target).
    pub write_visibility_target: Option<std::time::Duration>,
    /// Whether the batch being processed passed the target (indexing stopped pacing).
    pub writes_overdue: bool,
}

impl TaskQueue {
    /// The queue's figures, from its last commit.
    pub fn figures(&self) -> QueueResult<QueueFigures> {
        let read = self.database().begin_read();
        let by_status = count_by_first_byte(&read, BY_STATUS_TREE)?;
        let by_kind = count_by_first_byte(&read, BY_KIND_TREE)?;
        let stats = self.database().stats();
        Ok(QueueFigures {
            statuses: Status::ALL
                .iter()
                .map(|status| {
                    (
                        status.name(),
                        by_status.get(&status.byte()).copied().unwrap_or(0),
                    )
                })
                .collect(),
            kinds: Kind::ALL
                .iter()
                .map(|kind| (kind.name(), by_kind.get(&kind.byte()).copied().unwrap_or(0)))
                .collect(),
            indexes: count_by_index(&read)?,
            oldest_waiting_enqueued_at: oldest_waiting_enqueued_at(&read)?,
            last_finished_batch: last_finished_batch(&read)?
                .map(|batch| (batch.uid, batch.stats.progress_trace)),
            maximum_bytes: self.maximum_size_bytes(),
            used_bytes: stats.used_pages.saturating_mul(stats.page_bytes),
        })
    }
}

/// The keys of `tree` counted by their first byte.
fn count_by_first_byte(read: &ReadTransaction, tree: &str) -> QueueResult<BTreeMap<u8, u64>> {
    let tree = TaskQueue::read_tree(read, tree)?;
    let mut counts = BTreeMap::new();
    for entry in tree.range(Bound::Unbounded, Bound::Unbounded, Direction::Forward)? {
        let (key, _) = entry?;
        let first = *key
            .first()
            .ok_or_else(|| QueueError::Corrupted("an empty secondary key".into()))?;
        *counts.entry(first).or_insert(0) += 1;
    }
    Ok(counts)
}

/// The tasks of each index (keys `index ‖ 0x00 ‖ task uid`), in index order.
fn count_by_index(read: &ReadTransaction) -> QueueResult<Vec<(String, u64)>> {
    /// The separator and the task uid after an index uid.
    const SUFFIX_BYTES: usize = 5;
    let tree = TaskQueue::read_tree(read, BY_INDEX_TREE)?;
    let mut counts: Vec<(String, u64)> = Vec::new();
    for entry in tree.range(Bound::Unbounded, Bound::Unbounded, Direction::Forward)? {
        let (key, _) = entry?;
        let end = key
            .len()
            .checked_sub(SUFFIX_BYTES)
            .ok_or_else(|| QueueError::Corrupted("an index key shorter than a uid".into()))?;
        let index = std::str::from_utf8(&key[..end])
            .map_err(|_| QueueError::Corrupted("an index uid that is not UTF-8".into()))?;
        match counts.last_mut() {
            Some((last, count)) if last == index => *count += 1,
            _ => counts.push((index.to_owned(), 1)),
        }
    }
    Ok(counts)
}

/// When the oldest enqueued or processing task was enqueued.
fn oldest_waiting_enqueued_at(read: &ReadTransaction) -> QueueResult<Option<OffsetDateTime>> {
    let tree = TaskQueue::read_tree(read, BY_STATUS_TREE)?;
    let mut oldest: Option<u32> = None;
    for status in [Status::Enqueued, Status::Processing] {
        if let Some(entry) = tree.prefix(&[status.byte()], Direction::Forward)?.next() {
            let (key, _) = entry?;
            let uid = trailing_uid(key)?;
            oldest = Some(oldest.map_or(uid, |oldest| oldest.min(uid)));
        }
    }
    match oldest {
        Some(uid) => Ok(TaskQueue::read_task(read, uid)?.map(|task| task.enqueued_at)),
        None => Ok(None),
    }
}

/// The newest finished batch that holds a succeeded or failed task.
fn last_finished_batch(read: &ReadTransaction) -> QueueResult<Option<Batch>> {
    let tree = TaskQueue::read_tree(read, BATCHES_TREE)?;
    for entry in tree.range(Bound::Unbounded, Bound::Unbounded, Direction::Backward)? {
        let (_, bytes) = entry?;
        let batch: Batch = decode(bytes)?;
        let succeeded_or_failed = batch
            .statuses
            .iter()
            .any(|status| matches!(status, Status::Succeeded | Status::Failed));
        if batch.finished_at.is_some() && succeeded_or_failed {
            return Ok(Some(batch));
        }
    }
    Ok(None)
}

/// The task figures, read on the control core.
pub async fn task_figures(coordinator: &Coordinator) -> Result<TaskFigures, ResponseError> {
    coordinator.ask(CONTROL_CORE, ReadTaskFigures).await?
}

struct ReadTaskFigures;

impl CoreRequest<Coordinator> for ReadTaskFigures {
    type Answer = Result<TaskFigures, ResponseError>;

    async fn run(self, _coordinator: &Coordinator) -> Self::Answer {
        let control = ControlSide::local()?;
        let processing = control
            .processing
            .borrow()
            .map(|(uid, _)| (uid, control.progress.borrow().clone()));
        let queue = control.queue.clone();
        let queue = crate::runtime::blocking::run(move || queue.figures())
            .await
            .map_err(queue_error)?;
        let write_visibility = control.write_visibility.borrow().clone();
        Ok(TaskFigures {
            queue,
            processing,
            write_visibility,
            write_visibility_target: control.write_visibility_target,
            writes_overdue: crate::runtime::serving_activity::writes_overdue(),
        })
    }
}
