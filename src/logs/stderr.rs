//! The stderr destination: a formatting layer (human-readable lines or JSON objects, from
//! `--experimental-logs-mode`) and its filter, which `POST /logs/stderr` replaces at run time.
//!
//! Invariant: the filter never passes the request lines (`REQUEST_LOG_TARGET`): the
//! request log writes those to stderr itself, in batches (see `crate::request_log`), and
//! only asks `tracing` to carry them to a `/logs/stream`.

use tracing::Metadata;
use tracing::subscriber::Interest;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::layer::{Context, Filter};
use tracing_subscriber::{Layer, Registry};

use super::REQUEST_LOG_TARGET;
use super::targets::LogTargets;
use crate::config::LogMode;

/// What the stderr layer lets through: the targets last set, minus the request lines.
#[derive(Debug, Clone)]
pub struct StderrFilter {
    pub(super) targets: LogTargets,
}

impl StderrFilter {
    /// Whether the request log should write its lines to stderr under `targets`.
    pub fn keeps_request_lines(targets: &LogTargets) -> bool {
        targets.keeps(REQUEST_LOG_TARGET, &tracing::Level::INFO)
    }
}

impl<S> Filter<S> for StderrFilter {
    fn enabled(&self, metadata: &Metadata<'_>, context: &Context<'_, S>) -> bool {
        metadata.target() != REQUEST_LOG_TARGET
            && Filter::<S>::enabled(&self.targets.0, metadata, context)
    }

    fn callsite_enabled(&self, metadata: &'static Metadata<'static>) -> Interest {
        if metadata.target() == REQUEST_LOG_TARGET {
            return Interest::never();
        }
        Filter::<S>::callsite_enabled(&self.targets.0, metadata)
    }

    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        Filter::<S>::max_level_hint(&self.targets.0)
    }
}

/// The formatting layer of stderr in `mode`, writing through `writer`; `colors` applies to
/// the human mode only.
pub fn stderr_layer<W>(
    mode: LogMode,
    colors: bool,
    writer: W,
) -> Box<dyn Layer<Registry> + Send + Sync>
where
    W: for<'writer> MakeWriter<'writer> + Send + Sync + 'static,
{
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(writer)
        .with_span_events(FmtSpan::CLOSE);
    match mode {
        LogMode::Human => Box::new(layer.with_ansi(colors)),
        LogMode::Json => Box::new(layer.json().with_ansi(false)),
    }
}
