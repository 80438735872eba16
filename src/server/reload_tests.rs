//! Tests of what a reload applies and what it says needs a restart.

#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::path::Path;

use super::*;
use crate::config::{LogLevel, LogMode};

fn config(arguments: &[&str], cwd: &Path) -> Config {
    let mut all = vec!["coresearch"];
    all.extend_from_slice(arguments);
    Config::parse_from(all, &HashMap::new(), cwd).expect("the test configuration is valid")
}

/// Writes a fresh self-signed certificate and its key as `name.pem` and `name.key`.
fn write_certificate(directory: &Path, name: &str) {
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()])
        .expect("a self-signed certificate");
    std::fs::write(directory.join(format!("{name}.pem")), certified.cert.pem())
        .expect("the test file is written");
    std::fs::write(
        directory.join(format!("{name}.key")),
        certified.signing_key.serialize_pem(),
    )
    .expect("the test key is written");
}

fn restart_needed(running: &Config, read: &Config) -> Vec<String> {
    running.changed_fields(&with_reloadable_settings_of(running, read))
}

#[test]
fn the_log_level_and_tls_settings_reload_and_the_rest_needs_a_restart() {
    let directory = tempfile::tempdir().expect("a temporary directory");
    let cwd = directory.path();
    let tls = ["--ssl-cert-path", "a.pem", "--ssl-key-path", "a.key"];
    let running = config(&tls, cwd);
    let read = config(
        &[
            "--ssl-cert-path",
            "b.pem",
            "--ssl-key-path",
            "b.key",
            "--ssl-tickets",
            "--log-level",
            "debug",
        ],
        cwd,
    );
    assert!(restart_needed(&running, &read).is_empty());

    let mut other = tls.to_vec();
    other.extend(["--http-payload-size-limit", "1MB"]);
    assert_eq!(
        restart_needed(&running, &config(&other, cwd)),
        ["http_payload_size_limit"]
    );
}

#[test]
fn turning_tls_on_or_off_needs_a_restart() {
    let directory = tempfile::tempdir().expect("a temporary directory");
    let cwd = directory.path();
    let plain = config(&[], cwd);
    let with_tls = config(
        &["--ssl-cert-path", "a.pem", "--ssl-key-path", "a.key"],
        cwd,
    );
    let paths = ["ssl_cert_path", "ssl_key_path"];
    assert_eq!(restart_needed(&plain, &with_tls), paths);
    assert_eq!(restart_needed(&with_tls, &plain), paths);
}

/// A reloader for `running`, and the subscriber its log control changes (which must live
/// as long as the control is used).
fn reloader(
    running: Config,
    tls: Option<Arc<SharedTlsConfig>>,
) -> (crate::logs::LogSubscriber, Reloader) {
    let (subscriber, logs) =
        crate::logs::subscriber(running.log_level, LogMode::Human, false, std::io::sink);
    (subscriber, Reloader::new(running, logs, tls))
}

#[test]
fn refused_tls_material_keeps_the_previous_configuration() {
    let directory = tempfile::tempdir().expect("a temporary directory");
    let cwd = directory.path();
    write_certificate(cwd, "a");
    write_certificate(cwd, "b");
    let running = config(
        &["--ssl-cert-path", "a.pem", "--ssl-key-path", "a.key"],
        cwd,
    );
    let shared = Arc::new(SharedTlsConfig::new(
        crate::http::tls::server_config(&super::super::tls_options(&running).expect("TLS options"))
            .expect("a TLS configuration"),
    ));
    let (_subscriber, mut reloader) = reloader(running, Some(shared.clone()));

    let mismatched = config(
        &["--ssl-cert-path", "a.pem", "--ssl-key-path", "b.key"],
        cwd,
    );
    assert!(
        !reloader.apply_tls(&mismatched),
        "a key of another certificate"
    );
    std::fs::write(cwd.join("broken.key"), "not a key").expect("the test file is written");
    let broken = config(
        &["--ssl-cert-path", "a.pem", "--ssl-key-path", "broken.key"],
        cwd,
    );
    assert!(!reloader.apply_tls(&broken));
    assert_eq!(shared.generation(), 0);
    assert_eq!(reloader.running.ssl_key_path, Some(cwd.join("a.key")));

    let renewed = config(
        &["--ssl-cert-path", "b.pem", "--ssl-key-path", "b.key"],
        cwd,
    );
    assert!(reloader.apply_tls(&renewed));
    assert_eq!(shared.generation(), 1);
    assert_eq!(reloader.running.ssl_cert_path, Some(cwd.join("b.pem")));
}

#[test]
fn the_log_level_is_applied_and_remembered() {
    let directory = tempfile::tempdir().expect("a temporary directory");
    let cwd = directory.path();
    let (_subscriber, mut reloader) = reloader(config(&["--log-level", "warn"], cwd), None);
    reloader.apply_log_level(&config(&["--log-level", "info"], cwd));
    assert_eq!(reloader.running.log_level, LogLevel::Info);
    assert!(
        reloader.apply_tls(&config(&[], cwd)),
        "no TLS: nothing refused"
    );
}
