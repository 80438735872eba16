//! SIGHUP reloads the configuration without a restart: the TLS certificate and key (new
//! connections get the new certificate, established ones keep answering), the log level from
//! the configuration file; refused material or a malformed file keeps everything as it was,
//! logs why, and never ends the process. The service manager hears `RELOADING=1` then
//! `READY=1`.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::tls::TlsConnection;
use common::{Options, Server, request};

/// How long a reload may take to show (in the log, or on new connections).
const RELOAD_WAIT: Duration = Duration::from_secs(15);
/// The pause between two looks for a reload's effect.
const RELOAD_POLL_INTERVAL: Duration = Duration::from_millis(50);
/// Long enough for a request line to reach stderr if it was going to.
const REQUEST_LINE_WAIT: Duration =
    coresearch::request_log::REQUEST_LOG_FLUSH_INTERVAL.saturating_mul(5);
/// A request that keeps its connection open.
const HEALTH: &str = "GET /health HTTP/1.1\r\nHost: t\r\n\r\n";

/// A self-signed certificate for `localhost` and its key, as PEM, and the certificate's DER.
struct Certificate {
    pem: String,
    key_pem: String,
    der: Vec<u8>,
}

impl Certificate {
    fn generate() -> Certificate {
        let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()])
            .expect("generate_simple_self_signed succeeds");
        Certificate {
            pem: certified.cert.pem(),
            key_pem: certified.signing_key.serialize_pem(),
            der: certified.cert.der().to_vec(),
        }
    }
}

/// Where a test keeps the server's certificate and key files.
struct TlsFiles {
    _directory: tempfile::TempDir,
    cert_path: PathBuf,
    key_path: PathBuf,
}

impl TlsFiles {
    fn holding(certificate: &Certificate) -> TlsFiles {
        let directory = tempfile::tempdir().expect("tempdir succeeds");
        let files = TlsFiles {
            cert_path: directory.path().join("cert.pem"),
            key_path: directory.path().join("key.pem"),
            _directory: directory,
        };
        files.write(&certificate.pem, &certificate.key_pem);
        files
    }

    fn write(&self, cert_pem: &str, key_pem: &str) {
        std::fs::write(&self.cert_path, cert_pem).expect("write succeeds");
        std::fs::write(&self.key_path, key_pem).expect("write succeeds");
    }

    fn server(&self) -> Server {
        Server::start_with(Options {
            extra_arguments: vec![
                "--ssl-cert-path".to_owned(),
                self.cert_path.display().to_string(),
                "--ssl-key-path".to_owned(),
                self.key_path.display().to_string(),
            ],
            tls: true,
            ..Options::default()
        })
    }
}

/// Sends SIGHUP to the server.
fn hang_up(server: &Server) {
    let pid = i32::try_from(server.pid()).expect("a pid fits an i32");
    // SAFETY: sending a signal to our own child process.
    let sent = unsafe { libc::kill(pid, libc::SIGHUP) };
    assert_eq!(sent, 0, "SIGHUP was sent");
}

/// What the server wrote to stderr so far.
fn server_log(server: &Server) -> String {
    std::fs::read_to_string(server.data_directory.with_extension("stderr.log")).unwrap_or_default()
}

/// Waits until `found` holds for the server's log; answers the log.
fn wait_for_log(server: &Server, what: &str, found: impl Fn(&str) -> bool) -> String {
    let started = Instant::now();
    loop {
        let log = server_log(server);
        if found(&log) {
            return log;
        }
        assert!(
            started.elapsed() < RELOAD_WAIT,
            "no {what} in the log within {RELOAD_WAIT:?}:\n{log}"
        );
        std::thread::sleep(RELOAD_POLL_INTERVAL);
    }
}

/// The certificate a new connection gets, after checking that connection answers.
fn presented_certificate(server: &Server) -> Vec<u8> {
    let mut connection = TlsConnection::connect(server.address).expect("connect succeeds");
    let answer = connection.request(HEALTH).expect("request succeeds");
    assert_eq!(answer.status, 200);
    connection.peer_certificate()
}

/// The value of one series of `GET /metrics` (over TLS).
fn reloads(server: &Server, outcome: &str) -> f64 {
    let mut connection = TlsConnection::connect(server.address).expect("connect succeeds");
    let text = connection
        .request(&request("GET", "/metrics", None))
        .expect("request succeeds")
        .text();
    let series = format!("coresearch_configuration_reloads_total{{outcome=\"{outcome}\"}} ");
    text.lines()
        .find_map(|line| line.strip_prefix(&series))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {series} in:\n{text}"))
}

#[test]
fn a_reloaded_certificate_serves_new_connections_and_established_ones_keep_answering() {
    let (first, second) = (Certificate::generate(), Certificate::generate());
    let files = TlsFiles::holding(&first);
    let server = files.server();
    let mut established = TlsConnection::connect(server.address).expect("connect succeeds");
    assert_eq!(established.peer_certificate(), first.der);
    assert_eq!(established.request(HEALTH).expect("request").status, 200);

    files.write(&second.pem, &second.key_pem);
    hang_up(&server);
    let started = Instant::now();
    while presented_certificate(&server) != second.der {
        assert!(
            started.elapsed() < RELOAD_WAIT,
            "new connections still get the first certificate:\n{}",
            server_log(&server)
        );
        std::thread::sleep(RELOAD_POLL_INTERVAL);
    }

    let answer = established
        .request(HEALTH)
        .expect("the established connection answers");
    assert_eq!(answer.status, 200);
    assert_eq!(established.peer_certificate(), first.der);
    let version = established
        .request("GET /version HTTP/1.1\r\nHost: t\r\n\r\n")
        .expect("and answers again");
    assert_eq!(version.status, 200, "{}", version.text());
}

#[test]
fn refused_tls_material_keeps_the_previous_certificate_and_says_why() {
    let (first, second) = (Certificate::generate(), Certificate::generate());
    let files = TlsFiles::holding(&first);
    let server = Server::start_with(Options {
        extra_arguments: vec![
            "--ssl-cert-path".to_owned(),
            files.cert_path.display().to_string(),
            "--ssl-key-path".to_owned(),
            files.key_path.display().to_string(),
            "--experimental-enable-metrics".to_owned(),
        ],
        tls: true,
        ..Options::default()
    });
    let refusal = "the TLS certificate and key were not reloaded";

    files.write(&first.pem, "-----BEGIN PRIVATE KEY-----\nbroken\n");
    hang_up(&server);
    let log = wait_for_log(&server, refusal, |log| log.contains(refusal));
    assert!(log.contains("no private key found in"), "{log}");
    assert_eq!(presented_certificate(&server), first.der);

    // The second certificate with the first one's key.
    files.write(&second.pem, &first.key_pem);
    hang_up(&server);
    let log = wait_for_log(&server, "a second refusal", |log| {
        log.matches(refusal).count() == 2
    });
    assert!(log.contains("bad certificates/private key"), "{log}");
    assert_eq!(presented_certificate(&server), first.der);
    assert_eq!(reloads(&server, "failed"), 2.0);

    files.write(&second.pem, &second.key_pem);
    hang_up(&server);
    let started = Instant::now();
    while presented_certificate(&server) != second.der {
        assert!(started.elapsed() < RELOAD_WAIT, "{}", server_log(&server));
        std::thread::sleep(RELOAD_POLL_INTERVAL);
    }
    assert_eq!(reloads(&server, "succeeded"), 1.0);
}

/// A server reading `file` as its configuration file, with no `MEILI_LOG_LEVEL` in its
/// environment (which would beat the file's `log_level`).
fn server_with_configuration_file(file: &Path) -> Server {
    Server::start_with(Options {
        extra_arguments: vec!["--config-file-path".to_owned(), file.display().to_string()],
        removed_environment: vec!["MEILI_LOG_LEVEL".to_owned()],
        ..Options::default()
    })
}

#[test]
fn the_log_level_of_the_configuration_file_is_reloaded() {
    let scratch = tempfile::tempdir().expect("tempdir succeeds");
    let file = scratch.path().join("config.toml");
    std::fs::write(&file, "log_level = \"WARN\"\n").expect("write succeeds");
    let server = server_with_configuration_file(&file);
    server.raw(&request("GET", "/indexes/before-the-reload", None));

    std::fs::write(
        &file,
        "log_level = \"INFO\"\nhttp_payload_size_limit = \"1MB\"\n",
    )
    .expect("write succeeds");
    hang_up(&server);
    let log = wait_for_log(&server, "the reload's message", |log| {
        log.contains("SIGHUP: the configuration was reloaded")
    });
    assert!(log.contains(" INFO "), "{log}");
    assert!(
        log.contains(
            "these settings changed but take effect only after a restart: \
             http_payload_size_limit"
        ),
        "{log}"
    );
    // Request lines are INFO: they reach stderr now (a core writes them in batches).
    let started = Instant::now();
    loop {
        server.raw(&request("GET", "/indexes/after-the-reload", None));
        if server_log(&server).contains("/indexes/after-the-reload") {
            break;
        }
        assert!(started.elapsed() < RELOAD_WAIT, "{}", server_log(&server));
        std::thread::sleep(RELOAD_POLL_INTERVAL);
    }
    assert!(!server_log(&server).contains("/indexes/before-the-reload"));
}

/// What a start with `file` as its configuration file prints (and its exit status).
fn start_error(file: &Path) -> String {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_coresearch"))
        .arg("--config-file-path")
        .arg(file)
        .env_remove("MEILI_LOG_LEVEL")
        .output()
        .expect("the binary runs");
    assert!(!output.status.success(), "the start is refused");
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    stderr
        .trim_end()
        .strip_prefix("Error: ")
        .unwrap_or_else(|| panic!("unexpected refusal: {stderr}"))
        .to_owned()
}

#[test]
fn a_malformed_configuration_file_changes_nothing_and_logs_the_start_error() {
    let scratch = tempfile::tempdir().expect("tempdir succeeds");
    let file = scratch.path().join("config.toml");
    std::fs::write(&file, "log_level = \"WARN\"\n").expect("write succeeds");
    let server = server_with_configuration_file(&file);
    let refusal = "SIGHUP: the configuration was not reloaded, everything stays as it was";

    for (count, text) in [
        (1, "log_level = \"INFO\n"),
        (2, "log_level = \"INFO\"\nunknown_option = 1\n"),
        (3, "log_level = \"LOUDEST\"\n"),
    ] {
        std::fs::write(&file, text).expect("write succeeds");
        hang_up(&server);
        let log = wait_for_log(&server, "the refusal", |log| {
            log.matches(refusal).count() == count
        });
        if count < 3 {
            let error = start_error(&file);
            assert!(log.contains(&error), "{error:?} is not in:\n{log}");
        }
        assert_eq!(server.raw(&request("GET", "/health", None)).status, 200);
    }
    // Still at WARN: neither the reload's INFO message nor request lines.
    server.raw(&request("GET", "/indexes/after-the-refusals", None));
    std::thread::sleep(REQUEST_LINE_WAIT);
    let log = server_log(&server);
    assert!(!log.contains("/indexes/after-the-refusals"), "{log}");
    assert!(!log.contains("the configuration was reloaded"), "{log}");
}

/// The next notify-socket messages until one holds `line`, as text.
fn notified_until(socket: &std::os::unix::net::UnixDatagram, line: &str) -> Vec<String> {
    let mut seen = Vec::new();
    let mut buffer = [0_u8; 4096];
    while let Ok(length) = socket.recv(&mut buffer) {
        let message = String::from_utf8_lossy(&buffer[..length]).into_owned();
        let found = message.lines().any(|candidate| candidate == line);
        seen.push(message);
        if found {
            return seen;
        }
    }
    panic!("no `{line}` from the server; it sent {seen:?}");
}

#[test]
fn the_service_manager_hears_of_the_reload() {
    let scratch = tempfile::tempdir().expect("tempdir succeeds");
    let path = scratch.path().join("notify.sock");
    let socket = std::os::unix::net::UnixDatagram::bind(&path).expect("bind succeeds");
    socket
        .set_read_timeout(Some(RELOAD_WAIT))
        .expect("set_read_timeout succeeds");
    let server = Server::start_with(Options {
        environment: vec![("NOTIFY_SOCKET".to_owned(), path.display().to_string())],
        ..Options::default()
    });
    notified_until(&socket, "READY=1");

    hang_up(&server);
    let reloading = notified_until(&socket, "RELOADING=1");
    let announced = reloading.last().expect("a message");
    assert!(announced.contains("MONOTONIC_USEC="), "{announced:?}");
    notified_until(&socket, "READY=1");
    assert_eq!(server.raw(&request("GET", "/health", None)).status, 200);
}
