//! Each core's rate-limit figures: the requests its limiter refused, by kind of identity
//! (`coresearch_rate_limited_requests_total`), and the buckets it holds
//! (`coresearch_rate_limit_buckets`), both summed over the cores at scrape time.
//!
//! Invariant: each core counts in thread-local cells of its own (no atomic, no lock); the
//! routes record a refusal when they answer it, and the buckets held after every charge.

use std::cell::Cell;

use crate::auth::rate_limit::RateLimitKind;

thread_local! {
    /// Refusals by kind, in [`RateLimitKind::ALL`] order.
    static REFUSED: [Cell<u64>; 2] = const { [Cell::new(0), Cell::new(0)] };
    /// Buckets held by kind, in [`RateLimitKind::ALL`] order.
    static BUCKETS: [Cell<u64>; 2] = const { [Cell::new(0), Cell::new(0)] };
}

/// The position of `kind` in the cells.
fn slot(kind: RateLimitKind) -> usize {
    match kind {
        RateLimitKind::ApiKey => 0,
        RateLimitKind::TenantToken => 1,
    }
}

/// A copy of one core's figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RateLimitFigures {
    /// Requests refused, by kind in [`RateLimitKind::ALL`] order.
    pub refused: [u64; 2],
    /// Buckets held, by kind in [`RateLimitKind::ALL`] order.
    pub buckets: [u64; 2],
}

/// Counts one request refused by the `kind` limit on this core.
pub fn record_refusal(kind: RateLimitKind) {
    REFUSED.with(|cells| {
        let cell = &cells[slot(kind)];
        cell.set(cell.get().saturating_add(1));
    });
}

/// Records that this core holds `count` buckets of `kind`.
pub fn record_buckets_held(kind: RateLimitKind, count: usize) {
    BUCKETS.with(|cells| cells[slot(kind)].set(count as u64));
}

/// This core's figures.
pub fn snapshot() -> RateLimitFigures {
    let copy = |cells: &[Cell<u64>; 2]| [cells[0].get(), cells[1].get()];
    RateLimitFigures {
        refused: REFUSED.with(copy),
        buckets: BUCKETS.with(copy),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_and_buckets_are_counted_by_kind() {
        record_refusal(RateLimitKind::TenantToken);
        record_refusal(RateLimitKind::TenantToken);
        record_buckets_held(RateLimitKind::ApiKey, 3);
        let figures = snapshot();
        assert_eq!(figures.refused, [0, 2]);
        assert_eq!(figures.buckets, [3, 0]);
    }
}
