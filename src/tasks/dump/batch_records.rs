//! A batch as one line of a dump's `batches/queue.jsonl`, in Meilisearch's dump format V6
//! (its `Batch` serialized: camelCase fields, `details` and `stats` as the API shows them),
//! and the conversions between it and the queue's [`Batch`].
//!
//! Invariant: the filter sets of an imported batch (statuses, types, indexes) are rebuilt
//! from the batch's statistics and from the imported tasks that name it, so `GET /batches`
//! filters an imported batch as it filtered the original.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use time::OffsetDateTime;

use crate::tasks::batch::{Batch, BatchEnqueuedAt, BatchStats, EmbedderStats};
use crate::tasks::model::{Kind, Status, Task};

/// One line of `batches/queue.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchRecord {
    pub uid: u32,
    #[serde(default)]
    pub details: Map<String, Value>,
    pub stats: StatsRecord,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedder_stats: Option<EmbedderStatsRecord>,
    #[serde(with = "time::serde::rfc3339")]
    pub started_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option", default)]
    pub finished_at: Option<OffsetDateTime>,
    #[serde(default)]
    pub enqueued_at: Option<BatchEnqueuedAt>,
    #[serde(default = "unspecified_stop_reason")]
    pub stop_reason: String,
}

fn unspecified_stop_reason() -> String {
    crate::tasks::batch::UNSPECIFIED_STRATEGY.to_owned()
}

/// A batch's `stats`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatsRecord {
    pub total_nb_tasks: u32,
    pub status: BTreeMap<Status, u32>,
    pub types: BTreeMap<Kind, u32>,
    pub index_uids: BTreeMap<String, u32>,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub progress_trace: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_channel_congestion: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub internal_database_sizes: Map<String, Value>,
}

/// A batch's embedder requests.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EmbedderStatsRecord {
    pub total: u64,
    pub failed: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// The record of `batch`.
pub fn batch_to_record(batch: &Batch) -> BatchRecord {
    let stats = &batch.stats;
    let embedder = &batch.embedder_stats;
    let counted = embedder.total > 0 || embedder.failed > 0 || embedder.last_error.is_some();
    BatchRecord {
        uid: batch.uid,
        details: batch.details.clone(),
        stats: StatsRecord {
            total_nb_tasks: stats.total_nb_tasks,
            status: stats.status.clone(),
            types: stats.types.clone(),
            index_uids: stats.index_uids.clone(),
            progress_trace: stats.progress_trace.clone(),
            write_channel_congestion: stats.write_channel_congestion.clone(),
            internal_database_sizes: stats.internal_database_sizes.clone(),
        },
        embedder_stats: counted.then(|| EmbedderStatsRecord {
            total: embedder.total,
            failed: embedder.failed,
            last_error: embedder.last_error.clone(),
        }),
        started_at: batch.started_at,
        finished_at: batch.finished_at,
        enqueued_at: batch.enqueued_at,
        stop_reason: batch.stop_reason.clone(),
    }
}

/// The batch of `record`; `tasks` are the imported tasks of this batch (for the indexes a
/// swap touches, which the statistics do not name).
pub fn batch_from_record(record: BatchRecord, tasks: &[&Task]) -> Batch {
    let mut indexes: BTreeSet<String> = record.stats.index_uids.keys().cloned().collect();
    for task in tasks {
        indexes.extend(task.indexes().into_iter().map(str::to_owned));
    }
    let embedder = record.embedder_stats.unwrap_or_default();
    Batch {
        uid: record.uid,
        progress: None,
        details: record.details,
        statuses: record.stats.status.keys().copied().collect(),
        kinds: record.stats.types.keys().copied().collect(),
        indexes,
        stats: BatchStats {
            total_nb_tasks: record.stats.total_nb_tasks,
            status: record.stats.status,
            types: record.stats.types,
            index_uids: record.stats.index_uids,
            progress_trace: record.stats.progress_trace,
            write_channel_congestion: record.stats.write_channel_congestion,
            internal_database_sizes: record.stats.internal_database_sizes,
        },
        embedder_stats: EmbedderStats {
            total: embedder.total,
            failed: embedder.failed,
            last_error: embedder.last_error,
        },
        started_at: record.started_at,
        finished_at: record.finished_at,
        enqueued_at: record.enqueued_at,
        stop_reason: record.stop_reason,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_meilisearch_batch_line_reads_and_writes_back() {
        let line = r#"{"uid":0,"details":{"receivedDocuments":1,"indexedDocuments":1},"stats":{"totalNbTasks":1,"status":{"succeeded":1},"types":{"documentAdditionOrUpdate":1},"indexUids":{"movies":1},"progressTrace":{"processing tasks":"1.00ms"}},"startedAt":"2025-01-28T00:00:45.228052Z","finishedAt":"2025-01-28T00:00:59.20385Z","enqueuedAt":{"earliest":"2025-01-28T00:00:45.221028Z","oldest":"2025-01-28T00:00:45.221028Z"},"stopReason":"batched all enqueued tasks"}"#;
        let record: BatchRecord = serde_json::from_str(line).unwrap();
        let batch = batch_from_record(record, &[]);
        assert_eq!(batch.uid, 0);
        assert!(batch.statuses.contains(&Status::Succeeded));
        assert!(batch.indexes.contains("movies"));
        assert_eq!(batch.stop_reason, "batched all enqueued tasks");
        let written = serde_json::to_value(batch_to_record(&batch)).unwrap();
        assert_eq!(written, serde_json::from_str::<Value>(line).unwrap());
    }
}
