//! Black-box checks of what the HTTP fast path must not weaken: a half-sent head (slow
//! loris) and a silent connection are still cut after the header timeout on a one-core
//! server while that core keeps serving others, and the batched request log writes one line
//! per request, none lost at shutdown.

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{Options, Server, request};

/// The server's header read timeout (`HEADER_READ_TIMEOUT`).
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(5);
/// Slack allowed around it for a loaded test machine.
const TIMEOUT_SLACK: Duration = Duration::from_secs(5);

fn one_core_server() -> Server {
    Server::start_with(Options {
        cores: Some(1),
        ..Options::default()
    })
}

/// Reads until the peer closes; returns what it sent.
fn read_until_closed(stream: &mut TcpStream) -> Vec<u8> {
    stream
        .set_read_timeout(Some(HEADER_READ_TIMEOUT + TIMEOUT_SLACK * 2))
        .expect("set_read_timeout succeeds");
    let mut received = Vec::new();
    stream
        .read_to_end(&mut received)
        .expect("the server closes the connection before the read timeout");
    received
}

#[test]
fn a_half_sent_head_is_cut_with_408_while_the_core_serves_others() {
    let server = one_core_server();
    let mut slow = TcpStream::connect(server.address).expect("connect succeeds");
    slow.write_all(b"GET /health HTTP/1.1\r\nHost: slow")
        .expect("write_all succeeds");
    let started = Instant::now();
    let mut other = server.connect().expect("connect succeeds");
    for _ in 0..20 {
        other.send(request("GET", "/health", None).as_bytes());
        let response = other.read_response().expect("read_response succeeds");
        assert_eq!(response.status, 200);
    }
    assert!(
        started.elapsed() < HEADER_READ_TIMEOUT,
        "served while the slow head waited"
    );
    let answer = String::from_utf8_lossy(&read_until_closed(&mut slow)).to_string();
    let waited = started.elapsed();
    assert!(answer.starts_with("HTTP/1.1 408 "), "{answer:?}");
    assert!(answer.contains("connection: close"), "{answer:?}");
    assert!(
        waited + Duration::from_millis(100) >= HEADER_READ_TIMEOUT,
        "{waited:?}"
    );
    assert!(waited <= HEADER_READ_TIMEOUT + TIMEOUT_SLACK, "{waited:?}");
}

#[test]
fn a_silent_connection_is_closed_after_the_header_timeout() {
    let server = one_core_server();
    let mut silent = TcpStream::connect(server.address).expect("connect succeeds");
    let started = Instant::now();
    let received = read_until_closed(&mut silent);
    let waited = started.elapsed();
    assert!(received.is_empty(), "{received:?}");
    assert!(
        waited + Duration::from_millis(100) >= HEADER_READ_TIMEOUT,
        "{waited:?}"
    );
    assert!(waited <= HEADER_READ_TIMEOUT + TIMEOUT_SLACK, "{waited:?}");
    let mut connection = server.connect().expect("connect succeeds");
    connection.send(request("GET", "/health", None).as_bytes());
    assert_eq!(connection.read_response().expect("answered").status, 200);
}

#[test]
fn every_request_gets_one_log_line_and_none_is_lost_at_shutdown() {
    let requests = 500;
    let scratch = tempfile::tempdir().expect("tempdir succeeds");
    let log_path = scratch.path().join("stderr.log");
    let log_file = std::fs::File::create(&log_path).expect("create succeeds");
    let address = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port");
    let mut child = Command::new(env!("CARGO_BIN_EXE_coresearch"))
        .arg("--http-addr")
        .arg(address.to_string())
        .arg("--db-path")
        .arg(scratch.path().join("data.ms"))
        .args(["--cores", "2", "--no-analytics", "--log-level", "INFO"])
        .env_remove("MEILI_MASTER_KEY")
        .env_remove("MEILI_LOG_LEVEL")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log_file)
        .spawn()
        .expect("spawn succeeds");
    // Until every core serves, `/health` answers 503 `starting` (a core whose router is
    // built logs it): wait for one 200, as a balancer would, and count it below.
    let started = Instant::now();
    loop {
        let health = common::raw_to(&address.to_string(), &request("GET", "/health", None));
        if health.is_some_and(|response| response.status == 200) {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the server never became ready"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let stream = loop {
        match TcpStream::connect(address) {
            Ok(stream) => break stream,
            Err(_) if started.elapsed() < Duration::from_secs(30) => {
                std::thread::sleep(Duration::from_millis(20))
            }
            Err(error) => panic!("the server did not start: {error}"),
        }
    };
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("set_read_timeout succeeds");
    let mut connection = common::Connection::new(stream);
    for index in 0..requests {
        connection.send(request("GET", &format!("/health?request={index}"), None).as_bytes());
        assert_eq!(connection.read_response().expect("answered").status, 200);
    }
    // SAFETY: sending a signal to our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().expect("wait succeeds");
    assert!(status.success(), "{status:?}");
    let log = std::fs::read_to_string(&log_path).expect("read_to_string succeeds");
    let request_lines: Vec<&str> = log
        .lines()
        .filter(|line| line.contains(" INFO coresearch::routes: request core="))
        .filter(|line| !line.contains(" status=503 "))
        .collect();
    // The requests sent, and the readiness probe that answered 200.
    assert_eq!(request_lines.len(), requests + 1, "{log}");
    assert!(
        request_lines
            .iter()
            .all(|line| line.contains(" method=GET path=/health status=200 duration_us=")),
        "{log}"
    );
}
