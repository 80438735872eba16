//! What the process tells its service manager (systemd's notify protocol, `sd_notify(3)`):
//! `READY=1` once every core serves, `STOPPING=1` when shutdown begins, `WATCHDOG=1`
//! while every core makes progress, when the unit asks for a watchdog (`WatchdogSec=`), and
//! `RELOADING=1` then `READY=1` around a SIGHUP reload (what `Type=notify-reload` waits for).
//!
//! The messages go to the datagram socket named by `NOTIFY_SOCKET`; without it (not started
//! by a service manager) nothing is sent. A message that cannot be sent is logged and never
//! stops the process: the service manager then acts on its own timeouts.
//!
//! The watchdog is one thread outside the cores: it never blocks a core, and it reads only the
//! cores' heartbeat counters ([`Lifecycle::heartbeats`]). It pings every half interval, and
//! only when every core's heartbeat moved since its last look; each core beats every
//! [`heartbeat_period`] of the interval.
//!
//! Invariant: a ping is sent only when every core beat since the previous look, so a core
//! stuck for longer than the watchdog interval leaves the service manager without a ping
//! for that whole interval.

use std::time::Duration;

use sd_notify::NotifyState;

use super::lifecycle::{Lifecycle, Phase};

/// The shortest heartbeat period, whatever the watchdog interval: a tighter one would only
/// cost the cores wake-ups.
pub const HEARTBEAT_PERIOD_MIN: Duration = Duration::from_millis(10);
/// Heartbeats per watchdog interval: the watchdog looks twice per interval, so each look
/// spans two beats of every core that makes progress.
const HEARTBEATS_PER_INTERVAL: u32 = 4;
/// Looks (and pings) per watchdog interval, as `sd_watchdog_enabled(3)` advises.
const PINGS_PER_INTERVAL: u32 = 2;

/// Tells the service manager that the process serves on `cores` cores.
pub fn notify_ready(cores: usize) {
    let status = format!("STATUS=serving on {cores} cores");
    send(
        &[NotifyState::Ready, NotifyState::Custom(&status)],
        "READY=1",
    );
}

/// Tells the service manager that the process stops.
pub fn notify_stopping() {
    send(
        &[
            NotifyState::Stopping,
            NotifyState::Status("draining connections"),
        ],
        "STOPPING=1",
    );
}

/// Tells the service manager that a reload (SIGHUP) begins: `RELOADING=1` with the
/// monotonic time, as `Type=notify-reload` units expect.
pub fn notify_reloading() {
    let mut states = vec![NotifyState::Reloading];
    match NotifyState::monotonic_usec_now() {
        Ok(now) => states.push(now),
        Err(error) => tracing::warn!(%error, "could not read the monotonic clock"),
    }
    send(&states, "RELOADING=1");
}

/// Tells the service manager that the reload ended and the process serves again.
pub fn notify_reloaded() {
    send(
        &[NotifyState::Ready, NotifyState::Status("serving")],
        "READY=1",
    );
}

/// The watchdog interval the service manager asked for, if any (`WATCHDOG_USEC`, for this
/// process when `WATCHDOG_PID` is set).
pub fn watchdog_interval() -> Option<Duration> {
    sd_notify::watchdog_enabled().filter(|interval| !interval.is_zero())
}

/// How often each core beats for a watchdog of `interval`.
pub fn heartbeat_period(interval: Duration) -> Duration {
    (interval / HEARTBEATS_PER_INTERVAL).max(HEARTBEAT_PERIOD_MIN)
}

/// Starts the watchdog thread for a watchdog of `interval`; it runs until the process exits.
pub fn start_watchdog(lifecycle: Lifecycle, interval: Duration) -> std::io::Result<()> {
    let look_period = interval / PINGS_PER_INTERVAL;
    std::thread::Builder::new()
        .name("watchdog".to_owned())
        .spawn(move || {
            let mut watchdog = Watchdog::new(lifecycle.cores());
            loop {
                std::thread::sleep(look_period);
                match watchdog.look(&lifecycle.heartbeats()) {
                    Look::Progress => send(&[NotifyState::Watchdog], "WATCHDOG=1"),
                    // Cores that stop beating while draining have finished serving.
                    Look::Stalled(_) if lifecycle.phase() == Phase::Draining => return,
                    Look::Stalled(cores) => tracing::warn!(
                        ?cores,
                        "cores made no progress since the last watchdog look: no ping"
                    ),
                }
            }
        })
        .map(drop)
}

/// What one look at the heartbeats found.
#[derive(Debug, PartialEq, Eq)]
pub enum Look {
    /// Every core beat since the previous look.
    Progress,
    /// These cores did not.
    Stalled(Vec<usize>),
}

/// The heartbeats of the previous look.
#[derive(Debug)]
pub struct Watchdog {
    previous: Vec<Option<u64>>,
}

impl Watchdog {
    /// A watchdog of `cores` cores that has not looked yet (every core counts as moved at
    /// the first look only if it beat at least once).
    pub fn new(cores: usize) -> Watchdog {
        Watchdog {
            previous: vec![None; cores],
        }
    }

    /// Compares `heartbeats` (one per core) with the previous look.
    pub fn look(&mut self, heartbeats: &[u64]) -> Look {
        assert_eq!(
            heartbeats.len(),
            self.previous.len(),
            "one heartbeat per core"
        );
        let stalled: Vec<usize> = heartbeats
            .iter()
            .zip(&self.previous)
            .enumerate()
            .filter(|(_, (now, before))| before.map_or(**now == 0, |before| **now == before))
            .map(|(core, _)| core)
            .collect();
        self.previous = heartbeats.iter().copied().map(Some).collect();
        if stalled.is_empty() {
            Look::Progress
        } else {
            Look::Stalled(stalled)
        }
    }
}

fn send(states: &[NotifyState<'_>], what: &str) {
    if let Err(error) = sd_notify::notify(states) {
        tracing::warn!(%error, "could not tell the service manager {what}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pings_only_when_every_core_moved() {
        let mut watchdog = Watchdog::new(2);
        assert_eq!(watchdog.look(&[0, 1]), Look::Stalled(vec![0]));
        assert_eq!(watchdog.look(&[1, 2]), Look::Progress);
        assert_eq!(watchdog.look(&[2, 2]), Look::Stalled(vec![1]));
        assert_eq!(watchdog.look(&[3, 3]), Look::Progress);
    }

    #[test]
    fn heartbeats_are_four_per_interval_with_a_floor() {
        assert_eq!(
            heartbeat_period(Duration::from_secs(2)),
            Duration::from_millis(500)
        );
        assert_eq!(
            heartbeat_period(Duration::from_millis(12)),
            HEARTBEAT_PERIOD_MIN
        );
    }
}
