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

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use bench_harness::compare::agreement::{Agreement, EXAMPLES_PER_KIND_DEFAULT, agreement};
use bench_harness::compare::command_line::command_line;
use bench_harness::compare::query_mix::{Query, generate};
use bench_harness::compare::server::{ServerKind, ServerSpec};
use bench_harness::compare::side::{SideOptions, SideOutcome, run_side};
use bench_harness::compare::table::{RunDescription, render};
use bench_harness::compare::vocabulary::{BANDS, DocumentText, Vocabulary};
use bench_harness::load::duration_arg::parse_duration;
use bench_harness::measure::read_lines;
use clap::Parser;

/// The exit status for unusable options.
const EXIT_USAGE: u8 = 2;
/// The exit status when a side could not be measured.
const EXIT_FAILURE: u8 = 1;

/// Side-by-side search benchmark of coresearch and Meilisearch.
#[derive(Debug, Parser)]
#[command(name = "search_compare", version)]
struct Arguments {
    /// The coresearch binary (omit to run Meilisearch alone)
    #[arg(long)]
    coresearch_bin: Option<PathBuf>,
    /// The Meilisearch binary (omit to run coresearch alone)
    #[arg(long)]
    meilisearch_bin: Option<PathBuf>,
    /// The zstd-compressed NDJSON dataset
    #[arg(long, default_value = "../shared/datasets/pypi-packages.ndjson.zst")]
    dataset: String,
    /// Use only the first N documents (0: all)
    #[arg(long, default_value_t = 0)]
    documents: usize,
    /// Documents per NDJSON payload
    #[arg(long, default_value_t = 10_000)]
    batch: usize,
    /// Cores for the servers: coresearch `--cores`, Meilisearch `--max-indexing-threads`
    #[arg(long)]
    cores: Option<usize>,
    /// The port coresearch listens on (loopback)
    #[arg(long, default_value_t = 7711)]
    coresearch_port: u16,
    /// The port Meilisearch listens on (loopback)
    #[arg(long, default_value_t = 7712)]
    meilisearch_port: u16,
    /// Master key given to both servers and used for every request
    #[arg(long)]
    master_key: Option<String>,
    /// Where the servers' data directories, logs and detailed reports go (emptied per server)
    #[arg(long, default_value = "search-compare-work")]
    work_dir: PathBuf,
    /// Keep the servers' data directories after the run
    #[arg(long)]
    keep_data: bool,
    /// The index created on both servers
    #[arg(long, default_value = "pypi")]
    index: String,
    /// Queries in the mix
    #[arg(long, default_value_t = 2000)]
    queries: usize,
    /// Seed of the query mix and of the query choice during the load runs
    #[arg(long, default_value_t = 42)]
    seed: u64,
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
    let limit = if arguments.documents == 0 {
        usize::MAX
    } else {
        arguments.documents
    };
    eprintln!("reading {}", arguments.dataset);
    let lines = read_lines(&arguments.dataset, limit)?;
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
    let queries = generate(&vocabulary, &texts, arguments.queries, arguments.seed);
    if queries.is_empty() {
        return Err("the dataset has no searchable words: no query can be made".to_string());
    }
    let mix_path = arguments.work_dir.join("queries.ndjson");
    let mix_text: String = queries
        .iter()
        .map(|query| {
            format!(
                "{}\n",
                serde_json::json!({"kind": query.kind.label(), "body": query.body})
            )
        })
        .collect();
    std::fs::write(&mix_path, mix_text)
        .map_err(|error| format!("cannot write {}: {error}", mix_path.display()))?;
    Ok((lines, queries))
}

fn spec(arguments: &Arguments, kind: ServerKind, binary: &Path, port: u16) -> ServerSpec {
    ServerSpec {
        kind,
        binary: binary.to_path_buf(),
        work_dir: arguments.work_dir.join(kind.name()),
        port,
        cores: arguments.cores,
        master_key: arguments.master_key.clone(),
        extra_arguments: Vec::new(),
        cpu_list: None,
    }
}

fn side_options(arguments: &Arguments, reuse_data: bool) -> SideOptions {
    SideOptions {
        index_uid: arguments.index.clone(),
        batch: arguments.batch,
        concurrency: arguments.concurrency,
        rate: (arguments.rate > 0.0 && !arguments.skip_load).then_some(arguments.rate),
        rate_connections: arguments.rate_connections,
        duration: arguments.duration,
        warmup: arguments.warmup,
        load_timeout: arguments.timeout,
        seed: arguments.seed,
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

/// `path` made absolute against the current directory (the servers run in their own
/// directories, where a relative path would point elsewhere).
fn absolute(path: &Path) -> Result<PathBuf, String> {
    std::path::absolute(path).map_err(|error| format!("{}: {error}", path.display()))
}

/// The arguments with every path the servers see made absolute.
fn with_absolute_paths(mut arguments: Arguments) -> Result<Arguments, String> {
    arguments.work_dir = absolute(&arguments.work_dir)?;
    for binary in [
        &mut arguments.coresearch_bin,
        &mut arguments.meilisearch_bin,
    ]
    .into_iter()
    .flatten()
    {
        if !binary.is_file() {
            return Err(format!("{} is not a file", binary.display()));
        }
        *binary = absolute(binary)?;
    }
    Ok(arguments)
}

fn run(arguments: &Arguments) -> Result<(), String> {
    std::fs::create_dir_all(&arguments.work_dir)
        .map_err(|error| format!("cannot create {}: {error}", arguments.work_dir.display()))?;
    let (lines, queries) = prepare(arguments)?;
    let options = side_options(arguments, false);
    let mut ours: Option<SideOutcome> = None;
    let mut theirs: Option<SideOutcome> = None;
    if let Some(binary) = &arguments.coresearch_bin {
        let spec = spec(
            arguments,
            ServerKind::Coresearch,
            binary,
            arguments.coresearch_port,
        );
        let options = side_options(arguments, arguments.reuse_coresearch_data);
        ours = Some(
            run_side(&spec, &lines, &queries, &options)
                .map_err(|error| format!("coresearch: {error}"))?,
        );
    }
    if let Some(binary) = &arguments.meilisearch_bin {
        let spec = spec(
            arguments,
            ServerKind::Meilisearch,
            binary,
            arguments.meilisearch_port,
        );
        let options = side_options(arguments, arguments.reuse_meilisearch_data);
        theirs = Some(
            run_side(&spec, &lines, &queries, &options)
                .map_err(|error| format!("meilisearch: {error}"))?,
        );
    }
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
        dataset: arguments.dataset.clone(),
        documents: lines.len(),
        batch: arguments.batch,
        queries: queries.len(),
        seed: arguments.seed,
        concurrency: arguments.concurrency,
        rate: options.rate,
        duration_seconds: arguments.duration.as_secs_f64(),
        warmup_seconds: arguments.warmup.as_secs_f64(),
        cores: arguments.cores,
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
    if arguments.coresearch_bin.is_none() && arguments.meilisearch_bin.is_none() {
        eprintln!("search_compare: give --coresearch-bin, --meilisearch-bin, or both");
        return ExitCode::from(EXIT_USAGE);
    }
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
