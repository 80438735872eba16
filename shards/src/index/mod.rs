//! The on-disk format of a shard: the name of every tree, and the byte encodings of their
//! keys and values. `shards/DESIGN.md` draws the whole format; this folder is its code.
//!
//! - [`trees`]: every tree name, the groups of trees emptied or rebuilt together, and the
//!   records of `meta`;
//! - [`keys`]: internal ids, field ids, facet keys and values, geo points and stored bitmaps;
//! - [`short_list`]: the short form of a stored bitmap of a few ids (varint distances);
//! - [`stored_bitmap`]: a stored bitmap read in place (intersections and counts without
//!   decoding it);
//! - [`inverted`]: the keys of the inverted index's trees (word ‖ `0xFF` ‖ suffix), field
//!   lengths, word counts and position buckets;
//! - [`position_chunks`]: the chunks of `word_position_chunks` (varints, occurrences, the
//!   packer that cuts a word's documents into chunks);
//! - [`document_codec`]: how a document is stored (raw, lz4, or zstd with one of the shard's
//!   dictionaries).
//!
//! Layering: the writers (`shard::apply` and the change sets it flushes) and the readers
//! (`search`, `shard::snapshot`, `shard::facet_source`) both import their formats from here.
//!
//! Invariants: nothing in this folder imports from `shard` or `search` (only from `error`
//! and `analysis`); every encoding here round-trips (its tests check it), and reading bytes
//! that are no encoding of it gives [`crate::error::ShardError::Corrupted`], never a panic.

pub mod document_codec;
pub mod inverted;
pub mod keys;
pub mod position_chunks;
pub mod short_list;
pub mod stored_bitmap;
pub mod trees;
