//! Datasets, workloads, load driver, side-by-side comparison against any
//! Meilisearch-compatible URL, and micro-benchmarks.
//!
//! Invariant: nothing here is linked into the server; the harness only talks to
//! servers over sockets or through their public library APIs.

pub mod backups;
pub mod compare;
pub mod export;
pub mod load;
pub mod measure;
pub mod network;
pub mod scale;
pub mod storage;
pub mod writes;
