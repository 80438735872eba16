//! Unit tests of the traces module: `traceparent` parsing and formatting, the current
//! context around polls, and the OTLP JSON encoding.

#![allow(clippy::unwrap_used)]

use std::borrow::Cow;

use super::context::SpanContext;
use super::encode::export_request_json;
use super::span::{AttributeValue, FinishedSpan, SpanKind};

const EXAMPLE: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

#[test]
fn a_valid_traceparent_parses_and_formats_back() {
    let context = SpanContext::parse_traceparent(EXAMPLE.as_bytes()).expect("a valid traceparent");
    assert_eq!(
        hex::encode(context.trace_id),
        "4bf92f3577b34da6a3ce929d0e0e4736"
    );
    assert_eq!(hex::encode(context.span_id), "00f067aa0ba902b7");
    assert!(context.sampled);
    assert_eq!(context.traceparent(), EXAMPLE);
    let unsampled =
        SpanContext::parse_traceparent(b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")
            .expect("a valid unsampled traceparent");
    assert!(!unsampled.sampled);
    assert!(unsampled.traceparent().ends_with("-00"));
}

#[test]
fn an_invalid_traceparent_is_refused() {
    for value in [
        "",
        "garbage",
        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902bz-01",
    ] {
        assert_eq!(
            SpanContext::parse_traceparent(value.as_bytes()),
            None,
            "{value}"
        );
    }
}

#[test]
fn a_child_keeps_the_trace_and_the_flag_and_gets_a_new_span_id() {
    let parent = SpanContext::new_root(true);
    let child = parent.new_child();
    assert_eq!(child.trace_id, parent.trace_id);
    assert_ne!(child.span_id, parent.span_id);
    assert!(child.sampled);
    assert_ne!(child.span_id, [0; 8]);
    let reparsed = SpanContext::parse_traceparent(child.traceparent().as_bytes())
        .expect("a valid traceparent");
    assert_eq!(reparsed, child);
}

#[test]
fn the_current_context_is_set_only_while_its_future_is_polled() {
    let context = SpanContext::new_root(true);
    assert_eq!(super::current(), None);
    let seen = futures_lite::future::block_on(super::within(Some(context), async {
        let inner = super::within(None, async { super::current() }).await;
        (super::current(), inner)
    }));
    assert_eq!(seen, (Some(context), None));
    assert_eq!(super::current(), None);
}

#[test]
fn spans_encode_as_otlp_json() {
    let parent = SpanContext::parse_traceparent(EXAMPLE.as_bytes()).expect("a valid traceparent");
    let span = FinishedSpan {
        context: parent.new_child(),
        parent_span_id: Some(parent.span_id),
        name: Cow::Borrowed("POST /indexes/{index_uid}/search"),
        kind: SpanKind::Server,
        start_unix_nanos: 1_700_000_000_000_000_001,
        end_unix_nanos: 1_700_000_000_000_000_002,
        attributes: vec![
            ("http.request.method", AttributeValue::from("POST")),
            ("http.response.status_code", AttributeValue::Integer(500)),
        ],
        error: true,
    };
    let root = FinishedSpan {
        parent_span_id: None,
        error: false,
        attributes: Vec::new(),
        ..span.clone()
    };
    let body: serde_json::Value =
        serde_json::from_slice(&export_request_json("search", &[span.clone(), root]))
            .expect("the export request is JSON");
    let resource = &body["resourceSpans"][0];
    assert_eq!(
        resource["resource"]["attributes"][0],
        serde_json::json!({"key": "service.name", "value": {"stringValue": "search"}})
    );
    let spans = &resource["scopeSpans"][0]["spans"];
    assert_eq!(spans[0]["traceId"], "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(spans[0]["spanId"], hex::encode(span.context.span_id));
    assert_eq!(spans[0]["parentSpanId"], "00f067aa0ba902b7");
    assert_eq!(spans[0]["name"], "POST /indexes/{index_uid}/search");
    assert_eq!(spans[0]["kind"], 2);
    assert_eq!(spans[0]["startTimeUnixNano"], "1700000000000000001");
    assert_eq!(spans[0]["endTimeUnixNano"], "1700000000000000002");
    assert_eq!(
        spans[0]["attributes"][1],
        serde_json::json!({"key": "http.response.status_code", "value": {"intValue": "500"}})
    );
    assert_eq!(spans[0]["status"]["code"], 2);
    assert!(spans[1].get("parentSpanId").is_none());
    assert!(spans[1].get("status").is_none());
}
