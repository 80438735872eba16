//! Process-wide logging: a `tracing` subscriber writing to stderr at the level of
//! `--log-level`, as human-readable lines or as JSON objects (`--experimental-logs-mode`),
//! and the run-time switches of the `/logs/*` routes ([`LogControl`]): a stream of the logs
//! to one HTTP client, and the stderr filter changed without a restart.
//!
//! Invariants: [`init`] installs the global subscriber at most once per process (a second
//! call is an error, never a silent replacement); logs never go to stdout; the request
//! lines ([`REQUEST_LOG_TARGET`]) reach stderr through the batched request log only, never
//! through `tracing`, which carries them to a stream alone.

pub mod control;
mod profile;
mod stderr;
pub mod stream;
pub mod targets;

#[cfg(test)]
mod control_tests;

use std::io::IsTerminal;

use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::fmt::MakeWriter;

use crate::config::{Config, LogLevel, LogMode};
pub use control::{LogControl, LogSubscriber, LogSwitches, OpenError, StreamMode};
pub use stream::LogStream;
pub use targets::{DEFAULT_TARGET, LogTargets, TargetsError};

/// The `target` the request lines carry (the module that answers requests).
pub const REQUEST_LOG_TARGET: &str = "coresearch::routes";

/// Why logging could not be set up.
#[derive(Debug)]
pub struct LogsError(tracing::subscriber::SetGlobalDefaultError);

impl std::fmt::Display for LogsError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "could not set up logging: {}", self.0)
    }
}

impl std::error::Error for LogsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

/// Installs the global subscriber described by `config`, writing to stderr, and returns
/// the handle of its run-time switches.
pub fn init(config: &Config) -> Result<LogControl, LogsError> {
    let colors = std::io::stderr().is_terminal();
    let (subscriber, control) = subscriber(
        config.log_level,
        config.experimental_logs_mode,
        colors,
        std::io::stderr,
    );
    tracing::subscriber::set_global_default(subscriber).map_err(LogsError)?;
    Ok(control)
}

/// The `tracing` level filter of a `--log-level`.
pub fn level_filter(level: LogLevel) -> LevelFilter {
    match level {
        LogLevel::Off => LevelFilter::OFF,
        LogLevel::Error => LevelFilter::ERROR,
        LogLevel::Warn => LevelFilter::WARN,
        LogLevel::Info => LevelFilter::INFO,
        LogLevel::Debug => LevelFilter::DEBUG,
        LogLevel::Trace => LevelFilter::TRACE,
    }
}

/// A subscriber writing events at `level` to `writer` in `mode` (`colors` applies to the
/// human mode only), with no stream yet, and its control handle.
pub fn subscriber<W>(
    level: LogLevel,
    mode: LogMode,
    colors: bool,
    writer: W,
) -> (LogSubscriber, LogControl)
where
    W: for<'writer> MakeWriter<'writer> + Send + Sync + 'static,
{
    control::assemble(
        stderr::stderr_layer(mode, colors, writer),
        LogTargets::at_level(level_filter(level)),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::io::{Read, Seek};
    use std::sync::Arc;

    use super::*;

    /// What a subscriber at `level` in `mode` writes for three sample events (captured
    /// through a temporary file, which `tracing_subscriber` can write to as `Arc<File>`).
    fn logged(level: LogLevel, mode: LogMode) -> String {
        let file = Arc::new(tempfile::tempfile().expect("tempfile succeeds"));
        let (subscriber, _control) = subscriber(level, mode, false, Arc::clone(&file));
        tracing::subscriber::with_default(subscriber, || {
            tracing::error!("an error happened");
            tracing::info!(index = "movies", "an index was created");
            tracing::debug!("a detail");
        });
        read_all(&file)
    }

    fn read_all(file: &std::fs::File) -> String {
        let mut output = String::new();
        let mut reader = file;
        reader.rewind().expect("rewind succeeds");
        reader
            .read_to_string(&mut output)
            .expect("read_to_string succeeds");
        output
    }

    #[test]
    fn level_keeps_events_at_or_above_it() {
        let info = logged(LogLevel::Info, LogMode::Human);
        assert!(info.contains("an error happened") && info.contains("an index was created"));
        assert!(!info.contains("a detail"), "{info}");
        let error = logged(LogLevel::Error, LogMode::Human);
        assert!(error.contains("an error happened") && !error.contains("an index was created"));
        assert_eq!(logged(LogLevel::Off, LogMode::Human), "");
        assert!(logged(LogLevel::Trace, LogMode::Human).contains("a detail"));
    }

    #[test]
    fn json_mode_writes_one_json_object_per_event() {
        let output = logged(LogLevel::Info, LogMode::Json);
        let lines: Vec<&str> = output.lines().collect();
        assert_eq!(lines.len(), 2, "{output}");
        let event: serde_json::Value = serde_json::from_str(lines[1]).expect("from_str succeeds");
        assert_eq!(event["level"], "INFO");
        assert_eq!(event["fields"]["message"], "an index was created");
        assert_eq!(event["fields"]["index"], "movies");
    }

    #[test]
    fn human_mode_without_colors_has_no_escape_codes() {
        let output = logged(LogLevel::Info, LogMode::Human);
        assert!(!output.contains('\u{1b}'), "{output:?}");
        assert!(output.contains("INFO"));
    }

    #[test]
    fn level_filters_match_log_levels() {
        assert_eq!(level_filter(LogLevel::Off), LevelFilter::OFF);
        assert_eq!(level_filter(LogLevel::Warn), LevelFilter::WARN);
        assert_eq!(level_filter(LogLevel::Trace), LevelFilter::TRACE);
    }
}
