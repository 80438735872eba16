//! Helpers shared by the crate's unit tests.
//!
//! Invariant: compiled only for tests; nothing here is reachable from the server.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Wake, Waker};

/// A waker that counts how many times it was woken.
pub(crate) struct CountingWaker(AtomicUsize);

impl CountingWaker {
    /// A fresh counter at zero and a waker that increments it.
    pub(crate) fn new() -> (Arc<CountingWaker>, Waker) {
        let counter = Arc::new(CountingWaker(AtomicUsize::new(0)));
        (counter.clone(), Waker::from(counter))
    }

    /// How many times the waker was woken so far.
    pub(crate) fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}
