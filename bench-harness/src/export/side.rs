//! One server's run of the export benchmark: a source instance started fresh, given the index
//! and the dataset, gone quiet; an empty target instance of the same server started beside
//! it; the timed export from one to the other; the target's settings compared with the
//! source's; both stopped.
//!
//! Invariants: both processes are stopped on every path out of `run_side` (the process
//! guards' drop); the source alone is allowed to call loopback
//! (`--experimental-allowed-ip-networks`, as the network benchmark allows it; without it both
//! servers refuse to export to `127.0.0.1`), the target gets no extra flag; the target starts
//! only once the source went quiet, so the source's background work after indexing is not
//! measured as export work.

use std::ffi::OsString;
use std::time::Instant;

use super::transfer::{ExportFigures, Participant, timed_export};
use crate::compare::client::Client;
use crate::compare::server::{ServerProcess, ServerSpec};
use crate::compare::settle::{Settling, wait_until_quiet};
use crate::compare::setup::{Ingestion, get_json, ingest};
use crate::compare::side::{REQUEST_TIMEOUT, StartedSide, start_with_index};
use crate::network::cluster::ALLOWED_IP_NETWORKS;

/// Every number of a run, the same for both servers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportOptions {
    /// The index created on the source and exported.
    pub index_uid: String,
    /// Documents per payload of the ingestion.
    pub batch: usize,
    /// Keep the data directories after the run.
    pub keep_data: bool,
}

/// Where one server's two instances work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairSpecs {
    /// The instance filled and exported from.
    pub source: ServerSpec,
    /// The empty instance exported to (its own directory and port).
    pub target: ServerSpec,
}

impl PairSpecs {
    /// The source allowed to call loopback, where the target listens.
    pub fn source_allowed_to_call_the_target(&self) -> ServerSpec {
        let mut source = self.source.clone();
        source.extra_arguments.extend([
            OsString::from("--experimental-allowed-ip-networks"),
            OsString::from(ALLOWED_IP_NETWORKS),
        ]);
        source
    }
}

/// Everything measured on one server.
#[derive(Debug, Clone, PartialEq)]
pub struct SideExport {
    /// The server's name.
    pub name: &'static str,
    /// Its `GET /version` `pkgVersion`, when it answered one.
    pub version: Option<String>,
    /// The source's ingestion.
    pub ingestion: Ingestion,
    /// How long the source stayed busy after it.
    pub settling: Settling,
    /// The export.
    pub export: ExportFigures,
    /// Whether the target's index settings equal the source's afterwards.
    pub settings_equal: bool,
}

/// The settings of index `uid`.
fn settings(client: &mut Client, uid: &str) -> Result<serde_json::Value, String> {
    get_json(client, &format!("/indexes/{uid}/settings"))
}

/// Runs one side; progress goes to standard error.
pub fn run_side(
    specs: &PairSpecs,
    lines: &[String],
    options: &ExportOptions,
) -> Result<SideExport, String> {
    let source_spec = specs.source_allowed_to_call_the_target();
    let outcome = run_pair(&source_spec, &specs.target, lines, options);
    if !options.keep_data {
        let _ = std::fs::remove_dir_all(source_spec.data_dir());
        let _ = std::fs::remove_dir_all(specs.target.data_dir());
    }
    outcome
}

fn run_pair(
    source_spec: &ServerSpec,
    target_spec: &ServerSpec,
    lines: &[String],
    options: &ExportOptions,
) -> Result<SideExport, String> {
    let name = source_spec.kind.name();
    let StartedSide {
        server: mut source,
        client: mut source_client,
        version,
    } = start_with_index(source_spec, &options.index_uid)?;
    eprintln!(
        "[{name}] ingesting {} documents into the source",
        lines.len()
    );
    let ingestion = ingest(&mut source_client, &options.index_uid, lines, options.batch)?;
    eprintln!(
        "[{name}] indexed {} documents ({} stored) in {:.2} s",
        ingestion.documents,
        ingestion.stored,
        ingestion.elapsed.as_secs_f64()
    );
    let pid =
        i32::try_from(source.pid).map_err(|_| format!("process id {} out of range", source.pid))?;
    eprintln!("[{name}] waiting for the source to go quiet");
    let settling = wait_until_quiet(pid, Instant::now())?;
    eprintln!("[{name}] starting the target");
    let mut target = ServerProcess::start(target_spec)?;
    let mut target_client = Client::new(
        target_spec.address(),
        target_spec.master_key.clone(),
        REQUEST_TIMEOUT,
    );
    eprintln!("[{name}] exporting");
    let export = timed_export(
        Participant {
            server: &source,
            client: &mut source_client,
        },
        Participant {
            server: &target,
            client: &mut target_client,
        },
        &options.index_uid,
        ingestion.stored,
    )?;
    eprintln!(
        "[{name}] export task succeeded after {:.2} s, target complete after {:.2} s",
        export.task_succeeded_after.as_secs_f64(),
        export.target_complete_after.as_secs_f64()
    );
    let settings_equal = settings(&mut source_client, &options.index_uid)?
        == settings(&mut target_client, &options.index_uid)?;
    target.stop();
    source.stop();
    Ok(SideExport {
        name,
        version,
        ingestion,
        settling,
        export,
        settings_equal,
    })
}
