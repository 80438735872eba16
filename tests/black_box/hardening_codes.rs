//! Answers of the hardening issue's "wrong codes" item: a JSON body over
//! `--http-payload-size-limit` (by one byte, or announced as `u64::MAX` bytes) is 413
//! `payload_too_large`; a `Transfer-Encoding` where `chunked` is not the one and only coding
//! is refused with 400; a document batch that brings more than 65,535 fields fails its task
//! with `max_fields_limit_exceeded` and applies nothing.

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]

use crate::common;

use common::{Options, Server, json_request, request};

/// The payload limit the servers of the body-size tests run with.
const LIMIT_BYTES: usize = 1000;
/// Fields of the oversized JSON document: over Meilisearch's 65,535.
const DOCUMENT_FIELD_COUNT: usize = 70_000;
/// Columns of the oversized CSV payload.
const CSV_COLUMN_COUNT: usize = 1_000_000;
/// Meilisearch's message for a document batch over the field limit.
const MAX_FIELDS_MESSAGE: &str = "A document cannot contain more than 65,535 fields.";

fn limited_server() -> Server {
    Server::start_with(Options {
        extra_arguments: vec!["--http-payload-size-limit".into(), LIMIT_BYTES.to_string()],
        ..Options::default()
    })
}

fn send(server: &Server, bytes: &[u8]) -> common::HttpResponse {
    let mut connection = server.connect().expect("connect succeeds");
    connection.send(bytes);
    connection.read_response().expect("read_response succeeds")
}

fn task_uid(response: &common::HttpResponse) -> u64 {
    assert_eq!(response.status, 202, "{}", response.text());
    response.json()["taskUid"]
        .as_u64()
        .expect("an enqueued task has a uid")
}

#[test]
fn search_body_one_byte_over_the_limit_is_413_payload_too_large() {
    let server = limited_server();
    let query = format!(r#"{{"q":"{}"}}"#, "a".repeat(LIMIT_BYTES + 1 - 8));
    assert_eq!(query.len(), LIMIT_BYTES + 1);
    let response = server.raw(&json_request(
        "POST",
        "/indexes/movies/search",
        None,
        &query,
    ));
    assert_eq!(response.status, 413, "{}", response.text());
    assert_eq!(response.json()["code"], "payload_too_large");
    assert_eq!(response.json()["type"], "invalid_request");
    assert_eq!(
        response.json()["message"],
        "JSON payload (1001 bytes) is larger than allowed (limit: 1000 bytes)."
    );
}

#[test]
fn largest_content_length_is_413_payload_too_large() {
    let server = limited_server();
    let response = send(
        &server,
        b"POST /indexes/movies/search HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: 18446744073709551615\r\n\r\n{}",
    );
    assert_eq!(response.status, 413, "{}", response.text());
    assert_eq!(response.json()["code"], "payload_too_large");
    assert_eq!(
        response.json()["message"],
        "JSON payload (18446744073709551615 bytes) is larger than allowed (limit: 1000 bytes)."
    );
}

#[test]
fn chunked_that_is_not_the_only_transfer_coding_is_400() {
    let server = Server::start();
    for transfer_encoding in [
        "Transfer-Encoding: gzip, chunked\r\n",
        "Transfer-Encoding: chunked, chunked\r\n",
        "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
    ] {
        let request = format!(
            "PATCH /experimental-features HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n{transfer_encoding}\r\n2\r\n{{}}\r\n0\r\n\r\n"
        );
        let response = send(&server, request.as_bytes());
        assert_eq!(response.status, 400, "{transfer_encoding}");
    }
    let plain = "PATCH /experimental-features HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n";
    assert_eq!(send(&server, plain.as_bytes()).status, 200);
}

/// Adds `body` (of `content_type`) to `index` and waits for its task.
fn add_documents(
    server: &Server,
    index: &str,
    content_type: &str,
    body: &[u8],
) -> serde_json::Value {
    let mut request = format!(
        "POST /indexes/{index}/documents HTTP/1.1\r\nHost: t\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(body);
    let response = send(server, &request);
    server.wait_task(task_uid(&response))
}

fn assert_max_fields_failure(task: &serde_json::Value) {
    assert_eq!(task["status"], "failed", "{task}");
    assert_eq!(task["error"]["code"], "max_fields_limit_exceeded", "{task}");
    assert_eq!(task["error"]["type"], "invalid_request");
    assert_eq!(task["error"]["message"], MAX_FIELDS_MESSAGE);
}

fn document_count(server: &Server, index: &str) -> u64 {
    let response = server.raw(&request(
        "GET",
        &format!("/indexes/{index}/documents"),
        None,
    ));
    assert_eq!(response.status, 200, "{}", response.text());
    response.json()["total"]
        .as_u64()
        .expect("a document list has a total")
}

#[test]
fn documents_over_the_field_limit_fail_with_max_fields_limit_exceeded() {
    let server = Server::start();
    let first = add_documents(&server, "wide", "application/json", br#"[{"id":0}]"#);
    assert_eq!(first["status"], "succeeded", "{first}");

    let fields: Vec<String> = (0..DOCUMENT_FIELD_COUNT)
        .map(|field| format!(r#""field{field}":{field}"#))
        .collect();
    let wide = format!(r#"[{{"id":1}},{{"id":2,{}}}]"#, fields.join(","));
    let task = add_documents(&server, "wide", "application/json", wide.as_bytes());
    assert_max_fields_failure(&task);
    assert_eq!(
        document_count(&server, "wide"),
        1,
        "the failed batch applied nothing"
    );

    let header: Vec<String> = (0..CSV_COLUMN_COUNT)
        .map(|column| format!("c{column}"))
        .collect();
    let row = vec!["1"; CSV_COLUMN_COUNT];
    let csv = format!("id,{}\n3,{}\n", header.join(","), row.join(","));
    let task = add_documents(&server, "wide", "text/csv", csv.as_bytes());
    assert_max_fields_failure(&task);
    assert_eq!(
        document_count(&server, "wide"),
        1,
        "the failed batch applied nothing"
    );

    let after = add_documents(
        &server,
        "wide",
        "application/json",
        br#"[{"id":4,"title":"x"}]"#,
    );
    assert_eq!(after["status"], "succeeded", "{after}");
    assert_eq!(document_count(&server, "wide"), 2);
}
