//! A memo of values made on one commit, bounded in bytes: what the commit view's caches
//! (prefix unions, range unions, facet columns, facet search forms) keep between searches.
//!
//! Values are shared (`Arc`) and never change once kept; a commit is immutable, so an entry
//! never goes stale while the view that owns the memo lives. Each cache decides which values
//! are worth keeping and what they weigh; the memo only holds them within its byte bound, by
//! one of two rules ([`WhenFull`]).
//!
//! Invariants: the bytes counted are the sum of the kept entries' weights, at most the bound;
//! an entry, once kept, is never replaced (the first value kept under a key stays) until the
//! memo starts over.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// What a full memo does with a value that would pass its bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenFull {
    /// Drops every entry and keeps the new one (values asked for lately matter most).
    StartOver,
    /// Keeps what it holds and not the new value.
    KeepWhatIsThere,
}

struct Entries<K, V> {
    values: HashMap<K, Arc<V>>,
    bytes: usize,
}

/// Values made on one commit, by key, within `bytes_max`.
pub struct CommitMemo<K, V> {
    entries: Mutex<Entries<K, V>>,
    bytes_max: usize,
    when_full: WhenFull,
}

impl<K: Hash + Eq, V> CommitMemo<K, V> {
    pub fn new(bytes_max: usize, when_full: WhenFull) -> Self {
        CommitMemo {
            entries: Mutex::new(Entries {
                values: HashMap::new(),
                bytes: 0,
            }),
            bytes_max,
            when_full,
        }
    }

    /// The value kept under `key` (or a borrowed form of it), if any.
    pub fn get<Q>(&self, key: &Q) -> Option<Arc<V>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.lock().values.get(key).map(Arc::clone)
    }

    /// Keeps `value`, weighing `bytes`, under `key` if the bound allows; answers the value
    /// the memo holds under `key` afterwards (an earlier one stays), or `value` when none.
    pub fn keep(&self, key: K, value: Arc<V>, bytes: usize) -> Arc<V> {
        let mut entries = self.lock();
        if let Some(kept) = entries.values.get(&key) {
            return Arc::clone(kept);
        }
        if bytes > self.bytes_max {
            return value;
        }
        if entries.bytes.saturating_add(bytes) > self.bytes_max {
            match self.when_full {
                WhenFull::StartOver => {
                    entries.values.clear();
                    entries.bytes = 0;
                }
                WhenFull::KeepWhatIsThere => return value,
            }
        }
        entries.bytes += bytes;
        entries.values.insert(key, Arc::clone(&value));
        value
    }

    fn lock(&self) -> MutexGuard<'_, Entries<K, V>> {
        // Entries are inserted whole with their weight: a panic elsewhere leaves the memo
        // usable.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bound of the memos under test.
    const BYTES_MAX: usize = 10;

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
}
