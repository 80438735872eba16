//! The batch model: a group of tasks processed together, with its statistics, accumulated
//! details, dates, progress and the strategy text that explains why it stopped there.
//!
//! Invariants:
//! - while processing, every task of the batch counts as `processing` in `stats.status`;
//!   once finished, the statistics and details are recomputed from the tasks' final state
//!   (tasks that joined the batch meanwhile, such as canceled ones, are counted);
//! - `statuses`, `kinds` and `indexes` are the sets the batch filters match on
//!   (`indexes` holds every index a task touches, swaps included).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use time::OffsetDateTime;

use super::model::{BatchUid, Kind, Status, Task};
use super::view::DetailsView;

/// One step of the progress of the batch being processed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProgressStep {
    pub current_step: String,
    pub finished: u32,
    pub total: u32,
}

/// The progress of the batch being processed (`progress` of the batch view).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    pub steps: Vec<ProgressStep>,
    pub percentage: f32,
}

/// `stats` of a batch.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BatchStats {
    pub total_nb_tasks: u32,
    pub status: BTreeMap<Status, u32>,
    pub types: BTreeMap<Kind, u32>,
    pub index_uids: BTreeMap<String, u32>,
    pub progress_trace: Map<String, Value>,
    pub write_channel_congestion: Option<Map<String, Value>>,
    pub internal_database_sizes: Map<String, Value>,
}

/// `stats.embedderRequests`, shown only when something was counted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmbedderStats {
    pub total: u64,
    pub failed: u64,
    pub last_error: Option<String>,
}

/// The newest and the oldest enqueue date of the batch's tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchEnqueuedAt {
    #[serde(with = "time::serde::rfc3339")]
    pub earliest: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub oldest: OffsetDateTime,
}

/// The strategy text of a batch whose reason is unknown.
pub const UNSPECIFIED_STRATEGY: &str = "unspecified";

/// A batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Batch {
    pub uid: BatchUid,
    /// Only for the batch being processed; never stored.
    #[serde(skip)]
    pub progress: Option<Progress>,
    /// The accumulated `details` object, rendered.
    pub details: Map<String, Value>,
    pub stats: BatchStats,
    pub embedder_stats: EmbedderStats,
    #[serde(with = "time::serde::rfc3339")]
    pub started_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub finished_at: Option<OffsetDateTime>,
    pub enqueued_at: Option<BatchEnqueuedAt>,
    /// `batchStrategy`.
    pub stop_reason: String,
    pub statuses: BTreeSet<Status>,
    pub kinds: BTreeSet<Kind>,
    pub indexes: BTreeSet<String>,
}

impl Batch {
    /// A batch that starts now, with no task yet.
    pub fn new(uid: BatchUid, started_at: OffsetDateTime, stop_reason: String) -> Batch {
        Batch {
            uid,
            progress: None,
            details: Map::new(),
            stats: BatchStats::default(),
            embedder_stats: EmbedderStats::default(),
            started_at,
            finished_at: None,
            enqueued_at: None,
            stop_reason,
            statuses: BTreeSet::from([Status::Processing]),
            kinds: BTreeSet::new(),
            indexes: BTreeSet::new(),
        }
    }

    /// Recomputes statistics, details and sets from `tasks`; `processing` counts every task
    /// as processing (a batch being processed), otherwise tasks count with their status.
    pub fn recompute(&mut self, tasks: &[Task], processing: bool) {
        let mut details: Option<DetailsView> = None;
        let mut stats = BatchStats {
            progress_trace: std::mem::take(&mut self.stats.progress_trace),
            write_channel_congestion: self.stats.write_channel_congestion.take(),
            internal_database_sizes: std::mem::take(&mut self.stats.internal_database_sizes),
            ..BatchStats::default()
        };
        self.statuses.clear();
        self.kinds.clear();
        self.indexes.clear();
        self.enqueued_at = None;
        for task in tasks {
            let status = if processing {
                Status::Processing
            } else {
                task.status
            };
            self.statuses.insert(status);
            stats.total_nb_tasks = stats.total_nb_tasks.saturating_add(1);
            *stats.status.entry(status).or_default() += 1;
            *stats.types.entry(task.kind()).or_default() += 1;
            if let Some(index_uid) = task.index_uid() {
                *stats.index_uids.entry(index_uid.to_owned()).or_default() += 1;
            }
            self.kinds.insert(task.kind());
            self.indexes
                .extend(task.indexes().into_iter().map(str::to_owned));
            if let Some(task_details) = &task.details {
                let view = DetailsView::from_details(task_details);
                match &mut details {
                    Some(accumulated) => accumulated.accumulate(&view),
                    None => details = Some(view),
                }
            }
            self.enqueued_at = Some(match self.enqueued_at {
                None => BatchEnqueuedAt {
                    earliest: task.enqueued_at,
                    oldest: task.enqueued_at,
                },
                Some(dates) => BatchEnqueuedAt {
                    earliest: dates.earliest.max(task.enqueued_at),
                    oldest: dates.oldest.min(task.enqueued_at),
                },
            });
        }
        if processing {
            self.statuses.insert(Status::Processing);
        }
        self.details = details.map(|view| view.to_json()).unwrap_or_default();
        self.stats = stats;
    }
}
