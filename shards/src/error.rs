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
        }
    }
}

impl std::error::Error for ShardError {}
