//! The error type of a shard: a page-store failure, or stored bytes this code cannot read.
//!
//! Invariant: reading a damaged shard returns `Corrupted`, never panics.

use std::fmt;

/// Everything that can go wrong inside a shard.
#[derive(Debug)]
pub enum ShardError {
    /// The page store failed (I/O, full disk, corruption it detected, a concurrent writer).
    Storage(storage_engine::Error),
    /// A stored value could not be decoded; names what was being read.
    Corrupted(String),
    /// More distinct field paths than the limit (`FIELD_COUNT_MAX`); displayed as
    /// Meilisearch words it.
    TooManyFields,
    /// Every internal document id is in use.
    DocumentIdsExhausted,
    /// A facet setting could not be read (the settings route validates it first).
    InvalidSetting(String),
    /// A document's `_vectors` are invalid (the message is Meilisearch's, without the index).
    InvalidDocumentVectors {
        kind: VectorsErrorKind,
        message: String,
    },
    /// The vector store failed.
    Vectors(storage_engine::vector::VectorError),
    /// A document's field value does not parse (a number out of range, a lone surrogate, a
    /// value nested too deep): serde_json's message, positioned in the value's own text (see
    /// [`crate::documents::field_values`]); displayed as Meilisearch's engine words it.
    InvalidDocumentValue(String),
    /// A document's `_geo` field is not a point (see `shard::geo_field`): Meilisearch's
    /// message, without the index.
    InvalidDocumentGeoField(String),
}

/// Which of Meilisearch's errors a document's bad `_vectors` are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VectorsErrorKind {
    /// `invalid_vector_dimensions`.
    Dimensions,
    /// `invalid_vectors_type`.
    Type,
    /// `vector_embedding_error`: a `userProvided` embedder's vectors are missing.
    Missing,
}

impl From<storage_engine::vector::VectorError> for ShardError {
    fn from(error: storage_engine::vector::VectorError) -> Self {
        ShardError::Vectors(error)
    }
}

/// Result alias for shard operations.
pub type ShardResult<T> = Result<T, ShardError>;

impl ShardError {
    pub(crate) fn corrupted(what: impl Into<String>) -> ShardError {
        ShardError::Corrupted(what.into())
    }
}

impl From<storage_engine::Error> for ShardError {
    fn from(error: storage_engine::Error) -> Self {
        ShardError::Storage(error)
    }
}

impl fmt::Display for ShardError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShardError::Storage(error) => write!(formatter, "shard storage: {error}"),
            ShardError::Corrupted(what) => write!(formatter, "shard data corrupted: {what}"),
            ShardError::TooManyFields => write!(
                formatter,
                "A document cannot contain more than 65,535 fields."
            ),
            ShardError::DocumentIdsExhausted => {
                write!(
                    formatter,
                    "every internal document id of the shard is in use"
                )
            }
            ShardError::InvalidSetting(message) => write!(formatter, "invalid setting: {message}"),
            ShardError::InvalidDocumentVectors { message, .. } => formatter.write_str(message),
            ShardError::Vectors(error) => write!(formatter, "vector store: {error}"),
            ShardError::InvalidDocumentValue(detail) => write!(formatter, "internal: {detail}."),
            ShardError::InvalidDocumentGeoField(message) => formatter.write_str(message),
        }
    }
}

impl std::error::Error for ShardError {}
