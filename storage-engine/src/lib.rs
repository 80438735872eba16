//! The mmap page store: a crash-safe copy-on-write B+tree with snapshots, and the on-disk
//! HNSW vector store built on it.
//!
//! A synchronous library: it knows nothing of the runtime, sockets or HTTP.

pub mod vector;
