//! One side of the benchmark: start a server fresh, create the index, climb the whole size
//! ladder (grow, settle, measure disk, search, measure memory at each size), stop it.
//!
//! Invariants: the server is stopped on every path out of `run_side` (the process guard's
//! drop); a failure ends the side's ladder but keeps the sizes measured before it, with the
//! error beside them; the disk is measured after the server went quiet (or right after the
//! tasks when not waiting) and before the search runs, the memory after them; the data
//! directory is deleted at the end unless kept, the logs and load reports never.

use std::time::Instant;

use super::dataset::CopiedDataset;
use super::figures::{SideFigures, SizeFigures};
use super::fill::grow;
use super::ladder::Step;
use super::search::search_runs;
use super::settings::scale_settings;
use crate::compare::client::Client;
use crate::compare::disk::disk_usage;
use crate::compare::server::{ServerProcess, ServerSpec};
use crate::compare::settle::{Settling, wait_until_quiet};
use crate::compare::setup::{create_index, get_json};
use crate::compare::side::{LoadSettings, PRIMARY_KEY, REQUEST_TIMEOUT};
use crate::load::Workload;
use crate::measure::{peak_resident_bytes, resident_bytes};

/// How each side is driven.
#[derive(Debug, Clone, PartialEq)]
pub struct SideOptions {
    /// The index filled and searched.
    pub index_uid: String,
    /// Documents per payload.
    pub batch: u64,
    /// Connection counts of the search runs at each size.
    pub connections: Vec<usize>,
    /// Duration, warm-up, timeout and seed of each search run.
    pub load: LoadSettings,
    /// Wait for the server to go quiet after each step, before measuring.
    pub settle: bool,
    /// Keep the data directory after the run.
    pub keep_data: bool,
}

/// What a side climbs with.
#[derive(Debug, Clone, Copy)]
pub struct Ladder<'run> {
    /// The documents.
    pub dataset: &'run CopiedDataset<'run>,
    /// The steps, one per size.
    pub steps: &'run [Step],
    /// The search workload.
    pub workload: &'run Workload,
}

/// Runs one side; progress goes to standard error. Never fails: an error is kept in the
/// figures, after the sizes measured before it.
pub fn run_side(spec: &ServerSpec, ladder: Ladder<'_>, options: &SideOptions) -> SideFigures {
    let name = spec.kind.name();
    let mut figures = SideFigures {
        name,
        version: None,
        sizes: Vec::new(),
        error: None,
    };
    if let Err(error) = climb(spec, ladder, options, &mut figures) {
        eprintln!("[{name}] failed: {error}");
        figures.error = Some(error);
    }
    if !options.keep_data {
        let _ = std::fs::remove_dir_all(spec.data_dir());
    }
    figures
}

/// Starts the server, creates the index, and measures every size into `figures`.
fn climb(
    spec: &ServerSpec,
    ladder: Ladder<'_>,
    options: &SideOptions,
    figures: &mut SideFigures,
) -> Result<(), String> {
    eprintln!("[{}] starting {}", spec.kind.name(), spec.binary.display());
    let mut server = ServerProcess::start(spec)?;
    let mut client = Client::new(spec.address(), spec.master_key.clone(), REQUEST_TIMEOUT);
    figures.version = get_json(&mut client, "/version")
        .ok()
        .and_then(|answer| answer["pkgVersion"].as_str().map(str::to_string));
    create_index(
        &mut client,
        &options.index_uid,
        PRIMARY_KEY,
        &scale_settings(),
    )?;
    for step in ladder.steps {
        let size = measure_size(&server, &mut client, ladder, *step, options)?;
        figures.sizes.push(size);
    }
    server.stop();
    Ok(())
}

/// Grows the index by `step`, lets the server settle, and measures it at the step's size.
fn measure_size(
    server: &ServerProcess,
    client: &mut Client,
    ladder: Ladder<'_>,
    step: Step,
    options: &SideOptions,
) -> Result<SizeFigures, String> {
    let name = server.spec.kind.name();
    eprintln!("[{name}] adding documents {} to {}", step.from, step.to);
    let growth = grow(
        client,
        &options.index_uid,
        ladder.dataset,
        step,
        options.batch,
    )?;
    let indexed_at = Instant::now();
    eprintln!(
        "[{name}] {} documents stored; the step took {:.2} s",
        step.to,
        growth.elapsed.as_secs_f64()
    );
    let settling = if options.settle {
        Some(settle(server, indexed_at)?)
    } else {
        None
    };
    let disk = disk_usage(&server.spec.data_dir());
    let searches = search_runs(
        server,
        ladder.workload,
        &options.load,
        &options.connections,
        step.to,
    )?;
    Ok(SizeFigures {
        documents: step.to,
        added: step.added(),
        payloads: growth.payloads,
        indexing_seconds: growth.elapsed.as_secs_f64(),
        payload_generation_seconds: growth.generation.as_secs_f64(),
        settle_seconds: settling.map(|settling| settling.elapsed.as_secs_f64()),
        quiet: settling.map(|settling| settling.quiet),
        disk_allocated_bytes: disk.allocated_bytes,
        disk_apparent_bytes: disk.apparent_bytes,
        resident_bytes: resident_bytes(Some(server.pid)),
        peak_resident_bytes: peak_resident_bytes(Some(server.pid)),
        searches,
    })
}

/// Waits until the server goes quiet after the tasks that ended at `indexed_at`.
fn settle(server: &ServerProcess, indexed_at: Instant) -> Result<Settling, String> {
    let name = server.spec.kind.name();
    let pid =
        i32::try_from(server.pid).map_err(|_| format!("process id {} out of range", server.pid))?;
    eprintln!("[{name}] waiting for the server to go quiet");
    let settling = wait_until_quiet(pid, indexed_at)?;
    eprintln!(
        "[{name}] {} after {:.1} s",
        if settling.quiet {
            "quiet"
        } else {
            "still busy"
        },
        settling.elapsed.as_secs_f64()
    );
    Ok(settling)
}
