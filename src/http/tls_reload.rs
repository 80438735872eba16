//! The TLS configuration every core handshakes with, replaceable while the server runs
//! (SIGHUP reloads the certificate and key, see `crate::server`'s `reload`).
//!
//! [`SharedTlsConfig`] is the one cell of the process: the current `rustls` server
//! configuration behind a mutex, and a generation counter bumped each time a new one is
//! published. Each core holds a [`CoreTlsAcceptor`]: its own acceptor and the generation it
//! was built from. Before a handshake, the core compares that generation with the shared one
//! (one relaxed atomic load); only when they differ does it take the lock, once, to build
//! an acceptor for the new configuration.
//!
//! Invariants:
//! - the generation only grows, and is bumped under the lock after the configuration is
//!   stored, so a core that reads both under the lock never pairs a generation with an
//!   older configuration;
//! - a handshake uses the configuration current when it began; connections already
//!   established keep their session whatever is published later (nothing here touches
//!   them);
//! - the per-connection cost is one relaxed atomic load while nothing was published.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use futures_rustls::rustls::ServerConfig;

use super::tls::TlsAcceptor;

/// The process's TLS configuration, shared by every core.
pub struct SharedTlsConfig {
    /// Bumped (under `config`'s lock) each time a configuration is published.
    generation: AtomicU64,
    config: Mutex<Arc<ServerConfig>>,
}

impl SharedTlsConfig {
    /// A cell holding `config`, at generation 0.
    pub fn new(config: Arc<ServerConfig>) -> SharedTlsConfig {
        SharedTlsConfig {
            generation: AtomicU64::new(0),
            config: Mutex::new(config),
        }
    }

    /// Makes `config` the one new handshakes use, on every core.
    pub fn publish(&self, config: Arc<ServerConfig>) {
        let mut current = self.config.lock().unwrap_or_else(PoisonError::into_inner);
        *current = config;
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// How many configurations were published since the first.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Relaxed)
    }

    /// The current configuration and its generation, read together.
    fn current(&self) -> (u64, Arc<ServerConfig>) {
        let current = self.config.lock().unwrap_or_else(PoisonError::into_inner);
        (self.generation.load(Ordering::Acquire), current.clone())
    }
}

/// One core's acceptor, rebuilt when the shared configuration changed. Not `Send`: each
/// core owns its own.
pub struct CoreTlsAcceptor {
    shared: Arc<SharedTlsConfig>,
    /// The generation `acceptor` was built from.
    seen: Cell<u64>,
    acceptor: RefCell<TlsAcceptor>,
}

impl CoreTlsAcceptor {
    /// An acceptor for the current configuration of `shared`.
    pub fn new(shared: Arc<SharedTlsConfig>) -> CoreTlsAcceptor {
        let (generation, config) = shared.current();
        CoreTlsAcceptor {
            shared,
            seen: Cell::new(generation),
            acceptor: RefCell::new(TlsAcceptor::new(config)),
        }
    }

    /// The acceptor for the next handshake: the latest published configuration.
    pub fn current(&self) -> TlsAcceptor {
        if self.shared.generation() != self.seen.get() {
            let (generation, config) = self.shared.current();
            self.seen.set(generation);
            *self.acceptor.borrow_mut() = TlsAcceptor::new(config);
        }
        self.acceptor.borrow().clone()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::http::tls::{TlsOptions, server_config};

    /// A server configuration for a fresh self-signed certificate.
    fn generated(directory: &std::path::Path, name: &str) -> Arc<ServerConfig> {
        let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()])
            .expect("a self-signed certificate");
        let cert_path = directory.join(format!("{name}.pem"));
        let key_path = directory.join(format!("{name}.key"));
        std::fs::write(&cert_path, certified.cert.pem()).expect("the test file is written");
        std::fs::write(&key_path, certified.signing_key.serialize_pem())
            .expect("the test file is written");
        let options = TlsOptions {
            cert_path,
            key_path,
            ..TlsOptions::default()
        };
        server_config(&options).expect("the test certificate makes a TLS configuration")
    }

    #[test]
    fn a_core_picks_up_a_published_configuration_once() {
        let directory = tempfile::tempdir().expect("a temporary directory");
        let first = generated(directory.path(), "first");
        let second = generated(directory.path(), "second");
        let shared = Arc::new(SharedTlsConfig::new(first.clone()));
        let core = CoreTlsAcceptor::new(shared.clone());
        let _ = core.current();
        assert_eq!(core.seen.get(), 0);
        assert!(Arc::ptr_eq(&shared.current().1, &first));

        shared.publish(second.clone());
        assert_eq!(shared.generation(), 1);
        let _ = core.current();
        assert_eq!(core.seen.get(), 1);
        assert!(Arc::ptr_eq(&shared.current().1, &second));

        let late = CoreTlsAcceptor::new(shared.clone());
        assert_eq!(late.seen.get(), 1, "a core made later starts at the latest");
    }
}
