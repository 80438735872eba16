//! Sending one write to one remote of the network (the leader forwards every write to every
//! remote), and reading the task the remote registered for it, with Meilisearch
//! Enterprise's transport rules and `remote_*` errors.
//!
//! Transport: the remote's `writeApiKey` as `Authorization: Bearer`, the origin headers
//! ([`super::headers::origin_headers`]), [`FORWARD_CONNECT_TIMEOUT`] to connect,
//! [`FORWARD_REQUEST_TIMEOUT`] per attempt, transient failures (connection, timeout, 5xx)
//! tried again with a doubling backoff for at most [`FORWARD_ATTEMPTS_MAX`] attempts
//! (about 3.5 s; Meilisearch's bound is 25 s); a 401/403 or another 4xx is final.
//!
//! Invariants: a forward never fails the user's request — its outcome is stored in the
//! leader's task (`network.remote_tasks`); a key is never written into an error message.

use std::time::Duration;

use serde::Deserialize;

use super::headers::origin_headers;
use super::model::Remote;
use super::task_network::{Origin, RemoteTask, TaskUid};
use crate::errors::{Code, ResponseError};
use crate::outgoing::{Method, OutgoingClient, OutgoingError, OutgoingRequest, SendOptions};

/// How long connecting to a remote may take (Meilisearch's proxy default).
pub const FORWARD_CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// How long one attempt may take (Meilisearch's proxy default).
pub const FORWARD_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Attempts at one forward: with the backoff below, about 3.5 s of retrying when the remote
/// refuses connections (Meilisearch retries for up to 25 s; a write waits for its forwards,
/// and writes are forwarded in order, so a shorter bound keeps a dead remote from stalling
/// writes — its failures are recorded in the tasks).
pub const FORWARD_ATTEMPTS_MAX: u32 = 4;
/// The pause after the first failed attempt (then doubled).
const FORWARD_FIRST_BACKOFF: Duration = Duration::from_millis(500);
/// The longest pause between two attempts.
const FORWARD_MAX_BACKOFF: Duration = Duration::from_secs(8);

/// One write as the remote receives it.
#[derive(Debug, Clone)]
pub struct ForwardedWrite {
    pub method: Method,
    /// The path and query string, starting with `/`.
    pub path_and_query: String,
    pub content_type: Option<String>,
    pub body: Vec<u8>,
}

/// The summarized task a remote answers.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SummarizedTask {
    task_uid: TaskUid,
}

/// Sends `write` to `remote` as a copy of the leader's task `origin`, in at most
/// `attempts_max` attempts; answers what the leader's task records for this remote.
pub async fn forward_write(
    client: &OutgoingClient,
    remote: &Remote,
    origin: &Origin,
    write: &ForwardedWrite,
    attempts_max: u32,
) -> RemoteTask {
    match send(client, remote, origin, write, attempts_max).await {
        Ok(task_uid) => RemoteTask::registered(task_uid),
        Err(error) => {
            let object = serde_json::from_str(&error.to_json()).unwrap_or_default();
            RemoteTask::failed(object)
        }
    }
}

async fn send(
    client: &OutgoingClient,
    remote: &Remote,
    origin: &Origin,
    write: &ForwardedWrite,
    attempts_max: u32,
) -> Result<TaskUid, ResponseError> {
    let answer = call_remote(client, remote, write, &origin_headers(origin), attempts_max).await?;
    serde_json::from_value::<SummarizedTask>(answer.clone())
        .map(|task| task.task_uid)
        .map_err(|_| bad_response(&answer.to_string()))
}

/// Sends `write` to `remote` with its write key and `extra_headers`; answers the JSON of a
/// 2xx answer (`null` for an empty body) or the `remote_*` error of any other outcome. With
/// tracing on, the call is one client span, whose context the request carries.
pub async fn call_remote(
    client: &OutgoingClient,
    remote: &Remote,
    write: &ForwardedWrite,
    extra_headers: &[(String, String)],
    attempts_max: u32,
) -> Result<serde_json::Value, ResponseError> {
    let path = write.path_and_query.split('?').next().unwrap_or_default();
    crate::traces::client_call(
        "remote call",
        |span| {
            super::remote_call::describe_remote_span(
                span,
                write.method.as_str(),
                &remote.url,
                path,
            );
        },
        call_remote_untraced(client, remote, write, extra_headers, attempts_max),
    )
    .await
}

/// [`call_remote`] without its span.
async fn call_remote_untraced(
    client: &OutgoingClient,
    remote: &Remote,
    write: &ForwardedWrite,
    extra_headers: &[(String, String)],
    attempts_max: u32,
) -> Result<serde_json::Value, ResponseError> {
    let url = format!(
        "{}{}",
        remote.url.trim_end_matches('/'),
        write.path_and_query
    );
    let mut request = OutgoingRequest::new(write.method.clone(), &url)
        .map_err(|error| could_not_send(&error))?
        .options(forward_send_options(attempts_max))
        .body(write.body.clone());
    if let Some(content_type) = &write.content_type {
        request = request.header("Content-Type", content_type);
    }
    if let Some(key) = &remote.write_api_key {
        request = request.header("Authorization", &format!("Bearer {key}"));
    }
    for (name, value) in extra_headers {
        request = request.header(name, value);
    }
    let response = client.send(request).await.map_err(|error| match error {
        OutgoingError::Timeout { .. } | OutgoingError::ConnectTimeout { .. } => timeout(),
        other => could_not_send(&other),
    })?;
    let quoted = quoted_answer(&response.body);
    match response.status {
        200..=299 if response.body.iter().all(u8::is_ascii_whitespace) => {
            Ok(serde_json::Value::Null)
        }
        200..=299 => serde_json::from_slice(&response.body).map_err(|_| bad_response(&quoted)),
        401 | 403 => Err(ResponseError::new(
            Code::RemoteInvalidApiKey,
            "could not authenticate against the remote host\n  - hint: check that the remote instance was registered with a valid API key having the `documents.add` action",
        )),
        400..=499 => Err(ResponseError::new(
            Code::RemoteBadRequest,
            format!(
                "remote host responded with code {}:\n  - response from remote: {quoted}\n  - hint: check that the remote instance has the correct index configuration for that request\n  - hint: check that the `network` experimental feature is enabled on the remote instance",
                response.status
            ),
        )),
        status => Err(ResponseError::new(
            Code::RemoteRemoteError,
            format!(
                "remote host responded with code {status}:\n  - response from remote: {quoted}"
            ),
        )),
    }
}

/// The send options of a forward.
fn forward_send_options(attempts_max: u32) -> SendOptions {
    SendOptions {
        connect_timeout: FORWARD_CONNECT_TIMEOUT,
        request_timeout: FORWARD_REQUEST_TIMEOUT,
        max_attempts: attempts_max.clamp(1, FORWARD_ATTEMPTS_MAX),
        first_backoff: FORWARD_FIRST_BACKOFF,
        max_backoff: FORWARD_MAX_BACKOFF,
        ..SendOptions::default()
    }
}

/// A remote's answer as an error message quotes it: compact JSON when it is JSON.
fn quoted_answer(body: &[u8]) -> String {
    match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(value) => value.to_string(),
        Err(_) => String::from_utf8_lossy(body).into_owned(),
    }
}

fn could_not_send(error: &OutgoingError) -> ResponseError {
    ResponseError::new(Code::RemoteCouldNotSendRequest, error.to_string())
}

fn timeout() -> ResponseError {
    ResponseError::new(
        Code::RemoteTimeout,
        "remote host did not answer before the deadline",
    )
}

fn bad_response(quoted: &str) -> ResponseError {
    ResponseError::new(
        Code::RemoteBadResponse,
        format!(
            "could not parse response from the remote host as a document addition response:\n  - response from remote: {quoted}\n  - hint: check that the remote instance is a Meilisearch instance running the same version"
        ),
    )
}
