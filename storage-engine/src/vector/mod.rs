//! The vector store: HNSW graphs over densely packed vector records.
//!
//! - `distance`, `kernels`, `scalar`: metrics and their SIMD and reference kernels;
//! - `quantization`: 1-bit codes for binary quantization;
//! - `estimator`: asymmetric distance estimates from 1-bit codes of residuals from centres;
//! - `records`: the fixed-stride record layout shared by vector files and memory;
//! - `graph`: the HNSW algorithm over any node storage (`Links`), and (`graph::centres`) the
//!   centres found and made through the graph that `estimator` codes against;
//! - `searching`: queries, filtered search policy, re-scoring;
//! - `memory_index`: the whole index in memory (the model for the persisted graph);
//! - `store`: graphs persisted in the page store, vectors in dense vector files; writers and
//!   readers work on a dense in-memory adjacency (`graph::dense`, shared by readers per links
//!   version, `store::links_cache`), and filtered searches check ids in a dense record -> id
//!   map (`store::record_ids`);
//! - `sketch`: 8-bit copies of the float vectors in memory, whose distance lower bounds let a
//!   reader's search skip loading vectors that cannot enter its results.
//!
//! Entry: [`Graph`] (`Graph::create` / `Graph::open`, then `Graph::writer` in a write
//! transaction and `Graph::reader` on a read snapshot); the types a caller needs are
//! re-exported here. The `shards` crate is its caller in the server (`shards/src/vectors/`).
//!
//! Layer 6 of the crate: it uses the page store only through its public API (`Database`'s
//! transactions and trees, via `store::trees`) and `io::PageIo` for its vector files.
//!
//! Invariant: a graph's node is named by its record number in the graph's vector records, so
//! a link leads to a vector without any lookup.

pub mod distance;
pub mod error;
pub mod estimator;
pub mod graph;
pub mod huge_pages;
pub mod kernels;
pub mod memory_index;
pub mod parameters;
pub mod quantization;
pub mod random;
pub mod records;
pub mod scalar;
pub mod scorer;
pub mod searching;
pub mod sketch;
pub mod space;
pub mod store;
pub mod synthetic;

pub use distance::Metric;
pub use error::VectorError;
pub use graph::visited::SearchScratch;
pub use memory_index::{MemoryIndex, MergeReport};
pub use parameters::GraphParameters;
pub use searching::{Hit, SearchRequest};
pub use store::{
    FileBackend, FileBackends, Graph, GraphOptions, GraphOriginals, GraphReader, GraphWriter,
    ReadTrees, VectorBackends, WriteTrees, vector_file_paths,
};
