//! What clients see where coresearch differed from Meilisearch 1.41 (issue 36, items 7, 9 and
//! 10), each answer checked against Meilisearch's source:
//! - item 9: a document array or NDJSON payload whose values Meilisearch's engine cannot read
//!   (a number out of `f64`'s range, a lone UTF-16 surrogate, a value nested 128 levels deep)
//!   is accepted and fails its task with code `internal` and the engine's message, positioned
//!   in the failing value's own text; a JSON payload that is one object is read whole and
//!   refused at upload; the nesting limit applies to each field's value.

mod common;

use common::{MASTER_KEY, Server};
use serde_json::{Value, json};

/// `POST /indexes/{index}/documents` with `body` sent as `content_type`.
fn post_documents(
    server: &Server,
    index: &str,
    content_type: &str,
    body: &str,
) -> common::HttpResponse {
    server.raw(&format!(
        "POST /indexes/{index}/documents HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {MASTER_KEY}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    ))
}

/// The finished task of an accepted request.
fn finished(server: &Server, response: &common::HttpResponse) -> Value {
    assert_eq!(response.status, 202, "{}", response.text());
    server.wait_task(&response.json()["taskUid"])
}

/// `depth` arrays nested around `1`.
fn nested(depth: usize) -> String {
    format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
}

/// Asserts that `task` failed as Meilisearch's engine fails a document whose value does not
/// parse, with serde_json's `detail`.
fn assert_value_failure(task: &Value, index: &str, detail: &str) {
    assert_eq!(task["status"], "failed", "{task}");
    assert_eq!(
        task["error"],
        json!({
            "message": format!("Index `{index}`: internal: {detail}."),
            "code": "internal",
            "type": "internal",
            "link": "https://docs.meilisearch.com/errors#internal",
        }),
        "{task}"
    );
    assert_eq!(
        task["details"],
        json!({"receivedDocuments": 1, "indexedDocuments": 0})
    );
}

#[test]
fn values_the_engine_cannot_read_are_accepted_and_fail_the_task() {
    let server = Server::start();
    let cases = [
        (
            "range",
            r#"[{"id":1,"n":1e400}]"#.to_string(),
            "number out of range at line 1 column 5",
        ),
        (
            "nested_range",
            r#"[{"id":1,"n":{"b": -1e400}}]"#.to_string(),
            "number out of range at line 1 column 12",
        ),
        (
            "surrogate",
            r#"[{"id":1,"s":"\ud800"}]"#.to_string(),
            "unexpected end of hex escape at line 1 column 8",
        ),
        (
            "deep",
            format!(r#"[{{"id":1,"a":"fine","deep":{}}}]"#, nested(300)),
            "recursion limit exceeded at line 1 column 128",
        ),
    ];
    for (index, body, detail) in cases {
        let task = finished(
            &server,
            &post_documents(&server, index, "application/json", &body),
        );
        assert_value_failure(&task, index, detail);
        let listed = server
            .send("GET", &format!("/indexes/{index}/documents"), None)
            .json();
        assert_eq!(listed["total"], 0, "nothing was indexed: {listed}");
    }
    let ndjson = "{\"id\":1,\"n\":2}\n{\"id\":2,\"n\":1e999}\n";
    let task = finished(
        &server,
        &post_documents(&server, "lines", "application/x-ndjson", ndjson),
    );
    assert_eq!(task["status"], "failed", "{task}");
    assert_eq!(
        task["error"]["message"],
        "Index `lines`: internal: number out of range at line 1 column 5."
    );
    assert_eq!(
        server.send("GET", "/indexes/lines/documents", None).json()["total"],
        0,
        "the batch changes nothing"
    );
}

#[test]
fn the_nesting_limit_applies_to_each_field_value() {
    let server = Server::start();
    // 127 arrays inside a field: the document nests 128 deep, each value stays within 128.
    let body = format!(r#"[{{"id":1,"deep":{}}}]"#, nested(127));
    let task = finished(
        &server,
        &post_documents(&server, "deep", "application/json", &body),
    );
    assert_eq!(task["status"], "succeeded", "{task}");
    let response = server.send("GET", "/indexes/deep/documents/1", None);
    assert_eq!(response.status, 200, "{}", response.text());
    let mut deep = json!(1);
    for _ in 0..127 {
        deep = json!([deep]);
    }
    let expected = json!({"id": 1, "deep": deep});
    assert_eq!(response.text(), expected.to_string());
}

#[test]
fn a_single_object_payload_is_read_whole_at_upload() {
    let server = Server::start();
    let response = post_documents(
        &server,
        "single",
        "application/json",
        r#"{"id":1,"n":1e400}"#,
    );
    assert_eq!(response.status, 400, "{}", response.text());
    assert_eq!(
        response.json(),
        json!({
            "message": "The `json` payload provided is malformed. `Couldn't serialize document value: number out of range at line 1 column 18`.",
            "code": "malformed_payload",
            "type": "invalid_request",
            "link": "https://docs.meilisearch.com/errors#malformed_payload",
        })
    );
}

#[test]
fn a_key_that_is_no_string_is_refused_where_it_stands_in_its_document() {
    let server = Server::start();
    for (content_type, format, body) in [
        (
            "application/json",
            "json",
            r#"[{"id":1},{"id":2,"\ud800":1}]"#,
        ),
        (
            "application/x-ndjson",
            "ndjson",
            "{\"id\":1}\n{\"id\":2,\"\\ud800\":1}\n",
        ),
    ] {
        let response = post_documents(&server, "keys", content_type, body);
        assert_eq!(response.status, 400, "{}", response.text());
        assert_eq!(
            response.json()["message"],
            format!(
                "The `{format}` payload provided is malformed. `Couldn't serialize document value: unexpected end of hex escape at line 1 column 16`."
            )
        );
    }
}
