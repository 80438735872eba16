//! The open shards of the server, shared by every core's [`super::ShardHost`]: a shard is
//! opened, written and removed by its owner core only, and read by any core.
//!
//! Why every core may read: a shard's reads go through a snapshot of its last commit (a
//! read transaction on the memory-mapped page store and the commit's immutable view, whose
//! memos sit behind locks), which any thread may take and read while the owner's indexing
//! thread commits — the owner's own searches already read beside its indexing thread. A read
//! that only needs a snapshot ([`super::protocol::ShardRequest::READS_SNAPSHOT`]) can then
//! run where it arrives instead of crossing the mesh: for an index of one shard this spreads
//! its searches over every core and saves the hop (see `crate::coordinator`).
//!
//! Invariants:
//! - only the owner core inserts a shard (opening or creating its file) and removes it
//!   (closing it before its file goes); other cores read what is there and never open one;
//! - a reader holds the shard's `Arc` for the length of its read, so a removal while it
//!   reads leaves its mapping valid until it ends;
//! - the searches remembered for warming a commit ([`RecentSearches`]) are per shard and
//!   shared too, so the owner's commit replays the searches every core ran.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use shards::shard::Shard;

use super::ShardAddress;
use super::search::ShardSearchRequest;
use super::warming::{RecentSearches, RememberedSearch};

/// The open shards every core may read, and the searches each shard remembers.
#[derive(Default)]
pub struct ShardRegistry {
    open: Mutex<HashMap<ShardAddress, Arc<Shard>>>,
    recent_searches: Mutex<HashMap<ShardAddress, RecentSearches>>,
}

impl ShardRegistry {
    /// The shard at `address` if its owner opened it.
    pub fn get(&self, address: &ShardAddress) -> Option<Arc<Shard>> {
        locked(&self.open).get(address).cloned()
    }

    /// Whether the owner of `address` opened it (a reader elsewhere may then read it).
    pub fn is_open(&self, address: &ShardAddress) -> bool {
        locked(&self.open).contains_key(address)
    }

    /// Makes `shard`, just opened by its owner, readable from every core.
    pub(super) fn insert(&self, address: ShardAddress, shard: Arc<Shard>) {
        let previous = locked(&self.open).insert(address, shard);
        debug_assert!(previous.is_none(), "a shard opened twice");
    }

    /// Closes the shard at `address` (its owner removes it); readers still holding it finish.
    pub(super) fn remove(&self, address: &ShardAddress) {
        locked(&self.open).remove(address);
        locked(&self.recent_searches).remove(address);
    }

    /// Remembers `request` as the shard's most recent search, for warming its next commit.
    ///
    /// Every search of every core comes here, so the lock is held only to count the search
    /// and, for the one in [`super::warming::REMEMBER_EVERY`] taken in, to insert it: the
    /// clone and hash of [`RememberedSearch::of`] run between the two.
    pub(super) fn remember_search(&self, address: &ShardAddress, request: &ShardSearchRequest) {
        let taken_in = {
            let mut all = locked(&self.recent_searches);
            if !all.contains_key(address) {
                all.insert(address.clone(), RecentSearches::default());
            }
            all.get_mut(address)
                .is_some_and(|recent| recent.offer(request))
        };
        if !taken_in {
            return;
        }
        let search = RememberedSearch::of(request);
        // A shard removed in between takes nothing in.
        if let Some(recent) = locked(&self.recent_searches).get_mut(address) {
            recent.keep(search);
        }
    }

    /// The searches the shard's next commit replays (`None`: no search since the last one).
    pub(super) fn searches_to_replay(
        &self,
        address: &ShardAddress,
    ) -> Option<Vec<ShardSearchRequest>> {
        locked(&self.recent_searches)
            .get_mut(address)
            .and_then(RecentSearches::take_replay)
    }
}

/// `mutex` locked; a panic while it was held left the map whole (every change under these
/// locks is one map operation), so a poisoned lock is taken as it is.
fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
