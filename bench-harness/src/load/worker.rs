//! One connection of a run, on its own thread: it claims slots from the
//! dispatcher, keeps up to `pipeline_depth` requests in flight on one
//! keep-alive TCP connection, reads the responses in order, and counts
//! everything in its own `Tally`.
//!
//! Invariants: every claimed slot ends as exactly one response or one error;
//! when the connection fails, every request in flight on it is counted as an
//! error of that failure's kind and a new connection is opened for the next
//! slot; an open-loop slot is never sent before its scheduled time.
//! The request timeout bounds the wait for the next response byte.

use std::collections::VecDeque;
use std::io::{ErrorKind as IoErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::dispatcher::{Claim, Dispatcher, Slot};
use super::outcome::{ErrorKind, Tally};
use super::picker::{SplitMix64, WeightedPicker};
use super::request::EncodedWorkload;
use super::response::{Parsed, RESPONSE_HEAD_BYTES_MAX, ResponseParser};

/// The receive buffer of a connection; larger than any accepted response head.
pub const READ_BUFFER_BYTES: usize = 2 * RESPONSE_HEAD_BYTES_MAX;
/// The pause after a failed connection attempt, so a dead server is not spun on.
pub const CONNECT_RETRY_DELAY: Duration = Duration::from_millis(10);
/// The timer slack asked of the kernel for this thread's sleeps (precision of
/// open-loop send times).
pub const TIMER_SLACK_NANOSECONDS: u64 = 1_000;

/// What every connection of a run shares.
#[derive(Debug)]
pub struct WorkerContext {
    /// Hands out slots.
    pub dispatcher: Arc<Dispatcher>,
    /// The encoded requests.
    pub workload: Arc<EncodedWorkload>,
    /// Where to connect.
    pub address: SocketAddr,
    /// Requests in flight per connection (1 = no pipelining).
    pub pipeline_depth: usize,
    /// The longest wait for a connection or for the next response byte.
    pub timeout: Duration,
    /// The run's seed; each connection derives its own generator from it.
    pub seed: u64,
}

/// A request written (or about to be written) and not yet answered.
#[derive(Debug, Clone, Copy)]
struct InFlight {
    template: usize,
    slot: Slot,
    sent: Instant,
}

/// Runs connection number `index` until the dispatcher is exhausted and every
/// request in flight is answered or failed.
pub fn run_worker(context: &WorkerContext, index: u64) -> Tally {
    set_timer_slack();
    Worker::new(context, index).run()
}

/// Asks for fine-grained sleeps; failure only costs timing precision, so it is
/// deliberately ignored.
fn set_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes a plain integer and touches no memory of
    // this process; it only changes how the kernel coalesces this thread's timers.
    let _ = unsafe {
        libc::prctl(
            libc::PR_SET_TIMERSLACK,
            TIMER_SLACK_NANOSECONDS as libc::c_ulong,
            0,
            0,
            0,
        )
    };
}

struct Worker<'context> {
    context: &'context WorkerContext,
    picker: WeightedPicker,
    random: SplitMix64,
    tally: Tally,
    stream: Option<TcpStream>,
    /// The read timeout currently set on the socket.
    read_timeout: Option<Duration>,
    buffer: Vec<u8>,
    /// Unparsed bytes are `buffer[start..end]`.
    start: usize,
    end: usize,
    parser: ResponseParser,
    in_flight: VecDeque<InFlight>,
    outgoing: Vec<u8>,
    /// A claimed open-loop slot whose time has not come yet.
    pending: Option<Slot>,
    exhausted: bool,
}

impl<'context> Worker<'context> {
    fn new(context: &'context WorkerContext, index: u64) -> Worker<'context> {
        Worker {
            context,
            picker: WeightedPicker::new(&context.workload.weights)
                .expect("a validated workload has a non-zero total weight"),
            random: SplitMix64::new(context.seed ^ index.wrapping_mul(0xA24B_AED4_963E_E407)),
            tally: Tally::new(context.workload.requests.len()),
            stream: None,
            read_timeout: None,
            buffer: vec![0; READ_BUFFER_BYTES],
            start: 0,
            end: 0,
            parser: ResponseParser::new(),
            in_flight: VecDeque::with_capacity(context.pipeline_depth),
            outgoing: Vec::new(),
            pending: None,
            exhausted: false,
        }
    }

    fn run(mut self) -> Tally {
        loop {
            self.issue_due_requests();
            if !self.outgoing.is_empty() {
                self.flush();
            }
            if self.in_flight.is_empty() {
                if self.exhausted && self.pending.is_none() {
                    return self.tally;
                }
                continue;
            }
            self.receive();
        }
    }

    /// Queues every slot that is due while the pipeline has room; sleeps until
    /// the next slot when nothing is in flight.
    fn issue_due_requests(&mut self) {
        while !self.exhausted && self.in_flight.len() < self.context.pipeline_depth {
            let slot = match self.pending.take() {
                Some(slot) => slot,
                None => match self.context.dispatcher.claim(Instant::now()) {
                    Claim::Slot(slot) => slot,
                    Claim::Exhausted => {
                        self.exhausted = true;
                        return;
                    }
                },
            };
            let now = Instant::now();
            if slot.intended > now {
                if !self.in_flight.is_empty() {
                    self.pending = Some(slot);
                    return;
                }
                std::thread::sleep(slot.intended - now);
            }
            if self.stream.is_none() && !self.connect() {
                self.tally.record_error(ErrorKind::Connect, slot.measured);
                std::thread::sleep(CONNECT_RETRY_DELAY);
                continue;
            }
            let template = self.picker.pick(self.random.next_u64());
            self.outgoing
                .extend_from_slice(&self.context.workload.requests[template]);
            self.in_flight.push_back(InFlight {
                template,
                slot,
                sent: Instant::now(),
            });
        }
    }

    /// Opens the connection; false when that fails.
    fn connect(&mut self) -> bool {
        let Ok(stream) = TcpStream::connect_timeout(&self.context.address, self.context.timeout)
        else {
            return false;
        };
        if stream.set_nodelay(true).is_err()
            || stream
                .set_write_timeout(Some(self.context.timeout))
                .is_err()
        {
            return false;
        }
        self.tally.connections_opened += 1;
        self.stream = Some(stream);
        self.read_timeout = None;
        true
    }

    /// Writes every queued request.
    fn flush(&mut self) {
        let Some(stream) = self.stream.as_mut() else {
            self.fail_connection(ErrorKind::Write);
            return;
        };
        match stream.write_all(&self.outgoing) {
            Ok(()) => self.outgoing.clear(),
            Err(error) if is_timeout(error.kind()) => self.fail_connection(ErrorKind::Timeout),
            Err(_) => self.fail_connection(ErrorKind::Write),
        }
    }

    /// Reads once (bounded by the timeout, or by the pending slot's time) and
    /// completes every response that arrived.
    fn receive(&mut self) {
        let now = Instant::now();
        let until_pending = match self.pending {
            Some(slot) if slot.intended <= now => return,
            Some(slot) => Some(slot.intended - now),
            None => None,
        };
        let waiting_for_slot = until_pending.is_some_and(|wait| wait < self.context.timeout);
        let wait =
            until_pending.map_or(self.context.timeout, |wait| wait.min(self.context.timeout));
        let Some(stream) = self.stream.as_mut() else {
            self.fail_connection(ErrorKind::Read);
            return;
        };
        if self.read_timeout != Some(wait) {
            if stream.set_read_timeout(Some(wait)).is_err() {
                self.fail_connection(ErrorKind::Read);
                return;
            }
            self.read_timeout = Some(wait);
        }
        if self.end == self.buffer.len() && self.start > 0 {
            self.buffer.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        match stream.read(&mut self.buffer[self.end..]) {
            Ok(0) => self.handle_close(),
            Ok(count) => {
                self.end += count;
                self.parse_responses();
            }
            Err(error) if error.kind() == IoErrorKind::Interrupted => {}
            Err(error) if is_timeout(error.kind()) => {
                if !waiting_for_slot {
                    self.fail_connection(ErrorKind::Timeout);
                }
            }
            Err(_) => self.fail_connection(ErrorKind::Read),
        }
    }

    /// Completes every response fully present in the buffer.
    fn parse_responses(&mut self) {
        loop {
            let Some(front) = self.in_flight.front() else {
                if self.start < self.end {
                    // Bytes that answer no request: the stream is out of step.
                    self.tally.add_errors(ErrorKind::Protocol, 1);
                    self.fail_connection(ErrorKind::Protocol);
                }
                break;
            };
            let expects_body = self.context.workload.expects_body[front.template];
            match self
                .parser
                .feed(&self.buffer[self.start..self.end], expects_body)
            {
                Ok(Parsed::Incomplete { consumed }) => {
                    self.start += consumed;
                    break;
                }
                Ok(Parsed::Complete { consumed, done }) => {
                    self.start += consumed;
                    self.complete(done.status);
                    if done.close {
                        self.tally.server_closes += 1;
                        self.fail_connection(ErrorKind::ClosedEarly);
                        break;
                    }
                }
                Err(_) => {
                    self.fail_connection(ErrorKind::Protocol);
                    break;
                }
            }
        }
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }

    /// Counts the response to the oldest request in flight.
    fn complete(&mut self, status: u16) {
        if let Some(request) = self.in_flight.pop_front() {
            self.tally.record_response(
                request.template,
                request.slot,
                request.sent,
                status,
                Instant::now(),
            );
        }
    }

    /// The server closed the connection.
    fn handle_close(&mut self) {
        if let Some(done) = self.parser.finish_at_close() {
            self.complete(done.status);
        }
        self.fail_connection(ErrorKind::ClosedEarly);
    }

    /// Drops the connection; every request still in flight fails with `kind`.
    fn fail_connection(&mut self, kind: ErrorKind) {
        for request in self.in_flight.drain(..) {
            self.tally.record_error(kind, request.slot.measured);
        }
        self.outgoing.clear();
        self.stream = None;
        self.read_timeout = None;
        self.parser.reset();
        self.start = 0;
        self.end = 0;
    }
}

/// Whether an I/O error is a socket timeout.
fn is_timeout(kind: IoErrorKind) -> bool {
    matches!(kind, IoErrorKind::WouldBlock | IoErrorKind::TimedOut)
}
