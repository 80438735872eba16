//! Spreading client connections evenly over the cores.
//!
//! Every core accepts on its own SO_REUSEPORT socket, and the kernel picks the socket of a
//! new connection by a hash of its addresses: with a few long-lived connections (a proxy's
//! or an application's keep-alive pool), the split is uneven as often as not — 16
//! connections over 2 cores end 10 against 6 or worse in 45 % of cases — and the busier
//! core's queue sets the latency tail while the other core idles part of the time. Measured
//! on 886k documents with 16 connections and 15 s windows, each on new connections: idle p99
//! ranged 16–30 ms from window to window, the slow windows with the lower p50 an uneven
//! split gives; with the balancing, 16.8–20.3 ms.
//!
//! So a core that accepts a connection while it holds more than the least loaded core hands
//! the connection to that core (the socket, before it joins any readiness set), which
//! serves it as its own. Meilisearch's single acceptor deals connections round-robin; here
//! the count of open connections decides, so a pool that closes and reopens connections
//! stays even too.
//!
//! A departure from "no state shared between cores" (`runtime` module docs): the open
//! connection count of each core is an atomic every core reads and the deciding core
//! increments for its choice (the serving core decrements it when the connection closes),
//! so two cores accepting at once both see each other's choices. It is a load hint: a stale
//! read only makes one placement less even, never wrong.
//!
//! Invariants:
//! - a connection is counted on exactly one core, from its placement until it closes
//!   ([`AssignedConnection`] decrements on drop);
//! - a connection moves at most once, before any byte of it was read;
//! - when the handoff cannot be made (the peer is gone or its queue is full), the accepting
//!   core serves the connection itself: no connection is dropped for balancing.

use std::cell::RefCell;
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use glommio::channels::channel_mesh::{Full, MeshBuilder, Receivers, Senders};

/// Connections waiting in one core's queue for another core to adopt them. A burst of
/// connections beyond it is served where it was accepted.
pub const HANDOFF_QUEUE_CAPACITY: usize = 256;

/// The open connection count of every core, shared by all.
#[derive(Debug, Clone)]
pub struct ConnectionCounts {
    open: Arc<[AtomicUsize]>,
}

impl ConnectionCounts {
    /// Zero connections on each of `cores` cores.
    pub fn new(cores: usize) -> ConnectionCounts {
        assert!(cores > 0, "a runtime has at least one core");
        ConnectionCounts {
            open: (0..cores).map(|_| AtomicUsize::new(0)).collect(),
        }
    }

    /// The core that should serve a connection `core` just accepted: `core` itself unless
    /// another core holds fewer connections, then the first of the least loaded. The chosen
    /// core's count is incremented.
    pub fn place(&self, core: usize) -> usize {
        let mine = self.open[core].load(Ordering::Relaxed);
        let (least, fewest) = self
            .open
            .iter()
            .enumerate()
            .map(|(index, count)| (index, count.load(Ordering::Relaxed)))
            .min_by_key(|&(index, count)| (count, index != core))
            .unwrap_or((core, mine));
        let chosen = if fewest < mine { least } else { core };
        self.open[chosen].fetch_add(1, Ordering::Relaxed);
        chosen
    }

    /// Counts a connection served on `core` without a placement (a handoff that failed
    /// back to it is already counted; this is for tests and direct adoption).
    pub fn count_on(&self, core: usize) -> AssignedConnection {
        self.open[core].fetch_add(1, Ordering::Relaxed);
        self.assigned(core)
    }

    /// The guard of a connection already counted on `core`.
    pub fn assigned(&self, core: usize) -> AssignedConnection {
        AssignedConnection {
            counts: self.clone(),
            core,
        }
    }

    /// Moves a connection's count from `from` to `to` (a handoff that could not be made).
    pub fn move_count(&self, from: usize, to: usize) {
        self.open[from].fetch_sub(1, Ordering::Relaxed);
        self.open[to].fetch_add(1, Ordering::Relaxed);
    }

    /// The open connections of `core`.
    pub fn open_on(&self, core: usize) -> usize {
        self.open[core].load(Ordering::Relaxed)
    }
}

thread_local! {
    /// This core's index and the shared counts, once the core serves.
    static HERE: RefCell<Option<(usize, ConnectionCounts)>> = const { RefCell::new(None) };
}

/// Makes `core`'s count the one [`open_connections_here`] reports on this thread.
pub fn install(core: usize, counts: ConnectionCounts) {
    HERE.with(|here| *here.borrow_mut() = Some((core, counts)));
}

/// The connections placed on the calling core and still open (0 before it serves).
pub fn open_connections_here() -> u64 {
    HERE.with(|here| {
        here.borrow()
            .as_ref()
            .map_or(0, |(core, counts)| counts.open_on(*core) as u64)
    })
}

/// A connection counted on a core; the count drops with it.
#[derive(Debug)]
pub struct AssignedConnection {
    counts: ConnectionCounts,
    core: usize,
}

impl Drop for AssignedConnection {
    fn drop(&mut self) {
        let previous = self.counts.open[self.core].fetch_sub(1, Ordering::Relaxed);
        debug_assert!(
            previous > 0,
            "a connection is counted before it is released"
        );
    }
}

/// The queues connections travel on between cores, set up once for all cores.
pub type HandoffSetup = MeshBuilder<TcpStream, Full>;

/// The handoff queues of `cores` cores; each core joins with [`BalancerSetup::join`].
#[derive(Clone)]
pub struct BalancerSetup {
    counts: ConnectionCounts,
    queues: HandoffSetup,
}

impl BalancerSetup {
    /// Counts and queues for `cores` cores.
    pub fn new(cores: usize) -> BalancerSetup {
        BalancerSetup {
            counts: ConnectionCounts::new(cores),
            queues: MeshBuilder::full(cores, HANDOFF_QUEUE_CAPACITY),
        }
    }

    /// Joins the queues from the calling core (every core must join before any returns).
    pub async fn join(self) -> Result<CoreBalance, String> {
        let (senders, receivers) =
            self.queues.join().await.map_err(|error| {
                format!("the connection handoff queues failed to form: {error:?}")
            })?;
        let balancer = ConnectionBalancer {
            counts: self.counts,
            senders,
        };
        Ok(CoreBalance {
            balancer,
            receivers,
        })
    }
}

/// One core's balancer and the queues other cores hand it connections on.
pub struct CoreBalance {
    pub balancer: ConnectionBalancer,
    pub receivers: Receivers<TcpStream>,
}

/// One core's side of the balancing.
pub struct ConnectionBalancer {
    counts: ConnectionCounts,
    senders: Senders<TcpStream>,
}

/// Where an accepted connection goes.
pub enum Placement {
    /// Served on this core.
    Here(TcpStream, AssignedConnection),
    /// Handed to another core.
    Moved,
}

impl ConnectionBalancer {
    /// This core's index.
    pub fn core(&self) -> usize {
        self.senders.peer_id()
    }

    /// The shared counts.
    pub fn counts(&self) -> &ConnectionCounts {
        &self.counts
    }

    /// Places `stream`, just accepted here: keeps it, or hands it to the least loaded core.
    pub fn place(&self, stream: TcpStream) -> Placement {
        let core = self.core();
        let chosen = self.counts.place(core);
        if chosen == core {
            return Placement::Here(stream, self.counts.assigned(core));
        }
        let Err(error) = self.senders.try_send_to(chosen, stream) else {
            return Placement::Moved;
        };
        self.counts.move_count(chosen, core);
        let guard = self.counts.assigned(core);
        match error {
            glommio::GlommioError::WouldBlock(glommio::ResourceType::Channel(stream))
            | glommio::GlommioError::Closed(glommio::ResourceType::Channel(stream)) => {
                Placement::Here(stream, guard)
            }
            other => {
                // Only an index outside the mesh gives another error, and `chosen` is a peer.
                tracing::warn!(error = ?other, "a connection could not be handed off");
                Placement::Moved
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_of_connections_on_one_core_ends_even() {
        let counts = ConnectionCounts::new(2);
        let placed: Vec<usize> = (0..16).map(|_| counts.place(0)).collect();
        assert_eq!(counts.open_on(0), 8);
        assert_eq!(counts.open_on(1), 8);
        assert_eq!(
            placed[0], 0,
            "an idle runtime keeps the first connection where it is"
        );
    }

    #[test]
    fn a_core_keeps_its_connection_on_a_tie_and_gives_it_when_ahead() {
        let counts = ConnectionCounts::new(3);
        assert_eq!(counts.place(1), 1);
        assert_eq!(
            counts.place(1),
            0,
            "ahead by one: the first least loaded core"
        );
        assert_eq!(counts.place(1), 2);
        assert_eq!(counts.place(2), 2, "a tie keeps it");
    }

    #[test]
    fn a_closed_connection_frees_its_place() {
        let counts = ConnectionCounts::new(2);
        let first = counts.count_on(0);
        let _second = counts.count_on(0);
        drop(first);
        assert_eq!(counts.open_on(0), 1);
        assert_eq!(counts.place(0), 1);
    }
}
