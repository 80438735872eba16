//! A memo of values made on one commit, bounded in bytes: what the commit view's caches
//! (prefix unions, range unions, facet columns, facet search forms) keep between searches.
//!
//! Values are shared (`Arc`) and never change once kept; a commit is immutable, so an entry
//! never goes stale while the view that owns the memo lives. Each cache decides which values
//! are worth keeping and what they weigh; the memo only holds them within its byte bound, by
//! one of two rules ([`WhenFull`]).
//!
//! A memo also knows which of its entries were asked for, so that a cache whose values can be
//! brought up to date over a batch (the prefix caches, see [`crate::search::prefix_carry`])
//! carries to the next commit only the entries searches still use: an entry is carried while
//! it was asked for within the last [`CommitMemo::carried`]'s `idle_commits_max` commits.
//!
//! Every kept value is charged to the memo's [`CacheAccount`] (and so to the process's cache
//! budget, see [`crate::cache_meter`]); a value the budget has no room for is not kept, and
//! the search that made it uses it once.
//!
//! Invariants: the bytes counted are the sum of the kept entries' weights, at most the bound,
//! and exactly what the memo has charged to its account and not released;
//! an entry, once kept, is never replaced (the first value kept under a key stays) until the
//! memo starts over; an entry kept by a search counts as asked for on its commit; no value is
//! freed while the lock is held (what a memo starting over lets go is freed after it).
//!
//! The lock is a mutex, not a read-write lock, although most calls only look up: with
//! `std::sync::RwLock` searches used 12–27 % more CPU each in three alternating pairs (see
//! `tuning/results/memo-locks-2026-11-27.md`).

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::cache_meter::CacheAccount;

/// What a full memo does with a value that would pass its bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenFull {
    /// Drops every entry and keeps the new one (values asked for lately matter most).
    StartOver,
    /// Keeps what it holds and not the new value.
    KeepWhatIsThere,
}

struct Entries<K, V> {
    values: HashMap<K, Kept<V>>,
    bytes: usize,
}

/// A kept value, its weight and how searches used it.
struct Kept<V> {
    value: Arc<V>,
    bytes: usize,
    /// Whether a search asked for the value on this memo's commit.
    asked: bool,
    /// Commits in a row before this one on which nobody asked for the value (0 when the value
    /// was made on this commit or asked for on the one before).
    idle_commits: u8,
}

/// An entry carried from a memo to the next commit's (see [`CommitMemo::carried`]).
pub struct CarriedEntry<K, V> {
    pub key: K,
    pub value: Arc<V>,
    /// What the entry weighed on the earlier commit.
    pub bytes: usize,
    /// Commits in a row, the earlier one included, on which nobody asked for the value.
    pub idle_commits: u8,
}

/// Values made on one commit, by key, within `bytes_max`.
pub struct CommitMemo<K, V> {
    entries: Mutex<Entries<K, V>>,
    bytes_max: usize,
    when_full: WhenFull,
    account: Arc<CacheAccount>,
}

impl<K: Hash + Eq, V> CommitMemo<K, V> {
    /// A memo outside any budget but its own bound.
    #[cfg(test)]
    pub fn new(bytes_max: usize, when_full: WhenFull) -> Self {
        CommitMemo::charging(bytes_max, when_full, CacheAccount::unbounded())
    }

    /// A memo whose values are charged to `account`.
    pub fn charging(bytes_max: usize, when_full: WhenFull, account: Arc<CacheAccount>) -> Self {
        CommitMemo {
            entries: Mutex::new(Entries {
                values: HashMap::new(),
                bytes: 0,
            }),
            bytes_max,
            when_full,
            account,
        }
    }

    /// The value kept under `key` (or a borrowed form of it), if any.
    pub fn get<Q>(&self, key: &Q) -> Option<Arc<V>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let mut entries = self.lock();
        let kept = entries.values.get_mut(key)?;
        kept.asked = true;
        Some(Arc::clone(&kept.value))
    }

    /// Keeps `value`, weighing `bytes`, under `key` if the bound allows; answers the value
    /// the memo holds under `key` afterwards (an earlier one stays), or `value` when none.
    pub fn keep(&self, key: K, value: Arc<V>, bytes: usize) -> Arc<V> {
        let (answer, dropped) = self.keep_locked(key, value, bytes);
        // The values a memo that starts over lets go are freed here, after the lock is
        // released: freeing tens of megabytes of bitmaps takes milliseconds, and searches on
        // other cores reading this memo would wait for it.
        drop(dropped);
        answer
    }

    /// [`Self::keep`] under the lock; answers the value and the entries the memo dropped
    /// (none unless it started over).
    fn keep_locked(&self, key: K, value: Arc<V>, bytes: usize) -> (Arc<V>, HashMap<K, Kept<V>>) {
        let mut entries = self.lock();
        if let Some(kept) = entries.values.get_mut(&key) {
            kept.asked = true;
            return (Arc::clone(&kept.value), HashMap::new());
        }
        if bytes > self.bytes_max {
            return (value, HashMap::new());
        }
        let mut dropped = HashMap::new();
        if entries.bytes.saturating_add(bytes) > self.bytes_max {
            match self.when_full {
                WhenFull::StartOver => {
                    dropped = std::mem::take(&mut entries.values);
                    self.account.release(std::mem::take(&mut entries.bytes));
                }
                WhenFull::KeepWhatIsThere => return (value, HashMap::new()),
            }
        }
        if !self.account.try_charge(bytes) {
            return (value, dropped);
        }
        entries.bytes += bytes;
        let kept = Kept {
            value: Arc::clone(&value),
            bytes,
            asked: true,
            idle_commits: 0,
        };
        entries.values.insert(key, kept);
        (value, dropped)
    }

    /// Keeps a value carried from the earlier commit's memo, not yet asked for on this
    /// commit, if it fits beside what the memo holds (a carry never makes the memo start
    /// over); answers whether it was kept.
    pub fn keep_carried(&self, entry: CarriedEntry<K, V>) -> bool {
        let mut entries = self.lock();
        if entries.values.contains_key(&entry.key)
            || entries.bytes.saturating_add(entry.bytes) > self.bytes_max
            || !self.account.try_charge(entry.bytes)
        {
            return false;
        }
        entries.bytes += entry.bytes;
        let kept = Kept {
            value: entry.value,
            bytes: entry.bytes,
            asked: false,
            idle_commits: entry.idle_commits,
        };
        entries.values.insert(entry.key, kept);
        true
    }

    /// The entries worth carrying to the next commit: those asked for on this commit, and
    /// those nobody asked for on fewer than `idle_commits_max` commits in a row (this one
    /// included), each with its idle count for the next commit.
    pub fn carried(&self, idle_commits_max: u8) -> Vec<CarriedEntry<K, V>>
    where
        K: Clone,
    {
        let entries = self.lock();
        entries
            .values
            .iter()
            .filter_map(|(key, kept)| {
                let idle_commits = if kept.asked {
                    0
                } else {
                    kept.idle_commits.saturating_add(1)
                };
                (idle_commits < idle_commits_max).then(|| CarriedEntry {
                    key: key.clone(),
                    value: Arc::clone(&kept.value),
                    bytes: kept.bytes,
                    idle_commits,
                })
            })
            .collect()
    }

    /// Whether the memo holds nothing.
    pub fn is_empty(&self) -> bool {
        self.lock().values.is_empty()
    }

    fn lock(&self) -> MutexGuard<'_, Entries<K, V>> {
        // Entries are inserted whole with their weight: a panic elsewhere leaves the memo
        // usable.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<K, V> Drop for CommitMemo<K, V> {
    fn drop(&mut self) {
        let entries = self
            .entries
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        self.account.release(entries.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bound of the memos under test.
    const BYTES_MAX: usize = 10;

    /// The memo of [`values_dropped_on_starting_over_are_freed_outside_the_lock`].
    static PROBED: std::sync::OnceLock<CommitMemo<u32, DropProbe>> = std::sync::OnceLock::new();
    /// Drops of a [`DropProbe`] that found [`PROBED`]'s lock held.
    static DROPPED_UNDER_LOCK: std::sync::atomic::AtomicUsize =
        std::sync::atomic::AtomicUsize::new(0);
    /// Drops of a [`DropProbe`] in all.
    static DROPPED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

    /// A value that notes, when freed, whether [`PROBED`]'s lock was held.
    struct DropProbe;

    impl Drop for DropProbe {
        fn drop(&mut self) {
            use std::sync::atomic::Ordering;
            DROPPED.fetch_add(1, Ordering::SeqCst);
            let held = PROBED
                .get()
                .is_some_and(|memo| memo.entries.try_lock().is_err());
            if held {
                DROPPED_UNDER_LOCK.fetch_add(1, Ordering::SeqCst);
            }
        }
    }

    #[test]
    fn values_dropped_on_starting_over_are_freed_outside_the_lock() {
        use std::sync::atomic::Ordering;
        let memo = PROBED.get_or_init(|| CommitMemo::new(BYTES_MAX, WhenFull::StartOver));
        drop(memo.keep(1, Arc::new(DropProbe), 6));
        drop(memo.keep(2, Arc::new(DropProbe), 6));
        assert_eq!(DROPPED.load(Ordering::SeqCst), 1, "the first value went");
        assert_eq!(DROPPED_UNDER_LOCK.load(Ordering::SeqCst), 0);
        assert!(memo.get(&2).is_some());
    }

    #[test]
    fn a_kept_value_is_answered_and_never_replaced() {
        let memo = CommitMemo::new(BYTES_MAX, WhenFull::StartOver);
        assert!(memo.get(&1).is_none());
        let first = memo.keep(1, Arc::new("first"), 3);
        let second = memo.keep(1, Arc::new("second"), 3);
        assert_eq!(*first, "first");
        assert_eq!(*second, "first");
        assert_eq!(memo.get(&1).as_deref(), Some(&"first"));
    }

    #[test]
    fn a_value_heavier_than_the_bound_is_answered_but_not_kept() {
        for when_full in [WhenFull::StartOver, WhenFull::KeepWhatIsThere] {
            let memo = CommitMemo::new(BYTES_MAX, when_full);
            memo.keep(1, Arc::new(1), 4);
            assert_eq!(*memo.keep(2, Arc::new(2), BYTES_MAX + 1), 2);
            assert!(memo.get(&2).is_none());
            assert!(memo.get(&1).is_some(), "{when_full:?} keeps what fits");
        }
    }

    #[test]
    fn a_full_memo_starts_over_or_keeps_what_is_there() {
        let starting_over = CommitMemo::new(BYTES_MAX, WhenFull::StartOver);
        starting_over.keep(1, Arc::new(1), 6);
        starting_over.keep(2, Arc::new(2), 6);
        assert!(starting_over.get(&1).is_none());
        assert!(starting_over.get(&2).is_some());
        let keeping = CommitMemo::new(BYTES_MAX, WhenFull::KeepWhatIsThere);
        keeping.keep(1, Arc::new(1), 6);
        assert_eq!(*keeping.keep(2, Arc::new(2), 6), 2);
        assert!(keeping.get(&1).is_some());
        assert!(keeping.get(&2).is_none());
    }

    /// Carries `memo`'s entries into a new memo, as a commit's carry does.
    fn next_commit(memo: &CommitMemo<u32, u32>, idle_commits_max: u8) -> CommitMemo<u32, u32> {
        let next = CommitMemo::new(BYTES_MAX, WhenFull::StartOver);
        for entry in memo.carried(idle_commits_max) {
            assert!(next.keep_carried(entry));
        }
        next
    }

    fn carried_keys(memo: &CommitMemo<u32, u32>, idle_commits_max: u8) -> Vec<u32> {
        let mut keys: Vec<u32> = memo
            .carried(idle_commits_max)
            .into_iter()
            .map(|entry| entry.key)
            .collect();
        keys.sort_unstable();
        keys
    }

    #[test]
    fn an_entry_is_carried_while_asked_for_within_the_idle_limit() {
        let first = CommitMemo::new(BYTES_MAX, WhenFull::StartOver);
        first.keep(1, Arc::new(10), 1);
        first.keep(2, Arc::new(20), 1);
        let second = next_commit(&first, 2);
        assert_eq!(carried_keys(&first, 1), [1, 2], "made on the commit: asked");
        // Entry 1 is asked for on the second commit, entry 2 is not.
        assert_eq!(second.get(&1).as_deref(), Some(&10));
        assert_eq!(carried_keys(&second, 1), [1], "only what was asked for");
        assert_eq!(
            carried_keys(&second, 2),
            [1, 2],
            "one idle commit is allowed"
        );
        let third = next_commit(&second, 2);
        assert_eq!(carried_keys(&third, 2), [1], "entry 2: two idle commits");
        assert!(third.get(&2).is_some());
        assert_eq!(carried_keys(&third, 2), [1, 2], "asked for again");
    }

    #[test]
    fn a_carried_entry_never_makes_the_memo_start_over() {
        let memo = CommitMemo::new(BYTES_MAX, WhenFull::StartOver);
        memo.keep(1, Arc::new(1), 6);
        let entry = CarriedEntry {
            key: 2,
            value: Arc::new(2),
            bytes: 6,
            idle_commits: 0,
        };
        assert!(!memo.keep_carried(entry));
        assert!(memo.get(&1).is_some());
        assert!(memo.get(&2).is_none());
    }

    #[test]
    fn a_value_past_the_process_budget_is_answered_but_not_kept() {
        use crate::cache_meter::CacheMeter;
        let meter = CacheMeter::with_budget(8);
        let account = CacheAccount::on(Arc::clone(&meter));
        let memo = CommitMemo::charging(BYTES_MAX, WhenFull::StartOver, Arc::clone(&account));
        assert_eq!(*memo.keep(1, Arc::new(10), 5), 10);
        assert_eq!(*memo.keep(2, Arc::new(20), 5), 20, "answered all the same");
        assert!(memo.get(&2).is_none(), "the budget had 3 bytes left");
        assert_eq!((meter.held(), account.held(), meter.refused()), (5, 5, 1));
        let carried = CarriedEntry {
            key: 3,
            value: Arc::new(30),
            bytes: 4,
            idle_commits: 0,
        };
        assert!(
            !memo.keep_carried(carried),
            "a carry is held to the budget too"
        );
        drop(memo);
        assert_eq!(meter.held(), 0, "a dropped memo gives back what it held");
    }

    #[test]
    fn starting_over_gives_back_what_the_dropped_values_held() {
        use crate::cache_meter::CacheMeter;
        let meter = CacheMeter::with_budget(100);
        let account = CacheAccount::on(Arc::clone(&meter));
        let memo = CommitMemo::charging(BYTES_MAX, WhenFull::StartOver, account);
        memo.keep(1, Arc::new(1), 6);
        memo.keep(2, Arc::new(2), 6);
        assert_eq!(
            meter.held(),
            6,
            "the memo started over: only the second is held"
        );
        assert!(memo.get(&1).is_none());
    }
}
