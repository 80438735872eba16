//! The open-store families: how many shards (page stores with their vector files) are open
//! against the budget, and how many were opened and closed since start. With thousands of
//! indexes, shards open on demand and the least recently used close (see
//! `crate::host::registry`); a closed total that climbs with the opened total means the
//! budget is too small for the indexes in use. The cache families show the memory the
//! open shards' search caches hold against their budget, the entries refused because it was
//! full and the shards closed to make room.
//!
//! Invariant: every name starts with `coresearch_`, so no family can be taken for one of
//! Meilisearch's.

use super::exposition::Exposition;
use crate::host::registry::RegistryFigures;

/// Adds the open-store families of `figures` to `exposition`.
pub fn add(exposition: &mut Exposition, figures: &RegistryFigures) {
    exposition.gauges(
        "coresearch_open_stores",
        "Shards open now",
        vec![(Vec::new(), figures.open_stores as f64)],
    );
    exposition.gauges(
        "coresearch_open_stores_max",
        "Shards kept open at most before the least recently used close",
        vec![(Vec::new(), figures.open_stores_max as f64)],
    );
    exposition.counters(
        "coresearch_stores_opened_total",
        "Shards opened since start (first use, or again after being closed)",
        vec![(Vec::new(), figures.opened_total as f64)],
    );
    exposition.counters(
        "coresearch_stores_closed_total",
        "Shards closed since start: to keep the budget, after their idle time, or deleted",
        vec![(Vec::new(), figures.closed_total as f64)],
    );
    exposition.counters(
        "coresearch_stores_closed_for_caches_total",
        "Shards closed since start to bring the search caches back within their memory budget",
        vec![(Vec::new(), figures.closed_for_caches_total as f64)],
    );
    exposition.gauges(
        "coresearch_cache_bytes",
        "Bytes the open shards' search caches hold",
        vec![(Vec::new(), figures.cache_bytes as f64)],
    );
    exposition.gauges(
        "coresearch_cache_bytes_max",
        "Bytes the search caches may hold together (--max-cache-memory)",
        vec![(Vec::new(), figures.cache_bytes_max as f64)],
    );
    exposition.counters(
        "coresearch_cache_refused_total",
        "Search cache entries not kept since start because the memory budget was full",
        vec![(Vec::new(), figures.cache_refused_total as f64)],
    );
}
