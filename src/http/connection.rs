//! [`serve_connection`]: the request loop of one HTTP/1.x connection.
//!
//! Per request: wait for a head (idle timeout, then header read timeout), parse it, read the
//! body (100-continue, limits, decoding), answer CORS preflights and unacceptable
//! `Accept-Encoding` here, call the handler otherwise, then compress and queue the answer.
//! Pipelined answers are queued and written together, before the connection waits for
//! input again or before a handler has to wait. A streamed answer is written as its body
//! is produced (see [`super::streamed`]); the next request waits until it ends.
//!
//! Invariants: answers leave in request order; a connection whose byte stream may be out of
//! sync (body not read, broken framing, protocol error) is closed after its answer; the
//! handler is never called for a request that could not be framed.

use std::io;
use std::net::SocketAddr;
use std::pin::pin;

use futures_lite::future::poll_once;
use futures_lite::io::{AsyncRead, AsyncWrite};

use super::body::{BodyConsumer, BodyOutcome, body_buffer, read_chunked, read_length};
use super::compress;
use super::cors;
use super::deadline::LazyDeadline;
use super::decode::{ContentCoding, content_coding, decode};
use super::head::{Framing, HeadError, ParsedHead, parse_head};
use super::io::{ReadOutcome, Wire, WriteFailure};
use super::limits::{HttpLimits, OUTPUT_FLUSH_BYTES};
use super::negotiate::{self, Encoding, SUPPORTED_ENCODINGS_TEXT};
use super::request::{BodyError, Method, Request};
use super::response::Response;
use super::serialize::{
    BodyFraming, HeadExtras, write_bare_status, write_continue, write_response_head,
};
use super::shutdown::{ShutdownSignal, ShutdownWait};
use super::sink::{BodySink, RequestHead, SpooledBody};
use super::stream_body::StreamingConsumer;
use super::streamed::{BodyStream, StreamEnd, send_streamed};
use super::timeout::with_timeout;
use super::{Handler, Timer};

/// Why a connection ended without an I/O error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseReason {
    /// The peer closed its side between requests (or in the middle of a head).
    PeerClosed,
    /// The request asked for it (`Connection: close`, HTTP/1.0 without keep-alive).
    RequestedClose,
    /// No request started within the idle timeout (the header read timeout for the first
    /// request of a connection).
    IdleTimeout,
    /// A started head did not complete within the header read timeout (answered 408).
    HeaderTimeout,
    /// A head or a chunked framing was refused with this status.
    ProtocolError(u16),
    /// A body could not be read whole (too large, incomplete, unsupported coding); the
    /// answer was sent and the connection closed, since the stream is out of sync.
    BodyNotConsumed,
    /// The shutdown signal fired.
    Shutdown,
}

/// What happened on a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionSummary {
    pub peer: Option<SocketAddr>,
    /// Requests answered (handler calls, preflights and 406s; not protocol errors).
    pub requests: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub close_reason: CloseReason,
}

/// Why a connection ended abnormally.
#[derive(Debug)]
pub enum ConnectionError {
    /// Reading or writing the stream failed (reset, broken pipe, TLS error...).
    Io(io::Error),
    /// The peer did not take response bytes within the write timeout.
    WriteTimeout,
}

impl std::fmt::Display for ConnectionError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnectionError::Io(error) => write!(formatter, "connection I/O error: {error}"),
            ConnectionError::WriteTimeout => formatter.write_str("peer stopped reading"),
        }
    }
}

impl std::error::Error for ConnectionError {}

impl From<io::Error> for ConnectionError {
    fn from(error: io::Error) -> Self {
        ConnectionError::Io(error)
    }
}

impl From<WriteFailure> for ConnectionError {
    fn from(failure: WriteFailure) -> Self {
        match failure {
            WriteFailure::Io(error) => ConnectionError::Io(error),
            WriteFailure::TimedOut => ConnectionError::WriteTimeout,
        }
    }
}

/// Serves HTTP/1.x requests on `stream` until the connection ends.
///
/// `peer` is only reported back in the summary. On `shutdown`, the request being read or
/// answered completes (its answer says `connection: close`) and the connection closes; an
/// idle connection closes at once.
pub async fn serve_connection<S, H, T>(
    stream: S,
    peer: Option<SocketAddr>,
    limits: &HttpLimits,
    handler: &H,
    timer: &T,
    shutdown: &ShutdownSignal,
) -> Result<ConnectionSummary, ConnectionError>
where
    S: AsyncRead + AsyncWrite,
    H: Handler,
    T: Timer,
{
    let stream = pin!(stream);
    let mut connection = Connection {
        wire: Wire::new(stream, timer),
        limits,
        shutdown,
        idle_deadline: LazyDeadline::new(timer),
        shutdown_wait: shutdown.wait(),
        requests: 0,
    };
    let close_reason = connection.run(handler).await?;
    connection.wire.close(limits.write_timeout).await;
    if matches!(
        close_reason,
        CloseReason::BodyNotConsumed | CloseReason::ProtocolError(_)
    ) {
        connection
            .wire
            .discard_input(limits.linger_bytes_max, limits.linger_timeout)
            .await;
    }
    Ok(ConnectionSummary {
        peer,
        requests: connection.requests,
        bytes_read: connection.wire.bytes_read,
        bytes_written: connection.wire.bytes_written,
        close_reason,
    })
}

struct Connection<'a, S, T> {
    wire: Wire<'a, S, T>,
    limits: &'a HttpLimits,
    shutdown: &'a ShutdownSignal,
    /// The deadline of the wait for the next request, kept across requests so that its
    /// timer is not re-armed per request.
    idle_deadline: LazyDeadline<'a, T>,
    /// This connection's registration with the shutdown signal, kept across requests.
    shutdown_wait: ShutdownWait<'a>,
    requests: u64,
}

/// A response with a streamed body, on its way out.
struct Streamed<'a> {
    response: &'a Response,
    stream: BodyStream,
    /// CORS of a non-preflight answer: `Some(request_has_origin)`.
    simple_cors: Option<bool>,
    /// Why the connection ends after this answer, if it does.
    close_reason: Option<CloseReason>,
    is_http_1_0: bool,
}

/// A request head, its body and what the answer must respect.
struct Exchange {
    head: ParsedHead,
    body: Result<Vec<u8>, BodyError>,
    /// The body as the handler's sink stored it.
    spooled: Option<SpooledBody>,
    /// The stream is out of sync after this request: close after answering.
    body_not_consumed: bool,
}

impl<'a, S: AsyncRead + AsyncWrite, T: Timer> Connection<'a, S, T> {
    async fn run<H: Handler>(&mut self, handler: &H) -> Result<CloseReason, ConnectionError> {
        loop {
            let head = match parse_head(self.wire.buffered(), self.limits) {
                Ok(Some(head)) => head,
                Ok(None) => match self.wait_for_head().await? {
                    None => continue,
                    Some(reason) => return Ok(reason),
                },
                Err(error) => return self.refuse_head(error).await,
            };
            self.wire.consume(head.length);
            let exchange = match self.read_body(head, handler).await? {
                Ok(exchange) => exchange,
                Err(reason) => return Ok(reason),
            };
            if let Some(reason) = self.answer(exchange, handler).await? {
                return Ok(reason);
            }
        }
    }

    /// Reads until a head may be complete. `Some` when the connection must end.
    async fn wait_for_head(&mut self) -> Result<Option<CloseReason>, ConnectionError> {
        if !self.wire.output.is_empty() {
            self.wire.flush(self.limits.write_timeout).await?;
        }
        if self.wire.buffered().is_empty() {
            return self.wait_idle().await;
        }
        let limits: &'a HttpLimits = self.limits;
        let timer: &'a T = self.wire.timer();
        let wire = &mut self.wire;
        let read_head = async move {
            loop {
                let outcome = wire
                    .fill(limits.header_bytes_max, limits.header_read_timeout)
                    .await?;
                if !matches!(outcome, ReadOutcome::Data(_)) {
                    return Ok::<_, io::Error>(outcome);
                }
                if !matches!(parse_head(wire.buffered(), limits), Ok(None)) {
                    return Ok(ReadOutcome::Data(0));
                }
            }
        };
        let outcome = with_timeout(timer, limits.header_read_timeout, read_head).await;
        match outcome {
            Some(Ok(ReadOutcome::Data(_))) => Ok(None),
            Some(Ok(ReadOutcome::Closed)) => Ok(Some(CloseReason::PeerClosed)),
            Some(Ok(ReadOutcome::TimedOut | ReadOutcome::ShutDown)) | None => {
                self.send_bare_status(408).await?;
                Ok(Some(CloseReason::HeaderTimeout))
            }
            Some(Err(error)) => Err(error.into()),
        }
    }

    /// Waits for the first byte of the next request.
    async fn wait_idle(&mut self) -> Result<Option<CloseReason>, ConnectionError> {
        if self.shutdown.is_triggered() {
            return Ok(Some(CloseReason::Shutdown));
        }
        // A new connection gets the header timeout for its first byte (as actix's client
        // request timeout), so silent connections are dropped quickly.
        let timeout = if self.requests == 0 && self.wire.bytes_read == 0 {
            self.limits.header_read_timeout
        } else {
            self.limits.idle_timeout
        };
        self.idle_deadline.set(timeout);
        let outcome = self
            .wire
            .fill_until(
                self.limits.header_bytes_max,
                &mut self.idle_deadline,
                &mut self.shutdown_wait,
            )
            .await?;
        Ok(match outcome {
            ReadOutcome::Data(_) => None,
            ReadOutcome::Closed => Some(CloseReason::PeerClosed),
            ReadOutcome::TimedOut => Some(CloseReason::IdleTimeout),
            ReadOutcome::ShutDown => Some(CloseReason::Shutdown),
        })
    }

    async fn refuse_head(&mut self, error: HeadError) -> Result<CloseReason, ConnectionError> {
        self.send_bare_status(error.status()).await?;
        Ok(CloseReason::ProtocolError(error.status()))
    }

    /// Queues and writes an empty-bodied status that closes the connection.
    async fn send_bare_status(&mut self, status: u16) -> Result<(), ConnectionError> {
        write_bare_status(&mut self.wire.output, status);
        self.wire.flush(self.limits.write_timeout).await?;
        Ok(())
    }

    /// Reads the body of `head`, into the handler's sink when it streams it. `Err` when the
    /// connection ends (framing refused).
    async fn read_body<H: Handler>(
        &mut self,
        head: ParsedHead,
        handler: &H,
    ) -> Result<Result<Exchange, CloseReason>, ConnectionError> {
        let limit = self.limits.payload_bytes_max;
        let has_body = !matches!(head.framing, Framing::Empty | Framing::Length(0));
        let coding = match content_coding(head.headers.get("content-encoding")) {
            Ok(coding) => coding,
            Err(error) => {
                return Ok(Ok(Exchange {
                    head,
                    body: Err(error),
                    spooled: None,
                    body_not_consumed: has_body,
                }));
            }
        };
        if let Framing::Length(length) = head.framing {
            if length > limit {
                return Ok(Ok(Exchange {
                    head,
                    body: Err(BodyError::TooLarge {
                        content_length: Some(length),
                        limit,
                    }),
                    spooled: None,
                    body_not_consumed: true,
                }));
            }
        }
        let buffered = self.wire.buffered().len() as u64;
        let body_already_here =
            matches!(head.framing, Framing::Length(length) if length <= buffered);
        if head.expects_continue && has_body && !body_already_here {
            write_continue(&mut self.wire.output);
            self.wire.flush(self.limits.write_timeout).await?;
        }
        let sink = if has_body {
            handler.body_sink(RequestHead {
                method: &head.method,
                path: &head.path,
                headers: &head.headers,
            })
        } else {
            None
        };
        let (body, spooled, outcome) = self.read_body_contents(&head, sink, coding, limit).await?;
        let (body, body_not_consumed) = match outcome {
            BodyOutcome::Complete => (body, false),
            BodyOutcome::Failed(error) => (Err(error), true),
            BodyOutcome::MalformedFraming => {
                self.send_bare_status(400).await?;
                return Ok(Err(CloseReason::ProtocolError(400)));
            }
        };
        Ok(Ok(Exchange {
            head,
            body,
            spooled,
            body_not_consumed,
        }))
    }

    /// Reads the body of `head`: whole and decoded when no sink takes it, otherwise streamed
    /// into the sink. The body is empty when its reading did not complete.
    async fn read_body_contents<Sink: BodySink>(
        &mut self,
        head: &ParsedHead,
        sink: Option<Sink>,
        coding: ContentCoding,
        limit: u64,
    ) -> Result<(Result<Vec<u8>, BodyError>, Option<SpooledBody>, BodyOutcome), ConnectionError>
    {
        match sink {
            None => {
                let announced = match head.framing {
                    Framing::Length(length) => length,
                    _ => 0,
                };
                let mut buffer = body_buffer(announced);
                let outcome = self.read_framed(&head.framing, &mut buffer).await?;
                let body = match outcome {
                    BodyOutcome::Complete => decode(buffer, coding, limit),
                    _ => Ok(Vec::new()),
                };
                Ok((body, None, outcome))
            }
            Some(sink) => {
                let mut consumer = StreamingConsumer::new(sink, coding, limit);
                let outcome = self.read_framed(&head.framing, &mut consumer).await?;
                Ok(match outcome {
                    BodyOutcome::Complete => match consumer.finish().await {
                        Ok(spooled) => (Ok(Vec::new()), Some(spooled), outcome),
                        Err(error) => (Err(error), None, outcome),
                    },
                    _ => (Ok(Vec::new()), None, outcome),
                })
            }
        }
    }

    /// Reads a body framed as `framing` into `consumer`.
    async fn read_framed(
        &mut self,
        framing: &Framing,
        consumer: &mut impl BodyConsumer,
    ) -> Result<BodyOutcome, ConnectionError> {
        Ok(match framing {
            Framing::Empty => BodyOutcome::Complete,
            Framing::Length(length) => {
                read_length(&mut self.wire, *length, self.limits, consumer).await?
            }
            Framing::Chunked => read_chunked(&mut self.wire, self.limits, consumer).await?,
        })
    }

    /// Answers one request. `Some` when the connection must end after it.
    async fn answer<H: Handler>(
        &mut self,
        exchange: Exchange,
        handler: &H,
    ) -> Result<Option<CloseReason>, ConnectionError> {
        let Exchange {
            head,
            body,
            spooled,
            body_not_consumed,
        } = exchange;
        let is_head_method = head.method == Method::Head;
        let encoding = negotiate::negotiate(head.headers.get_all("accept-encoding"));
        let request_has_origin = head.headers.contains("origin");
        let (mut response, encoding, simple_cors) = match encoding {
            None => (not_acceptable(), Encoding::Identity, None),
            Some(encoding) => match cors::preflight(&head.method, &head.headers) {
                Some(preflight) => (preflight, encoding, None),
                None => {
                    let request = Request {
                        method: head.method,
                        path: head.path,
                        query: head.query,
                        headers: head.headers,
                        body,
                        spooled,
                    };
                    let response = self.call(handler, request).await?;
                    (response, encoding, Some(request_has_origin))
                }
            },
        };
        self.requests += 1;
        let close_reason = if body_not_consumed {
            Some(CloseReason::BodyNotConsumed)
        } else if self.shutdown.is_triggered() {
            Some(CloseReason::Shutdown)
        } else if !head.keep_alive {
            Some(CloseReason::RequestedClose)
        } else {
            None
        };
        if let Some(stream) = response.stream.take() {
            if !is_head_method {
                let streamed = Streamed {
                    response: &response,
                    stream,
                    simple_cors,
                    close_reason,
                    is_http_1_0: head.is_http_1_0,
                };
                return self.answer_streamed(streamed).await;
            }
        }
        let extras = HeadExtras {
            simple_cors,
            content_encoding: compress_body(&mut response, encoding),
            connection: match (close_reason.is_some(), head.is_http_1_0) {
                (true, _) => Some("close"),
                (false, true) => Some("keep-alive"),
                (false, false) => None,
            },
            framing: BodyFraming::Length,
        };
        self.queue_response(&response, is_head_method, extras)
            .await?;
        if close_reason.is_some() || self.wire.output.len() >= OUTPUT_FLUSH_BYTES {
            self.wire.flush(self.limits.write_timeout).await?;
        }
        Ok(close_reason)
    }

    /// Sends a response whose body is streamed: chunked to an HTTP/1.1 peer, raw until the
    /// close to an HTTP/1.0 one. `Some` when the connection must end after it.
    async fn answer_streamed(
        &mut self,
        streamed: Streamed<'_>,
    ) -> Result<Option<CloseReason>, ConnectionError> {
        let chunked = !streamed.is_http_1_0;
        let closes = streamed.close_reason.is_some() || !chunked;
        let extras = HeadExtras {
            simple_cors: streamed.simple_cors,
            content_encoding: None,
            connection: closes.then_some("close"),
            framing: if chunked {
                BodyFraming::Chunked
            } else {
                BodyFraming::UntilClose
            },
        };
        write_response_head(&mut self.wire.output, streamed.response, extras);
        let end = send_streamed(
            &mut self.wire,
            &mut self.shutdown_wait,
            self.limits,
            streamed.stream,
            chunked,
        )
        .await?;
        Ok(match end {
            StreamEnd::Finished if chunked => streamed.close_reason,
            StreamEnd::Finished => {
                Some(streamed.close_reason.unwrap_or(CloseReason::RequestedClose))
            }
            StreamEnd::PeerClosed => Some(CloseReason::PeerClosed),
            StreamEnd::ShutDown => Some(CloseReason::Shutdown),
        })
    }

    /// Calls the handler; pending answers are written while it works.
    async fn call<H: Handler>(
        &mut self,
        handler: &H,
        request: Request,
    ) -> Result<Response, ConnectionError> {
        let mut future = pin!(handler.handle(request));
        if let Some(response) = poll_once(future.as_mut()).await {
            return Ok(response);
        }
        if !self.wire.output.is_empty() {
            self.wire.flush(self.limits.write_timeout).await?;
        }
        Ok(future.await)
    }

    /// Queues the head and body of `response`; big bodies are written without a copy.
    async fn queue_response(
        &mut self,
        response: &Response,
        is_head_method: bool,
        extras: HeadExtras<'_>,
    ) -> Result<(), ConnectionError> {
        write_response_head(&mut self.wire.output, response, extras);
        if is_head_method || response.body.is_empty() {
            return Ok(());
        }
        if response.body.len() <= super::limits::RESPONSE_COPY_BYTES_MAX {
            self.wire.output.extend_from_slice(&response.body);
            return Ok(());
        }
        self.wire.flush(self.limits.write_timeout).await?;
        self.wire
            .write_all(&response.body, self.limits.write_timeout)
            .await?;
        Ok(())
    }
}

/// The 406 actix's `Compress` answers when no acceptable coding exists.
fn not_acceptable() -> Response {
    Response {
        status: 406,
        headers: vec![("vary".into(), "Accept-Encoding".to_string())],
        body: SUPPORTED_ENCODINGS_TEXT.as_bytes().to_vec(),
        stream: None,
    }
}

/// Compresses the body in place when the coding and the response allow it; returns the
/// coding used.
fn compress_body(response: &mut Response, encoding: Encoding) -> Option<Encoding> {
    if encoding == Encoding::Identity {
        return None;
    }
    let compressible = compress::is_compressible(
        response.status,
        response.body.len(),
        response.header("content-type"),
        response.header("content-encoding").is_some(),
    );
    if !compressible {
        return None;
    }
    response.body = compress::compress(&response.body, encoding)?;
    Some(encoding)
}
