//! The memory every shard's commit caches hold together, within one budget for the process.
//!
//! A shard's commit view keeps what its searches computed (prefix unions and words, term
//! postings, range unions, facet columns and forms, word splits and derivations, the word
//! dictionary). Each cache is bounded per shard; a server holding thousands of open shards
//! needs one bound for all of them, or the sum of small bounds outgrows the machine.
//!
//! Two parts:
//! - a [`CacheMeter`], one per process (the server's shard registry owns it), counts the
//!   bytes held and refuses a new value that would pass its budget;
//! - a [`CacheAccount`], one per shard, counts what that shard holds and charges the meter, so
//!   that whoever keeps the budget (the registry closing its least recently used shards)
//!   knows which shards free memory when closed.
//!
//! Values a search needs to answer at all (the dictionary) are charged whatever the budget
//! ([`CacheAccount::charge_anyway`]); values kept only to be faster next time are charged
//! only within it ([`CacheAccount::try_charge`]). A refused value is still used by the search
//! that made it, then freed.
//!
//! Invariants:
//! - the meter's bytes are the sum of its accounts' bytes, and an account's bytes the sum of
//!   the charges not yet released through it (every cache releases exactly what it charged
//!   when it lets a value go or is dropped; an account dropped with bytes still charged
//!   fails a debug assertion);
//! - [`CacheAccount::try_charge`] never takes the meter past its budget; only
//!   [`CacheAccount::charge_anyway`] may, and the excess is what the budget's keeper frees.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// The bytes all commit caches of the process hold, and the most they may hold.
#[derive(Debug)]
pub struct CacheMeter {
    held: AtomicUsize,
    bytes_max: usize,
    refused: AtomicU64,
}

impl CacheMeter {
    /// A meter whose caches may hold `bytes_max` bytes together.
    pub fn with_budget(bytes_max: usize) -> Arc<CacheMeter> {
        Arc::new(CacheMeter {
            held: AtomicUsize::new(0),
            bytes_max,
            refused: AtomicU64::new(0),
        })
    }

    /// A meter that counts and never refuses (a shard opened outside any budget: tools,
    /// tests).
    pub fn unbounded() -> Arc<CacheMeter> {
        CacheMeter::with_budget(usize::MAX)
    }

    /// The bytes held now.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// The budget.
    pub fn bytes_max(&self) -> usize {
        self.bytes_max
    }

    /// How many values were not kept because the budget was full.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// The bytes held past `bytes_below` (0 when the caches hold less).
    pub fn held_past(&self, bytes_below: usize) -> usize {
        self.held().saturating_sub(bytes_below)
    }

    /// Charges `bytes` if they fit the budget; answers whether they did.
    fn try_charge(&self, bytes: usize) -> bool {
        let fitted = self
            .held
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |held| {
                held.checked_add(bytes)
                    .filter(|after| *after <= self.bytes_max)
            })
            .is_ok();
        if !fitted {
            self.refused.fetch_add(1, Ordering::Relaxed);
        }
        fitted
    }

    fn charge_anyway(&self, bytes: usize) {
        self.held.fetch_add(bytes, Ordering::Relaxed);
    }

    fn release(&self, bytes: usize) {
        let before = self.held.fetch_sub(bytes, Ordering::Relaxed);
        debug_assert!(before >= bytes, "released more than was charged");
    }
}

/// What one shard's caches hold, charged to the process's [`CacheMeter`].
#[derive(Debug)]
pub struct CacheAccount {
    held: AtomicUsize,
    meter: Arc<CacheMeter>,
}

impl CacheAccount {
    /// An account charging `meter`.
    pub fn on(meter: Arc<CacheMeter>) -> Arc<CacheAccount> {
        Arc::new(CacheAccount {
            held: AtomicUsize::new(0),
            meter,
        })
    }

    /// An account on a meter of its own, without a budget.
    pub fn unbounded() -> Arc<CacheAccount> {
        CacheAccount::on(CacheMeter::unbounded())
    }

    /// The bytes this account's caches hold.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// Charges `bytes` if the meter's budget has room; answers whether it had (the caller
    /// keeps its value only then).
    pub fn try_charge(&self, bytes: usize) -> bool {
        if !self.meter.try_charge(bytes) {
            return false;
        }
        self.held.fetch_add(bytes, Ordering::Relaxed);
        true
    }

    /// Charges `bytes` whatever the budget (a value searches cannot do without).
    pub fn charge_anyway(&self, bytes: usize) {
        self.meter.charge_anyway(bytes);
        self.held.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Gives back `bytes` charged earlier through this account.
    pub fn release(&self, bytes: usize) {
        if bytes == 0 {
            return;
        }
        let before = self.held.fetch_sub(bytes, Ordering::Relaxed);
        debug_assert!(before >= bytes, "an account released more than it charged");
        self.meter.release(bytes);
    }
}

impl Drop for CacheAccount {
    fn drop(&mut self) {
        let held = *self.held.get_mut();
        debug_assert_eq!(
            held, 0,
            "every cache releases what it charged before it goes"
        );
        // In a release build, a leak in the counting must not outlive the shard.
        self.meter.release(held);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_within_the_budget_are_kept_and_the_next_one_past_it_is_refused() {
        let meter = CacheMeter::with_budget(100);
        let first = CacheAccount::on(Arc::clone(&meter));
        let second = CacheAccount::on(Arc::clone(&meter));
        assert!(first.try_charge(60));
        assert!(second.try_charge(40));
        assert!(!second.try_charge(1), "the budget is full");
        assert_eq!((meter.held(), meter.refused()), (100, 1));
        assert_eq!((first.held(), second.held()), (60, 40));
        first.release(60);
        assert!(second.try_charge(50));
        assert_eq!(meter.held(), 90);
        second.release(90);
        assert_eq!(meter.held(), 0);
    }

    #[test]
    fn a_charge_anyway_may_pass_the_budget_and_shows_as_held_past_it() {
        let meter = CacheMeter::with_budget(10);
        let account = CacheAccount::on(Arc::clone(&meter));
        account.charge_anyway(25);
        assert_eq!(meter.held_past(10), 15);
        assert!(!account.try_charge(1));
        account.release(25);
        assert_eq!(meter.held_past(10), 0);
    }

    #[test]
    fn many_threads_charging_at_once_never_pass_the_budget() {
        let meter = CacheMeter::with_budget(1_000);
        let accounts: Vec<_> = (0..4)
            .map(|_| CacheAccount::on(Arc::clone(&meter)))
            .collect();
        std::thread::scope(|scope| {
            for account in &accounts {
                scope.spawn(move || {
                    for _ in 0..1_000 {
                        if account.try_charge(7) {
                            assert!(account.held() >= 7);
                        }
                    }
                });
            }
        });
        let held: usize = accounts.iter().map(|account| account.held()).sum();
        assert_eq!(held, meter.held());
        assert!(meter.held() <= 1_000, "held {}", meter.held());
        assert!(
            meter.held() > 1_000 - 7,
            "filled up to the last charge that fits"
        );
        for account in &accounts {
            account.release(account.held());
        }
    }
}
