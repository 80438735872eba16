//! Pacing: while the executor that shares a thread's CPU is serving requests, a thread that
//! indexes keeps only its share of that CPU, by sleeping; the rest of the time it runs as any
//! other thread of its nice value.
//!
//! Why not a lower nice value alone: a nice value ranks a thread against every thread of the
//! host, not only against the executor it shares a CPU with. At nice 10 an indexing thread got
//! a tenth of a CPU that another process kept busy, and indexing beside two busy processes
//! took 19 times as long as on a quiet host, against twice as long for Meilisearch, whose
//! indexing threads run at nice 0 (issue #70). The threads that index now run at nice 0 and
//! give way only to their own executor, which is what the share was meant for.
//!
//! How: a [`Contention`] tells whether the executor is serving right now (on one CPU, a thread
//! that runs while the executor is in the middle of a request holds the CPU the executor waits
//! for). While it is, the thread earns `share` of the wall time as credit and spends its own
//! CPU time; once the credit runs out it sleeps until the credit is back at zero, in steps of
//! at most [`SLEEP_STEP_MAX`], checking between steps that the executor still serves. When the
//! executor is not serving, the credit is full ([`CREDIT_MAX`]) and nothing sleeps.
//!
//! Invariants:
//! - the credit never exceeds [`CREDIT_MAX`], so a thread that was free to run enters a
//!   serving period with at most that much CPU time before it paces;
//! - while the executor serves without pause, the thread's CPU time over any interval is at
//!   most `share` of the interval's wall time plus [`CREDIT_MAX`] and one check's work;
//! - a sleep ends within [`SLEEP_STEP_MAX`] of the executor going idle.

use std::time::{Duration, Instant};

/// The most CPU time a thread may use at once when the executor starts serving.
pub const CREDIT_MAX: Duration = Duration::from_micros(100);

/// The longest single sleep; the contention is checked again after each.
pub const SLEEP_STEP_MAX: Duration = Duration::from_millis(1);

/// The shortest sleep worth a context switch: a smaller debt is carried to the next check.
pub const SLEEP_STEP_MIN: Duration = Duration::from_micros(10);

/// How often a thread that takes turns looks at the contention and its CPU time: reading the
/// thread's CPU clock is a system call (about a third of a microsecond), so a check every
/// fiftieth of a millisecond costs under 1 %.
pub const PACE_CHECK_INTERVAL: Duration = Duration::from_micros(50);

/// The calling thread's CPU time (zero if the kernel does not tell).
pub fn thread_cpu_time() -> Duration {
    let mut time = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `time` is a valid timespec that the call writes and nothing else; the clock is
    // the calling thread's, which exists for the call's whole duration.
    let outcome = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut time) };
    if outcome != 0 {
        return Duration::ZERO;
    }
    let seconds = u64::try_from(time.tv_sec).unwrap_or(0);
    let nanoseconds = u32::try_from(time.tv_nsec).unwrap_or(0);
    Duration::new(seconds, nanoseconds)
}

/// What a paced thread reads about its CPU.
pub trait Contention {
    /// Whether the executor that shares this thread's CPU is serving requests right now.
    fn is_contended(&self) -> bool;

    /// The CPU time the calling thread has used since it started.
    fn thread_cpu_time(&self) -> Duration;
}

/// A thread's pacing state: its share and its credit.
#[derive(Debug, Clone)]
pub struct Pacer {
    /// The share of a contended CPU the thread keeps, in (0, 1].
    share: f64,
    /// CPU time the thread may still use before it sleeps, in seconds (negative: owed).
    credit_seconds: f64,
    /// The wall time and thread CPU time of the last contended check.
    last: Option<(Instant, Duration)>,
}

impl Pacer {
    /// A pacer keeping `percent` of a contended CPU (clamped to 1–100).
    pub fn percent(percent: u8) -> Pacer {
        let percent = percent.clamp(1, 100);
        Pacer {
            share: f64::from(percent) / 100.0,
            credit_seconds: CREDIT_MAX.as_secs_f64(),
            last: None,
        }
    }

    /// The share kept, in (0, 1].
    pub fn share(&self) -> f64 {
        self.share
    }

    /// The executor is not serving: the thread may use the whole CPU, and its credit is full.
    pub fn release(&mut self) {
        self.credit_seconds = CREDIT_MAX.as_secs_f64();
        self.last = None;
    }

    /// The executor is serving: charges the CPU time used since the last contended check
    /// against the share of the wall time since then, and answers how long to sleep before
    /// the credit is back at zero (`None`: the credit is not spent).
    pub fn charge(&mut self, now: Instant, cpu: Duration) -> Option<Duration> {
        if let Some((last_wall, last_cpu)) = self.last {
            let wall = now.saturating_duration_since(last_wall).as_secs_f64();
            let used = cpu.saturating_sub(last_cpu).as_secs_f64();
            self.credit_seconds =
                (self.credit_seconds + self.share * wall - used).min(CREDIT_MAX.as_secs_f64());
        }
        self.last = Some((now, cpu));
        debug_assert!(
            self.credit_seconds <= CREDIT_MAX.as_secs_f64(),
            "the credit is bounded"
        );
        let owed = Duration::from_secs_f64((-self.credit_seconds / self.share).max(0.0));
        (owed >= SLEEP_STEP_MIN).then(|| owed.min(SLEEP_STEP_MAX))
    }
}

/// Paces the calling thread once: while `contention` says the executor serves and the credit
/// is spent, sleeps in steps. Answers whether the thread slept.
pub fn pace(pacer: &mut Pacer, contention: &dyn Contention) -> bool {
    let mut slept = false;
    loop {
        if !contention.is_contended() {
            pacer.release();
            return slept;
        }
        let Some(sleep) = pacer.charge(Instant::now(), contention.thread_cpu_time()) else {
            return slept;
        };
        std::thread::sleep(sleep);
        slept = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn micros(micros: u64) -> Duration {
        Duration::from_micros(micros)
    }

    #[test]
    fn a_thread_running_flat_out_beside_a_serving_executor_sleeps_nine_tenths_at_a_tenth() {
        let mut pacer = Pacer::percent(10);
        let start = Instant::now();
        assert_eq!(
            pacer.charge(start, micros(0)),
            None,
            "the first check sets the clocks"
        );
        // 100 µs of CPU in 100 µs: the credit (100 µs) is spent less the tenth earned (10 µs).
        assert_eq!(pacer.charge(start + micros(100), micros(100)), None);
        // 200 µs more of CPU: 10 µs - 200 µs + 20 µs = -170 µs → sleep 1,700 µs, one step.
        let sleep = pacer.charge(start + micros(300), micros(300));
        assert_eq!(sleep, Some(SLEEP_STEP_MAX));
        // After a step of 1 ms with no CPU used: -170 + 100 = -70 µs → 700 µs more.
        let sleep = pacer.charge(start + micros(1_300), micros(300));
        let sleep = sleep.expect("still owing");
        assert!((sleep.as_secs_f64() - 0.000_7).abs() < 1e-9, "{sleep:?}");
        // Once it has slept that long, the credit is back at zero.
        assert_eq!(pacer.charge(start + micros(2_000), micros(300)), None);
        // A debt smaller than the shortest sleep is carried, not slept.
        assert_eq!(
            pacer.charge(start + micros(2_000), micros(300) + micros(0)),
            None
        );
        assert_eq!(pacer.charge(start + micros(2_001), micros(301)), None);
    }

    #[test]
    fn the_share_holds_over_a_long_serving_period() {
        for percent in [5_u8, 10, 25, 50] {
            let mut pacer = Pacer::percent(percent);
            let start = Instant::now();
            let (mut wall, mut cpu) = (Duration::ZERO, Duration::ZERO);
            pacer.charge(start, cpu);
            // Run 50 µs per check, sleep when told: a simulated second.
            while wall < Duration::from_secs(1) {
                wall += PACE_CHECK_INTERVAL;
                cpu += PACE_CHECK_INTERVAL;
                while let Some(sleep) = pacer.charge(start + wall, cpu) {
                    wall += sleep;
                }
            }
            let kept = cpu.as_secs_f64() / wall.as_secs_f64();
            let wanted = f64::from(percent) / 100.0;
            assert!(
                (kept - wanted).abs() < 0.01,
                "{percent} %: kept {kept:.4} of the CPU"
            );
        }
    }

    #[test]
    fn the_thread_cpu_clock_moves_with_work() {
        let before = thread_cpu_time();
        let mut sum = 0_u64;
        for value in 0..5_000_000_u64 {
            sum = sum.wrapping_add(std::hint::black_box(value));
        }
        std::hint::black_box(sum);
        assert!(thread_cpu_time() > before);
    }

    #[test]
    fn a_released_thread_starts_the_next_serving_period_with_full_credit_only() {
        let mut pacer = Pacer::percent(10);
        let start = Instant::now();
        pacer.charge(start, micros(0));
        assert!(pacer.charge(start + micros(500), micros(500)).is_some());
        pacer.release();
        // A long free run earns nothing beyond the bound.
        pacer.charge(start + micros(10_000), micros(10_000));
        assert_eq!(pacer.charge(start + micros(10_090), micros(10_090)), None);
        assert!(
            pacer
                .charge(start + micros(10_120), micros(10_120))
                .is_some(),
            "the bounded credit (100 µs) is spent after 111 µs of running"
        );
    }

    /// A contention that serves for a number of checks, with a CPU clock that does not move.
    struct ServingFor(std::cell::Cell<u32>);

    impl Contention for ServingFor {
        fn is_contended(&self) -> bool {
            let left = self.0.get();
            self.0.set(left.saturating_sub(1));
            left > 0
        }

        fn thread_cpu_time(&self) -> Duration {
            Duration::ZERO
        }
    }

    #[test]
    fn pacing_stops_sleeping_once_the_executor_stops_serving() {
        let mut pacer = Pacer::percent(1);
        // Owe a lot: 10 ms of CPU at 1 % is a second of sleep.
        let start = Instant::now();
        pacer.charge(start, micros(0));
        pacer.charge(start, micros(10_000));
        let began = Instant::now();
        let slept = pace(&mut pacer, &ServingFor(std::cell::Cell::new(3)));
        assert!(slept);
        assert!(
            began.elapsed() < Duration::from_millis(200),
            "a few steps, not the whole debt: {:?}",
            began.elapsed()
        );
        assert!(!pace(&mut pacer, &ServingFor(std::cell::Cell::new(0))));
    }
}
