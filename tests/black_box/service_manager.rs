//! Readiness for systemd and load balancers, over the real notify protocol: the test binds a
//! datagram socket, starts the server with `NOTIFY_SOCKET` (and `WATCHDOG_USEC`) naming it,
//! and reads what the server sends: `READY=1` once it serves, `WATCHDOG=1` while it runs,
//! `STOPPING=1` on SIGTERM. `GET /health` answers 503 `draining` during the shutdown drain
//! delay, while every other route still answers.

use crate::common;

use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::time::{Duration, Instant};

use common::{Options, Server, request};

/// The watchdog interval the test asks for: pings every 200 ms.
const WATCHDOG_USEC: u64 = 400_000;
/// How long the test collects watchdog pings.
const PING_WINDOW: Duration = Duration::from_millis(1_500);
/// Fewest pings in `PING_WINDOW` (about seven are sent; a loaded CI machine may lose a look).
const PINGS_MIN: usize = 3;
/// How long a read of the notify socket waits.
const NOTIFY_WAIT: Duration = Duration::from_secs(10);
/// The drain delay of the draining test.
const DRAIN_DELAY: Duration = Duration::from_secs(2);
/// How long after the drain delay the process may take to exit.
const EXIT_SLACK: Duration = Duration::from_secs(4);

fn notify_socket(directory: &Path) -> UnixDatagram {
    let socket = UnixDatagram::bind(directory.join("notify.sock")).expect("bind succeeds");
    socket
        .set_read_timeout(Some(NOTIFY_WAIT))
        .expect("set_read_timeout succeeds");
    socket
}

/// The next datagram, as text; `None` once none came within the socket's timeout.
fn next_message(socket: &UnixDatagram) -> Option<String> {
    let mut buffer = [0_u8; 4096];
    let length = socket.recv(&mut buffer).ok()?;
    Some(String::from_utf8_lossy(&buffer[..length]).into_owned())
}

fn has_line(message: &str, line: &str) -> bool {
    message.lines().any(|candidate| candidate == line)
}

/// Reads messages until one holds `line`; the messages read before it are returned too.
fn read_until(socket: &UnixDatagram, line: &str) -> Vec<String> {
    let mut seen = Vec::new();
    while let Some(message) = next_message(socket) {
        let found = has_line(&message, line);
        seen.push(message);
        if found {
            return seen;
        }
    }
    panic!("no `{line}` from the server; it sent {seen:?}");
}

fn notified_server(scratch: &Path, extra: &[(&str, String)]) -> Server {
    let mut environment = vec![(
        "NOTIFY_SOCKET".to_owned(),
        scratch.join("notify.sock").display().to_string(),
    )];
    environment.extend(
        extra
            .iter()
            .map(|(name, value)| (name.to_string(), value.clone())),
    );
    Server::start_with(Options {
        environment,
        ..Options::default()
    })
}

#[test]
fn ready_watchdog_and_stopping_over_the_notify_socket() {
    let scratch = tempfile::tempdir().expect("tempdir succeeds");
    let socket = notify_socket(scratch.path());
    let server = notified_server(
        scratch.path(),
        &[("WATCHDOG_USEC", WATCHDOG_USEC.to_string())],
    );

    let ready = read_until(&socket, "READY=1");
    let ready_message = ready
        .last()
        .expect("read_until returns the message it found");
    assert!(
        has_line(ready_message, "STATUS=serving on 2 cores"),
        "{ready_message:?}"
    );
    let health = server.raw(&request("GET", "/health", None));
    assert_eq!(
        (health.status, health.json()),
        (200, serde_json::json!({"status": "available"}))
    );

    let window = Instant::now();
    let mut pings = 0;
    while window.elapsed() < PING_WINDOW {
        let message = next_message(&socket).expect("the server keeps pinging");
        assert!(!has_line(&message, "STOPPING=1"), "{message:?}");
        pings += usize::from(has_line(&message, "WATCHDOG=1"));
    }
    assert!(
        pings >= PINGS_MIN,
        "{pings} watchdog pings in {PING_WINDOW:?}"
    );

    let status = server.stop();
    assert!(status.success(), "exit status {status:?}");
    read_until(&socket, "STOPPING=1");
}

#[test]
fn no_watchdog_pings_unless_asked() {
    let scratch = tempfile::tempdir().expect("tempdir succeeds");
    let socket = notify_socket(scratch.path());
    let server = notified_server(scratch.path(), &[]);
    read_until(&socket, "READY=1");
    socket
        .set_read_timeout(Some(Duration::from_millis(800)))
        .expect("set_read_timeout succeeds");
    assert_eq!(next_message(&socket), None, "a message without a watchdog");
    let status = server.stop();
    assert!(status.success(), "exit status {status:?}");
}

#[test]
fn health_is_503_while_draining_and_the_other_routes_still_answer() {
    let scratch = tempfile::tempdir().expect("tempdir succeeds");
    let socket = notify_socket(scratch.path());
    let server = Server::start_with(Options {
        extra_arguments: vec![
            "--shutdown-drain-delay-seconds".to_owned(),
            DRAIN_DELAY.as_secs().to_string(),
        ],
        environment: vec![(
            "NOTIFY_SOCKET".to_owned(),
            scratch.path().join("notify.sock").display().to_string(),
        )],
        ..Options::default()
    });
    read_until(&socket, "READY=1");

    let signalled = Instant::now();
    // SAFETY: sending a signal to the test's own child process.
    unsafe { libc::kill(server.pid() as i32, libc::SIGTERM) };
    read_until(&socket, "STOPPING=1");
    let health = server.raw(&request("GET", "/health", None));
    assert_eq!(
        (health.status, health.json()),
        (503, serde_json::json!({"status": "draining"}))
    );
    let version = server.raw(&request("GET", "/version", None));
    assert_eq!(version.status, 200, "{}", version.text());
    assert!(
        signalled.elapsed() < DRAIN_DELAY,
        "the checks outlasted the delay"
    );

    let status = server.stop();
    let took = signalled.elapsed();
    assert!(status.success(), "exit status {status:?}");
    assert!(
        took >= DRAIN_DELAY && took < DRAIN_DELAY + EXIT_SLACK,
        "exited {took:?} after SIGTERM with a {DRAIN_DELAY:?} drain delay"
    );
}

#[test]
fn a_drain_delay_out_of_range_is_refused_at_start() {
    let (code, stderr) = common::failed_start(&["--shutdown-drain-delay-seconds", "301"], &[]);
    assert_ne!(code, 0, "{stderr}");
    assert!(
        stderr.contains("--shutdown-drain-delay-seconds") && stderr.contains("301"),
        "{stderr}"
    );
}
