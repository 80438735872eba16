//! The index use cases that gather every shard's answer: an index's statistics and the
//! instance's ([`stats`]), and the field paths an index holds ([`fields`]). The routes decode,
//! authorize, call these and encode; the merging of the shards' answers lives here.

pub mod fields;
pub mod stats;
