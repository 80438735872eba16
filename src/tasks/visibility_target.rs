//! The write visibility target (`--write-visibility-target-seconds`): once the oldest task of
//! the index batch being processed has waited that long since its registration, the batch is
//! overdue, and the threads that index stop giving way to searches until it ends (see
//! `runtime::serving_activity`).
//!
//! Why: under a full search load, indexing keeps `--indexing-cpu-share` of each CPU, so a large
//! write can wait minutes before searches see it. The target bounds how long it stays at that
//! share; past it, the batch takes an even split of each CPU with the searches, the most
//! the kernel gives one of two busy threads. It is a target, not a guarantee: a batch that
//! needs more than the even split for longer than the target still ends late, and
//! `coresearch_write_visibility_seconds` shows by how much.
//!
//! Invariants:
//! - at most one watch is alive at a time (the scheduler processes one batch at a time), and
//!   the overdue mark is cleared when it is dropped, whatever the batch's outcome;
//! - a watch's timer that fires after its watch was dropped marks nothing.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use time::OffsetDateTime;

use super::model::Task;
use crate::runtime::serving_activity::set_writes_overdue;

/// Keeps the overdue mark of one batch: set once its oldest task has waited the target,
/// cleared when dropped.
pub struct OverdueWatch {
    /// Whether the watch was dropped (its timer must then mark nothing).
    ended: Rc<Cell<bool>>,
}

impl OverdueWatch {
    /// Watches the index batch of `tasks` against `target` (`None`: no target, no watch).
    pub fn for_batch(target: Option<Duration>, tasks: &[Task]) -> Option<OverdueWatch> {
        let target = target?;
        let oldest = tasks.iter().map(|task| task.enqueued_at).min()?;
        Some(OverdueWatch::start(
            oldest,
            target,
            OffsetDateTime::now_utc(),
        ))
    }

    /// Watches a batch whose oldest task was registered at `oldest_enqueued_at`, with the
    /// target `target`: overdue at once if it has waited that long already, else when it has.
    pub fn start(
        oldest_enqueued_at: OffsetDateTime,
        target: Duration,
        now: OffsetDateTime,
    ) -> OverdueWatch {
        let ended = Rc::new(Cell::new(false));
        let left = time_left(oldest_enqueued_at, target, now);
        if left.is_zero() {
            mark_overdue();
        } else {
            let ended = ended.clone();
            crate::runtime::task::spawn_detached(async move {
                crate::runtime::task::sleep(left).await;
                if !ended.get() {
                    mark_overdue();
                }
            });
        }
        OverdueWatch { ended }
    }
}

impl Drop for OverdueWatch {
    fn drop(&mut self) {
        self.ended.set(true);
        set_writes_overdue(false);
    }
}

fn mark_overdue() {
    tracing::info!("the batch's oldest write passed the visibility target: indexing stops pacing");
    set_writes_overdue(true);
}

/// How long a task registered at `enqueued_at` may still wait before it has waited `target`
/// at `now` (zero: it has).
pub fn time_left(enqueued_at: OffsetDateTime, target: Duration, now: OffsetDateTime) -> Duration {
    let waited = Duration::try_from(now - enqueued_at).unwrap_or(Duration::ZERO);
    target.saturating_sub(waited)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::serving_activity::{CpuContention, writes_overdue};

    #[test]
    fn the_time_left_counts_from_the_registration_and_never_goes_below_zero() {
        let now = OffsetDateTime::now_utc();
        let target = Duration::from_secs(30);
        assert_eq!(
            time_left(now - Duration::from_secs(10), target, now),
            Duration::from_secs(20)
        );
        assert_eq!(
            time_left(now - Duration::from_secs(45), target, now),
            Duration::ZERO
        );
        // A registration after `now` (clocks of two cores) waits the whole target.
        assert_eq!(time_left(now + Duration::from_secs(1), target, now), target);
    }

    /// The only test that sets the process-wide mark, so that tests running at once do not
    /// see each other's.
    #[test]
    fn a_batch_is_overdue_once_its_oldest_write_waited_the_target_and_until_it_ends() {
        use turns::Contention;
        crate::runtime::task::run_on_test_core(|| async {
            let now = OffsetDateTime::now_utc();
            let target = Duration::from_millis(50);
            // Waited longer than the target already: overdue at once.
            let late = OverdueWatch::start(now - Duration::from_secs(1), target, now);
            assert!(writes_overdue());
            // An overdue batch is never a contention, even on a serving CPU.
            let contention = CpuContention { cpu: 0 };
            assert!(!contention.is_contended());
            drop(late);
            assert!(!writes_overdue(), "cleared when the batch ends");

            // Registered just now: overdue once the target has passed.
            let watch = OverdueWatch::start(now, target, now);
            assert!(!writes_overdue());
            crate::runtime::task::sleep(Duration::from_millis(120)).await;
            assert!(writes_overdue(), "the timer marked it");
            drop(watch);
            assert!(!writes_overdue());

            // A batch that ends before the target leaves nothing behind.
            let quick = OverdueWatch::start(OffsetDateTime::now_utc(), target, now);
            drop(quick);
            crate::runtime::task::sleep(Duration::from_millis(120)).await;
            assert!(!writes_overdue(), "a dropped watch's timer marks nothing");
        });
    }
}
