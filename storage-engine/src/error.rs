//! The storage engine's one error type.
//!
//! Invariant: every failure the engine can meet is one of these variants; nothing in the
//! engine panics on bytes read from disk. `Corrupted` names the page and what was wrong.

use std::fmt;

/// Result alias for the storage engine.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in the page store.
#[derive(Debug)]
pub enum Error {
    /// An operating-system I/O error other than a full disk.
    Io(std::io::Error),
    /// The disk is full (ENOSPC / EDQUOT). The transaction did not commit; the file is intact.
    NoSpace,
    /// The file would grow past `Options::maximum_size_bytes`.
    MapFull {
        /// The configured maximum, in bytes.
        maximum_bytes: u64,
    },
    /// A page failed a check: its checksum, its kind, or its structure. Never a panic.
    Corrupted {
        /// The page number where the damage was found.
        page: u64,
        /// What check failed.
        what: &'static str,
    },
    /// A key was longer than [`crate::KEY_BYTES_MAX`].
    KeyTooLarge {
        /// Length of the rejected key.
        length: usize,
        /// The maximum accepted length.
        maximum: usize,
    },
    /// A value was longer than [`crate::VALUE_BYTES_MAX`].
    ValueTooLarge {
        /// Length of the rejected value.
        length: u64,
        /// The maximum accepted length.
        maximum: u64,
    },
    /// A tree name was longer than [`crate::KEY_BYTES_MAX`] or empty.
    InvalidTreeName,
    /// The options cannot be used (page size not a power of two, sizes out of range, ...).
    InvalidOptions(&'static str),
    /// The file is not a page store, or of another format version or page size.
    Incompatible(&'static str),
    /// A write transaction is already open on this database.
    WriteInProgress,
    /// An earlier operation of this write transaction failed half-way; it can only abort.
    TransactionFailed,
    /// An earlier sync failed, so the state on disk is unknown: reopen the database.
    Poisoned,
    /// A merge writer was given a key not above the key before it.
    KeysOutOfOrder,
    /// A merge writer was asked to put or delete before any key was sought, or twice for one.
    NothingSought,
}

impl Error {
    /// Turns an OS error into `NoSpace` when it means the disk is full, `Io` otherwise.
    pub(crate) fn from_io(error: std::io::Error) -> Error {
        match error.raw_os_error() {
            Some(code) if code == libc::ENOSPC || code == libc::EDQUOT => Error::NoSpace,
            _ => Error::Io(error),
        }
    }

    /// Shorthand for a `Corrupted` error.
    pub(crate) fn corrupted(page: u64, what: &'static str) -> Error {
        Error::Corrupted { page, what }
    }
}

impl From<std::io::Error> for Error {
    fn from(error: std::io::Error) -> Self {
        Error::from_io(error)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io(error) => write!(formatter, "I/O error: {error}"),
            Error::NoSpace => write!(formatter, "no space left on device"),
            Error::MapFull { maximum_bytes } => {
                write!(
                    formatter,
                    "the file reached its maximum size of {maximum_bytes} bytes"
                )
            }
            Error::Corrupted { page, what } => {
                write!(formatter, "page {page} is corrupted: {what}")
            }
            Error::KeyTooLarge { length, maximum } => {
                write!(
                    formatter,
                    "key of {length} bytes exceeds the maximum of {maximum}"
                )
            }
            Error::ValueTooLarge { length, maximum } => {
                write!(
                    formatter,
                    "value of {length} bytes exceeds the maximum of {maximum}"
                )
            }
            Error::InvalidTreeName => write!(formatter, "invalid tree name"),
            Error::InvalidOptions(what) => write!(formatter, "invalid options: {what}"),
            Error::Incompatible(what) => write!(formatter, "incompatible file: {what}"),
            Error::WriteInProgress => write!(formatter, "a write transaction is already open"),
            Error::TransactionFailed => {
                write!(
                    formatter,
                    "an earlier operation of this write transaction failed"
                )
            }
            Error::Poisoned => {
                write!(
                    formatter,
                    "an earlier sync failed; the database must be reopened"
                )
            }
            Error::KeysOutOfOrder => {
                write!(
                    formatter,
                    "a merge's keys must be sought in ascending order"
                )
            }
            Error::NothingSought => {
                write!(
                    formatter,
                    "a merge's put or delete needs a key sought before it"
                )
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io(error) => Some(error),
            _ => None,
        }
    }
}
