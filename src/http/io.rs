//! The byte plumbing of one connection: a reusable read buffer over the stream, bounded
//! reads with timeouts, and batched writes.
//!
//! Invariants: unconsumed input is `buffer[start..end]`; the buffer grows only when a
//! caller asks for room up to an explicit maximum; every read and write that has to wait is
//! raced against a timeout (the timer is created only when the operation would block).

use std::io;
use std::pin::Pin;
use std::time::Duration;

use futures_lite::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::Timer;
use super::deadline::LazyDeadline;
use super::limits::READ_BUFFER_BYTES;
use super::shutdown::ShutdownWait;
use super::timeout::{Raced, race, race_deadline, with_timeout};

/// What a read brought.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReadOutcome {
    /// This many new bytes.
    Data(usize),
    /// The peer closed its side.
    Closed,
    /// Nothing arrived within the timeout.
    TimedOut,
    /// The shutdown signal fired while waiting.
    ShutDown,
}

/// Why writing failed.
#[derive(Debug)]
pub(crate) enum WriteFailure {
    Io(io::Error),
    TimedOut,
}

/// The stream and the buffers of one connection.
pub(crate) struct Wire<'a, S, T> {
    stream: Pin<&'a mut S>,
    timer: &'a T,
    buffer: Vec<u8>,
    start: usize,
    end: usize,
    /// Response bytes not yet written.
    pub(crate) output: Vec<u8>,
    pub(crate) bytes_read: u64,
    pub(crate) bytes_written: u64,
}

impl<'a, S: AsyncRead + AsyncWrite, T: Timer> Wire<'a, S, T> {
    pub(crate) fn new(stream: Pin<&'a mut S>, timer: &'a T) -> Self {
        Wire {
            stream,
            timer,
            buffer: vec![0; READ_BUFFER_BYTES],
            start: 0,
            end: 0,
            output: Vec::with_capacity(READ_BUFFER_BYTES),
            bytes_read: 0,
            bytes_written: 0,
        }
    }

    /// The clock of this connection.
    pub(crate) fn timer(&self) -> &'a T {
        self.timer
    }

    /// The bytes read and not yet consumed.
    pub(crate) fn buffered(&self) -> &[u8] {
        &self.buffer[self.start..self.end]
    }

    /// Marks the first `count` buffered bytes as consumed.
    pub(crate) fn consume(&mut self, count: usize) {
        debug_assert!(
            count <= self.end - self.start,
            "consume within buffered bytes"
        );
        self.start += count.min(self.end - self.start);
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }

    /// Reads more bytes behind the buffered ones, keeping at most `buffered_max` buffered.
    pub(crate) async fn fill(
        &mut self,
        buffered_max: usize,
        timeout: Duration,
    ) -> io::Result<ReadOutcome> {
        self.make_room(buffered_max);
        if self.end == self.buffer.len() {
            return Ok(ReadOutcome::Data(0));
        }
        let Wire {
            stream,
            timer,
            buffer,
            end,
            ..
        } = self;
        let target = &mut buffer[*end..];
        let raced = race(*timer, timeout, stream.read(target)).await;
        self.account_read(raced)
    }

    /// [`Wire::fill`] for the wait between requests: bounded by the connection's
    /// `deadline` (set by the caller) and ended by its `shutdown` wait.
    pub(crate) async fn fill_until(
        &mut self,
        buffered_max: usize,
        deadline: &mut LazyDeadline<'_, T>,
        shutdown: &mut ShutdownWait<'_>,
    ) -> io::Result<ReadOutcome> {
        self.make_room(buffered_max);
        if self.end == self.buffer.len() {
            return Ok(ReadOutcome::Data(0));
        }
        let target = &mut self.buffer[self.end..];
        let raced = race_deadline(deadline, shutdown, self.stream.read(target)).await;
        self.account_read(raced)
    }

    /// [`Wire::fill`] without a time limit, ended only by the connection's `shutdown` wait
    /// (while a streamed response waits for its next piece, the peer may stay silent).
    pub(crate) async fn fill_or_shutdown(
        &mut self,
        buffered_max: usize,
        shutdown: &mut ShutdownWait<'_>,
    ) -> io::Result<ReadOutcome> {
        self.make_room(buffered_max);
        if self.end == self.buffer.len() {
            return Ok(ReadOutcome::Data(0));
        }
        let target = &mut self.buffer[self.end..];
        let read = self.stream.read(target);
        let raced = futures_lite::future::or(async { Raced::Done(read.await) }, async {
            (&mut *shutdown).await;
            Raced::ShutDown
        })
        .await;
        self.account_read(raced)
    }

    /// Counts the bytes a raced read brought.
    fn account_read(&mut self, raced: Raced<io::Result<usize>>) -> io::Result<ReadOutcome> {
        match raced {
            Raced::Done(Ok(0)) => Ok(ReadOutcome::Closed),
            Raced::Done(Ok(count)) => {
                self.end += count;
                self.bytes_read += count as u64;
                Ok(ReadOutcome::Data(count))
            }
            Raced::Done(Err(error)) => Err(error),
            Raced::TimedOut => Ok(ReadOutcome::TimedOut),
            Raced::ShutDown => Ok(ReadOutcome::ShutDown),
        }
    }

    /// Compacts, then grows the buffer (doubling, up to `buffered_max`) if it is full.
    fn make_room(&mut self, buffered_max: usize) {
        if self.start > 0 && self.end == self.buffer.len() {
            self.buffer.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        let capacity_max = buffered_max.max(READ_BUFFER_BYTES);
        if self.end == self.buffer.len() && self.buffer.len() < capacity_max {
            let grown = (self.buffer.len() * 2).min(capacity_max);
            self.buffer.resize(grown, 0);
        }
    }

    /// Reads straight into `target` (for bodies), bypassing the buffer.
    pub(crate) async fn read_direct(
        &mut self,
        target: &mut [u8],
        timeout: Duration,
    ) -> io::Result<ReadOutcome> {
        match with_timeout(self.timer, timeout, self.stream.read(target)).await {
            Some(Ok(0)) => Ok(ReadOutcome::Closed),
            Some(Ok(count)) => {
                self.bytes_read += count as u64;
                Ok(ReadOutcome::Data(count))
            }
            Some(Err(error)) => Err(error),
            None => Ok(ReadOutcome::TimedOut),
        }
    }

    /// Writes every pending output byte, then flushes the stream.
    pub(crate) async fn flush(&mut self, timeout: Duration) -> Result<(), WriteFailure> {
        let output = std::mem::take(&mut self.output);
        let result = self.write_all(&output, timeout).await;
        self.output = output;
        self.output.clear();
        result?;
        match with_timeout(self.timer, timeout, self.stream.flush()).await {
            Some(Ok(())) => Ok(()),
            Some(Err(error)) => Err(WriteFailure::Io(error)),
            None => Err(WriteFailure::TimedOut),
        }
    }

    /// Writes `bytes` completely; each write that waits longer than `timeout` fails.
    pub(crate) async fn write_all(
        &mut self,
        bytes: &[u8],
        timeout: Duration,
    ) -> Result<(), WriteFailure> {
        let mut written = 0;
        while written < bytes.len() {
            match with_timeout(self.timer, timeout, self.stream.write(&bytes[written..])).await {
                Some(Ok(0)) => {
                    return Err(WriteFailure::Io(io::ErrorKind::WriteZero.into()));
                }
                Some(Ok(count)) => {
                    written += count;
                    self.bytes_written += count as u64;
                }
                Some(Err(error)) if error.kind() == io::ErrorKind::Interrupted => {}
                Some(Err(error)) => return Err(WriteFailure::Io(error)),
                None => return Err(WriteFailure::TimedOut),
            }
        }
        Ok(())
    }

    /// Discards incoming bytes until the peer closes, `bytes_max` bytes were discarded, or
    /// `timeout` passed (best effort).
    pub(crate) async fn discard_input(&mut self, bytes_max: u64, timeout: Duration) {
        let mut discarded = 0u64;
        let timer = self.timer;
        let discard = async {
            while discarded < bytes_max {
                self.start = 0;
                self.end = 0;
                match self.fill(READ_BUFFER_BYTES, timeout).await {
                    Ok(ReadOutcome::Data(count)) if count > 0 => discarded += count as u64,
                    _ => break,
                }
            }
            self.start = 0;
            self.end = 0;
        };
        let _ignored = with_timeout(timer, timeout, discard).await;
    }

    /// Closes the writing side (best effort: the peer may already be gone).
    pub(crate) async fn close(&mut self, timeout: Duration) {
        let _ignored = with_timeout(self.timer, timeout, self.stream.close()).await;
    }
}
