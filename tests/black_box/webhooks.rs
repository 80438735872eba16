#![allow(clippy::unwrap_used)]
//! `/webhooks` against the server binary: every route and error with Meilisearch's status,
//! code and message; persistence across a restart; the command line's read-only webhook;
//! delivery of a finished batch's tasks as gzip NDJSON to a receiver this test runs.

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]

use crate::common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::time::Duration;

use common::{HttpResponse, MASTER_KEY, Options, Server};
use serde_json::{Value, json};

/// The uuid of the command line's webhook.
const NIL_UUID: &str = "00000000-0000-0000-0000-000000000000";

/// How long the receiver waits for the batch's delivery.
const DELIVERY_WAIT: Duration = Duration::from_secs(20);

fn options(extra_arguments: &[&str]) -> Options {
    Options {
        master_key: Some(MASTER_KEY.to_string()),
        extra_arguments: extra_arguments
            .iter()
            .map(|text| text.to_string())
            .collect(),
        ..Options::default()
    }
}

fn assert_error(response: &HttpResponse, status: u16, code: &str, message: &str) {
    assert_eq!(response.status, status, "{}", response.text());
    assert_eq!(
        response.json(),
        json!({
            "message": message,
            "code": code,
            "type": "invalid_request",
            "link": format!("https://docs.meilisearch.com/errors#{code}"),
        })
    );
}

fn post_raw(server: &Server, path: &str, body: &str) -> HttpResponse {
    server.raw(&common::json_request("POST", path, Some(MASTER_KEY), body))
}

#[test]
fn create_read_update_and_delete() {
    let server = Server::start_with(options(&[]));
    assert_eq!(
        server.send("GET", "/webhooks", None).json(),
        json!({"results": []})
    );
    let body = json!({
        "url": "https://example.com/hook",
        "headers": {"Authorization": "Bearer abcdefghijklmnop", "X-Team": "search"},
    });
    let created = server.send("POST", "/webhooks", Some(&body));
    assert_eq!(created.status, 201, "{}", created.text());
    let created = created.json();
    let uuid = created["uuid"].as_str().unwrap().to_string();
    assert_eq!(
        created,
        json!({
            "uuid": uuid,
            "isEditable": true,
            "url": "https://example.com/hook",
            "headers": {"Authorization": "Bearer abXXXX...", "X-Team": "search"},
        })
    );
    assert_eq!(
        server.send("GET", "/webhooks", None).json(),
        json!({"results": [created]})
    );
    let path = format!("/webhooks/{uuid}");
    assert_eq!(server.send("GET", &path, None).json(), created);

    let patch =
        json!({"url": "https://example.org/other", "headers": {"X-Team": null, "X-New": "1"}});
    let patched = server.send("PATCH", &path, Some(&patch));
    assert_eq!(patched.status, 200, "{}", patched.text());
    assert_eq!(
        patched.json(),
        json!({
            "uuid": uuid,
            "isEditable": true,
            "url": "https://example.org/other",
            "headers": {"Authorization": "Bearer abXXXX...", "X-New": "1"},
        })
    );
    let cleared = server.send("PATCH", &path, Some(&json!({"headers": null})));
    assert_eq!(cleared.json()["headers"], json!({}));
    assert_eq!(cleared.json()["url"], "https://example.org/other");

    let deleted = server.send("DELETE", &path, None);
    assert_eq!(deleted.status, 204);
    assert_error(
        &server.send("GET", &path, None),
        404,
        "webhook_not_found",
        &format!("Webhook `{uuid}` not found."),
    );
    assert_error(
        &server.send("DELETE", &path, None),
        404,
        "webhook_not_found",
        &format!("Webhook `{uuid}` not found."),
    );
}

#[test]
fn bodies_and_paths_are_refused_with_meilisearch_codes_and_messages() {
    let server = Server::start_with(options(&[]));
    let cases: &[(&str, &str, &str)] = &[
        (
            r#"{"url":3}"#,
            "invalid_webhook_url",
            "Invalid value type at `.url`: expected a string, but found a positive integer: `3`",
        ),
        (
            r#"{"url":"nope"}"#,
            "invalid_webhook_url",
            "Invalid URL `nope`: relative URL without a base",
        ),
        (
            r#"{"url":"http://a.b","uuid":"x"}"#,
            "immutable_webhook_uuid",
            "Immutable field `uuid`: expected one of `url`, `headers`",
        ),
        (
            r#"{"url":"http://a.b","isEditable":true}"#,
            "immutable_webhook_is_editable",
            "Immutable field `isEditable`: expected one of `url`, `headers`",
        ),
        (
            r#"{"url":"http://a.b","foo":true}"#,
            "bad_request",
            "Unknown field `foo`: expected one of `url`, `headers`",
        ),
        (
            r#"{"url":"http://a.b","headers":3}"#,
            "invalid_webhook_headers",
            "Invalid value type at `.headers`: expected an object, but found a positive integer: `3`",
        ),
        (
            r#"{"url":"http://a.b","headers":{"a":3}}"#,
            "invalid_webhook_headers",
            "Invalid value type at `.headers.a`: expected a string, but found a positive integer: `3`",
        ),
        (
            r#"{"url":"http://a.b","headers":{"a b":"x"}}"#,
            "invalid_webhook_headers",
            "Invalid header name `a b`: invalid HTTP header name",
        ),
        (
            r#"{"url":"http://a.b","headers":{"a":"x\ny"}}"#,
            "invalid_webhook_headers",
            "Invalid header value `a`: failed to parse header value",
        ),
        (
            "[]",
            "bad_request",
            "Invalid value type: expected an object, but found an array: `[]`",
        ),
    ];
    for (body, code, message) in cases {
        assert_error(&post_raw(&server, "/webhooks", body), 400, code, message);
    }
    for body in ["{}", r#"{"url":null}"#, r#"{"url":""}"#] {
        let response = post_raw(&server, "/webhooks", body);
        assert_eq!(response.status, 400);
        assert_eq!(response.json()["code"], "invalid_webhook_url");
        let message = response.json()["message"].as_str().unwrap().to_string();
        assert!(
            message.starts_with("The URL for the webhook `") && message.ends_with("` is missing."),
            "{message}"
        );
    }
    // A header given `null` at creation is kept, empty, as in Meilisearch.
    let created = post_raw(
        &server,
        "/webhooks",
        r#"{"url":"http://a.b","headers":{"a":null}}"#,
    );
    assert_eq!(created.status, 201);
    assert_eq!(created.json()["headers"], json!({"a": ""}));
    let uuid = created.json()["uuid"].as_str().unwrap().to_string();

    let invalid_uuid = "Invalid UUID: invalid character: found `z` at 0";
    assert_error(
        &server.send("GET", "/webhooks/zzz", None),
        400,
        "invalid_webhook_uuid",
        invalid_uuid,
    );
    assert_error(
        &server.send("DELETE", "/webhooks/zzz", None),
        400,
        "invalid_webhook_uuid",
        invalid_uuid,
    );
    // The body is decoded before the path's uuid.
    assert_error(
        &server.send("PATCH", "/webhooks/zzz", Some(&json!({"url": 3}))),
        400,
        "invalid_webhook_url",
        "Invalid value type at `.url`: expected a string, but found a positive integer: `3`",
    );
    let absent = "00000000-0000-0000-0000-000000000001";
    assert_error(
        &server.send("PATCH", &format!("/webhooks/{absent}"), Some(&json!({}))),
        404,
        "webhook_not_found",
        &format!("Webhook `{absent}` not found."),
    );
    assert_error(
        &server.send(
            "PATCH",
            &format!("/webhooks/{uuid}"),
            Some(&json!({"url": null})),
        ),
        400,
        "invalid_webhook_url",
        &format!("The URL for the webhook `{uuid}` is missing."),
    );
    assert_error(
        &server.send(
            "PATCH",
            &format!("/webhooks/{uuid}"),
            Some(&json!({"url": "x"})),
        ),
        400,
        "invalid_webhook_url",
        "Invalid URL `x`: relative URL without a base",
    );
    // Without a command-line webhook, the nil uuid is still immutable, and absent on reads.
    assert_eq!(
        server
            .send("GET", &format!("/webhooks/{NIL_UUID}"), None)
            .status,
        404
    );
    assert_eq!(
        server
            .send("DELETE", &format!("/webhooks/{NIL_UUID}"), None)
            .json()["code"],
        "immutable_webhook"
    );
}

#[test]
fn at_most_twenty_webhooks_of_at_most_two_hundred_headers() {
    let server = Server::start_with(options(&[]));
    let headers: BTreeMap<String, String> = (0..=200)
        .map(|position| (format!("h{position}"), "v".to_string()))
        .collect();
    let response = server.send(
        "POST",
        "/webhooks",
        Some(&json!({"url": "http://a.b", "headers": headers})),
    );
    assert_eq!(response.status, 400);
    assert_eq!(response.json()["code"], "invalid_webhook_headers");
    let message = response.json()["message"].as_str().unwrap().to_string();
    assert!(
        message.ends_with(
            "`. Please limit the number of headers to 200. Hint: To remove an already defined \
             header set its value to `null`"
        ),
        "{message}"
    );
    for position in 0..20 {
        let response = server.send(
            "POST",
            "/webhooks",
            Some(&json!({"url": format!("http://a.b/{position}")})),
        );
        assert_eq!(response.status, 201, "{}", response.text());
    }
    assert_error(
        &server.send("POST", "/webhooks", Some(&json!({"url": "http://a.b"}))),
        400,
        "invalid_webhooks",
        "Defining too many webhooks would crush the server. Please limit the number of \
         webhooks to 20. You may use a third-party proxy server to dispatch events to more \
         than 20 endpoints.",
    );
    assert_eq!(
        server.send("GET", "/webhooks", None).json()["results"]
            .as_array()
            .unwrap()
            .len(),
        20
    );
}

#[test]
fn webhooks_survive_a_restart_and_the_command_line_one_is_read_only() {
    let scratch = tempfile::tempdir().unwrap();
    let data = scratch.path().join("data.ms");
    let server = Server::start_on(&data, &options(&[]));
    let created = server
        .send(
            "POST",
            "/webhooks",
            Some(&json!({"url": "https://example.com/kept"})),
        )
        .json();
    assert!(server.stop().success());

    let server = Server::start_on(
        &data,
        &options(&[
            "--task-webhook-url",
            "https://example.com/cli",
            "--task-webhook-authorization-header",
            "Bearer abcdefghijklmnop",
        ]),
    );
    let command_line = json!({
        "uuid": NIL_UUID,
        "isEditable": false,
        "url": "https://example.com/cli",
        "headers": {"Authorization": "Bearer abXXXX..."},
    });
    assert_eq!(
        server.send("GET", "/webhooks", None).json(),
        json!({"results": [command_line, created]})
    );
    let nil_path = format!("/webhooks/{NIL_UUID}");
    assert_eq!(server.send("GET", &nil_path, None).json(), command_line);
    let immutable = format!(
        "Webhook `{NIL_UUID}` is immutable. The webhook defined from the command line cannot be \
         modified using the API."
    );
    assert_error(
        &server.send("PATCH", &nil_path, Some(&json!({"url": "https://x.y"}))),
        400,
        "immutable_webhook",
        &immutable,
    );
    assert_error(
        &server.send("DELETE", &nil_path, None),
        400,
        "immutable_webhook",
        &immutable,
    );
}

/// One request the receiver got: its lower-cased headers and its body.
struct Received {
    headers: BTreeMap<String, String>,
    body: Vec<u8>,
}

/// Accepts connections on `listener`, answers each request 200, and sends it on.
fn receive(listener: TcpListener, sender: mpsc::Sender<Received>) {
    for stream in listener.incoming() {
        let Ok(stream) = stream else { return };
        let mut reader = BufReader::new(stream);
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                break;
            }
            let mut headers = BTreeMap::new();
            loop {
                let mut header = String::new();
                reader.read_line(&mut header).unwrap();
                let header = header.trim_end();
                if header.is_empty() {
                    break;
                }
                let (name, value) = header.split_once(':').unwrap();
                headers.insert(name.to_ascii_lowercase(), value.trim().to_string());
            }
            let length: usize = headers["content-length"].parse().unwrap();
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            reader
                .get_mut()
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                .unwrap();
            if sender.send(Received { headers, body }).is_err() {
                return;
            }
        }
    }
}

fn gunzip(bytes: &[u8]) -> String {
    let mut text = String::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_string(&mut text)
        .unwrap();
    text
}

#[test]
fn a_finished_batch_is_posted_as_gzip_ndjson_with_the_webhook_headers() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let receiver_address = listener.local_addr().unwrap();
    let (sender, deliveries) = mpsc::channel();
    std::thread::spawn(move || receive(listener, sender));
    let server = Server::start_with(options(&["--experimental-allowed-ip-networks", "any"]));
    let body = json!({
        "url": format!("http://{receiver_address}/hook"),
        "headers": {"Authorization": "Bearer my-secret-token", "X-Custom": "yes"},
    });
    assert_eq!(server.send("POST", "/webhooks", Some(&body)).status, 201);

    let enqueued = server
        .send("POST", "/indexes", Some(&json!({"uid": "movies"})))
        .json();
    let uid = enqueued["taskUid"].as_u64().unwrap();
    let finished = server.wait_task(uid);
    assert_eq!(finished["status"], "succeeded", "{finished}");

    let deadline = std::time::Instant::now() + DELIVERY_WAIT;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let received = deliveries
            .recv_timeout(left)
            .expect("the webhook is called for the batch");
        assert_eq!(received.headers["content-encoding"], "gzip");
        assert_eq!(received.headers["content-type"], "application/x-ndjson");
        assert_eq!(received.headers["authorization"], "Bearer my-secret-token");
        assert_eq!(received.headers["x-custom"], "yes");
        let text = gunzip(&received.body);
        let tasks: Vec<Value> = text
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        assert!(text.ends_with('\n'));
        if let Some(task) = tasks.iter().find(|task| task["uid"] == uid) {
            // The same JSON as `GET /tasks/{uid}`.
            assert_eq!(
                *task,
                server.send("GET", &format!("/tasks/{uid}"), None).json()
            );
            break;
        }
    }
}
