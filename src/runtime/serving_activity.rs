//! Whether each CPU's executor is serving requests right now: what the threads that index on
//! that CPU give way to (see `turns::pace`).
//!
//! An executor marks itself serving while it polls a connection's task or a serving request
//! from another core ([`Serving`]), and notes when it last did. The indexing and analysis
//! threads pinned to the same CPU read it: on one CPU, a thread that runs while the executor
//! is in the middle of a poll holds the CPU the executor waits for. A poll that just ended
//! counts for [`SERVING_MEMORY`] more, so that the moments between two requests of a busy
//! executor (its own scheduling, reaping the ring) do not read as idle.
//!
//! While a write has waited past the write visibility target (`--write-visibility-target-seconds`,
//! see `tasks::visibility_target`), its batch is overdue ([`set_writes_overdue`]) and no
//! CPU reads as contended: the threads that index stop pacing and take an even split of each
//! CPU with its executor until the batch ends.
//!
//! Invariants:
//! - only the executor pinned to a CPU writes that CPU's slot (its thread-local [`SERVING_CPU`]
//!   names it); every thread may read it;
//! - the depth counts nested polls, so it is zero exactly when no serving poll is running;
//! - CPUs at or past [`CPU_SLOTS`] have no slot: their executors are never seen serving.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// CPUs with a slot: the kernel's `CPU_SETSIZE`, the most a CPU set names.
pub const CPU_SLOTS: usize = 1024;

/// How long after a serving poll its executor still counts as serving.
pub const SERVING_MEMORY: Duration = Duration::from_micros(200);

/// One CPU's executor, as its CPU's other threads see it. A cache line of its own: the
/// executor writes it on every poll.
#[repr(align(64))]
struct CpuActivity {
    /// Serving polls running (nested ones each count).
    depth: AtomicU32,
    /// When the last serving poll ended, in nanoseconds since [`epoch`] (0: never).
    last_served_nanos: AtomicU64,
}

/// Every CPU's slot.
static ACTIVITY: [CpuActivity; CPU_SLOTS] = [const {
    CpuActivity {
        depth: AtomicU32::new(0),
        last_served_nanos: AtomicU64::new(0),
    }
}; CPU_SLOTS];

/// Whether the batch being processed holds a write past the visibility target.
static WRITES_OVERDUE: AtomicBool = AtomicBool::new(false);

/// Marks the batch being processed overdue (or no longer): see the module's docs.
pub fn set_writes_overdue(overdue: bool) {
    WRITES_OVERDUE.store(overdue, Ordering::Relaxed);
}

/// Whether the batch being processed holds a write past the visibility target.
pub fn writes_overdue() -> bool {
    WRITES_OVERDUE.load(Ordering::Relaxed)
}

thread_local! {
    /// The CPU whose slot this thread writes: set on an executor pinned to it.
    static SERVING_CPU: Cell<Option<usize>> = const { Cell::new(None) };
}

/// The instant the activity clocks count from.
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Nanoseconds since [`epoch`], at least 1 (0 means never).
fn nanos_since_epoch(now: Instant) -> u64 {
    u64::try_from(now.saturating_duration_since(epoch()).as_nanos())
        .unwrap_or(u64::MAX)
        .max(1)
}

/// Makes the calling thread (an executor pinned to `cpu`) the writer of `cpu`'s slot.
pub fn serve_on_cpu(cpu: usize) {
    epoch();
    SERVING_CPU.with(|slot| slot.set((cpu < CPU_SLOTS).then_some(cpu)));
}

/// Whether `cpu`'s executor is polling serving work, or did within [`SERVING_MEMORY`].
pub fn is_serving(cpu: usize) -> bool {
    let Some(activity) = ACTIVITY.get(cpu) else {
        return false;
    };
    if activity.depth.load(Ordering::Relaxed) > 0 {
        return true;
    }
    let last = activity.last_served_nanos.load(Ordering::Relaxed);
    last != 0 && nanos_since_epoch(Instant::now()).saturating_sub(last) < nanos(SERVING_MEMORY)
}

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

/// Marks the calling executor's CPU serving until dropped.
struct ServingPoll {
    cpu: usize,
}

impl ServingPoll {
    /// `None` on a thread that writes no slot (a test's bare executor, a helper thread).
    fn enter() -> Option<ServingPoll> {
        let cpu = SERVING_CPU.with(Cell::get)?;
        ACTIVITY[cpu].depth.fetch_add(1, Ordering::Relaxed);
        Some(ServingPoll { cpu })
    }
}

impl Drop for ServingPoll {
    fn drop(&mut self) {
        let activity = &ACTIVITY[self.cpu];
        activity
            .last_served_nanos
            .store(nanos_since_epoch(Instant::now()), Ordering::Relaxed);
        let before = activity.depth.fetch_sub(1, Ordering::Relaxed);
        debug_assert!(before > 0, "a serving poll ends after it began");
    }
}

/// A future whose polls count as serving on the executor's CPU.
pub struct Serving<Inner> {
    inner: Pin<Box<Inner>>,
}

/// Wraps `inner` so that its polls count as serving.
pub fn serving<Inner: Future>(inner: Inner) -> Serving<Inner> {
    Serving {
        inner: Box::pin(inner),
    }
}

impl<Inner: Future> Future for Serving<Inner> {
    type Output = Inner::Output;

    fn poll(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Self::Output> {
        let _serving = ServingPoll::enter();
        self.inner.as_mut().poll(context)
    }
}

/// The contention a thread pinned to `cpu` paces against: that CPU's executor serving,
/// unless the writes being indexed are overdue.
pub struct CpuContention {
    pub cpu: usize,
}

impl turns::Contention for CpuContention {
    fn is_contended(&self) -> bool {
        is_serving(self.cpu) && !writes_overdue()
    }

    fn thread_cpu_time(&self) -> Duration {
        turns::pace::thread_cpu_time()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CPU number no test executor uses, so that tests running at once do not meet.
    const TEST_CPU: usize = CPU_SLOTS - 1;

    #[test]
    fn a_serving_poll_marks_its_cpu_while_it_runs_and_not_once_the_memory_has_passed() {
        let seen_inside = std::thread::spawn(|| {
            serve_on_cpu(TEST_CPU);
            let mut inside = None;
            let mut future = serving(async {
                inside = Some(is_serving(TEST_CPU));
            });
            let waker = std::task::Waker::noop();
            let mut context = Context::from_waker(waker);
            assert!(Pin::new(&mut future).poll(&mut context).is_ready());
            drop(future);
            inside
        })
        .join()
        .expect("the thread ends");
        assert_eq!(seen_inside, Some(true), "serving while polled");
        assert_eq!(ACTIVITY[TEST_CPU].depth.load(Ordering::Relaxed), 0);
        // Just after the poll it still counts; once the memory has passed it does not.
        std::thread::sleep(SERVING_MEMORY + Duration::from_millis(2));
        assert!(!is_serving(TEST_CPU), "idle once the memory has passed");
    }

    #[test]
    fn a_thread_that_writes_no_slot_marks_nothing_and_unknown_cpus_are_idle() {
        let mut future = serving(async { 7 });
        let mut context = Context::from_waker(std::task::Waker::noop());
        assert_eq!(Pin::new(&mut future).poll(&mut context), Poll::Ready(7));
        assert!(!is_serving(CPU_SLOTS));
        assert!(!is_serving(usize::MAX));
    }
}
