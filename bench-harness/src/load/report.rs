//! The result of a run, as a serialisable record and as a text table.
//!
//! Invariants: throughput and CPU figures use the same measured window;
//! `requests_per_second` counts every response (any status) and
//! `successes_per_second` only 2xx; latencies are of 2xx responses only;
//! errors and non-2xx statuses are always listed, even when zero errors
//! ("none" is printed, never an omitted section).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Instant;

use serde::Serialize;

use super::dispatcher::{Limit, Pacing};
use super::host_steal::HostSteal;
use super::latency::{LatencyHistogram, LatencySummary};
use super::outcome::Tally;
use super::process_cpu::CpuUsage;
use super::request::EncodedWorkload;
use super::runner::RunOptions;

/// Responses to one template.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TemplateCount {
    /// The template's label.
    pub label: String,
    /// Its weight in the workload.
    pub weight: u32,
    /// Measured responses to it (any status).
    pub responses: u64,
}

/// The server's CPU use over the measured window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerCpu {
    /// Raw usage.
    #[serde(flatten)]
    pub usage: CpuUsage,
    /// Server CPU time per response, in microseconds.
    pub cpu_microseconds_per_request: f64,
    /// Responses per second of server CPU time: requests/s per fully used core.
    pub requests_per_core_second: f64,
}

/// Everything measured by a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// The base URL.
    pub target: String,
    /// The workload's name.
    pub workload: String,
    /// `closed_loop` or `open_loop`.
    pub mode: String,
    /// Connections.
    pub connections: usize,
    /// Requests in flight per connection.
    pub pipeline_depth: usize,
    /// Open loop: the scheduled rate.
    pub rate_per_second: Option<f64>,
    /// The requested measured duration, if the run was time-limited.
    pub duration_seconds: Option<f64>,
    /// The requested measured request count, if the run was count-limited.
    pub requests_limit: Option<u64>,
    /// Open loop: measured requests in the schedule.
    pub scheduled_requests: Option<u64>,
    /// Unmeasured warm-up.
    pub warmup_seconds: f64,
    /// The measured window (end of warm-up to the last connection finishing).
    pub elapsed_seconds: f64,
    /// Responses of any status.
    pub responses: u64,
    /// 2xx responses.
    pub successes: u64,
    /// `responses / elapsed_seconds`.
    pub requests_per_second: f64,
    /// `successes / elapsed_seconds`.
    pub successes_per_second: f64,
    /// 2xx latency from the intended send time.
    pub latency: LatencySummary,
    /// 2xx latency from the actual write (differs from `latency` in open loop
    /// when the driver had to queue).
    pub service_time: LatencySummary,
    /// The 2xx latencies themselves, so that runs can be pooled (not in the JSON).
    #[serde(skip)]
    pub latency_histogram: LatencyHistogram,
    /// The service times themselves (not in the JSON).
    #[serde(skip)]
    pub service_time_histogram: LatencyHistogram,
    /// Non-2xx responses by status.
    pub non_2xx: BTreeMap<String, u64>,
    /// Failed attempts by kind.
    pub errors: BTreeMap<String, u64>,
    /// Sum of `errors`.
    pub error_total: u64,
    /// Responses per template.
    pub templates: Vec<TemplateCount>,
    /// Connections opened, reconnections and warm-up included.
    pub connections_opened: u64,
    /// Connections the server closed with `Connection: close`.
    pub server_closes: u64,
    /// The server's CPU use, when pids were given and readable.
    pub server_cpu: Option<ServerCpu>,
    /// Why the server's CPU could not be measured, if it could not.
    pub server_cpu_error: Option<String>,
    /// The driver's own CPU use over the same window.
    pub driver_cpu: CpuUsage,
    /// The host's 1-, 5- and 15-minute load averages at the end of the run
    /// (`/proc/loadavg`): on a shared machine, the competition for the CPUs.
    pub load_average: Option<[f64; 3]>,
    /// CPU time the hypervisor took from the machine over the measured window, when the
    /// machine reports it.
    pub host_steal: Option<HostSteal>,
    /// Seed of the template choice.
    pub seed: u64,
    /// The wall-clock time (UTC, Unix seconds) the measured window started at: lines up the
    /// slow responses' `finished_at_seconds` with a server's log.
    pub measured_from_unix_seconds: f64,
    /// The slowest 2xx responses, slowest first: which requests make the tail.
    pub slowest: Vec<SlowRequest>,
}

/// What the run's own side of the machine measured over the measured window.
#[derive(Debug, Clone, PartialEq)]
pub struct MachineUse {
    /// The driver's CPU use.
    pub driver_cpu: CpuUsage,
    /// The machine's steal, when it reports it.
    pub host_steal: Option<HostSteal>,
}

/// How many of the slowest responses the text report lists (the JSON report has them all).
const SLOWEST_PRINTED: usize = 5;

/// One of the slowest 2xx responses of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SlowRequest {
    /// The template's label.
    pub label: String,
    /// From the intended send time to the response, in milliseconds.
    pub latency_milliseconds: f64,
    /// From the actual write to the response, in milliseconds.
    pub service_milliseconds: f64,
    /// When the response arrived, in seconds from the start of the measured window: slow
    /// responses that arrived together point at a stall of the server, not at their query.
    pub finished_at_seconds: f64,
}

/// The wall-clock time, in Unix seconds, of `instant` (a moment of this run).
fn wall_clock_of(instant: Instant) -> f64 {
    let since = Instant::now().saturating_duration_since(instant);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    now.saturating_sub(since).as_secs_f64()
}

/// `count / seconds`, zero for an empty window.
fn per_second(count: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        count as f64 / seconds
    } else {
        0.0
    }
}

impl Report {
    /// Assembles the report of a finished run, measured over `window` (from the scheduled
    /// end of the warm-up to the last connection's end).
    pub fn build(
        options: &RunOptions,
        workload: &EncodedWorkload,
        tally: &Tally,
        window: std::ops::Range<Instant>,
        server_cpu: Option<Result<CpuUsage, String>>,
        machine: MachineUse,
        scheduled_requests: Option<u64>,
    ) -> Report {
        let measure_start = window.start;
        let elapsed_seconds = window
            .end
            .saturating_duration_since(window.start)
            .as_secs_f64();
        let (server_cpu, server_cpu_error) = match server_cpu {
            Some(Ok(usage)) => (Some(server_cpu_figures(usage, tally.responses)), None),
            Some(Err(error)) => (None, Some(error)),
            None => (None, None),
        };
        Report {
            target: format!(
                "http://{}{}",
                options.target.authority, options.target.base_path
            ),
            workload: options.workload.name.clone(),
            mode: match options.pacing {
                Pacing::ClosedLoop => "closed_loop".to_string(),
                Pacing::OpenLoop { .. } => "open_loop".to_string(),
            },
            connections: options.connections,
            pipeline_depth: options.pipeline_depth,
            rate_per_second: match options.pacing {
                Pacing::ClosedLoop => None,
                Pacing::OpenLoop { rate_per_second } => Some(rate_per_second),
            },
            duration_seconds: match options.limit {
                Limit::Duration(duration) => Some(duration.as_secs_f64()),
                Limit::Requests(_) => None,
            },
            requests_limit: match options.limit {
                Limit::Duration(_) => None,
                Limit::Requests(count) => Some(count),
            },
            scheduled_requests,
            warmup_seconds: options.warmup.as_secs_f64(),
            elapsed_seconds,
            responses: tally.responses,
            successes: tally.successes,
            requests_per_second: per_second(tally.responses, elapsed_seconds),
            successes_per_second: per_second(tally.successes, elapsed_seconds),
            latency: tally.latency.summary(),
            service_time: tally.service_time.summary(),
            latency_histogram: tally.latency.clone(),
            service_time_histogram: tally.service_time.clone(),
            non_2xx: tally
                .statuses
                .iter()
                .map(|(status, count)| (status.to_string(), *count))
                .collect(),
            errors: tally
                .errors
                .iter()
                .map(|(kind, count)| (kind.name().to_string(), *count))
                .collect(),
            error_total: tally.error_total(),
            templates: workload
                .labels
                .iter()
                .zip(&workload.weights)
                .zip(&tally.per_template)
                .map(|((label, weight), responses)| TemplateCount {
                    label: label.clone(),
                    weight: *weight,
                    responses: *responses,
                })
                .collect(),
            connections_opened: tally.connections_opened,
            server_closes: tally.server_closes,
            server_cpu,
            server_cpu_error,
            driver_cpu: machine.driver_cpu,
            load_average: read_load_average(),
            host_steal: machine.host_steal,
            seed: options.seed,
            measured_from_unix_seconds: wall_clock_of(measure_start),
            slowest: tally
                .slowest
                .iter()
                .map(|response| SlowRequest {
                    label: workload
                        .labels
                        .get(response.template)
                        .cloned()
                        .unwrap_or_default(),
                    latency_milliseconds: response.latency.as_secs_f64() * 1e3,
                    service_milliseconds: response.service_time.as_secs_f64() * 1e3,
                    finished_at_seconds: response
                        .finished
                        .saturating_duration_since(measure_start)
                        .as_secs_f64(),
                })
                .collect(),
        }
    }

    /// The report as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report is plain data and always serialises")
    }

    /// The report as a text table.
    pub fn to_text(&self) -> String {
        let mut text = String::new();
        self.write_setup(&mut text);
        self.write_throughput(&mut text);
        self.write_latency(&mut text);
        self.write_failures(&mut text);
        self.write_cpu(&mut text);
        text
    }

    fn write_setup(&self, text: &mut String) {
        let _ = writeln!(
            text,
            "target      {}  workload {}  seed {}",
            self.target, self.workload, self.seed
        );
        let pacing = match self.rate_per_second {
            Some(rate) => format!("open loop at {rate:.0} requests/s"),
            None => "closed loop".to_string(),
        };
        let limit = match (self.duration_seconds, self.requests_limit) {
            (Some(seconds), _) => format!("{seconds:.1} s"),
            (None, Some(count)) => format!("{count} requests"),
            (None, None) => String::new(),
        };
        let _ = writeln!(
            text,
            "mode        {pacing}, {} connections, pipeline depth {}, {limit} after {:.1} s warm-up",
            self.connections, self.pipeline_depth, self.warmup_seconds
        );
    }

    fn write_throughput(&self, text: &mut String) {
        let _ = writeln!(
            text,
            "throughput  {:.0} requests/s ({} responses in {:.3} s; 2xx: {} = {:.0}/s)",
            self.requests_per_second,
            self.responses,
            self.elapsed_seconds,
            self.successes,
            self.successes_per_second
        );
        if let Some(scheduled) = self.scheduled_requests {
            let _ = writeln!(
                text,
                "schedule    {scheduled} requests scheduled in the measured window"
            );
        }
        let _ = writeln!(
            text,
            "connections {} opened, {} closed by the server",
            self.connections_opened, self.server_closes
        );
    }

    fn write_latency(&self, text: &mut String) {
        let _ = writeln!(
            text,
            "latency µs  {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}",
            "p50", "p90", "p99", "p99.9", "max", "mean", "count"
        );
        let mut row = |name: &str, summary: &LatencySummary| {
            let _ = writeln!(
                text,
                "  {name:<9} {:>10.1} {:>10.1} {:>10.1} {:>10.1} {:>10.1} {:>10.1} {:>10}",
                summary.p50_microseconds,
                summary.p90_microseconds,
                summary.p99_microseconds,
                summary.p99_9_microseconds,
                summary.max_microseconds,
                summary.mean_microseconds,
                summary.count
            );
        };
        if self.rate_per_second.is_some() {
            row("scheduled", &self.latency);
            row("service", &self.service_time);
        } else {
            row("2xx", &self.latency);
        }
        for slow in self.slowest.iter().take(SLOWEST_PRINTED) {
            let _ = writeln!(
                text,
                "  slow      {:>10.1} ms  (service {:.1} ms, at {:.3} s)  {}",
                slow.latency_milliseconds,
                slow.service_milliseconds,
                slow.finished_at_seconds,
                slow.label
            );
        }
    }

    fn write_failures(&self, text: &mut String) {
        let list = |counts: &BTreeMap<String, u64>| {
            if counts.is_empty() {
                return "none".to_string();
            }
            counts
                .iter()
                .map(|(name, count)| format!("{name}: {count}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(text, "non-2xx     {}", list(&self.non_2xx));
        let _ = writeln!(
            text,
            "errors      {} ({})",
            list(&self.errors),
            self.error_total
        );
        for template in &self.templates {
            let _ = writeln!(
                text,
                "template    {:<48} weight {:>8} responses {:>10}",
                template.label, template.weight, template.responses
            );
        }
    }

    fn write_cpu(&self, text: &mut String) {
        match (&self.server_cpu, &self.server_cpu_error) {
            (Some(cpu), _) => {
                let _ = writeln!(
                    text,
                    "server cpu  {:.3} s over {:.3} s = {:.3} cores; {:.2} µs CPU/request; {:.0} requests/s per core (pids {:?}{})",
                    cpu.usage.cpu_seconds,
                    cpu.usage.wall_seconds,
                    cpu.usage.cores_used,
                    cpu.cpu_microseconds_per_request,
                    cpu.requests_per_core_second,
                    cpu.usage.pids,
                    if cpu.usage.vanished.is_empty() {
                        String::new()
                    } else {
                        format!("; VANISHED {:?}", cpu.usage.vanished)
                    }
                );
            }
            (None, Some(error)) => {
                let _ = writeln!(text, "server cpu  not measured: {error}");
            }
            (None, None) => {
                let _ = writeln!(text, "server cpu  not measured (pass --server-pid)");
            }
        }
        let _ = writeln!(
            text,
            "driver cpu  {:.3} s = {:.3} cores",
            self.driver_cpu.cpu_seconds, self.driver_cpu.cores_used
        );
        if let Some([one, five, fifteen]) = self.load_average {
            let _ = writeln!(
                text,
                "host load   {one:.2} {five:.2} {fifteen:.2} (1, 5, 15 min)"
            );
        }
        match self.host_steal {
            Some(steal) => {
                let _ = writeln!(
                    text,
                    "host steal  {:.0} ms of CPU taken by the hypervisor over {:.3} s = {:.4} cores",
                    steal.cpu_seconds * 1e3,
                    steal.wall_seconds,
                    steal.cores
                );
            }
            None => {
                let _ = writeln!(text, "host steal  not reported by this machine");
            }
        }
    }
}

/// The load averages from `/proc/loadavg`, if readable.
fn read_load_average() -> Option<[f64; 3]> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let mut fields = text.split_ascii_whitespace().map(str::parse::<f64>);
    Some([
        fields.next()?.ok()?,
        fields.next()?.ok()?,
        fields.next()?.ok()?,
    ])
}

/// Derives the per-request figures from the server's CPU use.
fn server_cpu_figures(usage: CpuUsage, responses: u64) -> ServerCpu {
    let cpu_microseconds_per_request = if responses > 0 {
        usage.cpu_seconds * 1_000_000.0 / responses as f64
    } else {
        0.0
    };
    let requests_per_core_second = per_second(responses, usage.cpu_seconds);
    ServerCpu {
        usage,
        cpu_microseconds_per_request,
        requests_per_core_second,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_per_request_and_per_core_are_reciprocal() {
        let usage = CpuUsage {
            pids: vec![1],
            cpu_seconds: 2.0,
            wall_seconds: 4.0,
            cores_used: 0.5,
            vanished: Vec::new(),
        };
        let figures = server_cpu_figures(usage, 100_000);
        assert!((figures.cpu_microseconds_per_request - 20.0).abs() < 1e-9);
        assert!((figures.requests_per_core_second - 50_000.0).abs() < 1e-6);
    }
}
