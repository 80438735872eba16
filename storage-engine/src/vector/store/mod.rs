//! The persisted vector store: graphs in the page store's named trees, vectors in dense
//! vector files beside it (see `graph` for the layout and the crash-safety argument).

pub mod full_vectors;
pub mod graph;
#[cfg(test)]
mod graph_originals_tests;
pub mod links_cache;
pub mod memory_copy;
pub mod metadata;
pub mod node_codec;
pub mod record_ids;
pub mod resident;
pub mod tree_links;
pub mod trees;
pub mod uring;
pub mod vector_file;

pub use graph::{
    FileBackend, FileBackends, Graph, GraphOptions, GraphOriginals, GraphReader, GraphWriter,
    VectorBackends, vector_file_paths,
};
pub use trees::{MemoryTrees, ReadTrees, TreeRead, TreeWrite, WriteTrees};
