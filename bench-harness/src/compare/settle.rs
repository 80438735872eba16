//! Waiting for a server to go quiet after indexing.
//!
//! A server may keep working once its last indexing task has succeeded: coresearch repacks
//! its sparse trees at low priority two seconds after its queue empties, and any server may
//! flush or merge in the background. Searches measured during that work measure the
//! background work too, and the disk measured before it ends is not what the server keeps at
//! rest. So each side waits, after indexing, until the server process uses less than
//! [`QUIET_CORES`] of a core over a whole [`QUIET_WINDOW`], for at most [`SETTLE_LIMIT`], and
//! the time it took is reported beside the other figures.
//!
//! Invariant: the settle time counts from the end of indexing to the start of the first
//! quiet window (the window itself, which proves the quiet, is not counted); a server that
//! never goes quiet is reported with the limit and `quiet == false`, and the run goes on.

use std::time::{Duration, Instant};

use crate::load::process_cpu::CpuMeter;

/// Average cores used below which a window counts as quiet.
pub const QUIET_CORES: f64 = 0.05;
/// The length of one measured window.
pub const QUIET_WINDOW: Duration = Duration::from_secs(1);
/// The longest wait for a quiet window.
pub const SETTLE_LIMIT: Duration = Duration::from_secs(300);
/// The shortest wait before the first window, so that work a server schedules a little after
/// its queue empties (coresearch waits two seconds) has started when the windows are read.
pub const SETTLE_FIRST_WAIT: Duration = Duration::from_secs(3);

/// How a server settled after indexing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settling {
    /// Time from the end of indexing to the start of the first quiet window.
    pub elapsed: Duration,
    /// False when no quiet window came within [`SETTLE_LIMIT`].
    pub quiet: bool,
}

/// Waits until process `pid` (and its descendants) is quiet; `indexed_at` is when indexing
/// ended.
pub fn wait_until_quiet(pid: i32, indexed_at: Instant) -> Result<Settling, String> {
    let first_window = indexed_at + SETTLE_FIRST_WAIT;
    if let Some(wait) = first_window.checked_duration_since(Instant::now()) {
        std::thread::sleep(wait);
    }
    loop {
        let window_start = Instant::now();
        let meter = CpuMeter::start(&[pid]).map_err(|error| format!("settle: {error}"))?;
        std::thread::sleep(QUIET_WINDOW);
        let usage = meter.finish();
        let elapsed = window_start.duration_since(indexed_at);
        if usage.cores_used < QUIET_CORES {
            return Ok(Settling {
                elapsed,
                quiet: true,
            });
        }
        if elapsed >= SETTLE_LIMIT {
            return Ok(Settling {
                elapsed,
                quiet: false,
            });
        }
    }
}
