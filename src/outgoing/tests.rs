//! The client against a real HTTP server: a std `TcpListener` on a thread that answers
//! each connection with the next scripted response and records what it received.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::*;

/// How long the test server waits for connections that never come before it stops.
const SERVER_IDLE_LIMIT: Duration = Duration::from_secs(5);

/// One scripted answer: a pause before answering, then the raw bytes.
struct Answer {
    pause: Duration,
    bytes: Vec<u8>,
}

fn answer(bytes: &str) -> Answer {
    Answer {
        pause: Duration::ZERO,
        bytes: bytes.as_bytes().to_vec(),
    }
}

/// Starts a server answering one connection per scripted answer; joining it gives the
/// requests it received.
fn serve(script: Vec<Answer>) -> (SocketAddr, JoinHandle<Vec<String>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = listener.local_addr().expect("address");
    listener.set_nonblocking(true).expect("non-blocking");
    let handle = std::thread::spawn(move || {
        let mut received = Vec::new();
        let started = Instant::now();
        for answer in script {
            let stream = loop {
                match listener.accept() {
                    Ok((stream, _)) => break Some(stream),
                    Err(_) if started.elapsed() < SERVER_IDLE_LIMIT => {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    Err(_) => break None,
                }
            };
            let Some(mut stream) = stream else { break };
            received.push(read_request(&mut stream));
            std::thread::sleep(answer.pause);
            let _ = stream.write_all(&answer.bytes);
        }
        received
    });
    (address, handle)
}

/// Reads one request: its head, then `Content-Length` bytes of body.
fn read_request(stream: &mut TcpStream) -> String {
    stream.set_nonblocking(false).expect("blocking");
    let mut bytes = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        let count = stream.read(&mut buffer).expect("read");
        bytes.extend_from_slice(&buffer[..count]);
        let text = String::from_utf8_lossy(&bytes).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text
                .lines()
                .find_map(|line| line.strip_prefix("Content-Length: "))
                .map_or(0, |value| value.trim().parse().expect("length"));
            if bytes.len() >= end + 4 + length || count == 0 {
                return text;
            }
        } else if count == 0 {
            return text;
        }
    }
}

/// Fast retries, so the tests run quickly.
fn quick_options() -> SendOptions {
    SendOptions {
        connect_timeout: Duration::from_secs(2),
        request_timeout: Duration::from_secs(5),
        max_attempts: 3,
        first_backoff: Duration::from_millis(50),
        max_backoff: Duration::from_millis(200),
        ..SendOptions::default()
    }
}

/// Sends `request` from a fresh core with `policy`; the outcome and how long it took.
fn send_on_core(
    policy: IpPolicy,
    request: OutgoingRequest,
) -> (Result<OutgoingResponse, OutgoingError>, Duration) {
    crate::runtime::task::run_on_test_core(move || async move {
        let readiness = crate::runtime::readiness::install().expect("readiness");
        let client = OutgoingClient::new(policy, readiness).with_options(quick_options());
        let started = Instant::now();
        let outcome = client.send(request).await;
        (outcome, started.elapsed())
    })
}

fn loopback() -> IpPolicy {
    IpPolicy::parse(["127.0.0.0/8"]).expect("valid")
}

#[test]
fn a_json_post_round_trips_with_its_headers() {
    let (address, server) = serve(vec![answer(
        "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"ok\":true}",
    )]);
    let request = OutgoingRequest::new(Method::Post, &format!("http://{address}/indexes?x=1"))
        .expect("valid")
        .header("Authorization", "Bearer secret")
        .json(br#"{"uid":"movies"}"#.to_vec());
    let (outcome, _) = send_on_core(loopback(), request);
    let response = outcome.expect("a response");
    assert_eq!(response.status, 201);
    assert_eq!(response.header("content-type"), Some("application/json"));
    assert_eq!(response.body, br#"{"ok":true}"#);
    let received = server.join().expect("server");
    let request = &received[0];
    assert!(
        request.starts_with("POST /indexes?x=1 HTTP/1.1\r\n"),
        "{request}"
    );
    assert!(
        request.contains("Authorization: Bearer secret\r\n"),
        "{request}"
    );
    assert!(
        request.contains("Content-Type: application/json\r\n"),
        "{request}"
    );
    assert!(
        request.ends_with("\r\n\r\n{\"uid\":\"movies\"}"),
        "{request}"
    );
}

#[test]
fn a_chunked_response_is_reassembled() {
    let (address, server) = serve(vec![answer(
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{\"a\r\n5\r\n\":1}\n\r\n0\r\n\r\n",
    )]);
    let request = OutgoingRequest::new(Method::Get, &format!("http://{address}/")).expect("valid");
    let (outcome, _) = send_on_core(loopback(), request);
    assert_eq!(outcome.expect("a response").body, b"{\"a\":1}\n");
    server.join().expect("server");
}

#[test]
fn a_503_is_retried_and_the_200_that_follows_is_answered() {
    let (address, server) = serve(vec![
        answer("HTTP/1.1 503 Service Unavailable\r\nRetry-After: 0\r\nContent-Length: 0\r\n\r\n"),
        answer("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n"),
        answer("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"),
    ]);
    let request = OutgoingRequest::new(Method::Get, &format!("http://{address}/")).expect("valid");
    let (outcome, _) = send_on_core(loopback(), request);
    assert_eq!(outcome.expect("a response").status, 200);
    assert_eq!(server.join().expect("server").len(), 3);
}

#[test]
fn a_400_is_answered_at_once_without_retry() {
    let (address, server) = serve(vec![
        answer("HTTP/1.1 400 Bad Request\r\nContent-Length: 3\r\n\r\nbad"),
        answer("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
    ]);
    let request = OutgoingRequest::new(Method::Get, &format!("http://{address}/")).expect("valid");
    let (outcome, _) = send_on_core(loopback(), request);
    let response = outcome.expect("a response");
    assert_eq!(
        (response.status, response.body.as_slice()),
        (400, &b"bad"[..])
    );
    // The server waited for a second connection that never came.
    assert_eq!(server.join().expect("server").len(), 1);
}

#[test]
fn a_closed_port_fails_with_the_connect_error_after_bounded_retries() {
    let address = TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("address");
    let request = OutgoingRequest::new(Method::Get, &format!("http://{address}/")).expect("valid");
    let (outcome, elapsed) = send_on_core(loopback(), request);
    let error = outcome.expect_err("nobody listens");
    assert!(matches!(error, OutgoingError::Connect { .. }), "{error:?}");
    assert!(error.to_string().contains("could not connect"), "{error}");
    // Three attempts: pauses of 50 and 100 ms between them.
    assert!(elapsed >= Duration::from_millis(150), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
}

#[test]
fn a_slow_server_hits_the_request_timeout() {
    let (address, server) = serve(vec![Answer {
        pause: Duration::from_millis(1500),
        bytes: b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n".to_vec(),
    }]);
    let options = SendOptions {
        request_timeout: Duration::from_millis(300),
        max_attempts: 1,
        ..quick_options()
    };
    let request = OutgoingRequest::new(Method::Get, &format!("http://{address}/"))
        .expect("valid")
        .options(options);
    let (outcome, elapsed) = send_on_core(loopback(), request);
    let error = outcome.expect_err("too slow");
    assert!(matches!(error, OutgoingError::Timeout { .. }), "{error:?}");
    assert!(elapsed < Duration::from_millis(1200), "{elapsed:?}");
    server.join().expect("server");
}

#[test]
fn loopback_is_refused_by_default_and_allowed_when_listed() {
    let (address, server) = serve(vec![answer("HTTP/1.1 204 No Content\r\n\r\n")]);
    let url = format!("http://{address}/");
    let request = OutgoingRequest::new(Method::Get, &url).expect("valid");
    let (outcome, _) = send_on_core(IpPolicy::global_only(), request.clone());
    let error = outcome.expect_err("refused");
    assert!(
        matches!(error, OutgoingError::RejectedAddress { .. }),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("rejected IP `127.0.0.1`"),
        "{error}"
    );
    let (outcome, _) = send_on_core(loopback(), request);
    assert_eq!(outcome.expect("allowed").status, 204);
    assert_eq!(server.join().expect("server").len(), 1);
}

#[test]
fn a_host_name_is_resolved_off_the_core_and_checked() {
    let (address, server) = serve(vec![answer(
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi",
    )]);
    let url = format!("http://localhost:{}/", address.port());
    let request = OutgoingRequest::new(Method::Get, &url).expect("valid");
    let (outcome, _) = send_on_core(IpPolicy::global_only(), request.clone());
    let error = outcome.expect_err("localhost is not global");
    assert!(
        matches!(error, OutgoingError::RejectedAddress { .. }),
        "{error:?}"
    );
    let (outcome, _) = send_on_core(IpPolicy::allow_all(), request);
    assert_eq!(outcome.expect("allowed").body, b"hi");
    server.join().expect("server");
}

#[test]
fn a_bad_url_or_scheme_is_refused_when_the_request_is_built() {
    let error = OutgoingRequest::new(Method::Get, "not a url").expect_err("invalid");
    assert!(
        matches!(error, OutgoingError::InvalidUrl { .. }),
        "{error:?}"
    );
    let error = OutgoingRequest::new(Method::Get, "ftp://example.com/").expect_err("scheme");
    assert_eq!(error.to_string(), "unsupported URL scheme `ftp`");
}

/// Starts a server answering one connection with `parts`, each after its pause; joining
/// it gives the request it received.
fn serve_parts(parts: Vec<Answer>) -> (SocketAddr, JoinHandle<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = listener.local_addr().expect("address");
    let handle = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().expect("a connection");
        let request = read_request(&mut stream);
        for part in parts {
            std::thread::sleep(part.pause);
            if stream.write_all(&part.bytes).is_err() {
                break;
            }
        }
        request
    });
    (address, handle)
}

/// Each piece of a streamed body, with when it came (since the send).
type TimedPieces = Vec<(Vec<u8>, Duration)>;

/// The status and pieces of a streamed response, or the error.
fn stream_on_core(
    request: OutgoingRequest,
    idle_timeout: Duration,
) -> Result<(u16, TimedPieces), OutgoingError> {
    crate::runtime::task::run_on_test_core(move || async move {
        let readiness = crate::runtime::readiness::install().expect("readiness");
        let client = OutgoingClient::new(loopback(), readiness).with_options(quick_options());
        let started = Instant::now();
        let mut response = client.send_streamed(request, idle_timeout).await?;
        let mut pieces = Vec::new();
        while let Some(piece) = response.next_piece().await? {
            pieces.push((piece, started.elapsed()));
        }
        Ok((response.status, pieces))
    })
}

fn paused(pause: Duration, bytes: &[u8]) -> Answer {
    Answer {
        pause,
        bytes: bytes.to_vec(),
    }
}

#[test]
fn a_streamed_body_is_handed_over_piece_by_piece_as_it_arrives() {
    let pause = Duration::from_millis(600);
    let (address, server) = serve_parts(vec![
        paused(
            Duration::ZERO,
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n9\r\ndata: a\n\n\r\n",
        ),
        paused(pause, b"9\r\ndata: b\n\n\r\n0\r\n\r\n"),
    ]);
    let request = OutgoingRequest::new(Method::Post, &format!("http://{address}/v1"))
        .expect("valid")
        .json(b"{}".to_vec());
    let (status, pieces) = stream_on_core(request, Duration::from_secs(5)).expect("a stream");
    assert_eq!(status, 200);
    let body: Vec<u8> = pieces.iter().flat_map(|(piece, _)| piece.clone()).collect();
    assert_eq!(body, b"data: a\n\ndata: b\n\n");
    // The first event was handed over before the server sent the second.
    assert!(pieces[0].1 < pause, "{:?}", pieces[0].1);
    assert!(pieces.last().expect("pieces").1 >= pause);
    let mut parser = event_stream::EventStreamParser::new();
    let events = parser.feed(&body).expect("events");
    assert_eq!(events.len(), 2);
    assert!(
        server
            .join()
            .expect("server")
            .starts_with("POST /v1 HTTP/1.1\r\n")
    );
}

#[test]
fn a_silent_stream_fails_after_its_idle_timeout() {
    let (address, server) = serve_parts(vec![
        paused(
            Duration::ZERO,
            b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello",
        ),
        paused(Duration::from_millis(1500), b"world"),
    ]);
    let request = OutgoingRequest::new(Method::Get, &format!("http://{address}/")).expect("valid");
    let started = Instant::now();
    let error = stream_on_core(request, Duration::from_millis(300)).expect_err("silent");
    assert!(matches!(error, OutgoingError::Timeout { .. }), "{error:?}");
    assert!(started.elapsed() < Duration::from_millis(1400));
    server.join().expect("server");
}

#[test]
fn a_gzip_stream_is_decoded_and_an_until_close_body_ends_with_the_connection() {
    use std::io::Write as _;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(b"data: zipped\n\n").expect("write");
    let zipped = encoder.finish().expect("finish");
    let mut head =
        b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nConnection: close\r\n\r\n".to_vec();
    head.extend_from_slice(&zipped[..5]);
    let (address, server) = serve_parts(vec![
        paused(Duration::ZERO, &head),
        paused(Duration::from_millis(100), &zipped[5..]),
    ]);
    let request = OutgoingRequest::new(Method::Get, &format!("http://{address}/")).expect("valid");
    let (_, pieces) = stream_on_core(request, Duration::from_secs(5)).expect("a stream");
    let body: Vec<u8> = pieces.into_iter().flat_map(|(piece, _)| piece).collect();
    assert_eq!(body, b"data: zipped\n\n");
    server.join().expect("server");
}
