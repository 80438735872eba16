//! The backup benchmark (`backup_bench`): coresearch and a Meilisearch binary, each started
//! fresh on the same machine one after the other, given the same dataset and settings, then
//! asked for a dump (its time and size), searched idle and while snapshots run back to back
//! (latency beside the idle latency, how many snapshots ran, their time and size), and
//! finally started again from the dump on an empty data directory (the import's time, the
//! documents it holds, its disk).
//!
//! Invariants: the harness builds nothing and talks to the servers over HTTP only (and reads
//! `/proc` and the directories the servers write); only one server process runs at a time;
//! both servers get the same documents, settings, query mix, seeds and load; the dump and
//! snapshot times come from the servers' own task records beside the harness's clock; the
//! index setup, the ingestion, the query mix, the load driver and the server launcher are
//! `search_compare`'s (`crate::compare`, `crate::load`).

pub mod dump;
pub mod import;
pub mod report;
pub mod side;
pub mod snapshots;
