//! Short turns for the threads that index: the long loops of a batch call [`checkpoint`], and a
//! thread that takes turns gives its CPU back there once it has run for [`TURN_LENGTH`].
//!
//! Why: the server's indexing threads run at a low priority on the CPUs of the executors that
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
//! - a thread takes turns only after [`take_turns_on_this_thread`]; on any other thread (an
//!   executor answering a search, a test) [`checkpoint`] does nothing but read a thread-local;
//! - a check is cheap next to the work between two checks: callers place it once per
//!   document, per key written or per word, or every [`ELEMENTS_PER_CHECK`] elements of a
//!   loop over small ones, never per byte.

mod sort;

pub use sort::{sort_by, sort_unstable, sort_unstable_by};

use std::cell::Cell;
use std::time::{Duration, Instant};

/// How long a thread that takes turns runs before it gives its CPU back.
pub const TURN_LENGTH: Duration = Duration::from_micros(250);

/// How many elements a loop over small elements (a few nanoseconds each) handles between two
/// checks: a few microseconds of work, so the check's clock read costs about 1 %.
pub const ELEMENTS_PER_CHECK: usize = 1024;

thread_local! {
    /// When this thread's turn started, if it takes turns.
    static TURN_STARTED: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Makes the calling thread take turns from now on.
pub fn take_turns_on_this_thread() {
    TURN_STARTED.with(|started| started.set(Some(Instant::now())));
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

/// Gives the CPU back if the calling thread takes turns and its turn ran out.
#[inline]
pub fn checkpoint() {
    TURN_STARTED.with(|started| {
        let Some(turn_started) = started.get() else {
            return;
        };
        if turn_started.elapsed() >= TURN_LENGTH {
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
