//! The HTTP/1.1 server layer: request parsing (httparse), bodies, CORS, compression and
//! response writing over any `futures_io` byte stream, independent of the async runtime.
//!
//! The runtime accepts a connection (plain, or through [`tls::TlsAcceptor`]) and awaits
//! [`serve_connection`], which answers requests one after the other with the [`Handler`]
//! until the peer leaves, a limit or timeout closes the connection, or the
//! [`ShutdownSignal`] fires. Time comes only from the [`Timer`] given, so the layer runs
//! under any executor and under tests with a fake clock.
//!
//! Invariants (whole layer):
//! - responses leave in request order, each with `content-length` (or chunked, for a
//!   streamed body, see [`streamed`]) and `date`;
//! - a connection never buffers more than its [`HttpLimits`] allow;
//! - after an error that leaves the byte stream out of sync (bad framing, body not read),
//!   the connection is answered and closed, never reused.

mod body;
mod bounded_decoder;
mod compress;
mod connection;
mod cors;
pub(crate) mod date;
mod deadline;
mod decode;
mod head;
mod io;
mod limits;
mod negotiate;
mod request;
mod response;
pub(crate) mod serialize;
mod shutdown;
mod sink;
mod stream_body;
mod streamed;
mod timeout;
pub mod tls;
pub mod tls_reload;

#[cfg(test)]
mod tests;

use std::future::Future;
use std::time::{Duration, Instant};

pub use connection::{CloseReason, ConnectionError, ConnectionSummary, serve_connection};
pub use limits::*;
pub use request::{BodyError, Headers, Method, Request, split_target};
pub use response::{RETRY_AFTER_SECONDS, Response, reason_phrase};
pub use shutdown::{ShutdownSignal, ShutdownWait};
pub use sink::{BodySink, NoSink, RequestHead, SpooledBody};
pub use streamed::{BodyStream, STREAMED_CHUNK_BYTES_MAX};

/// Answers requests. Called sequentially for the requests of one connection.
pub trait Handler {
    /// Where the bodies this handler streams go.
    type Sink: BodySink;

    /// Called when a request with a body has its head parsed, before the body is read: a sink
    /// to stream the decoded body into, or `None` to receive the body whole in memory.
    fn body_sink(&self, head: RequestHead<'_>) -> Option<Self::Sink>;

    fn handle(&self, request: Request) -> impl Future<Output = Response>;
}

/// The runtime's clock, as the HTTP layer needs it.
pub trait Timer {
    /// The current instant of this clock (the one `sleep` counts on).
    fn now(&self) -> Instant;

    /// Completes after `duration`.
    fn sleep(&self, duration: Duration) -> impl Future<Output = ()>;
}
