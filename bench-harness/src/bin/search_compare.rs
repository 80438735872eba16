//! `search_compare`: coresearch and Meilisearch side by side on the same machine, in one run.
//!
//! Starts each given server binary in turn with a fresh data directory, creates index `pypi`
//! (`name` and `summary` searchable, `year` and `rank` filterable and sortable), ingests the
//! dataset as NDJSON payloads, asks every query of a deterministic mix drawn from the
//! dataset's vocabulary once for its top 10 hits, then loads the server at fixed concurrency
//! and at a fixed arrival rate, measures the data directory at rest, and last compacts the
//! index (`POST /indexes/pypi/compact`) and measures it again. Prints one markdown table (coresearch, Meilisearch, ratio)
//! with the top-10 agreement per query kind, writes it to `--output`, and writes disagreeing
//! examples to `--disagreements`. The harness builds nothing itself. `--skip-load` compares
//! answers only (no load runs, no compaction); `--reuse-meilisearch-data` and
//! `--reuse-coresearch-data` start a side on the data directory an earlier run kept (with
//! `--keep-data` or a reuse flag) when its index holds every document, instead of indexing
//! again.
//!
//! Exit status: 0 after a complete comparison, 1 when a side failed, 2 for unusable options.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use bench_harness::compare::agreement::{Agreement, EXAMPLES_PER_KIND_DEFAULT, agreement};
use bench_harness::compare::arguments::{MixArguments, ServerArguments};
use bench_harness::compare::command_line::command_line;
use bench_harness::compare::query_mix::{Query, generate, write_mix};
use bench_harness::compare::server::{ServerKind, absolute};
use bench_harness::compare::side::{SideOptions, SideOutcome, run_side};
use bench_harness::compare::table::{RunDescription, render};
use bench_harness::compare::vocabulary::{BANDS, DocumentText, Vocabulary};
use bench_harness::load::duration_arg::parse_duration;
use clap::Parser;

/// The exit status for unusable options.
const EXIT_USAGE: u8 = 2;
/// The exit status when a side could not be measured.
const EXIT_FAILURE: u8 = 1;

/// Side-by-side search benchmark of coresearch and Meilisearch.
#[derive(Debug, Parser)]
#[command(name = "search_compare", version)]
struct Arguments {
    #[command(flatten)]
    servers: ServerArguments,
    #[command(flatten)]
    mix: MixArguments,
    /// Documents per NDJSON payload
    #[arg(long, default_value_t = 10_000)]
    batch: usize,
    /// Where the servers' data directories, logs and detailed reports go (emptied per server)
    #[arg(long, default_value = "search-compare-work")]
    work_dir: PathBuf,
    /// Keep the servers' data directories after the run
    #[arg(long)]
    keep_data: bool,
    /// Keep-alive connections of the fixed-concurrency run
    #[arg(long, default_value_t = 8)]
    concurrency: usize,
    /// Requests per second of the fixed-rate (open-loop) run; 0 skips it
    #[arg(long, default_value_t = 100.0)]
    rate: f64,
    /// Connections available to the fixed-rate run (enough that the driver never queues)
    #[arg(long, default_value_t = 64)]
    rate_connections: usize,
    /// Measured time of each load run, e.g. 30s
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    duration: Duration,
    /// Unmeasured warm-up before each load run
    #[arg(long, value_parser = parse_duration, default_value = "2s")]
    warmup: Duration,
    /// Longest wait for a response during the load runs
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    timeout: Duration,
    /// Write the markdown table (with the command line) here too
    #[arg(long)]
    output: Option<PathBuf>,
    /// Where disagreeing top-10 examples go (default: WORK_DIR/disagreements.json)
    #[arg(long)]
    disagreements: Option<PathBuf>,
    /// Disagreeing examples kept per query kind
    #[arg(long, default_value_t = EXAMPLES_PER_KIND_DEFAULT)]
    examples_per_kind: usize,
    /// Compare answers only: no load runs and no compaction
    #[arg(long)]
    skip_load: bool,
    /// Start Meilisearch on the data directory a run kept, when its index is complete
    #[arg(long)]
    reuse_meilisearch_data: bool,
    /// Start coresearch on the data directory a run kept, when its index is complete
    #[arg(long)]
    reuse_coresearch_data: bool,
}

/// The dataset's lines, their searchable text, and the query mix.
fn prepare(arguments: &Arguments) -> Result<(Vec<String>, Vec<Query>), String> {
    let lines = arguments.mix.read_lines()?;
    let texts: Vec<DocumentText> = lines
        .iter()
        .filter_map(|line| DocumentText::parse(line))
        .collect();
    if texts.len() != lines.len() {
        eprintln!(
            "{} lines are not JSON objects (sent anyway)",
            lines.len() - texts.len()
        );
    }
    let vocabulary = Vocabulary::build(&texts);
    let band_sizes: Vec<usize> = BANDS
        .iter()
        .map(|band| vocabulary.band(*band).len())
        .collect();
    eprintln!(
        "{} documents, {} vocabulary words (bands {band_sizes:?})",
        lines.len(),
        vocabulary.words.len()
    );
    let queries = generate(
        &vocabulary,
        &texts,
        arguments.mix.queries,
        arguments.mix.seed,
    );
    if queries.is_empty() {
        return Err("the dataset has no searchable words: no query can be made".to_string());
    }
    write_mix(&arguments.work_dir.join("queries.ndjson"), &queries)?;
    Ok((lines, queries))
}

fn side_options(arguments: &Arguments, reuse_data: bool) -> SideOptions {
    SideOptions {
        index_uid: arguments.mix.data.index.clone(),
        batch: arguments.batch,
        concurrency: arguments.concurrency,
        rate: (arguments.rate > 0.0 && !arguments.skip_load).then_some(arguments.rate),
        rate_connections: arguments.rate_connections,
        duration: arguments.duration,
        warmup: arguments.warmup,
        load_timeout: arguments.timeout,
        seed: arguments.mix.seed,
        keep_data: arguments.keep_data,
        skip_load: arguments.skip_load,
        reuse_data,
    }
}

/// Writes the disagreeing examples as pretty JSON.
fn write_disagreements(arguments: &Arguments, agreement: &Agreement) -> Result<PathBuf, String> {
    let path = arguments
        .disagreements
        .clone()
        .unwrap_or_else(|| arguments.work_dir.join("disagreements.json"));
    let text = serde_json::to_string_pretty(&agreement.examples)
        .map_err(|error| format!("cannot encode the examples: {error}"))?;
    std::fs::write(&path, text + "\n")
        .map_err(|error| format!("cannot write {}: {error}", path.display()))?;
    Ok(path)
}

/// The arguments with every path the servers see made absolute.
fn with_absolute_paths(mut arguments: Arguments) -> Result<Arguments, String> {
    arguments.work_dir = absolute(&arguments.work_dir)?;
    arguments.servers.resolve()?;
    Ok(arguments)
}

fn run(arguments: &Arguments) -> Result<(), String> {
    std::fs::create_dir_all(&arguments.work_dir)
        .map_err(|error| format!("cannot create {}: {error}", arguments.work_dir.display()))?;
    let (lines, queries) = prepare(arguments)?;
    let side = |kind: ServerKind, reuse_data: bool| {
        let options = side_options(arguments, reuse_data);
        arguments
            .servers
            .spec(kind, &arguments.work_dir)
            .map(|spec| {
                run_side(&spec, &lines, &queries, &options)
                    .map_err(|error| format!("{}: {error}", kind.name()))
            })
            .transpose()
    };
    let ours: Option<SideOutcome> = side(ServerKind::Coresearch, arguments.reuse_coresearch_data)?;
    let theirs: Option<SideOutcome> =
        side(ServerKind::Meilisearch, arguments.reuse_meilisearch_data)?;
    let options = side_options(arguments, false);
    let agreement = match (&ours, &theirs) {
        (Some(ours), Some(theirs)) => Some(agreement(
            &queries,
            &ours.top_hits,
            &theirs.top_hits,
            arguments.examples_per_kind,
        )),
        _ => None,
    };
    let description = RunDescription {
        command_line: command_line(),
        dataset: arguments.mix.data.dataset.clone(),
        documents: lines.len(),
        batch: arguments.batch,
        queries: queries.len(),
        seed: arguments.mix.seed,
        concurrency: arguments.concurrency,
        rate: options.rate,
        duration_seconds: arguments.duration.as_secs_f64(),
        warmup_seconds: arguments.warmup.as_secs_f64(),
        cores: arguments.servers.cores,
        machine_cpus: std::thread::available_parallelism().map_or(0, usize::from),
    };
    let table = render(
        &description,
        ours.as_ref().map(|outcome| &outcome.results),
        theirs.as_ref().map(|outcome| &outcome.results),
        agreement.as_ref(),
    );
    print!("{table}");
    if let Some(path) = &arguments.output {
        std::fs::write(path, &table)
            .map_err(|error| format!("cannot write {}: {error}", path.display()))?;
    }
    if let Some(agreement) = &agreement {
        let path = write_disagreements(arguments, agreement)?;
        eprintln!(
            "{} disagreeing examples written to {}",
            agreement.examples.len(),
            path.display()
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    let arguments = Arguments::parse();
    let arguments = match with_absolute_paths(arguments) {
        Ok(arguments) => arguments,
        Err(error) => {
            eprintln!("search_compare: {error}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    match run(&arguments) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("search_compare: {error}");
            ExitCode::from(EXIT_FAILURE)
        }
    }
}
