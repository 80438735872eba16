//! Runs a load test: validates the options, starts one thread per connection,
//! measures the server's CPU time over the measured window, and builds the
//! report.
//!
//! Invariants: the throughput window runs from the scheduled end of the
//! warm-up until every connection has finished; the CPU windows (server and
//! driver) run from when this thread woke at the end of the warm-up (at most
//! a scheduling delay later) to the same end, and carry their own wall time,
//! so cores used are never computed over a window they were not measured in;
//! the driver's own CPU is reported beside the server's, so a saturated
//! driver is visible.

use std::fmt;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::dispatcher::{Dispatcher, Limit, Pacing, RATE_PER_SECOND_MAX};
use super::host_steal::StealMeter;
use super::outcome::{ErrorKind, Tally};
use super::process_cpu::{CpuError, CpuMeter, read_own_ticks, read_stat, usage};
use super::report::{MachineUse, Report};
use super::request::EncodedWorkload;
use super::target::Target;
use super::worker::{WorkerContext, run_worker};
use super::workload::Workload;

/// The most connections (threads) a run may open.
pub const CONNECTIONS_MAX: usize = 4096;
/// The deepest pipeline accepted per connection.
pub const PIPELINE_DEPTH_MAX: usize = 256;
/// The stack of each connection thread (they need little).
pub const WORKER_STACK_BYTES: usize = 256 * 1024;
/// The delay between starting the threads and the first scheduled request,
/// so that every connection thread exists when the schedule starts.
pub const SCHEDULE_START_DELAY: Duration = Duration::from_millis(20);

/// Everything a run needs.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Where requests go.
    pub target: Target,
    /// Sent as `Authorization: Bearer <key>` when set.
    pub api_key: Option<String>,
    /// What to send.
    pub workload: Workload,
    /// Keep-alive connections (one thread each).
    pub connections: usize,
    /// Requests in flight per connection (1 = no pipelining).
    pub pipeline_depth: usize,
    /// Closed or open loop.
    pub pacing: Pacing,
    /// Duration or request count of the measured part.
    pub limit: Limit,
    /// Unmeasured time before measuring starts.
    pub warmup: Duration,
    /// The longest wait for a connection or the next response byte; also how
    /// long late open-loop slots may still be sent after the schedule ends.
    pub timeout: Duration,
    /// Server processes whose CPU time is measured (descendants included).
    pub server_pids: Vec<i32>,
    /// Seed of the template choice.
    pub seed: u64,
}

/// Why a run could not be made.
#[derive(Debug)]
pub enum RunError {
    /// The options are inconsistent or out of range.
    Invalid(String),
    /// A server pid cannot be read.
    Cpu(CpuError),
    /// A connection thread could not be started.
    Spawn(std::io::Error),
    /// A connection thread panicked (a bug in the driver).
    WorkerPanicked,
}

impl fmt::Display for RunError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Invalid(detail) => write!(formatter, "invalid options: {detail}"),
            RunError::Cpu(error) => write!(formatter, "server CPU: {error}"),
            RunError::Spawn(error) => {
                write!(formatter, "cannot start a connection thread: {error}")
            }
            RunError::WorkerPanicked => write!(formatter, "a connection thread panicked"),
        }
    }
}

impl std::error::Error for RunError {}

/// Checks the ranges of the options.
fn validate(options: &RunOptions) -> Result<(), RunError> {
    if !(1..=CONNECTIONS_MAX).contains(&options.connections) {
        return Err(RunError::Invalid(format!(
            "connections must be 1..={CONNECTIONS_MAX}"
        )));
    }
    if !(1..=PIPELINE_DEPTH_MAX).contains(&options.pipeline_depth) {
        return Err(RunError::Invalid(format!(
            "pipeline depth must be 1..={PIPELINE_DEPTH_MAX}"
        )));
    }
    if let Pacing::OpenLoop { rate_per_second } = options.pacing {
        if !(rate_per_second > 0.0 && rate_per_second <= RATE_PER_SECOND_MAX) {
            return Err(RunError::Invalid(format!(
                "rate must be in (0, {RATE_PER_SECOND_MAX}]"
            )));
        }
    }
    match options.limit {
        Limit::Duration(duration) if duration.is_zero() => {
            Err(RunError::Invalid("duration must be positive".to_string()))
        }
        Limit::Requests(0) => Err(RunError::Invalid(
            "request count must be positive".to_string(),
        )),
        _ if options.timeout.is_zero() => {
            Err(RunError::Invalid("timeout must be positive".to_string()))
        }
        _ => Ok(()),
    }
}

/// Runs the load test described by `options`.
pub fn run(options: &RunOptions) -> Result<Report, RunError> {
    validate(options)?;
    for pid in &options.server_pids {
        read_stat(*pid).map_err(RunError::Cpu)?;
    }
    let workload = Arc::new(EncodedWorkload::new(
        &options.workload,
        &options.target,
        options.api_key.as_deref(),
    ));
    let start = Instant::now() + SCHEDULE_START_DELAY;
    let dispatcher = Arc::new(Dispatcher::new(
        options.pacing,
        options.limit,
        start,
        options.warmup,
        options.timeout,
    ));
    let context = Arc::new(WorkerContext {
        dispatcher: Arc::clone(&dispatcher),
        workload: Arc::clone(&workload),
        address: options.target.address,
        pipeline_depth: options.pipeline_depth,
        timeout: options.timeout,
        seed: options.seed,
    });
    let (handles, spawn_error) = spawn_workers(&context, options.connections);

    let now = Instant::now();
    if dispatcher.measure_start() > now {
        std::thread::sleep(dispatcher.measure_start() - now);
    }
    let server_meter =
        (!options.server_pids.is_empty()).then(|| CpuMeter::start(&options.server_pids));
    let driver_start_ticks = read_own_ticks();
    let steal_meter = StealMeter::start();
    let window_start = Instant::now();

    let mut tally = Tally::new(workload.requests.len());
    let mut panicked = false;
    for handle in handles {
        match handle.join() {
            Ok(worker_tally) => tally.merge(&worker_tally),
            Err(_) => panicked = true,
        }
    }
    let finished = Instant::now();
    let cpu_window = finished.saturating_duration_since(window_start);
    if let Some(error) = spawn_error {
        return Err(RunError::Spawn(error));
    }
    if panicked {
        return Err(RunError::WorkerPanicked);
    }
    tally.add_errors(ErrorKind::Unsent, dispatcher.unsent());

    let own_pid = i32::try_from(std::process::id()).unwrap_or(0);
    let driver_ticks = match (driver_start_ticks, read_own_ticks()) {
        (Some(before), Some(after)) => after.saturating_sub(before),
        _ => 0,
    };
    let driver_cpu = usage(vec![own_pid], driver_ticks, cpu_window, Vec::new());
    let server_cpu = server_meter.map(|meter| {
        meter
            .map(|meter| meter.finish())
            .map_err(|error| error.to_string())
    });
    let machine = MachineUse {
        driver_cpu,
        host_steal: steal_meter.and_then(|meter| meter.finish()),
    };
    Ok(Report::build(
        options,
        &workload,
        &tally,
        dispatcher.measure_start()..finished,
        server_cpu,
        machine,
        dispatcher.measured_slots(),
    ))
}

/// Starts one thread per connection; stops at the first failure to spawn.
fn spawn_workers(
    context: &Arc<WorkerContext>,
    connections: usize,
) -> (Vec<JoinHandle<Tally>>, Option<std::io::Error>) {
    let mut handles = Vec::with_capacity(connections);
    for index in 0..connections {
        let context = Arc::clone(context);
        let spawned = std::thread::Builder::new()
            .name(format!("load-{index}"))
            .stack_size(WORKER_STACK_BYTES)
            .spawn(move || run_worker(&context, index as u64));
        match spawned {
            Ok(handle) => handles.push(handle),
            Err(error) => return (handles, Some(error)),
        }
    }
    (handles, None)
}
