//! A span being timed: started at one of the places the server traces (a request, a shard
//! command, a call to a remote or an embedder, a task batch), ended when dropped, and then
//! handed to the exporter.
//!
//! Invariants:
//! - with tracing off, every constructor answers [`Span::none`] after one branch: nothing
//!   is allocated, timed or sent;
//! - a span records (and is exported) only when its trace is sampled; an unsampled span
//!   still has a context, so the trace's id and "not sampled" travel on to remotes;
//! - a child span exists only under a current context ([`super::current`]): work no traced
//!   request or batch started is not traced;
//! - a span is exported once, when it is dropped (also when its future is canceled).

use std::borrow::Cow;
use std::future::Future;
use std::time::{SystemTime, UNIX_EPOCH};

use super::context::{SpanContext, SpanId};
use super::exporter;

/// What a span stands for, as OTLP numbers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanKind {
    /// Work inside the process (a shard command, a task batch).
    Internal = 1,
    /// A request this server answers.
    Server = 2,
    /// A request this server sends (to a remote, an embedder).
    Client = 3,
}

/// An attribute's value.
#[derive(Debug, Clone, PartialEq)]
pub enum AttributeValue {
    Text(Cow<'static, str>),
    Integer(i64),
}

impl From<&'static str> for AttributeValue {
    fn from(text: &'static str) -> AttributeValue {
        AttributeValue::Text(Cow::Borrowed(text))
    }
}

impl From<String> for AttributeValue {
    fn from(text: String) -> AttributeValue {
        AttributeValue::Text(Cow::Owned(text))
    }
}

impl From<i64> for AttributeValue {
    fn from(number: i64) -> AttributeValue {
        AttributeValue::Integer(number)
    }
}

/// A span that ended, as the exporter receives it.
#[derive(Debug, Clone, PartialEq)]
pub struct FinishedSpan {
    pub context: SpanContext,
    pub parent_span_id: Option<SpanId>,
    pub name: Cow<'static, str>,
    pub kind: SpanKind,
    pub start_unix_nanos: u64,
    pub end_unix_nanos: u64,
    pub attributes: Vec<(&'static str, AttributeValue)>,
    pub error: bool,
}

/// A span being timed (or nothing, when tracing is off or there is no trace to join).
#[derive(Debug, Default)]
pub struct Span {
    context: Option<SpanContext>,
    recording: Option<Box<FinishedSpan>>,
}

impl Span {
    /// No span: what every constructor answers with tracing off.
    pub const fn none() -> Span {
        Span {
            context: None,
            recording: None,
        }
    }

    /// The span of a request this server answers: a child of the `traceparent` it came with
    /// when that is valid, else the first span of a new trace, sampled at the configured
    /// ratio.
    pub fn server(traceparent: Option<&[u8]>, name: &'static str) -> Span {
        let Some(settings) = exporter::settings() else {
            return Span::none();
        };
        match traceparent.and_then(SpanContext::parse_traceparent) {
            Some(parent) => Span::start(parent.new_child(), Some(parent), name, SpanKind::Server),
            None => {
                let context = SpanContext::new_root(settings.samples());
                Span::start(context, None, name, SpanKind::Server)
            }
        }
    }

    /// The first span of a new trace for work no request asked for (a task batch), sampled
    /// at the configured ratio.
    pub fn root(name: &'static str) -> Span {
        let Some(settings) = exporter::settings() else {
            return Span::none();
        };
        let context = SpanContext::new_root(settings.samples());
        Span::start(context, None, name, SpanKind::Internal)
    }

    /// A child of the current span context ([`super::current`]), or no span without one.
    pub fn child(name: &'static str, kind: SpanKind) -> Span {
        match super::current::current() {
            Some(parent) if exporter::settings().is_some() => {
                Span::start(parent.new_child(), Some(parent), name, kind)
            }
            _ => Span::none(),
        }
    }

    fn start(
        context: SpanContext,
        parent: Option<SpanContext>,
        name: &'static str,
        kind: SpanKind,
    ) -> Span {
        let recording = context.sampled.then(|| {
            Box::new(FinishedSpan {
                context,
                parent_span_id: parent.map(|parent| parent.span_id),
                name: Cow::Borrowed(name),
                kind,
                start_unix_nanos: unix_nanos_now(),
                end_unix_nanos: 0,
                attributes: Vec::new(),
                error: false,
            })
        });
        Span {
            context: Some(context),
            recording,
        }
    }

    /// The span's context, which its children and outgoing requests name as their parent.
    pub fn context(&self) -> Option<SpanContext> {
        self.context
    }

    /// Whether the span is recorded: callers build names and text attributes only then.
    pub fn is_recording(&self) -> bool {
        self.recording.is_some()
    }

    /// Renames the span (a server span learns its route once it is looked up).
    pub fn set_name(&mut self, name: impl Into<Cow<'static, str>>) {
        if let Some(recording) = &mut self.recording {
            recording.name = name.into();
        }
    }

    /// Adds an attribute.
    pub fn set_attribute(&mut self, key: &'static str, value: impl Into<AttributeValue>) {
        if let Some(recording) = &mut self.recording {
            recording.attributes.push((key, value.into()));
        }
    }

    /// Marks the span as failed.
    pub fn set_error(&mut self) {
        if let Some(recording) = &mut self.recording {
            recording.error = true;
        }
    }

    /// Runs `future` with this span as the current context, then ends the span.
    pub async fn run<F: Future>(self, future: F) -> F::Output {
        if self.context.is_none() {
            return future.await;
        }
        let output = super::current::within(self.context, future).await;
        drop(self);
        output
    }
}

impl Drop for Span {
    fn drop(&mut self) {
        if let Some(mut recording) = self.recording.take() {
            recording.end_unix_nanos = unix_nanos_now();
            exporter::offer(recording);
        }
    }
}

/// Nanoseconds since the Unix epoch (0 for a clock set before it).
fn unix_nanos_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
        })
}

/// Runs `call` in a client span `name` (a child of the current context), described by
/// `describe` when the span is recorded, and marked failed when `call` answers an error.
/// Without a current context it runs `call` alone.
pub async fn client_call<Answer, Error>(
    name: &'static str,
    describe: impl FnOnce(&mut Span),
    call: impl Future<Output = Result<Answer, Error>>,
) -> Result<Answer, Error> {
    let mut span = Span::child(name, SpanKind::Client);
    if span.context().is_none() {
        return call.await;
    }
    if span.is_recording() {
        describe(&mut span);
    }
    let outcome = super::current::within(span.context(), call).await;
    if outcome.is_err() {
        span.set_error();
    }
    outcome
}
