//! HTTP/1.1 on the wire for the client: the request's bytes, and the response read from
//! any byte stream (Content-Length, chunked, or until the end of input).
//!
//! Invariants: no more than [`MAX_HEAD_BYTES`] of head and the caller's limit of body are
//! ever buffered; interim 1xx answers are skipped; a HEAD, 204 or 304 answer has no body;
//! a connection is reusable after a response only when the body was delimited (length or
//! chunks), nothing followed it, and the server did not say `Connection: close`.

use futures_lite::io::{AsyncRead, AsyncReadExt};

use super::request::{Method, OutgoingRequest, OutgoingResponse};

/// The largest response head (status line and headers) accepted.
pub const MAX_HEAD_BYTES: usize = 64 << 10;
/// The most response headers parsed.
pub const MAX_HEADERS: usize = 100;
/// The longest chunk-size or trailer line accepted.
pub const MAX_LINE_BYTES: usize = 4 << 10;
/// How much one read asks the stream for.
const READ_BYTES: usize = 16 << 10;

/// Why a response could not be read.
#[derive(Debug)]
pub enum ReadError {
    Io(std::io::Error),
    Invalid(String),
    TooLarge(usize),
}

impl From<std::io::Error> for ReadError {
    fn from(error: std::io::Error) -> Self {
        ReadError::Io(error)
    }
}

/// The request's head and body, ready to write.
pub fn serialize(request: &OutgoingRequest) -> Vec<u8> {
    let url = &request.url;
    let target = &url[url::Position::BeforePath..url::Position::AfterQuery];
    let host = &url[url::Position::BeforeHost..url::Position::AfterPort];
    let mut bytes = Vec::with_capacity(256 + request.body.len());
    bytes
        .extend_from_slice(format!("{} {target} HTTP/1.1\r\n", request.method.as_str()).as_bytes());
    bytes.extend_from_slice(format!("Host: {host}\r\n").as_bytes());
    let has_length = request
        .headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("content-length"));
    if !has_length && (!request.body.is_empty() || request.method != Method::Get) {
        bytes.extend_from_slice(format!("Content-Length: {}\r\n", request.body.len()).as_bytes());
    }
    for (name, value) in &request.headers {
        bytes.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
    }
    bytes.extend_from_slice(b"\r\n");
    bytes.extend_from_slice(&request.body);
    bytes
}

/// Reads bytes from a stream (owned, or borrowed as `&mut`) into a buffer the parsers
/// consume from the front.
pub(super) struct Buffered<Stream> {
    pub(super) stream: Stream,
    pub(super) buffer: Vec<u8>,
    /// True once the stream reported its end.
    pub(super) ended: bool,
}

impl<Stream: AsyncRead + Unpin> Buffered<Stream> {
    /// A reader of `stream` with nothing buffered yet.
    pub(super) fn new(stream: Stream) -> Self {
        Buffered {
            stream,
            buffer: Vec::new(),
            ended: false,
        }
    }

    /// Reads once more; false at the end of input.
    pub(super) async fn fill(&mut self) -> Result<bool, ReadError> {
        let start = self.buffer.len();
        self.buffer.resize(start + READ_BYTES, 0);
        let count = self.stream.read(&mut self.buffer[start..]).await?;
        self.buffer.truncate(start + count);
        self.ended = count == 0;
        Ok(count > 0)
    }

    /// Takes one CRLF-ended line (without the CRLF).
    pub(super) async fn line(&mut self) -> Result<Vec<u8>, ReadError> {
        loop {
            if let Some(end) = self.buffer.windows(2).position(|pair| pair == b"\r\n") {
                let line = self.buffer[..end].to_vec();
                self.buffer.drain(..end + 2);
                return Ok(line);
            }
            if self.buffer.len() > MAX_LINE_BYTES {
                return Err(ReadError::Invalid("a chunk line is too long".to_owned()));
            }
            if !self.fill().await? {
                return Err(ReadError::Invalid("the body ended early".to_owned()));
            }
        }
    }

    /// Moves exactly `count` bytes to `body`.
    async fn exact(&mut self, count: usize, body: &mut Vec<u8>) -> Result<(), ReadError> {
        while self.buffer.len() < count {
            if !self.fill().await? {
                return Err(ReadError::Invalid("the body ended early".to_owned()));
            }
        }
        body.extend(self.buffer.drain(..count));
        Ok(())
    }
}

/// The parsed head of a response.
pub(super) struct Head {
    pub(super) status: u16,
    pub(super) headers: Vec<(String, String)>,
}

/// Reads one response to `method` from `stream`, with a body of at most `max_body` bytes;
/// the response and whether the connection may carry another request.
pub async fn read_response<Stream: AsyncRead + Unpin>(
    stream: &mut Stream,
    method: &Method,
    max_body: usize,
) -> Result<(OutgoingResponse, bool), ReadError> {
    let mut reader = Buffered::new(stream);
    let head = read_final_head(&mut reader).await?;
    let body = read_body(&mut reader, &head, method, max_body).await?;
    let reusable = reader.buffer.is_empty()
        && !reader.ended
        && framing(&head, method)? != Framing::UntilClose
        && !asks_to_close(&head);
    let response = OutgoingResponse {
        status: head.status,
        headers: head.headers,
        body,
    };
    Ok((response, reusable))
}

/// Reads heads until one that is not an interim 1xx answer.
pub(super) async fn read_final_head<Stream: AsyncRead + Unpin>(
    reader: &mut Buffered<Stream>,
) -> Result<Head, ReadError> {
    loop {
        let head = read_head(reader).await?;
        if !(100..200).contains(&head.status) {
            return Ok(head);
        }
    }
}

/// Whether the server said it closes the connection.
fn asks_to_close(head: &Head) -> bool {
    head.headers.iter().any(|(name, value)| {
        name.eq_ignore_ascii_case("connection")
            && value
                .split(',')
                .any(|token| token.trim().eq_ignore_ascii_case("close"))
    })
}

/// Reads and parses a head, leaving what follows it in the buffer.
async fn read_head<Stream: AsyncRead + Unpin>(
    reader: &mut Buffered<Stream>,
) -> Result<Head, ReadError> {
    loop {
        if let Some((length, head)) = parse_head(&reader.buffer)? {
            reader.buffer.drain(..length);
            return Ok(head);
        }
        if reader.buffer.len() > MAX_HEAD_BYTES {
            return Err(ReadError::TooLarge(MAX_HEAD_BYTES));
        }
        if !reader.fill().await? {
            return Err(ReadError::Invalid(
                "the connection closed before a complete response head".to_owned(),
            ));
        }
    }
}

/// Parses a complete head at the start of `bytes`: its length and content, or `None` when
/// more bytes are needed.
fn parse_head(bytes: &[u8]) -> Result<Option<(usize, Head)>, ReadError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut headers);
    let length = match response.parse(bytes) {
        Ok(httparse::Status::Complete(length)) => length,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(error) => return Err(ReadError::Invalid(error.to_string())),
    };
    let status = response
        .code
        .ok_or_else(|| ReadError::Invalid("no status code".to_owned()))?;
    let headers = response
        .headers
        .iter()
        .map(|header| {
            let value = String::from_utf8_lossy(header.value).into_owned();
            (header.name.to_owned(), value)
        })
        .collect();
    Ok(Some((length, Head { status, headers })))
}

/// How the body of a response is delimited.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Framing {
    Empty,
    Length(usize),
    Chunked,
    UntilClose,
}

pub(super) fn framing(head: &Head, method: &Method) -> Result<Framing, ReadError> {
    if *method == Method::Head || head.status == 204 || head.status == 304 {
        return Ok(Framing::Empty);
    }
    let value = |name: &str| {
        head.headers
            .iter()
            .find(|(candidate, _)| candidate.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.trim())
    };
    if let Some(encoding) = value("transfer-encoding") {
        if encoding.to_ascii_lowercase().ends_with("chunked") {
            return Ok(Framing::Chunked);
        }
        return Ok(Framing::UntilClose);
    }
    match value("content-length") {
        Some(length) => length
            .parse()
            .map(Framing::Length)
            .map_err(|_| ReadError::Invalid(format!("bad Content-Length `{length}`"))),
        None => Ok(Framing::UntilClose),
    }
}

async fn read_body<Stream: AsyncRead + Unpin>(
    reader: &mut Buffered<Stream>,
    head: &Head,
    method: &Method,
    max_body: usize,
) -> Result<Vec<u8>, ReadError> {
    let mut body = Vec::new();
    match framing(head, method)? {
        Framing::Empty => {}
        Framing::Length(length) if length > max_body => return Err(ReadError::TooLarge(max_body)),
        Framing::Length(length) => reader.exact(length, &mut body).await?,
        Framing::Chunked => read_chunks(reader, max_body, &mut body).await?,
        Framing::UntilClose => {
            while !reader.ended || !reader.buffer.is_empty() {
                body.append(&mut reader.buffer);
                if body.len() > max_body {
                    return Err(ReadError::TooLarge(max_body));
                }
                reader.fill().await?;
            }
        }
    }
    Ok(body)
}

/// Reads a chunked body and its trailer.
async fn read_chunks<Stream: AsyncRead + Unpin>(
    reader: &mut Buffered<Stream>,
    max_body: usize,
    body: &mut Vec<u8>,
) -> Result<(), ReadError> {
    loop {
        let line = reader.line().await?;
        let size = chunk_size(&line)?;
        if size == 0 {
            while !reader.line().await?.is_empty() {}
            return Ok(());
        }
        if body.len().saturating_add(size) > max_body {
            return Err(ReadError::TooLarge(max_body));
        }
        reader.exact(size, body).await?;
        if !reader.line().await?.is_empty() {
            return Err(ReadError::Invalid(
                "a chunk is longer than its size".to_owned(),
            ));
        }
    }
}

/// The size on a chunk line, extensions ignored.
pub(super) fn chunk_size(line: &[u8]) -> Result<usize, ReadError> {
    let text = String::from_utf8_lossy(line);
    let digits = text.split(';').next().unwrap_or_default().trim();
    usize::from_str_radix(digits, 16)
        .map_err(|_| ReadError::Invalid(format!("bad chunk size `{digits}`")))
}

#[cfg(test)]
mod tests {
    use futures_lite::future::block_on;
    use futures_lite::io::Cursor;

    use super::*;

    fn read(bytes: &[u8], method: Method, max_body: usize) -> Result<OutgoingResponse, ReadError> {
        block_on(read_response(
            &mut Cursor::new(bytes.to_vec()),
            &method,
            max_body,
        ))
        .map(|(response, _)| response)
    }

    #[test]
    fn a_request_has_its_target_host_length_and_headers() {
        let request = OutgoingRequest::new(Method::Post, "http://example.com:8080/a/b?c=d#frag")
            .expect("valid")
            .header("Authorization", "Bearer k")
            .json(b"{}".to_vec());
        let text = String::from_utf8(serialize(&request)).expect("text");
        assert_eq!(
            text,
            "POST /a/b?c=d HTTP/1.1\r\nHost: example.com:8080\r\n\
             Content-Length: 2\r\nAuthorization: Bearer k\r\nContent-Type: application/json\r\n\r\n{}"
        );
        let get = OutgoingRequest::new(Method::Get, "http://[::1]").expect("valid");
        let text = String::from_utf8(serialize(&get)).expect("text");
        assert!(
            text.starts_with("GET / HTTP/1.1\r\nHost: [::1]\r\n"),
            "{text}"
        );
    }

    #[test]
    fn content_length_chunked_and_until_close_bodies_are_read() {
        let response = read(
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: b\r\n\r\nhelloEXTRA",
            Method::Get,
            100,
        )
        .expect("read");
        assert_eq!(
            (response.status, response.body.as_slice()),
            (200, &b"hello"[..])
        );
        assert_eq!(response.header("x-a"), Some("b"));
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4;x=y\r\nWiki\r\n5\r\npedia\r\n0\r\nT: 1\r\n\r\n";
        assert_eq!(
            read(chunked, Method::Get, 100).expect("chunked").body,
            b"Wikipedia"
        );
        let until_close = b"HTTP/1.1 500 Oops\r\n\r\nall of it";
        let response = read(until_close, Method::Get, 100).expect("until close");
        assert_eq!(
            (response.status, response.body.as_slice()),
            (500, &b"all of it"[..])
        );
    }

    #[test]
    fn interim_answers_and_bodiless_answers_are_handled() {
        let bytes =
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nContent-Length: 3\r\n\r\n";
        let response = read(bytes, Method::Post, 100).expect("read");
        assert_eq!((response.status, response.body.len()), (204, 0));
        let head = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n";
        assert!(read(head, Method::Head, 100).expect("head").body.is_empty());
    }

    #[test]
    fn oversized_truncated_and_malformed_responses_are_errors() {
        let large = b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello world";
        assert!(matches!(
            read(large, Method::Get, 10),
            Err(ReadError::TooLarge(10))
        ));
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n12345678\r\n8\r\n12345678\r\n0\r\n\r\n";
        assert!(matches!(
            read(chunked, Method::Get, 10),
            Err(ReadError::TooLarge(10))
        ));
        let short = b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello";
        assert!(matches!(
            read(short, Method::Get, 100),
            Err(ReadError::Invalid(_))
        ));
        assert!(matches!(
            read(b"garbage\r\n\r\n", Method::Get, 100),
            Err(ReadError::Invalid(_))
        ));
        let bad_chunk = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n";
        assert!(matches!(
            read(bad_chunk, Method::Get, 100),
            Err(ReadError::Invalid(_))
        ));
    }
}
