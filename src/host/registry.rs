//! The open shards of the server, shared by every core's [`super::ShardHost`]: a shard is
//! opened, written, closed and removed by its owner core only, and read by any core.
//!
//! Why every core may read: a shard's reads go through a snapshot of its last commit (a
//! read transaction on the memory-mapped page store and the commit's immutable view, whose
//! memos sit behind locks), which any thread may take and read while the owner's indexing
//! thread commits — the owner's own searches already read beside its indexing thread. A read
//! that only needs a snapshot ([`super::protocol::ShardRequest::READS_SNAPSHOT`]) can then
//! run where it arrives instead of crossing the mesh: for an index of one shard this spreads
//! its searches over every core and saves the hop (see `crate::coordinator`).
//!
//! Open on demand, within a budget ([`StoreBudget`]): a server may hold thousands of
//! indexes, and an open shard holds a file descriptor, mappings and caches. When an owner
//! opens a shard past the budget, it closes its own least recently used shards that nobody
//! holds; every core also closes its own shards idle for longer than the budget's idle time
//! ([`ShardRegistry::close_idle`]). A closed shard opens again on its next command, as at
//! start; its document count and unused bytes are kept ([`ClosedShardFigures`]), so a
//! scrape of `/metrics` or a read of `/stats` does not open it, and counting an open one is
//! not a use of it ([`ShardRegistry::peek`]).
//!
//! Memory for caches is in the budget too: every open shard's commit caches are charged to
//! the registry's [`CacheMeter`], which refuses new entries past `cache_bytes_max`; every
//! core closes its own least recently used shards that hold caches once the caches pass
//! [`CACHE_RECLAIM_ABOVE`] of the budget, until they are back under [`CACHE_RECLAIM_TO`]
//! ([`ShardRegistry::close_over_cache_budget`]), so that hot indexes find room to cache. A
//! shard in use is not closed for its caches; a hot set whose caches pass the budget is held
//! to it by the refusals alone.
//!
//! Invariants:
//! - only the owner core inserts a shard (opening or creating its file) and closes or removes
//!   it (closing it before its file goes); other cores read what is there and never open one;
//! - a reader holds the shard's `Arc` for the length of its read, so a removal while it
//!   reads leaves its mapping valid until it ends;
//! - a shard is closed only while nobody else holds it: its `Arc` held by the registry
//!   alone and no snapshot, transaction or vector graph of it alive
//!   ([`Shard::is_unreferenced`]), checked under the registry's lock, where every new holder
//!   comes from. So its files are closed (and their locks let go) when it leaves the
//!   registry, and the next open of the same file never meets the old one;
//! - the searches remembered for warming a commit ([`RecentSearches`]) are per shard and
//!   shared too, so the owner's commit replays the searches every core ran.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use shards::cache_meter::CacheMeter;
use shards::shard::{Shard, ShardStats};

use super::ShardAddress;
use super::search::ShardSearchRequest;
use super::warming::{RecentSearches, RememberedSearch};

/// How many shards may stay open, and for how long one may stay idle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreBudget {
    /// Open shards past which an owner closes its least recently used ones
    /// (`--max-open-stores`, default [`open_stores_max_for_this_machine`]).
    pub open_stores_max: usize,
    /// A shard nobody used for this long is closed (`--store-idle-seconds`).
    pub idle: Duration,
    /// Bytes the commit caches of every open shard may hold together
    /// (`--max-cache-memory`).
    pub cache_bytes_max: usize,
}

/// A fraction of the cache budget, as numerator and denominator.
#[derive(Debug, Clone, Copy)]
pub struct BudgetShare {
    pub numerator: usize,
    pub denominator: usize,
}

impl BudgetShare {
    /// This share of `bytes`.
    pub fn of(self, bytes: usize) -> usize {
        bytes / self.denominator * self.numerator
    }
}

/// Caches holding more than this share of the budget make the cores close least recently
/// used shards: before the budget is full, so that new entries are seldom refused.
pub const CACHE_RECLAIM_ABOVE: BudgetShare = BudgetShare {
    numerator: 15,
    denominator: 16,
};
/// A shard used this recently is never closed for its caches: it is in use, and would only
/// build them again (a hot set larger than the budget is held by refusing new entries).
pub const CACHE_RECLAIM_RECENT_USE: Duration = Duration::from_secs(2);
/// What the closing brings the caches back under: a margin, so that one more entry does not
/// start the closing again.
pub const CACHE_RECLAIM_TO: BudgetShare = BudgetShare {
    numerator: 3,
    denominator: 4,
};

/// File descriptors an open shard may hold: its page store's, and a vector file's two
/// (mapping and direct reads) for an embedder. The default budget leaves the process this
/// many per store.
pub const DESCRIPTORS_PER_STORE: u64 = 4;
/// Mappings an open shard may hold: its page store's generations and its vector files'. The
/// default budget leaves this many of the kernel's `vm.max_map_count` per store.
pub const MAPPINGS_PER_STORE: u64 = 4;
/// The default budget never goes below this many open shards, whatever the limits say.
pub const OPEN_STORES_MIN: usize = 64;
/// Where the kernel tells its limit of mappings per process.
const MAX_MAP_COUNT_PATH: &str = "/proc/sys/vm/max_map_count";

/// The default of `--max-open-stores` on this machine: what its descriptor and mapping limits
/// allow (see [`DESCRIPTORS_PER_STORE`], [`MAPPINGS_PER_STORE`]).
pub fn open_stores_max_for_this_machine() -> usize {
    default_open_stores_max(open_files_limit(), mappings_limit())
}

/// Open shards that `descriptors` open files and `mappings` mappings leave room for.
pub fn default_open_stores_max(descriptors: Option<u64>, mappings: Option<u64>) -> usize {
    let by_descriptors = descriptors.map_or(u64::MAX, |limit| limit / DESCRIPTORS_PER_STORE);
    let by_mappings = mappings.map_or(u64::MAX, |limit| limit / MAPPINGS_PER_STORE);
    let allowed = by_descriptors.min(by_mappings);
    usize::try_from(allowed)
        .unwrap_or(usize::MAX)
        .max(OPEN_STORES_MIN)
}

/// The process's soft limit of open files, if it has one.
fn open_files_limit() -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one `rlimit` through a pointer to a live local.
    let outcome = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    (outcome == 0 && limit.rlim_cur != libc::RLIM_INFINITY).then_some(limit.rlim_cur)
}

/// The kernel's limit of mappings per process (`vm.max_map_count`), if it can be read.
fn mappings_limit() -> Option<u64> {
    std::fs::read_to_string(MAX_MAP_COUNT_PATH)
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// One open shard and when it was last used (milliseconds since the registry was made).
struct OpenShard {
    shard: Arc<Shard>,
    last_used_millis: u64,
}

/// The open shards every core may read, and the searches each shard remembers.
pub struct ShardRegistry {
    open: Mutex<HashMap<ShardAddress, OpenShard>>,
    recent_searches: Mutex<HashMap<ShardAddress, RecentSearches>>,
    /// The figures of each shard closed to keep the budget, as of its last commit: a scrape
    /// of `/metrics` counts documents and unused bytes without opening every closed shard
    /// again.
    closed_figures: Mutex<HashMap<ShardAddress, ClosedShardFigures>>,
    budget: StoreBudget,
    /// What the open shards' commit caches hold, within `budget.cache_bytes_max`.
    caches: Arc<CacheMeter>,
    started: Instant,
    opened: AtomicU64,
    closed: AtomicU64,
    closed_for_caches: AtomicU64,
}

/// What a closed shard's statistics need, kept from when it closed (nothing but its owner
/// writes it, and the owner opens it first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClosedShardFigures {
    /// What `GET /indexes/{uid}/stats` sums (the document count among them).
    pub stats: ShardStats,
    /// Bytes of its file without live data.
    pub unused_bytes: u64,
}

/// What the registry tells `/metrics`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegistryFigures {
    pub open_stores: u64,
    pub open_stores_max: u64,
    pub opened_total: u64,
    pub closed_total: u64,
    /// Shards closed to bring the caches back within their budget (counted in
    /// `closed_total` too).
    pub closed_for_caches_total: u64,
    pub cache_bytes: u64,
    pub cache_bytes_max: u64,
    /// Cache entries not kept because the budget was full.
    pub cache_refused_total: u64,
}

impl ShardRegistry {
    /// An empty registry that keeps its shards within `budget`.
    pub fn with_budget(budget: StoreBudget) -> ShardRegistry {
        assert!(budget.open_stores_max > 0, "a budget lets one store open");
        ShardRegistry {
            open: Mutex::new(HashMap::new()),
            recent_searches: Mutex::new(HashMap::new()),
            closed_figures: Mutex::new(HashMap::new()),
            budget,
            caches: CacheMeter::with_budget(budget.cache_bytes_max),
            started: Instant::now(),
            opened: AtomicU64::new(0),
            closed: AtomicU64::new(0),
            closed_for_caches: AtomicU64::new(0),
        }
    }

    /// The meter every shard's commit caches are charged to (given to each shard at open).
    pub fn cache_meter(&self) -> &Arc<CacheMeter> {
        &self.caches
    }

    /// The budget the registry keeps.
    pub fn budget(&self) -> StoreBudget {
        self.budget
    }

    fn now_millis(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// The shard at `address` if its owner opened it; counts as a use of it.
    pub fn get(&self, address: &ShardAddress) -> Option<Arc<Shard>> {
        let now = self.now_millis();
        let mut open = locked(&self.open);
        let entry = open.get_mut(address)?;
        entry.last_used_millis = now;
        Some(entry.shard.clone())
    }

    /// The shard at `address` if its owner opened it, without counting as a use of it (a
    /// scrape of `/metrics` must not keep every shard from being idle).
    pub fn peek(&self, address: &ShardAddress) -> Option<Arc<Shard>> {
        locked(&self.open)
            .get(address)
            .map(|entry| entry.shard.clone())
    }

    /// Whether the owner of `address` opened it (a reader elsewhere may then read it).
    pub fn is_open(&self, address: &ShardAddress) -> bool {
        locked(&self.open).contains_key(address)
    }

    /// Makes `shard`, just opened by its owner, readable from every core.
    pub(super) fn insert(&self, address: ShardAddress, shard: Arc<Shard>) {
        let entry = OpenShard {
            shard,
            last_used_millis: self.now_millis(),
        };
        locked(&self.closed_figures).remove(&address);
        let previous = locked(&self.open).insert(address, entry);
        // Two open copies of one shard would be two writers of one page store.
        assert!(previous.is_none(), "a shard opened twice");
        self.opened.fetch_add(1, Ordering::Relaxed);
    }

    /// Closes the shard at `address` (its owner removes it); readers still holding it finish.
    pub(super) fn remove(&self, address: &ShardAddress) {
        let removed = locked(&self.open).remove(address);
        locked(&self.recent_searches).remove(address);
        locked(&self.closed_figures).remove(address);
        if removed.is_some() {
            self.closed.fetch_add(1, Ordering::Relaxed);
        }
        drop(removed);
    }

    /// Closes shards that `may_close` allows (the caller's own, with no prepared batch) and
    /// nobody holds, least recently used first, until the open shards fit the budget.
    /// Answers how many it closed; fewer when the others are in use.
    pub(super) fn close_over_budget(&self, may_close: impl Fn(&ShardAddress) -> bool) -> usize {
        let budget = self.budget.open_stores_max;
        self.close_least_recently_used(may_close, u64::MAX, |open| open.saturating_sub(budget))
    }

    /// When the caches hold more than [`CACHE_RECLAIM_ABOVE`] of their budget: closes
    /// shards that `may_close` allows, nobody holds, nobody used for
    /// [`CACHE_RECLAIM_RECENT_USE`] and that hold caches, least recently used first, until
    /// what they hold brings the caches under [`CACHE_RECLAIM_TO`]. Answers how many it
    /// closed.
    pub(super) fn close_over_cache_budget(
        &self,
        may_close: impl Fn(&ShardAddress) -> bool,
    ) -> usize {
        let budget = self.budget.cache_bytes_max;
        if self.caches.held() <= CACHE_RECLAIM_ABOVE.of(budget) {
            return 0;
        }
        let recent_millis = u64::try_from(CACHE_RECLAIM_RECENT_USE.as_millis()).unwrap_or(0);
        let used_before = self.now_millis().saturating_sub(recent_millis);
        let closing = {
            let mut open = locked(&self.open);
            let excess = self.caches.held_past(CACHE_RECLAIM_TO.of(budget));
            let mut candidates: Vec<(u64, usize, ShardAddress)> = open
                .iter()
                .filter(|(address, entry)| {
                    entry.last_used_millis < used_before && may_close(address) && is_closable(entry)
                })
                .map(|(address, entry)| {
                    let held = entry.shard.cache_bytes();
                    (entry.last_used_millis, held, address.clone())
                })
                .filter(|(_, held, _)| *held > 0)
                .collect();
            candidates.sort_unstable_by_key(|(last_used, _, _)| *last_used);
            let mut freed = 0usize;
            let chosen = candidates.into_iter().take_while(|(_, held, _)| {
                let more = freed < excess;
                freed = freed.saturating_add(*held);
                more
            });
            take_all(&mut open, chosen.map(|(_, _, address)| address))
        };
        let closed = self.forget(closing);
        self.closed_for_caches
            .fetch_add(closed as u64, Ordering::Relaxed);
        closed
    }

    /// Closes the shards `may_close` allows that nobody used for the budget's idle time and
    /// nobody holds. Answers how many it closed.
    pub(super) fn close_idle(&self, may_close: impl Fn(&ShardAddress) -> bool) -> usize {
        let idle_millis = u64::try_from(self.budget.idle.as_millis()).unwrap_or(u64::MAX);
        let cutoff = self.now_millis().saturating_sub(idle_millis);
        self.close_least_recently_used(may_close, cutoff, |open| open)
    }

    /// Closes the shards `may_close` allows, last used before `used_before` and held by
    /// nobody, least recently used first, at most `how_many(open shards)` of them.
    fn close_least_recently_used(
        &self,
        may_close: impl Fn(&ShardAddress) -> bool,
        used_before: u64,
        how_many: impl FnOnce(usize) -> usize,
    ) -> usize {
        let closing = {
            let mut open = locked(&self.open);
            let limit = how_many(open.len());
            if limit == 0 {
                return 0;
            }
            let mut candidates: Vec<(u64, ShardAddress)> = open
                .iter()
                .filter(|(address, entry)| {
                    entry.last_used_millis < used_before && may_close(address) && is_closable(entry)
                })
                .map(|(address, entry)| (entry.last_used_millis, address.clone()))
                .collect();
            candidates.sort_unstable_by_key(|(last_used, _)| *last_used);
            candidates.truncate(limit);
            take_all(
                &mut open,
                candidates.into_iter().map(|(_, address)| address),
            )
        };
        self.forget(closing)
    }

    /// Drops shards taken out of the open map (closing their files, outside the lock) and
    /// the searches they remembered.
    fn forget(&self, closing: Vec<(ShardAddress, OpenShard)>) -> usize {
        let count = closing.len();
        if count == 0 {
            return 0;
        }
        {
            let mut recent = locked(&self.recent_searches);
            for (address, _) in &closing {
                recent.remove(address);
            }
        }
        for (address, entry) in closing {
            debug_assert_eq!(Arc::strong_count(&entry.shard), 1, "a closed shard is held");
            // Nothing writes a closed shard but its owner, which opens it first (and so
            // forgets this count): the count stays true while the shard is closed.
            if let Ok(stats) = entry.shard.stats() {
                let figures = ClosedShardFigures {
                    stats,
                    unused_bytes: entry.shard.unused_bytes(),
                };
                locked(&self.closed_figures).insert(address, figures);
            }
            drop(entry);
        }
        self.closed.fetch_add(count as u64, Ordering::Relaxed);
        count
    }

    /// The figures of the shard at `address` as of its last commit, when it is closed and
    /// was open earlier in this process (`None`: open, or never opened).
    pub fn closed_figures(&self, address: &ShardAddress) -> Option<ClosedShardFigures> {
        if locked(&self.open).contains_key(address) {
            return None;
        }
        locked(&self.closed_figures).get(address).cloned()
    }

    /// The registry's figures, for `/metrics`.
    pub fn figures(&self) -> RegistryFigures {
        RegistryFigures {
            open_stores: locked(&self.open).len() as u64,
            open_stores_max: self.budget.open_stores_max as u64,
            opened_total: self.opened.load(Ordering::Relaxed),
            closed_total: self.closed.load(Ordering::Relaxed),
            closed_for_caches_total: self.closed_for_caches.load(Ordering::Relaxed),
            cache_bytes: self.caches.held() as u64,
            cache_bytes_max: self.caches.bytes_max() as u64,
            cache_refused_total: self.caches.refused(),
        }
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

/// Whether nobody but the registry holds the shard (checked under the registry's lock, where
/// every new holder comes from).
fn is_closable(entry: &OpenShard) -> bool {
    Arc::strong_count(&entry.shard) == 1 && entry.shard.is_unreferenced()
}

/// Takes the entries at `addresses` out of `open`.
fn take_all(
    open: &mut HashMap<ShardAddress, OpenShard>,
    addresses: impl Iterator<Item = ShardAddress>,
) -> Vec<(ShardAddress, OpenShard)> {
    addresses
        .filter_map(|address| open.remove(&address).map(|entry| (address, entry)))
        .collect()
}

/// `mutex` locked; a panic while it was held left the map whole (every change under these
/// locks is one map operation), so a poisoned lock is taken as it is.
fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::{CACHE_RECLAIM_ABOVE, CACHE_RECLAIM_TO, OPEN_STORES_MIN, default_open_stores_max};

    #[test]
    fn the_cache_reclaim_starts_before_the_budget_is_full_and_leaves_a_margin() {
        let budget = 16 << 20;
        assert_eq!(CACHE_RECLAIM_ABOVE.of(budget), 15 << 20);
        assert_eq!(CACHE_RECLAIM_TO.of(budget), 12 << 20);
        assert!(CACHE_RECLAIM_TO.of(usize::MAX) < CACHE_RECLAIM_ABOVE.of(usize::MAX));
    }

    #[test]
    fn the_default_budget_follows_the_tighter_limit_and_has_a_floor() {
        assert_eq!(default_open_stores_max(Some(20_000), Some(65_530)), 5_000);
        assert_eq!(default_open_stores_max(Some(1 << 20), Some(65_530)), 16_382);
        assert_eq!(default_open_stores_max(Some(1_024), None), 256);
        assert_eq!(
            default_open_stores_max(Some(100), Some(100)),
            OPEN_STORES_MIN
        );
        assert_eq!(default_open_stores_max(None, None), usize::MAX);
    }
}
