//! Errors of reading a JSON body off the connection: too large (with or without a
//! `Content-Length`) and truncated, worded and coded as Meilisearch answers them.
//!
//! Invariant: a body over the limit always answers 413 `payload_too_large`, whether its
//! declared `Content-Length` is refused before any byte is read (worded as actix words a
//! known oversized length) or it grows past the limit while streaming.

use crate::errors::{Code, ResponseError};

/// Why the HTTP layer could not hand over a complete body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyReadFailure {
    /// The body is larger than `limit` bytes; `content_length` is the declared length, if any.
    TooLarge {
        content_length: Option<u64>,
        limit: u64,
    },
    /// The connection ended before the declared body length was received.
    Incomplete,
}

/// The API error for a body read failure.
pub fn body_read_error(failure: BodyReadFailure) -> ResponseError {
    match failure {
        BodyReadFailure::TooLarge {
            content_length,
            limit,
        } => json_payload_too_large(content_length, limit),
        BodyReadFailure::Incomplete => incomplete_payload(),
    }
}

/// The API error for a JSON body over `limit` bytes: 413 `payload_too_large`, naming the
/// declared `content_length` when there is one.
pub fn json_payload_too_large(content_length: Option<u64>, limit: u64) -> ResponseError {
    match content_length {
        Some(length) => ResponseError::new(
            Code::PayloadTooLarge,
            format!("JSON payload ({length} bytes) is larger than allowed (limit: {limit} bytes)."),
        ),
        None => ResponseError::new(
            Code::PayloadTooLarge,
            format!("JSON payload has exceeded limit ({limit} bytes)."),
        ),
    }
}

/// 400 `bad_request` for a body cut short.
pub fn incomplete_payload() -> ResponseError {
    ResponseError::new(
        Code::BadRequest,
        "The provided payload is incomplete and cannot be parsed",
    )
}

/// Whether a declared `Content-Length` is refused before reading (strictly over `limit`).
pub fn declared_length_exceeds(content_length: u64, limit: u64) -> bool {
    content_length > limit
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Meilisearch's default `--http-payload-size-limit` (100 MB), in bytes.
    const DEFAULT_LIMIT_BYTES: u64 = 100_000_000;

    #[test]
    fn streamed_overflow_is_413_payload_too_large() {
        let error = json_payload_too_large(None, DEFAULT_LIMIT_BYTES);
        assert_eq!(error.status(), 413);
        assert_eq!(error.code, Code::PayloadTooLarge);
        assert_eq!(
            error.message,
            "JSON payload has exceeded limit (100000000 bytes)."
        );
    }

    #[test]
    fn declared_overflow_is_413_payload_too_large() {
        let error = json_payload_too_large(Some(100_000_001), DEFAULT_LIMIT_BYTES);
        assert_eq!(error.status(), 413);
        assert_eq!(error.code, Code::PayloadTooLarge);
        assert_eq!(
            error.message,
            "JSON payload (100000001 bytes) is larger than allowed (limit: 100000000 bytes)."
        );
    }

    #[test]
    fn truncated_body_is_400_bad_request() {
        let error = body_read_error(BodyReadFailure::Incomplete);
        assert_eq!(error.status(), 400);
        assert_eq!(error.code, Code::BadRequest);
        assert_eq!(
            error.message,
            "The provided payload is incomplete and cannot be parsed"
        );
    }

    #[test]
    fn declared_length_equal_to_limit_is_accepted() {
        assert!(!declared_length_exceeds(
            DEFAULT_LIMIT_BYTES,
            DEFAULT_LIMIT_BYTES
        ));
        assert!(declared_length_exceeds(
            DEFAULT_LIMIT_BYTES + 1,
            DEFAULT_LIMIT_BYTES
        ));
    }
}
