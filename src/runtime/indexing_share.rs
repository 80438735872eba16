//! The share of a busy CPU that indexing keeps (`--indexing-cpu-share`): while searches keep
//! every executor busy, each core's indexing and analysis threads get this percentage of the
//! CPU they share with it, and the executor's indexing queue gets the same share of the
//! executor's own time.
//!
//! How: the kernel's fair scheduler gives two runnable threads of one CPU time in proportion
//! to the weights of their nice values. An executor runs at nice 0 (weight 1024), so a thread
//! of weight `w` gets `w / (w + 1024)` of the CPU when both want it; the threads that index are
//! set to the nice value whose share comes closest to the one asked for
//! ([`IndexingShare::nice`]). An idle executor still leaves the whole CPU to indexing. The
//! executor's task queues split its own time the same way ([`IndexingShare::queue_shares`]).
//!
//! Why a nice value and not a share the server would enforce itself: the weights are the
//! kernel's in every version, and a thread may raise its own nice value without privileges,
//! which is also why the share stops at [`INDEXING_SHARE_MAX_PERCENT`] (nice 0, the executor's
//! own weight: going below would need `CAP_SYS_NICE`).
//!
//! Invariant: the share is fixed at start; every thread that indexes is set up with the same
//! nice value.

/// The kernel's weights of nice 0 to 19 (`sched_prio_to_weight`), fixed since Linux 2.6.23.
const NICE_WEIGHTS: [u32; 20] = [
    1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87, 70, 56, 45, 36, 29, 23, 18, 15,
];
/// The weight of an executor thread (nice 0).
const EXECUTOR_WEIGHT: u32 = 1024;
/// The shares glommio gives the executor's default (serving) queue.
const SERVING_QUEUE_SHARES: usize = 1000;

/// The smallest share `--indexing-cpu-share` takes, in percent (nice 19's weight gives 1.4 %).
pub const INDEXING_SHARE_MIN_PERCENT: u8 = 1;
/// The largest share, in percent: nice 0, even with the executor.
pub const INDEXING_SHARE_MAX_PERCENT: u8 = 50;
/// The default share, in percent: under a search load that keeps every CPU busy, indexing
/// keeps a tenth of each (nice 10). At that share searches kept their p99 within 1.1× of idle
/// while writes arrived (`tuning/results/search-under-writes-*`); a larger share makes writes
/// visible sooner under such a load and costs searches about as much CPU
/// (`tuning/results/fair-share-2026-11-28.md`).
pub const INDEXING_SHARE_DEFAULT_PERCENT: u8 = 10;

/// What percentage of a busy CPU indexing keeps, and the scheduler slice its threads ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexingShare {
    percent: u8,
    /// `None`: the kernel's default slice (as on a kernel before 6.12, which ignores the
    /// request).
    scheduler_slice: Option<std::time::Duration>,
}

impl Default for IndexingShare {
    fn default() -> Self {
        IndexingShare::percent(INDEXING_SHARE_DEFAULT_PERCENT)
    }
}

impl IndexingShare {
    /// `percent` of a busy CPU, clamped to
    /// [`INDEXING_SHARE_MIN_PERCENT`]..=[`INDEXING_SHARE_MAX_PERCENT`].
    pub fn percent(percent: u8) -> IndexingShare {
        IndexingShare {
            percent: percent.clamp(INDEXING_SHARE_MIN_PERCENT, INDEXING_SHARE_MAX_PERCENT),
            scheduler_slice: Some(super::indexing_priority::SCHEDULER_SLICE),
        }
    }

    /// The same share, its threads asking the kernel for `slice` (`None`: its default).
    pub fn with_scheduler_slice(self, slice: Option<std::time::Duration>) -> IndexingShare {
        IndexingShare {
            scheduler_slice: slice,
            ..self
        }
    }

    /// The scheduler slice the threads that index ask for (`None`: the kernel's default).
    pub fn scheduler_slice(self) -> Option<std::time::Duration> {
        self.scheduler_slice
    }

    /// The share asked for, in percent.
    pub fn as_percent(self) -> u8 {
        self.percent
    }

    /// The nice value whose weight gives the threads that index the share closest to this
    /// one beside an executor.
    pub fn nice(self) -> i32 {
        let wanted = f64::from(self.percent) / 100.0;
        let (nice, _) = NICE_WEIGHTS
            .iter()
            .enumerate()
            .map(|(nice, &weight)| (nice, (share_of(weight) - wanted).abs()))
            .fold((0, f64::INFINITY), |best, candidate| {
                if candidate.1 < best.1 {
                    candidate
                } else {
                    best
                }
            });
        i32::try_from(nice).unwrap_or(0)
    }

    /// The share, in percent, that [`Self::nice`] gives (what the kernel actually grants).
    pub fn granted_percent(self) -> f64 {
        let nice = usize::try_from(self.nice()).unwrap_or(0);
        share_of(NICE_WEIGHTS[nice]) * 100.0
    }

    /// The glommio shares of the executor's indexing queue, beside the serving queue's
    /// default: the same split of the executor's own time.
    pub fn queue_shares(self) -> usize {
        let percent = usize::from(self.percent);
        (SERVING_QUEUE_SHARES * percent / (100 - percent)).max(1)
    }
}

/// The share of a CPU a thread of `weight` gets beside a busy executor.
fn share_of(weight: u32) -> f64 {
    f64::from(weight) / f64::from(weight + EXECUTOR_WEIGHT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_share_is_nice_ten_and_a_tenth_of_the_executor_queue() {
        let share = IndexingShare::default();
        assert_eq!(share.nice(), 10);
        assert_eq!(share.queue_shares(), 111);
        assert!((share.granted_percent() - 9.7).abs() < 0.1);
    }

    #[test]
    fn shares_map_to_the_nearest_nice_and_are_clamped() {
        assert_eq!(IndexingShare::percent(25).nice(), 5);
        assert_eq!(IndexingShare::percent(33).nice(), 3);
        assert_eq!(IndexingShare::percent(50).nice(), 0);
        assert_eq!(
            IndexingShare::percent(90).as_percent(),
            50,
            "clamped to nice 0"
        );
        assert_eq!(IndexingShare::percent(0).nice(), 19);
        assert_eq!(IndexingShare::percent(50).queue_shares(), 1000);
    }

    #[test]
    fn a_larger_share_never_maps_to_a_larger_nice() {
        let nices: Vec<i32> = (INDEXING_SHARE_MIN_PERCENT..=INDEXING_SHARE_MAX_PERCENT)
            .map(|percent| IndexingShare::percent(percent).nice())
            .collect();
        assert!(nices.windows(2).all(|pair| pair[0] >= pair[1]), "{nices:?}");
    }
}
