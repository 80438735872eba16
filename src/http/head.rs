//! Parsing of a request head (request line and headers) with httparse, within the limits.
//!
//! Invariants: a head is accepted only if it is at most `header_bytes_max` bytes, has at
//! most `header_count_max` headers (never more than [`HEADER_COUNT_MAX`]) and a target of at
//! most `uri_bytes_max` bytes; its body framing is unambiguous (never both `Content-Length`
//! and `Transfer-Encoding`, never two different lengths).

use std::mem::MaybeUninit;

use super::limits::{HEADER_COUNT_MAX, HttpLimits};
use super::request::{Headers, Method, split_target};

/// Room for the method, spaces and version around the target of a request line.
const REQUEST_LINE_OVERHEAD_BYTES: usize = 64;

/// How the body of a request is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// No body (no `Content-Length`, no `Transfer-Encoding`).
    Empty,
    /// `Content-Length: n`.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
}

/// A parsed head and what the connection needs to know about it.
#[derive(Debug)]
pub(crate) struct ParsedHead {
    pub(crate) method: Method,
    pub(crate) path: String,
    pub(crate) query: Option<String>,
    pub(crate) headers: Headers,
    /// Bytes of the head, blank line included.
    pub(crate) length: usize,
    pub(crate) framing: Framing,
    /// Whether the client allows the connection to stay open after this request.
    pub(crate) keep_alive: bool,
    pub(crate) is_http_1_0: bool,
    pub(crate) expects_continue: bool,
}

/// Why a head was refused; each is answered with an empty body and a closed connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HeadError {
    /// 400: not HTTP/1.x, or ambiguous framing.
    Malformed,
    /// 414: target longer than `uri_bytes_max`.
    UriTooLong,
    /// 431: head over `header_bytes_max`, or too many headers.
    TooLarge,
}

impl HeadError {
    pub(crate) fn status(self) -> u16 {
        match self {
            HeadError::Malformed => 400,
            HeadError::UriTooLong => 414,
            HeadError::TooLarge => 431,
        }
    }
}

/// Parses the head at the start of `buffer`: `Ok(None)` when more bytes are needed.
pub(crate) fn parse_head(
    buffer: &[u8],
    limits: &HttpLimits,
) -> Result<Option<ParsedHead>, HeadError> {
    let mut slots = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; HEADER_COUNT_MAX];
    let slot_count = limits.header_count_max.min(HEADER_COUNT_MAX);
    let mut request = httparse::Request::new(&mut []);
    let status = request
        .parse_with_uninit_headers(buffer, &mut slots[..slot_count])
        .map_err(|error| match error {
            httparse::Error::TooManyHeaders => HeadError::TooLarge,
            _ => HeadError::Malformed,
        })?;
    let length = match status {
        httparse::Status::Complete(length) => length,
        httparse::Status::Partial => return partial_verdict(buffer, limits).map(|()| None),
    };
    if length > limits.header_bytes_max {
        return Err(HeadError::TooLarge);
    }
    let target = request.path.ok_or(HeadError::Malformed)?;
    if target.len() > limits.uri_bytes_max {
        return Err(HeadError::UriTooLong);
    }
    let method = Method::parse(request.method.ok_or(HeadError::Malformed)?);
    let is_http_1_0 = request.version.ok_or(HeadError::Malformed)? == 0;
    let header_bytes = request
        .headers
        .iter()
        .map(|header| header.name.len() + header.value.len())
        .sum();
    let mut headers = Headers::with_capacity(request.headers.len(), header_bytes);
    for header in request.headers.iter() {
        headers.push(header.name, header.value);
    }
    let framing = framing(&headers, is_http_1_0)?;
    let keep_alive = keep_alive(&headers, is_http_1_0);
    let expects_continue = !is_http_1_0
        && headers
            .get("expect")
            .is_some_and(|value| value.trim_ascii().eq_ignore_ascii_case(b"100-continue"));
    let (path, query) = split_target(target);
    Ok(Some(ParsedHead {
        method,
        path,
        query,
        headers,
        length,
        framing,
        keep_alive,
        is_http_1_0,
        expects_continue,
    }))
}

/// A partial head may already be known to be too large.
fn partial_verdict(buffer: &[u8], limits: &HttpLimits) -> Result<(), HeadError> {
    let request_line_complete = buffer.contains(&b'\n');
    if !request_line_complete
        && buffer.len()
            > limits
                .uri_bytes_max
                .saturating_add(REQUEST_LINE_OVERHEAD_BYTES)
    {
        return Err(HeadError::UriTooLong);
    }
    if buffer.len() >= limits.header_bytes_max {
        return Err(HeadError::TooLarge);
    }
    Ok(())
}

fn framing(headers: &Headers, is_http_1_0: bool) -> Result<Framing, HeadError> {
    let mut transfer_encodings = headers.get_all("transfer-encoding").peekable();
    if transfer_encodings.peek().is_some() {
        if is_http_1_0 || headers.contains("content-length") {
            return Err(HeadError::Malformed);
        }
        return chunked_only(transfer_encodings);
    }
    let mut length = None;
    for value in headers.get_all("content-length") {
        let parsed = parse_content_length(value).ok_or(HeadError::Malformed)?;
        if length.is_some_and(|previous| previous != parsed) {
            return Err(HeadError::Malformed);
        }
        length = Some(parsed);
    }
    Ok(match length {
        Some(length) => Framing::Length(length),
        None => Framing::Empty,
    })
}

/// The framing for the `Transfer-Encoding` header values: chunked only when the whole list
/// of codings (over every header line) is exactly one `chunked`.
///
/// Invariant (request-smuggling defence, RFC 9112 §6.1): `chunked` applied twice, or after
/// another coding this server does not decode (`gzip, chunked`), is refused as malformed.
fn chunked_only<'a>(values: impl Iterator<Item = &'a [u8]>) -> Result<Framing, HeadError> {
    let mut codings = values
        .flat_map(|value| value.split(|byte| *byte == b','))
        .map(<[u8]>::trim_ascii)
        .filter(|coding| !coding.is_empty());
    match (codings.next(), codings.next()) {
        (Some(coding), None) if coding.eq_ignore_ascii_case(b"chunked") => Ok(Framing::Chunked),
        _ => Err(HeadError::Malformed),
    }
}

fn parse_content_length(value: &[u8]) -> Option<u64> {
    let digits = value.trim_ascii();
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

fn keep_alive(headers: &Headers, is_http_1_0: bool) -> bool {
    let mut close = false;
    let mut keep_alive = false;
    let tokens = headers
        .get_all("connection")
        .flat_map(|value| value.split(|byte| *byte == b','))
        .map(<[u8]>::trim_ascii);
    for token in tokens {
        close |= token.eq_ignore_ascii_case(b"close");
        keep_alive |= token.eq_ignore_ascii_case(b"keep-alive");
    }
    if close {
        return false;
    }
    !is_http_1_0 || keep_alive
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Option<ParsedHead>, HeadError> {
        parse_head(text.as_bytes(), &HttpLimits::default())
    }

    fn complete(text: &str) -> ParsedHead {
        parse(text).expect("valid").expect("complete")
    }

    #[test]
    fn parses_a_simple_request() {
        let head = complete("GET /indexes/?limit=2 HTTP/1.1\r\nHost: x\r\n\r\nrest");
        assert_eq!(head.method, Method::Get);
        assert_eq!(head.path, "/indexes");
        assert_eq!(head.query.as_deref(), Some("limit=2"));
        assert_eq!(head.headers.get_str("host"), Some("x"));
        assert_eq!(
            head.length,
            "GET /indexes/?limit=2 HTTP/1.1\r\nHost: x\r\n\r\n".len()
        );
        assert_eq!(head.framing, Framing::Empty);
        assert!(head.keep_alive);
        assert!(!head.expects_continue);
    }

    #[test]
    fn partial_heads_ask_for_more() {
        assert!(parse("GET / HTTP/1.1\r\nHost:").expect("valid").is_none());
        assert!(parse("").expect("valid").is_none());
    }

    #[test]
    fn keep_alive_follows_version_and_connection_header() {
        assert!(!complete("GET / HTTP/1.1\r\nConnection: close\r\n\r\n").keep_alive);
        assert!(!complete("GET / HTTP/1.0\r\n\r\n").keep_alive);
        assert!(complete("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").keep_alive);
        assert!(!complete("GET / HTTP/1.1\r\nConnection: keep-alive, close\r\n\r\n").keep_alive);
    }

    #[test]
    fn framing_is_unambiguous() {
        let chunked = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
        assert_eq!(complete(chunked).framing, Framing::Chunked);
        let length = "POST / HTTP/1.1\r\nContent-Length: 12\r\n\r\n";
        assert_eq!(complete(length).framing, Framing::Length(12));
        let same_twice = "POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n";
        assert_eq!(complete(same_twice).framing, Framing::Length(3));
        for malformed in [
            "POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: -3\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
            "POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n",
            "POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
            "POST / HTTP/1.1\r\nTransfer-Encoding: chunked, chunked\r\n\r\n",
            "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
            "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
            "GET / HTTP/2.0\r\n\r\n",
            "GET\r\n\r\n",
        ] {
            assert_eq!(
                parse(malformed).err(),
                Some(HeadError::Malformed),
                "{malformed}"
            );
        }
    }

    #[test]
    fn limits_are_enforced() {
        let limits = HttpLimits {
            header_count_max: 2,
            header_bytes_max: 100,
            uri_bytes_max: 10,
            ..HttpLimits::default()
        };
        let too_many = b"GET / HTTP/1.1\r\na: 1\r\nb: 2\r\nc: 3\r\n\r\n";
        assert_eq!(
            parse_head(too_many, &limits).err(),
            Some(HeadError::TooLarge)
        );
        let long_uri = b"GET /0123456789abc HTTP/1.1\r\n\r\n";
        assert_eq!(
            parse_head(long_uri, &limits).err(),
            Some(HeadError::UriTooLong)
        );
        let mut long_partial_uri = b"GET /".to_vec();
        long_partial_uri.extend(std::iter::repeat_n(b'a', 80));
        assert_eq!(
            parse_head(&long_partial_uri, &limits).err(),
            Some(HeadError::UriTooLong)
        );
        let mut big_head = b"GET / HTTP/1.1\r\nx: ".to_vec();
        big_head.extend(std::iter::repeat_n(b'a', 100));
        assert_eq!(
            parse_head(&big_head, &limits).err(),
            Some(HeadError::TooLarge)
        );
    }

    #[test]
    fn expect_continue_is_recognized_on_http_1_1_only() {
        let text = "POST / HTTP/1.1\r\nExpect: 100-Continue\r\nContent-Length: 1\r\n\r\n";
        assert!(complete(text).expects_continue);
        let old = "POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n";
        assert!(!complete(old).expects_continue);
    }
}
