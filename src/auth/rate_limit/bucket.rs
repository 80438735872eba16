//! One token bucket, kept as a single instant: the moment it will be full again.
//!
//! A bucket of capacity `burst` that gains one token every `interval` is described exactly by
//! the moment `full_at` at which it will hold `burst` tokens again: at `now`, it owes
//! `full_at - now` of refill, so it lacks `ceil((full_at - now) / interval)` tokens. A
//! request takes a token when the bucket lacks at most `burst - 1` of them, that is when
//! `full_at - now <= (burst - 1) × interval`; taking one moves `full_at` one interval later
//! (from `now` if the bucket was full). This is the token bucket written as the generic cell
//! rate algorithm: one `u64` per identity, no refill loop, no floating point.
//!
//! Invariants: a refused request changes nothing; a bucket whose `full_at` is not after `now`
//! behaves exactly as a new one, so forgetting it changes no answer
//! ([`TokenBucket::is_full`]); every duration is whole nanoseconds and saturates instead of
//! overflowing; a refusal's wait is at least one nanosecond and its `Retry-After` at least one
//! second.

use std::time::Duration;

/// Nanoseconds in a second.
const NANOSECONDS_PER_SECOND: u64 = 1_000_000_000;

/// A moment on a limiter's clock: nanoseconds since the limiter started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Moment(u64);

impl Moment {
    /// The moment `elapsed` after the clock's start (saturating past 584 years).
    pub fn after(elapsed: Duration) -> Moment {
        Moment(u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX))
    }

    /// Nanoseconds since the clock's start.
    pub fn nanoseconds(self) -> u64 {
        self.0
    }
}

/// The shape every bucket of one kind has on one core: how often a token comes back and how
/// many the bucket holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BucketShape {
    /// Nanoseconds between two tokens, at least one.
    interval_nanoseconds: u64,
    /// Tokens a full bucket holds, at least one.
    capacity: u32,
}

impl BucketShape {
    /// A bucket gaining one token every `interval_nanoseconds` (at least 1) and holding
    /// `capacity` tokens (at least 1).
    pub fn new(interval_nanoseconds: u64, capacity: u32) -> BucketShape {
        BucketShape {
            interval_nanoseconds: interval_nanoseconds.max(1),
            capacity: capacity.max(1),
        }
    }

    /// Nanoseconds between two tokens.
    pub fn interval_nanoseconds(self) -> u64 {
        self.interval_nanoseconds
    }

    /// Tokens a full bucket holds.
    pub fn capacity(self) -> u32 {
        self.capacity
    }

    /// The refill a bucket may owe and still give a token: `capacity - 1` intervals.
    fn tolerance_nanoseconds(self) -> u64 {
        self.interval_nanoseconds
            .saturating_mul(u64::from(self.capacity - 1))
    }
}

/// How long a refused request should wait before a token is back, in whole seconds, at least
/// one: the value of the `Retry-After` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryAfterSeconds(u64);

impl RetryAfterSeconds {
    /// The seconds to announce for a wait of `wait_nanoseconds`: rounded up, at least one.
    pub fn rounding_up(wait_nanoseconds: u64) -> RetryAfterSeconds {
        RetryAfterSeconds(wait_nanoseconds.div_ceil(NANOSECONDS_PER_SECOND).max(1))
    }

    /// The whole seconds.
    pub fn get(self) -> u64 {
        self.0
    }
}

/// One identity's bucket on one core.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenBucket {
    /// The moment the bucket holds its whole capacity again.
    full_at: Moment,
}

impl TokenBucket {
    /// A full bucket at `now`.
    pub fn full(now: Moment) -> TokenBucket {
        TokenBucket { full_at: now }
    }

    /// Takes one token at `now`, or says how long to wait for one (the bucket unchanged).
    pub fn take(&mut self, shape: BucketShape, now: Moment) -> Result<(), RetryAfterSeconds> {
        let start = self.full_at.max(now);
        let owed = start.0 - now.0;
        let tolerance = shape.tolerance_nanoseconds();
        if owed > tolerance {
            return Err(RetryAfterSeconds::rounding_up(owed - tolerance));
        }
        self.full_at = Moment(start.0.saturating_add(shape.interval_nanoseconds));
        Ok(())
    }

    /// Whether the bucket is full at `now` (then it answers as a new bucket would).
    pub fn is_full(&self, now: Moment) -> bool {
        self.full_at <= now
    }

    /// The moment the bucket is full again.
    pub fn full_at(&self) -> Moment {
        self.full_at
    }

    /// The tokens the bucket holds at `now`.
    pub fn tokens(&self, shape: BucketShape, now: Moment) -> u32 {
        let owed = self.full_at.0.saturating_sub(now.0);
        let missing = owed.div_ceil(shape.interval_nanoseconds);
        u32::try_from(u64::from(shape.capacity).saturating_sub(missing)).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: u64 = NANOSECONDS_PER_SECOND;

    fn at(nanoseconds: u64) -> Moment {
        Moment(nanoseconds)
    }

    #[test]
    fn a_full_bucket_gives_its_capacity_at_once_then_refuses() {
        let shape = BucketShape::new(SECOND, 3);
        let mut bucket = TokenBucket::full(at(0));
        assert_eq!(bucket.tokens(shape, at(0)), 3);
        for _ in 0..3 {
            assert_eq!(bucket.take(shape, at(0)), Ok(()));
        }
        assert_eq!(bucket.tokens(shape, at(0)), 0);
        assert_eq!(bucket.take(shape, at(0)), Err(RetryAfterSeconds(1)));
        let refused = bucket;
        assert_eq!(bucket.take(shape, at(0)), Err(RetryAfterSeconds(1)));
        assert_eq!(bucket, refused, "a refusal changes nothing");
    }

    #[test]
    fn a_token_comes_back_every_interval() {
        let shape = BucketShape::new(SECOND / 2, 2);
        let mut bucket = TokenBucket::full(at(0));
        assert_eq!(bucket.take(shape, at(0)), Ok(()));
        assert_eq!(bucket.take(shape, at(0)), Ok(()));
        assert!(bucket.take(shape, at(SECOND / 2 - 1)).is_err());
        assert_eq!(bucket.take(shape, at(SECOND / 2)), Ok(()));
        assert!(bucket.take(shape, at(SECOND / 2)).is_err());
        assert_eq!(bucket.tokens(shape, at(SECOND)), 1);
        assert!(!bucket.is_full(at(SECOND + SECOND / 2 - 1)));
        assert!(bucket.is_full(at(SECOND + SECOND / 2)));
        assert_eq!(bucket.tokens(shape, at(10 * SECOND)), 2);
    }

    #[test]
    fn a_full_bucket_does_not_save_tokens_past_its_capacity() {
        let shape = BucketShape::new(SECOND, 2);
        let mut bucket = TokenBucket::full(at(0));
        let later = at(100 * SECOND);
        assert_eq!(bucket.take(shape, later), Ok(()));
        assert_eq!(bucket.take(shape, later), Ok(()));
        assert!(bucket.take(shape, later).is_err());
    }

    #[test]
    fn retry_after_rounds_the_wait_up_to_whole_seconds() {
        // One token every 2.5 s: an empty bucket waits 2.5 s, announced as 3.
        let shape = BucketShape::new(2 * SECOND + SECOND / 2, 1);
        let mut bucket = TokenBucket::full(at(0));
        assert_eq!(bucket.take(shape, at(0)), Ok(()));
        assert_eq!(bucket.take(shape, at(0)), Err(RetryAfterSeconds(3)));
        assert_eq!(
            bucket.take(shape, at(2 * SECOND)),
            Err(RetryAfterSeconds(1))
        );
        // A wait of a few nanoseconds is still announced as one second.
        assert_eq!(
            bucket.take(shape, at(2 * SECOND + SECOND / 2 - 3)),
            Err(RetryAfterSeconds(1))
        );
        assert_eq!(RetryAfterSeconds::rounding_up(0).get(), 1);
        assert_eq!(RetryAfterSeconds::rounding_up(SECOND).get(), 1);
        assert_eq!(RetryAfterSeconds::rounding_up(SECOND + 1).get(), 2);
    }

    #[test]
    fn the_longest_interval_and_largest_capacity_do_not_overflow() {
        let shape = BucketShape::new(u64::MAX / 2, u32::MAX);
        let mut bucket = TokenBucket::full(at(u64::MAX - 1));
        assert_eq!(bucket.take(shape, at(u64::MAX - 1)), Ok(()));
        assert_eq!(bucket.full_at(), at(u64::MAX));
        assert_eq!(BucketShape::new(0, 0), BucketShape::new(1, 1));
    }
}
