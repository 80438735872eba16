//! Importing a dump: a fresh instance of the same server, started with `--import-dump
//! <file>` on an empty data directory, timed from just before its start until `/health`
//! answers and until the index holds every document with no task enqueued or processing; the
//! data directory's size then.
//!
//! Invariants: the instance runs alone (the dump's server was stopped before); both servers
//! import before they answer `/health`, so the first time is the import proper and the second
//! adds whatever the server still does afterwards; the health probes are the launcher's
//! ([`crate::compare::server::HEALTH_POLL_INTERVAL`] apart) and the count polls
//! [`IMPORT_POLL_INTERVAL`] apart, so each time is that much late at most; an import that
//! holds another number of documents once nothing is pending, or has a failed task, fails
//! the measurement.

use std::ffi::OsString;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::compare::client::Client;
use crate::compare::disk::{DiskUsage, disk_usage};
use crate::compare::server::{ServerProcess, ServerSpec};
use crate::compare::setup::{any_task_pending, document_count, get_json};
use crate::compare::side::REQUEST_TIMEOUT;

/// The longest wait for an import, from the start until every document is held.
pub const IMPORT_TIMEOUT: Duration = Duration::from_secs(2 * 3600);
/// Pause between two polls of the imported index.
pub const IMPORT_POLL_INTERVAL: Duration = Duration::from_millis(50);

/// What the import took.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ImportFigures {
    /// From just before the start until `/health` answered 200.
    pub healthy_after: Duration,
    /// From just before the start until the index held every document, nothing pending.
    pub complete_after: Duration,
    /// Documents the index holds then.
    pub held: u64,
    /// The data directory then.
    pub disk: DiskUsage,
}

impl ImportFigures {
    /// Documents imported per second, start to complete.
    pub fn documents_per_second(&self) -> f64 {
        self.held as f64 / self.complete_after.as_secs_f64().max(f64::MIN_POSITIVE)
    }
}

/// `spec` started on an empty data directory with `--import-dump dump`.
pub fn import_spec(spec: &ServerSpec, dump: &Path) -> ServerSpec {
    let mut importing = spec.clone();
    importing.extra_arguments.extend([
        OsString::from("--import-dump"),
        dump.as_os_str().to_os_string(),
    ]);
    importing
}

/// Fails when the server has a failed task.
fn check_no_failed_task(client: &mut Client) -> Result<(), String> {
    let failed = get_json(client, "/tasks?statuses=failed&limit=1")?;
    if failed["total"] != 0 {
        return Err(format!(
            "failed tasks after the import: {}",
            failed["results"]
        ));
    }
    Ok(())
}

/// Starts `spec` importing `dump` and waits until index `index_uid` holds `expected`
/// documents; stops the instance before answering.
pub fn import_dump(
    spec: &ServerSpec,
    dump: &Path,
    index_uid: &str,
    expected: u64,
) -> Result<ImportFigures, String> {
    let spec = import_spec(spec, dump);
    let started = Instant::now();
    let mut server = ServerProcess::start_within(&spec, IMPORT_TIMEOUT)?;
    let healthy_after = started.elapsed();
    let mut client = Client::new(spec.address(), spec.master_key.clone(), REQUEST_TIMEOUT);
    loop {
        let held = document_count(&mut client, index_uid)?;
        let pending = any_task_pending(&mut client)?;
        if !pending && held == expected {
            let complete_after = started.elapsed();
            check_no_failed_task(&mut client)?;
            let disk = disk_usage(&spec.data_dir());
            server.stop();
            return Ok(ImportFigures {
                healthy_after,
                complete_after,
                held,
                disk,
            });
        }
        if !pending {
            return Err(format!(
                "the import holds {held} documents of {expected}, and nothing is pending"
            ));
        }
        if started.elapsed() > IMPORT_TIMEOUT {
            return Err(format!(
                "the import did not complete within {IMPORT_TIMEOUT:?} ({held} documents of {expected})"
            ));
        }
        std::thread::sleep(IMPORT_POLL_INTERVAL);
    }
}
