//! CPU time the hypervisor took from this machine's CPUs during a run (the `steal` column of
//! `/proc/stat`), so that a slow window can be told apart from a slow server: on a virtual
//! machine the host may stop the guest's CPUs for tens of milliseconds, and every process on
//! them stalls at once (a traced stall of both cores in `tuning/results/batch-start-stall-2026-11-27.md`
//! held 22.8 ms with no event on either CPU).
//!
//! Invariants: the figure is the machine's whole steal over the window, every CPU summed (a
//! machine-wide fact, not the server's); `cores` is that time over the window's wall-clock
//! length, so 0.01 means a hundredth of one CPU was taken on average; a machine whose
//! `/proc/stat` has no steal column (or none at all) reports nothing, never zero.

use std::time::Instant;

use serde::Serialize;

use super::process_cpu::clock_ticks_per_second;

/// Position of the steal column among the numbers of the `cpu` line of `/proc/stat`
/// (`user nice system idle iowait irq softirq steal …`).
const STEAL_COLUMN: usize = 7;

/// Steal over a measured window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct HostSteal {
    /// CPU seconds taken by the hypervisor, every CPU summed.
    pub cpu_seconds: f64,
    /// The window's wall-clock length.
    pub wall_seconds: f64,
    /// `cpu_seconds / wall_seconds`: CPUs taken on average.
    pub cores: f64,
}

/// A started measurement of the machine's steal.
#[derive(Debug, Clone, Copy)]
pub struct StealMeter {
    start_ticks: u64,
    started: Instant,
}

impl StealMeter {
    /// Starts measuring now; `None` when `/proc/stat` shows no steal.
    pub fn start() -> Option<StealMeter> {
        Some(StealMeter {
            start_ticks: read_steal_ticks()?,
            started: Instant::now(),
        })
    }

    /// The steal since the start; `None` when `/proc/stat` became unreadable.
    pub fn finish(&self) -> Option<HostSteal> {
        let ticks = read_steal_ticks()?.saturating_sub(self.start_ticks);
        let wall_seconds = self.started.elapsed().as_secs_f64();
        let cpu_seconds = ticks as f64 / clock_ticks_per_second() as f64;
        let cores = if wall_seconds > 0.0 {
            cpu_seconds / wall_seconds
        } else {
            0.0
        };
        Some(HostSteal {
            cpu_seconds,
            wall_seconds,
            cores,
        })
    }
}

/// The machine's steal so far, in clock ticks.
fn read_steal_ticks() -> Option<u64> {
    parse_steal_ticks(&std::fs::read_to_string("/proc/stat").ok()?)
}

/// The steal column of the aggregate `cpu` line of a `/proc/stat` text.
pub fn parse_steal_ticks(stat: &str) -> Option<u64> {
    let line = stat.lines().find(|line| line.starts_with("cpu "))?;
    line.split_whitespace()
        .skip(1)
        .nth(STEAL_COLUMN)?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_steal_column_of_the_aggregate_line_is_read() {
        let stat = "cpu  1438287 22189 115613 478259 202009 0 9124 1229 0 0\n\
                    cpu0 687120 21955 57766 269767 92361 0 3826 623 0 0\n\
                    cpu1 751167 233 57847 208491 109647 0 5298 605 0 0\n";
        assert_eq!(parse_steal_ticks(stat), Some(1229));
    }

    #[test]
    fn a_line_without_the_steal_column_reports_nothing() {
        assert_eq!(parse_steal_ticks("cpu  1 2 3 4 5 6 7\n"), None);
        assert_eq!(parse_steal_ticks("cpu0 1 2 3 4 5 6 7 8\n"), None);
        assert_eq!(parse_steal_ticks(""), None);
    }

    #[test]
    fn a_window_on_this_machine_measures_a_share_of_its_cpus() {
        let Some(meter) = StealMeter::start() else {
            eprintln!("skipped: this machine's /proc/stat shows no steal column");
            return;
        };
        std::thread::sleep(std::time::Duration::from_millis(20));
        let steal = meter.finish().expect("/proc/stat stays readable");
        let cpus = std::thread::available_parallelism().map_or(1, usize::from) as f64;
        assert!(steal.wall_seconds >= 0.02, "{steal:?}");
        assert!(
            (0.0..=cpus).contains(&steal.cores),
            "at most every CPU can be taken: {steal:?}"
        );
    }
}
