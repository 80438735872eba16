//! Embeddings a remote embedder computed for a document, as the host hands them to the shard
//! (see `shard::Operation::SetGenerated`): per embedder, every embedding the document has
//! for it once the batch applies, each named by the indexing fragment it was computed from
//! (none for an embedder that renders a document template).
//!
//! Invariant: the embeddings of one embedder either all name a fragment or none does.

/// One computed embedding.
#[derive(Debug, Clone, PartialEq)]
pub struct GeneratedVector {
    /// The indexing fragment rendered to compute it (`None`: the document template).
    pub fragment: Option<String>,
    pub embedding: Vec<f32>,
}

/// Every embedding a document has for `embedder` after the batch.
#[derive(Debug, Clone, PartialEq)]
pub struct GeneratedVectors {
    pub embedder: String,
    pub vectors: Vec<GeneratedVector>,
}
