//! An outgoing request, its response, and the limits one send runs under.
//!
//! Invariants: a request's URL is parsed once, when the request is built, and is `http`
//! or `https` (checked by [`OutgoingRequest::new`]); every limit has a named default and a
//! per-request override ([`OutgoingRequest::options`]).

use std::time::Duration;

use url::Url;

use super::error::OutgoingError;
pub use crate::http::Method;

/// How long connecting to one address may take by default.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one attempt (connect, send, whole response) may take by default.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// How many attempts one send makes at most by default (the first included).
pub const DEFAULT_MAX_ATTEMPTS: u32 = 4;
/// The pause before the second attempt; each later pause doubles it.
pub const DEFAULT_FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// The longest pause between two attempts by backoff.
pub const DEFAULT_MAX_BACKOFF: Duration = Duration::from_secs(10);
/// The longest pause a server's `Retry-After` may ask for; longer asks are cut to this.
pub const DEFAULT_RETRY_AFTER_CAP: Duration = Duration::from_secs(30);
/// The largest response body accepted by default.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 64 << 20;

/// The schemes the client speaks.
pub const SUPPORTED_SCHEMES: [&str; 2] = ["http", "https"];

/// The limits and retry schedule of one send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendOptions {
    pub connect_timeout: Duration,
    pub request_timeout: Duration,
    pub max_attempts: u32,
    pub first_backoff: Duration,
    pub max_backoff: Duration,
    pub retry_after_cap: Duration,
    pub max_response_bytes: usize,
}

impl Default for SendOptions {
    fn default() -> Self {
        SendOptions {
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            first_backoff: DEFAULT_FIRST_BACKOFF,
            max_backoff: DEFAULT_MAX_BACKOFF,
            retry_after_cap: DEFAULT_RETRY_AFTER_CAP,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
        }
    }
}

/// A request to send: method, URL, headers, body bytes the caller built.
#[derive(Debug, Clone)]
pub struct OutgoingRequest {
    pub method: Method,
    pub url: Url,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Overrides the client's options for this request.
    pub options: Option<SendOptions>,
}

impl OutgoingRequest {
    /// A request without headers or body; fails on an unparsable URL, one without a host
    /// or one of an unsupported scheme.
    pub fn new(method: Method, url: &str) -> Result<Self, OutgoingError> {
        let parsed = Url::parse(url).map_err(|error| OutgoingError::InvalidUrl {
            url: url.to_owned(),
            reason: error.to_string(),
        })?;
        if !SUPPORTED_SCHEMES.contains(&parsed.scheme()) {
            return Err(OutgoingError::UnsupportedScheme {
                scheme: parsed.scheme().to_owned(),
            });
        }
        if parsed.host().is_none() {
            return Err(OutgoingError::InvalidUrl {
                url: url.to_owned(),
                reason: "the URL has no host".to_owned(),
            });
        }
        Ok(OutgoingRequest {
            method,
            url: parsed,
            headers: Vec::new(),
            body: Vec::new(),
            options: None,
        })
    }

    /// Adds a header (sent in the order added).
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Sets the body, as is.
    pub fn body(mut self, body: Vec<u8>) -> Self {
        self.body = body;
        self
    }

    /// Sets a JSON body and its `Content-Type`.
    pub fn json(self, body: Vec<u8>) -> Self {
        self.header("Content-Type", "application/json").body(body)
    }

    /// Overrides the client's limits for this request.
    pub fn options(mut self, options: SendOptions) -> Self {
        self.options = Some(options);
        self
    }

    /// Adds the current span context ([`crate::traces::current`]) as `traceparent`, unless
    /// there is none or the request names its own.
    pub fn with_trace_context(self) -> Self {
        let Some(traceparent) = crate::traces::current_traceparent() else {
            return self;
        };
        let named = self
            .headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case(crate::traces::TRACEPARENT_HEADER));
        if named {
            self
        } else {
            self.header(crate::traces::TRACEPARENT_HEADER, &traceparent)
        }
    }
}

/// An answer, whatever its status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutgoingResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl OutgoingResponse {
    /// The first value of header `name` (compared without case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(candidate, _)| candidate.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// Whether the status is 2xx.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }
}
