//! Streamed request bodies: a [`super::Handler`] may take a request's body piece by piece into a
//! [`BodySink`] (an update file, say) instead of receiving it whole in memory; the request then
//! carries the [`SpooledBody`] the sink made of it.
//!
//! Invariants: a sink sees the decoded body (`Content-Encoding` removed) in order, in pieces of
//! bounded size, never more than the payload limit in total; a sink whose body fails (too large,
//! incomplete, undecodable, or its own write error) is dropped without `finish`, and must then
//! leave nothing behind; a [`SpooledBody`] the handler does not [`SpooledBody::keep`] is
//! discarded when dropped.

use std::fmt;
use std::future::Future;
use std::io;

use super::request::{Headers, Method};

/// What a handler sees of a request before its body is read.
#[derive(Debug, Clone, Copy)]
pub struct RequestHead<'a> {
    pub method: &'a Method,
    /// Normalized path, as in [`super::Request::path`].
    pub path: &'a str,
    pub headers: &'a Headers,
}

/// Where a streamed body goes.
pub trait BodySink {
    /// Takes the next decoded bytes of the body.
    fn write(&mut self, bytes: &[u8]) -> impl Future<Output = io::Result<()>>;
    /// The body ended: makes it durable and says what was made of it.
    fn finish(self) -> impl Future<Output = io::Result<SpooledBody>>;
}

/// A body a [`BodySink`] stored: its name for the handler, its decoded size, and how to
/// discard it when the handler does not keep it.
pub struct SpooledBody {
    pub name: String,
    pub bytes: u64,
    discard: Option<Box<dyn FnOnce()>>,
}

impl SpooledBody {
    /// A stored body; `discard` runs if it is dropped without being kept.
    pub fn new(name: String, bytes: u64, discard: impl FnOnce() + 'static) -> SpooledBody {
        SpooledBody {
            name,
            bytes,
            discard: Some(Box::new(discard)),
        }
    }

    /// The handler takes ownership of the stored body: it is no longer discarded on drop.
    pub fn keep(mut self) -> (String, u64) {
        self.discard = None;
        (std::mem::take(&mut self.name), self.bytes)
    }
}

impl Drop for SpooledBody {
    fn drop(&mut self) {
        if let Some(discard) = self.discard.take() {
            discard();
        }
    }
}

impl fmt::Debug for SpooledBody {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("SpooledBody")
            .field("name", &self.name)
            .field("bytes", &self.bytes)
            .finish()
    }
}

/// The sink of a handler that never streams.
#[derive(Debug)]
pub enum NoSink {}

impl BodySink for NoSink {
    async fn write(&mut self, _bytes: &[u8]) -> io::Result<()> {
        match *self {}
    }

    async fn finish(self) -> io::Result<SpooledBody> {
        match self {}
    }
}
