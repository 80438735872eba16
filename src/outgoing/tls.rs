//! TLS for `https://` URLs: rustls on the connected socket, checking the server's
//! certificate against the Mozilla roots (`webpki-roots`) and the URL's host.
//!
//! Invariants: the certificate is always verified (no option turns it off); the name
//! checked is the URL's host as written (a domain, or an IP address literal); the
//! handshake runs on the core like any other I/O, within the request timeout.

use std::sync::Arc;

use futures_lite::io::{AsyncRead, AsyncWrite};
use futures_rustls::client::TlsStream;
use futures_rustls::rustls;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use url::Host;

use super::error::OutgoingError;

/// The scheme whose connections are wrapped in TLS.
pub const TLS_SCHEME: &str = "https";

/// The client side of TLS: trusted roots and protocol versions.
#[derive(Clone)]
pub struct TlsClient {
    config: Arc<ClientConfig>,
}

impl std::fmt::Debug for TlsClient {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("TlsClient").finish_non_exhaustive()
    }
}

impl TlsClient {
    /// A client trusting the Mozilla roots and `extra_roots`.
    pub fn new(extra_roots: &[CertificateDer<'static>]) -> Result<Self, OutgoingError> {
        let mut roots = RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        for root in extra_roots {
            roots
                .add(root.clone())
                .map_err(|error| tls_error("roots", &error))?;
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|error| tls_error("configuration", &error))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(TlsClient {
            config: Arc::new(config),
        })
    }

    /// Runs the handshake with `host` over `stream`.
    pub async fn connect<Stream: AsyncRead + AsyncWrite + Unpin>(
        &self,
        host: &Host<String>,
        stream: Stream,
    ) -> Result<TlsStream<Stream>, OutgoingError> {
        let name = server_name(host)?;
        let connector = futures_rustls::TlsConnector::from(self.config.clone());
        connector
            .connect(name, stream)
            .await
            .map_err(|error| OutgoingError::Tls {
                host: host.to_string(),
                reason: error.to_string(),
            })
    }
}

fn tls_error(host: &str, error: &dyn std::fmt::Display) -> OutgoingError {
    OutgoingError::Tls {
        host: host.to_owned(),
        reason: error.to_string(),
    }
}

/// The name the certificate must carry.
fn server_name(host: &Host<String>) -> Result<ServerName<'static>, OutgoingError> {
    match host {
        Host::Domain(domain) => {
            ServerName::try_from(domain.clone()).map_err(|error| tls_error(domain, &error))
        }
        Host::Ipv4(address) => Ok(ServerName::IpAddress(std::net::IpAddr::V4(*address).into())),
        Host::Ipv6(address) => Ok(ServerName::IpAddress(std::net::IpAddr::V6(*address).into())),
    }
}
