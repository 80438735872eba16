//! [`LazyDeadline`]: the idle deadline of one connection, kept without a timer per wait.
//!
//! A keep-alive connection waits for its next request once per request. Arming a fresh
//! timer for each of those waits (and removing it when the request arrives microseconds
//! later) was a measurable part of a small request's cost. Instead the connection keeps
//! one armed timer across waits: moving the deadline later only records the new instant;
//! when the armed timer fires before the current deadline, it is re-armed for the rest.
//! A connection answering a request every few microseconds thus re-arms its timer about
//! once per idle timeout instead of once per request.
//!
//! Invariants: [`LazyDeadline::poll_expired`] completes only once the clock has reached
//! the current deadline, never before; the armed timer never fires later than the current
//! deadline (a deadline moved earlier drops it); no timer is armed until a wait actually
//! blocks (the first poll of the raced future happens before); the armed sleep is polled
//! again only for another task's waker or once its instant has come (it stays registered
//! with the waker it was polled with until it fires).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use super::Timer;

/// A sleep armed on the connection's timer, with the instant it completes.
struct Armed<'a> {
    fires_at: Instant,
    sleep: Pin<Box<dyn Future<Output = ()> + 'a>>,
    /// The waker the sleep was last polled with. glommio's timer re-registers itself in the
    /// reactor on every poll, so a sleep already registered to wake the same task is not
    /// polled again before its instant.
    registered: Option<Waker>,
}

/// One connection's deadline over `timer`.
pub(crate) struct LazyDeadline<'a, T> {
    timer: &'a T,
    /// The timeout of a wait that has not blocked yet: its deadline starts when it does.
    starting: Option<Duration>,
    deadline: Instant,
    armed: Option<Armed<'a>>,
    /// How many times a timer was armed (for tests and the measurements).
    arms: u64,
}

impl<'a, T: Timer + 'a> LazyDeadline<'a, T> {
    /// A deadline that has not been set (it is set before every wait).
    pub(crate) fn new(timer: &'a T) -> Self {
        LazyDeadline {
            timer,
            starting: None,
            deadline: timer.now(),
            armed: None,
            arms: 0,
        }
    }

    /// Starts a wait of at most `timeout`. The deadline is taken from the clock when the
    /// wait first blocks (so a wait that never blocks does not read the clock).
    pub(crate) fn set(&mut self, timeout: Duration) {
        self.starting = Some(timeout);
    }

    /// The deadline becomes `timeout` from now. An armed timer is kept if it fires no
    /// later than the new deadline.
    fn start(&mut self, timeout: Duration) {
        self.deadline = self.timer.now() + timeout;
        if self
            .armed
            .as_ref()
            .is_some_and(|armed| armed.fires_at > self.deadline)
        {
            self.armed = None;
        }
    }

    /// Ready once the deadline passed; otherwise arms (or keeps) a timer that wakes the
    /// task no later than the deadline.
    pub(crate) fn poll_expired(&mut self, context: &mut Context<'_>) -> Poll<()> {
        if let Some(timeout) = self.starting.take() {
            self.start(timeout);
        }
        loop {
            let armed = match &mut self.armed {
                Some(armed) => armed,
                None => {
                    let now = self.timer.now();
                    if now >= self.deadline {
                        return Poll::Ready(());
                    }
                    self.arms += 1;
                    self.armed.insert(Armed {
                        fires_at: self.deadline,
                        sleep: Box::pin(self.timer.sleep(self.deadline - now)),
                        registered: None,
                    })
                }
            };
            let registered_for_this_task = armed
                .registered
                .as_ref()
                .is_some_and(|waker| waker.will_wake(context.waker()));
            if registered_for_this_task && self.timer.now() < armed.fires_at {
                return Poll::Pending;
            }
            match armed.sleep.as_mut().poll(context) {
                Poll::Pending => {
                    armed.registered = Some(context.waker().clone());
                    return Poll::Pending;
                }
                // Fired: either the deadline passed, or it moved later since arming.
                Poll::Ready(()) => self.armed = None,
            }
        }
    }

    /// How many timers this deadline armed.
    #[cfg(test)]
    pub(crate) fn arms(&self) -> u64 {
        self.arms
    }
}

#[cfg(test)]
mod tests {
    use std::cell::{Cell, RefCell};
    use std::future::poll_fn;
    use std::task::Waker;

    use super::*;

    /// A fake clock whose sleeps complete once the test moved the clock past their end.
    struct FakeClock {
        now: Cell<Instant>,
        sleeps: RefCell<Vec<Duration>>,
        /// How many times any sleep was polled.
        polls: Cell<usize>,
    }

    impl FakeClock {
        fn new() -> FakeClock {
            FakeClock {
                now: Cell::new(Instant::now()),
                sleeps: RefCell::default(),
                polls: Cell::new(0),
            }
        }

        fn advance(&self, duration: Duration) {
            self.now.set(self.now.get() + duration);
        }
    }

    impl Timer for FakeClock {
        fn now(&self) -> Instant {
            self.now.get()
        }

        fn sleep(&self, duration: Duration) -> impl Future<Output = ()> {
            self.sleeps.borrow_mut().push(duration);
            let end = self.now.get() + duration;
            poll_fn(move |_context| {
                self.polls.set(self.polls.get() + 1);
                if self.now.get() >= end {
                    Poll::Ready(())
                } else {
                    Poll::Pending
                }
            })
        }
    }

    /// A waker that does nothing, and that `will_wake` recognizes (unlike `Waker::noop`).
    struct NothingToWake;

    impl std::task::Wake for NothingToWake {
        fn wake(self: std::sync::Arc<Self>) {}
    }

    thread_local! {
        static TASK_WAKER: Waker = Waker::from(std::sync::Arc::new(NothingToWake));
    }

    fn poll(deadline: &mut LazyDeadline<'_, FakeClock>) -> Poll<()> {
        TASK_WAKER.with(|waker| deadline.poll_expired(&mut Context::from_waker(waker)))
    }

    const SECOND: Duration = Duration::from_secs(1);

    #[test]
    fn a_deadline_pushed_later_on_every_wait_keeps_one_timer() {
        let clock = FakeClock::new();
        let mut deadline = LazyDeadline::new(&clock);
        for _ in 0..1000 {
            deadline.set(75 * SECOND);
            assert!(poll(&mut deadline).is_pending());
            clock.advance(Duration::from_millis(10));
        }
        assert_eq!(deadline.arms(), 1);
        assert_eq!(*clock.sleeps.borrow(), [75 * SECOND]);
    }

    #[test]
    fn it_expires_exactly_at_the_last_deadline_set() {
        let clock = FakeClock::new();
        let mut deadline = LazyDeadline::new(&clock);
        deadline.set(10 * SECOND);
        assert!(poll(&mut deadline).is_pending());
        clock.advance(6 * SECOND);
        deadline.set(10 * SECOND);
        assert!(poll(&mut deadline).is_pending());
        clock.advance(4 * SECOND);
        // The first timer fired at its end, but the deadline moved 6 s later.
        assert!(poll(&mut deadline).is_pending());
        assert_eq!(*clock.sleeps.borrow(), [10 * SECOND, 6 * SECOND]);
        clock.advance(6 * SECOND - Duration::from_nanos(1));
        assert!(poll(&mut deadline).is_pending());
        clock.advance(Duration::from_nanos(1));
        assert!(poll(&mut deadline).is_ready());
    }

    #[test]
    fn a_shorter_timeout_drops_a_timer_that_would_fire_too_late() {
        let clock = FakeClock::new();
        let mut deadline = LazyDeadline::new(&clock);
        deadline.set(75 * SECOND);
        assert!(poll(&mut deadline).is_pending());
        deadline.set(5 * SECOND);
        assert!(poll(&mut deadline).is_pending());
        assert_eq!(*clock.sleeps.borrow(), [75 * SECOND, 5 * SECOND]);
        clock.advance(5 * SECOND);
        assert!(poll(&mut deadline).is_ready());
    }

    #[test]
    fn a_registered_sleep_is_not_polled_again_before_its_instant() {
        let clock = FakeClock::new();
        let mut deadline = LazyDeadline::new(&clock);
        deadline.set(SECOND);
        for _ in 0..100 {
            assert!(poll(&mut deadline).is_pending());
        }
        assert_eq!(clock.polls.get(), 1);
        clock.advance(SECOND);
        assert!(poll(&mut deadline).is_ready());
        assert_eq!(clock.polls.get(), 2);
    }

    #[test]
    fn no_timer_is_armed_until_a_wait_is_polled() {
        let clock = FakeClock::new();
        let mut deadline = LazyDeadline::new(&clock);
        deadline.set(SECOND);
        deadline.set(2 * SECOND);
        assert_eq!(deadline.arms(), 0);
        assert!(clock.sleeps.borrow().is_empty());
    }
}
