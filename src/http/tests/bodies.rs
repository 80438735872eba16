//! Request bodies: lengths, chunked framing, 100-continue, content codings and limits.

use std::io::Write;

use super::*;
use crate::http::CloseReason;

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(data).expect("write_all succeeds");
    encoder.finish().expect("finish succeeds")
}

fn with_body(head: &str, body: &[u8]) -> Step {
    let mut bytes = head.as_bytes().to_vec();
    bytes.extend_from_slice(body);
    Step::Send(bytes)
}

fn small_limits() -> HttpLimits {
    HttpLimits {
        payload_bytes_max: 1000,
        ..HttpLimits::default()
    }
}

fn serve_with(script: Vec<Step>, limits: &HttpLimits, handler: &RecordingHandler) -> Served {
    serve_stream(
        MockStream::new(script),
        limits,
        handler,
        &InstantTimer::default(),
        &ShutdownSignal::new(),
    )
}

#[test]
fn chunked_body_with_extensions_and_trailers_is_delivered_and_the_next_request_follows() {
    let handler = RecordingHandler::default();
    let served = serve(
        vec![send(
            "POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\nGET /next HTTP/1.1\r\n\r\n",
        )],
        &handler,
    );
    assert_eq!(served.answers().len(), 2);
    let seen = handler.seen.borrow();
    assert_eq!(seen[0].body, Ok(b"hello world".to_vec()));
    assert_eq!(seen[1].path, "/next");
}

#[test]
fn chunked_body_split_across_reads_is_delivered() {
    let handler = RecordingHandler::default();
    let mut stream = MockStream::new(vec![send(
        "POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\na\r\n0123456789\r\n3\r\nabc\r\n0\r\n\r\n",
    )]);
    stream.read_bytes_max = 2;
    let served = serve_stream(
        stream,
        &HttpLimits::default(),
        &handler,
        &NeverTimer,
        &ShutdownSignal::new(),
    );
    assert_eq!(served.answers().len(), 1);
    assert_eq!(handler.seen.borrow()[0].body, Ok(b"0123456789abc".to_vec()));
}

#[test]
fn broken_chunked_framing_is_answered_400_without_the_handler() {
    for body in ["zz\r\nhello\r\n0\r\n\r\n", "5\r\nhelloXX0\r\n\r\n"] {
        let handler = RecordingHandler::default();
        let served = serve(
            vec![send(&format!(
                "POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n{body}"
            ))],
            &handler,
        );
        let answers = served.answers();
        assert_eq!(answers.len(), 1, "{body}");
        assert_eq!(answers[0].status, 400);
        assert!(handler.seen.borrow().is_empty());
        assert_eq!(
            served.summary().close_reason,
            CloseReason::ProtocolError(400)
        );
    }
}

#[test]
fn expect_continue_gets_100_before_the_body_is_read() {
    let handler = RecordingHandler::default();
    let served = serve_with(
        vec![
            send("POST /e HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n"),
            Step::AwaitOutput("HTTP/1.1 100 Continue\r\n\r\n"),
            send("hello"),
        ],
        &HttpLimits::default(),
        &handler,
    );
    let answers = served.answers();
    assert_eq!(answers.len(), 2);
    assert_eq!(answers[0].status, 100);
    assert_eq!(answers[1].status, 200);
    assert_eq!(answers[1].body, b"hello");
}

#[test]
fn oversized_content_length_is_not_read_nor_continued_and_closes() {
    let handler = RecordingHandler::default();
    let served = serve_with(
        vec![
            send("POST /big HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5000\r\n\r\n"),
            Step::AwaitOutput("100 Continue"),
            send("this must never be read"),
        ],
        &small_limits(),
        &handler,
    );
    let answers = served.answers();
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0].status, 413);
    assert_eq!(answers[0].header("connection"), Some("close"));
    assert_eq!(
        handler.seen.borrow()[0].body,
        Err(BodyError::TooLarge {
            content_length: Some(5000),
            limit: 1000
        })
    );
    assert_eq!(served.summary().close_reason, CloseReason::BodyNotConsumed);
    assert!(!String::from_utf8_lossy(&served.output).contains("100 Continue"));
}

#[test]
fn an_unread_body_is_discarded_after_the_answer_so_the_peer_gets_it() {
    let handler = RecordingHandler::default();
    let head = "POST /big HTTP/1.1\r\nContent-Length: 5000\r\n\r\n";
    let served = serve_with(
        vec![with_body(head, &[b'z'; 5000])],
        &small_limits(),
        &handler,
    );
    assert_eq!(served.answers().len(), 1);
    assert_eq!(served.answers()[0].status, 413);
    assert_eq!(served.summary().bytes_read, (head.len() + 5000) as u64);
}

#[test]
fn oversized_chunked_body_stops_at_the_limit_and_closes() {
    let handler = RecordingHandler::default();
    let chunk = "x".repeat(600);
    let served = serve_with(
        vec![send(&format!(
            "POST /big HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n258\r\n{chunk}\r\n258\r\n{chunk}\r\n0\r\n\r\n"
        ))],
        &small_limits(),
        &handler,
    );
    assert_eq!(served.answers()[0].status, 413);
    assert_eq!(
        handler.seen.borrow()[0].body,
        Err(BodyError::TooLarge {
            content_length: None,
            limit: 1000
        })
    );
    assert_eq!(served.summary().close_reason, CloseReason::BodyNotConsumed);
}

#[test]
fn body_of_exactly_the_limit_is_accepted() {
    let handler = RecordingHandler::default();
    let body = vec![b'y'; 1000];
    let served = serve_with(
        vec![with_body(
            "POST /ok HTTP/1.1\r\nContent-Length: 1000\r\n\r\n",
            &body,
        )],
        &small_limits(),
        &handler,
    );
    assert_eq!(served.answers()[0].status, 200);
    assert_eq!(handler.seen.borrow()[0].body, Ok(body));
}

#[test]
fn encoded_bodies_are_decoded() {
    let plain = b"{\"title\":\"Carol\"}".repeat(10);
    let mut deflate = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    deflate.write_all(&plain).expect("write_all succeeds");
    let deflated = deflate.finish().expect("finish succeeds");
    let mut brotli_encoder = brotli::CompressorWriter::new(Vec::new(), 4096, 5, 22);
    brotli_encoder
        .write_all(&plain)
        .expect("write_all succeeds");
    let brotlied = brotli_encoder.into_inner();
    for (coding, encoded) in [
        ("gzip", gzip(&plain)),
        ("deflate", deflated),
        ("br", brotlied),
    ] {
        let handler = RecordingHandler::default();
        let head = format!(
            "POST /d HTTP/1.1\r\nContent-Encoding: {coding}\r\nContent-Length: {}\r\n\r\n",
            encoded.len()
        );
        let served = serve(vec![with_body(&head, &encoded)], &handler);
        assert_eq!(served.answers()[0].status, 200, "{coding}");
        assert_eq!(handler.seen.borrow()[0].body, Ok(plain.clone()), "{coding}");
    }
}

#[test]
fn a_zip_bomb_hits_the_limit_not_the_memory_and_keeps_the_connection() {
    let limits = HttpLimits {
        payload_bytes_max: 8192,
        ..HttpLimits::default()
    };
    let bomb = gzip(&vec![0u8; 5 * 1024 * 1024]);
    assert!(bomb.len() < 8192, "bomb of {} bytes", bomb.len());
    let handler = RecordingHandler::default();
    let head = format!(
        "POST /bomb HTTP/1.1\r\nContent-Encoding: gzip\r\nContent-Length: {}\r\n\r\n",
        bomb.len()
    );
    let served = serve_with(
        vec![with_body(&head, &bomb), send("GET /after HTTP/1.1\r\n\r\n")],
        &limits,
        &handler,
    );
    let seen = handler.seen.borrow();
    assert_eq!(
        seen[0].body,
        Err(BodyError::TooLarge {
            content_length: None,
            limit: 8192
        })
    );
    assert_eq!(seen[1].path, "/after");
    assert_eq!(served.answers().len(), 2);
}

/// An unknown coding is read as identity, as actix reads it for Meilisearch, and the
/// connection goes on.
#[test]
fn unknown_coding_is_identity_and_the_connection_continues() {
    let handler = RecordingHandler::default();
    let served = serve(
        vec![send(
            "POST /z HTTP/1.1\r\nContent-Encoding: zstd\r\nContent-Length: 3\r\n\r\nabcGET / HTTP/1.1\r\n\r\n",
        )],
        &handler,
    );
    assert_eq!(handler.seen.borrow()[0].body, Ok(b"abc".to_vec()));
    assert_eq!(handler.seen.borrow()[1].path, "/");
    assert_eq!(served.answers().len(), 2);
}

#[test]
fn malformed_gzip_is_reported_and_the_connection_continues() {
    let handler = RecordingHandler::default();
    let served = serve(
        vec![send(
            "POST /m HTTP/1.1\r\nContent-Encoding: gzip\r\nContent-Length: 3\r\n\r\nabcGET / HTTP/1.1\r\n\r\n",
        )],
        &handler,
    );
    assert!(matches!(
        handler.seen.borrow()[0].body,
        Err(BodyError::MalformedEncoding(_))
    ));
    assert_eq!(served.answers().len(), 2);
}

#[test]
fn body_cut_by_the_peer_is_incomplete() {
    let handler = RecordingHandler::default();
    let served = serve(
        vec![send("POST /cut HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc")],
        &handler,
    );
    assert_eq!(handler.seen.borrow()[0].body, Err(BodyError::Incomplete));
    assert_eq!(served.answers()[0].header("connection"), Some("close"));
    assert_eq!(served.summary().close_reason, CloseReason::BodyNotConsumed);
}
