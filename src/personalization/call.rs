//! Asking the rerank service for an order, within the search's time budget: attempts paced
//! on Meilisearch 1.41's schedule ([`super::retry`]) through the core's outgoing client.
//!
//! Where this departs from Meilisearch 1.41, and why: Meilisearch gives each attempt 30 s
//! and checks its deadline only between attempts, so a slow service can hold a search for
//! 30 s, and a pause that ends past the deadline is still followed by one more attempt.
//! Here an attempt never outlives the search's budget (`searchCutoffMs`, 1500 ms by
//! default, counted from the start of the search), and a pause that would end past it is not
//! taken: the search falls back to the order it had at once. The outcome a user sees is
//! Meilisearch's (the unpersonalized order once the budget is spent), only never later.
//!
//! Invariants: the attempts run on the core's executor and never block it (the client
//! connects on the core's readiness set, pauses are timers); at most
//! `1 + RERANK_RETRIES_MAX` attempts are made.

use std::time::{Duration, Instant};

use super::cohere::{RERANK_REQUEST_TIMEOUT, classify, classify_failure, rerank_request};
use super::error::PersonalizationError;
use super::retry::{RERANK_RETRIES_MAX, Retry, with_jitter};
use crate::outgoing::OutgoingClient;

/// Where and with which key the rerank service is called.
pub struct Endpoint<'a> {
    pub url: &'a url::Url,
    pub api_key: &'a str,
}

/// Why no order came back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// The search's budget ran out first: the hits keep their order.
    DeadlineExceeded,
    /// The service failed in a way the search answers as an error.
    Failed(PersonalizationError),
}

/// The order of the documents `body` carries (indexes, best first), asked of `endpoint`
/// before `deadline` (`None`: no deadline).
pub async fn rerank_order(
    client: &OutgoingClient,
    endpoint: &Endpoint<'_>,
    body: &[u8],
    deadline: Option<Instant>,
) -> Result<Vec<usize>, CallError> {
    let mut attempt = 0;
    loop {
        let retry = match attempt_once(client, endpoint, body, deadline).await {
            Ok(order) => return Ok(order),
            Err(retry) => retry,
        };
        tracing::warn!(attempt, error = %retry.error, "a personalization rerank attempt failed");
        if is_past(deadline, Duration::ZERO) {
            tracing::warn!("could not rerank the hits within the search's time budget");
            return Err(CallError::DeadlineExceeded);
        }
        if attempt >= RERANK_RETRIES_MAX {
            return Err(CallError::Failed(retry.error));
        }
        let Some(pause) = retry.pause(attempt) else {
            return Err(CallError::Failed(retry.error));
        };
        let pause = with_jitter(pause);
        if is_past(deadline, pause) {
            tracing::warn!(
                ?pause,
                "could not rerank the hits within the search's time budget: no time left to retry"
            );
            return Err(CallError::DeadlineExceeded);
        }
        tracing::warn!(?pause, "the personalization rerank is retried");
        crate::runtime::sleep(pause).await;
        attempt += 1;
    }
}

/// One attempt, cut at the deadline.
async fn attempt_once(
    client: &OutgoingClient,
    endpoint: &Endpoint<'_>,
    body: &[u8],
    deadline: Option<Instant>,
) -> Result<Vec<usize>, Retry> {
    let remaining = deadline.map_or(RERANK_REQUEST_TIMEOUT, |deadline| {
        deadline.saturating_duration_since(Instant::now())
    });
    let timeout = remaining.min(RERANK_REQUEST_TIMEOUT);
    let request = rerank_request(endpoint.url, endpoint.api_key, body, timeout)
        .map_err(|error| classify_failure(&error))?;
    match client.send(request).await {
        Ok(response) => classify(response.status, &response.body),
        Err(error) => Err(classify_failure(&error)),
    }
}

/// Whether `deadline` has passed, or will have once `wait` has passed.
fn is_past(deadline: Option<Instant>, wait: Duration) -> bool {
    deadline.is_some_and(|deadline| {
        Instant::now()
            .checked_add(wait)
            .is_none_or(|end| end >= deadline)
    })
}
