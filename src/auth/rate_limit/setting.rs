//! The configured rate limits as typed values: a rate in requests per second and a burst, for
//! API keys and for tenant tokens, and the bounds `crate::config` checks them against.
//!
//! Invariants: a [`RequestsPerSecond`] is finite and within
//! [`REQUESTS_PER_SECOND_MIN`]..=[`REQUESTS_PER_SECOND_MAX`]; a [`Burst`] is within
//! 1..=[`BURST_MAX`]; so a core's refill interval (at most [`REQUESTS_PER_SECOND_MIN`]'s
//! interval times the most cores) fits in a `u64` of nanoseconds with room to spare.

use std::fmt;

/// The slowest rate accepted: one request every 1,000 seconds.
pub const REQUESTS_PER_SECOND_MIN: f64 = 0.001;
/// The fastest rate accepted.
pub const REQUESTS_PER_SECOND_MAX: f64 = 1_000_000.0;
/// The largest burst accepted.
pub const BURST_MAX: u32 = 1_000_000;

/// A rate of requests per second, for the whole instance (see [`super`] for how a core's
/// share is derived).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RequestsPerSecond(f64);

impl RequestsPerSecond {
    /// Reads a rate: a decimal number within the bounds, or a message saying what is
    /// accepted (the flag's name is added by the caller).
    pub fn parse(text: &str) -> Result<RequestsPerSecond, String> {
        let refusal = || {
            format!(
                "`{text}` is not a rate of requests per second: expected a number from \
                 {REQUESTS_PER_SECOND_MIN} to {REQUESTS_PER_SECOND_MAX}"
            )
        };
        let value: f64 = text.trim().parse().map_err(|_| refusal())?;
        if value.is_finite() && (REQUESTS_PER_SECOND_MIN..=REQUESTS_PER_SECOND_MAX).contains(&value)
        {
            Ok(RequestsPerSecond(value))
        } else {
            Err(refusal())
        }
    }

    /// The rate as a number.
    pub fn get(self) -> f64 {
        self.0
    }
}

impl fmt::Display for RequestsPerSecond {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}", self.0)
    }
}

/// How many requests an identity may send at once after a quiet period (the bucket's
/// capacity), for the whole instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Burst(u32);

impl Burst {
    /// A burst, `None` outside 1..=[`BURST_MAX`].
    pub fn new(requests: u64) -> Option<Burst> {
        u32::try_from(requests)
            .ok()
            .filter(|requests| (1..=BURST_MAX).contains(requests))
            .map(Burst)
    }

    /// The burst a rate gets when none is configured: one second of requests, at least one.
    pub fn one_second_of(rate: RequestsPerSecond) -> Burst {
        // The rate is at most `BURST_MAX` requests per second, so the ceiling fits.
        let requests = rate.get().ceil().clamp(1.0, f64::from(BURST_MAX));
        Burst(requests as u32)
    }

    /// The number of requests.
    pub fn get(self) -> u32 {
        self.0
    }
}

/// One limit: a rate and a burst.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimit {
    pub requests_per_second: RequestsPerSecond,
    pub burst: Burst,
}

impl RateLimit {
    /// The limit of `requests_per_second`, with `burst` or one second of requests.
    pub fn new(requests_per_second: RequestsPerSecond, burst: Option<Burst>) -> RateLimit {
        RateLimit {
            requests_per_second,
            burst: burst.unwrap_or_else(|| Burst::one_second_of(requests_per_second)),
        }
    }
}

/// The limits of the instance; `None`: that kind of identity is not limited (the default).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RateLimits {
    /// Requests authenticated with an API key (not the master key).
    pub api_key: Option<RateLimit>,
    /// Requests authenticated with a tenant token.
    pub tenant_token: Option<RateLimit>,
}

impl RateLimits {
    /// Whether any limit is set.
    pub fn any(&self) -> bool {
        self.api_key.is_some() || self.tenant_token.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_within_the_bounds_parse_and_others_are_refused() {
        assert_eq!(
            RequestsPerSecond::parse("10").map(RequestsPerSecond::get),
            Ok(10.0)
        );
        assert_eq!(
            RequestsPerSecond::parse("0.5").map(RequestsPerSecond::get),
            Ok(0.5)
        );
        assert_eq!(
            RequestsPerSecond::parse("0.001").map(RequestsPerSecond::get),
            Ok(0.001)
        );
        for bad in [
            "0", "-1", "abc", "", "NaN", "inf", "1000001", "1e300", "0.0001",
        ] {
            let error = RequestsPerSecond::parse(bad).expect_err(bad);
            assert!(error.contains("requests per second"), "{error}");
        }
    }

    #[test]
    fn bursts_are_one_to_the_maximum_and_default_to_one_second() {
        assert_eq!(Burst::new(0), None);
        assert_eq!(Burst::new(u64::from(BURST_MAX) + 1), None);
        assert_eq!(Burst::new(1).map(Burst::get), Some(1));
        let rate = |text| RequestsPerSecond::parse(text).expect("a valid rate");
        assert_eq!(Burst::one_second_of(rate("0.2")).get(), 1);
        assert_eq!(Burst::one_second_of(rate("2.5")).get(), 3);
        assert_eq!(Burst::one_second_of(rate("1000000")).get(), BURST_MAX);
        assert_eq!(RateLimit::new(rate("4"), None).burst.get(), 4);
        assert!(!RateLimits::default().any());
    }
}
