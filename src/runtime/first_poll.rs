//! Waking a core that glommio put to sleep before it ever polled the core's future.
//!
//! glommio 0.9 (the newest on crates.io; fixed upstream after it) parks an executor whose
//! task queues still hold runnable work when its preemption timer has fired before the
//! scheduler looked at them: `run_task_queues` then reports "nothing ran" and the executor
//! sleeps until the next I/O completion or timer. A running core keeps a heartbeat timer
//! for that (see [`super::latency`]). Before the core's future is first polled, though,
//! nothing is in flight and no timer exists: the executor sleeps for good, its listening
//! sockets fill with connections nobody accepts, and every other core spins in the mesh
//! join waiting for it. Seen with eight servers starting at once on two CPUs: about one
//! start in 240 hung, the thread was descheduled for longer than the 5 ms interval between
//! arming the timer and looking at the queues.
//!
//! The main thread therefore watches each core until its future has been polled once
//! ([`FirstPolls::mark`]) and, every [`NUDGE_INTERVAL`] until then, sends the core's thread
//! [`WAKE_SIGNAL`]. The signal's handler does nothing; its only effect is that the
//! executor's sleep in `io_uring_enter` returns `EINTR` (which glommio treats as a wake-up),
//! and the executor looks at its queues again.
//!
//! Invariants:
//! - [`install_wake_handler`] runs before the first nudge: an unhandled `SIGURG` is ignored
//!   by default, so a nudge without it would wake nothing, but it never kills the process;
//! - a core is nudged only while its future has not been polled: the handler is installed
//!   with `SA_RESTART`, and the first nudge waits one whole interval, so a core that starts
//!   normally never sees the signal;
//! - the watch ends once every core was polled or has ended (a core whose executor failed to
//!   start never polls).

use std::io;
use std::os::unix::thread::JoinHandleExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// The signal that wakes a sleeping executor: ignored by default, and not used otherwise by
/// the server (no socket is given an owner for out-of-band data).
pub const WAKE_SIGNAL: libc::c_int = libc::SIGURG;

/// How long a core may go without its first poll before it is nudged, and between nudges.
pub const NUDGE_INTERVAL: Duration = Duration::from_millis(20);

/// Which cores have had their future polled at least once.
#[derive(Clone)]
pub struct FirstPolls {
    polled: Arc<[AtomicBool]>,
}

impl FirstPolls {
    /// No core polled yet, of `cores`.
    pub fn new(cores: usize) -> FirstPolls {
        FirstPolls {
            polled: (0..cores).map(|_| AtomicBool::new(false)).collect(),
        }
    }

    /// Records that `core`'s future is running. Called first thing in the future.
    pub fn mark(&self, core: usize) {
        debug_assert!(core < self.polled.len(), "core {core} is one of the cores");
        if let Some(polled) = self.polled.get(core) {
            polled.store(true, Ordering::Release);
        }
    }

    /// Whether `core`'s future has been polled.
    fn is_polled(&self, core: usize) -> bool {
        self.polled
            .get(core)
            .is_some_and(|polled| polled.load(Ordering::Acquire))
    }
}

/// Installs the do-nothing handler of [`WAKE_SIGNAL`] for the whole process.
pub fn install_wake_handler() -> io::Result<()> {
    // SAFETY: `sigaction` is plain data, zeroed is a valid value with an empty mask;
    // `on_wake_signal` is async-signal-safe (it does nothing) and has the signature
    // `sa_sigaction` expects without SA_SIGINFO.
    let outcome = unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_wake_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(WAKE_SIGNAL, &action, std::ptr::null_mut())
    };
    if outcome == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

extern "C" fn on_wake_signal(_signal: libc::c_int) {}

/// Nudges every core of `threads` (core `i` runs on `threads[i]`) whose future has not been
/// polled, every [`NUDGE_INTERVAL`], until each was polled or has ended. Returns how many
/// nudges were sent.
pub fn nudge_until_polled<Output>(threads: &[JoinHandle<Output>], polls: &FirstPolls) -> usize {
    let mut nudges = 0;
    loop {
        std::thread::sleep(NUDGE_INTERVAL);
        let mut waiting = false;
        for (core, thread) in threads.iter().enumerate() {
            if polls.is_polled(core) || thread.is_finished() {
                continue;
            }
            waiting = true;
            nudges += 1;
            tracing::debug!(core, "a core not polled yet is woken");
            // SAFETY: the thread has not been joined (the caller holds its handle), so its
            // pthread id is valid; the signal has a handler (see `install_wake_handler`).
            unsafe { libc::pthread_kill(thread.as_pthread_t(), WAKE_SIGNAL) };
        }
        if !waiting {
            return nudges;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How long the test lets a nudged thread take to wake.
    const WAKE_DEADLINE: Duration = Duration::from_secs(10);

    #[test]
    fn a_thread_sleeping_in_a_system_call_wakes_once_nudged_and_is_then_left_alone() {
        install_wake_handler().expect("the handler installs");
        let polls = FirstPolls::new(2);
        let sleeper_polls = polls.clone();
        // Core 0 is polled from the start; core 1 sleeps in `pause`, which only a handled
        // signal ends (it is never restarted), and counts as polled once it woke.
        polls.mark(0);
        let watched_polls = polls.clone();
        let (answer, answered) = std::sync::mpsc::channel();
        // The watch runs on a thread of its own so that a sleeper never woken fails the test
        // after the deadline instead of hanging it.
        std::thread::spawn(move || {
            let threads = vec![
                std::thread::spawn(|| std::thread::sleep(Duration::from_millis(200))),
                std::thread::spawn(move || {
                    // SAFETY: `pause` has no preconditions.
                    unsafe { libc::pause() };
                    sleeper_polls.mark(1);
                }),
            ];
            let nudges = nudge_until_polled(&threads, &watched_polls);
            for thread in threads {
                thread.join().expect("the thread ends");
            }
            let _ = answer.send(nudges);
        });
        let nudges = answered
            .recv_timeout(WAKE_DEADLINE)
            .expect("the sleeper woke before the deadline");
        assert!(nudges >= 1, "the sleeping core was nudged");
        assert!(polls.is_polled(1), "the woken thread ran on");
    }

    #[test]
    fn cores_polled_at_once_are_never_nudged() {
        install_wake_handler().expect("the handler installs");
        let polls = FirstPolls::new(3);
        for core in 0..3 {
            polls.mark(core);
        }
        let threads: Vec<_> = (0..3)
            .map(|_| std::thread::spawn(|| std::thread::sleep(Duration::from_millis(100))))
            .collect();
        assert_eq!(nudge_until_polled(&threads, &polls), 0);
        for thread in threads {
            thread.join().expect("the thread ends");
        }
    }

    #[test]
    fn a_core_that_ended_without_its_first_poll_ends_the_watch() {
        let polls = FirstPolls::new(1);
        let threads = vec![std::thread::spawn(|| {})];
        while !threads[0].is_finished() {
            std::thread::yield_now();
        }
        assert_eq!(nudge_until_polled(&threads, &polls), 0);
    }
}
