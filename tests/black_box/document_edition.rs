//! Editing documents by function (`POST /indexes/{uid}/documents/edit`), the documents of
//! an enqueued task (`GET /tasks/{uid}/documents`) and the used size of `GET /stats`,
//! through raw HTTP (exact bytes) and the official `meilisearch-sdk` client, on two cores
//! with two shards per index. Expected answers were taken from Meilisearch itself.

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]

use crate::common;

use std::time::{Duration, Instant};

use common::{HttpResponse, MASTER_KEY, Options, Server, json_request};
use serde_json::{Value, json};

/// How long a test waits for a task to finish.
const TASK_TIMEOUT: Duration = Duration::from_secs(60);
/// A script that spends most of Rhai's operation budget, so that a few documents keep the
/// scheduler busy long enough to look at the tasks queued behind.
const SLOW_SCRIPT: &str = "let i = 0; while i < 100000 { i += 1; } doc.slow = true;";

/// Documents the slow script runs on while the test looks at the waiting tasks (split over
/// two shards that run in parallel: about 2.5 s on an idle machine).
const SLOW_DOCUMENTS: u64 = 300;
/// Documents of the edition a cancelation stops.
const CANCELED_DOCUMENTS: u64 = 40;

fn options() -> Options {
    Options {
        master_key: Some(MASTER_KEY.to_string()),
        ..Options::default()
    }
}

fn enable(server: &Server, features: Value) {
    let response = server.send("PATCH", "/experimental-features", Some(&features));
    assert_eq!(response.status, 200, "{}", response.text());
}

/// Registers a task (202) and answers its uid.
fn enqueue(server: &Server, method: &str, path: &str, body: &Value) -> u64 {
    let response = server.send(method, path, Some(body));
    assert_eq!(response.status, 202, "{path}: {}", response.text());
    response.json()["taskUid"]
        .as_u64()
        .expect("a summarized task has a uid")
}

/// Waits until task `uid` is finished and answers it.
fn wait(server: &Server, uid: u64) -> Value {
    let started = Instant::now();
    loop {
        let task = server.send("GET", &format!("/tasks/{uid}"), None).json();
        if matches!(
            task["status"].as_str(),
            Some("succeeded" | "failed" | "canceled")
        ) {
            return task;
        }
        assert!(
            started.elapsed() < TASK_TIMEOUT,
            "task {uid} never finished"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn succeed(server: &Server, uid: u64) -> Value {
    let task = wait(server, uid);
    assert_eq!(task["status"], "succeeded", "{task}");
    task
}

/// Every document of `index`, sorted by id.
fn documents(server: &Server, index: &str) -> Vec<Value> {
    let listed = server
        .send(
            "GET",
            &format!("/indexes/{index}/documents?limit=1000"),
            None,
        )
        .json();
    let mut documents = listed["results"]
        .as_array()
        .expect("a listing has results")
        .clone();
    documents.sort_by_key(|document| document["id"].as_u64());
    documents
}

fn books() -> Value {
    json!([
        {"id": 1, "title": "Carol", "genre": "drama", "stock": 3},
        {"id": 2, "title": "Wonder", "genre": "action", "stock": 0},
        {"id": 3, "title": "Pi", "genre": "drama", "stock": 7},
        {"id": 4, "title": "Max", "genre": "action", "stock": 1},
    ])
}

/// A server with the `books` index filled and document edition enabled.
fn server_with_books() -> Server {
    let server = Server::start_with(options());
    enable(&server, json!({"editDocumentsByFunction": true}));
    let uid = enqueue(&server, "POST", "/indexes/books/documents", &books());
    succeed(&server, uid);
    server
}

fn error(response: &HttpResponse) -> (u16, String, String) {
    let body = response.json();
    (
        response.status,
        body["code"].as_str().unwrap_or_default().to_owned(),
        body["message"].as_str().unwrap_or_default().to_owned(),
    )
}

#[test]
fn the_edit_route_is_refused_until_its_feature_is_on_and_checks_its_body_in_order() {
    let server = Server::start_with(options());
    let edit = |body: Value| server.send("POST", "/indexes/books/documents/edit", Some(&body));
    // The body is decoded before the feature is checked.
    assert_eq!(
        error(&edit(json!({}))),
        (
            400,
            "missing_document_edition_function".into(),
            "Missing field `function`".into()
        )
    );
    assert_eq!(
        error(&edit(json!({"function": 3}))),
        (
            400,
            "invalid_document_edition_function_filter".into(),
            "Invalid value type at `.function`: expected a string, but found a positive integer: `3`".into()
        )
    );
    let refused = edit(json!({"function": "doc.x = 1"}));
    assert_eq!(
        refused.text(),
        r#"{"message":"Using the documents edit route requires enabling the `edit documents by function` experimental feature. See https://github.com/orgs/meilisearch/discussions/762","code":"feature_not_enabled","type":"invalid_request","link":"https://docs.meilisearch.com/errors#feature_not_enabled"}"#
    );
    assert_eq!(refused.status, 400);

    enable(&server, json!({"editDocumentsByFunction": true}));
    assert_eq!(
        error(&edit(json!({"function": "doc.x = 1", "other": 3}))),
        (
            400,
            "bad_request".into(),
            "Unknown field `other`: expected one of `filter`, `context`, `function`".into()
        )
    );
    assert_eq!(
        error(&server.send("POST",
            "/indexes/b%20ad/documents/edit",
            Some(&json!({"function": "doc.x = 1"}))
        )),
        (
            400,
            "invalid_index_uid".into(),
            "`b ad` is not a valid index uid. Index uid can be an integer or a string containing only alphanumeric characters, hyphens (-) and underscores (_), and can not be more than 512 bytes.".into()
        )
    );
    assert_eq!(
        error(&edit(json!({"function": "doc.x = "}))),
        (
            400,
            "bad_request".into(),
            "Script is incomplete (line 1, position 9)".into()
        )
    );
    assert_eq!(
        error(&edit(json!({"function": "doc.x = 1", "context": 3}))),
        (
            400,
            "invalid_document_edition_context".into(),
            "The context must be an object".into()
        )
    );
    for empty in [json!(""), json!([])] {
        assert_eq!(
            error(&edit(json!({"function": "doc.x = 1", "filter": empty}))),
            (
                400,
                "invalid_document_filter".into(),
                "Sending an empty filter is forbidden.".into()
            )
        );
    }
    let (status, code, _) = error(&edit(json!({"function": "doc.x = 1", "filter": "a ="})));
    assert_eq!((status, code.as_str()), (400, "invalid_document_filter"));

    // Null filter and context are absent ones; a missing index fails the task.
    let uid = enqueue(
        &server,
        "POST",
        "/indexes/books/documents/edit",
        &json!({"function": "doc.x = 1", "context": null, "filter": null}),
    );
    let task = wait(&server, uid);
    assert_eq!(task["type"], "documentEdition");
    assert_eq!(task["status"], "failed");
    assert_eq!(
        task["details"].to_string(),
        r#"{"editedDocuments":0,"deletedDocuments":null,"originalFilter":null,"context":null,"function":"doc.x = 1"}"#
    );
    assert_eq!(task["error"]["code"], "index_not_found");
    assert_eq!(task["error"]["message"], "Index `books` not found.");
}

#[test]
fn a_function_edits_documents_with_its_context_and_deletes_those_it_sets_to_unit() {
    let server = server_with_books();
    let function = "if doc.stock == 0 { doc = () } else { doc.title = `${doc.title} (${context.shop})`; doc.tags = [context.shop] }";
    let uid = enqueue(
        &server,
        "POST",
        "/indexes/books/documents/edit",
        &json!({"function": function, "context": {"shop": "north"}}),
    );
    let task = succeed(&server, uid);
    // Meilisearch reports the number of documents the function ran on in both counters.
    assert_eq!(
        task["details"],
        json!({
            "editedDocuments": 4,
            "deletedDocuments": 4,
            "originalFilter": null,
            "context": {"shop": "north"},
            "function": function,
        })
    );
    assert_eq!(
        task["details"].to_string().find("editedDocuments"),
        Some(2),
        "editedDocuments comes first"
    );
    assert_eq!(
        documents(&server, "books"),
        vec![
            json!({"id": 1, "title": "Carol (north)", "genre": "drama", "stock": 3, "tags": ["north"]}),
            json!({"id": 3, "title": "Pi (north)", "genre": "drama", "stock": 7, "tags": ["north"]}),
            json!({"id": 4, "title": "Max (north)", "genre": "action", "stock": 1, "tags": ["north"]}),
        ]
    );
    // The edited documents are indexed again: search finds the new words, not the deleted one.
    let found = server
        .send(
            "POST",
            "/indexes/books/search",
            Some(&json!({"q": "north"})),
        )
        .json();
    assert_eq!(found["estimatedTotalHits"], 3, "{found}");
    let stats = server.send("GET", "/indexes/books/stats", None).json();
    assert_eq!(stats["numberOfDocuments"], 3);
    assert_eq!(stats["fieldDistribution"]["tags"], 3);
}

#[test]
fn a_filter_limits_the_edition_to_the_documents_it_matches() {
    let server = server_with_books();
    let uid = enqueue(
        &server,
        "POST",
        "/indexes/books/documents/edit",
        &json!({"function": "doc.stock += 1", "filter": "genre = drama"}),
    );
    let task = wait(&server, uid);
    assert_eq!(task["status"], "failed");
    assert_eq!(
        task["error"]["message"],
        "Index `books`: Attribute `genre` is not filterable. This index does not have configured filterable attributes.\n1:6 genre = drama"
    );
    assert_eq!(task["error"]["code"], "invalid_document_filter");

    let uid = enqueue(
        &server,
        "PATCH",
        "/indexes/books/settings",
        &json!({"filterableAttributes": ["genre"]}),
    );
    succeed(&server, uid);
    let uid = enqueue(
        &server,
        "POST",
        "/indexes/books/documents/edit",
        &json!({"function": "doc.stock += 1", "filter": "genre = drama"}),
    );
    let task = succeed(&server, uid);
    assert_eq!(task["details"]["editedDocuments"], 2);
    assert_eq!(task["details"]["originalFilter"], "\"genre = drama\"");
    let stocks: Vec<Value> = documents(&server, "books")
        .iter()
        .map(|document| document["stock"].clone())
        .collect();
    assert_eq!(stocks, vec![json!(4), json!(0), json!(8), json!(1)]);
}

#[test]
fn a_primary_key_change_or_a_script_error_fails_the_task_and_changes_nothing() {
    let server = server_with_books();
    let cases = [
        (
            // Only the last document fails: the ones edited before it must not change.
            "doc.title = \"changed\"; if doc.id == 4 { doc.id = 40 }",
            "Index `books`: Document editions cannot modify a document's primary key",
        ),
        (
            "doc.title = \"changed\"; if doc.id == 3 { throw \"boom\" }",
            "Index `books`: Document edition runtime error encountered while running the function: Runtime error: boom (line 1, position 41)",
        ),
        (
            "doc = 3",
            "Index `books`: Document editions must keep documents as objects",
        ),
    ];
    for (function, message) in cases {
        let uid = enqueue(
            &server,
            "POST",
            "/indexes/books/documents/edit",
            &json!({"function": function}),
        );
        let task = wait(&server, uid);
        assert_eq!(task["status"], "failed", "{function}");
        assert_eq!(
            task["error"],
            json!({
                "message": message,
                "code": "edit_documents_by_function_error",
                "type": "invalid_request",
                "link": "https://docs.meilisearch.com/errors#edit_documents_by_function_error",
            })
        );
        assert_eq!(task["details"]["editedDocuments"], 0);
        assert_eq!(task["details"]["deletedDocuments"], Value::Null);
        assert_eq!(
            documents(&server, "books"),
            books().as_array().expect("an array").clone()
        );
    }
    let uid = enqueue(
        &server,
        "POST",
        "/indexes/books/documents/edit",
        &json!({"function": "loop { }"}),
    );
    let task = wait(&server, uid);
    assert_eq!(
        task["error"]["message"],
        "Index `books`: Document edition runtime error encountered while running the function: Too many operations (line 1, position 6)"
    );
}

#[test]
fn only_wildcard_keys_and_the_master_key_may_edit() {
    let server = server_with_books();
    let mut keys = Vec::new();
    for actions in [json!(["documents.*"]), json!(["*"])] {
        let created = server.send(
            "POST",
            "/keys",
            Some(&json!({"actions": actions, "indexes": ["*"], "expiresAt": null})),
        );
        assert_eq!(created.status, 201, "{}", created.text());
        keys.push(
            created.json()["key"]
                .as_str()
                .expect("a created key has a key")
                .to_owned(),
        );
    }
    let body = json!({"function": "doc.seen = true"}).to_string();
    let path = "/indexes/books/documents/edit";
    let refused = server.raw(&json_request("POST", path, Some(&keys[0]), &body));
    assert_eq!(refused.status, 403, "a documents.* key is refused");
    assert_eq!(refused.json()["code"], "invalid_api_key");
    let accepted = server.raw(&json_request("POST", path, Some(&keys[1]), &body));
    assert_eq!(accepted.status, 202, "{}", accepted.text());
}

#[test]
fn task_documents_are_served_while_the_task_waits_and_gone_once_it_finished() {
    let server = server_with_books();
    let refused = server.send("GET", "/tasks/0/documents", None);
    assert_eq!(
        refused.text(),
        r#"{"message":"Getting the documents of an enqueued task requires enabling the `get task documents route` experimental feature. See https://github.com/orgs/meilisearch/discussions/808","code":"feature_not_enabled","type":"invalid_request","link":"https://docs.meilisearch.com/errors#feature_not_enabled"}"#
    );
    enable(&server, json!({"getTaskDocumentsRoute": true}));
    assert_eq!(
        error(&server.send("GET", "/tasks/x/documents", None)),
        (
            400,
            "invalid_task_uids".into(),
            "Task uid `x` is invalid. It should only contain numeric characters.".into()
        )
    );
    assert_eq!(
        error(&server.send("GET", "/tasks/99/documents", None)),
        (404, "task_not_found".into(), "Task `99` not found.".into())
    );

    // A slow edition of another index keeps the scheduler busy while additions queue
    // behind it.
    let filler: Vec<Value> = (0..SLOW_DOCUMENTS).map(|id| json!({"id": id})).collect();
    let uid = enqueue(
        &server,
        "POST",
        "/indexes/slow/documents",
        &Value::from(filler),
    );
    succeed(&server, uid);
    let slow = enqueue(
        &server,
        "POST",
        "/indexes/slow/documents/edit",
        &json!({"function": SLOW_SCRIPT}),
    );
    let json_array = server.raw(&json_request(
        "POST",
        "/indexes/books/documents",
        Some(MASTER_KEY),
        r#"[{"id": 5, "a": [1, 2,  3], "b": {"c" : 1}} , {"id":6}]"#,
    ));
    let ndjson_payload = "{\"id\": 7, \"a\": [1, 2]}\n\n{\"id\":8}\n";
    let ndjson = server.raw(&format!(
        "POST /indexes/books/documents HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {MASTER_KEY}\r\nContent-Type: application/x-ndjson\r\nContent-Length: {}\r\n\r\n{ndjson_payload}",
        ndjson_payload.len()
    ));
    let csv_payload = "id,name:string,n:number,b:boolean\n9,foo,3,true\n10,,,\n";
    let csv = server.raw(&format!(
        "POST /indexes/books/documents HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {MASTER_KEY}\r\nContent-Type: text/csv\r\nContent-Length: {}\r\n\r\n{csv_payload}",
        csv_payload.len()
    ));
    let uid_of = |response: &HttpResponse| {
        assert_eq!(response.status, 202, "{}", response.text());
        response.json()["taskUid"].as_u64().expect("a task uid")
    };
    let expected = [
        (
            uid_of(&json_array),
            r#"{"id":5,"a":[1, 2,  3],"b":{"c" : 1}}{"id":6}"#.to_owned(),
        ),
        (uid_of(&ndjson), ndjson_payload.to_owned()),
        (
            uid_of(&csv),
            r#"{"id":"9","name":"foo","n":3,"b":true}{"id":"10","name":null,"n":null,"b":null}"#
                .to_owned(),
        ),
    ];
    let current = server.send("GET", &format!("/tasks/{slow}"), None).json();
    assert!(
        matches!(current["status"].as_str(), Some("enqueued" | "processing")),
        "the slow edition is still running: {current}"
    );
    for (uid, ndjson) in &expected {
        let served = server.send("GET", &format!("/tasks/{uid}/documents"), None);
        assert_eq!(served.status, 200, "{}", served.text());
        assert_eq!(served.header("content-type"), Some("application/x-ndjson"));
        assert_eq!(&served.text(), ndjson, "task {uid}");
    }
    let file_not_found = |uid: u64| {
        (
            404,
            "task_file_not_found".to_owned(),
            format!(
                "Task `{uid}` does not contain any documents. Only `documentAdditionOrUpdate` tasks with the statuses `enqueued` or `processing` contain documents"
            ),
        )
    };
    // An edition has no documents, running or not.
    assert_eq!(
        error(&server.send("GET", &format!("/tasks/{slow}/documents"), None)),
        file_not_found(slow)
    );
    succeed(&server, slow);
    for (uid, _) in &expected {
        succeed(&server, *uid);
        assert_eq!(
            error(&server.send("GET", &format!("/tasks/{uid}/documents"), None)),
            file_not_found(*uid)
        );
    }
}

/// Waits until the finished tasks' payload files are removed: the scheduler removes them
/// after the task is marked done, and their bytes count in `databaseSize`.
fn wait_for_payloads_removed(server: &Server) {
    let directory = server.data_directory.join("update_files");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let left = std::fs::read_dir(&directory)
            .map(|entries| entries.count())
            .unwrap_or(0);
        if left == 0 {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{left} payload files are still in {}",
            directory.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn used_database_size_stays_within_the_database_size_and_shrinks_after_deletions() {
    let server = Server::start_with(options());
    let many: Vec<Value> = (0..3000)
        .map(|id| json!({"id": id, "text": format!("document number {id} with some words to index {}", id * 7919)}))
        .collect();
    let uid = enqueue(
        &server,
        "POST",
        "/indexes/many/documents",
        &Value::from(many),
    );
    succeed(&server, uid);
    wait_for_payloads_removed(&server);
    let before = server.send("GET", "/stats", None).json();
    let size = |stats: &Value, field: &str| stats[field].as_u64().expect("sizes are integers");
    assert!(size(&before, "usedDatabaseSize") > 0, "{before}");
    assert!(
        size(&before, "usedDatabaseSize") <= size(&before, "databaseSize"),
        "{before}"
    );
    let uid = enqueue(
        &server,
        "POST",
        "/indexes/many/documents/delete-batch",
        &Value::from((0..2900).collect::<Vec<u64>>()),
    );
    succeed(&server, uid);
    let after = server.send("GET", "/stats", None).json();
    assert!(
        size(&after, "usedDatabaseSize") <= size(&after, "databaseSize"),
        "{after}"
    );
    assert!(
        size(&after, "usedDatabaseSize") < size(&before, "usedDatabaseSize"),
        "deleting documents frees pages: before {before}, after {after}"
    );
    assert!(
        size(&after, "databaseSize") >= size(&before, "databaseSize"),
        "files do not shrink: before {before}, after {after}"
    );
}

#[test]
fn an_edition_interrupted_by_a_crash_runs_again_and_edits_each_document_once() {
    let scratch = tempfile::tempdir().expect("tempdir succeeds");
    let directory = scratch.path().join("data.ms");
    let server = Server::start_on(&directory, &options());
    enable(&server, json!({"editDocumentsByFunction": true}));
    let documents_count = 20;
    let counters: Vec<Value> = (0..documents_count)
        .map(|id| json!({"id": id, "edits": 0}))
        .collect();
    let uid = enqueue(
        &server,
        "POST",
        "/indexes/books/documents",
        &Value::from(counters),
    );
    succeed(&server, uid);
    let function = format!("{SLOW_SCRIPT} doc.edits += 1;");
    let edition = enqueue(
        &server,
        "POST",
        "/indexes/books/documents/edit",
        &json!({"function": function}),
    );
    // Kill the server while the edition runs.
    let started = Instant::now();
    loop {
        let task = server
            .send("GET", &format!("/tasks/{edition}"), None)
            .json();
        if task["status"] == "processing" {
            break;
        }
        assert_eq!(
            task["status"], "enqueued",
            "the edition is still running: {task}"
        );
        assert!(
            started.elapsed() < TASK_TIMEOUT,
            "the edition never started"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    server.kill();
    let server = Server::start_on(&directory, &options());
    succeed(&server, edition);
    for document in documents(&server, "books") {
        assert_eq!(document["edits"], 1, "edited exactly once: {document}");
        assert_eq!(document["slow"], true, "{document}");
    }
}

#[test]
fn a_canceled_edition_changes_nothing() {
    let server = server_with_books();
    let filler: Vec<Value> = (10..10 + CANCELED_DOCUMENTS)
        .map(|id| json!({"id": id, "title": "filler", "stock": 1}))
        .collect();
    let uid = enqueue(
        &server,
        "POST",
        "/indexes/books/documents",
        &Value::from(filler),
    );
    succeed(&server, uid);
    let before = documents(&server, "books");
    let edition = enqueue(
        &server,
        "POST",
        "/indexes/books/documents/edit",
        &json!({"function": SLOW_SCRIPT}),
    );
    let cancel = server.send("POST", &format!("/tasks/cancel?uids={edition}"), None);
    assert_eq!(cancel.status, 200, "{}", cancel.text());
    let task = wait(&server, edition);
    assert_eq!(task["status"], "canceled", "{task}");
    assert_eq!(documents(&server, "books"), before);
}
