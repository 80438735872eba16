//! A shard's vectors: one HNSW graph per embedder (the vector store of `storage-engine`),
//! the embeddings as users gave them, and what reads them.
//!
//! - `settings`: the embedder slots of the shard (persisted in `meta`);
//! - `document`: a document's `_vectors`, validated and taken out of what is stored and
//!   indexed as text;
//! - `stored`: the `embeddings` tree (each document's graph ids and flags, extra vectors'
//!   owners; the floats only for graphs that keep no originals);
//! - `graphs`: the open graphs of a shard;
//! - `changes`: a batch's pending vector changes, flushed in its write transaction;
//! - `generated`: the embeddings remote embedders computed for a document;
//! - `reads`: a snapshot's embeddings, nearest documents and counts.
//!
//! Layer: below `shard` (which calls it while applying batches and reading snapshots), above
//! `index` and `error`; it uses the vector store only through its public API.

pub mod changes;
pub mod document;
pub mod generated;
pub mod graphs;
pub mod reads;
pub mod settings;
pub mod stored;

pub use document::{SlotVectors, VECTORS_FIELD, take_vectors, without_vectors};
pub use generated::{GeneratedVector, GeneratedVectors};
pub use graphs::GraphSet;
pub use reads::VectorHit;
pub use settings::{EmbedderSlot, EmbedderSpec, FragmentSlot, VectorSettings};
