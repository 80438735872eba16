//! Reading from a remote: one `POST <url>/multi-search` (a search), `POST
//! <url>/indexes/{uid}/documents/fetch` (a document listing) or `POST
//! <url>/indexes/{uid}/facet-search` through the core's outgoing
//! client, with the remote's search key and the `Meili-Proxy-Search` header, retried as
//! Meilisearch retries it, its failures turned into the `remote_*` errors with Meilisearch's
//! messages.
//!
//! Retry rules (Meilisearch 1.41's remote search): at most [`REMOTE_SEARCH_ATTEMPTS`]
//! attempts within [`REMOTE_SEARCH_TIMEOUT`]; a connection failure, a 5xx or a body that is
//! not JSON is tried again after a short jittered pause; a timeout, a 401/403 or another 4xx
//! is final.
//!
//! Invariants: the URL is the remote's URL with the route's path appended as text (as
//! Meilisearch builds it); a key is never written into an error message; with tracing on,
//! one read is one client span (its attempts inside), whose context the request carries as
//! `traceparent`.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::model::Remote;
use crate::errors::{Code, ResponseError};
use crate::outgoing::{Method, OutgoingClient, OutgoingError, OutgoingRequest, SendOptions};

/// `_federation`: the object of a hit or proxied document that says how it merges.
pub const FEDERATION_FIELD: &str = "_federation";
/// `_federation.weightedScoreValues`: the score groups a hit or document is merged by.
pub const WEIGHTED_SCORE_VALUES: &str = "weightedScoreValues";

/// The header that marks a search sent by another instance.
pub const PROXY_SEARCH_HEADER: &str = "Meili-Proxy-Search";
/// Its value.
pub const PROXY_SEARCH_HEADER_VALUE: &str = "true";
/// The header of a search another instance partitioned by the shards the network had
/// before a topology change, naming the version that change gives (coresearch's own: the
/// remote evaluates `_shard` against those shards while it runs the change; Meilisearch
/// ignores it).
pub const SEARCH_BEFORE_CHANGE_HEADER: &str = "X-Coresearch-Search-Before-Change";

/// How long one remote may take to answer a search, all attempts included.
pub const REMOTE_SEARCH_TIMEOUT: Duration = Duration::from_secs(5);
/// Attempts at one remote search.
pub const REMOTE_SEARCH_ATTEMPTS: u32 = 4;
/// The longest pause between two attempts (before jitter).
const RETRY_PAUSE_MAX: Duration = Duration::from_millis(100);

/// The hint closing the messages of a response that is not a search answer.
const SAME_VERSION_HINT: &str =
    "\n  - hint: check that the remote instance is a Meilisearch instance running the same version";

/// Why an attempt failed, and whether another may succeed.
struct Failure {
    error: ResponseError,
    retry: bool,
}

/// Where a remote read goes, after the remote's URL.
const MULTI_SEARCH_PATH: &str = "/multi-search";

/// Sends the federated `body` to `remote` and answers its parsed JSON result.
pub async fn remote_multi_search(
    client: &OutgoingClient,
    remote: &Remote,
    body: &Value,
    before_change: Option<uuid::Uuid>,
) -> Result<Value, ResponseError> {
    remote_read(client, remote, MULTI_SEARCH_PATH, body, before_change).await
}

/// A read of one index another instance answers for a networked read of this one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexRead {
    /// `POST /indexes/{uid}/documents/fetch`.
    DocumentsFetch,
    /// `POST /indexes/{uid}/facet-search`.
    FacetSearch,
}

impl IndexRead {
    /// The route's path for `index_uid`.
    pub fn path(self, index_uid: &str) -> String {
        match self {
            IndexRead::DocumentsFetch => format!("/indexes/{index_uid}/documents/fetch"),
            IndexRead::FacetSearch => format!("/indexes/{index_uid}/facet-search"),
        }
    }
}

/// Sends `body` to `remote`'s `read` of `index_uid` and answers its parsed JSON result.
pub async fn remote_index_read(
    client: &OutgoingClient,
    remote: &Remote,
    index_uid: &str,
    read: IndexRead,
    body: &Value,
) -> Result<Value, ResponseError> {
    remote_read(client, remote, &read.path(index_uid), body, None).await
}

/// Sends `body` to `remote`'s `path`, retried by the module's rules, in a client span.
async fn remote_read(
    client: &OutgoingClient,
    remote: &Remote,
    path: &str,
    body: &Value,
    before_change: Option<uuid::Uuid>,
) -> Result<Value, ResponseError> {
    crate::traces::client_call(
        "remote read",
        |span| describe_remote_span(span, "POST", &remote.url, path),
        read_with_retries(client, remote, path, body, before_change),
    )
    .await
}

/// Names and describes the client span of a call to a remote, read or forwarded write alike:
/// `METHOD path`, the method and the full URL.
pub fn describe_remote_span(
    span: &mut crate::traces::Span,
    method: &str,
    remote_url: &str,
    path: &str,
) {
    span.set_name(format!("{method} {path}"));
    span.set_attribute("http.request.method", method.to_owned());
    span.set_attribute(
        "url.full",
        format!("{}{path}", remote_url.trim_end_matches('/')),
    );
}

/// Sends `body` to `remote`'s `path`, retried by the module's rules.
async fn read_with_retries(
    client: &OutgoingClient,
    remote: &Remote,
    path: &str,
    body: &Value,
    before_change: Option<uuid::Uuid>,
) -> Result<Value, ResponseError> {
    let deadline = Instant::now() + REMOTE_SEARCH_TIMEOUT;
    let body = serde_json::to_vec(body).map_err(ResponseError::internal)?;
    let mut attempt = 0;
    loop {
        let outcome = attempt_read(client, remote, path, &body, deadline, before_change).await;
        attempt += 1;
        match outcome {
            Ok(answer) => return Ok(answer),
            Err(failure) if !failure.retry || attempt >= REMOTE_SEARCH_ATTEMPTS => {
                return Err(failure.error);
            }
            Err(failure) => {
                tracing::warn!(attempt, error = %failure.error.message, "a remote search is retried");
                crate::runtime::sleep(retry_pause(attempt)).await;
            }
        }
    }
}

/// 10^attempt nanoseconds, at most [`RETRY_PAUSE_MAX`], plus up to as much again at random.
fn retry_pause(attempt: u32) -> Duration {
    let base = Duration::from_nanos(10u64.saturating_pow(attempt)).min(RETRY_PAUSE_MAX);
    let jitter = base.mul_f64(fastrand::f64());
    base + jitter
}

async fn attempt_read(
    client: &OutgoingClient,
    remote: &Remote,
    path: &str,
    body: &[u8],
    deadline: Instant,
    before_change: Option<uuid::Uuid>,
) -> Result<Value, Failure> {
    let remaining = deadline.saturating_duration_since(Instant::now());
    if remaining.is_zero() {
        return Err(give_up(Code::RemoteTimeout, TIMEOUT_MESSAGE.to_owned()));
    }
    let mut request = read_request(remote, path, body, remaining)
        .map_err(|error| give_up(Code::RemoteCouldNotSendRequest, error.to_string()))?;
    if let Some(version) = before_change {
        request = request.header(SEARCH_BEFORE_CHANGE_HEADER, &version.to_string());
    }
    let response = match client.send(request).await {
        Ok(response) => response,
        Err(OutgoingError::Timeout { .. }) => {
            return Err(give_up(Code::RemoteTimeout, TIMEOUT_MESSAGE.to_owned()));
        }
        Err(error) => {
            return Err(Failure {
                retry: error.is_transient(),
                error: ResponseError::new(Code::RemoteCouldNotSendRequest, error.to_string()),
            });
        }
    };
    classify(response.status, &response.body)
}

/// "remote host did not answer before the deadline".
const TIMEOUT_MESSAGE: &str = "remote host did not answer before the deadline";

fn read_request(
    remote: &Remote,
    path: &str,
    body: &[u8],
    timeout: Duration,
) -> Result<OutgoingRequest, OutgoingError> {
    let url = format!("{}{path}", remote.url);
    let options = SendOptions {
        request_timeout: timeout,
        connect_timeout: timeout,
        max_attempts: 1,
        ..SendOptions::default()
    };
    let mut request = OutgoingRequest::new(Method::Post, &url)?
        .json(body.to_vec())
        .header(PROXY_SEARCH_HEADER, PROXY_SEARCH_HEADER_VALUE)
        .options(options);
    if let Some(key) = &remote.search_api_key {
        request = request.header("Authorization", &format!("Bearer {key}"));
    }
    Ok(request)
}

/// The remote's answer as a result, or the failure its status and body mean.
fn classify(status: u16, body: &[u8]) -> Result<Value, Failure> {
    match status {
        200..=299 => serde_json::from_slice::<Value>(body)
            .ok()
            .filter(Value::is_object)
            .ok_or_else(|| Failure {
                retry: true,
                error: ResponseError::new(
                    Code::RemoteBadResponse,
                    format!(
                        "could not parse response from the remote host as a federated search response{}{SAME_VERSION_HINT}",
                        response_from_remote(body)
                    ),
                ),
            }),
        401 | 403 => Err(give_up(
            Code::RemoteInvalidApiKey,
            "could not authenticate against the remote host\n  - hint: check that the remote instance was registered with a valid API key having the `search` action".to_owned(),
        )),
        400..=499 => Err(give_up(
            Code::RemoteBadRequest,
            format!(
                "remote host responded with code {status}{}\n  - hint: check that the remote instance has the correct index configuration for that request\n  - hint: check that the `network` experimental feature is enabled on the remote instance",
                response_from_remote(body)
            ),
        )),
        _ => Err(Failure {
            retry: status >= 500,
            error: ResponseError::new(
                Code::RemoteRemoteError,
                format!("remote host responded with code {status}{}", response_from_remote(body)),
            ),
        }),
    }
}

fn give_up(code: Code, message: String) -> Failure {
    Failure {
        retry: false,
        error: ResponseError::new(code, message),
    }
}

/// ":\n  - response from remote: BODY", the body as compact JSON when it is JSON.
fn response_from_remote(body: &[u8]) -> String {
    let shown = match serde_json::from_slice::<Value>(body) {
        Ok(value) => value.to_string(),
        Err(_) => String::from_utf8_lossy(body).into_owned(),
    };
    format!(":\n  - response from remote: {shown}")
}

/// A hit of a remote whose `_federation` lacks what merging needs.
pub fn missing_in_remote_hit(path: &str) -> ResponseError {
    ResponseError::new(
        Code::RemoteBadResponse,
        format!("remote hit does not contain `{path}`{SAME_VERSION_HINT}"),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_meilisearch_codes_and_retries() {
        let bad = classify(400, br#"{"message":"no"}"#).unwrap_err();
        assert_eq!(bad.error.code, Code::RemoteBadRequest);
        assert!(!bad.retry);
        assert!(bad.error.message.starts_with(
            "remote host responded with code 400:\n  - response from remote: {\"message\":\"no\"}\n  - hint:"
        ));
        let auth = classify(403, b"").unwrap_err();
        assert_eq!(auth.error.code, Code::RemoteInvalidApiKey);
        let server = classify(503, b"down").unwrap_err();
        assert_eq!(server.error.code, Code::RemoteRemoteError);
        assert!(server.retry);
        assert_eq!(
            server.error.message,
            "remote host responded with code 503:\n  - response from remote: down"
        );
        let garbage = classify(200, b"<html>").unwrap_err();
        assert_eq!(garbage.error.code, Code::RemoteBadResponse);
        assert!(garbage.retry);
        assert!(classify(200, br#"{"hits":[]}"#).is_ok());
    }

    #[test]
    fn pauses_stay_short() {
        for attempt in 0..REMOTE_SEARCH_ATTEMPTS {
            assert!(retry_pause(attempt) <= RETRY_PAUSE_MAX * 2);
        }
    }
}
