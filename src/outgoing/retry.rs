//! When a failed attempt is tried again, and after how long.
//!
//! Invariants: only connection errors, timeouts, 429 and 5xx are retried, never another 4xx
//! or a refused address; the number of attempts never exceeds
//! [`SendOptions::max_attempts`]; a pause is the exponential backoff, or the server's
//! `Retry-After` (in seconds) when it gives one, and is never longer than the caps.

use std::time::Duration;

use super::error::OutgoingError;
use super::request::{OutgoingResponse, SendOptions};

/// The status a server answers when asked to slow down.
pub const TOO_MANY_REQUESTS: u16 = 429;

/// Whether an answer with `status` is worth another attempt.
pub fn is_retryable_status(status: u16) -> bool {
    status == TOO_MANY_REQUESTS || (500..600).contains(&status)
}

/// The pause after failed attempt number `attempt` (1 for the first): the first backoff
/// doubled `attempt - 1` times, capped.
pub fn backoff(attempt: u32, options: &SendOptions) -> Duration {
    let factor = 2u32.saturating_pow(attempt.saturating_sub(1));
    options
        .first_backoff
        .saturating_mul(factor)
        .min(options.max_backoff)
}

/// The `Retry-After` of `response` in whole seconds, capped; `None` when absent or given
/// as a date (the backoff applies then).
pub fn retry_after(response: &OutgoingResponse, options: &SendOptions) -> Option<Duration> {
    let seconds: u64 = response.header("retry-after")?.trim().parse().ok()?;
    Some(Duration::from_secs(seconds).min(options.retry_after_cap))
}

/// How long to wait before attempt `attempt + 1`, or `None` when `outcome` is final.
pub fn pause_before_retry(
    outcome: &Result<OutgoingResponse, OutgoingError>,
    attempt: u32,
    options: &SendOptions,
) -> Option<Duration> {
    if attempt >= options.max_attempts {
        return None;
    }
    match outcome {
        Ok(response) if is_retryable_status(response.status) => {
            Some(retry_after(response, options).unwrap_or_else(|| backoff(attempt, options)))
        }
        Ok(_) => None,
        Err(error) if error.is_transient() => Some(backoff(attempt, options)),
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, retry_after: Option<&str>) -> Result<OutgoingResponse, OutgoingError> {
        let headers = retry_after
            .map(|value| vec![("Retry-After".to_owned(), value.to_owned())])
            .unwrap_or_default();
        Ok(OutgoingResponse {
            status,
            headers,
            body: Vec::new(),
        })
    }

    #[test]
    fn the_backoff_doubles_up_to_its_cap() {
        let options = SendOptions {
            first_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(350),
            ..SendOptions::default()
        };
        let pauses: Vec<_> = (1..=5).map(|attempt| backoff(attempt, &options)).collect();
        let expected = [100, 200, 350, 350, 350].map(Duration::from_millis);
        assert_eq!(pauses, expected);
        assert_eq!(backoff(u32::MAX, &options), Duration::from_millis(350));
    }

    #[test]
    fn only_transient_failures_429_and_5xx_are_retried() {
        let options = SendOptions::default();
        assert!(pause_before_retry(&answer(503, None), 1, &options).is_some());
        assert!(pause_before_retry(&answer(429, None), 1, &options).is_some());
        for status in [200, 301, 400, 401, 404, 408] {
            assert_eq!(pause_before_retry(&answer(status, None), 1, &options), None);
        }
        let refused = Err(OutgoingError::RejectedAddress {
            host: "localhost".to_owned(),
            address: "127.0.0.1".parse().expect("address"),
        });
        assert_eq!(pause_before_retry(&refused, 1, &options), None);
        let timeout = Err(OutgoingError::Timeout {
            host: "h".to_owned(),
            timeout: Duration::from_secs(1),
        });
        assert!(pause_before_retry(&timeout, 1, &options).is_some());
        assert_eq!(
            pause_before_retry(&timeout, options.max_attempts, &options),
            None
        );
    }

    #[test]
    fn retry_after_seconds_are_honoured_up_to_the_cap() {
        let options = SendOptions {
            retry_after_cap: Duration::from_secs(5),
            ..SendOptions::default()
        };
        let pause = |value| pause_before_retry(&answer(429, Some(value)), 1, &options);
        assert_eq!(pause("2"), Some(Duration::from_secs(2)));
        assert_eq!(pause("3600"), Some(Duration::from_secs(5)));
        let date = "Wed, 21 Oct 2015 07:28:00 GMT";
        assert_eq!(pause(date), Some(options.first_backoff));
    }
}
