//! The accept loop of one core: accepts on the core's own listening sockets and serves each
//! connection on this core until it closes.
//!
//! Shutdown: when the flag is raised the loop stops accepting, tells every open connection
//! to close after its in-flight request, and waits (at most [`SHUTDOWN_GRACE`]) for them.
//! A connection still open after the grace period (a stalled upload, a peer that stopped
//! reading) is dropped with its core: its request was never acknowledged, so no task or
//! answer depends on it, and an upload's task is only enqueued once its body is complete.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use futures_lite::future;

use super::shutdown::ShutdownFlag;
use super::timer::RuntimeTimer;
use crate::http::tls::{TLS_HANDSHAKE_TIMEOUT, TlsAcceptor};
use crate::http::{Handler, HttpLimits, ShutdownSignal};

/// How long in-flight requests may take to finish once shutdown began: long enough for a
/// search or an enqueue to answer, short enough that SIGTERM is not held up by the body read
/// timeout of a stalled upload (30 s).
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// How long to wait before accepting again after `accept` failed (e.g. too many open files).
pub const ACCEPT_RETRY_DELAY: Duration = Duration::from_millis(20);

/// Serves every listener of this core until shutdown, then drains open connections.
pub async fn serve<H: Handler + 'static>(
    listeners: Vec<super::socket::Listener>,
    handler: Rc<H>,
    limits: Rc<HttpLimits>,
    tls: Option<Rc<TlsAcceptor>>,
    shutdown: ShutdownFlag,
) {
    let connections = Rc::new(Cell::new(0usize));
    let connection_shutdown = ShutdownSignal::default();
    let accept_loops: Vec<_> = listeners
        .into_iter()
        .map(|listener| {
            glommio::spawn_local(accept_loop(
                listener,
                handler.clone(),
                limits.clone(),
                tls.clone(),
                connections.clone(),
                connection_shutdown.clone(),
            ))
        })
        .collect();
    shutdown.raised().await;
    for accept_loop in accept_loops {
        accept_loop.cancel().await;
    }
    connection_shutdown.trigger();
    let drained = async {
        while connections.get() > 0 {
            glommio::timer::sleep(Duration::from_millis(10)).await;
        }
        true
    };
    let timed_out = async {
        glommio::timer::sleep(SHUTDOWN_GRACE).await;
        false
    };
    if !future::or(drained, timed_out).await {
        tracing::warn!(
            open = connections.get(),
            "connections still open after the shutdown grace period"
        );
    }
}

async fn accept_loop<H: Handler + 'static>(
    listener: super::socket::Listener,
    handler: Rc<H>,
    limits: Rc<HttpLimits>,
    tls: Option<Rc<TlsAcceptor>>,
    connections: Rc<Cell<usize>>,
    connection_shutdown: ShutdownSignal,
) {
    loop {
        let stream = match listener.accept().await {
            Ok(stream) => stream,
            Err(error) => {
                tracing::warn!(%error, "accept failed");
                glommio::timer::sleep(ACCEPT_RETRY_DELAY).await;
                continue;
            }
        };
        // Small responses must leave at once rather than wait for Nagle.
        let _ = stream.set_nodelay(true);
        let peer = stream.peer_addr().ok();
        let handler = handler.clone();
        let limits = limits.clone();
        let tls = tls.clone();
        let connections = connections.clone();
        let connection_shutdown = connection_shutdown.clone();
        connections.set(connections.get() + 1);
        glommio::spawn_local(async move {
            let timer = RuntimeTimer;
            let outcome = match tls {
                None => {
                    crate::http::serve_connection(
                        stream,
                        peer,
                        &limits,
                        &*handler,
                        &timer,
                        &connection_shutdown,
                    )
                    .await
                }
                Some(acceptor) => match acceptor
                    .accept_with_timeout(stream, &timer, TLS_HANDSHAKE_TIMEOUT)
                    .await
                {
                    Ok(stream) => {
                        crate::http::serve_connection(
                            stream,
                            peer,
                            &limits,
                            &*handler,
                            &timer,
                            &connection_shutdown,
                        )
                        .await
                    }
                    Err(error) => {
                        tracing::debug!(%error, "TLS handshake failed");
                        connections.set(connections.get() - 1);
                        return;
                    }
                },
            };
            if let Err(error) = outcome {
                tracing::debug!(%error, "connection ended with an error");
            }
            connections.set(connections.get() - 1);
        })
        .detach();
    }
}
