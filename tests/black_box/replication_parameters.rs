//! `--experimental-replication-parameters`, black-box: the `TaskId` header gives a task its
//! uid (refused below the next uid), `DryRun: true` answers the task without storing it or
//! its payload, bad values are `bad_request` with Meilisearch's messages, and without the
//! flag both headers are ignored.

#![allow(clippy::unwrap_used)]

use crate::common;

use common::{MASTER_KEY, Options, Server};
use serde_json::Value;

fn start(replication_parameters: bool) -> Server {
    let extra_arguments = if replication_parameters {
        vec!["--experimental-replication-parameters".to_owned()]
    } else {
        Vec::new()
    };
    Server::start_with(Options {
        master_key: Some(MASTER_KEY.to_owned()),
        extra_arguments,
        ..Options::default()
    })
}

/// `POST /indexes/books/documents` with `extra` headers (each ending in `\r\n`).
fn add_with_headers(server: &Server, extra: &str, body: &str) -> common::HttpResponse {
    server.raw(&format!(
        "POST /indexes/books/documents HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {MASTER_KEY}\r\nContent-Type: application/json\r\n{extra}Content-Length: {}\r\n\r\n{body}",
        body.len()
    ))
}

#[test]
fn task_id_sets_the_uid_and_is_refused_below_the_next_one() {
    let server = start(true);
    let response = add_with_headers(&server, "TaskId: 10\r\n", r#"[{"id": 1}]"#);
    assert_eq!(response.status, 202, "{}", response.text());
    assert_eq!(response.json()["taskUid"], 10);
    let response = add_with_headers(&server, "", r#"[{"id": 2}]"#);
    assert_eq!(response.json()["taskUid"], 11);
    let refused = add_with_headers(&server, "TaskId: 5\r\n", r#"[{"id": 3}]"#);
    assert_eq!(refused.status, 400, "{}", refused.text());
    assert_eq!(refused.json()["code"], "bad_request");
    assert_eq!(
        refused.json()["message"],
        "Received bad task id: 5 should be >= to 12."
    );
    let refused = add_with_headers(&server, "TaskId: ten\r\n", r#"[{"id": 3}]"#);
    assert_eq!(refused.status, 400, "{}", refused.text());
    assert_eq!(
        refused.json()["message"],
        "Could not parse the TaskId as a u32: invalid digit found in string"
    );
    let task = server.wait_task(11);
    assert_eq!(task["status"], "succeeded", "{task}");
    assert_eq!(
        server.send("GET", "/indexes/books/stats", None).json()["numberOfDocuments"],
        2
    );
}

#[test]
fn dry_run_answers_the_task_and_stores_nothing() {
    let server = start(true);
    let response = add_with_headers(&server, "DryRun: true\r\n", r#"[{"id": 1}]"#);
    assert_eq!(response.status, 202, "{}", response.text());
    let uid = response.json()["taskUid"].as_u64().unwrap();
    assert_eq!(
        server.send("GET", &format!("/tasks/{uid}"), None).status,
        404
    );
    assert_eq!(server.send("GET", "/tasks", None).json()["total"], 0);
    let update_files = server.data_directory.join("update_files");
    let left = std::fs::read_dir(&update_files)
        .map(|entries| entries.count())
        .unwrap_or(0);
    assert_eq!(left, 0, "a dry run's payload is not kept");
    // The same request without the header registers the same uid.
    let response = add_with_headers(&server, "", r#"[{"id": 1}]"#);
    assert_eq!(response.json()["taskUid"], uid);
}

#[test]
fn without_the_flag_both_headers_are_ignored() {
    let server = start(false);
    let response = add_with_headers(&server, "TaskId: 10\r\nDryRun: true\r\n", r#"[{"id": 1}]"#);
    assert_eq!(response.status, 202, "{}", response.text());
    assert_eq!(response.json()["taskUid"], 0);
    let task = server.wait_task(0);
    assert_eq!(task["status"], "succeeded", "{task}");
    assert_ne!(task["details"], Value::Null);
}
