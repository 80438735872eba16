//! The figures of a run, as measured and as written to `results.json`.
//!
//! Invariants: every figure is kept raw (bytes, seconds, milliseconds), never rounded; a
//! figure that could not be measured is `None`, never zero; a side's sizes are the sizes it
//! reached, in ascending order, so a side that failed part-way keeps what it measured before.

use serde::Serialize;

use crate::compare::table::LoadFigures;

/// One closed-loop search run at one size.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SearchFigures {
    /// Keep-alive connections.
    pub connections: usize,
    /// 2xx answers per second.
    pub queries_per_second: f64,
    /// Median latency of the 2xx answers, in milliseconds.
    pub p50_milliseconds: Option<f64>,
    /// 99th percentile.
    pub p99_milliseconds: Option<f64>,
    /// 99.9th percentile.
    pub p999_milliseconds: Option<f64>,
    /// Answers other than 2xx.
    pub non_2xx: u64,
    /// Failed attempts (connection errors, timeouts).
    pub failed: u64,
    /// The server's average cores used, when measured.
    pub server_cores: Option<f64>,
    /// CPU time the hypervisor took from the machine during the run (every CPU summed), in
    /// milliseconds, when the machine reports it.
    pub host_steal_milliseconds: Option<f64>,
}

impl SearchFigures {
    /// The figures of a load run at `connections`.
    pub fn from_load(connections: usize, load: &LoadFigures) -> SearchFigures {
        SearchFigures {
            connections,
            queries_per_second: load.throughput,
            p50_milliseconds: load.p50_milliseconds,
            p99_milliseconds: load.p99_milliseconds,
            p999_milliseconds: load.p999_milliseconds,
            non_2xx: load.non_2xx,
            failed: load.errors,
            server_cores: load.server_cores,
            host_steal_milliseconds: load.host_steal_milliseconds,
        }
    }

    /// Requests not answered 2xx.
    pub fn errors(&self) -> u64 {
        self.non_2xx + self.failed
    }
}

/// Everything measured at one size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SizeFigures {
    /// Documents the index holds.
    pub documents: u64,
    /// Documents added since the previous size.
    pub added: u64,
    /// Payloads sent since the previous size.
    pub payloads: usize,
    /// From the first payload of the step to the last task succeeded, in seconds.
    pub indexing_seconds: f64,
    /// Time spent making the step's payloads, in seconds (inside `indexing_seconds`, while
    /// the server indexed the payloads already sent).
    pub payload_generation_seconds: f64,
    /// From the last task succeeded to the server going quiet, when waited for.
    pub settle_seconds: Option<f64>,
    /// False when the server did not go quiet within the limit; `None` when not waited for.
    pub quiet: Option<bool>,
    /// The data directory's allocated bytes, before the search runs.
    pub disk_allocated_bytes: u64,
    /// The data directory's apparent bytes (sum of file lengths), before the search runs.
    pub disk_apparent_bytes: u64,
    /// The server's resident memory after the search runs at this size.
    pub resident_bytes: Option<u64>,
    /// The server's peak resident memory since its start, after the search runs here.
    pub peak_resident_bytes: Option<u64>,
    /// One run per connection count, in the order given.
    pub searches: Vec<SearchFigures>,
}

impl SizeFigures {
    /// Documents indexed per second during the step.
    pub fn documents_per_second(&self) -> Option<f64> {
        (self.indexing_seconds > 0.0).then(|| self.added as f64 / self.indexing_seconds)
    }

    /// The search run at `connections`, when there is one.
    pub fn search(&self, connections: usize) -> Option<&SearchFigures> {
        self.searches
            .iter()
            .find(|search| search.connections == connections)
    }
}

/// Everything measured on one server.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SideFigures {
    /// The server's name.
    pub name: &'static str,
    /// Its `GET /version` `pkgVersion`, when it answered one.
    pub version: Option<String>,
    /// The sizes it reached, ascending.
    pub sizes: Vec<SizeFigures>,
    /// Why it stopped before the last size, if it did.
    pub error: Option<String>,
}

impl SideFigures {
    /// The figures at `documents`, when the side reached that size.
    pub fn at(&self, documents: u64) -> Option<&SizeFigures> {
        self.sizes.iter().find(|size| size.documents == documents)
    }
}

/// The parameters and the figures of a whole run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Results {
    /// The command line, as typed.
    pub command_line: String,
    /// The dataset path.
    pub dataset: String,
    /// Lines read from the dataset (copy 0).
    pub documents_read: u64,
    /// Copies of the dataset the documents come from.
    pub copies: u64,
    /// The sizes measured, ascending.
    pub sizes: Vec<u64>,
    /// Documents per payload.
    pub batch: u64,
    /// Queries in the mix.
    pub queries: usize,
    /// Seed of the mix and of the query choice.
    pub seed: u64,
    /// Connection counts of the search runs.
    pub connections: Vec<usize>,
    /// Measured seconds of each search run.
    pub duration_seconds: f64,
    /// Unmeasured warm-up seconds before each search run.
    pub warmup_seconds: f64,
    /// Whether the servers were waited for to go quiet before the search runs.
    pub settle: bool,
    /// `--cores` given to the servers.
    pub cores: Option<usize>,
    /// CPUs of the machine.
    pub machine_cpus: usize,
    /// coresearch, when its binary was given.
    pub coresearch: Option<SideFigures>,
    /// Meilisearch, when its binary was given.
    pub meilisearch: Option<SideFigures>,
}

impl Results {
    /// Whether every side that ran reached every size.
    pub fn complete(&self) -> bool {
        [&self.coresearch, &self.meilisearch]
            .into_iter()
            .flatten()
            .all(|side| side.error.is_none())
    }
}
