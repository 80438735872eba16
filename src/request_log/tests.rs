//! The request log's batching: nothing is lost, lines stay whole and ordered, and the
//! three write triggers (full buffer, interval, shutdown) each work.

use std::cell::RefCell;
use std::future::Future;
use std::io;
use std::pin::pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use super::*;

/// A writer that records every `write` call's bytes.
#[derive(Clone, Default)]
struct Recorder {
    bytes: Rc<RefCell<Vec<u8>>>,
    writes: Rc<Cell<usize>>,
}

impl Write for Recorder {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.writes.set(self.writes.get() + 1);
        self.bytes.borrow_mut().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Recorder {
    fn lines(&self) -> Vec<String> {
        String::from_utf8(self.bytes.borrow().clone())
            .expect("lines are UTF-8")
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

fn line(index: usize) -> RequestLine<'static> {
    RequestLine {
        core: 1,
        method: "GET",
        path: if index % 2 == 0 {
            "/health"
        } else {
            "/indexes/movies/search"
        },
        status: 200,
        duration_us: index as u64,
    }
}

fn info_log(recorder: &Recorder) -> RequestLog {
    RequestLog::new(LogLevel::Info, LogMode::Human, Box::new(recorder.clone()))
}

/// The `duration_us` of each line, which the tests use as the line's index.
fn indexes(lines: &[String]) -> Vec<usize> {
    lines
        .iter()
        .map(|text| {
            let value = text
                .rsplit("duration_us=")
                .next()
                .expect("every line has a duration");
            value.parse().expect("the duration is a number")
        })
        .collect()
}

#[test]
fn no_line_is_lost_when_the_log_is_dropped_at_shutdown() {
    let count = 10_000;
    let recorder = Recorder::default();
    let log = info_log(&recorder);
    for index in 0..count {
        log.record(&line(index));
    }
    assert!(log.pending_bytes() > 0, "the last lines wait for a batch");
    drop(log);
    let lines = recorder.lines();
    assert_eq!(indexes(&lines), (0..count).collect::<Vec<_>>());
    assert!(
        lines
            .iter()
            .all(|text| text.contains(" INFO coresearch::routes: request core=1"))
    );
}

#[test]
fn an_explicit_flush_writes_everything_pending_in_one_write() {
    let recorder = Recorder::default();
    let log = info_log(&recorder);
    for index in 0..5 {
        log.record(&line(index));
    }
    assert_eq!(recorder.writes.get(), 0);
    log.flush();
    assert_eq!(recorder.writes.get(), 1);
    assert_eq!(indexes(&recorder.lines()), [0, 1, 2, 3, 4]);
    assert_eq!(log.pending_bytes(), 0);
}

#[test]
fn a_full_buffer_is_written_at_once_and_stays_bounded() {
    let recorder = Recorder::default();
    let log = info_log(&recorder);
    let mut index = 0;
    while recorder.writes.get() == 0 {
        log.record(&line(index));
        index += 1;
        assert!(log.pending_bytes() < REQUEST_LOG_BUFFER_BYTES);
    }
    let written = recorder.bytes.borrow().len();
    assert!(written >= REQUEST_LOG_BUFFER_BYTES, "{written}");
    assert!(
        recorder.bytes.borrow().ends_with(b"\n"),
        "batches hold whole lines"
    );
    assert_eq!(indexes(&recorder.lines()), (0..index).collect::<Vec<_>>());
}

#[test]
fn below_info_nothing_is_recorded() {
    for level in [LogLevel::Off, LogLevel::Error, LogLevel::Warn] {
        let recorder = Recorder::default();
        let log = RequestLog::new(level, LogMode::Human, Box::new(recorder.clone()));
        assert!(!log.is_enabled());
        log.record(&line(0));
        drop(log);
        assert!(recorder.bytes.borrow().is_empty(), "{level}");
    }
    assert!(info_log(&Recorder::default()).is_enabled());
    let debug = RequestLog::new(LogLevel::Debug, LogMode::Json, Box::new(io::sink()));
    assert!(debug.is_enabled());
}

/// A timer whose sleeps complete when the test allows them, recording each duration.
#[derive(Default)]
struct GateTimer {
    open: Cell<bool>,
    sleeps: RefCell<Vec<Duration>>,
}

impl Timer for GateTimer {
    fn now(&self) -> std::time::Instant {
        std::time::Instant::now()
    }

    fn sleep(&self, duration: Duration) -> impl Future<Output = ()> {
        self.sleeps.borrow_mut().push(duration);
        poll_fn(|_context| {
            if self.open.get() {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
    }
}

#[test]
fn the_flusher_writes_a_pending_line_after_the_interval_and_sleeps_when_idle() {
    let recorder = Recorder::default();
    let log = info_log(&recorder);
    let timer = GateTimer::default();
    let mut flusher = pin!(log.flush_periodically(&timer));
    let mut context = Context::from_waker(Waker::noop());
    assert!(flusher.as_mut().poll(&mut context).is_pending());
    assert!(
        timer.sleeps.borrow().is_empty(),
        "no timer while nothing is pending"
    );
    log.record(&line(7));
    assert!(flusher.as_mut().poll(&mut context).is_pending());
    assert_eq!(*timer.sleeps.borrow(), [REQUEST_LOG_FLUSH_INTERVAL]);
    assert_eq!(recorder.writes.get(), 0, "the line waits for the interval");
    timer.open.set(true);
    assert!(flusher.as_mut().poll(&mut context).is_pending());
    assert_eq!(indexes(&recorder.lines()), [7]);
    assert_eq!(timer.sleeps.borrow().len(), 1, "idle again: no new timer");
}
