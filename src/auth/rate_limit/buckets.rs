//! The buckets of one kind of identity on one core, bounded in number.
//!
//! A full bucket answers as a new one would ([`TokenBucket::is_full`]), so a core forgets
//! full buckets whenever it sweeps, with no effect on any answer. It sweeps only when a new
//! identity arrives while it holds [`BUCKETS_PER_CORE_MAX`] buckets. If fewer than a quarter
//! of them are full then, it also forgets the buckets closest to full until it holds
//! [`BUCKETS_KEPT_AFTER_SWEEP`]: those identities start again from a full bucket, a leniency
//! only a flood of distinct identities can cause, and the price of bounded memory.
//!
//! Invariants: the map never holds more than [`BUCKETS_PER_CORE_MAX`] buckets; a sweep frees
//! at least a quarter of the map, so its cost spreads over the insertions that follow; only
//! the core that owns the map touches it (no lock, no atomic).

use std::collections::HashMap;
use std::hash::Hash;

use super::bucket::{BucketShape, Moment, RetryAfterSeconds, TokenBucket};

/// The most buckets of one kind a core holds (about 400 KiB of map at most).
pub const BUCKETS_PER_CORE_MAX: usize = 16_384;
/// The buckets a sweep leaves at most: three quarters of [`BUCKETS_PER_CORE_MAX`].
pub const BUCKETS_KEPT_AFTER_SWEEP: usize = BUCKETS_PER_CORE_MAX / 4 * 3;

/// One core's buckets of one kind, by identity.
#[derive(Debug)]
pub struct Buckets<Identity> {
    shape: BucketShape,
    buckets: HashMap<Identity, TokenBucket>,
    /// The most buckets held, [`BUCKETS_PER_CORE_MAX`] outside tests.
    capacity: usize,
}

impl<Identity: Hash + Eq> Buckets<Identity> {
    /// No bucket yet; every bucket will have `shape`.
    pub fn new(shape: BucketShape) -> Buckets<Identity> {
        Buckets::with_capacity(shape, BUCKETS_PER_CORE_MAX)
    }

    /// No bucket yet, holding at most `capacity` (at least 4) buckets.
    fn with_capacity(shape: BucketShape, capacity: usize) -> Buckets<Identity> {
        Buckets {
            shape,
            buckets: HashMap::new(),
            capacity: capacity.max(4),
        }
    }

    /// The shape of every bucket.
    pub fn shape(&self) -> BucketShape {
        self.shape
    }

    /// Takes a token from `identity`'s bucket at `now` (a new identity starts full).
    pub fn take(&mut self, identity: Identity, now: Moment) -> Result<(), RetryAfterSeconds> {
        if self.buckets.len() >= self.capacity && !self.buckets.contains_key(&identity) {
            self.sweep(now);
        }
        let shape = self.shape;
        self.buckets
            .entry(identity)
            .or_insert_with(|| TokenBucket::full(now))
            .take(shape, now)
    }

    /// The buckets held.
    pub fn len(&self) -> usize {
        self.buckets.len()
    }

    /// Whether no bucket is held.
    pub fn is_empty(&self) -> bool {
        self.buckets.is_empty()
    }

    /// Forgets the full buckets, then, above three quarters of the capacity, those closest to
    /// full.
    fn sweep(&mut self, now: Moment) {
        self.buckets.retain(|_, bucket| !bucket.is_full(now));
        let kept = self.capacity / 4 * 3;
        let excess = self.buckets.len().saturating_sub(kept);
        if excess == 0 {
            return;
        }
        let mut moments: Vec<Moment> = self.buckets.values().map(TokenBucket::full_at).collect();
        let (_, &mut threshold, _) = moments.select_nth_unstable(excess - 1);
        self.buckets
            .retain(|_, bucket| bucket.full_at() > threshold);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: u64 = 1_000_000_000;

    fn at(seconds: u64) -> Moment {
        Moment::after(std::time::Duration::from_secs(seconds))
    }

    #[test]
    fn identities_have_buckets_of_their_own() {
        let mut buckets = Buckets::new(BucketShape::new(SECOND, 1));
        assert_eq!(buckets.take("a", at(0)), Ok(()));
        assert!(buckets.take("a", at(0)).is_err());
        assert_eq!(buckets.take("b", at(0)), Ok(()));
        assert_eq!(buckets.len(), 2);
        assert_eq!(BUCKETS_KEPT_AFTER_SWEEP, BUCKETS_PER_CORE_MAX * 3 / 4);
    }

    #[test]
    fn a_new_identity_at_the_capacity_sweeps_the_full_buckets_first() {
        let mut buckets = Buckets::with_capacity(BucketShape::new(SECOND, 1), 8);
        for identity in 0..8 {
            assert_eq!(buckets.take(identity, at(0)), Ok(()));
        }
        // At 1 s every bucket is full again: all are forgotten, none was needed.
        assert_eq!(buckets.take(8, at(1)), Ok(()));
        assert_eq!(buckets.len(), 1);
    }

    #[test]
    fn without_full_buckets_a_sweep_forgets_those_closest_to_full() {
        let mut buckets = Buckets::with_capacity(BucketShape::new(10 * SECOND, 1), 8);
        for identity in 0..8 {
            assert_eq!(buckets.take(identity, at(identity)), Ok(()));
        }
        assert_eq!(buckets.take(100, at(8)), Ok(()));
        // Buckets 0 and 1 were closest to full (full at 10 s and 11 s): forgotten.
        assert_eq!(buckets.len(), 7);
        assert_eq!(buckets.take(0, at(8)), Ok(()), "forgotten, so full again");
        assert!(buckets.take(7, at(8)).is_err(), "kept, still empty");
        assert!(buckets.len() <= 8);
    }

    #[test]
    fn the_map_never_grows_past_its_capacity() {
        let mut buckets = Buckets::with_capacity(BucketShape::new(1_000 * SECOND, 1), 16);
        for identity in 0..1_000_u64 {
            assert_eq!(buckets.take(identity, at(0)), Ok(()));
            assert!(buckets.len() <= 16);
        }
    }
}
