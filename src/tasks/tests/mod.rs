//! Tests of the task queue, one file per concept; every case is written from Meilisearch
//! v1.41's behaviour (its sources and test snapshots) and is deterministic (fixed dates, no
//! randomness, so there is no seed to print).

#![allow(clippy::unwrap_used)]

mod autobatch;
mod invariants;
mod query;
mod queue;
mod views;
mod visibility;

use time::OffsetDateTime;
use time::macros::datetime;

use super::model::{DocumentMethod, KindWithContent, Task};

/// A fixed date plus `seconds`.
pub(super) fn at(seconds: i64) -> OffsetDateTime {
    datetime!(2024-08-08 17:05:55 UTC) + time::Duration::seconds(seconds)
}

/// A document addition to `index` with `documents` documents.
pub(super) fn addition(index: &str, documents: u64) -> KindWithContent {
    KindWithContent::DocumentAdditionOrUpdate {
        index_uid: index.to_owned(),
        primary_key: None,
        method: DocumentMethod::Replace,
        content_file: format!("update-{index}-{documents}"),
        documents_count: documents,
        content_bytes: 100,
        allow_index_creation: true,
        skip_creation: false,
    }
}

/// An enqueued task.
pub(super) fn task(uid: u32, kind: KindWithContent) -> Task {
    Task::new(uid, kind, at(i64::from(uid)), None)
}
