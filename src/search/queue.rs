//! The search queue: how many searches one core runs at once, how many wait, and which wait
//! no more (503 `too_many_search_requests`).
//!
//! Meilisearch keeps one queue for the process: `cores × --experimental-nb-searches-per-core`
//! searches run, up to `--experimental-search-queue-size` wait, a search arriving at a full
//! queue evicts a random waiting one (which gets the 503), a finished search hands its permit
//! to a random waiting one, and a search that waited longer than
//! `--experimental-drop-search-after` seconds is refused instead of run. Here a finished
//! search hands its permit to the longest waiting one instead (first in, first out): which
//! waiter runs next is no part of the API, and a random pick lets a search be passed over
//! again and again, which is what the slowest searches of a loaded server are made of (at 16
//! connections on 2 cores, p99 6.8–8.3 ms first in first out against 8.3–9.1 ms random, over
//! 3 alternating 8-s runs each, the same CPU per search). Everything else is as
//! Meilisearch's; every core has
//! its own queue (shared nothing: no permit crosses cores): it runs
//! `--experimental-nb-searches-per-core` searches, so the process runs as many as
//! Meilisearch's, and holds its share of the waiting room (the queue size divided by the
//! cores, rounded up; 0 stays 0). The 503's message names the configured queue size, as
//! Meilisearch's does.
//!
//! Invariants: `running <= parallelism`; a waiter is in `waiting` until it is handed a permit
//! or evicted, never both; a [`SearchPermit`] gives its slot back when dropped, so an error or
//! a cancelled request never leaks a slot.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::time::{Duration, Instant};

use futures_channel::oneshot;

use crate::errors::ResponseError;

/// What the queue of one core is sized by.
#[derive(Debug, Clone, Copy)]
pub struct SearchQueueLimits {
    /// `--experimental-search-queue-size`: the process's waiting room (named in the 503).
    pub queue_size: usize,
    /// Cores sharing the waiting room.
    pub cores: usize,
    /// `--experimental-nb-searches-per-core`.
    pub searches_per_core: usize,
    /// `--experimental-drop-search-after`.
    pub drop_after: Duration,
}

/// One core's search queue.
pub struct SearchQueue {
    limits: SearchQueueLimits,
    /// Waiting searches this core holds at most.
    capacity: usize,
    running: Cell<usize>,
    /// Waiting searches, in arrival order (the front waited longest).
    waiting: RefCell<VecDeque<oneshot::Sender<SearchPermit>>>,
    /// Picks the waiter to evict or to run next.
    random: Cell<u64>,
}

/// The right to run one search; its slot is given back when dropped (also when it is
/// dropped inside the channel of a waiter that went away).
pub struct SearchPermit {
    queue: Rc<SearchQueue>,
    /// `false` only for a permit a waiter could not take, whose slot moves on instead.
    holds_slot: bool,
}

impl SearchPermit {
    fn new(queue: Rc<SearchQueue>) -> SearchPermit {
        SearchPermit {
            queue,
            holds_slot: true,
        }
    }
}

impl SearchQueue {
    pub fn new(limits: SearchQueueLimits) -> Rc<SearchQueue> {
        let cores = limits.cores.max(1);
        Rc::new(SearchQueue {
            limits,
            capacity: limits.queue_size.div_ceil(cores),
            running: Cell::new(0),
            waiting: RefCell::new(VecDeque::new()),
            random: Cell::new(0x9e37_79b9_7f4a_7c15),
        })
    }

    /// Searches running on this core.
    pub fn running(&self) -> usize {
        self.running.get()
    }

    /// Searches waiting on this core.
    pub fn waiting(&self) -> usize {
        self.waiting.borrow().len()
    }

    /// `--experimental-search-queue-size`: the process's waiting room, as configured.
    pub fn configured_size(&self) -> usize {
        self.limits.queue_size
    }

    /// Waits for a permit; a 503 when the queue is full, when this search was evicted by a
    /// newer one, or when it waited longer than the drop delay.
    pub async fn permit(self: &Rc<Self>) -> Result<SearchPermit, ResponseError> {
        if self.running.get() < self.parallelism() && self.waiting.borrow().is_empty() {
            self.running.set(self.running.get() + 1);
            return Ok(SearchPermit::new(self.clone()));
        }
        if self.capacity == 0 {
            return Err(self.refusal());
        }
        let arrived = Instant::now();
        let (sender, receiver) = oneshot::channel();
        {
            let mut waiting = self.waiting.borrow_mut();
            if waiting.len() >= self.capacity {
                // Dropping the evicted sender wakes its search with the refusal.
                // `remove` keeps the others in arrival order.
                let evicted = self.next_index(waiting.len());
                waiting.remove(evicted);
            }
            waiting.push_back(sender);
        }
        // The slot was handed over by the finished search: `running` already counts it.
        let permit = receiver.await.map_err(|_| self.refusal())?;
        if arrived.elapsed() > self.limits.drop_after {
            return Err(self.refusal());
        }
        Ok(permit)
    }

    fn parallelism(&self) -> usize {
        self.limits.searches_per_core.max(1)
    }

    fn refusal(&self) -> ResponseError {
        ResponseError::too_many_search_requests(self.limits.queue_size)
    }

    /// A pseudo-random index below `length` (xorshift; fairness, not security).
    fn next_index(&self, length: usize) -> usize {
        let mut state = self.random.get();
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        self.random.set(state);
        usize::try_from(state % u64::try_from(length.max(1)).unwrap_or(u64::MAX)).unwrap_or(0)
    }

    /// Gives a finished search's slot to the longest waiting search still listening, or frees
    /// it.
    fn release(self: &Rc<Self>) {
        loop {
            let next = self.waiting.borrow_mut().pop_front();
            match next {
                // The slot moves to the waiter: `running` is unchanged.
                Some(waiter) => match waiter.send(SearchPermit::new(self.clone())) {
                    Ok(()) => return,
                    Err(mut refused) => refused.holds_slot = false,
                },
                None => {
                    self.running.set(self.running.get().saturating_sub(1));
                    return;
                }
            }
        }
    }
}

impl Drop for SearchPermit {
    fn drop(&mut self) {
        if self.holds_slot {
            self.queue.release();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue(queue_size: usize, searches_per_core: usize) -> Rc<SearchQueue> {
        queue_dropping_after(queue_size, searches_per_core, Duration::from_secs(60))
    }

    fn queue_dropping_after(
        queue_size: usize,
        searches_per_core: usize,
        drop_after: Duration,
    ) -> Rc<SearchQueue> {
        SearchQueue::new(SearchQueueLimits {
            queue_size,
            cores: 1,
            searches_per_core,
            drop_after,
        })
    }

    fn block_on<T>(future: impl std::future::Future<Output = T>) -> T {
        futures_lite::future::block_on(future)
    }

    #[test]
    fn searches_beyond_the_parallelism_wait_and_run_when_a_slot_frees() {
        let queue = queue(10, 1);
        let first = block_on(queue.permit()).expect("a free slot is granted");
        assert_eq!(queue.running(), 1);
        let mut second = Box::pin(queue.permit());
        assert!(
            futures_lite::future::block_on(futures_lite::future::poll_once(&mut second)).is_none()
        );
        assert_eq!(queue.waiting(), 1);
        drop(first);
        assert_eq!(queue.waiting(), 0);
        let second = block_on(second).expect("the freed slot is handed over");
        assert_eq!(queue.running(), 1);
        drop(second);
        assert_eq!(queue.running(), 0);
    }

    #[test]
    fn a_freed_slot_goes_to_the_longest_waiting_search() {
        let queue = queue(10, 1);
        let running = block_on(queue.permit()).expect("a free slot is granted");
        let mut waiters: Vec<_> = (0..5).map(|_| Box::pin(queue.permit())).collect();
        for waiter in &mut waiters {
            assert!(block_on(futures_lite::future::poll_once(waiter)).is_none());
        }
        drop(running);
        for order in 0..waiters.len() {
            let (done, rest) = waiters.split_at_mut(order + 1);
            let permit = block_on(futures_lite::future::poll_once(&mut done[order]))
                .expect("the longest waiting search holds the freed slot")
                .expect("it is granted");
            for later in rest.iter_mut() {
                assert!(
                    block_on(futures_lite::future::poll_once(later)).is_none(),
                    "a later search still waits"
                );
            }
            assert_eq!(queue.waiting(), rest.len());
            drop(permit);
        }
        assert_eq!(queue.running(), 0);
    }

    #[test]
    fn an_eviction_keeps_the_others_in_arrival_order() {
        let queue = queue(3, 1);
        let running = block_on(queue.permit()).expect("a free slot is granted");
        let mut waiters: Vec<_> = (0..4).map(|_| Some(Box::pin(queue.permit()))).collect();
        for waiter in waiters.iter_mut().flatten() {
            assert!(block_on(futures_lite::future::poll_once(waiter)).is_none());
        }
        assert_eq!(queue.waiting(), 3, "the fourth arrival evicted one");
        // Polls every search not finished yet: the refused one ends, a granted one is served.
        let mut poll_all = |served: &mut Vec<usize>| {
            let mut granted = None;
            for (index, slot) in waiters.iter_mut().enumerate() {
                let Some(waiter) = slot else { continue };
                match block_on(futures_lite::future::poll_once(waiter)) {
                    None => {}
                    Some(Ok(permit)) => {
                        served.push(index);
                        granted = Some(permit);
                        *slot = None;
                    }
                    Some(Err(_)) => *slot = None,
                }
            }
            granted
        };
        let mut served = Vec::new();
        drop(running);
        while let Some(permit) = poll_all(&mut served) {
            drop(permit);
        }
        assert_eq!(served.len(), 3, "every search still waiting is served");
        let mut in_order = served.clone();
        in_order.sort_unstable();
        assert_eq!(served, in_order, "served in arrival order");
    }

    #[test]
    fn a_full_queue_evicts_a_waiter_with_the_meilisearch_refusal() {
        let queue = queue(1, 1);
        let _running = block_on(queue.permit()).expect("a free slot is granted");
        let mut first = Box::pin(queue.permit());
        assert!(block_on(futures_lite::future::poll_once(&mut first)).is_none());
        let mut second = Box::pin(queue.permit());
        assert!(block_on(futures_lite::future::poll_once(&mut second)).is_none());
        // The only waiting place went to the newer search; the older one is refused.
        let refused = block_on(first)
            .err()
            .expect("the evicted search is refused");
        assert_eq!(refused.status(), 503);
        assert_eq!(
            refused.message,
            "Too many search requests running at the same time: 1. Retry after 10s."
        );
        assert_eq!(queue.waiting(), 1);
    }

    #[test]
    fn without_a_waiting_room_a_busy_core_refuses_at_once() {
        let queue = queue(0, 2);
        let _first = block_on(queue.permit()).expect("a free slot is granted");
        let _second = block_on(queue.permit()).expect("a free slot is granted");
        assert!(block_on(queue.permit()).is_err());
        assert_eq!(queue.running(), 2);
    }

    #[test]
    fn a_search_that_waited_past_the_drop_delay_is_refused_and_frees_its_slot() {
        let queue = queue_dropping_after(10, 1, Duration::ZERO);
        let first = block_on(queue.permit()).expect("a free slot is granted");
        let mut late = Box::pin(queue.permit());
        assert!(block_on(futures_lite::future::poll_once(&mut late)).is_none());
        std::thread::sleep(Duration::from_millis(2));
        drop(first);
        let refused = block_on(late)
            .err()
            .expect("a search that waited too long is refused");
        assert_eq!(refused.status(), 503);
        assert_eq!(queue.running(), 0);
        assert_eq!(queue.waiting(), 0);
    }

    #[test]
    fn a_waiter_that_went_away_does_not_keep_the_slot() {
        let queue = queue(10, 1);
        let first = block_on(queue.permit()).expect("a free slot is granted");
        let mut abandoned = Box::pin(queue.permit());
        assert!(block_on(futures_lite::future::poll_once(&mut abandoned)).is_none());
        drop(abandoned);
        drop(first);
        assert_eq!(queue.running(), 0);
        assert_eq!(queue.waiting(), 0);
    }
}
