//! Keep-alive: connections whose response ended cleanly wait here, per scheme, host and
//! port, for the next request to the same server.
//!
//! Invariants: a connection is pooled only after a whole response was read from it with
//! nothing left over and neither side asked to close; a pooled connection is reused at
//! most [`IDLE_TIMEOUT`] after its last response, and no more than
//! [`MAX_IDLE_PER_SERVER`] wait per server; the pool belongs to one core's client.

use std::cell::RefCell;
use std::collections::HashMap;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures_lite::io::{AsyncRead, AsyncWrite};
use futures_rustls::client::TlsStream;

use crate::runtime::socket::Socket;

/// How long an idle connection may wait for reuse (servers commonly close idle
/// connections after a few seconds; a reused one the server closed is replaced).
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(15);
/// The most idle connections kept per server.
pub const MAX_IDLE_PER_SERVER: usize = 8;

/// A connection to a server, plain or TLS.
pub enum Connection {
    Plain(Socket),
    Tls(Box<TlsStream<Socket>>),
}

impl AsyncRead for Connection {
    fn poll_read(
        self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffer: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Connection::Plain(socket) => Pin::new(socket).poll_read(context, buffer),
            Connection::Tls(stream) => Pin::new(stream.as_mut()).poll_read(context, buffer),
        }
    }
}

impl AsyncWrite for Connection {
    fn poll_write(
        self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffer: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Connection::Plain(socket) => Pin::new(socket).poll_write(context, buffer),
            Connection::Tls(stream) => Pin::new(stream.as_mut()).poll_write(context, buffer),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Connection::Plain(socket) => Pin::new(socket).poll_flush(context),
            Connection::Tls(stream) => Pin::new(stream.as_mut()).poll_flush(context),
        }
    }

    fn poll_close(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Connection::Plain(socket) => Pin::new(socket).poll_close(context),
            Connection::Tls(stream) => Pin::new(stream.as_mut()).poll_close(context),
        }
    }
}

/// The server a connection talks to: scheme, host, port.
pub type ServerKey = (String, String, u16);

struct Idle {
    connection: Connection,
    since: Instant,
}

/// Idle connections by server.
#[derive(Default)]
pub struct Pool {
    idle: RefCell<HashMap<ServerKey, Vec<Idle>>>,
}

impl Pool {
    /// The most recently pooled connection to `server` still fresh enough; stale ones are
    /// dropped on the way.
    pub fn take(&self, server: &ServerKey) -> Option<Connection> {
        let mut idle = self.idle.borrow_mut();
        let waiting = idle.get_mut(server)?;
        waiting.retain(|connection| connection.since.elapsed() < IDLE_TIMEOUT);
        let connection = waiting.pop().map(|idle| idle.connection);
        if waiting.is_empty() {
            idle.remove(server);
        }
        connection
    }

    /// Keeps `connection` for the next request to `server`, unless enough already wait.
    pub fn put(&self, server: ServerKey, connection: Connection) {
        let mut idle = self.idle.borrow_mut();
        let waiting = idle.entry(server).or_default();
        if waiting.len() < MAX_IDLE_PER_SERVER {
            waiting.push(Idle {
                connection,
                since: Instant::now(),
            });
        }
    }
}
