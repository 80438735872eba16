//! Keep-alive, pipelining, protocol errors, HEAD and shutdown.

use super::*;
use crate::http::CloseReason;

#[test]
fn keep_alive_serves_several_requests_on_one_connection() {
    let handler = RecordingHandler::default();
    let served = serve(
        vec![
            send("GET /a HTTP/1.1\r\nHost: x\r\n\r\n"),
            send("GET /b/?q=1 HTTP/1.1\r\nHost: x\r\n\r\n"),
        ],
        &handler,
    );
    let answers = served.answers();
    assert_eq!(answers.len(), 2);
    assert!(answers.iter().all(|answer| answer.status == 200));
    assert!(answers.iter().all(|answer| answer.header("date").is_some()));
    assert!(
        answers
            .iter()
            .all(|answer| answer.header("connection").is_none())
    );
    let seen = handler.seen.borrow();
    assert_eq!(seen[0].path, "/a");
    assert_eq!(seen[1].path, "/b");
    assert_eq!(seen[1].query.as_deref(), Some("q=1"));
    assert_eq!(served.summary().requests, 2);
    assert_eq!(served.summary().close_reason, CloseReason::PeerClosed);
}

#[test]
fn pipelined_requests_are_answered_in_order_with_one_write() {
    let handler = RecordingHandler::default();
    let served = serve(
        vec![send(
            "POST /1 HTTP/1.1\r\nContent-Length: 1\r\n\r\naPOST /2 HTTP/1.1\r\nContent-Length: 2\r\n\r\nbbGET /3 HTTP/1.1\r\n\r\n",
        )],
        &handler,
    );
    let answers = served.answers();
    let bodies: Vec<&[u8]> = answers.iter().map(|answer| &answer.body[..]).collect();
    assert_eq!(bodies, [&b"a"[..], b"bb", b""]);
    assert_eq!(served.write_calls, 1);
}

#[test]
fn requests_arriving_byte_by_byte_are_parsed() {
    let handler = RecordingHandler::default();
    let mut stream = MockStream::new(vec![send(
        "POST /indexes/ HTTP/1.1\r\nContent-Length: 5\r\n\r\nhelloGET / HTTP/1.1\r\n\r\n",
    )]);
    stream.read_bytes_max = 1;
    let served = serve_stream(
        stream,
        &HttpLimits::default(),
        &handler,
        &NeverTimer,
        &ShutdownSignal::new(),
    );
    assert_eq!(served.answers().len(), 2);
    let seen = handler.seen.borrow();
    assert_eq!(seen[0].path, "/indexes");
    assert_eq!(seen[0].body, Ok(b"hello".to_vec()));
    assert_eq!(seen[1].path, "/");
}

#[test]
fn connection_close_ends_the_connection_after_the_answer() {
    let handler = RecordingHandler::default();
    let served = serve(
        vec![send(
            "GET /a HTTP/1.1\r\nConnection: close\r\n\r\nGET /b HTTP/1.1\r\n\r\n",
        )],
        &handler,
    );
    let answers = served.answers();
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0].header("connection"), Some("close"));
    assert_eq!(served.summary().close_reason, CloseReason::RequestedClose);
    assert_eq!(handler.seen.borrow().len(), 1);
}

#[test]
fn http_1_0_closes_unless_keep_alive_is_asked() {
    let handler = RecordingHandler::default();
    let served = serve(
        vec![send(
            "GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /b HTTP/1.0\r\n\r\nGET /c HTTP/1.0\r\n\r\n",
        )],
        &handler,
    );
    let answers = served.answers();
    assert_eq!(answers.len(), 2);
    assert_eq!(answers[0].header("connection"), Some("keep-alive"));
    assert_eq!(answers[1].header("connection"), Some("close"));
    assert_eq!(served.summary().close_reason, CloseReason::RequestedClose);
}

#[test]
fn malformed_request_line_is_answered_400_and_closed() {
    let handler = RecordingHandler::default();
    let served = serve(
        vec![send("GARBAGE\r\n\r\nGET / HTTP/1.1\r\n\r\n")],
        &handler,
    );
    let answers = served.answers();
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0].status, 400);
    assert_eq!(answers[0].header("content-length"), Some("0"));
    assert_eq!(answers[0].header("connection"), Some("close"));
    assert!(answers[0].body.is_empty());
    assert!(handler.seen.borrow().is_empty());
    assert_eq!(
        served.summary().close_reason,
        CloseReason::ProtocolError(400)
    );
}

#[test]
fn head_limits_are_answered_431_and_414() {
    let limits = HttpLimits {
        header_count_max: 3,
        header_bytes_max: 256,
        uri_bytes_max: 32,
        ..HttpLimits::default()
    };
    let cases = [
        (
            "GET / HTTP/1.1\r\na: 1\r\nb: 2\r\nc: 3\r\nd: 4\r\n\r\n".to_string(),
            431,
        ),
        (
            format!("GET / HTTP/1.1\r\nx: {}\r\n\r\n", "v".repeat(300)),
            431,
        ),
        (format!("GET /{} HTTP/1.1\r\n\r\n", "p".repeat(40)), 414),
        (format!("GET /{}", "p".repeat(200)), 414),
    ];
    for (request, status) in cases {
        let handler = RecordingHandler::default();
        let served = serve_stream(
            MockStream::new(vec![send(&request)]),
            &limits,
            &handler,
            &NeverTimer,
            &ShutdownSignal::new(),
        );
        let answers = served.answers();
        assert_eq!(answers.len(), 1, "{request}");
        assert_eq!(answers[0].status, status, "{request}");
        assert!(handler.seen.borrow().is_empty());
    }
}

#[test]
fn head_answers_carry_the_length_but_no_body() {
    let handler = RecordingHandler::default();
    let served = serve(
        vec![send(
            "HEAD /large/100 HTTP/1.1\r\n\r\nGET /large/3 HTTP/1.1\r\n\r\n",
        )],
        &handler,
    );
    let answers = parse_answers(&served.output, &[0]);
    assert_eq!(answers.len(), 2);
    assert_eq!(answers[0].header("content-length"), Some("100"));
    assert!(answers[0].body.is_empty());
    assert_eq!(answers[1].body, b"aaa");
    assert_eq!(handler.seen.borrow()[0].method, Method::Head);
}

#[test]
fn large_answers_survive_partial_writes() {
    let handler = RecordingHandler::default();
    let mut stream = MockStream::new(vec![send(
        "GET /large/200000 HTTP/1.1\r\n\r\nGET /large/10 HTTP/1.1\r\n\r\n",
    )]);
    stream.write_bytes_max = 1000;
    let served = serve_stream(
        stream,
        &HttpLimits::default(),
        &handler,
        &NeverTimer,
        &ShutdownSignal::new(),
    );
    let answers = served.answers();
    assert_eq!(answers[0].body.len(), 200_000);
    assert_eq!(answers[1].body, vec![b'a'; 10]);
    assert_eq!(served.summary().bytes_written, served.output.len() as u64);
}

#[test]
fn no_content_answers_have_no_length() {
    let handler = RecordingHandler::default();
    let served = serve(vec![send("DELETE /no-content HTTP/1.1\r\n\r\n")], &handler);
    let answers = served.answers();
    assert_eq!(answers[0].status, 204);
    assert_eq!(answers[0].header("content-length"), None);
}

#[test]
fn shutdown_finishes_the_current_request_then_closes() {
    let shutdown = ShutdownSignal::new();
    let handler = RecordingHandler {
        shutdown_on_call: Some(shutdown.clone()),
        ..RecordingHandler::default()
    };
    let served = serve_stream(
        MockStream::new(vec![send("GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\n\r\n")]),
        &HttpLimits::default(),
        &handler,
        &NeverTimer,
        &shutdown,
    );
    let answers = served.answers();
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0].status, 200);
    assert_eq!(answers[0].header("connection"), Some("close"));
    assert_eq!(served.summary().close_reason, CloseReason::Shutdown);
}

#[test]
fn shutdown_wakes_an_idle_connection() {
    let shutdown = ShutdownSignal::new();
    let handler = RecordingHandler::default();
    let stream = MockStream::new(vec![send("GET /a HTTP/1.1\r\n\r\n"), Step::Stall]);
    let output = stream.output.clone();
    let limits = HttpLimits::default();
    let serving = serve_connection(stream, None, &limits, &handler, &NeverTimer, &shutdown);
    let trigger = async {
        while shutdown.waiter_count() == 0 {
            futures_lite::future::yield_now().await;
        }
        shutdown.trigger();
    };
    let (result, ()) = futures_lite::future::block_on(futures_lite::future::zip(serving, trigger));
    assert_eq!(
        result.expect("`result` holds a value").close_reason,
        CloseReason::Shutdown
    );
    assert_eq!(parse_answers(&output.borrow(), &[]).len(), 1);
    assert_eq!(shutdown.waiter_count(), 0);
}
