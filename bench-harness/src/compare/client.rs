//! A small blocking HTTP/1.1 client that keeps its response bodies: one keep-alive
//! connection, one request at a time. The comparison uses it for everything but the load
//! runs (index setup, ingestion, task polling, the top-hits pass).
//!
//! Invariants: a response is read exactly (Content-Length, chunked, or until close), so the
//! connection can carry the next request; when a reused connection fails before a single
//! response byte arrives (the server closed an idle connection), the request is sent once
//! more on a new connection, and never otherwise; response heads are bounded by
//! `RESPONSE_HEAD_BYTES_MAX` and bodies by `RESPONSE_BODY_BYTES_MAX`.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use crate::load::response::{RESPONSE_HEAD_BYTES_MAX, RESPONSE_HEADERS_MAX};

/// The largest response body kept.
pub const RESPONSE_BODY_BYTES_MAX: usize = 256 * 1024 * 1024;
/// Bytes read from the socket at a time.
const READ_CHUNK_BYTES: usize = 64 * 1024;

/// A response: its status and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// The decoded body.
    pub body: Vec<u8>,
}

impl Response {
    /// The body as JSON.
    pub fn json(&self) -> Result<serde_json::Value, String> {
        serde_json::from_slice(&self.body).map_err(|error| {
            format!(
                "status {}: body is not JSON ({error}): {}",
                self.status,
                String::from_utf8_lossy(&self.body[..self.body.len().min(200)])
            )
        })
    }
}

/// One keep-alive connection to a server.
#[derive(Debug)]
pub struct Client {
    address: SocketAddr,
    api_key: Option<String>,
    timeout: Duration,
    stream: Option<TcpStream>,
}

impl Client {
    /// A client of the server at `address` (connects on first use).
    pub fn new(address: SocketAddr, api_key: Option<String>, timeout: Duration) -> Client {
        Client {
            address,
            api_key,
            timeout,
            stream: None,
        }
    }

    /// Sends one request and reads its response.
    pub fn request(
        &mut self,
        method: &str,
        path: &str,
        content_type: &str,
        body: &[u8],
    ) -> io::Result<Response> {
        let head = self.head(method, path, content_type, body.len());
        let reused = self.stream.is_some();
        match self.exchange(&head, body) {
            Ok(response) => Ok(response),
            Err(Failure::BeforeResponse(_)) if reused => {
                self.stream = None;
                self.exchange(&head, body).map_err(Failure::into_error)
            }
            Err(failure) => {
                self.stream = None;
                Err(failure.into_error())
            }
        }
    }

    /// `GET path`.
    pub fn get(&mut self, path: &str) -> io::Result<Response> {
        self.request("GET", path, "application/json", b"")
    }

    /// A request with a JSON body.
    pub fn send_json(
        &mut self,
        method: &str,
        path: &str,
        body: &serde_json::Value,
    ) -> io::Result<Response> {
        self.request(
            method,
            path,
            "application/json",
            body.to_string().as_bytes(),
        )
    }

    fn head(&self, method: &str, path: &str, content_type: &str, length: usize) -> Vec<u8> {
        let authorization = self
            .api_key
            .as_ref()
            .map(|key| format!("Authorization: Bearer {key}\r\n"))
            .unwrap_or_default();
        format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\n{authorization}Content-Type: {content_type}\r\nContent-Length: {length}\r\n\r\n",
            self.address
        )
        .into_bytes()
    }

    fn exchange(&mut self, head: &[u8], body: &[u8]) -> Result<Response, Failure> {
        let stream = match &mut self.stream {
            Some(stream) => stream,
            None => {
                let stream = TcpStream::connect_timeout(&self.address, self.timeout)
                    .map_err(Failure::BeforeResponse)?;
                stream
                    .set_read_timeout(Some(self.timeout))
                    .map_err(Failure::BeforeResponse)?;
                stream
                    .set_write_timeout(Some(self.timeout))
                    .map_err(Failure::BeforeResponse)?;
                stream.set_nodelay(true).map_err(Failure::BeforeResponse)?;
                self.stream.insert(stream)
            }
        };
        let written = stream.write_all(head).and_then(|()| stream.write_all(body));
        written.map_err(Failure::BeforeResponse)?;
        let (response, close) = read_response(stream)?;
        if close {
            self.stream = None;
        }
        Ok(response)
    }
}

/// How an exchange failed.
#[derive(Debug)]
enum Failure {
    /// Before any byte of the response arrived.
    BeforeResponse(io::Error),
    /// After.
    DuringResponse(io::Error),
}

impl Failure {
    fn into_error(self) -> io::Error {
        match self {
            Failure::BeforeResponse(error) | Failure::DuringResponse(error) => error,
        }
    }
}

fn invalid(detail: impl Into<String>) -> Failure {
    Failure::DuringResponse(io::Error::new(io::ErrorKind::InvalidData, detail.into()))
}

/// Reads into `buffer` once; `Ok(false)` at end of stream.
fn fill(stream: &mut impl Read, buffer: &mut Vec<u8>) -> io::Result<bool> {
    let mut chunk = [0u8; READ_CHUNK_BYTES];
    let read = stream.read(&mut chunk)?;
    buffer.extend_from_slice(&chunk[..read]);
    Ok(read > 0)
}

/// Reads one response; answers it and whether the connection must be closed.
pub fn read_response_from(stream: &mut impl Read) -> io::Result<(Response, bool)> {
    read_response(stream).map_err(Failure::into_error)
}

fn read_response(stream: &mut impl Read) -> Result<(Response, bool), Failure> {
    let mut buffer = Vec::new();
    let (head_length, status, framing) = loop {
        let mut headers = [httparse::EMPTY_HEADER; RESPONSE_HEADERS_MAX];
        let mut response = httparse::Response::new(&mut headers);
        match response.parse(&buffer) {
            Ok(httparse::Status::Complete(length)) => {
                let status = response.code.unwrap_or(0);
                let framing = framing(response.headers, response.version == Some(0))?;
                if (100..200).contains(&status) {
                    buffer.drain(..length);
                    continue;
                }
                break (length, status, framing);
            }
            Ok(httparse::Status::Partial) if buffer.len() > RESPONSE_HEAD_BYTES_MAX => {
                return Err(invalid("response head too large"));
            }
            Ok(httparse::Status::Partial) => {}
            Err(error) => return Err(invalid(format!("malformed response head: {error}"))),
        }
        let before = buffer.is_empty();
        match fill(stream, &mut buffer) {
            Ok(true) => {}
            Ok(false) if before => {
                return Err(Failure::BeforeResponse(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "connection closed before the response",
                )));
            }
            Ok(false) => return Err(invalid("connection closed inside the response head")),
            Err(error) if before => return Err(Failure::BeforeResponse(error)),
            Err(error) => return Err(Failure::DuringResponse(error)),
        }
    };
    buffer.drain(..head_length);
    let (body, close) = match framing.length {
        Length::Fixed(length) => {
            if length > RESPONSE_BODY_BYTES_MAX {
                return Err(invalid("response body too large"));
            }
            while buffer.len() < length {
                if !fill(stream, &mut buffer).map_err(Failure::DuringResponse)? {
                    return Err(invalid("connection closed inside the body"));
                }
            }
            buffer.truncate(length);
            (buffer, framing.close)
        }
        Length::Chunked => (read_chunked(stream, buffer)?, framing.close),
        Length::UntilClose => {
            while fill(stream, &mut buffer).map_err(Failure::DuringResponse)? {
                if buffer.len() > RESPONSE_BODY_BYTES_MAX {
                    return Err(invalid("response body too large"));
                }
            }
            (buffer, true)
        }
    };
    Ok((Response { status, body }, close))
}

/// How a body is delimited.
enum Length {
    Fixed(usize),
    Chunked,
    UntilClose,
}

struct Framing {
    length: Length,
    close: bool,
}

fn framing(headers: &[httparse::Header<'_>], http_1_0: bool) -> Result<Framing, Failure> {
    let mut length = Length::UntilClose;
    let mut close = http_1_0;
    for header in headers {
        let value = String::from_utf8_lossy(header.value)
            .trim()
            .to_ascii_lowercase();
        if header.name.eq_ignore_ascii_case("content-length") {
            if !matches!(length, Length::Chunked) {
                length = Length::Fixed(value.parse().map_err(|_| invalid("bad Content-Length"))?);
            }
        } else if header.name.eq_ignore_ascii_case("transfer-encoding") {
            if value.rsplit(',').next().map(str::trim) == Some("chunked") {
                length = Length::Chunked;
            }
        } else if header.name.eq_ignore_ascii_case("connection") {
            if value.contains("close") {
                close = true;
            } else if value.contains("keep-alive") {
                close = false;
            }
        }
    }
    Ok(Framing { length, close })
}

/// The index of the first CRLF at or after `from`, reading more until there is one.
fn line_end(stream: &mut impl Read, buffer: &mut Vec<u8>, from: usize) -> Result<usize, Failure> {
    loop {
        if let Some(offset) = buffer[from.min(buffer.len())..]
            .windows(2)
            .position(|window| window == b"\r\n")
        {
            return Ok(from + offset);
        }
        if buffer.len() > RESPONSE_BODY_BYTES_MAX {
            return Err(invalid("chunked body too large"));
        }
        if !fill(stream, buffer).map_err(Failure::DuringResponse)? {
            return Err(invalid("connection closed inside a chunked body"));
        }
    }
}

/// Decodes a chunked body whose first bytes are in `buffer`.
fn read_chunked(stream: &mut impl Read, mut buffer: Vec<u8>) -> Result<Vec<u8>, Failure> {
    let mut body = Vec::new();
    let mut position = 0;
    loop {
        let end = line_end(stream, &mut buffer, position)?;
        let size_text = String::from_utf8_lossy(&buffer[position..end]).to_string();
        let size_digits = size_text.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_digits, 16)
            .map_err(|_| invalid(format!("bad chunk size `{size_digits}`")))?;
        position = end + 2;
        if size == 0 {
            // Trailers, then the final empty line.
            loop {
                let end = line_end(stream, &mut buffer, position)?;
                let empty = end == position;
                position = end + 2;
                if empty {
                    return Ok(body);
                }
            }
        }
        if body.len() + size > RESPONSE_BODY_BYTES_MAX {
            return Err(invalid("chunked body too large"));
        }
        while buffer.len() < position + size + 2 {
            if !fill(stream, &mut buffer).map_err(Failure::DuringResponse)? {
                return Err(invalid("connection closed inside a chunk"));
            }
        }
        body.extend_from_slice(&buffer[position..position + size]);
        position += size + 2;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A reader that hands out its bytes a few at a time, as a socket may.
    struct Trickle {
        bytes: Vec<u8>,
        position: usize,
        step: usize,
    }

    impl Read for Trickle {
        fn read(&mut self, output: &mut [u8]) -> io::Result<usize> {
            let count = self
                .step
                .min(output.len())
                .min(self.bytes.len() - self.position);
            output[..count].copy_from_slice(&self.bytes[self.position..self.position + count]);
            self.position += count;
            Ok(count)
        }
    }

    fn read_all(bytes: &[u8], step: usize) -> io::Result<(Response, bool)> {
        read_response_from(&mut Trickle {
            bytes: bytes.to_vec(),
            position: 0,
            step,
        })
    }

    #[test]
    fn content_length_and_chunked_bodies_decode_in_any_pieces() {
        let fixed = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
        let chunked = b"HTTP/1.1 202 Accepted\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3\r\nhel\r\n2;x=y\r\nlo\r\n0\r\nTrailer: 1\r\n\r\n";
        for step in [1, 2, 7, 4096] {
            let (response, close) = read_all(fixed, step).expect("read_all succeeds");
            assert_eq!(
                (response.status, response.body.as_slice(), close),
                (200, b"hello".as_slice(), false)
            );
            let (response, close) = read_all(chunked, step).expect("read_all succeeds");
            assert_eq!(
                (response.status, response.body.as_slice(), close),
                (202, b"hello".as_slice(), true)
            );
        }
    }

    #[test]
    fn interim_responses_are_skipped_and_unframed_bodies_end_at_close() {
        let input = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.0 404 Not Found\r\n\r\n{\"a\":1}";
        let (response, close) = read_all(input, 3).expect("read_all succeeds");
        assert_eq!(response.status, 404);
        assert_eq!(response.json().expect("json reads valid input")["a"], 1);
        assert!(close);
    }

    #[test]
    fn truncated_responses_are_errors() {
        assert!(read_all(b"", 10).is_err());
        assert!(read_all(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort", 10).is_err());
        assert!(
            read_all(
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
                10
            )
            .is_err()
        );
    }
}
