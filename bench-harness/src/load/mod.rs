//! The HTTP load driver: a minimal HTTP/1.1 client (keep-alive, pipelining,
//! Content-Length and chunked responses) driven either at fixed concurrency
//! (closed loop) or at a fixed arrival rate (open loop, latency measured from
//! the scheduled send time so that coordinated omission cannot hide queueing).
//!
//! Invariants:
//! - every request the driver attempts ends as exactly one of: a response
//!   (2xx or counted by status), or an error counted by kind; nothing is
//!   dropped silently (open-loop requests never sent are counted as `unsent`);
//! - only requests issued after the warm-up enter the statistics;
//! - each connection is one OS thread with its own statistics, merged at the
//!   end, so measuring never takes a lock on the hot path.

pub mod chunked;
pub mod dispatcher;
pub mod duration_arg;
pub mod host_steal;
pub mod latency;
pub mod outcome;
pub mod picker;
pub mod process_cpu;
pub mod report;
pub mod request;
pub mod response;
pub mod runner;
pub mod target;
pub mod worker;
pub mod workload;

pub use dispatcher::{Limit, Pacing};
pub use report::Report;
pub use runner::{RunError, RunOptions, run};
pub use target::Target;
pub use workload::{RequestTemplate, Workload};
