//! What can go wrong with an outgoing request, named by the step that failed.
//!
//! Invariants: the Display message names the step and the host or address, never a header
//! or a body (they may carry keys), so a task error can carry it as is; an answer with any
//! status (4xx and 5xx included) is a response, not an error.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// Why an outgoing request has no response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutgoingError {
    /// The URL does not parse, or has no host.
    InvalidUrl { url: String, reason: String },
    /// The URL's scheme is not one the client speaks.
    UnsupportedScheme { scheme: String },
    /// The host name did not resolve.
    Resolve { host: String, reason: String },
    /// The host resolved to an address the IP policy refuses.
    RejectedAddress { host: String, address: IpAddr },
    /// Connecting to the address failed.
    Connect { address: SocketAddr, reason: String },
    /// Connecting to the address took longer than the connect timeout.
    ConnectTimeout {
        address: SocketAddr,
        timeout: Duration,
    },
    /// The whole exchange took longer than the request timeout.
    Timeout { host: String, timeout: Duration },
    /// Sending the request or receiving the response failed midway.
    Transfer { host: String, reason: String },
    /// The response is not valid HTTP/1.1.
    InvalidResponse { host: String, reason: String },
    /// The response's head or body is larger than the limit.
    ResponseTooLarge { host: String, limit: usize },
    /// The TLS handshake failed (an untrusted or mismatched certificate, say).
    Tls { host: String, reason: String },
}

impl OutgoingError {
    /// Whether another attempt may succeed: connection trouble and timeouts, not a bad
    /// URL, a refused address or an oversized response.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            OutgoingError::Resolve { .. }
                | OutgoingError::Connect { .. }
                | OutgoingError::ConnectTimeout { .. }
                | OutgoingError::Timeout { .. }
                | OutgoingError::Transfer { .. }
        )
    }
}

impl fmt::Display for OutgoingError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OutgoingError::InvalidUrl { url, reason } => {
                write!(formatter, "invalid URL `{url}`: {reason}")
            }
            OutgoingError::UnsupportedScheme { scheme } => {
                write!(formatter, "unsupported URL scheme `{scheme}`")
            }
            OutgoingError::Resolve { host, reason } => {
                write!(formatter, "could not resolve `{host}`: {reason}")
            }
            OutgoingError::RejectedAddress { host, address } => write!(
                formatter,
                "rejected IP `{address}` of `{host}`: not in the allowed IP networks"
            ),
            OutgoingError::Connect { address, reason } => {
                write!(formatter, "could not connect to `{address}`: {reason}")
            }
            OutgoingError::ConnectTimeout { address, timeout } => write!(
                formatter,
                "connecting to `{address}` took longer than {timeout:?}"
            ),
            OutgoingError::Timeout { host, timeout } => write!(
                formatter,
                "remote host `{host}` did not answer within {timeout:?}"
            ),
            OutgoingError::Transfer { host, reason } => {
                write!(formatter, "exchange with `{host}` failed: {reason}")
            }
            OutgoingError::InvalidResponse { host, reason } => {
                write!(formatter, "invalid response from `{host}`: {reason}")
            }
            OutgoingError::Tls { host, reason } => {
                write!(formatter, "TLS with `{host}` failed: {reason}")
            }
            OutgoingError::ResponseTooLarge { host, limit } => write!(
                formatter,
                "response from `{host}` is larger than {limit} bytes"
            ),
        }
    }
}

impl std::error::Error for OutgoingError {}
