//! A whole run: read the dataset, check that the ladder fits in its copies, draw the query
//! mix, run each given server in turn (coresearch first), then publish the report and the raw
//! figures.
//!
//! Invariants: nothing is started before every option and the dataset passed their checks
//! (an unusable option or dataset is a `RunError::Usage`); the query mix is drawn from copy 0
//! only and written to `<work-dir>/queries.ndjson` before any server starts; the report and
//! `<work-dir>/results.json` are written even when a side failed, which the answer then says.

use std::ffi::OsString;
use std::fmt;

use super::arguments::Arguments;
use super::dataset::CopiedDataset;
use super::figures::{Results, SideFigures};
use super::ladder::{check_available, steps};
use super::report::render;
use super::side::{Ladder, SideOptions, run_side};
use crate::compare::command_line::command_line;
use crate::compare::query_mix::{generate_from_lines, write_mix};
use crate::compare::server::ServerKind;
use crate::compare::side::{LoadSettings, search_workload};
use crate::compare::table::publish_report;

/// The file of the query mix, in the work directory.
pub const QUERIES_FILE: &str = "queries.ndjson";
/// The file of the raw figures, in the work directory.
pub const RESULTS_FILE: &str = "results.json";

/// Why a run could not be made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunError {
    /// The options or the dataset cannot be used.
    Usage(String),
    /// Something failed on the way (reading, writing, the query mix).
    Failure(String),
}

impl fmt::Display for RunError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Usage(detail) | RunError::Failure(detail) => formatter.write_str(detail),
        }
    }
}

/// Runs the benchmark; answers whether every side that ran reached every size.
pub fn run(arguments: &Arguments) -> Result<bool, RunError> {
    std::fs::create_dir_all(&arguments.work_dir)
        .map_err(|error| RunError::Failure(format!("cannot create the work directory: {error}")))?;
    let lines = arguments.mix.read_lines().map_err(RunError::Failure)?;
    let dataset = CopiedDataset::new(&lines, arguments.copies);
    check_available(&arguments.sizes, dataset.len()).map_err(RunError::Usage)?;
    dataset.check_ids().map_err(RunError::Usage)?;
    eprintln!(
        "{} documents read; drawing {} queries",
        lines.len(),
        arguments.mix.queries
    );
    let queries = generate_from_lines(&lines, arguments.mix.queries, arguments.mix.seed)
        .map_err(RunError::Failure)?;
    write_mix(&arguments.work_dir.join(QUERIES_FILE), &queries).map_err(RunError::Failure)?;
    let workload =
        search_workload(&arguments.mix.data.index, &queries).map_err(RunError::Failure)?;
    let steps = steps(&arguments.sizes);
    let ladder = Ladder {
        dataset: &dataset,
        steps: &steps,
        workload: &workload,
    };
    let coresearch = run_kind(arguments, ServerKind::Coresearch, ladder);
    let meilisearch = run_kind(arguments, ServerKind::Meilisearch, ladder);
    let results = results(
        arguments,
        lines.len(),
        queries.len(),
        coresearch,
        meilisearch,
    );
    publish(arguments, &results)?;
    Ok(results.complete())
}

/// How each side is driven.
fn side_options(arguments: &Arguments) -> SideOptions {
    SideOptions {
        index_uid: arguments.mix.data.index.clone(),
        batch: arguments.batch,
        connections: arguments.connections.clone(),
        load: LoadSettings {
            duration: arguments.duration,
            warmup: arguments.warmup,
            timeout: arguments.timeout,
            seed: arguments.mix.seed,
        },
        settle: !arguments.no_settle,
        keep_data: arguments.keep_data,
    }
}

/// The side of `kind`, when its binary was given.
fn run_kind(arguments: &Arguments, kind: ServerKind, ladder: Ladder<'_>) -> Option<SideFigures> {
    let mut spec = arguments.servers.spec(kind, &arguments.work_dir)?;
    let extra = match kind {
        ServerKind::Coresearch => &arguments.coresearch_arguments,
        ServerKind::Meilisearch => &arguments.meilisearch_arguments,
    };
    spec.extra_arguments = extra.iter().map(OsString::from).collect();
    Some(run_side(&spec, ladder, &side_options(arguments)))
}

/// The run's parameters beside both sides' figures.
fn results(
    arguments: &Arguments,
    documents_read: usize,
    queries: usize,
    coresearch: Option<SideFigures>,
    meilisearch: Option<SideFigures>,
) -> Results {
    Results {
        command_line: command_line(),
        dataset: arguments.mix.data.dataset.clone(),
        documents_read: documents_read as u64,
        copies: arguments.copies,
        sizes: arguments.sizes.clone(),
        batch: arguments.batch,
        queries,
        seed: arguments.mix.seed,
        connections: arguments.connections.clone(),
        duration_seconds: arguments.duration.as_secs_f64(),
        warmup_seconds: arguments.warmup.as_secs_f64(),
        settle: !arguments.no_settle,
        cores: arguments.servers.cores,
        machine_cpus: std::thread::available_parallelism().map_or(0, usize::from),
        coresearch,
        meilisearch,
    }
}

/// Prints the report, writes it to `--output`, and writes the raw figures as JSON.
fn publish(arguments: &Arguments, results: &Results) -> Result<(), RunError> {
    let json = serde_json::to_string_pretty(results)
        .map_err(|error| RunError::Failure(format!("cannot encode the results: {error}")))?;
    let path = arguments.work_dir.join(RESULTS_FILE);
    std::fs::write(&path, json + "\n")
        .map_err(|error| RunError::Failure(format!("cannot write {}: {error}", path.display())))?;
    eprintln!("raw figures written to {}", path.display());
    publish_report(&render(results), arguments.output.as_deref()).map_err(RunError::Failure)
}
