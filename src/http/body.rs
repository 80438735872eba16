//! Reading request bodies: `Content-Length` and chunked (with trailers), within the payload
//! limit and the body read timeout.
//!
//! Invariants: never more than `payload_bytes_max` body bytes are kept; a chunked body is
//! consumed exactly up to the end of its trailers, so the next request starts right after;
//! when a read stalls past `body_read_timeout` or the peer leaves, the body is `Incomplete`.

use std::io;

use futures_lite::io::{AsyncRead, AsyncWrite};

use super::Timer;
use super::io::{ReadOutcome, Wire};
use super::limits::{BODY_PREALLOCATION_BYTES_MAX, BODY_READ_CHUNK_BYTES, HttpLimits};
use super::request::BodyError;

/// Most trailer fields after a chunked body; more is malformed framing.
pub(crate) const TRAILER_COUNT_MAX: usize = 32;

/// How reading a body ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum BodyOutcome {
    /// The whole body; the connection is in sync for the next request.
    Complete(Vec<u8>),
    /// The body could not be read whole; the connection must close after the answer.
    Failed(BodyError),
    /// The chunked framing is broken: answer 400 and close.
    MalformedFraming,
}

/// Reads a body of exactly `length` bytes (`length` is within the limit).
pub(crate) async fn read_length<S: AsyncRead + AsyncWrite, T: Timer>(
    wire: &mut Wire<'_, S, T>,
    length: u64,
    limits: &HttpLimits,
) -> io::Result<BodyOutcome> {
    let length =
        usize::try_from(length).map_err(|_| io::Error::other("body length exceeds memory"))?;
    let mut body = Vec::with_capacity(length.min(BODY_PREALLOCATION_BYTES_MAX));
    match append_exact(wire, &mut body, length, limits).await? {
        None => Ok(BodyOutcome::Complete(body)),
        Some(error) => Ok(BodyOutcome::Failed(error)),
    }
}

/// Appends exactly `count` bytes to `body`: first the buffered ones, then straight from the
/// stream. Returns the error that stopped it, if any.
async fn append_exact<S: AsyncRead + AsyncWrite, T: Timer>(
    wire: &mut Wire<'_, S, T>,
    body: &mut Vec<u8>,
    count: usize,
    limits: &HttpLimits,
) -> io::Result<Option<BodyError>> {
    let from_buffer = count.min(wire.buffered().len());
    body.extend_from_slice(&wire.buffered()[..from_buffer]);
    wire.consume(from_buffer);
    let target_length = body.len() + (count - from_buffer);
    while body.len() < target_length {
        let start = body.len();
        let step = (target_length - start).min(BODY_READ_CHUNK_BYTES);
        body.resize(start + step, 0);
        let outcome = wire
            .read_direct(&mut body[start..], limits.body_read_timeout)
            .await;
        match outcome {
            Ok(ReadOutcome::Data(read)) => body.truncate(start + read),
            Ok(ReadOutcome::Closed | ReadOutcome::TimedOut | ReadOutcome::ShutDown) => {
                body.truncate(start);
                return Ok(Some(BodyError::Incomplete));
            }
            Err(error) => {
                body.truncate(start);
                return Err(error);
            }
        }
    }
    Ok(None)
}

/// Reads a chunked body and its trailers (trailers are discarded).
pub(crate) async fn read_chunked<S: AsyncRead + AsyncWrite, T: Timer>(
    wire: &mut Wire<'_, S, T>,
    limits: &HttpLimits,
) -> io::Result<BodyOutcome> {
    let mut body = Vec::new();
    loop {
        let size = match read_chunk_size(wire, limits).await? {
            Ok(size) => size,
            Err(outcome) => return Ok(outcome),
        };
        if size == 0 {
            return Ok(match skip_trailers(wire, limits).await? {
                None => BodyOutcome::Complete(body),
                Some(outcome) => outcome,
            });
        }
        let total = (body.len() as u64).saturating_add(size);
        if total > limits.payload_bytes_max {
            return Ok(BodyOutcome::Failed(BodyError::TooLarge {
                content_length: None,
                limit: limits.payload_bytes_max,
            }));
        }
        let size = usize::try_from(size).map_err(|_| io::Error::other("chunk exceeds memory"))?;
        if let Some(error) = append_exact(wire, &mut body, size, limits).await? {
            return Ok(BodyOutcome::Failed(error));
        }
        if let Some(outcome) = expect_line_end(wire, limits).await? {
            return Ok(outcome);
        }
    }
}

/// Reads one chunk-size line; `Err` carries how the body ended instead.
async fn read_chunk_size<S: AsyncRead + AsyncWrite, T: Timer>(
    wire: &mut Wire<'_, S, T>,
    limits: &HttpLimits,
) -> io::Result<Result<u64, BodyOutcome>> {
    loop {
        match httparse::parse_chunk_size(wire.buffered()) {
            Ok(httparse::Status::Complete((consumed, size))) => {
                wire.consume(consumed);
                return Ok(Ok(size));
            }
            Ok(httparse::Status::Partial) => {
                if wire.buffered().len() >= limits.chunk_line_bytes_max {
                    return Ok(Err(BodyOutcome::MalformedFraming));
                }
                if let Some(outcome) =
                    fill_for_body(wire, limits.chunk_line_bytes_max, limits).await?
                {
                    return Ok(Err(outcome));
                }
            }
            Err(httparse::InvalidChunkSize) => return Ok(Err(BodyOutcome::MalformedFraming)),
        }
    }
}

/// Consumes the CRLF that ends a chunk's data.
async fn expect_line_end<S: AsyncRead + AsyncWrite, T: Timer>(
    wire: &mut Wire<'_, S, T>,
    limits: &HttpLimits,
) -> io::Result<Option<BodyOutcome>> {
    while wire.buffered().len() < 2 {
        if wire.buffered() == b"\n" {
            break;
        }
        if let Some(outcome) = fill_for_body(wire, limits.chunk_line_bytes_max, limits).await? {
            return Ok(Some(outcome));
        }
    }
    let buffered = wire.buffered();
    if buffered.starts_with(b"\r\n") {
        wire.consume(2);
    } else if buffered.starts_with(b"\n") {
        wire.consume(1);
    } else {
        return Ok(Some(BodyOutcome::MalformedFraming));
    }
    Ok(None)
}

/// Consumes the trailer section (possibly empty) and its final blank line.
async fn skip_trailers<S: AsyncRead + AsyncWrite, T: Timer>(
    wire: &mut Wire<'_, S, T>,
    limits: &HttpLimits,
) -> io::Result<Option<BodyOutcome>> {
    loop {
        let mut slots = [httparse::EMPTY_HEADER; TRAILER_COUNT_MAX];
        let parsed = httparse::parse_headers(wire.buffered(), &mut slots);
        match parsed {
            Ok(httparse::Status::Complete((consumed, _))) => {
                wire.consume(consumed);
                return Ok(None);
            }
            Ok(httparse::Status::Partial) => {
                if wire.buffered().len() >= limits.header_bytes_max {
                    return Ok(Some(BodyOutcome::MalformedFraming));
                }
                if let Some(outcome) = fill_for_body(wire, limits.header_bytes_max, limits).await? {
                    return Ok(Some(outcome));
                }
            }
            Err(_) => return Ok(Some(BodyOutcome::MalformedFraming)),
        }
    }
}

/// Reads more bytes into the buffer while reading a body; `Some` when the body ended.
async fn fill_for_body<S: AsyncRead + AsyncWrite, T: Timer>(
    wire: &mut Wire<'_, S, T>,
    buffered_max: usize,
    limits: &HttpLimits,
) -> io::Result<Option<BodyOutcome>> {
    match wire
        .fill(buffered_max, limits.body_read_timeout, None)
        .await?
    {
        ReadOutcome::Data(0) => Ok(Some(BodyOutcome::MalformedFraming)),
        ReadOutcome::Data(_) => Ok(None),
        ReadOutcome::Closed | ReadOutcome::TimedOut | ReadOutcome::ShutDown => {
            Ok(Some(BodyOutcome::Failed(BodyError::Incomplete)))
        }
    }
}
