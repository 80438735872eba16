//! The rerank API personalized search speaks: Cohere's `rerank` (v1), as Meilisearch 1.41
//! calls it — the request it sends and what each answer means.
//!
//! The request: `POST <url>` with `Authorization: Bearer <key>` and a JSON body
//! `{"query": <prompt>, "documents": [<one string per hit>], "model": "rerank-english-v3.0"}`
//! (no `top_n`: every document is ranked). The answer: `{"results": [{"index": n, …}, …]}`,
//! best first; other fields (`relevance_score`, `id`, `meta`) are ignored.
//!
//! Invariants: the key goes into the `Authorization` header only; a status is classified
//! exactly as Meilisearch 1.41 classifies it (see [`classify`]).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::error::PersonalizationError;
use super::retry::Retry;
use crate::outgoing::{Method, OutgoingError, OutgoingRequest, SendOptions};

/// The model Meilisearch 1.41 asks for.
pub const RERANK_MODEL: &str = "rerank-english-v3.0";
/// How long one attempt may take at most, whatever the search's budget (Meilisearch's
/// client timeout).
pub const RERANK_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The request body.
#[derive(Serialize)]
struct RerankRequest<'a> {
    query: &'a str,
    documents: &'a [String],
    model: &'a str,
}

/// The part of the answer that is read.
#[derive(Deserialize)]
struct RerankResponse {
    results: Vec<RerankResult>,
}

#[derive(Deserialize)]
struct RerankResult {
    index: u32,
}

/// The JSON body asking to rank `documents` for `prompt`.
pub fn request_body(prompt: &str, documents: &[String]) -> Vec<u8> {
    let request = RerankRequest {
        query: prompt,
        documents,
        model: RERANK_MODEL,
    };
    serde_json::to_vec(&request).expect("strings always serialize to JSON")
}

/// One attempt's request to `url`, within `timeout` (connecting included).
pub fn rerank_request(
    url: &url::Url,
    api_key: &str,
    body: &[u8],
    timeout: Duration,
) -> Result<OutgoingRequest, OutgoingError> {
    let options = SendOptions {
        request_timeout: timeout,
        connect_timeout: timeout.min(SendOptions::default().connect_timeout),
        // The attempts are counted and paced by `super::call`, on Meilisearch's schedule.
        max_attempts: 1,
        ..SendOptions::default()
    };
    Ok(OutgoingRequest::new(Method::Post, url.as_str())?
        .header("Authorization", &format!("Bearer {api_key}"))
        .json(body.to_vec())
        .options(options))
}

/// The order an answer gives (indexes into the documents sent, best first), or what its
/// failure means.
pub fn classify(status: u16, body: &[u8]) -> Result<Vec<usize>, Retry> {
    if (200..300).contains(&status) {
        return match serde_json::from_slice::<RerankResponse>(body) {
            Ok(answer) => Ok(answer
                .results
                .iter()
                .map(|result| result.index as usize)
                .collect()),
            Err(error) => Err(Retry::retry_later(PersonalizationError::Parse(format!(
                "Failed to parse response: {error}"
            )))),
        };
    }
    let answer = String::from_utf8_lossy(body).into_owned();
    Err(match status {
        401 => Retry::give_up(PersonalizationError::Unauthorized),
        429 => Retry::rate_limited(PersonalizationError::RateLimited),
        400 => Retry::give_up(PersonalizationError::BadRequest(answer)),
        500..=599 => Retry::retry_later(PersonalizationError::InternalServerError(format!(
            "Status {status}: {answer}"
        ))),
        402..=499 => Retry::give_up(PersonalizationError::Api(format!(
            "Status {status}: {answer}"
        ))),
        _ => Retry::retry_later(PersonalizationError::Api(format!(
            "Unexpected status {status}: {answer}"
        ))),
    })
}

/// A request that got no answer: always tried again, as Meilisearch does.
pub fn classify_failure(error: &OutgoingError) -> Retry {
    let detail = match error {
        OutgoingError::Timeout { .. } => format!("Request timeout: {error}"),
        _ => format!("Network error: {error}"),
    };
    Retry::retry_later(PersonalizationError::Network(detail))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::personalization::retry::RetryStrategy;

    #[test]
    fn the_body_names_query_documents_and_model_in_that_order() {
        let body = request_body("User Context: x", &["{\"id\":1}".to_owned()]);
        assert_eq!(
            String::from_utf8(body).expect("the request body is JSON text"),
            r#"{"query":"User Context: x","documents":["{\"id\":1}"],"model":"rerank-english-v3.0"}"#
        );
    }

    #[test]
    fn an_answer_gives_the_indexes_best_first() {
        let answer = br#"{"id":"a","results":[{"index":2,"relevance_score":0.9},{"index":0,"relevance_score":0.1}],"meta":{}}"#;
        assert_eq!(
            classify(200, answer).expect("a 200 answer with results classifies"),
            [2, 0]
        );
        let garbage = classify(200, b"<html>").unwrap_err();
        assert_eq!(garbage.strategy, RetryStrategy::Retry);
        assert!(matches!(garbage.error, PersonalizationError::Parse(_)));
        let negative = classify(200, br#"{"results":[{"index":-1}]}"#).unwrap_err();
        assert_eq!(negative.strategy, RetryStrategy::Retry);
    }

    #[test]
    fn statuses_are_classified_as_meilisearch_does() {
        let strategy = |status| classify(status, b"why").unwrap_err().strategy;
        assert_eq!(strategy(401), RetryStrategy::GiveUp);
        assert_eq!(strategy(400), RetryStrategy::GiveUp);
        assert_eq!(strategy(403), RetryStrategy::GiveUp);
        assert_eq!(strategy(404), RetryStrategy::GiveUp);
        assert_eq!(strategy(429), RetryStrategy::RetryAfterRateLimit);
        assert_eq!(strategy(500), RetryStrategy::Retry);
        assert_eq!(strategy(503), RetryStrategy::Retry);
        assert_eq!(strategy(302), RetryStrategy::Retry);
        assert_eq!(
            classify(404, b"gone").unwrap_err().error,
            PersonalizationError::Api("Status 404: gone".to_owned())
        );
        assert_eq!(
            classify(302, b"").unwrap_err().error,
            PersonalizationError::Api("Unexpected status 302: ".to_owned())
        );
        assert_eq!(
            classify(400, b"{\"message\":\"bad\"}").unwrap_err().error,
            PersonalizationError::BadRequest("{\"message\":\"bad\"}".to_owned())
        );
    }

    #[test]
    fn the_key_goes_in_the_authorization_header() {
        let url = url::Url::parse("http://127.0.0.1:1/v1/rerank").expect("a literal URL parses");
        let request = rerank_request(&url, "k3y", b"{}", Duration::from_millis(300))
            .expect("a request to a parsed URL builds");
        assert!(
            request
                .headers
                .contains(&("Authorization".to_owned(), "Bearer k3y".to_owned()))
        );
        let options = request.options.expect("the request carries its options");
        assert_eq!(options.max_attempts, 1);
        assert_eq!(options.request_timeout, Duration::from_millis(300));
        assert_eq!(options.connect_timeout, Duration::from_millis(300));
    }
}
