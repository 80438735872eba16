//! The server an export sends to: the URL of each call, the `Authorization` every call
//! carries, how a call is sent (this core's outgoing client, with [`export_send_options`])
//! and how a failed call becomes the export task's error, worded as Meilisearch words it.
//!
//! Invariants: every call goes through the shared outgoing client of its core (its IP
//! policy, timeouts and bounded retries); a call succeeds only with a 2xx answer; every
//! failure is an `internal` task error, and an answer carrying a Meilisearch error keeps
//! its code, type, message and link in Meilisearch's sentence.

use std::fmt;

use serde::Deserialize;

use crate::errors::{Code, ResponseError};
use crate::outgoing::request::SendOptions;
use crate::outgoing::{Method, OutgoingError, OutgoingRequest, OutgoingResponse};

/// How many attempts one call to the target makes at most (the first included): a target
/// that restarts or sheds load gets a few seconds before the export fails.
pub const EXPORT_ATTEMPTS_MAX: u32 = 6;

/// The most bytes of an unexpected answer quoted in the task's error.
pub const QUOTED_ANSWER_BYTES_MAX: usize = 200;

/// The send options of every call to the target.
pub fn export_send_options() -> SendOptions {
    SendOptions {
        max_attempts: EXPORT_ATTEMPTS_MAX,
        ..SendOptions::default()
    }
}

/// The target of an export: its base URL and the `Authorization` header of every call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportTarget {
    /// The URL as given, without trailing slashes (paths are appended to it).
    base_url: String,
    authorization: Option<String>,
    /// Sent with every call (a network change's origin headers).
    extra_headers: Vec<(String, String)>,
    /// How every call is sent.
    options: SendOptions,
}

impl ExportTarget {
    /// The target at `url`, called with `Authorization: Bearer <api_key>` when a key is given.
    pub fn new(url: &str, api_key: Option<&str>) -> ExportTarget {
        ExportTarget {
            base_url: url.trim_end_matches('/').to_owned(),
            authorization: api_key.map(|key| format!("Bearer {key}")),
            extra_headers: Vec::new(),
            options: export_send_options(),
        }
    }

    /// The same target, every call sent with `options` instead of
    /// [`export_send_options`].
    pub fn with_options(mut self, options: SendOptions) -> ExportTarget {
        self.options = options;
        self
    }

    /// The same target, every call also carrying `headers`.
    pub fn with_headers(mut self, headers: Vec<(String, String)>) -> ExportTarget {
        self.extra_headers = headers;
        self
    }

    /// A call of `method` on `path` (which starts with `/`), with the `Authorization`.
    pub fn request(&self, method: Method, path: &str) -> Result<OutgoingRequest, RemoteError> {
        let url = format!("{}{path}", self.base_url);
        let mut request = OutgoingRequest::new(method, &url)
            .map_err(RemoteError::Transport)?
            .options(self.options);
        if let Some(authorization) = &self.authorization {
            request = request.header("Authorization", authorization);
        }
        for (name, value) in &self.extra_headers {
            request = request.header(name, value);
        }
        Ok(request)
    }

    /// Sends `request` with this core's client; the answer when it is a success.
    pub async fn send(&self, request: OutgoingRequest) -> Result<OutgoingResponse, RemoteError> {
        let client = crate::outgoing::shared::core_client().ok_or(RemoteError::NoClient)?;
        let response = client.send(request).await.map_err(RemoteError::Transport)?;
        if response.is_success() {
            Ok(response)
        } else {
            Err(RemoteError::from_answer(&response))
        }
    }
}

/// A Meilisearch error object, as the target answers it.
#[derive(Debug, Deserialize)]
struct ApiErrorBody {
    message: String,
    code: String,
    #[serde(rename = "type")]
    kind: String,
    link: String,
}

/// Why a call to the target failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RemoteError {
    /// The target answered a Meilisearch error.
    Api {
        code: String,
        kind: String,
        message: String,
        link: String,
    },
    /// The target answered an error status without a Meilisearch error.
    Status { status: u16, quoted: String },
    /// No answer: a bad URL, a refused address, a connection or a timeout (once the
    /// client's attempts were spent).
    Transport(OutgoingError),
    /// The call was made on a thread that is no core (never, once the server runs).
    NoClient,
}

impl RemoteError {
    /// The error an answer of error status stands for.
    fn from_answer(response: &OutgoingResponse) -> RemoteError {
        match serde_json::from_slice::<ApiErrorBody>(&response.body) {
            Ok(error) => RemoteError::Api {
                code: error.code,
                kind: error.kind,
                message: error.message,
                link: error.link,
            },
            Err(_) => {
                let text = String::from_utf8_lossy(&response.body);
                RemoteError::Status {
                    status: response.status,
                    quoted: text.chars().take(QUOTED_ANSWER_BYTES_MAX).collect(),
                }
            }
        }
    }

    /// The code of the Meilisearch error the target answered, if it answered one.
    pub fn remote_code(&self) -> Option<&str> {
        match self {
            RemoteError::Api { code, .. } => Some(code),
            _ => None,
        }
    }

    /// The export task's error: `internal`, with this failure's sentence.
    pub fn into_task_error(self) -> ResponseError {
        ResponseError::new(Code::Internal, self.to_string())
    }
}

impl fmt::Display for RemoteError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RemoteError::Api {
                code,
                kind,
                message,
                link,
            } => write!(
                formatter,
                "Failed to export documents to remote server {code} ({kind}): {message} <{link}>"
            ),
            RemoteError::Status { status, quoted } => write!(
                formatter,
                "Failed to export documents to remote server: it answered HTTP {status} with a \
                 body that is no Meilisearch error: `{quoted}`"
            ),
            RemoteError::Transport(error) => {
                write!(formatter, "Failed to export documents to remote server: {error}")
            }
            RemoteError::NoClient => formatter.write_str(
                "Failed to export documents to remote server: no outgoing HTTP client on this thread",
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, body: &str) -> OutgoingResponse {
        OutgoingResponse {
            status,
            headers: Vec::new(),
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn a_meilisearch_error_keeps_its_code_type_message_and_link() {
        let body = r#"{"message":"The provided API key is invalid.","code":"invalid_api_key","type":"auth","link":"https://docs.meilisearch.com/errors#invalid_api_key"}"#;
        let error = RemoteError::from_answer(&answer(403, body));
        assert_eq!(error.remote_code(), Some("invalid_api_key"));
        let task_error = error.into_task_error();
        assert_eq!(task_error.code, Code::Internal);
        assert_eq!(
            task_error.message,
            "Failed to export documents to remote server invalid_api_key (auth): The provided \
             API key is invalid. <https://docs.meilisearch.com/errors#invalid_api_key>"
        );
    }

    #[test]
    fn another_answer_is_quoted_and_bounded() {
        let long = "x".repeat(QUOTED_ANSWER_BYTES_MAX * 2);
        let error = RemoteError::from_answer(&answer(502, &long));
        assert_eq!(error.remote_code(), None);
        let RemoteError::Status { status, quoted } = &error else {
            panic!("a body that is no error object is quoted: {error:?}");
        };
        assert_eq!(*status, 502);
        assert_eq!(quoted.len(), QUOTED_ANSWER_BYTES_MAX);
    }

    #[test]
    fn paths_are_appended_to_the_url_without_its_trailing_slashes() {
        let target = ExportTarget::new("http://remote:7700//", Some("key"));
        let request = target
            .request(Method::Get, "/indexes/movies")
            .expect("the URL is valid");
        assert_eq!(request.url.as_str(), "http://remote:7700/indexes/movies");
        assert_eq!(
            request.headers,
            vec![("Authorization".to_owned(), "Bearer key".to_owned())]
        );
        let unauthenticated = ExportTarget::new("http://remote:7700", None)
            .request(Method::Get, "/indexes")
            .expect("the URL is valid");
        assert!(unauthenticated.headers.is_empty());
        assert!(matches!(
            ExportTarget::new("", None).request(Method::Get, "/indexes"),
            Err(RemoteError::Transport(OutgoingError::InvalidUrl { .. }))
        ));
    }
}
