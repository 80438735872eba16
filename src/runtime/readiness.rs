//! Socket readiness for one core: an edge-triggered epoll set, harvested by one task.
//!
//! Why not glommio's own socket polls: glommio arms one io_uring poll per socket wait, and
//! the kernel posts each of its completions by interrupting the core's thread when that
//! thread is running (a reschedule interrupt, and on a virtual machine an exit to the
//! hypervisor). A core busy with many keep-alive connections took about one such interrupt
//! for every three requests, and it doubled the kernel time of a small request
//! (`tuning/results/http-2026-11-24.md`). glommio 0.9 offers no way to create its rings
//! with cooperative completions, the kernel's own fix. An epoll set has no such cost: an
//! arriving segment only marks the socket ready, and nobody is interrupted.
//!
//! How it works:
//! - every client connection and listening socket of the core joins this core's epoll set
//!   once, edge-triggered, for input and output ([`Readiness::register`]);
//! - a socket operation that would block leaves its task's waker in the socket's slot;
//! - one poller task ([`Readiness::run_poller`]) collects the ready sockets without
//!   blocking (`epoll_wait` with a zero timeout) and wakes their waiters, then awaits the
//!   epoll descriptor becoming readable through one io_uring poll ([`super::epoll_wake`]).
//!   glommio submits that poll only once the core's queues have run dry, so while the core
//!   is busy one poll covers every connection, and glommio still reaps its own completions
//!   (timers, the core mesh, file I/O) between two harvests exactly as before.
//!
//! Invariants:
//! - a slot's generation changes whenever the slot is freed, so an event that names a
//!   closed socket (already queued when it closed) wakes nobody;
//! - a waiter is woken at least once after the readiness it waits for appears: socket
//!   operations retry before they wait, and an edge-triggered event follows every change
//!   after the retry;
//! - once an event reported the peer's end of input, reads never wait for another event
//!   (none follows): a read that drains the last data, taken after that event was
//!   harvested, would otherwise hide the end of input from the next read;
//! - the set lives on one core and is never touched from another thread.

use std::cell::RefCell;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::rc::Rc;
use std::task::Waker;

/// How many ready sockets one `epoll_wait` call reports at most; a harvest calls it again
/// while it comes back full.
pub const EVENTS_PER_WAIT: usize = 256;

/// How long the poller pauses after waiting for readiness failed, before it tries again.
const RETRY_AFTER_FAILED_WAIT: std::time::Duration = std::time::Duration::from_millis(1);

/// The interest every socket registers: input, output, and the peer closing, edge-triggered.
const INTEREST: u32 = (libc::EPOLLIN | libc::EPOLLOUT | libc::EPOLLRDHUP | libc::EPOLLET) as u32;

/// Events that concern a reader: input, the peer closing, errors.
const READ_EVENTS: u32 =
    (libc::EPOLLIN | libc::EPOLLRDHUP | libc::EPOLLHUP | libc::EPOLLERR) as u32;

/// Events after which no further input event comes: the peer closed its side, the
/// connection hung up or failed.
const INPUT_END_EVENTS: u32 = (libc::EPOLLRDHUP | libc::EPOLLHUP | libc::EPOLLERR) as u32;

/// Events that concern a writer: room to write, errors.
const WRITE_EVENTS: u32 = (libc::EPOLLOUT | libc::EPOLLHUP | libc::EPOLLERR) as u32;

/// Which way a task waits on a socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Read,
    Write,
}

/// The waiters of one registered socket.
#[derive(Default)]
struct Slot {
    generation: u32,
    in_use: bool,
    /// False once a read found the input drained, true again at the next input event: a
    /// read of a drained socket waits without asking the kernel.
    readable: bool,
    /// True once an event reported the peer closed its side (or the socket failed): no
    /// event follows that one, so from then on reads always ask the kernel.
    input_ended: bool,
    reader: Option<Waker>,
    writer: Option<Waker>,
}

/// A socket's place in the set, returned by [`Readiness::register`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token {
    index: u32,
    generation: u32,
}

impl Token {
    fn to_event_data(self) -> u64 {
        (u64::from(self.generation) << 32) | u64::from(self.index)
    }

    fn from_event_data(data: u64) -> Self {
        Token {
            index: (data & u64::from(u32::MAX)) as u32,
            generation: (data >> 32) as u32,
        }
    }
}

/// The epoll set of one core and the waiters of its sockets.
pub struct Readiness {
    epoll: OwnedFd,
    slots: RefCell<Vec<Slot>>,
    free: RefCell<Vec<u32>>,
}

thread_local! {
    /// This core's set, once [`install`] created it.
    static CURRENT: RefCell<Option<Rc<Readiness>>> = const { RefCell::new(None) };
}

/// Creates this core's set and starts its poller. Called by the runtime at the start of
/// every core, before any socket registers.
pub fn install() -> io::Result<Rc<Readiness>> {
    let readiness = Rc::new(Readiness::new()?);
    CURRENT.with(|current| *current.borrow_mut() = Some(readiness.clone()));
    glommio::spawn_local(Readiness::run_poller(Rc::downgrade(&readiness))).detach();
    Ok(readiness)
}

/// This core's set; `None` on a thread where [`install`] has not run.
pub fn current() -> Option<Rc<Readiness>> {
    CURRENT.with(|current| current.borrow().clone())
}

impl Readiness {
    fn new() -> io::Result<Self> {
        // SAFETY: `epoll_create1` takes no pointer; a non-negative result is a new
        // descriptor that nothing else owns.
        let descriptor = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if descriptor < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `descriptor` was just created and is owned by nothing else.
        let epoll = unsafe { OwnedFd::from_raw_fd(descriptor) };
        Ok(Readiness {
            epoll,
            slots: RefCell::new(Vec::new()),
            free: RefCell::new(Vec::new()),
        })
    }

    /// Adds `socket` to the set. The caller must [`deregister`](Self::deregister) the
    /// token before it closes the socket.
    pub fn register(&self, socket: RawFd) -> io::Result<Token> {
        let token = self.allocate();
        let mut event = libc::epoll_event {
            events: INTEREST,
            u64: token.to_event_data(),
        };
        // SAFETY: `event` is a valid, initialised `epoll_event` that outlives the call; the
        // kernel only reads it.
        let outcome = unsafe {
            libc::epoll_ctl(
                self.epoll.as_raw_fd(),
                libc::EPOLL_CTL_ADD,
                socket,
                &mut event,
            )
        };
        if outcome < 0 {
            let error = io::Error::last_os_error();
            self.release(token);
            return Err(error);
        }
        Ok(token)
    }

    /// Removes `socket` from the set and frees its slot; a waiter still in it is dropped.
    pub fn deregister(&self, socket: RawFd, token: Token) {
        // SAFETY: a null event is allowed for `EPOLL_CTL_DEL` (kernels since 2.6.9). A
        // failure means the socket was not in the set, which leaves nothing to undo.
        unsafe {
            libc::epoll_ctl(
                self.epoll.as_raw_fd(),
                libc::EPOLL_CTL_DEL,
                socket,
                std::ptr::null_mut(),
            );
        }
        self.release(token);
    }

    /// Whether input may be waiting on the socket of `token`: false only after a read
    /// found it drained and no input event came since.
    pub fn may_read(&self, token: Token) -> bool {
        self.slots
            .borrow()
            .get(token.index as usize)
            .is_none_or(|slot| {
                slot.readable || slot.input_ended || slot.generation != token.generation
            })
    }

    /// Leaves `waker` to be woken when the socket of `token` is ready for `direction`,
    /// replacing the previous waiter in that direction. Waiting to read means the input
    /// was found drained.
    pub fn wait(&self, token: Token, direction: Direction, waker: &Waker) {
        let mut slots = self.slots.borrow_mut();
        let Some(slot) = slots.get_mut(token.index as usize) else {
            return;
        };
        if !slot.in_use || slot.generation != token.generation {
            return;
        }
        let place = match direction {
            Direction::Read => {
                slot.readable = slot.input_ended;
                &mut slot.reader
            }
            Direction::Write => &mut slot.writer,
        };
        match place {
            Some(existing) if existing.will_wake(waker) => {}
            _ => *place = Some(waker.clone()),
        }
    }

    /// Records that a read emptied the input of the socket of `token`.
    pub fn mark_drained(&self, token: Token) {
        if let Some(slot) = self.slots.borrow_mut().get_mut(token.index as usize) {
            if slot.generation == token.generation && !slot.input_ended {
                slot.readable = false;
            }
        }
    }

    fn allocate(&self) -> Token {
        let mut slots = self.slots.borrow_mut();
        if let Some(index) = self.free.borrow_mut().pop() {
            let slot = &mut slots[index as usize];
            slot.in_use = true;
            slot.readable = true;
            slot.input_ended = false;
            return Token {
                index,
                generation: slot.generation,
            };
        }
        let index = u32::try_from(slots.len()).expect("fewer than 2^32 open sockets per core");
        slots.push(Slot {
            in_use: true,
            readable: true,
            ..Slot::default()
        });
        Token {
            index,
            generation: 0,
        }
    }

    fn release(&self, token: Token) {
        let mut slots = self.slots.borrow_mut();
        let Some(slot) = slots.get_mut(token.index as usize) else {
            return;
        };
        if !slot.in_use || slot.generation != token.generation {
            return;
        }
        slot.in_use = false;
        slot.generation = slot.generation.wrapping_add(1);
        slot.reader = None;
        slot.writer = None;
        self.free.borrow_mut().push(token.index);
    }

    /// Collects every socket ready now and wakes its waiters. Returns how many events came.
    fn harvest(&self) -> usize {
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; EVENTS_PER_WAIT];
        let mut total = 0;
        loop {
            let count = self.wait_ready(&mut events);
            total += count;
            for event in &events[..count] {
                self.wake(Token::from_event_data(event.u64), event.events);
            }
            if count < EVENTS_PER_WAIT {
                break;
            }
        }
        total
    }

    /// One non-blocking `epoll_wait` into `events`; returns how many it filled.
    fn wait_ready(&self, events: &mut [libc::epoll_event; EVENTS_PER_WAIT]) -> usize {
        loop {
            // SAFETY: `events` is a writable array of `EVENTS_PER_WAIT` entries, and the
            // kernel writes at most `maxevents` of them.
            let count = unsafe {
                libc::epoll_wait(
                    self.epoll.as_raw_fd(),
                    events.as_mut_ptr(),
                    EVENTS_PER_WAIT as i32,
                    0,
                )
            };
            if count >= 0 {
                return count as usize;
            }
            if io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                tracing::error!(error = %io::Error::last_os_error(), "epoll_wait failed");
                return 0;
            }
        }
    }

    fn wake(&self, token: Token, events: u32) {
        let (reader, writer) = {
            let mut slots = self.slots.borrow_mut();
            let Some(slot) = slots.get_mut(token.index as usize) else {
                return;
            };
            if !slot.in_use || slot.generation != token.generation {
                return;
            }
            if events & INPUT_END_EVENTS != 0 {
                slot.input_ended = true;
            }
            let reader = if events & READ_EVENTS != 0 {
                slot.readable = true;
                slot.reader.take()
            } else {
                None
            };
            let writer = if events & WRITE_EVENTS != 0 {
                slot.writer.take()
            } else {
                None
            };
            (reader, writer)
        };
        // Woken outside the borrow: a waker may run code that registers again.
        if let Some(reader) = reader {
            reader.wake();
        }
        if let Some(writer) = writer {
            writer.wake();
        }
    }

    /// The poller: harvest, then sleep until the set has something ready, for as long as
    /// the set exists.
    async fn run_poller(readiness: std::rc::Weak<Readiness>) {
        loop {
            let Some(set) = readiness.upgrade() else {
                return;
            };
            set.harvest();
            let descriptor = set.epoll.as_raw_fd();
            drop(set);
            if let Err(error) = super::epoll_wake::readable(descriptor).await {
                tracing::error!(%error, "waiting for socket readiness failed");
                glommio::timer::sleep(RETRY_AFTER_FAILED_WAIT).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;
    use crate::test_support::CountingWaker;

    #[test]
    fn a_ready_socket_wakes_its_reader_once_and_not_its_writer_twice() {
        let readiness = Readiness::new().expect("epoll set");
        let (mut peer, socket) = std::os::unix::net::UnixStream::pair().expect("pair");
        socket.set_nonblocking(true).expect("non-blocking");
        let token = readiness.register(socket.as_raw_fd()).expect("register");
        let (reads, reader) = CountingWaker::new();
        readiness.wait(token, Direction::Read, &reader);
        // Registration reports the socket writable once; nobody waits to write.
        readiness.harvest();
        assert_eq!(reads.count(), 0, "woken before any input");

        peer.write_all(b"ping").expect("write");
        assert!(readiness.harvest() >= 1);
        assert_eq!(reads.count(), 1);
        // The waker was taken: a second harvest with nothing new wakes nobody.
        readiness.harvest();
        assert_eq!(reads.count(), 1);
        readiness.deregister(socket.as_raw_fd(), token);
    }

    #[test]
    fn an_event_for_a_closed_socket_wakes_nobody_in_its_reused_slot() {
        let readiness = Readiness::new().expect("epoll set");
        let first = readiness.allocate();
        readiness.release(first);
        let second = readiness.allocate();
        assert_eq!(first.index, second.index, "the slot is reused");
        assert_ne!(first.generation, second.generation);

        let (reads, reader) = CountingWaker::new();
        readiness.wait(second, Direction::Read, &reader);
        readiness.wake(first, libc::EPOLLIN as u32);
        assert_eq!(reads.count(), 0, "a stale event woke the new socket");
        readiness.wake(second, libc::EPOLLIN as u32);
        assert_eq!(reads.count(), 1);
    }

    #[test]
    fn a_drained_socket_is_readable_again_only_after_an_input_event() {
        let readiness = Readiness::new().expect("epoll set");
        let token = readiness.allocate();
        assert!(readiness.may_read(token), "a new socket's input is unknown");
        readiness.mark_drained(token);
        assert!(!readiness.may_read(token));
        readiness.wake(token, libc::EPOLLOUT as u32);
        assert!(!readiness.may_read(token), "output room is not input");
        readiness.wake(token, libc::EPOLLIN as u32);
        assert!(readiness.may_read(token));
        let (_, reader) = CountingWaker::new();
        readiness.wait(token, Direction::Read, &reader);
        assert!(!readiness.may_read(token), "waiting to read means drained");
        readiness.wake(token, libc::EPOLLRDHUP as u32);
        assert!(readiness.may_read(token), "the peer closing is input");
    }

    #[test]
    fn the_peer_closing_stays_known_after_the_last_data_is_read() {
        let readiness = Readiness::new().expect("epoll set");
        let token = readiness.allocate();
        // The last data and the peer's FIN are harvested together, before the read that
        // takes the data: no event will follow, so the end of input must not be forgotten.
        readiness.wake(token, (libc::EPOLLIN | libc::EPOLLRDHUP) as u32);
        readiness.mark_drained(token);
        assert!(readiness.may_read(token), "the end of input was forgotten");
        let (_, reader) = CountingWaker::new();
        readiness.wait(token, Direction::Read, &reader);
        assert!(
            readiness.may_read(token),
            "a reader waits for an event that never comes"
        );
        readiness.release(token);
        let reused = readiness.allocate();
        readiness.mark_drained(reused);
        assert!(
            !readiness.may_read(reused),
            "a reused slot starts with open input"
        );
    }

    #[test]
    fn output_room_wakes_the_writer_and_not_the_reader() {
        let readiness = Readiness::new().expect("epoll set");
        let token = readiness.allocate();
        let (reads, reader) = CountingWaker::new();
        let (writes, writer) = CountingWaker::new();
        readiness.wait(token, Direction::Read, &reader);
        readiness.wait(token, Direction::Write, &writer);
        readiness.wake(token, libc::EPOLLOUT as u32);
        assert_eq!(writes.count(), 1);
        assert_eq!(reads.count(), 0);
        // A hang-up concerns both; only the reader still waits.
        readiness.wake(token, libc::EPOLLHUP as u32);
        assert_eq!(reads.count(), 1);
        assert_eq!(writes.count(), 1);
    }

    #[test]
    fn a_harvest_larger_than_one_wait_reaches_every_socket() {
        let readiness = Readiness::new().expect("epoll set");
        let sockets = EVENTS_PER_WAIT * 2 + 3;
        let mut pairs = Vec::with_capacity(sockets);
        let mut counters = Vec::with_capacity(sockets);
        for _ in 0..sockets {
            let (peer, socket) = std::os::unix::net::UnixStream::pair().expect("pair");
            let token = readiness.register(socket.as_raw_fd()).expect("register");
            let (reads, reader) = CountingWaker::new();
            readiness.wait(token, Direction::Read, &reader);
            counters.push(reads);
            pairs.push((peer, socket, token));
        }
        readiness.harvest();
        for (peer, _, _) in &mut pairs {
            peer.write_all(b"x").expect("write");
        }
        readiness.harvest();
        let woken = counters.iter().filter(|reads| reads.count() == 1).count();
        assert_eq!(woken, sockets);
        for (_, socket, token) in &pairs {
            readiness.deregister(socket.as_raw_fd(), *token);
        }
    }
}
