//! The storage-engine benchmark: our page store beside LMDB (heed) and redb, on the same
//! machine, in one run, each engine in its own child process (so peak memory and page
//! cache effects are its own).
//!
//! Invariant: every engine gets the same keys, values, batch sizes and durability (a
//! commit returns only once durable, each engine's default durable mode).

pub mod engines;
pub mod report;
pub mod workload;
