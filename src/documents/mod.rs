//! The document use cases that gather every shard's answer: a page of an index's documents
//! in the order one unsharded index would give ([`listing`], merged by [`merge`]).

pub mod listing;
pub mod merge;
