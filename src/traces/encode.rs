//! Finished spans as an OTLP/HTTP JSON export request (`ExportTraceServiceRequest` in the
//! protobuf JSON mapping): `resourceSpans` → `scopeSpans` → `spans`.
//!
//! Invariants: ids are lowercase hex (the OTLP JSON rule, not base64); times and integer
//! attributes are decimal strings (64-bit integers in the protobuf JSON mapping); a span
//! without a parent has no `parentSpanId`; a failed span has status code 2 (error), any
//! other none.

use serde_json::{Value, json};

use super::span::{AttributeValue, FinishedSpan};

/// The instrumentation scope the spans are reported under.
const SCOPE_NAME: &str = "coresearch";
/// OTLP's status code of a failed span.
const STATUS_CODE_ERROR: u8 = 2;

/// The JSON body posting `spans` for the service `service_name`.
pub fn export_request_json(service_name: &str, spans: &[FinishedSpan]) -> Vec<u8> {
    let request = json!({
        "resourceSpans": [{
            "resource": {"attributes": [attribute("service.name", &AttributeValue::Text(service_name.to_owned().into()))]},
            "scopeSpans": [{
                "scope": {"name": SCOPE_NAME, "version": env!("CARGO_PKG_VERSION")},
                "spans": spans.iter().map(span_json).collect::<Vec<Value>>(),
            }],
        }],
    });
    request.to_string().into_bytes()
}

/// One span.
fn span_json(span: &FinishedSpan) -> Value {
    let mut object = json!({
        "traceId": hex::encode(span.context.trace_id),
        "spanId": hex::encode(span.context.span_id),
        "name": span.name,
        "kind": span.kind as u8,
        "startTimeUnixNano": span.start_unix_nanos.to_string(),
        "endTimeUnixNano": span.end_unix_nanos.to_string(),
        "attributes": span
            .attributes
            .iter()
            .map(|(key, value)| attribute(key, value))
            .collect::<Vec<Value>>(),
    });
    if let Some(parent) = span.parent_span_id {
        object["parentSpanId"] = Value::String(hex::encode(parent));
    }
    if span.error {
        object["status"] = json!({"code": STATUS_CODE_ERROR});
    }
    object
}

/// One `KeyValue`.
fn attribute(key: &str, value: &AttributeValue) -> Value {
    let value = match value {
        AttributeValue::Text(text) => json!({"stringValue": text}),
        AttributeValue::Integer(number) => json!({"intValue": number.to_string()}),
    };
    json!({"key": key, "value": value})
}
