//! The dense adjacency (`graph::dense`) of a committed graph version, shared by its readers so
//! that a search reads a neighbour list by index instead of searching the node tree.
//!
//! Versions: every write transaction that changes links stores a fresh *links version* (a
//! 64-bit value drawn from a process-wide sequence mixed with a random seed, never 0) in the
//! graph's metadata. A dense adjacency is tagged with the version of the tree state it equals,
//! and a reader uses it only if the version its snapshot stores is the same.
//! - The writer publishes its adjacency as *pending* when it finishes (it equals what its
//!   transaction commits); a reader whose snapshot carries that version promotes it to
//!   *current*. An aborted transaction's version never appears in a committed snapshot (a later
//!   one draws another value), so its pending adjacency is never used.
//! - A reader of a version without adjacency (after open, or an older snapshot) builds one from
//!   its snapshot's node tree and installs it as current: once per version, not per query.
//! - Version 0 (graphs written before versions existed) is never cached: readers search the
//!   tree until the next write transaction that changes links.
//!
//! Invariant: an adjacency tagged `v` holds exactly the nodes and links of the node tree of any
//! committed snapshot whose stored version is `v`. Memory: up to two adjacencies (current and
//! pending) plus the writer's working copy, `(1 + m0) * 4 + 1` bytes a record each.

use crate::vector::graph::dense::DenseLinks;
use crate::vector::random::SplitMix64;
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};

/// The links version of graphs that never stored one (never cached).
pub const LINKS_VERSION_NONE: u64 = 0;

/// Process-wide source of links versions.
static VERSION_SEQUENCE: AtomicU64 = AtomicU64::new(0);
/// Random per process, so that two processes writing one store draw different versions.
static VERSION_SEED: LazyLock<u64> = LazyLock::new(|| RandomState::new().hash_one(0x5EED_u64));

/// A links version never drawn before by this process (and, with overwhelming probability,
/// by any other), never `LINKS_VERSION_NONE`.
pub fn new_links_version() -> u64 {
    loop {
        let sequence = VERSION_SEQUENCE.fetch_add(1, Ordering::Relaxed);
        let version = SplitMix64::new(*VERSION_SEED ^ sequence).next_u64();
        if version != LINKS_VERSION_NONE {
            return version;
        }
    }
}

/// One tagged adjacency.
type Tagged = (u64, Arc<DenseLinks>);

#[derive(Default)]
struct Slots {
    current: Option<Tagged>,
    pending: Option<Tagged>,
}

/// The adjacencies of one graph (see the module documentation).
#[derive(Default)]
pub struct LinksCache {
    slots: Mutex<Slots>,
}

impl LinksCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    fn slots(&self) -> std::sync::MutexGuard<'_, Slots> {
        self.slots
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// The adjacency of `version`, if cached (a pending one is promoted to current).
    pub fn get(&self, version: u64) -> Option<Arc<DenseLinks>> {
        if version == LINKS_VERSION_NONE {
            return None;
        }
        let mut slots = self.slots();
        if let Some((tag, links)) = &slots.current {
            if *tag == version {
                return Some(Arc::clone(links));
            }
        }
        if slots
            .pending
            .as_ref()
            .is_some_and(|(tag, _)| *tag == version)
        {
            slots.current = slots.pending.take();
            return slots.current.as_ref().map(|(_, links)| Arc::clone(links));
        }
        None
    }

    /// Installs `links`, read from a committed snapshot of `version`, as current.
    pub fn install(&self, version: u64, links: Arc<DenseLinks>) {
        if version != LINKS_VERSION_NONE {
            self.slots().current = Some((version, links));
        }
    }

    /// Offers a writer's adjacency, valid once a snapshot of `version` is committed.
    pub fn publish_pending(&self, version: u64, links: Arc<DenseLinks>) {
        if version != LINKS_VERSION_NONE {
            self.slots().pending = Some((version, links));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_distinct_and_only_matching_versions_are_served() {
        let versions: Vec<u64> = (0..1_000).map(|_| new_links_version()).collect();
        let mut sorted = versions.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), versions.len());
        assert!(!versions.contains(&LINKS_VERSION_NONE));
        let cache = LinksCache::new();
        let links = Arc::new(DenseLinks::new(4, 2));
        assert!(cache.get(versions[0]).is_none());
        cache.publish_pending(versions[0], Arc::clone(&links));
        assert!(cache.get(versions[1]).is_none());
        assert!(cache.get(versions[0]).is_some(), "pending is promoted");
        cache.publish_pending(versions[1], Arc::clone(&links));
        assert!(
            cache.get(versions[0]).is_some(),
            "current stays while pending waits"
        );
        cache.install(LINKS_VERSION_NONE, links);
        assert!(cache.get(LINKS_VERSION_NONE).is_none());
    }
}
