//! The time requests spend in the core mesh, as this core measures it for the requests it
//! sends: from the send to the reply's arrival, less the time the peer spent between
//! receiving the request and sending the reply (its work). What is left is the crossing
//! both ways: the channels, and the wait until each side's receive loop ran.
//!
//! Recorded into this core's own histogram (a thread-local, no atomics, no lock) only while
//! recording is switched on ([`set_recording`], which the control plane follows from the
//! `metrics` experimental feature on every core); a scrape copies it ([`round_trips`]).

use std::cell::{Cell, RefCell};
use std::time::Duration;

use crate::histogram::Histogram;

/// Bucket bounds of the round trips, in seconds: the crossing of an idle mesh takes
/// microseconds, a busy core's receive loop may take milliseconds to run.
pub const MESH_ROUND_TRIP_BOUNDS_SECONDS: [f64; 13] = [
    0.000_01, 0.000_025, 0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025,
    0.05, 0.1,
];

thread_local! {
    /// Whether this core records round trips.
    static RECORDING: Cell<bool> = const { Cell::new(false) };
    /// This core's round trips since it started.
    static ROUND_TRIPS: RefCell<Histogram> =
        RefCell::new(Histogram::new(&MESH_ROUND_TRIP_BOUNDS_SECONDS));
}

/// Switches this core's recording on or off.
pub fn set_recording(recording: bool) {
    RECORDING.with(|cell| cell.set(recording));
}

/// Whether this core records round trips now.
pub fn is_recording() -> bool {
    RECORDING.with(Cell::get)
}

/// Counts one round trip of `total` of which the peer worked `handled`.
pub fn record_round_trip(total: Duration, handled: Duration) {
    let crossing = total.saturating_sub(handled);
    ROUND_TRIPS.with(|histogram| histogram.borrow_mut().observe(crossing.as_secs_f64()));
}

/// A copy of this core's round trips.
pub fn round_trips() -> Histogram {
    ROUND_TRIPS.with(|histogram| histogram.borrow().clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_peers_work_is_left_out_of_a_round_trip() {
        let before = round_trips().count();
        record_round_trip(Duration::from_millis(30), Duration::from_millis(29));
        let after = round_trips();
        assert_eq!(after.count(), before + 1);
        // 1 ms of crossing: in the 1 ms bucket, not the 50 ms one.
        let bucket = MESH_ROUND_TRIP_BOUNDS_SECONDS
            .iter()
            .position(|bound| *bound >= 0.001)
            .expect("a 1 ms bucket");
        assert!(after.cumulative_counts()[bucket] > 0);
    }
}
