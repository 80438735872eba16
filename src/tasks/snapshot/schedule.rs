//! `--schedule-snapshot` (`MEILI_SCHEDULE_SNAPSHOT`): a `snapshotCreation` task registered
//! every interval, as Meilisearch's loop does — wait the interval, register, again — so the
//! first one comes one interval after the start. A registration that fails (a full queue) is
//! logged and the loop goes on.
//!
//! Invariant: at most one registration per [`SCHEDULE_INTERVAL_MIN`]. Meilisearch takes
//! `--schedule-snapshot 0` literally and registers tasks back to back, which fills its queue;
//! here an interval of 0 means one snapshot task per second.

use std::rc::Rc;
use std::time::Duration;

use super::super::control_side;
use super::super::model::KindWithContent;
use crate::coordinator::Coordinator;

/// The shortest time between two scheduled snapshot tasks.
pub const SCHEDULE_INTERVAL_MIN: Duration = Duration::from_secs(1);

/// The time between two scheduled snapshot tasks for `--schedule-snapshot <seconds>`.
pub fn schedule_interval(seconds: u64) -> Duration {
    Duration::from_secs(seconds).max(SCHEDULE_INTERVAL_MIN)
}

/// Registers a `snapshotCreation` task every `interval`, until the core stops.
pub async fn register_every(coordinator: Rc<Coordinator>, interval: Duration) {
    loop {
        crate::runtime::sleep(interval).await;
        match control_side::register(&coordinator, KindWithContent::SnapshotCreation, None).await {
            Ok(task) => tracing::info!(task = task.uid, "scheduled snapshot registered"),
            Err(error) => {
                tracing::error!(message = %error.message, "could not register a scheduled snapshot");
            }
        }
    }
}
