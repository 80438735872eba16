//! [`ShutdownSignal`]: the runtime's way to tell the connections of one core to finish.
//!
//! Design: a signal belongs to one core (it is `Rc`, not `Send`); clones share one state. The
//! runtime calls [`ShutdownSignal::trigger`] once; every connection then finishes the request
//! it is reading or answering, answers it with `connection: close`, and closes. A connection
//! waiting idle for its next request wakes at once and closes without waiting for the idle
//! timeout.
//!
//! Invariants: once triggered a signal stays triggered; every waiter registered before or
//! after the trigger is woken (waiters register a waker under a unique key and remove it
//! when dropped, so the waker table holds only live waiters).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

/// A cheap, clonable, core-local shutdown flag with wake-ups.
#[derive(Debug, Clone, Default)]
pub struct ShutdownSignal {
    state: Rc<State>,
}

#[derive(Debug, Default)]
struct State {
    triggered: Cell<bool>,
    next_waiter_key: Cell<u64>,
    wakers: RefCell<HashMap<u64, Waker>>,
}

impl ShutdownSignal {
    /// A signal not yet triggered.
    pub fn new() -> ShutdownSignal {
        ShutdownSignal::default()
    }

    /// Triggers the signal and wakes every waiting connection. Idempotent.
    pub fn trigger(&self) {
        self.state.triggered.set(true);
        let wakers: Vec<Waker> = self
            .state
            .wakers
            .borrow_mut()
            .drain()
            .map(|(_, waker)| waker)
            .collect();
        for waker in wakers {
            waker.wake();
        }
    }

    /// Whether the signal was triggered.
    pub fn is_triggered(&self) -> bool {
        self.state.triggered.get()
    }

    /// A future that completes once the signal is triggered.
    pub fn wait(&self) -> ShutdownWait<'_> {
        let key = self.state.next_waiter_key.get();
        self.state.next_waiter_key.set(key.wrapping_add(1));
        ShutdownWait { signal: self, key }
    }

    /// The number of registered waiters (for tests and metrics).
    pub fn waiter_count(&self) -> usize {
        self.state.wakers.borrow().len()
    }
}

/// Completes when its [`ShutdownSignal`] is triggered.
#[derive(Debug)]
pub struct ShutdownWait<'a> {
    signal: &'a ShutdownSignal,
    key: u64,
}

impl Future for ShutdownWait<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<()> {
        if self.signal.is_triggered() {
            return Poll::Ready(());
        }
        let mut wakers = self.signal.state.wakers.borrow_mut();
        match wakers.get_mut(&self.key) {
            Some(waker) if waker.will_wake(context.waker()) => {}
            Some(waker) => waker.clone_from(context.waker()),
            None => {
                wakers.insert(self.key, context.waker().clone());
            }
        }
        Poll::Pending
    }
}

impl Drop for ShutdownWait<'_> {
    fn drop(&mut self) {
        self.signal.state.wakers.borrow_mut().remove(&self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::CountingWaker;

    #[test]
    fn trigger_wakes_every_waiter_and_dropped_waiters_unregister() {
        let signal = ShutdownSignal::new();
        let (counter, waker) = CountingWaker::new();
        let mut context = Context::from_waker(&waker);
        let mut first = Box::pin(signal.wait());
        let mut second = Box::pin(signal.wait());
        assert!(first.as_mut().poll(&mut context).is_pending());
        assert!(second.as_mut().poll(&mut context).is_pending());
        assert_eq!(signal.waiter_count(), 2);
        drop(second);
        assert_eq!(signal.waiter_count(), 1);
        signal.clone().trigger();
        assert_eq!(counter.count(), 1);
        assert!(first.as_mut().poll(&mut context).is_ready());
        assert!(signal.is_triggered());
        let mut late = Box::pin(signal.wait());
        assert!(late.as_mut().poll(&mut context).is_ready());
    }
}
