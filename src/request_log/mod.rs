//! The request log: the one line per answered request that `--log-level INFO` asks for
//! (method, path, status, duration, core), formatted into a buffer owned by the core and
//! written to stderr in batches.
//!
//! Why not a `tracing` event per request: formatting an event through `tracing_subscriber`
//! and writing it to the locked stderr cost about 2 µs of a core per request, as much as
//! the rest of the HTTP layer's own work for a small request
//! (`tuning/results/http-2026-11-22.md`). The lines keep the exact shape the `tracing`
//! subscriber gives the other events ([`line`]).
//!
//! When a line reaches stderr (the bound): at the latest when [`REQUEST_LOG_BUFFER_BYTES`]
//! are pending, or [`REQUEST_LOG_FLUSH_INTERVAL`] after the oldest pending line was recorded
//! (the core's flusher task, [`RequestLog::flush_periodically`]; later only while a task
//! holds the core longer than that), or when the core stops ([`RequestLog::flush`] after
//! its connections drained, and on drop). So a line may appear up to the interval after
//! the other log events of the same moment, never before its request was answered.
//!
//! Where a line goes follows the process's [`LogSwitches`], read at every request: to stderr
//! (batched here) when the stderr filter keeps [`REQUEST_LOG_TARGET`] at INFO — it changes
//! with `POST /logs/stderr` — and to the `/logs/stream` through a `tracing` event, formatted
//! by the stream's own layer, while a stream whose target keeps them runs.
//!
//! Invariants: lines are written whole and in the order the core recorded them; each batch
//! is one `write_all` on the writer (for stderr, under its lock, so batches of different
//! cores never interleave inside a line); the buffer never holds more than
//! [`REQUEST_LOG_BUFFER_BYTES`] plus one line; a line is lost only if the writer fails.

pub mod line;

use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::io::Write;
use std::sync::Arc;
use std::task::{Poll, Waker};
use std::time::{Duration, SystemTime};

use crate::config::{LogLevel, LogMode};
use crate::http::Timer;
use crate::logs::LogSwitches;
pub use crate::logs::REQUEST_LOG_TARGET;
pub use line::{LineFormatter, RequestLine};

/// Pending bytes that make the log write at once (a few hundred lines).
pub const REQUEST_LOG_BUFFER_BYTES: usize = 32 * 1024;
/// Longest a recorded line waits for its write while the core is free to run the flusher.
pub const REQUEST_LOG_FLUSH_INTERVAL: Duration = Duration::from_millis(100);

/// One core's request log. Not `Send`: each core owns its own.
pub struct RequestLog {
    /// Where the lines go; shared by every core and changed by the `/logs/*` routes.
    switches: Arc<LogSwitches>,
    formatter: RefCell<LineFormatter>,
    pending: RefCell<Vec<u8>>,
    writer: RefCell<Box<dyn Write>>,
    /// The flusher task waiting for a first pending line.
    flusher: Cell<Option<Waker>>,
}

impl RequestLog {
    /// A log of the lines `level` lets through (INFO and more verbose), in `mode`, written
    /// to `writer`, with no stream.
    pub fn new(level: LogLevel, mode: LogMode, writer: Box<dyn Write>) -> RequestLog {
        let switches = Arc::new(LogSwitches::new(level >= LogLevel::Info));
        RequestLog::with_switches(mode, writer, switches)
    }

    /// A log in `mode` written to `writer` when `switches` say so.
    pub fn with_switches(
        mode: LogMode,
        writer: Box<dyn Write>,
        switches: Arc<LogSwitches>,
    ) -> RequestLog {
        RequestLog {
            switches,
            formatter: RefCell::new(LineFormatter::new(mode)),
            pending: RefCell::new(Vec::with_capacity(REQUEST_LOG_BUFFER_BYTES)),
            writer: RefCell::new(writer),
            flusher: Cell::new(None),
        }
    }

    /// A log written to the process's stderr, where the other logs go.
    pub fn stderr(mode: LogMode, switches: Arc<LogSwitches>) -> RequestLog {
        RequestLog::with_switches(mode, Box::new(std::io::stderr()), switches)
    }

    /// Whether request lines are logged anywhere now.
    pub fn is_enabled(&self) -> bool {
        self.switches.stderr_requests() || self.switches.stream_requests()
    }

    /// Records one line, stamped now: in the batch for stderr (written if it is full), and
    /// as an event for the running stream.
    pub fn record(&self, line: &RequestLine<'_>) {
        if self.switches.stream_requests() {
            tracing::info!(
                target: REQUEST_LOG_TARGET,
                core = line.core,
                method = %line.method,
                path = %line.path,
                status = line.status,
                duration_us = line.duration_us,
                "request"
            );
        }
        if !self.switches.stderr_requests() {
            return;
        }
        let (was_empty, full) = {
            let mut pending = self.pending.borrow_mut();
            let was_empty = pending.is_empty();
            self.formatter
                .borrow_mut()
                .write(&mut pending, line, SystemTime::now());
            (was_empty, pending.len() >= REQUEST_LOG_BUFFER_BYTES)
        };
        if full {
            self.flush();
        } else if was_empty {
            if let Some(flusher) = self.flusher.take() {
                flusher.wake();
            }
        }
    }

    /// Writes every pending line. A failing writer loses the batch (as `tracing` would lose
    /// the events), so the buffer stays bounded.
    pub fn flush(&self) {
        let mut pending = self.pending.borrow_mut();
        if pending.is_empty() {
            return;
        }
        let mut writer = self.writer.borrow_mut();
        let _best_effort = writer.write_all(&pending).and_then(|()| writer.flush());
        pending.clear();
    }

    /// Runs for the life of the core: each time a line is pending, waits
    /// [`REQUEST_LOG_FLUSH_INTERVAL`] on `timer` and writes the batch. Sleeps without any
    /// timer while nothing is pending.
    pub async fn flush_periodically<T: Timer>(&self, timer: &T) {
        loop {
            poll_fn(|context| {
                if self.pending.borrow().is_empty() {
                    self.flusher.set(Some(context.waker().clone()));
                    Poll::Pending
                } else {
                    Poll::Ready(())
                }
            })
            .await;
            timer.sleep(REQUEST_LOG_FLUSH_INTERVAL).await;
            self.flush();
        }
    }

    /// Bytes recorded and not yet written.
    pub fn pending_bytes(&self) -> usize {
        self.pending.borrow().len()
    }
}

impl Drop for RequestLog {
    /// A core that stops without calling [`RequestLog::flush`] still writes its lines.
    fn drop(&mut self) {
        self.flush();
    }
}

#[cfg(test)]
mod tests;
