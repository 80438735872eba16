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
//! - when the handoff cannot be made (the peer stopped or its inbox is full), the accepting
//!   core serves the connection itself: no connection is dropped for balancing;
//! - inboxes are plain locked vectors with an eventfd each, not glommio channels, so nothing
//!   here belongs to an executor and either core may stop first. (The crash at exit first
//!   blamed on glommio's channels was the allocator's exit handler racing threads that were
//!   still ending; it happened without the balancing too, more rarely. The process now ends
//!   without that handler: see `end_after_cores` in `src/main.rs`.)

use std::cell::RefCell;
use std::io;
use std::net::TcpStream;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Connections waiting in one core's inbox for it to adopt them. A burst of connections
/// beyond it is served where it was accepted.
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

    /// Counts a connection served on `core` without a placement.
    #[cfg(test)]
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

/// One core's inbox: the connections other cores handed it, and the eventfd that wakes it.
#[derive(Debug)]
struct Inbox {
    streams: Mutex<Vec<TcpStream>>,
    /// Written once per handoff; the owning core waits on it ([`super::socket::Wakeup`]).
    wake: OwnedFd,
    /// False once the owning core stopped serving: no core hands it anything after that.
    accepting: AtomicBool,
}

impl Inbox {
    fn new() -> io::Result<Inbox> {
        // SAFETY: eventfd takes no pointer; a non-negative result is a new descriptor that
        // nothing else owns.
        let descriptor = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if descriptor < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Inbox {
            streams: Mutex::new(Vec::new()),
            // SAFETY: `descriptor` was just created and is owned by nothing else.
            wake: unsafe { OwnedFd::from_raw_fd(descriptor) },
            accepting: AtomicBool::new(true),
        })
    }

    /// Queues `stream` and wakes the owner; gives it back when the inbox is full or its core
    /// stopped.
    fn push(&self, stream: TcpStream) -> Result<(), TcpStream> {
        if !self.accepting.load(Ordering::Acquire) {
            return Err(stream);
        }
        {
            let Ok(mut streams) = self.streams.lock() else {
                return Err(stream);
            };
            if streams.len() >= HANDOFF_QUEUE_CAPACITY {
                return Err(stream);
            }
            streams.push(stream);
        }
        let one = 1u64;
        // SAFETY: `one` is 8 readable bytes that outlive the call, the size an eventfd write
        // takes; the descriptor is open while `self` lives. A full counter (never reached:
        // the owner resets it on every wake) would only drop this wake-up.
        unsafe {
            libc::write(
                self.wake.as_raw_fd(),
                std::ptr::addr_of!(one).cast::<libc::c_void>(),
                std::mem::size_of::<u64>(),
            );
        }
        Ok(())
    }

    /// Every queued connection.
    fn take(&self) -> Vec<TcpStream> {
        self.streams
            .lock()
            .map(|mut streams| std::mem::take(&mut *streams))
            .unwrap_or_default()
    }
}

/// The counts and inboxes of every core, set up once before the cores start.
#[derive(Debug, Clone)]
pub struct BalancerSetup {
    counts: ConnectionCounts,
    inboxes: Arc<[Inbox]>,
}

impl BalancerSetup {
    /// Counts and inboxes for `cores` cores.
    pub fn new(cores: usize) -> io::Result<BalancerSetup> {
        let inboxes = (0..cores)
            .map(|_| Inbox::new())
            .collect::<io::Result<Vec<Inbox>>>()?;
        Ok(BalancerSetup {
            counts: ConnectionCounts::new(cores),
            inboxes: inboxes.into(),
        })
    }

    /// Core `core`'s side.
    pub fn for_core(self, core: usize) -> CoreBalance {
        assert!(core < self.inboxes.len(), "core {core} has an inbox");
        CoreBalance {
            core,
            counts: self.counts,
            inboxes: self.inboxes,
        }
    }
}

/// One core's side of the balancing.
#[derive(Debug)]
pub struct CoreBalance {
    core: usize,
    counts: ConnectionCounts,
    inboxes: Arc<[Inbox]>,
}

/// Where an accepted connection goes.
pub enum Placement {
    /// Served on this core.
    Here(TcpStream, AssignedConnection),
    /// Handed to another core.
    Moved,
}

impl CoreBalance {
    /// This core's index.
    pub fn core(&self) -> usize {
        self.core
    }

    /// The shared counts.
    pub fn counts(&self) -> &ConnectionCounts {
        &self.counts
    }

    /// A descriptor of this core's wake-up eventfd, to wait on.
    pub fn wake_descriptor(&self) -> io::Result<OwnedFd> {
        self.inboxes[self.core].wake.try_clone()
    }

    /// The connections handed to this core since the last call.
    pub fn take_handed(&self) -> Vec<TcpStream> {
        self.inboxes[self.core].take()
    }

    /// Stops taking connections from other cores; answers those already queued (to close).
    pub fn stop_accepting(&self) -> Vec<TcpStream> {
        self.inboxes[self.core]
            .accepting
            .store(false, Ordering::Release);
        self.take_handed()
    }

    /// Places `stream`, just accepted here: keeps it, or hands it to the least loaded core.
    pub fn place(&self, stream: TcpStream) -> Placement {
        let core = self.core;
        let chosen = self.counts.place(core);
        if chosen == core {
            return Placement::Here(stream, self.counts.assigned(core));
        }
        match self.inboxes[chosen].push(stream) {
            Ok(()) => Placement::Moved,
            Err(stream) => {
                self.counts.move_count(chosen, core);
                Placement::Here(stream, self.counts.assigned(core))
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
