//! `vector_compare`: vector search of coresearch and Meilisearch side by side, over the HTTP
//! API, on the same machine, in one run.
//!
//! Reads the first `--vectors` rows and `--queries` queries of an embedding data set written
//! by `scripts/minilm_embed.py` (`vectors.f32`, `queries.f32`, `texts.ndjson`), computes the
//! exact cosine top-10 of every query by brute force on every core (unfiltered, and
//! restricted to `bucket = 7` and to `bucket < 10`), then for each given server and for each
//! `binaryQuantized` configuration (false, true):
//!
//! 1. starts the server on a fresh data directory, creates index `--index` with a
//!    `userProvided` embedder `minilm`, `bucket` filterable and `name`, `summary`
//!    searchable, and ingests documents `{"id": row, "name", "summary", "bucket": row % 100,
//!    "_vectors": {"minilm": vector}}` as NDJSON payloads of `--batch` documents (all sent,
//!    then the last task awaited): indexing docs/s from the first payload to the last task
//!    finished, peak RSS (`VmHWM`) after indexing, data directory size; then waits until the
//!    server is quiet;
//! 2. asks every query once (`limit: 10`, `semanticRatio: 1`) and measures mean recall@10
//!    against the exact answers;
//! 3. loads semantic-only search at 1 and at `--connections` keep-alive connections (closed
//!    loop, `--warmup` then `--duration`, queries drawn uniformly with `--seed`): QPS, p50,
//!    p99, p99.9;
//! 4. loads hybrid search (`q` = the query's summary, `semanticRatio: 0.5`, the vector given)
//!    at `--connections`;
//! 5. measures filtered semantic search at 1 % (`bucket = 7`) and 10 % (`bucket < 10`):
//!    recall@10 against the exact answers restricted to the matching rows, and QPS/p99 at
//!    `--connections`.
//!
//! Prints one markdown table per configuration (metrics; coresearch, Meilisearch, ratio),
//! with the exact command line on top, and writes it to `--output` too.
//!
//! Invariants: the servers never run at the same time (one server, one configuration at a
//! time, each on a fresh data directory, stopped before the next starts); both servers get
//! the same documents, settings, query bodies and seeds; the exact answers are computed once,
//! before any server starts, so they load no server's measurement; the harness builds
//! nothing and only talks to the servers over HTTP (and reads `/proc` and the data
//! directories).
//!
//! Exit status: 0 after a complete comparison, 1 when a side failed (the table is still
//! printed, that side's column empty) or a request of a recall pass or load run did not
//! succeed (counted in the table), 2 for unusable options.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use bench_harness::compare::command_line::command_line;
use bench_harness::compare::server::{ServerKind, ServerSpec};
use bench_harness::compare::vectors::data::VectorData;
use bench_harness::compare::vectors::side::{VectorOptions, VectorResults, run_side};
use bench_harness::compare::vectors::table::{ConfigurationResults, VectorRunDescription, render};
use bench_harness::compare::vectors::truth::exact_answers;
use bench_harness::load::duration_arg::parse_duration;
use clap::Parser;

/// The exit status for unusable options.
const EXIT_USAGE: u8 = 2;
/// The exit status when a side could not be measured.
const EXIT_FAILURE: u8 = 1;

/// Side-by-side vector search benchmark of coresearch and Meilisearch.
#[derive(Debug, Parser)]
#[command(name = "vector_compare", version)]
struct Arguments {
    /// The coresearch binary (omit to run Meilisearch alone)
    #[arg(long)]
    coresearch_bin: Option<PathBuf>,
    /// The Meilisearch binary (omit to run coresearch alone)
    #[arg(long)]
    meilisearch_bin: Option<PathBuf>,
    /// The data set directory (vectors.f32, queries.f32, texts.ndjson)
    #[arg(long, default_value = "/work/bench/minilm-384")]
    dataset: PathBuf,
    /// Values per vector
    #[arg(long, default_value_t = 384)]
    dimensions: usize,
    /// Indexed documents: the first N rows of vectors.f32
    #[arg(long, default_value_t = 100_000)]
    vectors: usize,
    /// Queries: the first N rows of queries.f32
    #[arg(long, default_value_t = 1_000)]
    queries: usize,
    /// Documents per NDJSON payload
    #[arg(long, default_value_t = 5_000)]
    batch: usize,
    /// `binaryQuantized` configurations to run, in order
    #[arg(long, value_delimiter = ',', default_value = "false,true")]
    binary_quantized: Vec<bool>,
    /// Cores for the servers: coresearch `--cores`, Meilisearch `--max-indexing-threads`
    #[arg(long)]
    cores: Option<usize>,
    /// Threads of the brute-force exact answers (0: every core)
    #[arg(long, default_value_t = 0)]
    exact_threads: usize,
    /// The port coresearch listens on (loopback)
    #[arg(long, default_value_t = 7711)]
    coresearch_port: u16,
    /// The port Meilisearch listens on (loopback)
    #[arg(long, default_value_t = 7712)]
    meilisearch_port: u16,
    /// Master key given to both servers and used for every request
    #[arg(long)]
    master_key: Option<String>,
    /// Where the servers' data directories, logs and load reports go (emptied per side)
    #[arg(long, default_value = "vector-compare-work")]
    work_dir: PathBuf,
    /// Keep the servers' data directories after the run
    #[arg(long)]
    keep_data: bool,
    /// The index created on both servers
    #[arg(long, default_value = "vectors")]
    index: String,
    /// Seed of the query choice during the load runs
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Keep-alive connections of the concurrent load runs
    #[arg(long, default_value_t = 16)]
    connections: usize,
    /// Measured time of each load run, e.g. 20s
    #[arg(long, value_parser = parse_duration, default_value = "20s")]
    duration: Duration,
    /// Unmeasured warm-up before each load run
    #[arg(long, value_parser = parse_duration, default_value = "3s")]
    warmup: Duration,
    /// Longest wait for a response during the load runs
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    timeout: Duration,
    /// Write the markdown tables (with the command line) here too
    #[arg(long)]
    output: Option<PathBuf>,
}

/// `path` made absolute against the current directory (the servers run in their own
/// directories, where a relative path would point elsewhere).
fn absolute(path: &Path) -> Result<PathBuf, String> {
    std::path::absolute(path).map_err(|error| format!("{}: {error}", path.display()))
}

/// The arguments with every path the servers see made absolute, and checked.
fn checked(mut arguments: Arguments) -> Result<Arguments, String> {
    if arguments.coresearch_bin.is_none() && arguments.meilisearch_bin.is_none() {
        return Err("give --coresearch-bin, --meilisearch-bin, or both".into());
    }
    if arguments.vectors == 0 || arguments.queries == 0 || arguments.batch == 0 {
        return Err("--vectors, --queries and --batch must be positive".into());
    }
    if arguments.connections == 0 {
        return Err("--connections must be positive".into());
    }
    if arguments.binary_quantized.is_empty() {
        return Err("--binary-quantized needs at least one configuration".into());
    }
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

fn spec(
    arguments: &Arguments,
    kind: ServerKind,
    binary: &Path,
    port: u16,
    binary_quantized: bool,
) -> ServerSpec {
    ServerSpec {
        kind,
        binary: binary.to_path_buf(),
        work_dir: arguments
            .work_dir
            .join(format!("{}-bq-{binary_quantized}", kind.name())),
        port,
        cores: arguments.cores,
        master_key: arguments.master_key.clone(),
        extra_arguments: Vec::new(),
        cpu_list: None,
    }
}

fn run(arguments: &Arguments) -> Result<bool, String> {
    std::fs::create_dir_all(&arguments.work_dir)
        .map_err(|error| format!("cannot create {}: {error}", arguments.work_dir.display()))?;
    eprintln!(
        "reading {} ({} vectors, {} queries)",
        arguments.dataset.display(),
        arguments.vectors,
        arguments.queries
    );
    let data = VectorData::load(
        &arguments.dataset,
        arguments.dimensions,
        arguments.vectors,
        arguments.queries,
    )?;
    let machine_cpus = std::thread::available_parallelism().map_or(1, usize::from);
    let threads = if arguments.exact_threads == 0 {
        machine_cpus
    } else {
        arguments.exact_threads
    };
    eprintln!("exact answers by brute force on {threads} threads");
    let started = Instant::now();
    let exact = exact_answers(&data, threads);
    let exact_seconds = started.elapsed().as_secs_f64();
    eprintln!("exact answers in {exact_seconds:.1} s");
    let lines = data.document_lines();
    let options = VectorOptions {
        index_uid: arguments.index.clone(),
        batch: arguments.batch,
        connections: arguments.connections,
        duration: arguments.duration,
        warmup: arguments.warmup,
        load_timeout: arguments.timeout,
        seed: arguments.seed,
        keep_data: arguments.keep_data,
    };
    let mut complete = true;
    let mut side = |kind: ServerKind,
                    binary: &Option<PathBuf>,
                    port: u16,
                    binary_quantized: bool|
     -> Option<VectorResults> {
        let binary = binary.as_ref()?;
        let spec = spec(arguments, kind, binary, port, binary_quantized);
        match run_side(&spec, binary_quantized, &data, &lines, &exact, &options) {
            Ok(results) => {
                let problems = results.problems();
                for problem in &problems {
                    eprintln!(
                        "vector_compare: {} (binaryQuantized {binary_quantized}): {problem}",
                        kind.name()
                    );
                }
                complete &= problems.is_empty();
                Some(results)
            }
            Err(error) => {
                eprintln!(
                    "vector_compare: {} (binaryQuantized {binary_quantized}): {error}",
                    kind.name()
                );
                complete = false;
                None
            }
        }
    };
    // Every configuration of one server, then every configuration of the other.
    let ours: Vec<Option<VectorResults>> = arguments
        .binary_quantized
        .iter()
        .map(|&quantized| {
            side(
                ServerKind::Coresearch,
                &arguments.coresearch_bin,
                arguments.coresearch_port,
                quantized,
            )
        })
        .collect();
    let theirs: Vec<Option<VectorResults>> = arguments
        .binary_quantized
        .iter()
        .map(|&quantized| {
            side(
                ServerKind::Meilisearch,
                &arguments.meilisearch_bin,
                arguments.meilisearch_port,
                quantized,
            )
        })
        .collect();
    let configurations: Vec<ConfigurationResults> = arguments
        .binary_quantized
        .iter()
        .zip(ours.into_iter().zip(theirs))
        .map(|(&binary_quantized, (ours, theirs))| ConfigurationResults {
            binary_quantized,
            ours,
            theirs,
        })
        .collect();
    let description = VectorRunDescription {
        command_line: command_line(),
        dataset: arguments.dataset.display().to_string(),
        dimensions: data.dimensions,
        documents: data.count(),
        queries: data.query_count(),
        batch: arguments.batch,
        connections: arguments.connections,
        duration_seconds: arguments.duration.as_secs_f64(),
        warmup_seconds: arguments.warmup.as_secs_f64(),
        seed: arguments.seed,
        cores: arguments.cores,
        machine_cpus,
        exact_seconds,
    };
    let table = render(&description, &configurations);
    print!("{table}");
    if let Some(path) = &arguments.output {
        std::fs::write(path, &table)
            .map_err(|error| format!("cannot write {}: {error}", path.display()))?;
    }
    Ok(complete)
}

fn main() -> ExitCode {
    let arguments = match checked(Arguments::parse()) {
        Ok(arguments) => arguments,
        Err(error) => {
            eprintln!("vector_compare: {error}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    match run(&arguments) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(EXIT_FAILURE),
        Err(error) => {
            eprintln!("vector_compare: {error}");
            ExitCode::from(EXIT_FAILURE)
        }
    }
}
