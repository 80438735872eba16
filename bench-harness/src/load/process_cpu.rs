//! CPU time of server processes, read from `/proc/PID/stat` (utime + stime,
//! which cover every thread of the process), so that a run can report the
//! server's CPU time per request and the cores it used on average.
//!
//! Invariants: a measured process set is the given pids plus all their
//! descendants found at the start (nginx's workers are children of its
//! master); the same set is read at the end; a process that vanished is
//! reported, never silently counted as zero.

use std::collections::BTreeSet;
use std::fmt;
use std::time::{Duration, Instant};

use serde::Serialize;

/// Field index of utime in `/proc/PID/stat`, counting the state (field 3) as 0
/// after the closing parenthesis of the command name.
const STAT_UTIME_AFTER_COMMAND: usize = 11;
/// Same for stime.
const STAT_STIME_AFTER_COMMAND: usize = 12;
/// Same for the parent pid.
const STAT_PPID_AFTER_COMMAND: usize = 1;
/// The clock-tick rate assumed if `sysconf` cannot tell (Linux's USER_HZ).
const CLOCK_TICKS_PER_SECOND_FALLBACK: u64 = 100;

/// The fields of a `/proc/PID/stat` line this module needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatFields {
    /// Parent process id.
    pub parent_pid: i32,
    /// User-mode CPU time, in clock ticks.
    pub user_ticks: u64,
    /// Kernel-mode CPU time, in clock ticks.
    pub system_ticks: u64,
}

/// Why CPU time cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CpuError {
    /// The process does not exist (or `/proc` is unreadable).
    Missing(i32),
    /// The stat line does not have the expected shape.
    Malformed(i32),
}

impl fmt::Display for CpuError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CpuError::Missing(pid) => write!(formatter, "process {pid} not found in /proc"),
            CpuError::Malformed(pid) => write!(formatter, "/proc/{pid}/stat is malformed"),
        }
    }
}

impl std::error::Error for CpuError {}

/// Parses the content of a stat file. The command name may contain spaces and
/// parentheses, so fields are counted after its last `)`.
pub fn parse_stat(text: &str) -> Option<StatFields> {
    let after_command = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = after_command.split_ascii_whitespace().collect();
    Some(StatFields {
        parent_pid: fields.get(STAT_PPID_AFTER_COMMAND)?.parse().ok()?,
        user_ticks: fields.get(STAT_UTIME_AFTER_COMMAND)?.parse().ok()?,
        system_ticks: fields.get(STAT_STIME_AFTER_COMMAND)?.parse().ok()?,
    })
}

/// Reads `/proc/PID/stat`.
pub fn read_stat(pid: i32) -> Result<StatFields, CpuError> {
    let text =
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_err(|_| CpuError::Missing(pid))?;
    parse_stat(&text).ok_or(CpuError::Malformed(pid))
}

/// Reads the driver's own stat (`/proc/self/stat`).
pub fn read_own_ticks() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/stat").ok()?;
    parse_stat(&text).map(|fields| fields.user_ticks + fields.system_ticks)
}

/// The kernel's clock ticks per second (USER_HZ).
pub fn clock_ticks_per_second() -> u64 {
    // SAFETY: sysconf only reads a system constant; it has no memory-safety
    // preconditions and returns -1 on error, which is handled below.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    u64::try_from(ticks)
        .ok()
        .filter(|ticks| *ticks > 0)
        .unwrap_or(CLOCK_TICKS_PER_SECOND_FALLBACK)
}

/// `roots` and every descendant process currently alive.
pub fn with_descendants(roots: &[i32]) -> Vec<i32> {
    let mut parents: Vec<(i32, i32)> = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|name| name.parse::<i32>().ok())
            else {
                continue;
            };
            if let Ok(fields) = read_stat(pid) {
                parents.push((pid, fields.parent_pid));
            }
        }
    }
    let mut family: BTreeSet<i32> = roots.iter().copied().collect();
    loop {
        let before = family.len();
        for (pid, parent) in &parents {
            if family.contains(parent) {
                family.insert(*pid);
            }
        }
        if family.len() == before {
            return family.into_iter().collect();
        }
    }
}

/// CPU time of a process set between two instants.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CpuUsage {
    /// The processes measured.
    pub pids: Vec<i32>,
    /// CPU seconds (user + system) used by them in the window.
    pub cpu_seconds: f64,
    /// The window's wall-clock length.
    pub wall_seconds: f64,
    /// `cpu_seconds / wall_seconds`: cores used on average.
    pub cores_used: f64,
    /// Processes that could not be read at the end (their time is missing).
    pub vanished: Vec<i32>,
}

/// A started measurement.
#[derive(Debug, Clone)]
pub struct CpuMeter {
    pids: Vec<i32>,
    start_ticks: Vec<u64>,
    started: Instant,
}

impl CpuMeter {
    /// Starts measuring `pids` (descendants included) now.
    pub fn start(roots: &[i32]) -> Result<CpuMeter, CpuError> {
        for root in roots {
            read_stat(*root)?;
        }
        let pids = with_descendants(roots);
        let start_ticks = pids
            .iter()
            .map(|pid| {
                read_stat(*pid)
                    .map(|fields| fields.user_ticks + fields.system_ticks)
                    .unwrap_or(0)
            })
            .collect();
        Ok(CpuMeter {
            pids,
            start_ticks,
            started: Instant::now(),
        })
    }

    /// Ends the measurement now.
    pub fn finish(&self) -> CpuUsage {
        let wall = self.started.elapsed();
        let mut ticks = 0u64;
        let mut vanished = Vec::new();
        for (pid, start) in self.pids.iter().zip(&self.start_ticks) {
            match read_stat(*pid) {
                Ok(fields) => {
                    ticks += (fields.user_ticks + fields.system_ticks).saturating_sub(*start)
                }
                Err(_) => vanished.push(*pid),
            }
        }
        usage(self.pids.clone(), ticks, wall, vanished)
    }
}

/// Builds a usage record from clock ticks.
pub fn usage(pids: Vec<i32>, ticks: u64, wall: Duration, vanished: Vec<i32>) -> CpuUsage {
    let cpu_seconds = ticks as f64 / clock_ticks_per_second() as f64;
    let wall_seconds = wall.as_secs_f64();
    let cores_used = if wall_seconds > 0.0 {
        cpu_seconds / wall_seconds
    } else {
        0.0
    };
    CpuUsage {
        pids,
        cpu_seconds,
        wall_seconds,
        cores_used,
        vanished,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_found_after_a_command_with_spaces_and_parentheses() {
        let line = "4242 (nginx: worker (x) ) S 4241 4241 4241 0 -1 4194624 120 0 0 0 \
                    1234 567 0 0 20 0 1 0 100 1000 200 18446744073709551615";
        let fields = parse_stat(line).expect("parse_stat succeeds");
        assert_eq!(
            fields,
            StatFields {
                parent_pid: 4241,
                user_ticks: 1234,
                system_ticks: 567
            }
        );
        assert_eq!(parse_stat("1 (short) S 0"), None);
    }

    #[test]
    fn own_process_is_readable_and_burning_cpu_shows_up() {
        let pid = i32::try_from(std::process::id()).expect("try_from succeeds");
        let meter = CpuMeter::start(&[pid]).expect("start succeeds");
        // Spin until at least one clock tick is charged (the machine may be
        // busy, so the wall time needed varies), within a bound.
        let give_up = Instant::now() + Duration::from_secs(5);
        let mut spin = 0u64;
        let mut usage = meter.finish();
        while usage.cpu_seconds == 0.0 && Instant::now() < give_up {
            let slice_end = Instant::now() + Duration::from_millis(50);
            while Instant::now() < slice_end {
                spin = spin.wrapping_add(1);
            }
            usage = meter.finish();
        }
        assert!(spin > 0);
        assert!(usage.pids.contains(&pid));
        assert!(usage.vanished.is_empty());
        assert!(usage.cpu_seconds > 0.0, "{usage:?}");
        assert!(
            usage.cores_used > 0.0 && usage.wall_seconds > 0.0,
            "{usage:?}"
        );
    }

    #[test]
    fn missing_process_is_an_error() {
        assert_eq!(
            CpuMeter::start(&[i32::MAX]).err(),
            Some(CpuError::Missing(i32::MAX))
        );
    }
}
