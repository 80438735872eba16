//! Response bodies sent as they are produced: a handler returns a [`BodyStream`] in
//! [`super::Response::stream`] and the connection writes each piece as it comes, in chunked
//! transfer coding (raw bytes until the close for HTTP/1.0), for as long as the stream runs.
//!
//! How the connection serves one ([`send_streamed`]): the head leaves at once; then it waits
//! for the next piece, the peer closing its side, or the shutdown signal, whichever comes
//! first. Pieces already produced are gathered into one chunk of at most
//! [`STREAMED_CHUNK_BYTES_MAX`]. Bytes of a pipelined next request are kept (up to the head
//! limit) and served once the stream ends.
//!
//! Invariants: a stream is dropped (which tells its producer to stop) as soon as the peer is
//! gone, the peer stops reading for longer than the write timeout, or the server shuts
//! down; a stream that ends is closed with the last chunk and the connection may be reused;
//! an HTTP/1.0 stream ends by closing the connection. Streamed bodies are never compressed.

use std::fmt;
use std::pin::Pin;

use futures_lite::io::{AsyncRead, AsyncWrite};
use futures_lite::stream::{Stream, StreamExt};

use super::Timer;
use super::io::{ReadOutcome, Wire, WriteFailure};
use super::limits::HttpLimits;
use super::shutdown::ShutdownWait;

/// Most bytes of produced pieces gathered into one chunk on the wire.
pub const STREAMED_CHUNK_BYTES_MAX: usize = 64 * 1024;

/// A body produced piece by piece; the response ends when the stream does.
pub struct BodyStream(Pin<Box<dyn Stream<Item = Vec<u8>>>>);

impl BodyStream {
    pub fn new(stream: impl Stream<Item = Vec<u8>> + 'static) -> BodyStream {
        BodyStream(Box::pin(stream))
    }
}

impl fmt::Debug for BodyStream {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("BodyStream")
    }
}

/// How a streamed response ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StreamEnd {
    /// The stream ended and its last chunk was written: the connection may go on.
    Finished,
    /// The peer closed its side: nothing more can be written.
    PeerClosed,
    /// The shutdown signal fired: the last chunk was written, the connection closes.
    ShutDown,
}

/// What woke a streamed response.
enum Wake {
    Piece(Vec<u8>),
    Ended,
    Input(ReadOutcome),
    /// Reading failed (a reset, say): the peer is gone.
    ReadFailed,
}

/// Writes the pieces of `body` as they come, framed in chunks (or raw when `chunked` is
/// false), until the stream ends, the peer leaves or the server shuts down. The head must
/// already be in the wire's output; it leaves with the first write.
pub(crate) async fn send_streamed<S: AsyncRead + AsyncWrite, T: Timer>(
    wire: &mut Wire<'_, S, T>,
    shutdown: &mut ShutdownWait<'_>,
    limits: &HttpLimits,
    mut body: BodyStream,
    chunked: bool,
) -> Result<StreamEnd, WriteFailure> {
    wire.flush(limits.write_timeout).await?;
    loop {
        let room = wire.buffered().len() < limits.header_bytes_max;
        let wake = next_wake(wire, shutdown, &mut body, limits.header_bytes_max, room).await;
        match wake {
            Wake::Piece(piece) => {
                let gathered = gather(&mut body, piece).await;
                frame(&mut wire.output, &gathered, chunked);
                wire.flush(limits.write_timeout).await?;
            }
            Wake::Ended => {
                finish(&mut wire.output, chunked);
                wire.flush(limits.write_timeout).await?;
                return Ok(StreamEnd::Finished);
            }
            Wake::Input(ReadOutcome::Data(_) | ReadOutcome::TimedOut) => {}
            Wake::Input(ReadOutcome::Closed) | Wake::ReadFailed => {
                return Ok(StreamEnd::PeerClosed);
            }
            Wake::Input(ReadOutcome::ShutDown) => {
                finish(&mut wire.output, chunked);
                wire.flush(limits.write_timeout).await?;
                return Ok(StreamEnd::ShutDown);
            }
        }
    }
}

/// Waits for the next piece of `body`, input from the peer (while the read buffer has
/// `room`) or the shutdown signal.
async fn next_wake<S: AsyncRead + AsyncWrite, T: Timer>(
    wire: &mut Wire<'_, S, T>,
    shutdown: &mut ShutdownWait<'_>,
    body: &mut BodyStream,
    buffered_max: usize,
    room: bool,
) -> Wake {
    let piece = async {
        match body.0.next().await {
            Some(piece) => Wake::Piece(piece),
            None => Wake::Ended,
        }
    };
    let input = async {
        if room {
            match wire.fill_or_shutdown(buffered_max, shutdown).await {
                Ok(outcome) => Wake::Input(outcome),
                Err(_) => Wake::ReadFailed,
            }
        } else {
            (&mut *shutdown).await;
            Wake::Input(ReadOutcome::ShutDown)
        }
    };
    futures_lite::future::or(piece, input).await
}

/// `first` and every piece already produced after it, up to [`STREAMED_CHUNK_BYTES_MAX`].
async fn gather(body: &mut BodyStream, first: Vec<u8>) -> Vec<u8> {
    let mut gathered = first;
    while gathered.len() < STREAMED_CHUNK_BYTES_MAX {
        match futures_lite::future::poll_once(body.0.next()).await {
            Some(Some(piece)) => gathered.extend_from_slice(&piece),
            // Nothing more yet, or the end (seen again at the next wait).
            Some(None) | None => break,
        }
    }
    gathered
}

/// Appends `piece` as one chunk (or raw).
fn frame(output: &mut Vec<u8>, piece: &[u8], chunked: bool) {
    if piece.is_empty() {
        // An empty chunk would end the body.
        return;
    }
    if chunked {
        output.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        output.extend_from_slice(piece);
        output.extend_from_slice(b"\r\n");
    } else {
        output.extend_from_slice(piece);
    }
}

/// Appends the end of a chunked body (nothing for a raw one, which ends with the close).
fn finish(output: &mut Vec<u8>, chunked: bool) {
    if chunked {
        output.extend_from_slice(b"0\r\n\r\n");
    }
}
