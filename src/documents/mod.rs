//! The document use cases: one document from the shard that owns its id ([`get`]), and a
//! page of an index's documents in the order one unsharded index would give ([`listing`],
//! merged by [`merge`]).

pub mod get;
pub mod listing;
pub mod merge;
