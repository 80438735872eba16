//! Idle, header, body and write timeouts, with a timer that fires whenever a wait blocks.

use super::*;
use crate::http::CloseReason;

fn serve_instant(stream: MockStream, timer: &InstantTimer, handler: &RecordingHandler) -> Served {
    serve_stream(
        stream,
        &HttpLimits::default(),
        handler,
        timer,
        &ShutdownSignal::new(),
    )
}

#[test]
fn an_idle_connection_is_closed_quietly_after_the_idle_timeout() {
    let timer = InstantTimer::default();
    let handler = RecordingHandler::default();
    let served = serve_instant(
        MockStream::new(vec![send("GET / HTTP/1.1\r\n\r\n"), Step::Stall]),
        &timer,
        &handler,
    );
    assert_eq!(served.answers().len(), 1);
    assert_eq!(served.summary().close_reason, CloseReason::IdleTimeout);
    assert_eq!(*timer.sleeps.borrow(), [HttpLimits::default().idle_timeout]);
}

#[test]
fn a_silent_new_connection_is_closed_after_the_header_timeout() {
    let timer = InstantTimer::default();
    let handler = RecordingHandler::default();
    let served = serve_instant(MockStream::new(vec![Step::Stall]), &timer, &handler);
    assert!(served.output.is_empty());
    assert_eq!(served.summary().close_reason, CloseReason::IdleTimeout);
    assert_eq!(
        *timer.sleeps.borrow(),
        [HttpLimits::default().header_read_timeout]
    );
}

#[test]
fn a_half_sent_head_is_answered_408_after_the_header_timeout() {
    let timer = InstantTimer::default();
    let handler = RecordingHandler::default();
    let served = serve_instant(
        MockStream::new(vec![send("GET / HTTP/1.1\r\nHost: slow"), Step::Stall]),
        &timer,
        &handler,
    );
    let answers = served.answers();
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0].status, 408);
    assert_eq!(answers[0].header("connection"), Some("close"));
    assert!(handler.seen.borrow().is_empty());
    assert_eq!(served.summary().close_reason, CloseReason::HeaderTimeout);
    assert!(
        timer
            .sleeps
            .borrow()
            .contains(&HttpLimits::default().header_read_timeout)
    );
}

#[test]
fn a_stalled_body_is_incomplete_after_the_body_timeout() {
    let timer = InstantTimer::default();
    let handler = RecordingHandler::default();
    let served = serve_instant(
        MockStream::new(vec![
            send("POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nhello"),
            Step::Stall,
        ]),
        &timer,
        &handler,
    );
    assert_eq!(handler.seen.borrow()[0].body, Err(BodyError::Incomplete));
    assert_eq!(served.answers()[0].status, 400);
    assert_eq!(served.summary().close_reason, CloseReason::BodyNotConsumed);
    let limits = HttpLimits::default();
    assert_eq!(
        *timer.sleeps.borrow(),
        [limits.body_read_timeout, limits.linger_timeout]
    );
}

#[test]
fn a_stalled_chunked_body_is_incomplete() {
    let timer = InstantTimer::default();
    let handler = RecordingHandler::default();
    serve_instant(
        MockStream::new(vec![
            send("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel"),
            Step::Stall,
        ]),
        &timer,
        &handler,
    );
    assert_eq!(handler.seen.borrow()[0].body, Err(BodyError::Incomplete));
}

#[test]
fn a_peer_that_stops_reading_hits_the_write_timeout() {
    let timer = InstantTimer::default();
    let handler = RecordingHandler::default();
    let mut stream = MockStream::new(vec![send("GET / HTTP/1.1\r\n\r\n")]);
    stream.write_stalls = true;
    let served = serve_instant(stream, &timer, &handler);
    assert!(matches!(served.result, Err(ConnectionError::WriteTimeout)));
}

#[test]
fn ready_input_never_creates_a_timer() {
    let timer = InstantTimer::default();
    let handler = RecordingHandler::default();
    let served = serve_instant(
        MockStream::new(vec![send(
            "GET /a HTTP/1.1\r\n\r\nPOST /b HTTP/1.1\r\nContent-Length: 2\r\n\r\nok",
        )]),
        &timer,
        &handler,
    );
    assert_eq!(served.answers().len(), 2);
    assert!(timer.sleeps.borrow().is_empty());
}
