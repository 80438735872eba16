//! `backup_bench`: dumps, dump imports and snapshots, coresearch and Meilisearch side by
//! side on the same machine, in one run (issue 41 item 6).
//!
//! For each given server binary in turn (coresearch first, then Meilisearch), with a fresh
//! data directory: create index `pypi` as `search_compare` does (`name` and `summary`
//! searchable, `year` and `rank` filterable and sortable), ingest the dataset in payloads of
//! `--batch` and wait for the tasks and for the server to go quiet; then
//!
//! 1. `POST /dumps`, timed to the task's end by the harness and by the task's timestamps,
//!    and the dump file's size;
//! 2. once quiet again, a closed-loop search load on the mix (`--connections`, `--duration`
//!    after `--warmup`): the idle latency;
//! 3. the same load while `POST /snapshots` runs back to back (the next snapshot always
//!    enqueued behind the running one): the latency under a snapshot beside the idle one, the
//!    snapshots that ran and their times, the share of the measured window they covered, and
//!    the snapshot's size;
//! 4. the server stopped, a fresh instance of it started with `--import-dump` on an empty
//!    data directory, timed until `/health` answers and until the index holds every document
//!    with nothing pending; its data directory's size.
//!
//! Prints the goals of issue 41 item 6 (import at least 3× faster than Meilisearch's;
//! search p99 during a snapshot at most 1.2× idle) and one markdown table per step
//! (coresearch, Meilisearch, ratio) under the command line and every parameter, writes it to
//! `--output`, and keeps each load's detailed report as JSON in the server's work directory.
//! The harness builds nothing itself.
//!
//! The measured run (on a quiet machine; see `tuning/results/backup-bench-README.md`):
//!
//! ```sh
//! cargo build --release -p coresearch --bin coresearch
//! cargo build --release -p bench-harness --bin backup_bench
//! target/release/backup_bench \
//!     --coresearch-bin target/release/coresearch \
//!     --meilisearch-bin /work/meili/target/release/meilisearch \
//!     --dataset ../shared/datasets/pypi-packages.ndjson.zst \
//!     --output tuning/results/backup-bench-DATE.md
//! ```
//!
//! Exit status: 0 after a complete run, 1 when a side failed (the report is still written,
//! naming the failure), 2 for unusable options.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use bench_harness::backups::report::{BackupDescription, render};
use bench_harness::backups::side::{BackupOptions, SideSpecs, run_side};
use bench_harness::compare::arguments::{MixArguments, ServerArguments};
use bench_harness::compare::command_line::command_line;
use bench_harness::compare::query_mix::{generate_from_lines, write_mix};
use bench_harness::compare::server::{ServerKind, absolute};
use bench_harness::compare::side::{LoadSettings, search_workload};
use bench_harness::compare::table::{NOT_RUN, no_side_failed, publish_report};
use bench_harness::load::duration_arg::parse_duration;
use clap::Parser;

/// The exit status for unusable options.
const EXIT_USAGE: u8 = 2;
/// The exit status when a side could not be measured.
const EXIT_FAILURE: u8 = 1;

/// Dumps, imports and snapshots, coresearch and Meilisearch side by side.
#[derive(Debug, Parser)]
#[command(name = "backup_bench", version)]
struct Arguments {
    #[command(flatten)]
    servers: ServerArguments,
    #[command(flatten)]
    mix: MixArguments,
    /// Documents per NDJSON payload of the ingestion
    #[arg(long, default_value_t = 10_000)]
    batch: usize,
    /// Where the servers' directories, logs, dumps, snapshots and detailed reports go
    /// (`source/<server>` and `imported/<server>`, emptied per server)
    #[arg(long, default_value = "backup-bench-work")]
    work_dir: PathBuf,
    /// Keep the data directories, the dumps and the snapshots after the run
    #[arg(long)]
    keep_data: bool,
    /// Keep-alive search connections of both search loads
    #[arg(long, default_value_t = 16)]
    connections: usize,
    /// Measured time of each search load, e.g. 20s
    #[arg(long, value_parser = parse_duration, default_value = "20s")]
    duration: Duration,
    /// Unmeasured warm-up of each search load
    #[arg(long, value_parser = parse_duration, default_value = "2s")]
    warmup: Duration,
    /// Idle and under-snapshot search loads alternate this many times (latencies pooled)
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Longest wait for a search response
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    timeout: Duration,
    /// Write the markdown report (with the command line) here too
    #[arg(long)]
    output: Option<PathBuf>,
}

impl Arguments {
    fn options(&self) -> BackupOptions {
        BackupOptions {
            index_uid: self.mix.data.index.clone(),
            batch: self.batch,
            connections: self.connections,
            load: LoadSettings {
                duration: self.duration,
                warmup: self.warmup,
                timeout: self.timeout,
                seed: self.mix.seed,
            },
            keep_data: self.keep_data,
            rounds: self.rounds,
        }
    }

    /// Where server `kind`'s two instances work; none when its binary was not given.
    fn specs(&self, kind: ServerKind) -> Option<SideSpecs> {
        Some(SideSpecs {
            source: self.servers.spec(kind, &self.work_dir.join("source"))?,
            imported: self.servers.spec(kind, &self.work_dir.join("imported"))?,
        })
    }
}

/// Why the options cannot be used, if they cannot.
fn check(arguments: &Arguments) -> Result<(), String> {
    let positive = [
        ("--batch", arguments.batch),
        ("--queries", arguments.mix.queries),
        ("--connections", arguments.connections),
    ];
    if let Some((name, _)) = positive.iter().find(|(_, value)| *value == 0) {
        return Err(format!("{name} must be at least 1"));
    }
    let durations = [
        ("--duration", arguments.duration),
        ("--timeout", arguments.timeout),
    ];
    if let Some((name, _)) = durations.iter().find(|(_, value)| value.is_zero()) {
        return Err(format!("{name} must be positive"));
    }
    Ok(())
}

/// The arguments with every path the servers see made absolute.
fn with_absolute_paths(mut arguments: Arguments) -> Result<Arguments, String> {
    arguments.work_dir = absolute(&arguments.work_dir)?;
    arguments.servers.resolve()?;
    Ok(arguments)
}

/// Runs both sides and writes the report; answers whether both sides that ran succeeded.
fn run(arguments: &Arguments) -> Result<bool, String> {
    std::fs::create_dir_all(&arguments.work_dir)
        .map_err(|error| format!("cannot create {}: {error}", arguments.work_dir.display()))?;
    let lines = arguments.mix.read_lines()?;
    let queries = generate_from_lines(&lines, arguments.mix.queries, arguments.mix.seed)?;
    write_mix(&arguments.work_dir.join("queries.ndjson"), &queries)?;
    eprintln!("{} documents, {} queries", lines.len(), queries.len());
    let workload = search_workload(&arguments.mix.data.index, &queries)?;
    let options = arguments.options();
    let side = |kind: ServerKind| match arguments.specs(kind) {
        Some(specs) => run_side(&specs, &lines, &workload, &options).inspect_err(|error| {
            eprintln!("[{}] failed: {error}", kind.name());
        }),
        None => Err(NOT_RUN.to_string()),
    };
    let ours = side(ServerKind::Coresearch);
    let theirs = side(ServerKind::Meilisearch);
    let description = BackupDescription {
        command_line: command_line(),
        dataset: arguments.mix.data.dataset.clone(),
        documents: lines.len(),
        queries: queries.len(),
        cores: arguments.servers.cores,
        machine_cpus: std::thread::available_parallelism().map_or(0, usize::from),
        options: &options,
    };
    let report = render(&description, &ours, &theirs);
    publish_report(&report, arguments.output.as_deref())?;
    Ok(no_side_failed(&ours, &theirs))
}

/// Reports `error` and answers exit status `status`.
fn fail(status: u8, error: &str) -> ExitCode {
    eprintln!("backup_bench: {error}");
    ExitCode::from(status)
}

fn main() -> ExitCode {
    let arguments = Arguments::parse();
    let arguments = match check(&arguments).and_then(|()| with_absolute_paths(arguments)) {
        Ok(arguments) => arguments,
        Err(error) => return fail(EXIT_USAGE, &error),
    };
    match run(&arguments) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(EXIT_FAILURE),
        Err(error) => fail(EXIT_FAILURE, &error),
    }
}
