//! A client that sends a complete request and then shuts down its writing side (a TCP
//! half-close) gets its answer at once, whatever the timing of its segments and of the
//! end of its input: never after the body read timeout, never a 400; and the server then
//! closes the connection at once rather than after the idle timeout.

use crate::common;

use std::io::{Read, Write};
use std::net::Shutdown;
use std::time::{Duration, Instant};

use common::Server;

/// How many requests each half-closing scenario sends (the failure was intermittent).
const TRIES: usize = 50;
/// How long an answer to a complete request may take.
const ANSWER_DEADLINE: Duration = Duration::from_secs(2);
/// Documents of the upload scenario (a body of several reads).
const DOCUMENT_COUNT: usize = 5000;

/// The ways a request is handed to the kernel before the half-close.
#[derive(Debug, Clone, Copy)]
enum Sending {
    /// Head and body in one write.
    Whole,
    /// The head, then the body in a second write.
    HeadThenBody,
    /// The head, a pause, then the body.
    HeadPauseBody,
}

/// The pause of [`Sending::HeadPauseBody`]: long enough for the server to read the head alone.
const PAUSE: Duration = Duration::from_millis(2);

fn half_closed_exchange(server: &Server, head: &[u8], body: &[u8], sending: Sending) -> u16 {
    let mut stream = std::net::TcpStream::connect(server.address).expect("connect succeeds");
    stream.set_nodelay(true).expect("set_nodelay succeeds");
    stream
        .set_read_timeout(Some(ANSWER_DEADLINE))
        .expect("set_read_timeout succeeds");
    match sending {
        Sending::Whole => {
            let mut whole = head.to_vec();
            whole.extend_from_slice(body);
            stream.write_all(&whole).expect("write succeeds");
        }
        Sending::HeadThenBody => {
            stream.write_all(head).expect("write succeeds");
            stream.write_all(body).expect("write succeeds");
        }
        Sending::HeadPauseBody => {
            stream.write_all(head).expect("write succeeds");
            std::thread::sleep(PAUSE);
            stream.write_all(body).expect("write succeeds");
        }
    }
    stream.shutdown(Shutdown::Write).expect("shutdown succeeds");
    let started = Instant::now();
    let mut connection = common::Connection::new(stream);
    let response = connection.read_response().unwrap_or_else(|error| {
        panic!("no answer within {ANSWER_DEADLINE:?} ({sending:?}): {error}")
    });
    assert!(started.elapsed() < ANSWER_DEADLINE, "late answer");
    let mut rest = [0u8; 1];
    let end = connection.stream.read(&mut rest);
    assert!(
        matches!(end, Ok(0)),
        "the server did not close after the half-closed request ({sending:?}): {end:?}"
    );
    assert!(started.elapsed() < ANSWER_DEADLINE, "late close");
    response.status
}

#[test]
fn half_closed_requests_are_answered_at_once() {
    let server = Server::start();
    let body = br#"{"metrics": true}"#;
    let head = format!(
        "PATCH /experimental-features HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let bodiless = b"GET /health HTTP/1.1\r\nHost: t\r\n\r\n";
    let documents: String = (0..DOCUMENT_COUNT)
        .map(|id| format!("{{\"id\":{id},\"title\":\"document {id}\"}}\n"))
        .collect();
    let upload = format!(
        "POST /indexes/halfclosed/documents HTTP/1.1\r\nHost: t\r\nContent-Type: application/x-ndjson\r\nContent-Length: {}\r\n\r\n",
        documents.len()
    );
    let chunked_head = "PATCH /experimental-features HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
    let chunked_body = format!(
        "{:x}\r\n{}\r\n0\r\n\r\n",
        body.len(),
        String::from_utf8_lossy(body)
    );
    for attempt in 0..TRIES {
        for sending in [
            Sending::Whole,
            Sending::HeadThenBody,
            Sending::HeadPauseBody,
        ] {
            let status = half_closed_exchange(&server, head.as_bytes(), body, sending);
            assert_eq!(status, 200, "attempt {attempt}, {sending:?}");
            let status = half_closed_exchange(
                &server,
                chunked_head.as_bytes(),
                chunked_body.as_bytes(),
                sending,
            );
            assert_eq!(status, 200, "attempt {attempt}, chunked, {sending:?}");
            let status =
                half_closed_exchange(&server, upload.as_bytes(), documents.as_bytes(), sending);
            assert_eq!(status, 202, "attempt {attempt}, upload, {sending:?}");
        }
        let status = half_closed_exchange(&server, bodiless, b"", Sending::Whole);
        assert_eq!(status, 200, "attempt {attempt}, no body");
    }
}
