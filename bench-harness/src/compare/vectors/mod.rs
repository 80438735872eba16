//! The side-by-side vector search comparison (`vector_compare`): coresearch and a
//! Meilisearch binary, each started fresh per configuration, fed the same documents with the
//! same `userProvided` embedder settings, asked the same query vectors, and compared on
//! indexing speed, memory, disk, recall@10 against an exact brute-force answer, and
//! latency/throughput of semantic, hybrid and filtered searches.
//!
//! Invariants: the exact answers are computed once in the harness, before any server starts;
//! the servers run one after the other, never at the same time, each configuration on a
//! fresh data directory; both servers see the same documents, settings, query bodies and
//! seeds; the harness only talks to the servers over HTTP (and reads `/proc` and the data
//! directory).

pub mod data;
pub mod side;
pub mod table;
pub mod truth;
