//! The channel of the `/logs/stream` route: formatted log lines (or profile entries) go from
//! whichever thread logged them to the core that serves the stream.
//!
//! Invariants: the channel never holds more than [`STREAM_PENDING_BYTES_MAX`] bytes not yet
//! taken by the stream; a line that would pass that bound is dropped (and counted), never
//! waited for, since a thread that logs must not block on a slow reader; a line is sent
//! whole, in one piece. Dropping the [`LogStream`] gives the route back (see
//! [`super::control::LogControl`]) and makes every later send fail silently.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};

use futures_channel::mpsc::{UnboundedReceiver, UnboundedSender, unbounded};
use futures_lite::stream::Stream;
use tracing_subscriber::fmt::MakeWriter;

/// Bytes of log lines waiting for the stream's reader at most; past it, lines are dropped.
pub const STREAM_PENDING_BYTES_MAX: usize = 8 * 1024 * 1024;

/// The sending side, shared by every thread that logs.
#[derive(Debug)]
pub struct StreamSender {
    sender: UnboundedSender<Vec<u8>>,
    pending_bytes: Arc<AtomicUsize>,
    dropped_lines: AtomicU64,
}

impl StreamSender {
    /// Sends `bytes` unless the reader is too far behind (then the line is dropped).
    pub fn send(&self, bytes: Vec<u8>) {
        let length = bytes.len();
        let before = self.pending_bytes.fetch_add(length, Ordering::AcqRel);
        if before.saturating_add(length) > STREAM_PENDING_BYTES_MAX {
            self.pending_bytes.fetch_sub(length, Ordering::AcqRel);
            self.dropped_lines.fetch_add(1, Ordering::Relaxed);
            return;
        }
        if self.sender.unbounded_send(bytes).is_err() {
            // The stream is gone; the route frees this layer soon.
            self.pending_bytes.fetch_sub(length, Ordering::AcqRel);
        }
    }

    /// Lines dropped because the reader was too far behind.
    pub fn dropped_lines(&self) -> u64 {
        self.dropped_lines.load(Ordering::Relaxed)
    }
}

/// A new channel: its sending side and the receiving half the stream wraps.
pub fn channel() -> (Arc<StreamSender>, StreamReceiver) {
    let (sender, receiver) = unbounded();
    let pending_bytes = Arc::new(AtomicUsize::new(0));
    let sending = Arc::new(StreamSender {
        sender,
        pending_bytes: pending_bytes.clone(),
        dropped_lines: AtomicU64::new(0),
    });
    (
        sending,
        StreamReceiver {
            receiver,
            pending_bytes,
        },
    )
}

/// The receiving half of [`channel`].
#[derive(Debug)]
pub struct StreamReceiver {
    receiver: UnboundedReceiver<Vec<u8>>,
    pending_bytes: Arc<AtomicUsize>,
}

impl Stream for StreamReceiver {
    type Item = Vec<u8>;

    fn poll_next(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Option<Vec<u8>>> {
        let polled = Pin::new(&mut self.receiver).poll_next(context);
        if let Poll::Ready(Some(bytes)) = &polled {
            self.pending_bytes.fetch_sub(bytes.len(), Ordering::AcqRel);
        }
        polled
    }
}

/// The `std::io::Write` a `tracing_subscriber` formatting layer writes one event into.
#[derive(Debug)]
pub struct LineWriter(Arc<StreamSender>);

impl io::Write for LineWriter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.send(bytes.to_vec());
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Makes a [`LineWriter`] per event.
#[derive(Debug, Clone)]
pub struct StreamWriters(pub Arc<StreamSender>);

impl<'writer> MakeWriter<'writer> for StreamWriters {
    type Writer = LineWriter;

    fn make_writer(&'writer self) -> LineWriter {
        LineWriter(self.0.clone())
    }
}

/// The body of a `/logs/stream` response: the lines as they come. Dropping it gives the
/// route back.
pub struct LogStream {
    receiver: StreamReceiver,
    /// Frees the route when the stream goes away.
    _release: Box<dyn Send>,
}

impl LogStream {
    pub(super) fn new(receiver: StreamReceiver, release: Box<dyn Send>) -> LogStream {
        LogStream {
            receiver,
            _release: release,
        }
    }
}

impl std::fmt::Debug for LogStream {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("LogStream")
    }
}

impl Stream for LogStream {
    type Item = Vec<u8>;

    fn poll_next(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Option<Vec<u8>>> {
        Pin::new(&mut self.receiver).poll_next(context)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use futures_lite::StreamExt;
    use futures_lite::future::block_on;

    use super::*;

    #[test]
    fn lines_past_the_pending_bound_are_dropped_and_the_bound_frees_as_the_reader_takes() {
        let (sender, mut receiver) = channel();
        let line = vec![b'x'; STREAM_PENDING_BYTES_MAX / 2];
        sender.send(line.clone());
        sender.send(line.clone());
        sender.send(b"one too many".to_vec());
        assert_eq!(sender.dropped_lines(), 1);
        assert_eq!(block_on(receiver.next()).unwrap().len(), line.len());
        sender.send(b"fits again".to_vec());
        assert_eq!(sender.dropped_lines(), 1);
        assert_eq!(block_on(receiver.next()).unwrap().len(), line.len());
        assert_eq!(block_on(receiver.next()).unwrap(), b"fits again");
    }

    #[test]
    fn the_stream_ends_when_every_sender_is_gone() {
        let (sender, receiver) = channel();
        let mut stream = LogStream::new(receiver, Box::new(()));
        let mut writer = StreamWriters(sender.clone()).make_writer();
        io::Write::write_all(&mut writer, b"a line\n").unwrap();
        drop((sender, writer));
        assert_eq!(block_on(stream.next()).unwrap(), b"a line\n");
        assert_eq!(block_on(stream.next()), None);
    }
}
