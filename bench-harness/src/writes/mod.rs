//! Search latency under writes (`search_under_writes`): coresearch and a Meilisearch binary,
//! each started fresh on the same machine one after the other, given the same base of
//! documents, then searched with the same closed-loop query mix while nothing is written,
//! while a writer adds the documents after the base at a fixed rate, while a writer adds them
//! as fast as the server finishes its tasks, right after the last write task finished, and
//! warm (16 connections and one).
//!
//! Invariants: the harness builds nothing and talks to the servers over HTTP only (and reads
//! `/proc`); both servers get the same documents, settings, query mix, seeds, write rate and
//! payload sizes; a writer never sends a document twice, nor one of the base (when the
//! dataset's documents run out, the unbounded writer goes on with copies under new ids); the write
//! figures (documents indexed per second, backlog, task waits) come from each server's own
//! task records; the index setup, the ingestion, the query mix, the load driver and the
//! server launcher are `search_compare`'s (`crate::compare`, `crate::load`).

pub mod copies;
pub mod phase;
pub mod report;
pub mod side;
pub mod task_records;
pub mod writer;
