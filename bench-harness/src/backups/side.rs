//! One server's run of the backup benchmark: start it fresh, create the index, ingest the
//! dataset, go quiet; dump; search idle and search while snapshots run back to back, in
//! alternating rounds; stop; then
//! start a fresh instance from the dump and time its import.
//!
//! Invariants: every server process is stopped on every path out of `run_side` (the process
//! guards' drop); the server goes quiet after indexing and again after the dump, before the
//! idle search, so neither measures background work of an earlier step; the idle and the
//! snapshot loads are the same mix, connections, duration, warm-up and seed; the import runs
//! after the dump's server stopped, on its own empty data directory, and must hold every
//! document the dump's server held.

use std::path::PathBuf;
use std::time::Instant;

use super::dump::{DUMP_DIRECTORY, DumpFigures, create_dump};
use super::import::{ImportFigures, import_dump};
use super::snapshots::{SNAPSHOT_DIRECTORY, SnapshotFigures, search_under_snapshots};
use crate::compare::disk::{DiskUsage, disk_usage};
use crate::compare::server::{ServerProcess, ServerSpec};
use crate::compare::settle::{Settling, wait_until_quiet};
use crate::compare::setup::{Ingestion, ingest};
use crate::compare::side::{LoadSettings, StartedSide, load_run_report, start_with_index};
use crate::compare::table::LoadFigures;
use crate::load::{Pacing, Report, Workload};

/// Every number of a run, the same for both servers.
#[derive(Debug, Clone, PartialEq)]
pub struct BackupOptions {
    /// The index created, dumped, imported and searched.
    pub index_uid: String,
    /// Documents per payload of the ingestion.
    pub batch: usize,
    /// Connections of both search loads.
    pub connections: usize,
    /// Measured time, warm-up, timeout and seed of both search loads.
    pub load: LoadSettings,
    /// Keep the data directories, the dump and the snapshot after the run.
    pub keep_data: bool,
    /// Idle and under-snapshot loads alternate this many times; each condition's latencies
    /// are pooled over its rounds.
    pub rounds: usize,
}

/// Where one server's two instances work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SideSpecs {
    /// The instance that is filled, dumped, searched and snapshotted.
    pub source: ServerSpec,
    /// The instance started from the dump (same binary and port, its own directory).
    pub imported: ServerSpec,
}

/// Everything measured on one server.
#[derive(Debug, Clone, PartialEq)]
pub struct SideBackups {
    /// The server's name.
    pub name: &'static str,
    /// Its `GET /version` `pkgVersion`, when it answered one.
    pub version: Option<String>,
    /// The ingestion.
    pub ingestion: Ingestion,
    /// The data directory once quiet after indexing.
    pub source_disk: DiskUsage,
    /// The dump.
    pub dump: DumpFigures,
    /// How long the server stayed busy after the dump.
    pub after_dump: Settling,
    /// The idle search load.
    pub idle: LoadFigures,
    /// The search load while snapshots ran.
    pub under_snapshots: LoadFigures,
    /// Each round's idle p99 and p99 under snapshots, in milliseconds, in order.
    pub round_p99_milliseconds: Vec<(Option<f64>, Option<f64>)>,
    /// The snapshots that ran meanwhile.
    pub snapshots: SnapshotFigures,
    /// The import of the dump.
    pub import: ImportFigures,
}

/// Waits until `server` went quiet, from now.
fn settle(server: &ServerProcess) -> Result<Settling, String> {
    let pid =
        i32::try_from(server.pid).map_err(|_| format!("process id {} out of range", server.pid))?;
    eprintln!(
        "[{}] waiting for the server to go quiet",
        server.spec.kind.name()
    );
    wait_until_quiet(pid, Instant::now())
}

/// What the source instance measured, and the dump it left.
struct SourceResults {
    version: Option<String>,
    ingestion: Ingestion,
    source_disk: DiskUsage,
    dump: DumpFigures,
    after_dump: Settling,
    searches: SearchRounds,
}

/// The idle and under-snapshot loads of every round, pooled.
struct SearchRounds {
    idle: LoadFigures,
    under_snapshots: LoadFigures,
    snapshots: SnapshotFigures,
    round_p99_milliseconds: Vec<(Option<f64>, Option<f64>)>,
}

/// Alternates an idle search load and a load under back-to-back snapshots, `options.rounds`
/// times, so that drift over the run (caches, the page cache, the machine) falls on both
/// conditions alike; pools each condition's latencies.
fn search_rounds(
    server: &ServerProcess,
    spec: &ServerSpec,
    workload: &Workload,
    options: &BackupOptions,
) -> Result<SearchRounds, String> {
    let name = spec.kind.name();
    let (mut idle, mut under, mut snapshots) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..options.rounds {
        eprintln!(
            "[{name}] round {round}: idle search, {} connections",
            options.connections
        );
        let idle_report = load_run_report(
            server,
            workload,
            &options.load,
            Pacing::ClosedLoop,
            options.connections,
            &spec.work_dir.join(format!("idle-{round}.json")),
        )?;
        eprintln!("[{name}] round {round}: search while snapshots run back to back");
        let (under_report, figures) = search_under_snapshots(
            server,
            workload,
            &options.load,
            options.connections,
            &spec.work_dir.join(format!("under-snapshots-{round}.json")),
        )?;
        eprintln!(
            "[{name}] {} snapshots ({} in the window, {:.0}% of it covered)",
            figures.snapshots,
            figures.snapshots_in_window,
            figures.window_covered * 100.0
        );
        idle.push(idle_report);
        under.push(under_report);
        snapshots.push(figures);
    }
    let p99 = |report: &Report| LoadFigures::from_report(report).p99_milliseconds;
    let round_p99_milliseconds = idle
        .iter()
        .zip(&under)
        .map(|(idle, under)| (p99(idle), p99(under)))
        .collect();
    let none = || "no search round ran (--rounds 0)".to_string();
    Ok(SearchRounds {
        idle: LoadFigures::pooled(&idle).ok_or_else(none)?,
        under_snapshots: LoadFigures::pooled(&under).ok_or_else(none)?,
        snapshots: SnapshotFigures::pooled(&snapshots).ok_or_else(none)?,
        round_p99_milliseconds,
    })
}

/// Fills, dumps, searches and snapshots the source instance, then stops it.
fn run_source(
    spec: &ServerSpec,
    lines: &[String],
    workload: &Workload,
    options: &BackupOptions,
) -> Result<SourceResults, String> {
    let name = spec.kind.name();
    let StartedSide {
        mut server,
        mut client,
        version,
    } = start_with_index(spec, &options.index_uid)?;
    eprintln!("[{name}] ingesting {} documents", lines.len());
    let ingestion = ingest(&mut client, &options.index_uid, lines, options.batch)?;
    eprintln!(
        "[{name}] indexed {} documents ({} stored) in {:.2} s",
        ingestion.documents,
        ingestion.stored,
        ingestion.elapsed.as_secs_f64()
    );
    settle(&server)?;
    let source_disk = disk_usage(&spec.data_dir());
    eprintln!("[{name}] dump");
    let dump = create_dump(&mut client, &spec.work_dir)?;
    eprintln!(
        "[{name}] dump of {} bytes in {:.2} s",
        dump.bytes,
        dump.wall.as_secs_f64()
    );
    let after_dump = settle(&server)?;
    let searches = search_rounds(&server, spec, workload, options)?;
    server.stop();
    Ok(SourceResults {
        version,
        ingestion,
        source_disk,
        dump,
        after_dump,
        searches,
    })
}

/// Removes what a run leaves that is large: data directories, the dump, the snapshot.
fn remove_data(specs: &SideSpecs) {
    let directories: [PathBuf; 4] = [
        specs.source.data_dir(),
        specs.source.work_dir.join(DUMP_DIRECTORY),
        specs.source.work_dir.join(SNAPSHOT_DIRECTORY),
        specs.imported.data_dir(),
    ];
    for directory in directories {
        let _ = std::fs::remove_dir_all(directory);
    }
}

/// Runs one side; progress goes to standard error.
pub fn run_side(
    specs: &SideSpecs,
    lines: &[String],
    workload: &Workload,
    options: &BackupOptions,
) -> Result<SideBackups, String> {
    let name = specs.source.kind.name();
    let outcome = run_source(&specs.source, lines, workload, options).and_then(|source| {
        eprintln!("[{name}] importing the dump into a fresh instance");
        let import = import_dump(
            &specs.imported,
            &source.dump.file,
            &options.index_uid,
            source.ingestion.stored,
        )?;
        eprintln!(
            "[{name}] healthy after {:.2} s, every document held after {:.2} s",
            import.healthy_after.as_secs_f64(),
            import.complete_after.as_secs_f64()
        );
        Ok(SideBackups {
            name,
            version: source.version,
            ingestion: source.ingestion,
            source_disk: source.source_disk,
            dump: source.dump,
            after_dump: source.after_dump,
            idle: source.searches.idle,
            under_snapshots: source.searches.under_snapshots,
            round_p99_milliseconds: source.searches.round_p99_milliseconds,
            snapshots: source.searches.snapshots,
            import,
        })
    });
    if !options.keep_data {
        remove_data(specs);
    }
    outcome
}

/// The p99 latency under snapshots over the idle p99 (none without both).
pub fn p99_under_snapshots_over_idle(side: &SideBackups) -> Option<f64> {
    let idle = side.idle.p99_milliseconds?;
    let under = side.under_snapshots.p99_milliseconds?;
    (idle > 0.0).then_some(under / idle)
}
