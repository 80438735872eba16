//! [`LogControl`]: the run-time switches of the process's logs, behind the `/logs/*` routes.
//! The `tracing` subscriber is a registry with two destinations, each behind a reloadable
//! filter: stderr (always there, its filter replaced by `POST /logs/stderr`) and the log
//! stream (absent until `POST /logs/stream` installs a formatting or profiling layer that
//! writes into the stream's channel).
//!
//! Invariants:
//! - at most one stream exists: opening a second one while the first runs is refused, as
//!   Meilisearch refuses it; a stream gives the route back when it is dropped (its client
//!   left or `DELETE /logs/stream` ended it) or when `DELETE /logs/stream` removes it — a
//!   stream only ever frees its own place, never a newer stream's;
//! - [`LogSwitches`] always say whether each destination wants the request lines, which the
//!   request log reads on every request without touching the subscriber.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use tracing::level_filters::LevelFilter;
use tracing_subscriber::filter::{Filtered, Targets};
use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::layer::{Layered, SubscriberExt};
use tracing_subscriber::{Layer, Registry, reload};

use super::REQUEST_LOG_TARGET;
use super::profile::ProfileLayer;
use super::stderr::StderrFilter;
use super::stream::{LogStream, StreamSender, StreamWriters, channel};
use super::targets::LogTargets;

/// The stderr destination: its formatting layer behind its filter.
type StderrLayer = Filtered<Box<dyn Layer<Registry> + Send + Sync>, StderrFilter, Registry>;
/// The registry with the stderr destination.
type WithStderr = Layered<reload::Layer<StderrLayer, Registry>, Registry>;
/// The stream destination: a layer while a stream runs, behind the stream's filter.
type StreamLayer = Filtered<Option<Box<dyn Layer<WithStderr> + Send + Sync>>, Targets, WithStderr>;
/// The whole subscriber of the process.
pub type LogSubscriber = Layered<reload::Layer<StreamLayer, WithStderr>, WithStderr>;

/// How a stream writes what it carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamMode {
    /// Lines as stderr writes them in its human mode, colored as Meilisearch colors them
    /// (ANSI escapes, whatever the client).
    Human,
    /// One JSON object per line.
    Json,
    /// `tracing-trace` entries; `memory` adds the resident set size to span entries.
    Profile { memory: bool },
}

/// Why a stream could not be opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpenError {
    /// Another stream runs.
    InUse,
    /// The subscriber is gone or broken (a bug).
    Unavailable(String),
}

/// Whether each destination wants the request lines; read on every request.
#[derive(Debug, Default)]
pub struct LogSwitches {
    stderr_requests: AtomicBool,
    stream_requests: AtomicBool,
}

impl LogSwitches {
    /// Switches with stderr wanting the request lines or not, and no stream.
    pub fn new(stderr_requests: bool) -> LogSwitches {
        LogSwitches {
            stderr_requests: AtomicBool::new(stderr_requests),
            stream_requests: AtomicBool::new(false),
        }
    }

    /// Whether the request log writes its lines to stderr.
    pub fn stderr_requests(&self) -> bool {
        self.stderr_requests.load(Ordering::Relaxed)
    }

    /// Whether the request lines are to be sent to the running stream.
    pub fn stream_requests(&self) -> bool {
        self.stream_requests.load(Ordering::Relaxed)
    }
}

/// The handle of the process's logs, shared by every core.
#[derive(Clone)]
pub struct LogControl {
    shared: Arc<Shared>,
}

struct Shared {
    stderr: reload::Handle<StderrLayer, Registry>,
    stream: reload::Handle<StreamLayer, WithStderr>,
    switches: Arc<LogSwitches>,
    /// The number of the stream that holds the route (0: none).
    owner: AtomicU64,
    /// The number the next stream gets.
    next_stream: AtomicU64,
}

/// Builds the subscriber: stderr through `stderr_layer` filtered by `stderr_targets`, and no
/// stream. The control handle works for as long as the subscriber lives.
pub fn assemble(
    stderr_layer: Box<dyn Layer<Registry> + Send + Sync>,
    stderr_targets: LogTargets,
) -> (LogSubscriber, LogControl) {
    let switches = Arc::new(LogSwitches::new(StderrFilter::keeps_request_lines(
        &stderr_targets,
    )));
    let stderr = stderr_layer.with_filter(StderrFilter {
        targets: stderr_targets,
    });
    let (stderr, stderr_handle) = reload::Layer::new(stderr);
    let no_stream: Option<Box<dyn Layer<WithStderr> + Send + Sync>> = None;
    let stream = no_stream.with_filter(Targets::new().with_default(LevelFilter::OFF));
    let (stream, stream_handle) = reload::Layer::new(stream);
    let subscriber = tracing_subscriber::registry().with(stderr).with(stream);
    let control = LogControl {
        shared: Arc::new(Shared {
            stderr: stderr_handle,
            stream: stream_handle,
            switches,
            owner: AtomicU64::new(0),
            next_stream: AtomicU64::new(1),
        }),
    };
    (subscriber, control)
}

/// Gives the route back when the stream that holds it is dropped.
struct Release {
    control: LogControl,
    number: u64,
}

impl Drop for Release {
    fn drop(&mut self) {
        self.control.release(Some(self.number));
    }
}

impl LogControl {
    /// The switches the request log reads.
    pub fn switches(&self) -> Arc<LogSwitches> {
        self.shared.switches.clone()
    }

    /// Starts the stream of the events `targets` keeps, written in `mode`.
    pub fn open_stream(
        &self,
        targets: LogTargets,
        mode: StreamMode,
    ) -> Result<LogStream, OpenError> {
        let number = self.shared.next_stream.fetch_add(1, Ordering::Relaxed);
        let (sender, receiver) = channel();
        let mut opened = false;
        let shared = &self.shared;
        shared
            .stream
            .modify(|stream| {
                if stream.inner().is_some() {
                    return;
                }
                let wants_requests = targets.keeps(REQUEST_LOG_TARGET, &tracing::Level::INFO);
                *stream.filter_mut() = targets.0;
                *stream.inner_mut() = Some(stream_layer(mode, sender));
                shared.owner.store(number, Ordering::Relaxed);
                shared
                    .switches
                    .stream_requests
                    .store(wants_requests, Ordering::Relaxed);
                opened = true;
            })
            .map_err(|error| OpenError::Unavailable(error.to_string()))?;
        if !opened {
            return Err(OpenError::InUse);
        }
        let release = Release {
            control: self.clone(),
            number,
        };
        Ok(LogStream::new(receiver, Box::new(release)))
    }

    /// Ends the running stream, if any (`DELETE /logs/stream`).
    pub fn close_stream(&self) {
        self.release(None);
    }

    /// Removes the stream layer when stream `number` holds the route (`None`: whichever
    /// does). Its channel's senders go with it, which ends the stream.
    fn release(&self, number: Option<u64>) {
        let shared = &self.shared;
        let outcome = shared.stream.modify(|stream| {
            let owner = shared.owner.load(Ordering::Relaxed);
            if owner == 0 || number.is_some_and(|number| number != owner) {
                return;
            }
            shared
                .switches
                .stream_requests
                .store(false, Ordering::Relaxed);
            shared.owner.store(0, Ordering::Relaxed);
            *stream.filter_mut() = Targets::new().with_default(LevelFilter::OFF);
            *stream.inner_mut() = None;
        });
        if let Err(error) = outcome {
            tracing::error!(%error, "could not free the logs route");
        }
    }

    /// Replaces the filter of stderr (`POST /logs/stderr`).
    pub fn set_stderr_targets(&self, targets: LogTargets) -> Result<(), String> {
        let shared = &self.shared;
        shared
            .stderr
            .modify(|stderr| {
                shared.switches.stderr_requests.store(
                    StderrFilter::keeps_request_lines(&targets),
                    Ordering::Relaxed,
                );
                stderr.filter_mut().targets = targets;
            })
            .map_err(|error| error.to_string())
    }
}

/// The layer of a stream in `mode`, sending through `sender`.
fn stream_layer(
    mode: StreamMode,
    sender: Arc<StreamSender>,
) -> Box<dyn Layer<WithStderr> + Send + Sync> {
    let formatted = tracing_subscriber::fmt::layer()
        .with_writer(StreamWriters(sender.clone()))
        .with_span_events(FmtSpan::CLOSE);
    match mode {
        StreamMode::Human => Box::new(formatted),
        StreamMode::Json => Box::new(formatted.json()),
        StreamMode::Profile { memory } => Box::new(ProfileLayer::new(sender, memory)),
    }
}
