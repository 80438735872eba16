//! The export benchmark (`export_bench`): for coresearch and for a Meilisearch binary in
//! turn, a source instance filled with the dataset exports its index (`POST /export`) to an
//! empty target instance of the same server on the same machine; timed until the export task
//! succeeded and until the target holds every document with its tasks finished, with the CPU
//! time both instances spent.
//!
//! Invariants: the harness builds nothing and talks to the servers over HTTP only (and reads
//! `/proc`); the two servers' pairs run one after the other, never at the same time; both
//! get the same documents, settings and export request (the target's URL and key, the
//! default payload size); the index setup, the ingestion and the server launcher are
//! `search_compare`'s (`crate::compare`), the CPU meter the network benchmark's.

pub mod report;
pub mod side;
pub mod transfer;
