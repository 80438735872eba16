//! The side-by-side search comparison (`search_compare`): coresearch and a Meilisearch
//! binary, each started fresh on the same machine, fed the same dataset with the same
//! settings, asked the same query mix drawn from the dataset's own vocabulary, loaded at
//! fixed concurrency and at a fixed arrival rate, and compared on indexing speed, memory,
//! disk, throughput, latency and top-10 agreement.
//!
//! Invariants: the harness builds nothing and only talks to the servers over HTTP (and
//! reads `/proc` and the data directory); the servers run one after the other, never at the
//! same time, so neither measures the other's load; both see the same documents, settings,
//! queries and seeds.
//!
//! `cpu_cost` reuses the server launcher and the client for another tool (`search_cpu`): the
//! server CPU each query of a mix costs on an already indexed data directory, for one build
//! or two builds side by side; its own invariants are in its module documentation. `task`
//! (one task enqueued, then waited for) serves the backup and export benchmarks.

pub mod agreement;
pub mod arguments;
pub mod client;
pub mod command_line;
pub mod cpu_cost;
pub mod disk;
pub mod goals;
pub mod query_mix;
pub mod server;
pub mod settle;
pub mod setup;
pub mod side;
pub mod table;
pub mod task;
pub mod vectors;
pub mod vocabulary;
