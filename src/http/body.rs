//! Reading request bodies: `Content-Length` and chunked (with trailers), within the payload
//! limit and the body read timeout, into a [`BodyConsumer`]: a buffer (the whole body in
//! memory) or a stream (each piece handed on as it arrives, see [`super::stream_body`]).
//!
//! Invariants: never more than `payload_bytes_max` raw body bytes are taken; a chunked body is
//! consumed exactly up to the end of its trailers, so the next request starts right after;
//! when a read stalls past `body_read_timeout` or the peer leaves, the body is `Incomplete`;
//! a consumer's error stops the reading (the connection then closes after the answer).

use std::future::Future;
use std::io;

use futures_lite::io::{AsyncRead, AsyncWrite};

use super::Timer;
use super::io::{ReadOutcome, Wire};
use super::limits::{BODY_PREALLOCATION_BYTES_MAX, BODY_READ_CHUNK_BYTES, HttpLimits};
use super::request::BodyError;

/// Most trailer fields after a chunked body; more is malformed framing.
pub(crate) const TRAILER_COUNT_MAX: usize = 32;

/// Where the raw bytes of a body go, piece by piece, in order.
pub(crate) trait BodyConsumer {
    /// Takes the next raw bytes; an error stops the body there.
    fn take(&mut self, raw: &[u8]) -> impl Future<Output = Result<(), BodyError>>;
}

impl BodyConsumer for Vec<u8> {
    async fn take(&mut self, raw: &[u8]) -> Result<(), BodyError> {
        self.extend_from_slice(raw);
        Ok(())
    }
}

/// How reading a body ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum BodyOutcome {
    /// The whole body went to the consumer; the connection is in sync for the next request.
    Complete,
    /// The body could not be read whole; the connection must close after the answer.
    Failed(BodyError),
    /// The chunked framing is broken: answer 400 and close.
    MalformedFraming,
}

/// The buffer a body of `length` announced bytes is read into (never preallocated past
/// [`BODY_PREALLOCATION_BYTES_MAX`]).
pub(crate) fn body_buffer(length: u64) -> Vec<u8> {
    let length = usize::try_from(length).unwrap_or(usize::MAX);
    Vec::with_capacity(length.min(BODY_PREALLOCATION_BYTES_MAX))
}

/// Reads a body of exactly `length` bytes (`length` is within the limit) into `consumer`.
pub(crate) async fn read_length<S: AsyncRead + AsyncWrite, T: Timer>(
    wire: &mut Wire<'_, S, T>,
    length: u64,
    limits: &HttpLimits,
    consumer: &mut impl BodyConsumer,
) -> io::Result<BodyOutcome> {
    match take_exact(wire, consumer, length, limits).await? {
        None => Ok(BodyOutcome::Complete),
        Some(error) => Ok(BodyOutcome::Failed(error)),
    }
}

/// Hands exactly `count` bytes to `consumer`: first the buffered ones, then from the stream
/// in pieces of at most [`BODY_READ_CHUNK_BYTES`]. Returns the error that stopped it, if any.
async fn take_exact<S: AsyncRead + AsyncWrite, T: Timer>(
    wire: &mut Wire<'_, S, T>,
    consumer: &mut impl BodyConsumer,
    count: u64,
    limits: &HttpLimits,
) -> io::Result<Option<BodyError>> {
    let from_buffer = usize::try_from(count)
        .unwrap_or(usize::MAX)
        .min(wire.buffered().len());
    if from_buffer > 0 {
        let taken = consumer.take(&wire.buffered()[..from_buffer]).await;
        wire.consume(from_buffer);
        if let Err(error) = taken {
            return Ok(Some(error));
        }
    }
    let mut remaining = count - from_buffer as u64;
    let mut piece = Vec::new();
    while remaining > 0 {
        let step = usize::try_from(remaining)
            .unwrap_or(usize::MAX)
            .min(BODY_READ_CHUNK_BYTES);
        piece.resize(step, 0);
        let outcome = wire
            .read_direct(&mut piece[..], limits.body_read_timeout)
            .await;
        match outcome? {
            ReadOutcome::Data(read) => {
                remaining -= read as u64;
                if let Err(error) = consumer.take(&piece[..read]).await {
                    return Ok(Some(error));
                }
            }
            ReadOutcome::Closed | ReadOutcome::TimedOut | ReadOutcome::ShutDown => {
                return Ok(Some(BodyError::Incomplete));
            }
        }
    }
    Ok(None)
}

/// Reads a chunked body and its trailers (trailers are discarded) into `consumer`.
pub(crate) async fn read_chunked<S: AsyncRead + AsyncWrite, T: Timer>(
    wire: &mut Wire<'_, S, T>,
    limits: &HttpLimits,
    consumer: &mut impl BodyConsumer,
) -> io::Result<BodyOutcome> {
    let mut taken: u64 = 0;
    loop {
        let size = match read_chunk_size(wire, limits).await? {
            Ok(size) => size,
            Err(outcome) => return Ok(outcome),
        };
        if size == 0 {
            return Ok(match skip_trailers(wire, limits).await? {
                None => BodyOutcome::Complete,
                Some(outcome) => outcome,
            });
        }
        taken = taken.saturating_add(size);
        if taken > limits.payload_bytes_max {
            return Ok(BodyOutcome::Failed(BodyError::TooLarge {
                content_length: None,
                limit: limits.payload_bytes_max,
            }));
        }
        if let Some(error) = take_exact(wire, consumer, size, limits).await? {
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
    match wire.fill(buffered_max, limits.body_read_timeout).await? {
        ReadOutcome::Data(0) => Ok(Some(BodyOutcome::MalformedFraming)),
        ReadOutcome::Data(_) => Ok(None),
        ReadOutcome::Closed | ReadOutcome::TimedOut | ReadOutcome::ShutDown => {
            Ok(Some(BodyOutcome::Failed(BodyError::Incomplete)))
        }
    }
}
