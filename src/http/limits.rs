//! Every limit of the HTTP layer, as named constants and as the [`HttpLimits`] a connection
//! is served with.
//!
//! Invariants: a connection never buffers more than `header_bytes_max` bytes of request head,
//! nor more than `payload_bytes_max` bytes of body (raw or decoded), nor waits longer than
//! the matching timeout for a peer that stopped sending or reading.

use std::time::Duration;

/// Default body limit (`--http-payload-size-limit`, 100 MB as Meilisearch).
pub const PAYLOAD_BYTES_MAX: u64 = 100_000_000;
/// Most header lines in one request head (actix-http's `MAX_HEADERS`); more → 431.
pub const HEADER_COUNT_MAX: usize = 96;
/// Largest request head, request line included (actix-http's buffer limit); larger → 431.
pub const HEADER_BYTES_MAX: usize = 32 * 1024;
/// Longest request target (path and query); longer → 414.
pub const URI_BYTES_MAX: usize = 16 * 1024;
/// How long a connection may stay idle between requests before it is closed.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(75);
/// How long a started request head may take to arrive (actix's `client_request_timeout`,
/// 5 s); past it the connection is answered 408 and closed. It also bounds the wait for the
/// first byte of a new connection (then closed quietly).
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest pause while reading a body before the body is declared incomplete.
pub const BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest pause while the peer does not take our response bytes before the connection is
/// dropped.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// After answering a request whose body was not read (or a protocol error), the connection
/// closes its sending side, then discards what the peer still sends for at most this long,
/// so that the peer reads the answer instead of a reset.
pub const LINGER_TIMEOUT: Duration = Duration::from_secs(2);
/// Most bytes discarded that way.
pub const LINGER_BYTES_MAX: u64 = 4 * 1024 * 1024;
/// Longest chunk-size line of a chunked body (size, extensions and CRLF).
pub const CHUNK_LINE_BYTES_MAX: usize = 4 * 1024;
/// Initial read buffer of a connection; it grows up to `header_bytes_max` for a head.
pub const READ_BUFFER_BYTES: usize = 8 * 1024;
/// Most bytes read from the socket per read call while reading a body.
pub const BODY_READ_CHUNK_BYTES: usize = 64 * 1024;
/// A body allocation never starts larger than this, whatever `Content-Length` announces.
pub const BODY_PREALLOCATION_BYTES_MAX: usize = 1024 * 1024;
/// Responses up to this size are copied behind their head and sent with one write.
pub const RESPONSE_COPY_BYTES_MAX: usize = 64 * 1024;
/// Pipelined responses are written once this many bytes are pending.
pub const OUTPUT_FLUSH_BYTES: usize = 64 * 1024;

/// The limits one connection is served with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpLimits {
    /// Largest body, raw and decoded (`--http-payload-size-limit`).
    pub payload_bytes_max: u64,
    /// Most headers per request; values above [`HEADER_COUNT_MAX`] are clamped to it.
    pub header_count_max: usize,
    /// Largest request head, request line included.
    pub header_bytes_max: usize,
    /// Longest request target.
    pub uri_bytes_max: usize,
    /// Longest wait for the next request on a kept-alive connection.
    pub idle_timeout: Duration,
    /// Longest time for a started head to complete, and for a new connection's first byte.
    pub header_read_timeout: Duration,
    /// Longest pause between two reads of a body.
    pub body_read_timeout: Duration,
    /// Longest pause of a peer that does not take response bytes.
    pub write_timeout: Duration,
    /// Longest chunk-size line of a chunked body.
    pub chunk_line_bytes_max: usize,
    /// How long unread input is discarded before closing after an unread body.
    pub linger_timeout: Duration,
    /// Most bytes discarded that way.
    pub linger_bytes_max: u64,
}

impl Default for HttpLimits {
    fn default() -> HttpLimits {
        HttpLimits {
            payload_bytes_max: PAYLOAD_BYTES_MAX,
            header_count_max: HEADER_COUNT_MAX,
            header_bytes_max: HEADER_BYTES_MAX,
            uri_bytes_max: URI_BYTES_MAX,
            idle_timeout: IDLE_TIMEOUT,
            header_read_timeout: HEADER_READ_TIMEOUT,
            body_read_timeout: BODY_READ_TIMEOUT,
            write_timeout: WRITE_TIMEOUT,
            chunk_line_bytes_max: CHUNK_LINE_BYTES_MAX,
            linger_timeout: LINGER_TIMEOUT,
            linger_bytes_max: LINGER_BYTES_MAX,
        }
    }
}
