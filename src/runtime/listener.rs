//! The accept loop of one core: accepts on the core's own listening sockets, places each
//! connection on the least loaded core ([`super::connection_balance`]), and serves the
//! connections placed here until they close.
//!
//! Shutdown: when the flag is raised the loop stops accepting, tells every open connection
//! to close after its in-flight request, and waits (at most [`SHUTDOWN_GRACE`]) for them.
//! A connection still open after the grace period (a stalled upload, a peer that stopped
//! reading) is dropped with its core: its request was never acknowledged, so no task or
//! answer depends on it, and an upload's task is only enqueued once its body is complete.

use std::cell::Cell;
use std::net::TcpStream;
use std::rc::Rc;
use std::time::Duration;

use futures_lite::future;

use super::connection_balance::{AssignedConnection, CoreBalance, Placement};
use super::lifecycle::Lifecycle;
use super::shutdown::ShutdownFlag;
use super::socket::{Socket, Wakeup};
use super::timer::RuntimeTimer;
use crate::http::tls::TLS_HANDSHAKE_TIMEOUT;
use crate::http::tls_reload::CoreTlsAcceptor;
use crate::http::{Handler, HttpLimits, ShutdownSignal};

/// How long in-flight requests may take to finish once shutdown began: long enough for a
/// search or an enqueue to answer, short enough that SIGTERM is not held up by the body read
/// timeout of a stalled upload (30 s).
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// How long to wait before accepting again after `accept` failed (e.g. too many open files).
pub const ACCEPT_RETRY_DELAY: Duration = Duration::from_millis(20);

/// What serving a connection needs, shared by this core's accept loops and handoff queues.
struct ConnectionService<H: Handler> {
    handler: Rc<H>,
    limits: Rc<HttpLimits>,
    /// This core's TLS acceptor, which follows the configurations SIGHUP publishes.
    tls: Option<Rc<CoreTlsAcceptor>>,
    /// Connections open on this core (for the shutdown drain).
    connections: Rc<Cell<usize>>,
    connection_shutdown: ShutdownSignal,
}

/// How a core's serving ends: once `shutdown` is raised, the process drains
/// (`lifecycle`), the core keeps serving for `drain_delay` while `GET /health` answers 503,
/// then stops accepting and drains its connections.
pub struct ServingEnd {
    pub shutdown: ShutdownFlag,
    pub lifecycle: Lifecycle,
    pub drain_delay: Duration,
}

/// Serves every listener of this core, and the connections other cores hand it, until
/// shutdown, then drains open connections.
pub async fn serve<H: Handler + 'static>(
    listeners: Vec<super::socket::Listener>,
    balance: CoreBalance,
    handler: Rc<H>,
    limits: Rc<HttpLimits>,
    tls: Option<Rc<CoreTlsAcceptor>>,
    end: ServingEnd,
) {
    let service = Rc::new(ConnectionService {
        handler,
        limits,
        tls,
        connections: Rc::new(Cell::new(0usize)),
        connection_shutdown: ShutdownSignal::default(),
    });
    let balance = Rc::new(balance);
    super::connection_balance::install(balance.core(), balance.counts().clone());
    let accept_loops: Vec<_> = listeners
        .into_iter()
        .map(|listener| {
            glommio::spawn_local(accept_loop(listener, balance.clone(), service.clone()))
        })
        .collect();
    let handoffs = glommio::spawn_local(handoff_loop(balance.clone(), service.clone()));
    end.shutdown.raised().await;
    end.lifecycle.begin_draining();
    if !end.drain_delay.is_zero() {
        glommio::timer::sleep(end.drain_delay).await;
    }
    for running in accept_loops {
        running.cancel().await;
    }
    handoffs.cancel().await;
    // Handed over as this core stops: never read, so closing them loses no request.
    drop(balance.stop_accepting());
    service.connection_shutdown.trigger();
    drain(&service.connections).await;
}

/// Waits until no connection is open, at most [`SHUTDOWN_GRACE`].
async fn drain(connections: &Cell<usize>) {
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
    balancer: Rc<CoreBalance>,
    service: Rc<ConnectionService<H>>,
) {
    loop {
        let stream = match listener.accept_stream().await {
            Ok(stream) => stream,
            Err(error) => {
                tracing::warn!(%error, "accept failed");
                glommio::timer::sleep(ACCEPT_RETRY_DELAY).await;
                continue;
            }
        };
        if let Placement::Here(stream, assigned) = balancer.place(stream) {
            serve_accepted(stream, assigned, &service);
        }
    }
}

/// Serves the connections other cores accepted and handed to this one.
async fn handoff_loop<H: Handler + 'static>(
    balance: Rc<CoreBalance>,
    service: Rc<ConnectionService<H>>,
) {
    let wakeup = match (balance.wake_descriptor(), super::readiness::current()) {
        (Ok(descriptor), Some(readiness)) => Wakeup::adopt(descriptor, readiness),
        (Err(error), _) => Err(error),
        (_, None) => Err(std::io::Error::other("no readiness set on this thread")),
    };
    let wakeup = match wakeup {
        Ok(wakeup) => wakeup,
        Err(error) => {
            tracing::warn!(%error, "this core cannot take connections from others");
            drop(balance.stop_accepting());
            return;
        }
    };
    loop {
        if let Err(error) = wakeup.wait().await {
            tracing::warn!(%error, "this core stopped taking connections from others");
            drop(balance.stop_accepting());
            return;
        }
        for stream in balance.take_handed() {
            // The sending core counted the connection on this core when it chose it.
            serve_accepted(stream, balance.counts().assigned(balance.core()), &service);
        }
    }
}

/// Adopts `stream` into this core's readiness set and serves it on a task of its own;
/// `assigned` keeps it counted until it closes.
fn serve_accepted<H: Handler + 'static>(
    stream: TcpStream,
    assigned: AssignedConnection,
    service: &Rc<ConnectionService<H>>,
) {
    let Some(readiness) = super::readiness::current() else {
        tracing::warn!("a connection arrived on a thread without a readiness set");
        return;
    };
    let stream = match Socket::adopt(stream, readiness) {
        Ok(stream) => stream,
        Err(error) => {
            tracing::warn!(%error, "an accepted connection could not be watched");
            return;
        }
    };
    // Small responses must leave at once rather than wait for Nagle.
    let _ = stream.set_nodelay(true);
    let service = service.clone();
    service.connections.set(service.connections.get() + 1);
    // The connection's polls are what the CPU's indexing threads give way to.
    glommio::spawn_local(super::serving_activity::serving(async move {
        serve_connection(stream, &service).await;
        service.connections.set(service.connections.get() - 1);
        drop(assigned);
    }))
    .detach();
}

/// Serves one connection (after its TLS handshake, with TLS) until it closes.
async fn serve_connection<H: Handler + 'static>(stream: Socket, service: &ConnectionService<H>) {
    let peer = stream.peer_addr().ok();
    let timer = RuntimeTimer;
    let limits = &service.limits;
    let handler = &*service.handler;
    let shutdown = &service.connection_shutdown;
    let outcome = match &service.tls {
        None => {
            crate::http::serve_connection(stream, peer, limits, handler, &timer, shutdown).await
        }
        Some(tls) => {
            // The configuration current now: a reload later leaves this handshake alone.
            let acceptor = tls.current();
            match acceptor
                .accept_with_timeout(stream, &timer, TLS_HANDSHAKE_TIMEOUT)
                .await
            {
                Ok(stream) => {
                    crate::http::serve_connection(stream, peer, limits, handler, &timer, shutdown)
                        .await
                }
                Err(error) => {
                    tracing::debug!(%error, "TLS handshake failed");
                    return;
                }
            }
        }
    };
    if let Err(error) = outcome {
        tracing::debug!(%error, "connection ended with an error");
    }
}
