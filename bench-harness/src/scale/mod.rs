//! Search cost as an index grows (`search_at_scale`): coresearch and a Meilisearch binary,
//! each started fresh on the same machine one after the other, each filling ONE index step by
//! step up a ladder of sizes drawn from copies of a dataset, and at every size measured for
//! indexing time, disk, memory, and closed-loop search at several connection counts.
//!
//! Invariants: the harness builds nothing and talks to the servers over HTTP only (and reads
//! `/proc` and the data directory); the servers never run at the same time; both get the same
//! documents in the same order and payloads, the same settings, the same query mix (drawn once
//! from the dataset's own documents, copy 0) and the same seeds; the documents of the copies
//! are made payload by payload while they are sent, so no more than one payload of them is
//! ever held; search at a size is measured only after every task succeeded and the index
//! holds exactly that many documents. The server launcher, the index setup, the query mix and
//! the load driver are `search_compare`'s (`crate::compare`, `crate::load`).

pub mod arguments;
pub mod dataset;
pub mod figures;
pub mod fill;
pub mod ladder;
pub mod report;
pub mod run;
pub mod search;
pub mod settings;
pub mod side;
