//! SIGHUP reloads the configuration: it is read again exactly as at start
//! ([`Config::from_args_and_env`]: command-line flags > environment > configuration file >
//! default), and what can change while the server runs is applied. Since a running
//! process's flags and environment do not change, in practice this applies what the
//! configuration file now says.
//!
//! What a reload applies:
//! - **the log level** (`log_level`): stderr's filter is reset to it, even when it did not
//!   change, so a SIGHUP also undoes a target set by `POST /logs/stderr`; a running
//!   `/logs/stream` keeps its own target;
//! - **TLS**, when the server started with it and the configuration still names a
//!   certificate and a key: the files at `ssl_cert_path` and `ssl_key_path` are read again
//!   (their contents, and the paths, which the file may change), with the other `ssl_*`
//!   options (client-authentication roots, `ssl_require_auth`, the OCSP staple, resumption,
//!   tickets). Every core's next handshake uses the new configuration
//!   (`crate::http::tls_reload`); connections already established keep their session.
//!
//! What needs a restart: every other option, and turning TLS on or off. A reload that
//! finds one changed logs a warning naming it and leaves it as the server runs with it.
//!
//! Failures never end the process and never half-apply a reload's TLS:
//! - a configuration that cannot be read (a malformed file, an unknown key, a bad value) is
//!   logged with the error text a start would print, and nothing changes;
//! - TLS material that is refused (a missing file, no PEM item, a key that does not match
//!   the certificate) is logged with the reason, and the previous certificate stays in use;
//!   the log level read with it is still applied.
//!
//! Invariant: reloads run on the reload thread (`crate::runtime::reload_signal`), one at a
//! time, outside the cores: no core waits on the files a reload reads. The thread was
//! started by the main thread before the cores, so it has the process's CPU set, and the
//! defaults a reading derives from the machine (`--cores`) come out as they did at start.

use std::sync::Arc;

use crate::config::Config;
use crate::http::tls_reload::SharedTlsConfig;
use crate::logs::{LogControl, LogTargets, level_filter};
use crate::runtime::service_manager;

/// What a reload compares with and applies to.
pub struct Reloader {
    /// The configuration in effect: the start's, with what reloads applied since.
    running: Config,
    logs: LogControl,
    /// The TLS configuration of every core, when the server serves TLS.
    tls: Option<Arc<SharedTlsConfig>>,
}

impl Reloader {
    /// A reloader for a server started with `running`.
    pub fn new(running: Config, logs: LogControl, tls: Option<Arc<SharedTlsConfig>>) -> Self {
        Reloader { running, logs, tls }
    }

    /// Reads the configuration again and applies what can change; answers whether
    /// everything read was applied (tells the service manager around it).
    pub fn reload(&mut self) -> bool {
        service_manager::notify_reloading();
        let applied = self.reload_configuration();
        service_manager::notify_reloaded();
        applied
    }

    fn reload_configuration(&mut self) -> bool {
        let read = match Config::from_args_and_env() {
            Ok(read) => read,
            Err(error) => {
                tracing::error!(
                    "SIGHUP: the configuration was not reloaded, everything stays as it \
                     was: {error}"
                );
                return false;
            }
        };
        let restart = self
            .running
            .changed_fields(&with_reloadable_settings_of(&self.running, &read));
        if !restart.is_empty() {
            tracing::warn!(
                "SIGHUP: these settings changed but take effect only after a restart: {}",
                restart.join(", ")
            );
        }
        self.apply_log_level(&read);
        let tls_applied = self.apply_tls(&read);
        tracing::info!(
            log_level = %self.running.log_level,
            tls_reloaded = self.tls.is_some() && tls_applied,
            "SIGHUP: the configuration was reloaded"
        );
        tls_applied
    }

    /// Resets stderr's filter to `read`'s level.
    fn apply_log_level(&mut self, read: &Config) {
        let targets = LogTargets::at_level(level_filter(read.log_level));
        match self.logs.set_stderr_targets(targets) {
            Ok(()) => self.running.log_level = read.log_level,
            Err(error) => tracing::error!("SIGHUP: the log level was not changed: {error}"),
        }
    }

    /// Builds and publishes the TLS configuration `read` describes, when the server serves
    /// TLS and `read` still asks for it; answers false when the material was refused.
    fn apply_tls(&mut self, read: &Config) -> bool {
        let (Some(shared), Some(options)) = (&self.tls, super::tls_options(read)) else {
            return true;
        };
        match crate::http::tls::server_config(&options) {
            Ok(config) => {
                shared.publish(config);
                copy_tls_settings(read, &mut self.running);
                true
            }
            Err(error) => {
                tracing::error!(
                    "SIGHUP: the TLS certificate and key were not reloaded, new connections \
                     keep the previous ones: {error}"
                );
                false
            }
        }
    }
}

/// `read` with the settings a reload applies taken from `running`: what still differs from
/// `running` needs a restart. The `ssl_*` settings reload only while TLS stays on.
fn with_reloadable_settings_of(running: &Config, read: &Config) -> Config {
    let mut comparable = read.clone();
    comparable.log_level = running.log_level;
    if super::tls_options(running).is_some() && super::tls_options(read).is_some() {
        copy_tls_settings(running, &mut comparable);
    }
    comparable
}

/// Copies every `ssl_*` setting of `from` into `into`.
fn copy_tls_settings(from: &Config, into: &mut Config) {
    into.ssl_cert_path.clone_from(&from.ssl_cert_path);
    into.ssl_key_path.clone_from(&from.ssl_key_path);
    into.ssl_auth_path.clone_from(&from.ssl_auth_path);
    into.ssl_ocsp_path.clone_from(&from.ssl_ocsp_path);
    into.ssl_require_auth = from.ssl_require_auth;
    into.ssl_resumption = from.ssl_resumption;
    into.ssl_tickets = from.ssl_tickets;
}

#[cfg(test)]
#[path = "reload_tests.rs"]
mod tests;
