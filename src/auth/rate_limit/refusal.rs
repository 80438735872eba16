//! A request refused by its identity's rate limit, and the API error it is answered with:
//! 429 `too_many_requests` (coresearch's own code; Meilisearch has none for this), whose
//! response also carries `Retry-After`.
//!
//! Invariant: the message names the kind of identity, the configured limit and the seconds
//! to wait, and never the key or the token.

use super::bucket::RetryAfterSeconds;
use super::identity::RateLimitKind;
use super::setting::RateLimit;
use crate::errors::{Code, ResponseError};

/// Why a request was refused.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimitRefusal {
    /// The kind of identity whose bucket was empty.
    pub kind: RateLimitKind,
    /// The limit configured for that kind, for the whole instance.
    pub limit: RateLimit,
    /// The cores the limit is shared out between.
    pub cores: usize,
    /// When the next token is back.
    pub retry_after: RetryAfterSeconds,
}

impl RateLimitRefusal {
    /// The error message.
    pub fn message(&self) -> String {
        let RateLimit {
            requests_per_second,
            burst,
        } = self.limit;
        let shared = if self.cores > 1 {
            format!(", shared out between the server's {} cores", self.cores)
        } else {
            String::new()
        };
        format!(
            "Too many requests with this {}: the limit is {requests_per_second} requests per \
             second with bursts of {}{shared}. Retry after {}s.",
            self.kind.description(),
            burst.get(),
            self.retry_after.get()
        )
    }
}

impl From<&RateLimitRefusal> for ResponseError {
    fn from(refusal: &RateLimitRefusal) -> Self {
        ResponseError::new(Code::TooManyRequests, refusal.message())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::rate_limit::setting::{Burst, RequestsPerSecond};

    #[test]
    fn the_error_is_a_429_naming_the_limit_and_the_wait() {
        let limit = RateLimit::new(
            RequestsPerSecond::parse("2.5").expect("a valid rate"),
            Burst::new(5),
        );
        let refusal = RateLimitRefusal {
            kind: RateLimitKind::TenantToken,
            limit,
            cores: 1,
            retry_after: RetryAfterSeconds::rounding_up(1),
        };
        let error = ResponseError::from(&refusal);
        assert_eq!(error.status(), 429);
        assert_eq!(error.code.name(), "too_many_requests");
        assert_eq!(
            error.message,
            "Too many requests with this tenant token: the limit is 2.5 requests per second \
             with bursts of 5. Retry after 1s."
        );
        let shared = RateLimitRefusal {
            cores: 4,
            ..refusal
        };
        assert!(
            shared
                .message()
                .contains("shared out between the server's 4 cores")
        );
    }
}
