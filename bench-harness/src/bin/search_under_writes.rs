//! `search_under_writes`: search latency while documents are being written, coresearch and
//! Meilisearch side by side on the same machine, in one run (issue #43 item 4).
//!
//! For each given server binary in turn (coresearch first, then Meilisearch), with a fresh
//! data directory: create index `pypi` as `search_compare` does (`name` and `summary`
//! searchable, `year` and `rank` filterable and sortable), ingest a base of
//! `--base-documents` documents and wait for the tasks and for the server to go quiet, then
//! measure a closed-loop search load on a query mix drawn from the base's vocabulary in eight
//! phases:
//!
//! 1. idle: `--connections` connections for `--duration` after `--warmup`;
//! 2. fixed write rate, replacing base documents: the same load while a writer sends the next
//!    `--write-documents` documents, each under the id of a base document, over
//!    `--write-duration` in payloads of `--write-batch` on a steady clock (the load is
//!    measured for the write duration less the warm-up); the index keeps its size, so phase 1
//!    is the yardstick at the same documents; the writer's tasks are then waited for, and
//!    their records give the rate actually indexed and the backlog;
//! 3. unbounded writes, replacing base documents: the load of phase 1 while a writer sends
//!    the documents after the fixed-rate writer's, each under the id of a base document, in
//!    payloads of `--unbounded-batch`, keeping `--unbounded-pending-tasks` of its tasks
//!    enqueued or processing, until the load ends: writes as fast as the server takes them,
//!    on the index of phase 1;
//! 4. fixed write rate, adding documents: as 2, with the documents under their own ids;
//! 5. unbounded writes: as 3, adding the documents under their own ids; when the dataset's
//!    documents are spent it goes on with `--unbounded-copies` copies of the dataset under
//!    new ids (made before any server starts), so that a fast server writes through the
//!    whole phase;
//! 6. right after indexing: once the last task finished, at once, `--after-indexing-duration`
//!    without warm-up;
//! 7. warm: after the server went quiet again, as in 1 on every document — the yardstick at
//!    the same size for phases 5 and 6, which search more documents than phase 1; phase 4
//!    grows the index from phase 1's size to nearly this one while it is measured, so its
//!    same-size yardstick lies between phases 1 and 7, and it is given both;
//! 8. warm with one connection.
//!
//! The server goes quiet before phases 1, 3, 4 and 7.
//!
//! Prints one markdown table per phase (coresearch, Meilisearch, ratio) under the command
//! line and every parameter, writes it to `--output`, and keeps each load's detailed report
//! as JSON in the server's work directory. The harness builds nothing itself.
//!
//! The measured run (on a quiet machine; see `tuning/results/search-under-writes-README.md`):
//!
//! ```sh
//! cargo build --release -p coresearch --bin coresearch
//! cargo build --release -p bench-harness --bin search_under_writes
//! target/release/search_under_writes \
//!     --coresearch-bin target/release/coresearch \
//!     --meilisearch-bin /work/meili/target/release/meilisearch \
//!     --dataset ../shared/datasets/pypi-packages.ndjson.zst \
//!     --output tuning/results/search-under-writes-DATE.md
//! ```
//!
//! Exit status: 0 after a complete run, 1 when a side failed, 2 for unusable options
//! (including a dataset too small for the base and the fixed-rate writes).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use bench_harness::compare::arguments::{MixArguments, ServerArguments};
use bench_harness::compare::command_line::command_line;
use bench_harness::compare::query_mix::{Query, generate, write_mix};
use bench_harness::compare::server::{ServerKind, absolute};
use bench_harness::compare::side::search_workload;
use bench_harness::compare::table::publish_report;
use bench_harness::compare::vocabulary::{DocumentText, Vocabulary};
use bench_harness::load::duration_arg::parse_duration;
use bench_harness::writes::copies::copies_with_new_ids;
use bench_harness::writes::report::{WritesDescription, render};
use bench_harness::writes::side::{WritesOptions, run_side};
use clap::Parser;

/// The exit status for unusable options.
const EXIT_USAGE: u8 = 2;
/// The exit status when a side could not be measured.
const EXIT_FAILURE: u8 = 1;

/// Search latency under writes, coresearch and Meilisearch side by side.
#[derive(Debug, Parser)]
#[command(name = "search_under_writes", version)]
struct Arguments {
    #[command(flatten)]
    servers: ServerArguments,
    #[command(flatten)]
    mix: MixArguments,
    /// Documents ingested before the first phase
    #[arg(long, default_value_t = 200_000)]
    base_documents: usize,
    /// Documents per NDJSON payload of the base ingestion
    #[arg(long, default_value_t = 10_000)]
    base_batch: usize,
    /// Where the servers' data directories, logs and detailed reports go (emptied per server)
    #[arg(long, default_value = "search-under-writes-work")]
    work_dir: PathBuf,
    /// Keep the servers' data directories after the run
    #[arg(long)]
    keep_data: bool,
    /// Keep-alive search connections (all phases but the one-connection phase)
    #[arg(long, default_value_t = 16)]
    connections: usize,
    /// Measured time of the idle, both unbounded-writes and the warm phases, e.g. 20s
    #[arg(long, value_parser = parse_duration, default_value = "20s")]
    duration: Duration,
    /// Unmeasured warm-up of each phase but the one right after indexing
    #[arg(long, value_parser = parse_duration, default_value = "2s")]
    warmup: Duration,
    /// Longest wait for a search response
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    timeout: Duration,
    /// Documents the fixed-rate writer adds (the ones right after the base)
    #[arg(long, default_value_t = 300_000)]
    write_documents: usize,
    /// Over how long the fixed-rate writer adds them (the search load runs as long)
    #[arg(long, value_parser = parse_duration, default_value = "40s")]
    write_duration: Duration,
    /// Documents per NDJSON payload of the fixed-rate writer
    #[arg(long, default_value_t = 2_500)]
    write_batch: usize,
    /// Documents per NDJSON payload of the unbounded writer
    #[arg(long, default_value_t = 2_500)]
    unbounded_batch: usize,
    /// Tasks the unbounded writer keeps enqueued or processing (1: the next payload when the
    /// previous task finished)
    #[arg(long, default_value_t = 2)]
    unbounded_pending_tasks: usize,
    /// Copies of the whole dataset, under new ids, the unbounded writer may send once the
    /// dataset's own documents are spent (so that a fast server writes through the phase)
    #[arg(long, default_value_t = 1)]
    unbounded_copies: u64,
    /// Measured time right after the last write task finished (no warm-up)
    #[arg(long, value_parser = parse_duration, default_value = "5s")]
    after_indexing_duration: Duration,
    /// Write the markdown report (with the command line) here too
    #[arg(long)]
    output: Option<PathBuf>,
}

impl Arguments {
    fn options(&self) -> WritesOptions {
        WritesOptions {
            index_uid: self.mix.data.index.clone(),
            base_documents: self.base_documents,
            base_batch: self.base_batch,
            connections: self.connections,
            duration: self.duration,
            warmup: self.warmup,
            timeout: self.timeout,
            seed: self.mix.seed,
            write_documents: self.write_documents,
            write_duration: self.write_duration,
            write_batch: self.write_batch,
            unbounded_batch: self.unbounded_batch,
            unbounded_pending_tasks: self.unbounded_pending_tasks,
            after_indexing_duration: self.after_indexing_duration,
            keep_data: self.keep_data,
        }
    }
}

/// Why the options cannot be used, if they cannot.
fn check(arguments: &Arguments) -> Result<(), String> {
    let positive = [
        ("--base-documents", arguments.base_documents),
        ("--base-batch", arguments.base_batch),
        ("--queries", arguments.mix.queries),
        ("--connections", arguments.connections),
        ("--write-documents", arguments.write_documents),
        ("--write-batch", arguments.write_batch),
        ("--unbounded-batch", arguments.unbounded_batch),
        (
            "--unbounded-pending-tasks",
            arguments.unbounded_pending_tasks,
        ),
    ];
    if let Some((name, _)) = positive.iter().find(|(_, value)| *value == 0) {
        return Err(format!("{name} must be at least 1"));
    }
    let durations = [
        ("--duration", arguments.duration),
        ("--timeout", arguments.timeout),
        (
            "--after-indexing-duration",
            arguments.after_indexing_duration,
        ),
    ];
    if let Some((name, _)) = durations.iter().find(|(_, value)| value.is_zero()) {
        return Err(format!("{name} must be positive"));
    }
    if arguments.write_duration <= arguments.warmup {
        return Err(
            "--write-duration must be longer than --warmup (the load is measured for the rest)"
                .to_string(),
        );
    }
    Ok(())
}

/// The arguments with every path the servers see made absolute.
fn with_absolute_paths(mut arguments: Arguments) -> Result<Arguments, String> {
    arguments.work_dir = absolute(&arguments.work_dir)?;
    arguments.servers.resolve()?;
    Ok(arguments)
}

/// The dataset's lines (all, or the first `--documents`).
fn read_dataset(arguments: &Arguments) -> Result<Vec<String>, String> {
    std::fs::create_dir_all(&arguments.work_dir)
        .map_err(|error| format!("cannot create {}: {error}", arguments.work_dir.display()))?;
    arguments.mix.read_lines()
}

/// Fails unless `read` documents cover the base, the fixed-rate writes and at least one
/// document for the unbounded writer.
fn check_dataset_size(arguments: &Arguments, read: usize) -> Result<(), String> {
    let needed = arguments.base_documents + arguments.write_documents + 1;
    if read < needed {
        return Err(format!(
            "{read} documents read, but the base and the fixed-rate writes take {} and the unbounded writer needs more: lower --base-documents or --write-documents, or raise --documents",
            needed - 1
        ));
    }
    Ok(())
}

/// The query mix, drawn from the base documents (which every phase holds), written to the
/// work directory as `queries.ndjson`.
fn query_mix(arguments: &Arguments, base: &[String]) -> Result<Vec<Query>, String> {
    let texts: Vec<DocumentText> = base
        .iter()
        .filter_map(|line| DocumentText::parse(line))
        .collect();
    let queries = generate(
        &Vocabulary::build(&texts),
        &texts,
        arguments.mix.queries,
        arguments.mix.seed,
    );
    if queries.is_empty() {
        return Err(
            "the base documents have no searchable words: no query can be made".to_string(),
        );
    }
    write_mix(&arguments.work_dir.join("queries.ndjson"), &queries)?;
    eprintln!(
        "{} queries from {} base documents",
        queries.len(),
        base.len()
    );
    Ok(queries)
}

fn run(arguments: &Arguments, mut lines: Vec<String>) -> Result<(), String> {
    let documents_read = lines.len();
    let queries = query_mix(arguments, &lines[..arguments.base_documents])?;
    eprintln!(
        "copying the dataset {} time(s) under new ids for the unbounded writer",
        arguments.unbounded_copies
    );
    let copies = copies_with_new_ids(&lines, arguments.unbounded_copies)?;
    let copy_count = copies.len();
    lines.extend(copies);
    let lines = lines.as_slice();
    let workload = search_workload(&arguments.mix.data.index, &queries)?;
    let side = |kind: ServerKind| {
        arguments
            .servers
            .spec(kind, &arguments.work_dir)
            .map(|spec| {
                run_side(&spec, lines, &workload, &arguments.options())
                    .map_err(|error| format!("{}: {error}", kind.name()))
            })
            .transpose()
    };
    let ours = side(ServerKind::Coresearch)?;
    let theirs = side(ServerKind::Meilisearch)?;
    let options = arguments.options();
    let description = WritesDescription {
        command_line: command_line(),
        dataset: arguments.mix.data.dataset.clone(),
        documents_read,
        queries: queries.len(),
        cores: arguments.servers.cores,
        machine_cpus: std::thread::available_parallelism().map_or(0, usize::from),
        options: &options,
        unbounded_fresh_documents: documents_read
            - arguments.base_documents
            - arguments.write_documents,
        copies: copy_count,
    };
    let report = render(&description, ours.as_ref(), theirs.as_ref());
    publish_report(&report, arguments.output.as_deref())
}

/// Reports `error` and answers exit status `status`.
fn fail(status: u8, error: &str) -> ExitCode {
    eprintln!("search_under_writes: {error}");
    ExitCode::from(status)
}

fn main() -> ExitCode {
    let arguments = Arguments::parse();
    let arguments = match check(&arguments).and_then(|()| with_absolute_paths(arguments)) {
        Ok(arguments) => arguments,
        Err(error) => return fail(EXIT_USAGE, &error),
    };
    let lines = match read_dataset(&arguments) {
        Ok(lines) => lines,
        Err(error) => return fail(EXIT_FAILURE, &error),
    };
    if let Err(error) = check_dataset_size(&arguments, lines.len()) {
        return fail(EXIT_USAGE, &error);
    }
    match run(&arguments, lines) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => fail(EXIT_FAILURE, &error),
    }
}
