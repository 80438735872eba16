//! The process's lifecycle as a load balancer and a service manager see it: starting, ready,
//! draining.
//!
//! One [`Lifecycle`] is shared by every core (ARCHITECTURE.md §3: runtime atomics). The
//! process is *starting* until every core has built its router and serves; the core that
//! completes the count makes it *ready* and tells the service manager (`READY=1`). The first
//! core to see the shutdown flag makes it *draining* and tells the service manager
//! (`STOPPING=1`). `GET /health` answers 200 only while ready.
//!
//! Each core also beats a heartbeat ([`Lifecycle::beat`]); the watchdog
//! (`service_manager::Watchdog`) pings the service manager only while every core's heartbeat
//! moves, so a core that stops making progress stops the pings and the service manager
//! restarts the process.
//!
//! Invariants:
//! - the phase only moves forward: starting → ready → draining, or starting → draining (a
//!   shutdown before every core served); it never goes back;
//! - `READY=1` is sent at most once, by the call that moved the phase to ready, and
//!   `STOPPING=1` at most once, by the call that moved it to draining;
//! - a core counts as serving once: [`Lifecycle::core_serving`] asserts it is called at most
//!   once per core.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};

use super::service_manager;
use crate::http::Response;

/// The path of the health route, which answers from the lifecycle.
pub const HEALTH_PATH: &str = "/health";

/// Where the process is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Not every core serves yet.
    Starting,
    /// Every core serves.
    Ready,
    /// Shutdown began: connections are drained, new ones soon refused.
    Draining,
}

impl Phase {
    const fn code(self) -> u8 {
        match self {
            Phase::Starting => 0,
            Phase::Ready => 1,
            Phase::Draining => 2,
        }
    }

    const fn from_code(code: u8) -> Phase {
        match code {
            0 => Phase::Starting,
            1 => Phase::Ready,
            _ => Phase::Draining,
        }
    }

    /// The word `GET /health` answers with in this phase.
    pub const fn status(self) -> &'static str {
        match self {
            Phase::Starting => "starting",
            Phase::Ready => "available",
            Phase::Draining => "draining",
        }
    }
}

/// `GET /health` in `phase`: 200 `{"status":"available"}` when ready, else 503 with the
/// phase's word (`starting`, `draining`), so that a load balancer sends no new request.
pub fn health_response(phase: Phase) -> Response {
    let status = if phase == Phase::Ready { 200 } else { 503 };
    Response::json(status, format!(r#"{{"status":"{}"}}"#, phase.status()))
}

/// The shared lifecycle of the process; clones share one state.
#[derive(Debug, Clone)]
pub struct Lifecycle {
    inner: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    phase: AtomicU8,
    cores: usize,
    cores_serving: AtomicUsize,
    /// One flag per core: whether it counted itself serving.
    counted: Box<[AtomicBool]>,
    /// One counter per core, moved by [`Lifecycle::beat`].
    heartbeats: Box<[AtomicU64]>,
    /// Whether phase changes are told to the service manager (a process that serves; not
    /// the runs that only finish tasks, such as a dump import).
    notifies: bool,
}

impl Lifecycle {
    /// A starting process of `cores` cores; `notifies` says whether the service manager is
    /// told of its phases.
    pub fn new(cores: usize, notifies: bool) -> Lifecycle {
        assert!(cores > 0, "a process has at least one core");
        Lifecycle {
            inner: Arc::new(Shared {
                phase: AtomicU8::new(Phase::Starting.code()),
                cores,
                cores_serving: AtomicUsize::new(0),
                counted: (0..cores).map(|_| AtomicBool::new(false)).collect(),
                heartbeats: (0..cores).map(|_| AtomicU64::new(0)).collect(),
                notifies,
            }),
        }
    }

    /// The phase now.
    pub fn phase(&self) -> Phase {
        Phase::from_code(self.inner.phase.load(Ordering::Acquire))
    }

    /// How many cores the process runs.
    pub fn cores(&self) -> usize {
        self.inner.cores
    }

    /// Core `core` serves with its full router. The call that completes the count makes the
    /// process ready (unless it already drains) and returns true.
    pub fn core_serving(&self, core: usize) -> bool {
        let already = self.inner.counted[core].swap(true, Ordering::AcqRel);
        assert!(!already, "core {core} counted itself serving twice");
        let serving = self.inner.cores_serving.fetch_add(1, Ordering::AcqRel) + 1;
        assert!(serving <= self.inner.cores, "more cores serve than run");
        if serving < self.inner.cores || !self.advance(Phase::Starting, Phase::Ready) {
            return false;
        }
        if self.inner.notifies {
            service_manager::notify_ready(self.inner.cores);
        }
        true
    }

    /// Shutdown began. The first call moves the process to draining and returns true.
    pub fn begin_draining(&self) -> bool {
        let moved = self.advance(Phase::Ready, Phase::Draining)
            || self.advance(Phase::Starting, Phase::Draining);
        if moved && self.inner.notifies {
            service_manager::notify_stopping();
        }
        moved
    }

    /// Core `core` made progress (its timer ran).
    pub fn beat(&self, core: usize) {
        self.inner.heartbeats[core].fetch_add(1, Ordering::Relaxed);
    }

    /// Every core's heartbeat count now, in core order.
    pub fn heartbeats(&self) -> Vec<u64> {
        self.inner
            .heartbeats
            .iter()
            .map(|beats| beats.load(Ordering::Relaxed))
            .collect()
    }

    fn advance(&self, from: Phase, to: Phase) -> bool {
        self.inner
            .phase
            .compare_exchange(from.code(), to.code(), Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_once_every_core_serves() {
        let lifecycle = Lifecycle::new(3, false);
        assert_eq!(lifecycle.phase(), Phase::Starting);
        assert!(!lifecycle.core_serving(2));
        assert!(!lifecycle.core_serving(0));
        assert_eq!(lifecycle.phase(), Phase::Starting);
        assert!(lifecycle.core_serving(1));
        assert_eq!(lifecycle.phase(), Phase::Ready);
    }

    #[test]
    fn draining_is_final_and_happens_once() {
        let lifecycle = Lifecycle::new(1, false);
        assert!(lifecycle.core_serving(0));
        assert!(lifecycle.begin_draining());
        assert!(!lifecycle.begin_draining());
        assert_eq!(lifecycle.phase(), Phase::Draining);
    }

    #[test]
    fn a_shutdown_while_starting_never_becomes_ready() {
        let lifecycle = Lifecycle::new(2, false);
        assert!(!lifecycle.core_serving(0));
        assert!(lifecycle.begin_draining());
        assert!(!lifecycle.core_serving(1));
        assert_eq!(lifecycle.phase(), Phase::Draining);
    }

    #[test]
    #[should_panic(expected = "counted itself serving twice")]
    fn a_core_counts_once() {
        let lifecycle = Lifecycle::new(2, false);
        lifecycle.core_serving(0);
        lifecycle.core_serving(0);
    }

    #[test]
    fn heartbeats_are_per_core() {
        let lifecycle = Lifecycle::new(2, false);
        lifecycle.beat(1);
        lifecycle.beat(1);
        assert_eq!(lifecycle.heartbeats(), vec![0, 2]);
    }

    #[test]
    fn health_answers_by_phase() {
        let ready = health_response(Phase::Ready);
        assert_eq!(
            (ready.status, ready.body),
            (200, br#"{"status":"available"}"#.to_vec())
        );
        let starting = health_response(Phase::Starting);
        assert_eq!(
            (starting.status, starting.body),
            (503, br#"{"status":"starting"}"#.to_vec())
        );
        let draining = health_response(Phase::Draining);
        assert_eq!(
            (draining.status, draining.body),
            (503, br#"{"status":"draining"}"#.to_vec())
        );
    }
}
