//! `search_cpu`: the server CPU each query of a search mix costs, on an already indexed data
//! directory, for one coresearch build or for two builds side by side (A/B).
//!
//! Copies `--data-dir` once per build into the work directory, starts each build on its copy
//! (both at once for A/B, on different ports), waits until each is healthy and holds the
//! index, measures each one's idle CPU, then sends every query of `--queries` (the
//! `queries.ndjson` that `search_compare` writes) one at a time: `--warmup-passes` unmeasured
//! passes, then `--passes` measured ones. Prints a markdown report (per query kind, the
//! costliest queries, the failures and, for A/B, the queries whose top hits differ) and
//! writes it to `--output`. The copies are deleted at the end; the server logs stay in the
//! work directory.
//!
//! Exit status: 0 after a complete run, 1 when the run failed, 2 for unusable options.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use bench_harness::compare::client::Client;
use bench_harness::compare::command_line::command_line;
use bench_harness::compare::cpu_cost::Build;
use bench_harness::compare::cpu_cost::data_copy::{
    copy_directory, ensure_disjoint, ensure_not_in_use,
};
use bench_harness::compare::cpu_cost::passes::{PassCounts, Servers, run_passes};
use bench_harness::compare::cpu_cost::probe::{MeasuredServer, REQUEST_TIMEOUT};
use bench_harness::compare::cpu_cost::query_file::{MixQuery, read_queries};
use bench_harness::compare::cpu_cost::report::{RunDescription, render};
use bench_harness::compare::cpu_cost::tally::QueryCosts;
use bench_harness::compare::server::{ServerKind, ServerProcess, ServerSpec};
use bench_harness::compare::setup::get_json;
use clap::Parser;

/// The exit status for unusable options.
const EXIT_USAGE: u8 = 2;
/// The exit status when the run failed.
const EXIT_FAILURE: u8 = 1;
/// How long each server's idle CPU is measured before the first pass.
const IDLE_MEASUREMENT: Duration = Duration::from_secs(1);

/// Server CPU per search query, for one coresearch build or two (A/B).
#[derive(Debug, Parser)]
#[command(name = "search_cpu", version)]
struct Arguments {
    /// The coresearch binary measured (the candidate)
    #[arg(long)]
    binary: PathBuf,
    /// A second coresearch binary to compare with (the baseline), run at the same time
    #[arg(long)]
    baseline_binary: Option<PathBuf>,
    /// An indexed coresearch data directory; only read (each server gets a copy)
    #[arg(long)]
    data_dir: PathBuf,
    /// The query mix: NDJSON lines of {"kind": ..., "body": {...}}
    #[arg(long)]
    queries: PathBuf,
    /// The index searched
    #[arg(long, default_value = "pypi")]
    index: String,
    /// Cores given to each server (`--cores`)
    #[arg(long, default_value_t = 2)]
    cores: usize,
    /// Master key given to the servers and used for every request
    #[arg(long)]
    master_key: Option<String>,
    /// Unmeasured passes over the mix before the measured ones
    #[arg(long, default_value_t = 1)]
    warmup_passes: usize,
    /// Measured passes over the mix (at least 1); the report shows their mean
    #[arg(long, default_value_t = 2)]
    passes: usize,
    /// How many of the costliest queries to list
    #[arg(long, default_value_t = 25)]
    top: usize,
    /// Write the markdown report here too
    #[arg(long)]
    output: Option<PathBuf>,
    /// Where the data copies and server logs go (one directory per build, emptied first)
    #[arg(long, default_value = "search-cpu-work")]
    work_dir: PathBuf,
    /// The port the candidate listens on (loopback)
    #[arg(long, default_value_t = 7731)]
    port: u16,
    /// The port the baseline listens on (loopback)
    #[arg(long, default_value_t = 7732)]
    baseline_port: u16,
}

impl Arguments {
    /// How to start each build, the candidate first.
    fn specs(&self) -> Vec<(Build, ServerSpec)> {
        let candidate = (Build::Candidate, &self.binary, self.port);
        let baseline = self
            .baseline_binary
            .as_ref()
            .map(|binary| (Build::Baseline, binary, self.baseline_port));
        std::iter::once(candidate)
            .chain(baseline)
            .map(|(build, binary, port)| {
                let spec = ServerSpec {
                    kind: ServerKind::Coresearch,
                    binary: binary.clone(),
                    work_dir: self.work_dir.join(build.name()),
                    port,
                    cores: Some(self.cores),
                    master_key: self.master_key.clone(),
                    extra_arguments: Vec::new(),
                    cpu_list: None,
                };
                (build, spec)
            })
            .collect()
    }
}

/// `path` made absolute against the current directory (the servers run in their own
/// directories, where a relative path would point elsewhere).
fn absolute(path: &Path) -> Result<PathBuf, String> {
    std::path::absolute(path).map_err(|error| format!("{}: {error}", path.display()))
}

/// The arguments checked, with every path made absolute.
fn checked(mut arguments: Arguments) -> Result<Arguments, String> {
    if arguments.passes == 0 {
        return Err("--passes must be at least 1".to_string());
    }
    if arguments.baseline_binary.is_some() && arguments.port == arguments.baseline_port {
        return Err("--port and --baseline-port must differ".to_string());
    }
    for binary in std::iter::once(&mut arguments.binary).chain(&mut arguments.baseline_binary) {
        if !binary.is_file() {
            return Err(format!("{} is not a file", binary.display()));
        }
        *binary = absolute(binary)?;
    }
    if !arguments.data_dir.is_dir() {
        return Err(format!(
            "{} is not a directory",
            arguments.data_dir.display()
        ));
    }
    arguments.data_dir = absolute(&arguments.data_dir)?;
    arguments.queries = absolute(&arguments.queries)?;
    arguments.work_dir = absolute(&arguments.work_dir)?;
    ensure_disjoint(&arguments.data_dir, &arguments.work_dir)?;
    Ok(arguments)
}

/// Empties the work directory of `spec` and copies the data directory into it.
fn prepare_copy(spec: &ServerSpec, source: &Path) -> Result<(), String> {
    if spec.work_dir.exists() {
        std::fs::remove_dir_all(&spec.work_dir)
            .map_err(|error| format!("cannot empty {}: {error}", spec.work_dir.display()))?;
    }
    std::fs::create_dir_all(&spec.work_dir)
        .map_err(|error| format!("cannot create {}: {error}", spec.work_dir.display()))?;
    let started = Instant::now();
    copy_directory(source, &spec.data_dir())?;
    eprintln!(
        "copied {} to {} in {:.1} s",
        source.display(),
        spec.data_dir().display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Fails unless the server answers the stats of index `index_uid`.
fn check_index(spec: &ServerSpec, index_uid: &str) -> Result<(), String> {
    let mut client = Client::new(spec.address(), spec.master_key.clone(), REQUEST_TIMEOUT);
    let stats = get_json(&mut client, &format!("/indexes/{index_uid}/stats"))?;
    eprintln!(
        "index `{index_uid}` holds {} documents",
        stats["numberOfDocuments"]
    );
    Ok(())
}

/// A build running on its copy.
struct RunningBuild {
    /// Stops the server when dropped.
    _process: ServerProcess,
    server: MeasuredServer,
}

/// Copies the data for `build`, starts it and checks that it holds the index.
fn start_build(
    arguments: &Arguments,
    build: Build,
    spec: &ServerSpec,
) -> Result<RunningBuild, String> {
    prepare_copy(spec, &arguments.data_dir)?;
    eprintln!("[{}] starting {}", build.name(), spec.binary.display());
    let process = ServerProcess::start_in_place(spec)?;
    check_index(spec, &arguments.index)?;
    let server = MeasuredServer::new(
        process.pid,
        spec.address(),
        spec.master_key.clone(),
        &arguments.index,
    );
    Ok(RunningBuild {
        _process: process,
        server,
    })
}

/// What the servers measured.
struct Measurements {
    /// The costs of each query of the mix.
    costs: Vec<QueryCosts>,
    /// The candidate's idle CPU, in microseconds per second.
    candidate_idle_cpu: f64,
    /// The baseline's, for an A/B run.
    baseline_idle_cpu: Option<f64>,
}

/// Starts every build, runs the passes, and stops the builds (on every path).
fn measure_builds(arguments: &Arguments, queries: &[MixQuery]) -> Result<Measurements, String> {
    let mut running: Vec<RunningBuild> = Vec::new();
    for (build, spec) in arguments.specs() {
        let started = start_build(arguments, build, &spec)
            .map_err(|error| format!("{}: {error}", build.name()))?;
        running.push(started);
    }
    let (candidate, others) = running
        .split_first_mut()
        .ok_or_else(|| "no build to measure".to_string())?;
    let baseline = others.first_mut();
    let candidate_idle_cpu = candidate
        .server
        .idle_cpu_microseconds_per_second(IDLE_MEASUREMENT)?;
    let baseline_idle_cpu = baseline
        .as_ref()
        .map(|baseline| {
            baseline
                .server
                .idle_cpu_microseconds_per_second(IDLE_MEASUREMENT)
        })
        .transpose()?;
    let mut servers = Servers {
        candidate: &mut candidate.server,
        baseline: baseline.map(|baseline| &mut baseline.server),
    };
    let counts = PassCounts {
        warmup: arguments.warmup_passes,
        measured: arguments.passes,
    };
    Ok(Measurements {
        costs: run_passes(&mut servers, queries, counts)?,
        candidate_idle_cpu,
        baseline_idle_cpu,
    })
}

/// Deletes the data copies (the servers are stopped); a failure is only reported.
fn remove_copies(arguments: &Arguments) {
    for (_, spec) in arguments.specs() {
        let copy = spec.data_dir();
        match std::fs::remove_dir_all(&copy) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                eprintln!("cannot delete the copy {}: {error}", copy.display());
            }
            _ => {}
        }
    }
}

fn run(arguments: &Arguments) -> Result<(), String> {
    let queries = read_queries(&arguments.queries)?;
    ensure_not_in_use(&arguments.data_dir)?;
    eprintln!(
        "{} queries from {}",
        queries.len(),
        arguments.queries.display()
    );
    let measured = measure_builds(arguments, &queries);
    remove_copies(arguments);
    let measurements = measured?;
    let description = RunDescription {
        command_line: command_line(),
        candidate_binary: arguments.binary.clone(),
        baseline_binary: arguments.baseline_binary.clone(),
        data_dir: arguments.data_dir.clone(),
        queries_path: arguments.queries.clone(),
        index_uid: arguments.index.clone(),
        cores: arguments.cores,
        passes: PassCounts {
            warmup: arguments.warmup_passes,
            measured: arguments.passes,
        },
        candidate_idle_cpu: measurements.candidate_idle_cpu,
        baseline_idle_cpu: measurements.baseline_idle_cpu,
        machine_cpus: std::thread::available_parallelism().map_or(0, usize::from),
    };
    let report = render(&description, &measurements.costs, arguments.top);
    print!("{report}");
    if let Some(path) = &arguments.output {
        std::fs::write(path, &report)
            .map_err(|error| format!("cannot write {}: {error}", path.display()))?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let arguments = match checked(Arguments::parse()) {
        Ok(arguments) => arguments,
        Err(error) => {
            eprintln!("search_cpu: {error}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    match run(&arguments) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("search_cpu: {error}");
            ExitCode::from(EXIT_FAILURE)
        }
    }
}
