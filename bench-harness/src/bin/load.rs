//! `load`: the HTTP load driver's command line. It parses flags into
//! `RunOptions`, runs, prints the text report, and optionally writes JSON.
//!
//! Exit status: 0 after a completed run (errors are in the report), 2 when the
//! run could not start or the options are invalid.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use bench_harness::load::duration_arg::parse_duration;
use bench_harness::load::{Limit, Pacing, RunOptions, Target, Workload, run};
use clap::{Parser, ValueEnum};

/// The exit status for unusable options or a run that could not start.
const EXIT_USAGE: u8 = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum WorkloadKind {
    /// GET /health
    Health,
    /// GET /experimental-features mixed with PATCHes toggling a flag
    Features,
    /// Templates read from --workload-file (JSON if it ends in .json, else TOML)
    Custom,
}

/// HTTP/1.1 load driver: closed loop (fixed concurrency) or open loop (fixed
/// arrival rate, latency from the scheduled time).
#[derive(Debug, Parser)]
#[command(name = "load", version)]
struct Arguments {
    /// Base URL, e.g. http://127.0.0.1:7701
    #[arg(long)]
    url: String,
    /// API key, sent as `Authorization: Bearer <key>`
    #[arg(long)]
    api_key: Option<String>,
    /// Which workload to send
    #[arg(long, value_enum, default_value = "health")]
    workload: WorkloadKind,
    /// Workload file for `--workload custom`
    #[arg(long)]
    workload_file: Option<PathBuf>,
    /// Share of PATCH requests in the `features` workload (0..=1)
    #[arg(long, default_value_t = 0.1)]
    patch_ratio: f64,
    /// Keep-alive connections (one thread each)
    #[arg(long, short = 'c', default_value_t = 16)]
    connections: usize,
    /// Requests in flight per connection (1 = no pipelining)
    #[arg(long, default_value_t = 1)]
    pipeline: usize,
    /// Open loop: requests per second across all connections (omit for closed loop)
    #[arg(long)]
    rate: Option<f64>,
    /// Measured duration, e.g. 10s (default 10s unless --requests is given)
    #[arg(long, value_parser = parse_duration, conflicts_with = "requests")]
    duration: Option<Duration>,
    /// Measured request count instead of a duration
    #[arg(long)]
    requests: Option<u64>,
    /// Unmeasured warm-up before measuring, e.g. 2s
    #[arg(long, value_parser = parse_duration, default_value = "1s")]
    warmup: Duration,
    /// Longest wait for a connection or the next response byte
    #[arg(long, value_parser = parse_duration, default_value = "5s")]
    timeout: Duration,
    /// Server process whose CPU time is measured (repeatable; children included)
    #[arg(long = "server-pid")]
    server_pids: Vec<i32>,
    /// Write the report as JSON to this file (`-` = standard output, after the table)
    #[arg(long)]
    json: Option<PathBuf>,
    /// Seed of the template choice
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// The default measured duration.
const DURATION_DEFAULT: Duration = Duration::from_secs(10);

fn options(arguments: &Arguments) -> Result<RunOptions, String> {
    let target = Target::parse(&arguments.url).map_err(|error| error.to_string())?;
    let workload = match (arguments.workload, &arguments.workload_file) {
        (WorkloadKind::Health, None) => Workload::health(),
        (WorkloadKind::Features, None) => {
            Workload::features(arguments.patch_ratio).map_err(|error| error.to_string())?
        }
        (WorkloadKind::Custom, Some(path)) => {
            Workload::from_file(path).map_err(|error| error.to_string())?
        }
        (WorkloadKind::Custom, None) => {
            return Err("--workload custom needs --workload-file".to_string());
        }
        (_, Some(_)) => return Err("--workload-file needs --workload custom".to_string()),
    };
    let limit = match (arguments.requests, arguments.duration) {
        (Some(count), _) => Limit::Requests(count),
        (None, duration) => Limit::Duration(duration.unwrap_or(DURATION_DEFAULT)),
    };
    let pacing = match arguments.rate {
        Some(rate_per_second) => Pacing::OpenLoop { rate_per_second },
        None => Pacing::ClosedLoop,
    };
    Ok(RunOptions {
        target,
        api_key: arguments.api_key.clone(),
        workload,
        connections: arguments.connections,
        pipeline_depth: arguments.pipeline,
        pacing,
        limit,
        warmup: arguments.warmup,
        timeout: arguments.timeout,
        server_pids: arguments.server_pids.clone(),
        seed: arguments.seed,
    })
}

fn main() -> ExitCode {
    let arguments = Arguments::parse();
    let options = match options(&arguments) {
        Ok(options) => options,
        Err(error) => {
            eprintln!("load: {error}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let report = match run(&options) {
        Ok(report) => report,
        Err(error) => {
            eprintln!("load: {error}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    print!("{}", report.to_text());
    match arguments.json.as_deref() {
        Some(path) if path.as_os_str() == "-" => println!("{}", report.to_json()),
        Some(path) => {
            if let Err(error) = std::fs::write(path, report.to_json() + "\n") {
                eprintln!("load: cannot write {}: {error}", path.display());
                return ExitCode::from(EXIT_USAGE);
            }
        }
        None => {}
    }
    ExitCode::SUCCESS
}
