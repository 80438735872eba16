//! An incremental HTTP/1.1 response parser for the driver: it reads the status
//! and the framing headers, then skips the body (Content-Length, chunked, or
//! until the connection closes).
//!
//! Invariants: `feed` never consumes a byte past the end of the current
//! response (pipelined responses stay intact); interim 1xx responses (other
//! than 101) are skipped; a response head is bounded by
//! `RESPONSE_HEAD_BYTES_MAX`; conflicting framing is an error, never a guess.

use std::fmt;

use super::chunked::{ChunkedDecoder, ChunkedError};

/// The largest response head (status line and headers) accepted.
pub const RESPONSE_HEAD_BYTES_MAX: usize = 64 * 1024;
/// The most response headers accepted.
pub const RESPONSE_HEADERS_MAX: usize = 128;

/// What a complete response tells the driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseDone {
    /// The status code.
    pub status: u16,
    /// Whether the server closes the connection after this response.
    pub close: bool,
}

/// The result of feeding bytes to the parser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsed {
    /// The response is not complete; `consumed` bytes were used.
    Incomplete { consumed: usize },
    /// A response completed after `consumed` bytes.
    Complete { consumed: usize, done: ResponseDone },
}

/// A malformed or unacceptable response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProtocolError {
    /// The head does not parse as HTTP/1.x.
    Head(String),
    /// The head is larger than `RESPONSE_HEAD_BYTES_MAX`.
    HeadTooLarge,
    /// `Content-Length` is not a number, or two of them disagree.
    BadContentLength,
    /// `Transfer-Encoding` other than chunked as the final coding.
    UnsupportedTransferEncoding,
    /// A `101 Switching Protocols` the driver never asked for.
    UnexpectedUpgrade,
    /// The chunked body is malformed.
    Chunked(ChunkedError),
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProtocolError::Head(detail) => write!(formatter, "malformed response head: {detail}"),
            ProtocolError::HeadTooLarge => write!(formatter, "response head too large"),
            ProtocolError::BadContentLength => write!(formatter, "bad Content-Length"),
            ProtocolError::UnsupportedTransferEncoding => {
                write!(formatter, "unsupported Transfer-Encoding")
            }
            ProtocolError::UnexpectedUpgrade => write!(formatter, "unexpected 101 response"),
            ProtocolError::Chunked(error) => write!(formatter, "{error}"),
        }
    }
}

impl std::error::Error for ProtocolError {}

/// How the body of the current response is delimited.
#[derive(Debug, Clone)]
enum Body {
    /// Exactly this many bytes remain.
    Fixed(u64),
    /// A chunked body.
    Chunked(ChunkedDecoder),
    /// Everything until the server closes the connection.
    UntilClose,
}

/// Parses a stream of responses, one at a time.
#[derive(Debug, Clone, Default)]
pub struct ResponseParser {
    /// The head of the response whose body is being skipped, if any.
    current: Option<(ResponseDone, Body)>,
}

/// The framing read from a head.
struct Framing {
    content_length: Option<u64>,
    chunked: bool,
    close: bool,
}

impl ResponseParser {
    /// A parser waiting for a status line.
    pub fn new() -> ResponseParser {
        ResponseParser::default()
    }

    /// Forgets any partial response (after a connection is dropped).
    pub fn reset(&mut self) {
        self.current = None;
    }

    /// Consumes bytes of the response to a request; `expects_body` is false
    /// for responses to HEAD.
    pub fn feed(&mut self, input: &[u8], expects_body: bool) -> Result<Parsed, ProtocolError> {
        let mut consumed = 0;
        loop {
            if self.current.is_none() {
                match parse_head(&input[consumed..], expects_body)? {
                    Head::Incomplete => return Ok(Parsed::Incomplete { consumed }),
                    Head::Interim { length } => consumed += length,
                    Head::Final { length, done, body } => {
                        consumed += length;
                        self.current = Some((done, body));
                    }
                }
                continue;
            }
            let (done, body) = self.current.as_mut().expect("checked just above");
            let done = *done;
            let rest = &input[consumed..];
            let finished = match body {
                Body::Fixed(remaining) => {
                    let skipped = (*remaining).min(rest.len() as u64);
                    consumed += usize::try_from(skipped).expect("bounded by the input length");
                    *remaining -= skipped;
                    *remaining == 0
                }
                Body::Chunked(decoder) => {
                    consumed += decoder.feed(rest).map_err(ProtocolError::Chunked)?;
                    decoder.is_done()
                }
                Body::UntilClose => {
                    consumed += rest.len();
                    false
                }
            };
            if finished {
                self.current = None;
                return Ok(Parsed::Complete { consumed, done });
            }
            return Ok(Parsed::Incomplete { consumed });
        }
    }

    /// Called when the server closed the connection: a body delimited by the
    /// close is complete then; any other partial response is not.
    pub fn finish_at_close(&mut self) -> Option<ResponseDone> {
        match self.current.take() {
            Some((done, Body::UntilClose)) => Some(done),
            _ => None,
        }
    }

    /// Whether a response is partly read.
    pub fn is_mid_response(&self) -> bool {
        self.current.is_some()
    }
}

/// What the start of the input holds.
enum Head {
    /// Not a complete head yet.
    Incomplete,
    /// An interim 1xx response of `length` bytes, to skip.
    Interim { length: usize },
    /// A final response head of `length` bytes, and how its body is framed.
    Final {
        length: usize,
        done: ResponseDone,
        body: Body,
    },
}

/// Parses one response head.
fn parse_head(input: &[u8], expects_body: bool) -> Result<Head, ProtocolError> {
    let mut headers = [httparse::EMPTY_HEADER; RESPONSE_HEADERS_MAX];
    let mut response = httparse::Response::new(&mut headers);
    let length = match response.parse(input) {
        Ok(httparse::Status::Complete(length)) => length,
        Ok(httparse::Status::Partial) if input.len() > RESPONSE_HEAD_BYTES_MAX => {
            return Err(ProtocolError::HeadTooLarge);
        }
        Ok(httparse::Status::Partial) => return Ok(Head::Incomplete),
        Err(error) => return Err(ProtocolError::Head(error.to_string())),
    };
    if length > RESPONSE_HEAD_BYTES_MAX {
        return Err(ProtocolError::HeadTooLarge);
    }
    let status = response.code.expect("a complete head has a status");
    if status == 101 {
        return Err(ProtocolError::UnexpectedUpgrade);
    }
    if (100..200).contains(&status) {
        return Ok(Head::Interim { length });
    }
    let framing = read_framing(response.headers, response.version == Some(0))?;
    let done = ResponseDone {
        status,
        close: framing.close,
    };
    let (done, body) = if !expects_body || status == 204 || status == 304 {
        (done, Body::Fixed(0))
    } else if framing.chunked {
        (done, Body::Chunked(ChunkedDecoder::new()))
    } else if let Some(content_length) = framing.content_length {
        (done, Body::Fixed(content_length))
    } else {
        (
            ResponseDone {
                status,
                close: true,
            },
            Body::UntilClose,
        )
    };
    Ok(Head::Final { length, done, body })
}

/// Reads Content-Length, Transfer-Encoding and Connection.
fn read_framing(
    headers: &[httparse::Header<'_>],
    http_1_0: bool,
) -> Result<Framing, ProtocolError> {
    let mut framing = Framing {
        content_length: None,
        chunked: false,
        close: http_1_0,
    };
    for header in headers {
        let value = std::str::from_utf8(header.value).unwrap_or("");
        if header.name.eq_ignore_ascii_case("content-length") {
            let length: u64 = value
                .trim()
                .parse()
                .map_err(|_| ProtocolError::BadContentLength)?;
            if framing
                .content_length
                .is_some_and(|previous| previous != length)
            {
                return Err(ProtocolError::BadContentLength);
            }
            framing.content_length = Some(length);
        } else if header.name.eq_ignore_ascii_case("transfer-encoding") {
            let last = value.rsplit(',').next().unwrap_or("").trim();
            if !last.eq_ignore_ascii_case("chunked") {
                return Err(ProtocolError::UnsupportedTransferEncoding);
            }
            framing.chunked = true;
        } else if header.name.eq_ignore_ascii_case("connection") {
            for token in value.split(',').map(str::trim) {
                if token.eq_ignore_ascii_case("close") {
                    framing.close = true;
                } else if token.eq_ignore_ascii_case("keep-alive") && http_1_0 {
                    framing.close = false;
                }
            }
        }
    }
    Ok(framing)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn complete(parser: &mut ResponseParser, input: &[u8]) -> (usize, ResponseDone) {
        match parser.feed(input, true).expect("feed succeeds") {
            Parsed::Complete { consumed, done } => (consumed, done),
            other => panic!("expected a complete response, got {other:?}"),
        }
    }

    #[test]
    fn pipelined_content_length_responses_split_exactly() {
        let first = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello".as_slice();
        let second = b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 2\r\n\r\nno".as_slice();
        let input = [first, second].concat();
        let mut parser = ResponseParser::new();
        let (consumed, done) = complete(&mut parser, &input);
        assert_eq!(
            (consumed, done.status, done.close),
            (first.len(), 200, false)
        );
        let (consumed, done) = complete(&mut parser, &input[first.len()..]);
        assert_eq!((consumed, done.status), (second.len(), 503));
    }

    #[test]
    fn chunked_response_fed_in_pieces_completes_once() {
        let input = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
        for split in 1..input.len() {
            let mut parser = ResponseParser::new();
            let first = match parser.feed(&input[..split], true).expect("feed succeeds") {
                Parsed::Incomplete { consumed } => consumed,
                other => panic!("split {split}: {other:?}"),
            };
            let mut rest = input[first..].to_vec();
            let (consumed, done) = complete(&mut parser, &rest);
            assert_eq!(first + consumed, input.len(), "split {split}");
            assert_eq!(done.status, 200);
            rest.clear();
        }
    }

    #[test]
    fn interim_and_bodyless_responses() {
        let input = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n";
        let (consumed, done) = complete(&mut ResponseParser::new(), input);
        assert_eq!((consumed, done.status), (input.len(), 204));
        let head = b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n";
        match ResponseParser::new()
            .feed(head, false)
            .expect("feed succeeds")
        {
            Parsed::Complete { consumed, .. } => assert_eq!(consumed, head.len()),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn body_until_close_completes_only_at_close() {
        let mut parser = ResponseParser::new();
        let input = b"HTTP/1.0 200 OK\r\n\r\nsome body";
        assert_eq!(
            parser.feed(input, true).expect("feed succeeds"),
            Parsed::Incomplete {
                consumed: input.len()
            }
        );
        assert!(parser.is_mid_response());
        assert_eq!(
            parser.finish_at_close(),
            Some(ResponseDone {
                status: 200,
                close: true
            })
        );
    }

    #[test]
    fn connection_close_and_http_1_0_keep_alive_are_honoured() {
        let close = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
        assert!(complete(&mut ResponseParser::new(), close).1.close);
        let keep = b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n";
        assert!(!complete(&mut ResponseParser::new(), keep).1.close);
    }

    #[test]
    fn bad_framing_is_an_error() {
        let conflict = b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n";
        assert_eq!(
            ResponseParser::new().feed(conflict, true),
            Err(ProtocolError::BadContentLength)
        );
        let gzip = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n";
        assert_eq!(
            ResponseParser::new().feed(gzip, true),
            Err(ProtocolError::UnsupportedTransferEncoding)
        );
        assert!(matches!(
            ResponseParser::new().feed(b"garbage\r\n\r\n", true),
            Err(ProtocolError::Head(_))
        ));
        let endless = [
            b"HTTP/1.1 200 OK\r\nX: ".as_slice(),
            &vec![b'a'; RESPONSE_HEAD_BYTES_MAX],
        ]
        .concat();
        assert_eq!(
            ResponseParser::new().feed(&endless, true),
            Err(ProtocolError::HeadTooLarge)
        );
    }
}
