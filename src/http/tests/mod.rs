//! End-to-end tests of [`serve_connection`] over an in-memory scripted stream, with fake
//! timers and a recording handler, driven by `futures_lite::future::block_on`.

#![allow(clippy::unwrap_used)]

mod bodies;
mod connection;
mod cors_and_compression;
mod garbage;
mod split_reads;
mod streamed;
mod timeouts;

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures_lite::io::{AsyncRead, AsyncWrite};
use futures_lite::stream::StreamExt;

use super::{
    BodyError, ConnectionError, ConnectionSummary, Handler, HttpLimits, Method, Request, Response,
    ShutdownSignal, Timer, serve_connection,
};

/// One step of what the peer sends.
#[derive(Debug, Clone)]
pub(super) enum Step {
    /// These bytes are readable (possibly over several reads).
    Send(Vec<u8>),
    /// Reads wait until the output contains this text.
    AwaitOutput(&'static str),
    /// Reads wait forever (a silent peer).
    Stall,
}

/// Text to send.
pub(super) fn send(text: &str) -> Step {
    Step::Send(text.as_bytes().to_vec())
}

/// An in-memory stream: reads follow the script, writes are recorded.
pub(super) struct MockStream {
    script: VecDeque<Step>,
    /// Bytes of the front `Send` step already read.
    sent: usize,
    /// Most bytes one read returns (to split requests across reads).
    pub(super) read_bytes_max: usize,
    /// When not empty, the sizes of successive reads (cycled), within `read_bytes_max`.
    pub(super) read_sizes: Vec<usize>,
    reads: usize,
    /// Most bytes one write accepts (to exercise partial writes).
    pub(super) write_bytes_max: usize,
    /// Writes never complete (a peer that stopped reading).
    pub(super) write_stalls: bool,
    pub(super) output: Rc<RefCell<Vec<u8>>>,
    pub(super) write_calls: Rc<RefCell<usize>>,
}

impl MockStream {
    pub(super) fn new(script: Vec<Step>) -> MockStream {
        MockStream {
            script: script.into(),
            sent: 0,
            read_bytes_max: usize::MAX,
            read_sizes: Vec::new(),
            reads: 0,
            write_bytes_max: usize::MAX,
            write_stalls: false,
            output: Rc::default(),
            write_calls: Rc::default(),
        }
    }
}

impl AsyncRead for MockStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        target: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        loop {
            let read_bytes_max = match self.read_sizes.len() {
                0 => self.read_bytes_max,
                count => self.read_sizes[self.reads % count].min(self.read_bytes_max),
            };
            let output = self.output.clone();
            let sent = self.sent;
            match self.script.front_mut() {
                None => return Poll::Ready(Ok(0)),
                Some(Step::Send(bytes)) => {
                    let remaining = &bytes[sent..];
                    if remaining.is_empty() {
                        self.script.pop_front();
                        self.sent = 0;
                        continue;
                    }
                    let count = remaining.len().min(target.len()).min(read_bytes_max);
                    target[..count].copy_from_slice(&remaining[..count]);
                    self.sent = sent + count;
                    self.reads += 1;
                    return Poll::Ready(Ok(count));
                }
                Some(Step::AwaitOutput(pattern)) => {
                    if String::from_utf8_lossy(&output.borrow()).contains(*pattern) {
                        self.script.pop_front();
                    } else {
                        context.waker().wake_by_ref();
                        return Poll::Pending;
                    }
                }
                Some(Step::Stall) => return Poll::Pending,
            }
        }
    }
}

impl AsyncWrite for MockStream {
    fn poll_write(
        self: Pin<&mut Self>,
        _context: &mut Context<'_>,
        bytes: &[u8],
    ) -> Poll<io::Result<usize>> {
        *self.write_calls.borrow_mut() += 1;
        if self.write_stalls {
            return Poll::Pending;
        }
        let count = bytes.len().min(self.write_bytes_max);
        self.output.borrow_mut().extend_from_slice(&bytes[..count]);
        Poll::Ready(Ok(count))
    }

    fn poll_flush(self: Pin<&mut Self>, _context: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_close(self: Pin<&mut Self>, _context: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// A timer whose sleeps end at once: any wait that would block times out. It records the
/// durations asked for; its clock moves forward by each sleep.
pub(super) struct InstantTimer {
    pub(super) sleeps: RefCell<Vec<Duration>>,
    now: std::cell::Cell<Instant>,
}

impl Default for InstantTimer {
    fn default() -> InstantTimer {
        InstantTimer {
            sleeps: RefCell::default(),
            now: std::cell::Cell::new(Instant::now()),
        }
    }
}

impl Timer for InstantTimer {
    fn now(&self) -> Instant {
        self.now.get()
    }

    async fn sleep(&self, duration: Duration) {
        self.sleeps.borrow_mut().push(duration);
        self.now.set(self.now.get() + duration);
    }
}

/// A timer that never fires.
pub(super) struct NeverTimer;

impl Timer for NeverTimer {
    fn now(&self) -> Instant {
        Instant::now()
    }

    async fn sleep(&self, _duration: Duration) {
        futures_lite::future::pending::<()>().await;
    }
}

/// What the handler saw of one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Seen {
    pub(super) method: Method,
    pub(super) path: String,
    pub(super) query: Option<String>,
    pub(super) body: Result<Vec<u8>, BodyError>,
}

/// Records requests and answers 200 with the body echoed (`/large/<n>` answers `n` bytes;
/// a body error is answered 413/400 with its description).
#[derive(Default)]
pub(super) struct RecordingHandler {
    pub(super) seen: RefCell<Vec<Seen>>,
    /// Triggered when the handler is called, if set.
    pub(super) shutdown_on_call: Option<ShutdownSignal>,
}

impl Handler for RecordingHandler {
    type Sink = crate::http::NoSink;

    fn body_sink(&self, _head: crate::http::RequestHead<'_>) -> Option<Self::Sink> {
        None
    }

    async fn handle(&self, request: Request) -> Response {
        if let Some(signal) = &self.shutdown_on_call {
            signal.trigger();
        }
        self.seen.borrow_mut().push(Seen {
            method: request.method.clone(),
            path: request.path.clone(),
            query: request.query.clone(),
            body: request.body.clone(),
        });
        if let Some(size) = request.path.strip_prefix("/large/") {
            let size: usize = size.parse().unwrap_or(0);
            return Response::json(200, vec![b'a'; size]);
        }
        if request.path == "/image" {
            let mut response = Response::empty(200).with_header("content-type", "image/png");
            response.body = vec![1; 100];
            return response;
        }
        if request.path == "/no-content" {
            return Response::empty(204);
        }
        if let Some(count) = request.path.strip_prefix("/stream/") {
            let count: usize = count.parse().unwrap_or(0);
            let pieces = (1..=count).map(|number| format!("piece-{number}\n").into_bytes());
            let stream = futures_lite::stream::iter(pieces.collect::<Vec<_>>());
            return Response::streamed(200, crate::http::BodyStream::new(stream))
                .with_header("x-accel-buffering", "no");
        }
        if request.path == "/stream-forever" {
            let pieces = vec![b"piece-1\n".to_vec(), b"piece-2\n".to_vec()];
            let stream = futures_lite::stream::iter(pieces).chain(futures_lite::stream::pending());
            return Response::streamed(200, crate::http::BodyStream::new(stream));
        }
        match request.body {
            Ok(body) => Response::json(200, body),
            Err(error @ BodyError::TooLarge { .. }) => Response::json(413, error.to_string()),
            Err(error) => Response::json(400, error.to_string()),
        }
    }
}

/// One parsed answer.
#[derive(Debug, Clone)]
pub(super) struct Answer {
    pub(super) status: u16,
    pub(super) headers: Vec<(String, String)>,
    pub(super) body: Vec<u8>,
}

impl Answer {
    pub(super) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(header_name, _)| header_name.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    pub(super) fn header_values(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(header_name, _)| header_name.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
            .collect()
    }
}

/// Splits the output into answers; `bodiless` lists the indexes of answers to HEAD.
pub(super) fn parse_answers(mut output: &[u8], bodiless: &[usize]) -> Vec<Answer> {
    let mut answers = Vec::new();
    while !output.is_empty() {
        let mut slots = [httparse::EMPTY_HEADER; 64];
        let mut response = httparse::Response::new(&mut slots);
        let length = match response.parse(output).expect("parse succeeds") {
            httparse::Status::Complete(length) => length,
            httparse::Status::Partial => panic!("truncated answer head: {output:?}"),
        };
        let headers: Vec<(String, String)> = response
            .headers
            .iter()
            .map(|header| {
                let value = String::from_utf8(header.value.to_vec()).expect("from_utf8 succeeds");
                (header.name.to_string(), value)
            })
            .collect();
        let status = response.code.expect("`code` holds a value");
        output = &output[length..];
        let content_length: usize = headers
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
            .map(|(_, value)| value.parse().expect("parse succeeds"))
            .unwrap_or(0);
        let body_length = if bodiless.contains(&answers.len()) || status < 200 {
            0
        } else {
            content_length
        };
        answers.push(Answer {
            status,
            headers,
            body: output[..body_length].to_vec(),
        });
        output = &output[body_length..];
    }
    answers
}

/// The result of serving one scripted connection.
pub(super) struct Served {
    pub(super) result: Result<ConnectionSummary, ConnectionError>,
    pub(super) output: Vec<u8>,
    pub(super) write_calls: usize,
}

impl Served {
    pub(super) fn summary(&self) -> &ConnectionSummary {
        self.result.as_ref().expect("as_ref succeeds")
    }

    pub(super) fn answers(&self) -> Vec<Answer> {
        parse_answers(&self.output, &[])
    }
}

/// Serves `stream` to completion.
pub(super) fn serve_stream<T: Timer>(
    stream: MockStream,
    limits: &HttpLimits,
    handler: &RecordingHandler,
    timer: &T,
    shutdown: &ShutdownSignal,
) -> Served {
    let output = stream.output.clone();
    let write_calls = stream.write_calls.clone();
    let result = futures_lite::future::block_on(serve_connection(
        stream, None, limits, handler, timer, shutdown,
    ));
    let output = output.borrow().clone();
    let write_calls = *write_calls.borrow();
    Served {
        result,
        output,
        write_calls,
    }
}

/// Serves a script with default limits, a timer that never fires and no shutdown.
pub(super) fn serve(script: Vec<Step>, handler: &RecordingHandler) -> Served {
    serve_stream(
        MockStream::new(script),
        &HttpLimits::default(),
        handler,
        &NeverTimer,
        &ShutdownSignal::new(),
    )
}
