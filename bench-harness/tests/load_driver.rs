//! End-to-end tests of the load driver against a tiny in-test HTTP server
//! that answers by path: `/ok` (Content-Length), `/chunked` (chunked, written
//! in pieces), `/fail` (503), `/drop` (closes without answering), `/close`
//! (200 then `Connection: close`), `/slow` (answers after `SLOW_RESPONSE`),
//! `/auth` (200 only with `Authorization: Bearer secret`, else 401).
//! The server handles pipelined requests in order.

#![allow(clippy::unwrap_used)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

use bench_harness::load::{Limit, Pacing, RequestTemplate, RunOptions, Target, Workload, run};

/// How long `/slow` waits before answering.
const SLOW_RESPONSE: Duration = Duration::from_millis(50);
/// Seed printed and used by every test.
const SEED: u64 = 7;

fn start_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind succeeds");
    let address = listener.local_addr().expect("local_addr succeeds");
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || serve_connection(stream));
        }
    });
    address
}

/// Reads pipelined requests and answers each by path, until the peer closes.
fn serve_connection(mut stream: TcpStream) {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        while let Some((length, path, authorized)) = parse_request(&buffer) {
            buffer.drain(..length);
            if !answer(&mut stream, &path, authorized) {
                return;
            }
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(count) => buffer.extend_from_slice(&chunk[..count]),
        }
    }
}

/// A complete request at the start of `buffer`: (bytes, path, bearer ok).
fn parse_request(buffer: &[u8]) -> Option<(usize, String, bool)> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut request = httparse::Request::new(&mut headers);
    let head = match request.parse(buffer).expect("parse succeeds") {
        httparse::Status::Complete(head) => head,
        httparse::Status::Partial => return None,
    };
    let mut body = 0;
    let mut authorized = false;
    for header in request.headers.iter() {
        if header.name.eq_ignore_ascii_case("content-length") {
            body = std::str::from_utf8(header.value)
                .expect("from_utf8 succeeds")
                .parse::<usize>()
                .expect("parse succeeds");
        }
        if header.name.eq_ignore_ascii_case("authorization") && header.value == b"Bearer secret" {
            authorized = true;
        }
    }
    (buffer.len() >= head + body).then(|| {
        (
            head + body,
            request.path.expect("`path` holds a value").to_string(),
            authorized,
        )
    })
}

/// Writes the answer for `path`; false when the connection must end.
fn answer(stream: &mut TcpStream, path: &str, authorized: bool) -> bool {
    let fixed = |status: &str, body: &str| {
        format!(
            "HTTP/1.1 {status}\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
    };
    let written = match path {
        "/ok" => stream.write_all(fixed("200 OK", "{\"status\":\"available\"}").as_bytes()),
        "/fail" => stream.write_all(fixed("503 Service Unavailable", "busy").as_bytes()),
        "/auth" if authorized => stream.write_all(fixed("200 OK", "yes").as_bytes()),
        "/auth" => stream.write_all(fixed("401 Unauthorized", "no").as_bytes()),
        "/slow" => {
            std::thread::sleep(SLOW_RESPONSE);
            stream.write_all(fixed("200 OK", "late").as_bytes())
        }
        "/chunked" => {
            let pieces: [&[u8]; 3] = [
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nab",
                b"cd\r\n10;ext=1\r\n0123456789abcdef\r",
                b"\n0\r\nX-Trailer: yes\r\n\r\n",
            ];
            pieces
                .iter()
                .try_for_each(|piece| stream.write_all(piece).and_then(|()| stream.flush()))
        }
        "/close" => {
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok");
            return false;
        }
        _ => return false,
    };
    written.is_ok()
}

fn options(address: SocketAddr, templates: Vec<RequestTemplate>, limit: Limit) -> RunOptions {
    println!("seed {SEED}");
    RunOptions {
        target: Target::parse(&format!("http://{address}")).expect("parse succeeds"),
        api_key: None,
        workload: Workload::new("test", templates).expect("new succeeds"),
        connections: 1,
        pipeline_depth: 1,
        pacing: Pacing::ClosedLoop,
        limit,
        warmup: Duration::ZERO,
        timeout: Duration::from_secs(5),
        server_pids: Vec::new(),
        seed: SEED,
    }
}

fn get(path: &str) -> RequestTemplate {
    RequestTemplate::new("GET", path)
}

#[test]
fn closed_loop_request_count_is_exact_and_all_succeed() {
    let address = start_server();
    let mut options = options(address, vec![get("/ok")], Limit::Requests(500));
    options.connections = 4;
    let report = run(&options).expect("run succeeds");
    assert_eq!(report.responses, 500);
    assert_eq!(report.successes, 500);
    assert_eq!(report.error_total, 0, "{}", report.to_text());
    assert_eq!(report.latency.count, 500);
    assert!(report.latency.p50_microseconds > 0.0);
    assert!(report.connections_opened >= 4);
}

#[test]
fn pipelined_content_length_and_chunked_responses_are_all_read() {
    let address = start_server();
    let mut options = options(
        address,
        vec![get("/ok"), get("/chunked")],
        Limit::Requests(400),
    );
    options.connections = 2;
    options.pipeline_depth = 8;
    let report = run(&options).expect("run succeeds");
    assert_eq!(report.responses, 400, "{}", report.to_text());
    assert_eq!(report.error_total, 0, "{}", report.to_text());
    assert!(
        report
            .templates
            .iter()
            .all(|template| template.responses > 0)
    );
    assert_eq!(report.connections_opened, 2);
}

#[test]
fn non_2xx_and_io_errors_are_counted_separately_and_completely() {
    let address = start_server();
    let templates = vec![get("/ok"), get("/fail"), get("/drop")];
    let report = run(&options(address, templates, Limit::Requests(300))).expect("run succeeds");
    let non_2xx: u64 = report.non_2xx.values().sum();
    assert_eq!(
        report.responses + report.error_total,
        300,
        "{}",
        report.to_text()
    );
    assert_eq!(report.successes + non_2xx, report.responses);
    assert_eq!(report.non_2xx.keys().collect::<Vec<_>>(), vec!["503"]);
    assert!(report.non_2xx["503"] > 50, "{}", report.to_text());
    assert!(report.errors["closed_early"] > 50, "{}", report.to_text());
    assert_eq!(report.templates[2].responses, 0);
    assert_eq!(report.latency.count, report.successes);
}

#[test]
fn connection_close_responses_count_and_reconnect() {
    let address = start_server();
    let report =
        run(&options(address, vec![get("/close")], Limit::Requests(50))).expect("run succeeds");
    assert_eq!(report.successes, 50, "{}", report.to_text());
    assert_eq!(report.error_total, 0);
    assert_eq!(report.server_closes, 50);
    assert_eq!(report.connections_opened, 50);
}

#[test]
fn every_attempt_against_a_closed_port_is_a_connect_error() {
    let address = {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind succeeds");
        listener.local_addr().expect("local_addr succeeds")
    };
    let report =
        run(&options(address, vec![get("/ok")], Limit::Requests(20))).expect("run succeeds");
    assert_eq!(report.responses, 0);
    assert_eq!(report.errors["connect"], 20, "{}", report.to_text());
}

#[test]
fn silent_server_gives_timeouts() {
    let address = start_server();
    let mut options = options(address, vec![get("/slow")], Limit::Requests(3));
    options.timeout = Duration::from_millis(10);
    let report = run(&options).expect("run succeeds");
    assert_eq!(report.errors["timeout"], 3, "{}", report.to_text());
    assert_eq!(report.responses, 0);
}

#[test]
fn api_key_is_sent_as_bearer_token() {
    let address = start_server();
    let mut options = options(address, vec![get("/auth")], Limit::Requests(10));
    let without = run(&options).expect("run succeeds");
    assert_eq!(without.non_2xx["401"], 10);
    options.api_key = Some("secret".to_string());
    let with = run(&options).expect("run succeeds");
    assert_eq!(with.successes, 10, "{}", with.to_text());
}

#[test]
fn open_loop_follows_the_schedule() {
    let address = start_server();
    let mut options = options(address, vec![get("/ok")], Limit::Requests(100));
    options.pacing = Pacing::OpenLoop {
        rate_per_second: 500.0,
    };
    options.connections = 4;
    let report = run(&options).expect("run succeeds");
    assert_eq!(report.scheduled_requests, Some(100));
    assert_eq!(report.successes, 100, "{}", report.to_text());
    // 100 slots at 500/s: the last is sent 198 ms after the first.
    assert!(report.elapsed_seconds >= 0.198, "{}", report.to_text());
    assert!(report.elapsed_seconds < 5.0, "{}", report.to_text());
}

#[test]
fn open_loop_latency_includes_queueing_behind_a_slow_server() {
    let address = start_server();
    let mut options = options(address, vec![get("/slow")], Limit::Requests(10));
    // 10 requests every 10 ms on one connection, each served in 50 ms: the
    // last one waits about 9 × 40 ms in the driver before it can be sent.
    options.pacing = Pacing::OpenLoop {
        rate_per_second: 100.0,
    };
    let report = run(&options).expect("run succeeds");
    assert_eq!(report.successes, 10, "{}", report.to_text());
    let slow = SLOW_RESPONSE.as_micros() as f64;
    assert!(
        report.service_time.p50_microseconds >= slow,
        "{}",
        report.to_text()
    );
    assert!(
        report.latency.max_microseconds >= slow + 300_000.0,
        "{}",
        report.to_text()
    );
}

#[test]
fn server_cpu_is_measured_for_a_given_pid() {
    let address = start_server();
    let mut options = options(address, vec![get("/ok")], Limit::Requests(200));
    options.server_pids = vec![i32::try_from(std::process::id()).expect("try_from succeeds")];
    let report = run(&options).expect("run succeeds");
    let cpu = report.server_cpu.expect("own pid is readable");
    assert!(cpu.usage.wall_seconds > 0.0);
    assert!(cpu.usage.vanished.is_empty());
    assert!(cpu.cpu_microseconds_per_request >= 0.0);
    options.server_pids = vec![i32::MAX];
    assert!(run(&options).is_err());
}

#[test]
fn duration_limit_stops_the_run() {
    let address = start_server();
    let mut options = options(
        address,
        vec![get("/ok")],
        Limit::Duration(Duration::from_millis(200)),
    );
    options.warmup = Duration::from_millis(50);
    let report = run(&options).expect("run succeeds");
    assert!(report.responses > 0);
    assert!(
        report.elapsed_seconds >= 0.19 && report.elapsed_seconds < 2.0,
        "{}",
        report.to_text()
    );
}

#[test]
fn open_loop_with_pipelining_sends_on_schedule_while_responses_are_pending() {
    let address = start_server();
    let mut options = options(
        address,
        vec![get("/ok"), get("/chunked")],
        Limit::Requests(200),
    );
    options.pacing = Pacing::OpenLoop {
        rate_per_second: 2_000.0,
    };
    options.pipeline_depth = 4;
    let report = run(&options).expect("run succeeds");
    assert_eq!(report.successes, 200, "{}", report.to_text());
    assert_eq!(report.error_total, 0, "{}", report.to_text());
    assert_eq!(report.connections_opened, 1);
    assert!(report.elapsed_seconds >= 0.0995, "{}", report.to_text());
}

#[test]
fn slow_responses_say_when_they_arrived_within_the_measured_window() {
    let address = start_server();
    let mut options = options(
        address,
        vec![get("/slow")],
        Limit::Duration(Duration::from_millis(400)),
    );
    options.warmup = Duration::from_millis(100);
    let wall_clock = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("the clock is after 1970")
            .as_secs_f64()
    };
    let before = wall_clock();
    let report = run(&options).expect("run succeeds");
    let after = wall_clock();
    let text = report.to_text();
    // The window starts once the warm-up is over, and before the run returns.
    assert!(
        report.measured_from_unix_seconds >= before + 0.09
            && report.measured_from_unix_seconds <= after,
        "{before} {} {after}",
        report.measured_from_unix_seconds
    );
    // One connection answered every 50 ms: the responses kept are spread over the window.
    assert!(report.slowest.len() >= 4, "{text}");
    for slow in &report.slowest {
        assert!(
            slow.finished_at_seconds >= 0.0
                && slow.finished_at_seconds <= report.elapsed_seconds + 0.001,
            "{text}"
        );
    }
    let earliest = report
        .slowest
        .iter()
        .map(|slow| slow.finished_at_seconds)
        .fold(f64::MAX, f64::min);
    let latest = report
        .slowest
        .iter()
        .map(|slow| slow.finished_at_seconds)
        .fold(0.0, f64::max);
    assert!(latest - earliest >= 0.1, "{text}");
}
