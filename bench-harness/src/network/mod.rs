//! The sharded-network benchmark (`network_bench`): 1, 2, 4, … local instances of one server
//! formed into one network (one shard per instance, the first the leader), filled with a
//! dataset through the leader, searched through the leader with the mix of the side-by-side
//! comparison, then a filled network grown by new instances and the `networkTopologyChange`
//! that moves the documents timed — for coresearch and for Meilisearch Enterprise alike.
//!
//! Invariants: the harness talks to the servers over HTTP only (and reads `/proc` and the
//! data directories); one network runs at a time, its instances pinned so that every size
//! shares the machine's CPUs the same way ([`placement`]); each server sees the same
//! documents, settings, queries and seeds; what each instance spent is measured per
//! instance, since the instances share the machine.

pub mod change;
pub mod cluster;
pub mod ingestion;
pub mod machine;
pub mod placement;
pub mod ranking;
pub mod report;
pub mod resources;
pub mod results;
pub mod searching;
pub mod topology;
pub mod visibility;
