//! The response a handler returns, and the reason phrases of the statuses it may carry.
//!
//! Invariants: the connection adds `content-length` (or `transfer-encoding: chunked` for a
//! streamed body), `date`, CORS, `vary`, `content-encoding` and `connection` itself; a
//! handler sets only its own headers (`content-type`, `retry-after`, ...). Header names are
//! written as given. A response with a [`BodyStream`] sends it instead of `body`.

use std::borrow::Cow;

use super::streamed::BodyStream;
use crate::errors::ResponseError;

/// Seconds a client is told to wait before retrying a 503 (Meilisearch sends 10).
pub const RETRY_AFTER_SECONDS: u32 = 10;

/// One response, as the handler returns it.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(Cow<'static, str>, String)>,
    pub body: Vec<u8>,
    /// A body sent as it is produced, in place of `body`.
    pub stream: Option<BodyStream>,
}

impl Response {
    /// A response with a JSON body (`content-type: application/json`).
    pub fn json(status: u16, body: impl Into<Vec<u8>>) -> Response {
        Response {
            status,
            headers: vec![(
                Cow::Borrowed("content-type"),
                "application/json".to_string(),
            )],
            body: body.into(),
            stream: None,
        }
    }

    /// A response without body nor content type.
    pub fn empty(status: u16) -> Response {
        Response {
            status,
            headers: Vec::new(),
            body: Vec::new(),
            stream: None,
        }
    }

    /// A response whose body is sent piece by piece as `stream` produces it.
    pub fn streamed(status: u16, stream: BodyStream) -> Response {
        Response {
            status,
            headers: Vec::new(),
            body: Vec::new(),
            stream: Some(stream),
        }
    }

    /// The error object of `error` with its status; a 503 also carries `retry-after: 10`.
    pub fn error(error: &ResponseError) -> Response {
        let mut response = Response::json(error.status(), error.to_json());
        if response.status == 503 {
            response.headers.push((
                Cow::Borrowed("retry-after"),
                RETRY_AFTER_SECONDS.to_string(),
            ));
        }
        response
    }

    /// Adds a header.
    pub fn with_header(
        mut self,
        name: impl Into<Cow<'static, str>>,
        value: impl Into<String>,
    ) -> Response {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// The value of the first header called `name` (ASCII case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(header_name, _)| header_name.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

/// The reason phrase of a status (empty for unknown statuses, which HTTP allows).
pub fn reason_phrase(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        101 => "Switching Protocols",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Found",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Payload Too Large",
        414 => "URI Too Long",
        415 => "Unsupported Media Type",
        416 => "Range Not Satisfiable",
        417 => "Expectation Failed",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::errors::Code;

    #[test]
    fn error_response_carries_the_error_object_and_its_status() {
        let error = ResponseError::new(Code::PayloadTooLarge, "too big");
        let response = Response::error(&error);
        assert_eq!(response.status, 413);
        assert_eq!(response.header("Content-Type"), Some("application/json"));
        assert_eq!(response.body, error.to_json().into_bytes());
        assert_eq!(response.header("retry-after"), None);
    }

    #[test]
    fn service_unavailable_carries_retry_after() {
        let error = ResponseError::new(Code::TooManySearchRequests, "busy");
        let response = Response::error(&error);
        assert_eq!(response.status, 503);
        assert_eq!(response.header("Retry-After"), Some("10"));
    }
}
