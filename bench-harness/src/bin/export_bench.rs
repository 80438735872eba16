//! `export_bench`: export throughput, coresearch → coresearch beside Meilisearch →
//! Meilisearch, on the same machine in one run (issue 39 item 6).
//!
//! For each given server binary in turn (coresearch first, then Meilisearch): a source
//! instance with a fresh data directory, allowed to call loopback
//! (`--experimental-allowed-ip-networks 127.0.0.0/8`), gets index `pypi` as `search_compare`
//! creates it (`name` and `summary` searchable, `year` and `rank` filterable and sortable)
//! and the dataset in payloads of `--batch`, and goes quiet; an empty target instance of the
//! same server starts beside it (port + 100); then `POST /export` of every index to the
//! target (its URL, its key when `--master-key` is given, the default payload size) is timed
//! until the export task succeeded and until the target holds every document with its tasks
//! finished (Meilisearch 1.41's task does not wait for the target's indexing), with the CPU
//! time of both instances from `/proc`. The target's settings must then equal the source's.
//!
//! Prints the goal of issue 39 item 6 (at least 3× Meilisearch's documents per second) and
//! the tables (coresearch, Meilisearch, ratio) under the command line and every parameter,
//! and writes them to `--output`. The harness builds nothing itself.
//!
//! The measured run (on a quiet machine; see `tuning/results/export-bench-README.md`):
//!
//! ```sh
//! cargo build --release -p coresearch --bin coresearch
//! cargo build --release -p bench-harness --bin export_bench
//! target/release/export_bench \
//!     --coresearch-bin target/release/coresearch \
//!     --meilisearch-bin /work/meili/target/release/meilisearch \
//!     --dataset ../shared/datasets/pypi-packages.ndjson.zst \
//!     --output tuning/results/export-bench-DATE.md
//! ```
//!
//! Exit status: 0 after a complete run, 1 when a side failed (the report is still written,
//! naming the failure), 2 for unusable options.

use std::path::PathBuf;
use std::process::ExitCode;

use bench_harness::compare::arguments::{DatasetArguments, ServerArguments};
use bench_harness::compare::command_line::command_line;
use bench_harness::compare::server::{ServerKind, absolute};
use bench_harness::compare::table::{NOT_RUN, no_side_failed, publish_report};
use bench_harness::export::report::{ExportDescription, render};
use bench_harness::export::side::{ExportOptions, PairSpecs, run_side};
use clap::Parser;

/// The exit status for unusable options.
const EXIT_USAGE: u8 = 2;
/// The exit status when a side could not be measured.
const EXIT_FAILURE: u8 = 1;
/// The target of a pair listens this far above its source's port.
const TARGET_PORT_OFFSET: u16 = 100;

/// Export throughput, coresearch and Meilisearch side by side.
#[derive(Debug, Parser)]
#[command(name = "export_bench", version)]
struct Arguments {
    #[command(flatten)]
    servers: ServerArguments,
    #[command(flatten)]
    data: DatasetArguments,
    /// Documents per NDJSON payload of the source's ingestion
    #[arg(long, default_value_t = 10_000)]
    batch: usize,
    /// Where the instances' directories and logs go (`source/<server>` and `target/<server>`,
    /// emptied per server)
    #[arg(long, default_value = "export-bench-work")]
    work_dir: PathBuf,
    /// Keep the data directories after the run
    #[arg(long)]
    keep_data: bool,
    /// Write the markdown report (with the command line) here too
    #[arg(long)]
    output: Option<PathBuf>,
}

impl Arguments {
    fn options(&self) -> ExportOptions {
        ExportOptions {
            index_uid: self.data.index.clone(),
            batch: self.batch,
            keep_data: self.keep_data,
        }
    }

    /// Where server `kind`'s source and target work; none when its binary was not given.
    fn specs(&self, kind: ServerKind) -> Result<Option<PairSpecs>, String> {
        let Some(source) = self.servers.spec(kind, &self.work_dir.join("source")) else {
            return Ok(None);
        };
        let mut target = self
            .servers
            .spec(kind, &self.work_dir.join("target"))
            .ok_or("a source without a target")?;
        target.port = source
            .port
            .checked_add(TARGET_PORT_OFFSET)
            .ok_or_else(|| format!("{}'s target port runs past 65535", kind.name()))?;
        Ok(Some(PairSpecs { source, target }))
    }
}

/// The arguments with every path the servers see made absolute.
fn with_absolute_paths(mut arguments: Arguments) -> Result<Arguments, String> {
    if arguments.batch == 0 {
        return Err("--batch must be at least 1".to_string());
    }
    arguments.work_dir = absolute(&arguments.work_dir)?;
    arguments.servers.resolve()?;
    for kind in [ServerKind::Coresearch, ServerKind::Meilisearch] {
        arguments.specs(kind)?;
    }
    Ok(arguments)
}

/// Runs both sides and writes the report; answers whether both sides that ran succeeded.
fn run(arguments: &Arguments) -> Result<bool, String> {
    std::fs::create_dir_all(&arguments.work_dir)
        .map_err(|error| format!("cannot create {}: {error}", arguments.work_dir.display()))?;
    let lines = arguments.data.read_lines()?;
    eprintln!("{} documents", lines.len());
    let options = arguments.options();
    let side = |kind: ServerKind| match arguments.specs(kind) {
        Ok(Some(specs)) => run_side(&specs, &lines, &options).inspect_err(|error| {
            eprintln!("[{}] failed: {error}", kind.name());
        }),
        Ok(None) => Err(NOT_RUN.to_string()),
        Err(error) => Err(error),
    };
    let ours = side(ServerKind::Coresearch);
    let theirs = side(ServerKind::Meilisearch);
    let description = ExportDescription {
        command_line: command_line(),
        dataset: arguments.data.dataset.clone(),
        documents: lines.len(),
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
    eprintln!("export_bench: {error}");
    ExitCode::from(status)
}

fn main() -> ExitCode {
    let arguments = match with_absolute_paths(Arguments::parse()) {
        Ok(arguments) => arguments,
        Err(error) => return fail(EXIT_USAGE, &error),
    };
    match run(&arguments) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(EXIT_FAILURE),
        Err(error) => fail(EXIT_FAILURE, &error),
    }
}
