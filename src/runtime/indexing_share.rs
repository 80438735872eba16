//! The share of a busy CPU that indexing keeps (`--indexing-cpu-share`): while searches keep
//! every executor busy, each core's indexing and analysis threads get this percentage of the
//! CPU they share with it, and the executor's indexing queue gets the same share of the
//! executor's own time.
//!
//! How: the threads that index are paced (`turns::pace`, set up in
//! [`super::indexing_priority`]): while the executor of their CPU serves requests they earn
//! this share of the wall time as CPU credit and sleep once it is spent; while it does not,
//! they run freely. The executor's task queues split its own time the same way
//! ([`IndexingShare::queue_shares`]).
//!
//! Why pacing and not a nice value, as before: a nice value ranks the threads against every
//! thread of the host. At nice 10 (the old default) indexing beside two busy processes took 19
//! times as long as on a quiet host; the share is meant against the server's own searches only
//! (`tuning/results/fair-share-2026-11-29.md`).
//!
//! Why at most [`INDEXING_SHARE_MAX_PERCENT`]: two runnable threads of the same nice value split
//! a CPU evenly, so while the executor wants the whole CPU no pacing can give indexing more
//! than half of it.
//!
//! Invariant: the share is fixed at start; every thread that indexes is paced with it.

/// The shares glommio gives the executor's default (serving) queue.
const SERVING_QUEUE_SHARES: usize = 1000;

/// The smallest share `--indexing-cpu-share` takes, in percent.
pub const INDEXING_SHARE_MIN_PERCENT: u8 = 1;
/// The largest share, in percent: an even split with the executor.
pub const INDEXING_SHARE_MAX_PERCENT: u8 = 50;
/// The default share, in percent: under a search load that keeps every CPU busy, indexing
/// keeps a tenth of each. At that share searches kept their p99 within 1.1× of idle
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
    scheduling_policy: super::indexing_priority::SchedulingPolicy,
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
            scheduling_policy: super::indexing_priority::SchedulingPolicy::Batch,
        }
    }

    /// The same share, its threads asking the kernel for `slice` (`None`: its default).
    pub fn with_scheduler_slice(self, slice: Option<std::time::Duration>) -> IndexingShare {
        IndexingShare {
            scheduler_slice: slice,
            ..self
        }
    }

    /// The same share, its threads scheduled under `policy`.
    pub fn with_scheduling_policy(
        self,
        policy: super::indexing_priority::SchedulingPolicy,
    ) -> IndexingShare {
        IndexingShare {
            scheduling_policy: policy,
            ..self
        }
    }

    /// The kernel scheduling policy of the threads that index.
    pub fn scheduling_policy(self) -> super::indexing_priority::SchedulingPolicy {
        self.scheduling_policy
    }

    /// The scheduler slice the threads that index ask for (`None`: the kernel's default).
    pub fn scheduler_slice(self) -> Option<std::time::Duration> {
        self.scheduler_slice
    }

    /// The share asked for, in percent.
    pub fn as_percent(self) -> u8 {
        self.percent
    }

    /// The glommio shares of the executor's indexing queue, beside the serving queue's
    /// default: the same split of the executor's own time.
    pub fn queue_shares(self) -> usize {
        let percent = usize::from(self.percent);
        (SERVING_QUEUE_SHARES * percent / (100 - percent)).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_share_is_a_tenth_and_a_tenth_of_the_executor_queue() {
        let share = IndexingShare::default();
        assert_eq!(share.as_percent(), 10);
        assert_eq!(share.queue_shares(), 111);
    }

    #[test]
    fn shares_are_clamped_to_the_even_split() {
        assert_eq!(IndexingShare::percent(90).as_percent(), 50);
        assert_eq!(IndexingShare::percent(0).as_percent(), 1);
        assert_eq!(IndexingShare::percent(50).queue_shares(), 1000);
        assert_eq!(IndexingShare::percent(1).queue_shares(), 10);
    }
}
