//! Process-wide logging: a `tracing` subscriber writing to stderr at the level of
//! `--log-level`, as human-readable lines or as JSON objects (`--experimental-logs-mode`).
//!
//! Invariants: [`init`] installs the global subscriber at most once per process (a second
//! call is an error, never a silent replacement); logs never go to stdout.

use std::io::IsTerminal;

use tracing::Subscriber;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::fmt::MakeWriter;

use crate::config::{Config, LogLevel, LogMode};

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

/// Installs the global subscriber described by `config`, writing to stderr.
pub fn init(config: &Config) -> Result<(), LogsError> {
    let colors = std::io::stderr().is_terminal();
    let subscriber = subscriber(
        config.log_level,
        config.experimental_logs_mode,
        colors,
        std::io::stderr,
    );
    tracing::subscriber::set_global_default(subscriber).map_err(LogsError)
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

/// A subscriber at `level` in `mode` that writes through `writer`; `colors` applies to the
/// human mode only.
fn subscriber<W>(
    level: LogLevel,
    mode: LogMode,
    colors: bool,
    writer: W,
) -> Box<dyn Subscriber + Send + Sync>
where
    W: for<'writer> MakeWriter<'writer> + Send + Sync + 'static,
{
    let builder = tracing_subscriber::fmt()
        .with_max_level(level_filter(level))
        .with_writer(writer);
    match mode {
        LogMode::Human => Box::new(builder.with_ansi(colors).finish()),
        LogMode::Json => Box::new(builder.json().with_ansi(false).finish()),
    }
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
        let subscriber = subscriber(level, mode, false, Arc::clone(&file));
        tracing::subscriber::with_default(subscriber, || {
            tracing::error!("an error happened");
            tracing::info!(index = "movies", "an index was created");
            tracing::debug!("a detail");
        });
        let mut output = String::new();
        let mut reader = &*file;
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
