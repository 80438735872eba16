//! Responses read as they arrive: [`OutgoingClient::send_streamed`] answers once the
//! response head is in, and the caller takes the body piece by piece with
//! [`StreamedResponse::next_piece`] (a Content-Length, chunked or until-close body, gzip
//! decoded on the way) — what a server-sent event stream needs, where the body is a
//! conversation that lasts as long as the server keeps talking.
//!
//! Invariants:
//! - the request timeout bounds the exchange up to the response head; after it, each piece
//!   must come within the request's idle timeout ([`StreamedResponse::idle_timeout`]), and
//!   the whole body never exceeds `max_response_bytes`;
//! - only failures before any response are retried (transient errors, with backoff, up to
//!   `max_attempts`); a response of any status is answered as it is;
//! - a streamed response's connection is never pooled: it ends with the response.

use std::time::Duration;

use futures_lite::io::AsyncWriteExt;

use super::pool::Connection;
use super::wire::{self, Buffered, Framing, Head, ReadError};
use super::{OutgoingClient, OutgoingError, OutgoingRequest, SendOptions, retry};

/// How long a streamed body may stay silent by default before the read fails.
pub const DEFAULT_STREAM_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// A response whose body is still arriving.
pub struct StreamedResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    body: BodyReader,
    idle_timeout: Duration,
    host: String,
}

impl std::fmt::Debug for StreamedResponse {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("StreamedResponse")
            .field("status", &self.status)
            .field("headers", &self.headers)
            .finish_non_exhaustive()
    }
}

impl OutgoingClient {
    /// Sends `request` and answers as soon as the response head arrived; the body is read
    /// with [`StreamedResponse::next_piece`].
    pub async fn send_streamed(
        &self,
        request: OutgoingRequest,
        idle_timeout: Duration,
    ) -> Result<StreamedResponse, OutgoingError> {
        let request = request.with_trace_context();
        let options = request.options.unwrap_or(self.options);
        let mut attempt = 1;
        loop {
            let outcome = self
                .streamed_attempt(&request, &options, idle_timeout)
                .await;
            let retryable = matches!(&outcome, Err(error) if error.is_transient());
            if !retryable || attempt >= options.max_attempts {
                return outcome;
            }
            crate::runtime::sleep(retry::backoff(attempt, &options)).await;
            attempt += 1;
        }
    }

    /// One attempt up to the response head, bounded by the request timeout.
    async fn streamed_attempt(
        &self,
        request: &OutgoingRequest,
        options: &SendOptions,
        idle_timeout: Duration,
    ) -> Result<StreamedResponse, OutgoingError> {
        let (host, port) = super::connect::host_and_port(&request.url)?;
        let expire = async {
            crate::runtime::sleep(options.request_timeout).await;
            Err(OutgoingError::Timeout {
                host: host.to_string(),
                timeout: options.request_timeout,
            })
        };
        let exchange = async {
            let connection = self.connect(request, options, &host, port).await?;
            let (head, reader) = send_and_read_head(connection, request, &host).await?;
            let body = BodyReader::new(reader, &head, request, options.max_response_bytes)
                .map_err(|error| read_error(&host.to_string(), error))?;
            Ok(StreamedResponse {
                status: head.status,
                headers: head.headers,
                body,
                idle_timeout,
                host: host.to_string(),
            })
        };
        futures_lite::future::or(exchange, expire).await
    }
}

/// Writes `request` on `connection` and reads the response head.
async fn send_and_read_head(
    mut connection: Connection,
    request: &OutgoingRequest,
    host: &url::Host<String>,
) -> Result<(Head, Buffered<Connection>), OutgoingError> {
    let host = host.to_string();
    let transfer = |error: std::io::Error| OutgoingError::Transfer {
        host: host.clone(),
        reason: error.to_string(),
    };
    connection
        .write_all(&wire::serialize(request))
        .await
        .map_err(transfer)?;
    connection.flush().await.map_err(transfer)?;
    let mut reader = Buffered::new(connection);
    let head = wire::read_final_head(&mut reader)
        .await
        .map_err(|error| read_error(&host, error))?;
    Ok((head, reader))
}

/// The client error of a failed read from `host`.
fn read_error(host: &str, error: ReadError) -> OutgoingError {
    match error {
        ReadError::Io(error) => OutgoingError::Transfer {
            host: host.to_owned(),
            reason: error.to_string(),
        },
        ReadError::Invalid(reason) => OutgoingError::InvalidResponse {
            host: host.to_owned(),
            reason,
        },
        ReadError::TooLarge(limit) => OutgoingError::ResponseTooLarge {
            host: host.to_owned(),
            limit,
        },
    }
}

impl StreamedResponse {
    /// The first value of header `name` (compared without case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(candidate, _)| candidate.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// How long a piece may take to come.
    pub fn idle_timeout(&self) -> Duration {
        self.idle_timeout
    }

    /// The next piece of the body (decoded), `None` at its end.
    pub async fn next_piece(&mut self) -> Result<Option<Vec<u8>>, OutgoingError> {
        let idle_timeout = self.idle_timeout;
        let host = self.host.clone();
        let expire = async {
            crate::runtime::sleep(idle_timeout).await;
            Err(OutgoingError::Timeout {
                host: host.clone(),
                timeout: idle_timeout,
            })
        };
        let read = async {
            self.body
                .next_piece()
                .await
                .map_err(|error| read_error(&host, error))
        };
        futures_lite::future::or(read, expire).await
    }

    /// The rest of the body, whole (an error answer's, say).
    pub async fn remaining_body(&mut self) -> Result<Vec<u8>, OutgoingError> {
        let mut body = Vec::new();
        while let Some(piece) = self.next_piece().await? {
            body.extend_from_slice(&piece);
        }
        Ok(body)
    }
}

/// Where the reading of a body stands.
enum BodyState {
    /// `remaining` bytes of a Content-Length body.
    Length {
        remaining: usize,
    },
    /// `remaining` bytes of the current chunk (0: a chunk-size line comes next).
    Chunked {
        remaining: usize,
    },
    /// Everything until the server closes.
    UntilClose,
    Finished,
}

/// Reads a body piece by piece from the connection.
struct BodyReader {
    reader: Buffered<Connection>,
    state: BodyState,
    /// Set for a gzip body.
    decoder: Option<flate2::write::MultiGzDecoder<Vec<u8>>>,
    /// Bytes of body read so far, and the most allowed.
    read_bytes: usize,
    max_bytes: usize,
}

impl BodyReader {
    fn new(
        reader: Buffered<Connection>,
        head: &Head,
        request: &OutgoingRequest,
        max_bytes: usize,
    ) -> Result<Self, ReadError> {
        let state = match wire::framing(head, &request.method)? {
            Framing::Empty => BodyState::Finished,
            Framing::Length(length) if length > max_bytes => {
                return Err(ReadError::TooLarge(max_bytes));
            }
            Framing::Length(remaining) => BodyState::Length { remaining },
            Framing::Chunked => BodyState::Chunked { remaining: 0 },
            Framing::UntilClose => BodyState::UntilClose,
        };
        let is_gzip = head.headers.iter().any(|(name, value)| {
            name.eq_ignore_ascii_case("content-encoding")
                && value.trim().eq_ignore_ascii_case(super::encoding::GZIP)
        });
        Ok(BodyReader {
            reader,
            state,
            decoder: is_gzip.then(|| flate2::write::MultiGzDecoder::new(Vec::new())),
            read_bytes: 0,
            max_bytes,
        })
    }

    /// The next decoded piece; pieces that decode to nothing are skipped.
    async fn next_piece(&mut self) -> Result<Option<Vec<u8>>, ReadError> {
        loop {
            let Some(raw) = self.next_raw().await? else {
                return self.finish_decoding();
            };
            self.read_bytes = self.read_bytes.saturating_add(raw.len());
            if self.read_bytes > self.max_bytes {
                return Err(ReadError::TooLarge(self.max_bytes));
            }
            let Some(decoder) = self.decoder.as_mut() else {
                return Ok(Some(raw));
            };
            std::io::Write::write_all(decoder, &raw)
                .map_err(|error| ReadError::Invalid(format!("bad gzip body: {error}")))?;
            let decoded = std::mem::take(decoder.get_mut());
            if !decoded.is_empty() {
                return Ok(Some(decoded));
            }
        }
    }

    /// What the gzip decoder still holds at the end of the body.
    fn finish_decoding(&mut self) -> Result<Option<Vec<u8>>, ReadError> {
        let Some(mut decoder) = self.decoder.take() else {
            return Ok(None);
        };
        decoder
            .try_finish()
            .map_err(|error| ReadError::Invalid(format!("bad gzip body: {error}")))?;
        let rest = std::mem::take(decoder.get_mut());
        Ok((!rest.is_empty()).then_some(rest))
    }

    /// The next raw piece of the body as framed on the wire.
    async fn next_raw(&mut self) -> Result<Option<Vec<u8>>, ReadError> {
        loop {
            match self.state {
                BodyState::Finished => return Ok(None),
                BodyState::Length { remaining: 0 } => self.state = BodyState::Finished,
                BodyState::Length { remaining } => {
                    let piece = self.take_buffered(remaining).await?;
                    self.state = BodyState::Length {
                        remaining: remaining - piece.len(),
                    };
                    return Ok(Some(piece));
                }
                BodyState::Chunked { remaining: 0 } => self.start_chunk().await?,
                BodyState::Chunked { remaining } => {
                    let piece = self.take_buffered(remaining).await?;
                    let remaining = remaining - piece.len();
                    if remaining == 0 && !self.reader.line().await?.is_empty() {
                        return Err(ReadError::Invalid(
                            "a chunk is longer than its size".to_owned(),
                        ));
                    }
                    self.state = BodyState::Chunked { remaining };
                    return Ok(Some(piece));
                }
                BodyState::UntilClose => {
                    if self.reader.buffer.is_empty() && !self.reader.fill().await? {
                        self.state = BodyState::Finished;
                        return Ok(None);
                    }
                    return Ok(Some(std::mem::take(&mut self.reader.buffer)));
                }
            }
        }
    }

    /// Reads a chunk-size line: the next chunk's size, or the end (and the trailer).
    async fn start_chunk(&mut self) -> Result<(), ReadError> {
        let line = self.reader.line().await?;
        let size = wire::chunk_size(&line)?;
        if size == 0 {
            while !self.reader.line().await?.is_empty() {}
            self.state = BodyState::Finished;
        } else {
            self.state = BodyState::Chunked { remaining: size };
        }
        Ok(())
    }

    /// At most `wanted` bytes, from the buffer or one read.
    async fn take_buffered(&mut self, wanted: usize) -> Result<Vec<u8>, ReadError> {
        if self.reader.buffer.is_empty() && !self.reader.fill().await? {
            return Err(ReadError::Invalid("the body ended early".to_owned()));
        }
        let count = wanted.min(self.reader.buffer.len());
        Ok(self.reader.buffer.drain(..count).collect())
    }
}
