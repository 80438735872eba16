//! The dispatcher hands out request slots to connections: immediately in a
//! closed loop, or at scheduled times in an open loop.
//!
//! Open loop: slot `i` is scheduled at `start + i / rate` (uniform arrivals).
//! Connections claim slots in order whenever they have room, so a slot whose
//! time has passed while every connection was busy is sent late, and its
//! latency still counts from its scheduled time: queueing is measured, not
//! omitted. Invariants: each slot is claimed at most once; a slot is measured
//! iff its intended time is at or after the end of the warm-up; every measured
//! open-loop slot that is never sent is counted by `unsent`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The highest open-loop rate accepted, in requests per second.
pub const RATE_PER_SECOND_MAX: f64 = 10_000_000.0;
/// Nanoseconds in a second.
const NANOSECONDS_PER_SECOND: f64 = 1_000_000_000.0;

/// How requests are paced.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pacing {
    /// Every connection sends as soon as it has room (fixed concurrency).
    ClosedLoop,
    /// Requests are scheduled at a fixed rate (requests per second).
    OpenLoop { rate_per_second: f64 },
}

/// When the measured part of a run ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// After this long (the warm-up not included).
    Duration(Duration),
    /// After this many measured requests.
    Requests(u64),
}

/// One request to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    /// When the request should be sent; latency is measured from here.
    pub intended: Instant,
    /// Whether the request belongs to the measured part of the run.
    pub measured: bool,
}

/// The answer to a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// Send this slot (at its intended time).
    Slot(Slot),
    /// Nothing more to send.
    Exhausted,
}

/// Shared by every connection of a run.
#[derive(Debug)]
pub struct Dispatcher {
    pacing: Pacing,
    start: Instant,
    measure_start: Instant,
    limit: Limit,
    /// Open loop: the number of slots of the whole run (warm-up included).
    total_slots: u64,
    /// Open loop: slots before this index are warm-up.
    first_measured_slot: u64,
    /// Open loop: past this instant, slots are no longer sent.
    drain_deadline: Instant,
    next_index: AtomicU64,
    refused_after_drain: AtomicU64,
}

impl Dispatcher {
    /// A dispatcher whose schedule starts at `start`; requests before
    /// `start + warmup` are not measured. `drain_allowance` is how long past
    /// the end of the schedule late open-loop slots may still be sent.
    pub fn new(
        pacing: Pacing,
        limit: Limit,
        start: Instant,
        warmup: Duration,
        drain_allowance: Duration,
    ) -> Dispatcher {
        let measure_start = start + warmup;
        let (first_measured_slot, total_slots, schedule_end) = match pacing {
            Pacing::ClosedLoop => (0, 0, measure_start),
            Pacing::OpenLoop { rate_per_second } => {
                let first = first_slot_at_or_after(warmup, rate_per_second);
                let total = match limit {
                    Limit::Duration(duration) => {
                        first_slot_at_or_after(warmup + duration, rate_per_second)
                    }
                    Limit::Requests(count) => first.saturating_add(count),
                };
                (first, total, start + slot_offset(total, rate_per_second))
            }
        };
        Dispatcher {
            pacing,
            start,
            measure_start,
            limit,
            total_slots,
            first_measured_slot,
            drain_deadline: schedule_end + drain_allowance,
            next_index: AtomicU64::new(0),
            refused_after_drain: AtomicU64::new(0),
        }
    }

    /// When measuring starts.
    pub fn measure_start(&self) -> Instant {
        self.measure_start
    }

    /// The next slot for a connection that has room, at time `now`.
    pub fn claim(&self, now: Instant) -> Claim {
        match self.pacing {
            Pacing::ClosedLoop => self.claim_closed_loop(now),
            Pacing::OpenLoop { rate_per_second } => self.claim_open_loop(now, rate_per_second),
        }
    }

    /// Closed loop: send now, but never before the run starts.
    fn claim_closed_loop(&self, now: Instant) -> Claim {
        let intended = now.max(self.start);
        let measured = intended >= self.measure_start;
        let exhausted = match self.limit {
            Limit::Duration(duration) => intended >= self.measure_start + duration,
            Limit::Requests(count) => {
                measured && self.next_index.fetch_add(1, Ordering::Relaxed) >= count
            }
        };
        if exhausted {
            return Claim::Exhausted;
        }
        Claim::Slot(Slot { intended, measured })
    }

    fn claim_open_loop(&self, now: Instant, rate_per_second: f64) -> Claim {
        let index = self.next_index.fetch_add(1, Ordering::Relaxed);
        if index >= self.total_slots {
            return Claim::Exhausted;
        }
        let measured = index >= self.first_measured_slot;
        if now >= self.drain_deadline {
            if measured {
                self.refused_after_drain.fetch_add(1, Ordering::Relaxed);
            }
            return Claim::Exhausted;
        }
        Claim::Slot(Slot {
            intended: self.start + slot_offset(index, rate_per_second),
            measured,
        })
    }

    /// Open loop, once every connection has stopped: measured slots never
    /// sent (refused after the drain deadline, or never claimed at all).
    pub fn unsent(&self) -> u64 {
        if self.pacing == Pacing::ClosedLoop {
            return 0;
        }
        let claimed = self
            .next_index
            .load(Ordering::Relaxed)
            .min(self.total_slots);
        let never_claimed = self.total_slots - claimed.max(self.first_measured_slot);
        self.refused_after_drain.load(Ordering::Relaxed) + never_claimed
    }

    /// Open loop: measured slots in the schedule (`None` in closed loop).
    pub fn measured_slots(&self) -> Option<u64> {
        match self.pacing {
            Pacing::ClosedLoop => None,
            Pacing::OpenLoop { .. } => Some(self.total_slots - self.first_measured_slot),
        }
    }
}

/// The offset of slot `index` from the start of the schedule.
pub fn slot_offset(index: u64, rate_per_second: f64) -> Duration {
    Duration::from_nanos((index as f64 * NANOSECONDS_PER_SECOND / rate_per_second).round() as u64)
}

/// The smallest slot index whose offset is at or after `offset`.
pub fn first_slot_at_or_after(offset: Duration, rate_per_second: f64) -> u64 {
    let mut index = (offset.as_secs_f64() * rate_per_second).ceil() as u64;
    while slot_offset(index, rate_per_second) < offset {
        index += 1;
    }
    while index > 0 && slot_offset(index - 1, rate_per_second) >= offset {
        index -= 1;
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;

    const NO_DRAIN: Duration = Duration::from_secs(3600);

    fn slot(claim: Claim) -> Slot {
        match claim {
            Claim::Slot(slot) => slot,
            Claim::Exhausted => panic!("expected a slot"),
        }
    }

    #[test]
    fn open_loop_slots_are_evenly_spaced_and_warmup_is_not_measured() {
        let start = Instant::now();
        let rate = 1_000.0;
        let dispatcher = Dispatcher::new(
            Pacing::OpenLoop {
                rate_per_second: rate,
            },
            Limit::Duration(Duration::from_millis(100)),
            start,
            Duration::from_millis(10),
            NO_DRAIN,
        );
        assert_eq!(dispatcher.measured_slots(), Some(100));
        for index in 0..110u64 {
            let claimed = slot(dispatcher.claim(start));
            assert_eq!(
                claimed.intended,
                start + Duration::from_millis(index),
                "slot {index}"
            );
            assert_eq!(claimed.measured, index >= 10, "slot {index}");
        }
        assert_eq!(dispatcher.claim(start), Claim::Exhausted);
        assert_eq!(dispatcher.unsent(), 0);
    }

    #[test]
    fn open_loop_request_limit_counts_measured_slots_only() {
        let start = Instant::now();
        let dispatcher = Dispatcher::new(
            Pacing::OpenLoop {
                rate_per_second: 3.0,
            },
            Limit::Requests(5),
            start,
            Duration::from_secs(1),
            NO_DRAIN,
        );
        let slots: Vec<Slot> = (0..8).map(|_| slot(dispatcher.claim(start))).collect();
        assert_eq!(slots.iter().filter(|slot| slot.measured).count(), 5);
        assert_eq!(slots[3].intended, start + Duration::from_secs(1));
        assert!(slots[3].measured && !slots[2].measured);
        assert_eq!(dispatcher.claim(start), Claim::Exhausted);
    }

    #[test]
    fn slots_refused_after_the_drain_deadline_and_never_claimed_are_unsent() {
        let start = Instant::now();
        let dispatcher = Dispatcher::new(
            Pacing::OpenLoop {
                rate_per_second: 100.0,
            },
            Limit::Requests(10),
            start,
            Duration::ZERO,
            Duration::from_millis(50),
        );
        slot(dispatcher.claim(start));
        slot(dispatcher.claim(start));
        let too_late = start + Duration::from_millis(100 + 50);
        assert_eq!(dispatcher.claim(too_late), Claim::Exhausted);
        assert_eq!(dispatcher.unsent(), 8);
    }

    #[test]
    fn closed_loop_request_limit_hands_out_exactly_that_many_measured_slots() {
        let start = Instant::now();
        let dispatcher = Dispatcher::new(
            Pacing::ClosedLoop,
            Limit::Requests(3),
            start,
            Duration::ZERO,
            NO_DRAIN,
        );
        let now = start + Duration::from_millis(1);
        for _ in 0..3 {
            let claimed = slot(dispatcher.claim(now));
            assert!(claimed.measured);
            assert_eq!(claimed.intended, now);
        }
        assert_eq!(dispatcher.claim(now), Claim::Exhausted);
        assert_eq!(dispatcher.unsent(), 0);
    }

    #[test]
    fn closed_loop_slots_claimed_before_the_start_wait_for_it() {
        let start = Instant::now() + Duration::from_millis(20);
        let dispatcher = Dispatcher::new(
            Pacing::ClosedLoop,
            Limit::Requests(1),
            start,
            Duration::ZERO,
            NO_DRAIN,
        );
        let early = slot(dispatcher.claim(start - Duration::from_millis(10)));
        assert_eq!(
            early,
            Slot {
                intended: start,
                measured: true
            }
        );
        assert_eq!(dispatcher.claim(start), Claim::Exhausted);
    }

    #[test]
    fn closed_loop_duration_measures_after_warmup_and_stops_at_deadline() {
        let start = Instant::now();
        let dispatcher = Dispatcher::new(
            Pacing::ClosedLoop,
            Limit::Duration(Duration::from_secs(1)),
            start,
            Duration::from_secs(1),
            NO_DRAIN,
        );
        assert!(!slot(dispatcher.claim(start)).measured);
        assert!(slot(dispatcher.claim(start + Duration::from_secs(1))).measured);
        assert_eq!(
            dispatcher.claim(start + Duration::from_secs(2)),
            Claim::Exhausted
        );
    }

    #[test]
    fn first_slot_rounding_is_consistent_with_offsets() {
        for rate in [1.0, 3.0, 7.0, 1_000.0, 33_333.0] {
            for millis in [0u64, 1, 10, 333, 1_000] {
                let offset = Duration::from_millis(millis);
                let index = first_slot_at_or_after(offset, rate);
                assert!(
                    slot_offset(index, rate) >= offset,
                    "rate {rate} offset {millis}"
                );
                assert!(
                    index == 0 || slot_offset(index - 1, rate) < offset,
                    "rate {rate} offset {millis}"
                );
            }
        }
    }
}
