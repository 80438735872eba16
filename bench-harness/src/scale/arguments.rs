//! The command-line options of `search_at_scale` and their checks.
//!
//! Invariants: after `check`, the sizes are strictly ascending and positive, the connection
//! counts strictly ascending and within the load driver's range, and every count and duration
//! the run divides by or loops on is positive; whether the sizes fit in the copies is checked
//! once the dataset is read (`crate::scale::ladder::check_available`).

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

use super::ladder::check_sizes;
use crate::compare::arguments::{MixArguments, ServerArguments};
use crate::compare::server::absolute;
use crate::load::duration_arg::parse_duration;
use crate::load::runner::CONNECTIONS_MAX;

/// The most copies of the dataset (ids grow by a million per copy).
pub const COPIES_MAX: u64 = 1_000;

/// Search cost as an index grows, coresearch and Meilisearch side by side.
#[derive(Debug, Clone, Parser)]
#[command(name = "search_at_scale", version)]
pub struct Arguments {
    #[command(flatten)]
    pub servers: ServerArguments,
    #[command(flatten)]
    pub mix: MixArguments,
    /// Copies of the dataset the documents come from (copy k ≥ 1: ids + k × 1,000,000 and
    /// ` edition{k}` after the summary)
    #[arg(long, default_value_t = 3)]
    pub copies: u64,
    /// Index sizes at which search is measured, strictly ascending
    #[arg(long, value_delimiter = ',', default_value = "200000,886323,2658969")]
    pub sizes: Vec<u64>,
    /// Documents per NDJSON payload
    #[arg(long, default_value_t = 100_000)]
    pub batch: u64,
    /// Connection counts of the closed-loop search runs at each size, strictly ascending
    #[arg(long, value_delimiter = ',', default_value = "1,16")]
    pub connections: Vec<usize>,
    /// Measured time of each search run, e.g. 20s
    #[arg(long, value_parser = parse_duration, default_value = "20s")]
    pub duration: Duration,
    /// Unmeasured warm-up before each search run
    #[arg(long, value_parser = parse_duration, default_value = "2s")]
    pub warmup: Duration,
    /// Longest wait for a search response
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    pub timeout: Duration,
    /// An argument appended to coresearch's command line (repeat for more)
    #[arg(
        long = "coresearch-argument",
        value_name = "ARGUMENT",
        allow_hyphen_values = true
    )]
    pub coresearch_arguments: Vec<String>,
    /// An argument appended to Meilisearch's command line (repeat for more), e.g.
    /// --meilisearch-argument=--experimental-legacy-search-default
    #[arg(
        long = "meilisearch-argument",
        value_name = "ARGUMENT",
        allow_hyphen_values = true
    )]
    pub meilisearch_arguments: Vec<String>,
    /// Measure right after the tasks, without waiting for the server to go quiet
    #[arg(long)]
    pub no_settle: bool,
    /// Where the servers' data directories, logs, load reports, the query mix and
    /// results.json go (each server's own directory is emptied when it starts)
    #[arg(long, default_value = "search-at-scale-work")]
    pub work_dir: PathBuf,
    /// Keep the servers' data directories after the run
    #[arg(long)]
    pub keep_data: bool,
    /// Write the markdown report (with the command line) here too
    #[arg(long)]
    pub output: Option<PathBuf>,
}

impl Arguments {
    /// Checks the options and makes every path the servers see absolute.
    pub fn resolve(&mut self) -> Result<(), String> {
        self.check()?;
        self.work_dir = absolute(&self.work_dir)?;
        self.servers.resolve()
    }

    /// Why the options cannot be used, if they cannot.
    pub fn check(&self) -> Result<(), String> {
        check_sizes(&self.sizes)?;
        if !(1..=COPIES_MAX).contains(&self.copies) {
            return Err(format!("--copies must be 1..={COPIES_MAX}"));
        }
        if self.batch == 0 || self.mix.queries == 0 {
            return Err("--batch and --queries must be at least 1".to_string());
        }
        let connections_in_range = self
            .connections
            .iter()
            .all(|count| (1..=CONNECTIONS_MAX).contains(count));
        let ascending = self.connections.windows(2).all(|pair| pair[0] < pair[1]);
        if self.connections.is_empty() || !connections_in_range || !ascending {
            return Err(format!(
                "--connections must be strictly ascending counts in 1..={CONNECTIONS_MAX}"
            ));
        }
        if self.duration.is_zero() || self.timeout.is_zero() {
            return Err("--duration and --timeout must be positive".to_string());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(extra: &[&str]) -> Result<Arguments, clap::Error> {
        let base = ["search_at_scale", "--coresearch-bin", "/bin/sh"];
        Arguments::try_parse_from(base.iter().chain(extra))
    }

    #[test]
    fn the_defaults_are_the_issue_ladder_at_one_and_sixteen_connections() {
        let arguments = parse(&[]).expect("the defaults parse");
        assert_eq!(arguments.sizes, [200_000, 886_323, 2_658_969]);
        assert_eq!(arguments.connections, [1, 16]);
        assert_eq!(
            (arguments.copies, arguments.batch, arguments.mix.queries),
            (3, 100_000, 2000)
        );
        assert_eq!(arguments.duration, Duration::from_secs(20));
        assert!(arguments.check().is_ok());
    }

    #[test]
    fn server_arguments_may_start_with_hyphens_and_repeat() {
        let arguments = parse(&[
            "--meilisearch-argument",
            "--experimental-legacy-search-default",
            "--meilisearch-argument=--x=1",
            "--coresearch-argument",
            "-v",
        ])
        .expect("the arguments parse");
        assert_eq!(
            arguments.meilisearch_arguments,
            ["--experimental-legacy-search-default", "--x=1"]
        );
        assert_eq!(arguments.coresearch_arguments, ["-v"]);
    }

    #[test]
    fn unusable_lists_and_counts_are_refused() {
        for extra in [
            &["--sizes", "10,5"][..],
            &["--connections", "16,1"],
            &["--connections", "0"],
            &["--copies", "0"],
            &["--batch", "0"],
            &["--duration", "0s"],
        ] {
            let arguments = parse(extra).expect("the arguments parse");
            assert!(arguments.check().is_err(), "{extra:?} was accepted");
        }
    }
}
