//! The exporter: one thread of its own (not a core) that receives finished spans through a
//! bounded channel, gathers them into batches and posts each batch to the OTLP/HTTP
//! endpoint.
//!
//! Invariants:
//! - a core never waits on export: [`offer`] only tries to send, and a full channel drops
//!   the span and counts it ([`dropped_spans`]);
//! - the exporter is installed at most once per process, before the cores start
//!   ([`install`]); until then, and without an endpoint, tracing is off;
//! - a batch holds at most [`BATCH_SPANS_MAX`] spans and waits at most [`EXPORT_INTERVAL`]
//!   after its first span;
//! - a failed post drops its batch and is logged at most once per [`FAILURE_LOG_INTERVAL`]
//!   (with the count of failures since the last line); it never stops the exporter or the
//!   server. Spans dropped on a full channel are logged at the same pace.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::time::{Duration, Instant};

use super::encode::export_request_json;
use super::post::Endpoint;
use super::span::FinishedSpan;

/// Finished spans waiting for the exporter at most; more are dropped.
pub const SPAN_QUEUE_CAPACITY: usize = 8192;
/// Spans in one post at most.
pub const BATCH_SPANS_MAX: usize = 512;
/// How long a span waits for its batch to fill at most.
pub const EXPORT_INTERVAL: Duration = Duration::from_millis(500);
/// How often an unreachable endpoint is logged at most.
pub const FAILURE_LOG_INTERVAL: Duration = Duration::from_secs(60);
/// How long [`flush`] waits for the exporter at most.
pub const FLUSH_WAIT: Duration = Duration::from_secs(2);
/// The name of the exporter's thread.
const EXPORTER_THREAD_NAME: &str = "otlp-exporter";

/// What `--experimental-otlp-traces-*` configure.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportSettings {
    /// The OTLP/HTTP base URL; spans go to `{endpoint}/v1/traces`.
    pub endpoint: url::Url,
    /// The share of new traces recorded, from 0 to 1.
    pub sampling_ratio: f64,
    /// The `service.name` of the resource.
    pub service_name: String,
}

impl ExportSettings {
    /// Whether a new trace is recorded (drawn at the sampling ratio).
    pub fn samples(&self) -> bool {
        self.sampling_ratio >= 1.0 || fastrand::f64() < self.sampling_ratio
    }
}

/// A message to the exporter thread.
enum Message {
    Span(Box<FinishedSpan>),
    /// Post what is gathered now, then answer.
    Flush(SyncSender<()>),
}

/// The installed exporter's side the cores use.
struct Exporter {
    settings: ExportSettings,
    sender: SyncSender<Message>,
}

static EXPORTER: OnceLock<Exporter> = OnceLock::new();
static DROPPED_SPANS: AtomicU64 = AtomicU64::new(0);

/// The export settings, or `None` when tracing is off.
pub fn settings() -> Option<&'static ExportSettings> {
    EXPORTER.get().map(|exporter| &exporter.settings)
}

/// Whether spans are exported.
pub fn enabled() -> bool {
    EXPORTER.get().is_some()
}

/// Spans dropped because the exporter's channel was full.
pub fn dropped_spans() -> u64 {
    DROPPED_SPANS.load(Ordering::Relaxed)
}

/// Starts the exporter thread for `settings` and turns tracing on. A second call changes
/// nothing. Fails only when the thread cannot be started or the endpoint cannot be used
/// (its URL is checked by the configuration first).
pub fn install(settings: ExportSettings) -> Result<(), String> {
    if EXPORTER.get().is_some() {
        return Ok(());
    }
    let endpoint = Endpoint::new(&settings.endpoint)?;
    let (sender, receiver) = std::sync::mpsc::sync_channel(SPAN_QUEUE_CAPACITY);
    let service_name = settings.service_name.clone();
    std::thread::Builder::new()
        .name(EXPORTER_THREAD_NAME.to_owned())
        .spawn(move || export_until_closed(&receiver, &endpoint, &service_name))
        .map_err(|error| format!("could not start the OTLP exporter thread: {error}"))?;
    tracing::info!(endpoint = %settings.endpoint, ratio = settings.sampling_ratio, "exporting traces over OTLP/HTTP");
    // A concurrent install lost the race: its thread ends when its sender is dropped here.
    let _ = EXPORTER.set(Exporter { settings, sender });
    Ok(())
}

/// Hands a finished span to the exporter without waiting; a full channel drops it.
pub fn offer(span: Box<FinishedSpan>) {
    let Some(exporter) = EXPORTER.get() else {
        return;
    };
    match exporter.sender.try_send(Message::Span(span)) {
        Ok(()) => {}
        Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
            DROPPED_SPANS.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Asks the exporter to post what it holds and waits for it, at most [`FLUSH_WAIT`]. For
/// the end of the process, off the cores.
pub fn flush() {
    let Some(exporter) = EXPORTER.get() else {
        return;
    };
    let (done, finished) = std::sync::mpsc::sync_channel(1);
    if exporter.sender.try_send(Message::Flush(done)).is_ok() {
        let _ = finished.recv_timeout(FLUSH_WAIT);
    }
}

/// The exporter thread: gathers spans into batches and posts them, until every sender is
/// gone.
fn export_until_closed(receiver: &Receiver<Message>, endpoint: &Endpoint, service_name: &str) {
    let mut failures = FailureLog::default();
    let mut batch: Vec<FinishedSpan> = Vec::with_capacity(BATCH_SPANS_MAX);
    let mut closed = false;
    while !closed {
        let mut flushed: Option<SyncSender<()>> = None;
        let deadline = Instant::now() + EXPORT_INTERVAL;
        while batch.len() < BATCH_SPANS_MAX && flushed.is_none() {
            let wait = if batch.is_empty() {
                EXPORT_INTERVAL
            } else {
                deadline.saturating_duration_since(Instant::now())
            };
            match receiver.recv_timeout(wait) {
                Ok(Message::Span(span)) => batch.push(*span),
                Ok(Message::Flush(done)) => flushed = Some(done),
                Err(RecvTimeoutError::Timeout) if batch.is_empty() => {}
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => {
                    closed = true;
                    break;
                }
            }
        }
        if !batch.is_empty() {
            let body = export_request_json(service_name, &batch);
            if let Err(error) = endpoint.post_json(&body) {
                failures.record(&error, batch.len());
            }
            batch.clear();
        }
        failures.note_queue_drops();
        if let Some(done) = flushed {
            let _ = done.try_send(());
        }
    }
}

/// The failed posts since the last log line, and when that line was written.
#[derive(Default)]
struct FailureLog {
    last_logged: Option<Instant>,
    failures_since: u64,
    spans_lost_since: u64,
    /// [`dropped_spans`] when the last line about them was written.
    queue_drops_logged: u64,
    last_queue_drops_logged: Option<Instant>,
}

impl FailureLog {
    /// Counts a failed post of `spans` spans; logs it unless a line was written less than
    /// [`FAILURE_LOG_INTERVAL`] ago.
    fn record(&mut self, error: &str, spans: usize) {
        self.failures_since += 1;
        self.spans_lost_since += spans as u64;
        if self
            .last_logged
            .is_some_and(|logged| logged.elapsed() < FAILURE_LOG_INTERVAL)
        {
            return;
        }
        tracing::warn!(
            %error,
            failed_posts = self.failures_since,
            spans_dropped = self.spans_lost_since,
            queue_full_drops = dropped_spans(),
            "could not export traces to the OTLP endpoint; the spans are dropped"
        );
        self.last_logged = Some(Instant::now());
        self.failures_since = 0;
        self.spans_lost_since = 0;
    }

    /// Logs the spans dropped on a full channel since the last such line, unless that line
    /// was written less than [`FAILURE_LOG_INTERVAL`] ago.
    fn note_queue_drops(&mut self) {
        let dropped = dropped_spans();
        if dropped == self.queue_drops_logged
            || self
                .last_queue_drops_logged
                .is_some_and(|logged| logged.elapsed() < FAILURE_LOG_INTERVAL)
        {
            return;
        }
        tracing::warn!(
            spans_dropped = dropped - self.queue_drops_logged,
            capacity = SPAN_QUEUE_CAPACITY,
            "the trace exporter's queue was full; spans were dropped"
        );
        self.queue_drops_logged = dropped;
        self.last_queue_drops_logged = Some(Instant::now());
    }
}
