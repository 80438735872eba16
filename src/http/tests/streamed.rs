//! Streamed response bodies: chunked framing, the connection reused after the stream ends,
//! and the stream dropped when the peer leaves or the server shuts down.

use super::*;
use crate::http::CloseReason;

/// The head of the first answer in `output` and the bytes after it.
fn split_head(output: &[u8]) -> (String, &[u8]) {
    let end = output
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .expect("a complete head")
        + 4;
    (
        String::from_utf8(output[..end].to_vec()).expect("ascii head"),
        &output[end..],
    )
}

/// Decodes a chunked body at the start of `bytes`: the body and the bytes after its end
/// (`None` for the rest when the last chunk never came).
fn dechunk(mut bytes: &[u8]) -> (Vec<u8>, Option<&[u8]>) {
    let mut body = Vec::new();
    loop {
        let Some(line_end) = bytes.windows(2).position(|window| window == b"\r\n") else {
            return (body, None);
        };
        let size = usize::from_str_radix(std::str::from_utf8(&bytes[..line_end]).unwrap(), 16)
            .expect("a hexadecimal chunk size");
        bytes = &bytes[line_end + 2..];
        if size == 0 {
            assert!(bytes.starts_with(b"\r\n"), "the last chunk ends the body");
            return (body, Some(&bytes[2..]));
        }
        body.extend_from_slice(&bytes[..size]);
        assert_eq!(&bytes[size..size + 2], b"\r\n");
        bytes = &bytes[size + 2..];
    }
}

#[test]
fn a_streamed_body_is_chunked_and_the_connection_serves_the_next_request() {
    let handler = RecordingHandler::default();
    let served = serve(
        vec![send(
            "POST /stream/3 HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\nGET /after HTTP/1.1\r\nHost: x\r\n\r\n",
        )],
        &handler,
    );
    let (head, rest) = split_head(&served.output);
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(head.contains("transfer-encoding: chunked\r\n"), "{head}");
    assert!(head.contains("x-accel-buffering: no\r\n"), "{head}");
    assert!(!head.contains("content-length"), "{head}");
    let (body, after) = dechunk(rest);
    assert_eq!(body, b"piece-1\npiece-2\npiece-3\n");
    let next = parse_answers(after.expect("the stream ended"), &[]);
    assert_eq!(next.len(), 1);
    assert_eq!(next[0].status, 200);
    assert_eq!(handler.seen.borrow()[1].path, "/after");
    assert_eq!(served.summary().requests, 2);
}

#[test]
fn an_endless_stream_stops_when_the_peer_leaves() {
    let handler = RecordingHandler::default();
    let served = serve(
        vec![
            send("POST /stream-forever HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"),
            Step::AwaitOutput("piece-2"),
        ],
        &handler,
    );
    let (_, rest) = split_head(&served.output);
    let (body, end) = dechunk(rest);
    assert_eq!(body, b"piece-1\npiece-2\n");
    assert!(
        end.is_none(),
        "no last chunk is written to a peer that left"
    );
    assert_eq!(served.summary().close_reason, CloseReason::PeerClosed);
}

#[test]
fn shutdown_ends_an_endless_stream_with_its_last_chunk() {
    let handler = RecordingHandler {
        shutdown_on_call: Some(ShutdownSignal::new()),
        ..RecordingHandler::default()
    };
    let shutdown = handler.shutdown_on_call.clone().expect("a signal");
    let served = serve_stream(
        MockStream::new(vec![
            send("POST /stream-forever HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"),
            Step::Stall,
        ]),
        &HttpLimits::default(),
        &handler,
        &NeverTimer,
        &shutdown,
    );
    let (head, rest) = split_head(&served.output);
    assert!(head.contains("connection: close\r\n"), "{head}");
    let (body, end) = dechunk(rest);
    assert_eq!(body, b"piece-1\npiece-2\n");
    assert_eq!(end, Some(&b""[..]));
    assert_eq!(served.summary().close_reason, CloseReason::Shutdown);
}

#[test]
fn an_http_1_0_stream_is_raw_and_ends_with_the_connection() {
    let handler = RecordingHandler::default();
    let served = serve(
        vec![send(
            "POST /stream/2 HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n",
        )],
        &handler,
    );
    let (head, rest) = split_head(&served.output);
    assert!(!head.contains("transfer-encoding") && !head.contains("content-length"));
    assert!(head.contains("connection: close\r\n"), "{head}");
    assert_eq!(rest, b"piece-1\npiece-2\n");
    assert_eq!(served.summary().close_reason, CloseReason::RequestedClose);
}
