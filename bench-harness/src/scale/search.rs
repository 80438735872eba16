//! The search runs at one size: the query mix in a closed loop at each connection count, one
//! after the other, through the load driver as `search_compare` drives it
//! (`crate::compare::side::load_run`).
//!
//! Invariants: every run sends the same workload (each query of the mix with equal
//! probability) from the same seed, for the same warm-up and measured time; the runs never
//! overlap; each run's full report is kept as JSON in the server's work directory, named after
//! the size and the connection count.

use std::path::{Path, PathBuf};

use super::figures::SearchFigures;
use crate::compare::server::ServerProcess;
use crate::compare::side::{LoadSettings, load_run};
use crate::load::{Pacing, Workload};

/// The file of the detailed report of the run at `documents` and `connections`.
pub fn report_path(directory: &Path, documents: u64, connections: usize) -> PathBuf {
    directory.join(format!(
        "search-{documents}-documents-{connections}-connections.json"
    ))
}

/// One closed-loop run of `workload` against `server` per entry of `connections`.
pub fn search_runs(
    server: &ServerProcess,
    workload: &Workload,
    settings: &LoadSettings,
    connections: &[usize],
    documents: u64,
) -> Result<Vec<SearchFigures>, String> {
    let name = server.spec.kind.name();
    connections
        .iter()
        .map(|connections| {
            eprintln!("[{name}] {documents} documents: search, {connections} connection(s)");
            let path = report_path(&server.spec.work_dir, documents, *connections);
            let load = load_run(
                server,
                workload,
                settings,
                Pacing::ClosedLoop,
                *connections,
                &path,
            )?;
            Ok(SearchFigures::from_load(*connections, &load))
        })
        .collect()
}
