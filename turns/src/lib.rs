//! Short turns for the threads that index: the long loops of a batch call [`checkpoint`], and a
//! thread that takes turns gives its CPU back there once it has run for [`TURN_LENGTH`]. A
//! paced thread also keeps only its share of its CPU there while the executor sharing that CPU
//! serves requests ([`pace`](mod@pace)).
//!
//! Why turns: the server's indexing threads run on the CPUs of the executors that
//! answer searches. The kernel gives them their share of a busy CPU in whole scheduler ticks
//! (4 ms on a kernel built with `HZ=250`): an executor that never sleeps is never woken, so
//! nothing preempts an indexing thread once it has the CPU before the next tick, and the
//! searches queued on that executor wait the whole time. Giving the CPU back every quarter of
//! a millisecond bounds that wait without changing the share: the thread, still runnable, gets
//! the CPU again when the scheduler's fairness says so.
//!
//! Why checks in the loops and not a timer signal: a timer signal every 125 µs made indexing
//! take half again as much CPU on this project's virtual machines (each timer interrupt exits
//! the VM), while a check costs one read of the monotonic clock (about 25 ns through the vDSO)
//! and a yield (about 0.6 µs) a turn.
//!
//! What cannot check itself is done in pieces that can: the sorts here check from their
//! comparison ([`sort_unstable`]); a large vector is filled in steps ([`filled_vec`]); loops
//! over millions of small elements check every [`ELEMENTS_PER_CHECK`] elements
//! ([`checkpoint_at`]).
//!
//! Where the checks go was measured, not guessed: a scratch build timed the thread CPU time
//! between consecutive checks under `search_under_writes` and named both ends of each
//! stretch over a millisecond. What still runs long is rare: the tokenizer's first use in a
//! process and the training of a document dictionary, which no check can cut
//! (`tuning/results/indexing-turns-2026-11-28.md`).
//!
//! Invariants:
//! - a thread takes turns only after [`take_turns_on_this_thread`] or
//!   [`take_paced_turns_on_this_thread`], and is paced only after the latter; on any other thread (an
//!   executor answering a search, a test) [`checkpoint`] does nothing but read a thread-local;
//! - a check is cheap next to the work between two checks: callers place it once per
//!   document, per key written or per word, or every [`ELEMENTS_PER_CHECK`] elements of a
//!   loop over small ones, never per byte.

pub mod pace;
mod sort;

pub use pace::{Contention, Pacer};
pub use sort::{sort_by, sort_unstable, sort_unstable_by};

use std::cell::{Cell, RefCell};
use std::time::{Duration, Instant};

/// How long a thread that takes turns runs before it gives its CPU back.
pub const TURN_LENGTH: Duration = Duration::from_micros(250);

/// How many elements a loop over small elements (a few nanoseconds each) handles between two
/// checks: a few microseconds of work, so the check's clock read costs about 1 %.
pub const ELEMENTS_PER_CHECK: usize = 1024;

/// A paced thread's pacer, what it reads and when it last looked.
struct Paced {
    pacer: Pacer,
    contention: Box<dyn Contention>,
    last_check: Instant,
}

thread_local! {
    /// When this thread's turn started, if it takes turns.
    static TURN_STARTED: Cell<Option<Instant>> = const { Cell::new(None) };
    /// This thread's pacing, if it is paced (see [`pace`]).
    static PACED: RefCell<Option<Paced>> = const { RefCell::new(None) };
}

/// Makes the calling thread take turns from now on.
pub fn take_turns_on_this_thread() {
    TURN_STARTED.with(|started| started.set(Some(Instant::now())));
}

/// Makes the calling thread take turns and keep `pacer`'s share of its CPU while
/// `contention` says the executor sharing it serves (see [`pace`]).
pub fn take_paced_turns_on_this_thread(pacer: Pacer, contention: Box<dyn Contention>) {
    PACED.with(|paced| {
        *paced.borrow_mut() = Some(Paced {
            pacer,
            contention,
            last_check: Instant::now(),
        });
    });
    take_turns_on_this_thread();
}

/// Whether the calling thread is paced.
pub fn is_paced() -> bool {
    PACED.with(|paced| paced.borrow().is_some())
}

/// Paces the calling thread if it is paced and its last check is [`pace::PACE_CHECK_INTERVAL`]
/// old; answers whether it slept.
fn pace_if_due(now: Instant) -> bool {
    PACED.with(|paced| {
        let mut paced = paced.borrow_mut();
        let Some(paced) = paced.as_mut() else {
            return false;
        };
        if now.saturating_duration_since(paced.last_check) < pace::PACE_CHECK_INTERVAL {
            return false;
        }
        paced.last_check = now;
        pace::pace(&mut paced.pacer, &*paced.contention)
    })
}

/// Starts a new turn for the calling thread, if it takes turns: a job that starts after the
/// thread waited for it has its whole turn.
pub fn start_turn() {
    TURN_STARTED.with(|started| {
        if started.get().is_some() {
            started.set(Some(Instant::now()));
        }
    });
}

/// Paces the calling thread if it is paced (it sleeps while its executor serves and its
/// share is spent), and gives the CPU back if it takes turns and its turn ran out.
#[inline]
pub fn checkpoint() {
    TURN_STARTED.with(|started| {
        let Some(turn_started) = started.get() else {
            return;
        };
        let now = Instant::now();
        if pace_if_due(now) {
            // It slept: the next turn starts now.
            started.set(Some(Instant::now()));
        } else if now.saturating_duration_since(turn_started) >= TURN_LENGTH {
            std::thread::yield_now();
            started.set(Some(Instant::now()));
        }
    });
}

/// [`checkpoint`] at the `index`th element of a loop over small elements: every
/// [`ELEMENTS_PER_CHECK`]th.
#[inline]
pub fn checkpoint_at(index: usize) {
    if index % ELEMENTS_PER_CHECK == ELEMENTS_PER_CHECK - 1 {
        checkpoint();
    }
}

/// Elements [`filled_vec`] writes between two checks: tens of pages for the elements it
/// fills (a first write to a page faults it in, a few microseconds on a virtual machine).
pub const FILL_ELEMENTS_PER_CHECK: usize = 4096;

/// A vector of `length` clones of `value`, filled in turns: a large fill is mostly the
/// kernel's page faults.
pub fn filled_vec<T: Clone>(length: usize, value: &T) -> Vec<T> {
    let mut filled = Vec::with_capacity(length);
    while filled.len() < length {
        let step = (length - filled.len()).min(FILL_ELEMENTS_PER_CHECK);
        filled.extend(std::iter::repeat_n(value, step).cloned());
        checkpoint();
    }
    filled
}

/// Whether the calling thread takes turns.
pub fn takes_turns() -> bool {
    TURN_STARTED.with(|started| started.get().is_some())
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::{
        FILL_ELEMENTS_PER_CHECK, TURN_LENGTH, checkpoint, filled_vec, start_turn,
        take_turns_on_this_thread, takes_turns,
    };

    #[test]
    fn a_vector_filled_in_turns_holds_what_the_macro_fills() {
        std::thread::spawn(|| {
            take_turns_on_this_thread();
            for length in [
                0,
                1,
                FILL_ELEMENTS_PER_CHECK,
                3 * FILL_ELEMENTS_PER_CHECK + 5,
            ] {
                let filled = filled_vec(length, &(7_u32, "seven".to_owned()));
                assert_eq!(filled, vec![(7_u32, "seven".to_owned()); length]);
            }
        })
        .join()
        .expect("the thread ends");
    }

    #[test]
    fn a_thread_takes_turns_only_once_asked() {
        std::thread::spawn(|| {
            assert!(!takes_turns());
            checkpoint();
            start_turn();
            assert!(
                !takes_turns(),
                "starting a turn does not make a thread take turns"
            );
            take_turns_on_this_thread();
            assert!(takes_turns());
        })
        .join()
        .expect("the thread ends");
    }

    #[test]
    fn a_turn_restarts_after_the_thread_gives_its_cpu_back() {
        std::thread::spawn(|| {
            take_turns_on_this_thread();
            let turn_started = super::TURN_STARTED.with(std::cell::Cell::get);
            let spin_until = Instant::now() + TURN_LENGTH + Duration::from_micros(50);
            while Instant::now() < spin_until {}
            checkpoint();
            let next_turn = super::TURN_STARTED.with(std::cell::Cell::get);
            assert!(
                next_turn > turn_started,
                "a checkpoint past the turn starts the next"
            );
            checkpoint();
            let same_turn = super::TURN_STARTED.with(std::cell::Cell::get);
            assert_eq!(
                same_turn, next_turn,
                "a checkpoint within the turn leaves it"
            );
        })
        .join()
        .expect("the thread ends");
    }
}

#[cfg(test)]
mod paced_tests {
    use std::time::{Duration, Instant};

    use super::pace::thread_cpu_time;
    use super::{Contention, Pacer, checkpoint, is_paced, take_paced_turns_on_this_thread};

    /// An executor that never stops serving.
    struct AlwaysServing;

    impl Contention for AlwaysServing {
        fn is_contended(&self) -> bool {
            true
        }

        fn thread_cpu_time(&self) -> Duration {
            thread_cpu_time()
        }
    }

    #[test]
    fn a_paced_thread_spinning_on_checkpoints_keeps_its_share_of_the_cpu() {
        const PERCENT: u8 = 20;
        const WALL: Duration = Duration::from_millis(300);
        let (used, elapsed) = std::thread::spawn(|| {
            take_paced_turns_on_this_thread(Pacer::percent(PERCENT), Box::new(AlwaysServing));
            assert!(is_paced());
            let (start, start_cpu) = (Instant::now(), thread_cpu_time());
            while start.elapsed() < WALL {
                checkpoint();
            }
            (thread_cpu_time() - start_cpu, start.elapsed())
        })
        .join()
        .expect("the thread ends");
        // At most the share, plus the initial credit and one check's work; a busy machine may
        // give the thread less, never more.
        let allowed = elapsed.as_secs_f64() * f64::from(PERCENT) / 100.0
            + super::pace::CREDIT_MAX.as_secs_f64()
            + 0.005;
        assert!(
            used.as_secs_f64() <= allowed,
            "used {used:?} of {elapsed:?}, allowed {allowed:.4} s"
        );
    }
}
