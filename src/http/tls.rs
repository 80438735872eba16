//! TLS for the HTTP layer with rustls (ring provider), as Meilisearch's `--ssl-*` options
//! configure it: server certificate chain and key, optional client authentication against a
//! root store (`--ssl-auth-path`, required with `--ssl-require-auth`), optional OCSP staple,
//! session resumption and tickets.
//!
//! [`TlsAcceptor::accept`] turns an accepted byte stream into a TLS stream that
//! [`super::serve_connection`] serves like a plain one. ALPN offers only `http/1.1`.
//!
//! Invariants: the crypto provider is always ring, explicitly (never the process default);
//! a handshake never waits longer than the timeout given to
//! [`TlsAcceptor::accept_with_timeout`].

use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures_lite::io::{AsyncRead, AsyncWrite};
use futures_rustls::rustls;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{NoServerSessionStorage, ServerSessionMemoryCache, WebPkiClientVerifier};
use rustls::{RootCertStore, ServerConfig};

use super::Timer;
use super::timeout::with_timeout;

/// Sessions remembered for resumption (`--ssl-resumption`), as Meilisearch.
pub const SESSION_CACHE_ENTRIES: usize = 256;
/// Longest TLS handshake the runtime should allow (see [`TlsAcceptor::accept_with_timeout`]).
pub const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The TLS options, one field per `--ssl-*` flag.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsOptions {
    /// `--ssl-cert-path`: PEM certificate chain, leaf first.
    pub cert_path: PathBuf,
    /// `--ssl-key-path`: PEM private key (PKCS#8, PKCS#1 or SEC1).
    pub key_path: PathBuf,
    /// `--ssl-auth-path`: PEM root certificates that client certificates must chain to.
    pub auth_path: Option<PathBuf>,
    /// `--ssl-require-auth`: refuse clients without a certificate (needs `auth_path`).
    pub require_auth: bool,
    /// `--ssl-ocsp-path`: DER OCSP response stapled to the handshake.
    pub ocsp_path: Option<PathBuf>,
    /// `--ssl-resumption`: keep a session cache for resumption.
    pub resumption: bool,
    /// `--ssl-tickets`: issue stateless session tickets.
    pub tickets: bool,
}

/// Why a TLS configuration could not be built.
#[derive(Debug)]
pub enum TlsError {
    /// A file could not be read.
    Read { path: PathBuf, error: io::Error },
    /// A PEM file has no usable item (or is not PEM).
    NoPemItem { path: PathBuf, what: &'static str },
    /// rustls refused the material (mismatched key, bad roots, ...).
    Rustls(rustls::Error),
    /// The client verifier could not be built.
    ClientVerifier(String),
}

impl fmt::Display for TlsError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TlsError::Read { path, error } => {
                write!(formatter, "cannot read `{}`: {error}", path.display())
            }
            TlsError::NoPemItem { path, what } => write!(
                formatter,
                "no {what} found in `{}` (encrypted keys are not supported)",
                path.display()
            ),
            TlsError::Rustls(error) => write!(formatter, "bad certificates/private key: {error}"),
            TlsError::ClientVerifier(reason) => {
                write!(formatter, "bad client authentication roots: {reason}")
            }
        }
    }
}

impl std::error::Error for TlsError {}

impl From<rustls::Error> for TlsError {
    fn from(error: rustls::Error) -> Self {
        TlsError::Rustls(error)
    }
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Reads a PEM certificate chain.
pub fn load_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let bytes = read(path)?;
    let certificates: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<_, _>>()
        .map_err(|_| TlsError::NoPemItem {
            path: path.to_path_buf(),
            what: "certificate",
        })?;
    if certificates.is_empty() {
        return Err(TlsError::NoPemItem {
            path: path.to_path_buf(),
            what: "certificate",
        });
    }
    Ok(certificates)
}

/// Reads the first PEM private key (PKCS#8, PKCS#1 or SEC1).
pub fn load_private_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let bytes = read(path)?;
    PrivateKeyDer::from_pem_slice(&bytes).map_err(|_| TlsError::NoPemItem {
        path: path.to_path_buf(),
        what: "private key",
    })
}

fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    fs::read(path).map_err(|error| TlsError::Read {
        path: path.to_path_buf(),
        error,
    })
}

/// Builds the rustls server configuration of `options`.
pub fn server_config(options: &TlsOptions) -> Result<Arc<ServerConfig>, TlsError> {
    let builder =
        ServerConfig::builder_with_provider(provider()).with_safe_default_protocol_versions()?;
    let builder = match &options.auth_path {
        Some(auth_path) => {
            let mut roots = RootCertStore::empty();
            for root in load_certificates(auth_path)? {
                roots.add(root)?;
            }
            let mut verifier =
                WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider());
            if !options.require_auth {
                verifier = verifier.allow_unauthenticated();
            }
            let verifier = verifier
                .build()
                .map_err(|error| TlsError::ClientVerifier(error.to_string()))?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let certificates = load_certificates(&options.cert_path)?;
    let key = load_private_key(&options.key_path)?;
    let ocsp = match &options.ocsp_path {
        Some(path) => read(path)?,
        None => Vec::new(),
    };
    let mut config = builder.with_single_cert_with_ocsp(certificates, key, ocsp)?;
    config.session_storage = if options.resumption {
        ServerSessionMemoryCache::new(SESSION_CACHE_ENTRIES)
    } else {
        Arc::new(NoServerSessionStorage {})
    };
    if options.tickets {
        config.ticketer = rustls::crypto::ring::Ticketer::new()?;
    }
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// The TLS stream [`TlsAcceptor::accept`] yields.
pub type TlsStream<S> = futures_rustls::server::TlsStream<S>;

/// Performs server handshakes with one configuration. Cheap to clone.
#[derive(Clone)]
pub struct TlsAcceptor {
    inner: futures_rustls::TlsAcceptor,
}

impl TlsAcceptor {
    /// An acceptor for `config`.
    pub fn new(config: Arc<ServerConfig>) -> TlsAcceptor {
        TlsAcceptor {
            inner: futures_rustls::TlsAcceptor::from(config),
        }
    }

    /// An acceptor built from the `--ssl-*` options.
    pub fn from_options(options: &TlsOptions) -> Result<TlsAcceptor, TlsError> {
        server_config(options).map(TlsAcceptor::new)
    }

    /// Runs the server handshake on `stream`.
    pub async fn accept<S>(&self, stream: S) -> io::Result<TlsStream<S>>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        self.inner.accept(stream).await
    }

    /// Runs the server handshake, giving up after `timeout` (`io::ErrorKind::TimedOut`).
    pub async fn accept_with_timeout<S, T>(
        &self,
        stream: S,
        timer: &T,
        timeout: Duration,
    ) -> io::Result<TlsStream<S>>
    where
        S: AsyncRead + AsyncWrite + Unpin,
        T: Timer,
    {
        with_timeout(timer, timeout, self.accept(stream))
            .await
            .unwrap_or_else(|| Err(io::ErrorKind::TimedOut.into()))
    }
}

#[cfg(test)]
#[path = "tls_tests.rs"]
mod tests;
