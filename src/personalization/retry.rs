//! When a failed rerank attempt is tried again, and after how long: Meilisearch 1.41's
//! schedule for its personalization service.
//!
//! Invariants: 400, 401 and the other 4xx (except 429) are final; a 429 waits
//! [`RATE_LIMIT_PAUSE_BASE`] more than the other retried failures; the pause after attempt
//! `n` (from 0) is 10^n milliseconds before jitter, and jitter adds less than the pause
//! itself, so a pause is never more than twice its base.

use std::time::Duration;

use super::error::PersonalizationError;

/// Retries after the first attempt, at most (Meilisearch's 10: eleven attempts in all).
pub const RERANK_RETRIES_MAX: u32 = 10;
/// What a 429 waits on top of the exponential pause.
pub const RATE_LIMIT_PAUSE_BASE: Duration = Duration::from_millis(100);
/// The base of the exponential pause, in milliseconds.
const PAUSE_GROWTH: u64 = 10;

/// How a failure is followed up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryStrategy {
    /// The failure is final.
    GiveUp,
    /// Tried again after the exponential pause.
    Retry,
    /// Tried again after the exponential pause and [`RATE_LIMIT_PAUSE_BASE`].
    RetryAfterRateLimit,
}

/// A failed attempt: its error and what to do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retry {
    pub error: PersonalizationError,
    pub strategy: RetryStrategy,
}

impl Retry {
    pub fn give_up(error: PersonalizationError) -> Retry {
        Retry {
            error,
            strategy: RetryStrategy::GiveUp,
        }
    }

    pub fn retry_later(error: PersonalizationError) -> Retry {
        Retry {
            error,
            strategy: RetryStrategy::Retry,
        }
    }

    pub fn rate_limited(error: PersonalizationError) -> Retry {
        Retry {
            error,
            strategy: RetryStrategy::RetryAfterRateLimit,
        }
    }

    /// The pause before the attempt after attempt `attempt` (0 for the first), without
    /// jitter; `None` when the failure is final.
    pub fn pause(&self, attempt: u32) -> Option<Duration> {
        let exponential = Duration::from_millis(PAUSE_GROWTH.saturating_pow(attempt));
        match self.strategy {
            RetryStrategy::GiveUp => None,
            RetryStrategy::Retry => Some(exponential),
            RetryStrategy::RetryAfterRateLimit => {
                Some(RATE_LIMIT_PAUSE_BASE.saturating_add(exponential))
            }
        }
    }
}

/// `pause` plus a random share of itself (less than all of it), so that searches failing
/// together do not retry together.
pub fn with_jitter(pause: Duration) -> Duration {
    pause.saturating_add(pause.mul_f64(fastrand::f64()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure() -> PersonalizationError {
        PersonalizationError::Network("refused".to_owned())
    }

    #[test]
    fn pauses_grow_tenfold_and_rate_limits_wait_longer() {
        let retry = Retry::retry_later(failure());
        let pauses: Vec<u128> = (0..4)
            .map(|attempt| retry.pause(attempt).unwrap_or_default().as_millis())
            .collect();
        assert_eq!(pauses, [1, 10, 100, 1000]);
        let limited = Retry::rate_limited(PersonalizationError::RateLimited);
        assert_eq!(limited.pause(2), Some(Duration::from_millis(200)));
        assert_eq!(Retry::give_up(failure()).pause(0), None);
        assert!(retry.pause(RERANK_RETRIES_MAX).is_some());
    }

    #[test]
    fn jitter_adds_less_than_the_pause() {
        for _ in 0..100 {
            let pause = Duration::from_millis(100);
            let jittered = with_jitter(pause);
            assert!(jittered >= pause && jittered < pause * 2, "{jittered:?}");
        }
    }
}
