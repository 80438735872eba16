//! Why fetching one file from the hub failed, worded as Meilisearch's hub client (hf-hub's
//! `ApiError`, over ureq) words it: the text after `fetching file from HG_HUB failed:\n  - `.
//!
//! Invariants: where Meilisearch has a message for the same failure, the Display is that
//! message byte for byte (`request error: http status: 404`, `I/O error Peer disconnected`,
//! `Header x-repo-commit is missing`…), since it reaches the API; a transport failure names
//! the step as the outgoing client does, after hf-hub's `request error: ` prefix; a checksum
//! mismatch, which Meilisearch never checks, is worded in the same style.

use std::fmt;
use std::path::PathBuf;

use crate::outgoing::OutgoingError;

/// What ureq says of a body that ended before its length (hf-hub wraps it as an I/O error).
pub const PEER_DISCONNECTED: &str = "Peer disconnected";

/// Why a file could not be fetched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HubFailure {
    /// The hub answered a status that is not a success (nor a redirect it may follow).
    Status(u16),
    /// No response: the outgoing client's error.
    Request(OutgoingError),
    /// More relative redirects than a lookup follows.
    TooManyRedirects,
    /// A header the cache layout needs is absent (named as hf-hub names it).
    MissingHeader(&'static str),
    /// A header is there but unusable.
    InvalidHeader(&'static str),
    /// A number in a header does not parse.
    ParseInt,
    /// Reading or writing the cache failed, or the body ended early.
    Io(String),
    /// The partial file is longer than the file.
    InvalidResume,
    /// Another download of the same file held the lock for too long.
    LockAcquisition(PathBuf),
    /// The downloaded bytes do not have the sha256 digest the hub announced.
    Checksum {
        file: String,
        expected: String,
        actual: String,
    },
}

impl HubFailure {
    /// A body that ended before its announced length.
    pub fn ended_early() -> Self {
        HubFailure::Io(PEER_DISCONNECTED.to_owned())
    }

    /// Whether another `Range` request may finish the transfer: the body broke off or
    /// stalled. (A request that found no server was retried by the client already.)
    pub fn is_resumable(&self) -> bool {
        match self {
            HubFailure::Request(error) => matches!(error, OutgoingError::Timeout { .. }),
            HubFailure::Io(reason) => reason == PEER_DISCONNECTED,
            _ => false,
        }
    }

    /// The failure of a body piece that could not be read: a broken or invalid body is
    /// what ureq calls a disconnected peer; a timeout stays the client's.
    pub fn from_body(error: OutgoingError) -> Self {
        match error {
            OutgoingError::InvalidResponse { .. } | OutgoingError::Transfer { .. } => {
                HubFailure::ended_early()
            }
            other => HubFailure::Request(other),
        }
    }
}

impl From<std::io::Error> for HubFailure {
    fn from(error: std::io::Error) -> Self {
        HubFailure::Io(error.to_string())
    }
}

impl fmt::Display for HubFailure {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HubFailure::Status(status) => write!(formatter, "request error: http status: {status}"),
            HubFailure::Request(error) => write!(formatter, "request error: {error}"),
            HubFailure::TooManyRedirects => {
                formatter.write_str("request error: too many redirects")
            }
            HubFailure::MissingHeader(name) => write!(formatter, "Header {name} is missing"),
            HubFailure::InvalidHeader(name) => write!(formatter, "Header {name} is invalid"),
            HubFailure::ParseInt => formatter.write_str("Cannot parse int"),
            HubFailure::Io(reason) => write!(formatter, "I/O error {reason}"),
            HubFailure::InvalidResume => formatter.write_str("Invalid part file - corrupted file"),
            HubFailure::LockAcquisition(path) => {
                write!(formatter, "Lock acquisition failed: {}", path.display())
            }
            HubFailure::Checksum {
                file,
                expected,
                actual,
            } => write!(
                formatter,
                "Invalid downloaded file - corrupted file: the sha256 of `{file}` is `{actual}`, the hub announced `{expected}`"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_read_as_hf_hub_writes_them() {
        assert_eq!(
            HubFailure::Status(404).to_string(),
            "request error: http status: 404"
        );
        assert_eq!(
            HubFailure::ended_early().to_string(),
            "I/O error Peer disconnected"
        );
        assert_eq!(
            HubFailure::MissingHeader("x-repo-commit").to_string(),
            "Header x-repo-commit is missing"
        );
        assert_eq!(
            HubFailure::InvalidResume.to_string(),
            "Invalid part file - corrupted file"
        );
    }

    #[test]
    fn only_broken_transfers_resume() {
        assert!(HubFailure::ended_early().is_resumable());
        assert!(!HubFailure::Status(404).is_resumable());
        assert!(!HubFailure::Io("No space left on device".to_owned()).is_resumable());
        let refused = HubFailure::Request(OutgoingError::RejectedAddress {
            host: "localhost".to_owned(),
            address: "127.0.0.1".parse().expect("an address"),
        });
        assert!(!refused.is_resumable());
        let stalled = HubFailure::Request(OutgoingError::Timeout {
            host: "hub".to_owned(),
            timeout: std::time::Duration::from_secs(60),
        });
        assert!(stalled.is_resumable());
    }
}
