//! `POST /tasks/compact`: the task queue's file compacted, as Meilisearch 1.41 answers it —
//! synchronously, `200` with the sizes before and after, `status: succeeded` and
//! `actionRequired`, or `500` with `status: failed` and the error.
//!
//! Meilisearch copies its task database into a compacted file and swaps it in, then keeps
//! a write transaction open until the instance restarts (hence its "you must restart your
//! instance"). Here the queue is a page store compacted in place: every tree is rewritten
//! in full pages, one commit per tree, then the disk blocks of every free page are given
//! back to the file system. The queue keeps working afterwards; the answer keeps
//! Meilisearch's shape, `actionRequired` included, for the clients that read it.
//!
//! Invariants: the compaction holds the queue's write permit from its first rewrite to its
//! last release, so no registration or batch record interleaves; a rewrite changes no entry
//! (each tree is rewritten whole in one commit, or not at all); the sizes are the disk bytes
//! the file holds (its released free pages are holes), so the size after is never larger
//! than the one before unless tasks were added in between, which the permit excludes.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::control_side::ControlSide;
use super::queue::{QueueError, QueueResult, TaskQueue};
use crate::coordinator::{CONTROL_CORE, Coordinator, CoreRequest};
use crate::errors::ResponseError;

/// Leaves filled to the brim: a compaction is asked for to take the least room.
const FULL_PAGE_PERCENT: usize = 100;

/// How often the release looks again for pages a reader's snapshot still held.
const PENDING_RELEASE_POLL_INTERVAL: Duration = Duration::from_millis(5);

/// How long the release waits at most for those readers.
const PENDING_RELEASE_WAIT_MAX: Duration = Duration::from_secs(1);

/// What Meilisearch tells the user to do after a compaction.
pub const ACTION_REQUIRED: &str = "you must restart your instance";

/// The disk bytes of the queue's file before and after a compaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactedSizes {
    pub before: u64,
    pub after: u64,
}

impl TaskQueue {
    /// Rewrites every tree of the queue's file in full pages and gives the disk blocks of
    /// its free pages back; answers the file's disk bytes before and after.
    pub fn compact(&self) -> QueueResult<CompactedSizes> {
        let before = disk_bytes(self.path())?;
        let never = AtomicBool::new(false);
        let names = self.database().begin_read().tree_names()?;
        for name in names {
            let write = self.database().begin_write()?;
            write.repack_tree(&name, FULL_PAGE_PERCENT, &never)?;
            write.commit()?;
        }
        self.release_every_free_page()?;
        Ok(CompactedSizes {
            before,
            after: disk_bytes(self.path())?,
        })
    }

    /// Gives back the blocks of every free page, waiting (a bounded time) for the readers
    /// whose snapshots still hold some.
    fn release_every_free_page(&self) -> QueueResult<()> {
        let started = Instant::now();
        loop {
            let released = self.database().release_free_pages(1)?;
            if released.pending_pages == 0 || started.elapsed() >= PENDING_RELEASE_WAIT_MAX {
                return Ok(());
            }
            std::thread::sleep(PENDING_RELEASE_POLL_INTERVAL);
        }
    }
}

/// The disk bytes of the file at `path` (what `du` counts).
fn disk_bytes(path: &Path) -> QueueResult<u64> {
    use std::os::unix::fs::MetadataExt;
    /// Bytes per unit of `st_blocks`, fixed by POSIX.
    const STAT_BLOCK_BYTES: u64 = 512;
    std::fs::metadata(path)
        .map(|metadata| metadata.blocks() * STAT_BLOCK_BYTES)
        .map_err(|error| QueueError::Storage(storage_engine::Error::Io(error)))
}

/// A size as Meilisearch writes it in this answer (`byte_unit`, an exact unit: `456 KiB`).
fn size_text(bytes: u64) -> String {
    format!("{:#}", byte_unit::Byte::from_u64(bytes))
}

/// The answer: status and body.
pub fn summary(outcome: &Result<CompactedSizes, String>) -> (u16, Value) {
    match outcome {
        Ok(sizes) => (
            200,
            json!({
                "preSize": size_text(sizes.before),
                "postSize": size_text(sizes.after),
                "status": "succeeded",
                "actionRequired": ACTION_REQUIRED,
            }),
        ),
        Err(message) => (500, json!({"status": "failed", "errorMessage": message})),
    }
}

/// Compacts the queue on the control core, after the queue writes before it.
pub async fn compact_task_queue(
    coordinator: &Coordinator,
) -> Result<Result<CompactedSizes, String>, ResponseError> {
    coordinator.ask(CONTROL_CORE, CompactTaskQueue).await
}

struct CompactTaskQueue;

impl CoreRequest<Coordinator> for CompactTaskQueue {
    type Answer = Result<CompactedSizes, String>;

    async fn run(self, _coordinator: &Coordinator) -> Self::Answer {
        let control = ControlSide::local().map_err(|error| error.message)?;
        let outcome = control
            .write_queue(|queue| queue.compact())
            .await
            .map_err(|error| error.message)?;
        match outcome {
            Ok(sizes) => {
                tracing::info!(
                    before = sizes.before,
                    after = sizes.after,
                    "task queue compacted"
                );
                Ok(sizes)
            }
            Err(error) => {
                tracing::error!(%error, "task queue compaction failed");
                Err(error.to_string())
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_written_with_an_exact_unit() {
        assert_eq!(size_text(466_944), "456 KiB");
        assert_eq!(size_text(1_048_576), "1 MiB");
        let (status, body) = summary(&Ok(CompactedSizes {
            before: 466_944,
            after: 126_976,
        }));
        assert_eq!(status, 200);
        assert_eq!(
            body,
            json!({
                "preSize": "456 KiB",
                "postSize": "124 KiB",
                "status": "succeeded",
                "actionRequired": "you must restart your instance",
            })
        );
        let (status, body) = summary(&Err("disk on fire".into()));
        assert_eq!(status, 500);
        assert_eq!(
            body,
            json!({"status": "failed", "errorMessage": "disk on fire"})
        );
    }
}
