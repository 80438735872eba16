//! The run-time switches: the stderr filter replaced, one stream at a time, a stream that
//! carries what its target keeps in its mode, and the route freed when a stream goes.

#![allow(clippy::unwrap_used)]

use std::io::{Read, Seek};
use std::sync::Arc;

use futures_lite::StreamExt;
use futures_lite::future::{block_on, poll_once};

use super::*;

/// Everything a stream holds now, without waiting, its colors (ANSI escapes) removed.
fn drain(stream: &mut LogStream) -> String {
    let mut text = Vec::new();
    while let Some(Some(bytes)) = block_on(poll_once(stream.next())) {
        text.extend_from_slice(&bytes);
    }
    let text = String::from_utf8(text).unwrap();
    let mut plain = String::new();
    let mut rest = text.as_str();
    while let Some(start) = rest.find('\u{1b}') {
        plain.push_str(&rest[..start]);
        let end = rest[start..]
            .find('m')
            .map_or(rest.len(), |end| start + end + 1);
        rest = &rest[end..];
    }
    plain.push_str(rest);
    plain
}

fn read_all(file: &std::fs::File) -> String {
    let mut output = String::new();
    let mut reader = file;
    reader.rewind().unwrap();
    reader.read_to_string(&mut output).unwrap();
    output
}

#[test]
fn the_stderr_filter_changes_at_run_time() {
    let file = Arc::new(tempfile::tempfile().unwrap());
    let (subscriber, control) = subscriber(LogLevel::Warn, LogMode::Human, false, file.clone());
    let switches = control.switches();
    assert!(!switches.stderr_requests());
    tracing::subscriber::with_default(subscriber, || {
        tracing::info!("before the change");
        control
            .set_stderr_targets("coresearch=debug".parse().unwrap())
            .unwrap();
        tracing::debug!("kept after the change");
        tracing::info!(target: "elsewhere", "not kept: another target");
    });
    let output = read_all(&file);
    assert!(!output.contains("before the change"), "{output}");
    assert!(output.contains("kept after the change"), "{output}");
    assert!(!output.contains("not kept"), "{output}");
    assert!(switches.stderr_requests());
}

#[test]
fn request_lines_never_reach_stderr_through_tracing() {
    let file = Arc::new(tempfile::tempfile().unwrap());
    let (subscriber, _control) = subscriber(LogLevel::Trace, LogMode::Human, false, file.clone());
    tracing::subscriber::with_default(subscriber, || {
        tracing::info!(target: REQUEST_LOG_TARGET, "a request line");
        tracing::info!("another line");
    });
    let output = read_all(&file);
    assert!(!output.contains("a request line"), "{output}");
    assert!(output.contains("another line"), "{output}");
}

#[test]
fn one_stream_at_a_time_carries_what_its_target_keeps() {
    let (subscriber, control) = subscriber(LogLevel::Off, LogMode::Human, false, std::io::sink);
    let switches = control.switches();
    tracing::subscriber::with_default(subscriber, || {
        tracing::info!("before any stream");
        let mut stream = control
            .open_stream("coresearch=debug".parse().unwrap(), StreamMode::Human)
            .unwrap();
        assert!(switches.stream_requests());
        assert_eq!(
            control
                .open_stream(LogTargets::default_target(), StreamMode::Json)
                .unwrap_err(),
            OpenError::InUse
        );
        tracing::debug!("a debug line");
        tracing::info!(target: "other", "another target");
        tracing::info!(target: REQUEST_LOG_TARGET, status = 200, "request");
        let text = drain(&mut stream);
        assert!(text.contains("a debug line"), "{text}");
        assert!(text.contains("status=200"), "{text}");
        assert!(!text.contains("another target") && !text.contains("before any stream"));
        control.close_stream();
        assert!(!switches.stream_requests());
        assert_eq!(block_on(stream.next()), None, "the stream ended");
        tracing::info!("after the end");
        // The route is free again, and the ended stream's drop does not free the new one.
        let mut json = control
            .open_stream(LogTargets::default_target(), StreamMode::Json)
            .unwrap();
        drop(stream);
        tracing::info!(index = "movies", "as json");
        let text = drain(&mut json);
        let line: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
        assert_eq!(line["fields"]["message"], "as json");
        assert_eq!(line["fields"]["index"], "movies");
        assert!(!text.contains("after the end"));
        drop(json);
        assert!(
            control
                .open_stream(LogTargets::default_target(), StreamMode::Human)
                .is_ok(),
            "a dropped stream gives the route back"
        );
    });
}

#[test]
fn a_profile_stream_sends_trace_entries() {
    let (subscriber, control) = subscriber(LogLevel::Off, LogMode::Human, false, std::io::sink);
    tracing::subscriber::with_default(subscriber, || {
        let mut stream = control
            .open_stream(
                "trace".parse().unwrap(),
                StreamMode::Profile { memory: false },
            )
            .unwrap();
        tracing::info_span!("a span").in_scope(|| tracing::info!("an event"));
        let text = drain(&mut stream);
        let entries: Vec<serde_json::Value> = serde_json::Deserializer::from_str(&text)
            .into_iter()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(entries.iter().any(|entry| entry.get("NewSpan").is_some()));
        assert!(entries.iter().any(|entry| entry.get("Event").is_some()));
        assert!(
            entries
                .iter()
                .filter_map(|entry| entry.get("SpanEnter"))
                .all(|enter| enter["memory"].is_null())
        );
    });
}
