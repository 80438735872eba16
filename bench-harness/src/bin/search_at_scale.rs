//! `search_at_scale`: search cost as an index grows, coresearch and Meilisearch side by side
//! on the same machine, in one run (issue #71 item 4).
//!
//! For each given server binary in turn (coresearch first, then Meilisearch), with a fresh
//! data directory: create index `pypi` (`name` and `summary` searchable; `year`, `rank` and
//! `stars` filterable and sortable; primary key `id`), then climb the ladder `--sizes`: send
//! the next documents in NDJSON payloads of `--batch`, wait until every task succeeded and the
//! index holds exactly the size, wait for the server to go quiet (unless `--no-settle`), and
//! measure the data directory, a closed-loop search load at each of `--connections` for
//! `--duration` after `--warmup`, and the server's resident memory now and at its peak. The
//! documents are the dataset's lines followed by `--copies - 1` copies of them, copy k under
//! ids shifted by k × 1,000,000 and with ` edition{k}` after its summary, made payload by
//! payload. The query mix is drawn from the dataset itself (copy 0) with `--queries` and
//! `--seed`, the same for every size and both servers, and written to
//! `WORK_DIR/queries.ndjson`.
//!
//! Prints one markdown table per size (coresearch, Meilisearch, ratio) and the growth of each
//! side's p99 from the smallest size to the largest, under the command line and every
//! parameter; writes it to `--output` and the raw figures to `WORK_DIR/results.json`; keeps
//! each load's detailed report as JSON in the server's work directory. The harness builds
//! nothing itself.
//!
//! The full run (about 2.7 M documents; on a quiet machine):
//!
//! ```sh
//! cargo build --release -p coresearch --bin coresearch
//! cargo build --release -p bench-harness --bin search_at_scale
//! target/release/search_at_scale \
//!     --coresearch-bin target/release/coresearch \
//!     --meilisearch-bin /work/meili/target/release/meilisearch \
//!     --output tuning/results/search-at-scale-DATE.md
//! ```
//!
//! Exit status: 0 after a complete run, 1 when a side failed, 2 for unusable options
//! (including sizes the copies cannot reach).

use std::process::ExitCode;

use bench_harness::scale::arguments::Arguments;
use bench_harness::scale::run::{RunError, run};
use clap::Parser;

/// The exit status for unusable options.
const EXIT_USAGE: u8 = 2;
/// The exit status when a side could not be measured.
const EXIT_FAILURE: u8 = 1;

/// Reports `error` and answers exit status `status`.
fn fail(status: u8, error: &str) -> ExitCode {
    eprintln!("search_at_scale: {error}");
    ExitCode::from(status)
}

fn main() -> ExitCode {
    let mut arguments = Arguments::parse();
    if let Err(error) = arguments.resolve() {
        return fail(EXIT_USAGE, &error);
    }
    match run(&arguments) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => fail(EXIT_FAILURE, "a side failed (see the report)"),
        Err(RunError::Usage(error)) => fail(EXIT_USAGE, &error),
        Err(RunError::Failure(error)) => fail(EXIT_FAILURE, &error),
    }
}
