//! When the last search was received, process-wide: every search request records the time
//! (one relaxed atomic store on whichever core serves it), and the scheduler reads it to
//! tell whether its next batch would compete with searches (see `tasks::coalescing`).
//!
//! Invariant: the recorded time is milliseconds since the first use of this module (a
//! monotonic clock); 0 means no search was received yet, so a search at that very first
//! millisecond is recorded as 1.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The clock's origin.
static ORIGIN: OnceLock<Instant> = OnceLock::new();
/// Milliseconds since [`ORIGIN`] at the last search (0: none yet).
static LAST_SEARCH_MILLISECONDS: AtomicU64 = AtomicU64::new(0);

fn now_milliseconds() -> u64 {
    let origin = ORIGIN.get_or_init(Instant::now);
    u64::try_from(origin.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// Records one search request (search, similar, facet search, multi-search).
#[inline]
pub fn note_search() {
    LAST_SEARCH_MILLISECONDS.store(now_milliseconds().max(1), Ordering::Relaxed);
}

/// How long ago the last search was received (`None`: none yet).
pub fn since_last_search() -> Option<Duration> {
    let last = LAST_SEARCH_MILLISECONDS.load(Ordering::Relaxed);
    (last != 0).then(|| Duration::from_millis(now_milliseconds().saturating_sub(last)))
}
