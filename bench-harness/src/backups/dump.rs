//! Creating a dump: `POST /dumps`, timed until its task finished — by the harness's clock
//! (from just before the request to the first poll that saw the task finished) and by the
//! task's own timestamps — and the size of the file it wrote.
//!
//! Invariants: the dump file is `<dumpUid>.dump` in `dumps/` of the server's working
//! directory (both servers' default `--dump-dir`, which the launcher does not change); a dump
//! task that does not succeed, or a file that is not there, fails the measurement.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::compare::client::Client;
use crate::compare::task::{ENQUEUED_STATUS, enqueue, wait_for_task};

/// The dump directory, relative to the server's working directory (the default `--dump-dir`).
pub const DUMP_DIRECTORY: &str = "dumps";
/// The extension of a dump file.
pub const DUMP_EXTENSION: &str = "dump";
/// The longest wait for a dump or a snapshot task.
pub const BACKUP_TASK_TIMEOUT: Duration = Duration::from_secs(2 * 3600);

/// What a dump took.
#[derive(Debug, Clone, PartialEq)]
pub struct DumpFigures {
    /// From just before `POST /dumps` until the harness saw the task finished.
    pub wall: Duration,
    /// The task's `enqueuedAt` to `finishedAt`, in seconds.
    pub enqueued_to_finished_seconds: f64,
    /// The task's `startedAt` to `finishedAt`, in seconds.
    pub processing_seconds: Option<f64>,
    /// The dump file.
    pub file: PathBuf,
    /// Its length in bytes.
    pub bytes: u64,
}

/// Asks the server working in `work_dir` for a dump and waits for it.
pub fn create_dump(client: &mut Client, work_dir: &Path) -> Result<DumpFigures, String> {
    let asked = Instant::now();
    let uid = enqueue(client, "POST", "/dumps", &json!({}), ENQUEUED_STATUS)?;
    let task = wait_for_task(client, uid, BACKUP_TASK_TIMEOUT)?;
    let wall = task.seen_finished.duration_since(asked);
    if !task.succeeded() {
        return Err(format!("dump: {}", task.failure()));
    }
    let dump_uid = task.record["details"]["dumpUid"]
        .as_str()
        .ok_or_else(|| format!("dump task {uid} has no details.dumpUid: {}", task.record))?;
    let file = work_dir
        .join(DUMP_DIRECTORY)
        .join(format!("{dump_uid}.{DUMP_EXTENSION}"));
    let bytes = std::fs::metadata(&file)
        .map_err(|error| format!("dump file {}: {error}", file.display()))?
        .len();
    Ok(DumpFigures {
        wall,
        enqueued_to_finished_seconds: task.enqueued_to_finished_seconds(),
        processing_seconds: task.processing_seconds(),
        file,
        bytes,
    })
}
