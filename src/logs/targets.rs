//! The `target` of the `/logs/*` routes: which events a log destination keeps, written as
//! `tracing` filter directives (`info`, `coresearch=debug`, `coresearch::tasks=trace,warn`).
//!
//! Invariant: an empty text is refused with Meilisearch's help message; any other text is
//! parsed by `tracing_subscriber`'s own directive parser, whose errors Meilisearch shows as
//! they are.

use std::fmt;
use std::str::FromStr;

use tracing::Level;
use tracing_subscriber::filter::{LevelFilter, ParseError, Targets};

/// The filter every destination uses when a request gives no `target`.
pub const DEFAULT_TARGET: &str = "info";

/// The help Meilisearch gives for an empty target.
const EMPTY_TARGET_MESSAGE: &str = "Empty string is not a valid target. If you want to get no logs use `OFF`. Usage: `info`, `meilisearch=info`, or you can write multiple filters in one target: `index_scheduler=info,milli=trace`";

/// Parsed filter directives.
#[derive(Debug, Clone)]
pub struct LogTargets(pub(super) Targets);

/// Why a target text was refused.
#[derive(Debug)]
pub enum TargetsError {
    Empty,
    Directive(ParseError),
}

impl fmt::Display for TargetsError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TargetsError::Empty => formatter.write_str(EMPTY_TARGET_MESSAGE),
            TargetsError::Directive(error) => write!(formatter, "{error}"),
        }
    }
}

impl std::error::Error for TargetsError {}

impl FromStr for LogTargets {
    type Err = TargetsError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text.is_empty() {
            return Err(TargetsError::Empty);
        }
        Targets::from_str(text)
            .map(LogTargets)
            .map_err(TargetsError::Directive)
    }
}

impl LogTargets {
    /// Every target at `level` and above.
    pub fn at_level(level: LevelFilter) -> LogTargets {
        LogTargets(Targets::new().with_default(level))
    }

    /// The filter a request without `target` gets.
    pub fn default_target() -> LogTargets {
        LogTargets::at_level(LevelFilter::INFO)
    }

    /// Whether an event of `target` at `level` passes.
    pub fn keeps(&self, target: &str, level: &Level) -> bool {
        self.0.would_enable(target, level)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_as_meilisearch_parses_them() {
        let targets: LogTargets = "coresearch::tasks=debug,warn".parse().unwrap();
        assert!(targets.keeps("coresearch::tasks::scheduler", &Level::DEBUG));
        assert!(!targets.keeps("coresearch::routes", &Level::INFO));
        assert!(targets.keeps("coresearch::routes", &Level::WARN));
        assert_eq!(
            "".parse::<LogTargets>().unwrap_err().to_string(),
            EMPTY_TARGET_MESSAGE
        );
        assert_eq!(
            "==".parse::<LogTargets>().unwrap_err().to_string(),
            "invalid filter directive: too many '=' in filter directive, expected 0 or 1"
        );
        let off: LogTargets = "OFF".parse().unwrap();
        assert!(!off.keeps("coresearch", &Level::ERROR));
        assert!(LogTargets::default_target().keeps("anything", &Level::INFO));
        assert!(DEFAULT_TARGET.parse::<LogTargets>().is_ok());
    }
}
