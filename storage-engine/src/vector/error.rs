//! The one error type of the vector store.

use std::fmt;

/// What can go wrong in the vector store.
#[derive(Debug)]
pub enum VectorError {
    /// A vector's length differs from the graph's dimensions.
    DimensionMismatch {
        /// The graph's dimensions.
        expected: usize,
        /// The vector's length.
        found: usize,
    },
    /// A vector holds NaN or an infinity.
    NonFiniteValue,
    /// The graph's parameters are unusable (the message says which).
    InvalidParameters(&'static str),
    /// Bytes read from disk do not describe a valid vector file or graph.
    Corrupted(String),
    /// The operating system refused a read, write or sync.
    Io(std::io::Error),
    /// The page store failed.
    Storage(crate::Error),
    /// The graph named does not exist.
    UnknownGraph(String),
    /// A graph exists under this name with other parameters.
    ParametersMismatch(String),
}

impl fmt::Display for VectorError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VectorError::DimensionMismatch { expected, found } => {
                write!(
                    formatter,
                    "expected a vector of {expected} dimensions, found {found}"
                )
            }
            VectorError::NonFiniteValue => write!(formatter, "a vector holds NaN or infinity"),
            VectorError::InvalidParameters(message) => {
                write!(formatter, "invalid graph parameters: {message}")
            }
            VectorError::Corrupted(message) => {
                write!(formatter, "corrupted vector store: {message}")
            }
            VectorError::Io(error) => write!(formatter, "vector store I/O error: {error}"),
            VectorError::Storage(error) => write!(formatter, "page store error: {error}"),
            VectorError::UnknownGraph(name) => write!(formatter, "no vector graph named {name:?}"),
            VectorError::ParametersMismatch(name) => {
                write!(
                    formatter,
                    "vector graph {name:?} exists with other parameters"
                )
            }
        }
    }
}

impl std::error::Error for VectorError {}

impl From<std::io::Error> for VectorError {
    fn from(error: std::io::Error) -> Self {
        VectorError::Io(error)
    }
}

impl From<crate::Error> for VectorError {
    fn from(error: crate::Error) -> Self {
        VectorError::Storage(error)
    }
}
