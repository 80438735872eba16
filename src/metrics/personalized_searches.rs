//! `meilisearch_personalized_search_requests`: the searches of one index (`POST` and `GET
//! /indexes/{uid}/search`) that asked for `personalize`, as Meilisearch 1.41 counts them —
//! once the search holds its permit, whatever its outcome (a refusal for want of a key
//! included); a multi-search's queries are not counted.
//!
//! Invariant: each core counts in a thread-local cell of its own (no atomic, no lock); a
//! scrape sums the cores' counts.

use std::cell::Cell;

thread_local! {
    static PERSONALIZED_SEARCHES: Cell<u64> = const { Cell::new(0) };
}

/// Counts one personalized search on this core.
pub fn record() {
    PERSONALIZED_SEARCHES.with(|count| count.set(count.get().saturating_add(1)));
}

/// The personalized searches this core counted.
pub fn count() -> u64 {
    PERSONALIZED_SEARCHES.with(Cell::get)
}
