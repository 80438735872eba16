//! Everything inside one shard: documents, analysis, inverted, facet, geo and vector indexes,
//! filters, ranking, plus the rendezvous hashing that assigns documents to shards.
//!
//! A synchronous library: it knows nothing of the runtime, sockets or HTTP.
//!
//! Layering, top to bottom (an arrow goes down only; `shards/DESIGN.md` §1 draws it):
//! - [`search`]: full-text search, facet counts and facet search on a
//!   [`shard::ShardSnapshot`] (it extends the snapshot with `search`, `facet_counts` and
//!   `facet_values`, listed in `shard/snapshot.rs`);
//! - [`shard`]: the shard file, applying batches (the writers), rebuilds, repacks and the read
//!   snapshot;
//! - [`vectors`]: a shard's embeddings and their HNSW graphs (the `_vectors` of documents,
//!   the `embeddings` tree, nearest-document reads), used by `shard`;
//! - [`index`]: the on-disk format both of them share: tree names, key and value encodings,
//!   the position-chunk codec and the document codec;
//! - [`analysis`], [`documents`], [`filter`], [`error`], `commit_memo`, [`cache_meter`],
//!   [`rendezvous`] and [`network_shards`]: what every layer above uses.
//!
//! Two arrows run between `search` and `shard` on purpose: `search` names the
//! [`shard::ShardSnapshot`] it reads (and the listing's [`shard::SortRule`], which search sorts
//! by too), and a snapshot's commit view holds the per-commit caches `search` fills
//! (dictionary, prefix unions, facet columns…), because a cache lives as long as the commit
//! view the [`shard::Shard`] keeps.

pub mod analysis;
pub mod cache_meter;
pub mod cache_scale;
pub(crate) mod commit_memo;
pub mod documents;
pub mod error;
pub mod filter;
pub mod index;
pub mod network_shards;
pub mod rendezvous;
pub mod search;
pub mod shard;
#[cfg(test)]
mod test_database;
#[cfg(test)]
mod test_random;
pub mod vectors;
