//! The server CPU each query of a search mix costs (`search_cpu`): one coresearch build, or
//! two builds side by side (a candidate and a baseline), each started on its own copy of an
//! already indexed data directory and asked every query of the mix, one at a time, for a
//! warm-up pass and then for the measured passes.
//!
//! A query's cost is the CPU time all threads of the server process spent from just before
//! the request was sent to just after its answer arrived and the server went quiet (read
//! from `/proc/PID/task/*/schedstat`, in nanoseconds), with its wall latency beside it.
//!
//! Invariants: the given data directory is only read (each server gets its own copy, and a
//! directory a running server holds is refused); requests are sequential, one keep-alive
//! connection per server, so a reading covers one request and the server's background work
//! during it (reported as the idle CPU rate, the noise floor); with two builds, both run
//! during the whole measurement, so both see the same machine, and which one is asked first
//! alternates from one query to the next and from one pass to the next; every failed request
//! is counted and reported, and never enters a mean.

pub mod data_copy;
pub mod passes;
pub mod probe;
pub mod query_file;
pub mod quiescence;
pub mod report;
pub mod tally;
pub mod thread_cpu;

/// Which of the two builds a figure belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Build {
    /// The build under test (`--binary`).
    Candidate,
    /// The build it is compared with (`--baseline-binary`).
    Baseline,
}

impl Build {
    /// The build's name in reports and directory names.
    pub fn name(self) -> &'static str {
        match self {
            Build::Candidate => "candidate",
            Build::Baseline => "baseline",
        }
    }
}
