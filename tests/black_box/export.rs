//! `POST /export` between coresearch instances on loopback (reference §4, §5): several
//! indexes chosen by patterns, with filters and `overrideSettings`, arrive on the target
//! with the same documents (every field) and settings; `_vectors` of a `userProvided`
//! embedder arrive; a private target is refused without `--experimental-allowed-ip-networks`;
//! a target killed mid-export fails the task; a cancelation cancels it; a source killed
//! mid-export runs it again after its restart and only then reports success; every enqueue
//! error with Meilisearch's code and message; the task's details before and after.

#![allow(clippy::unwrap_used, clippy::too_many_lines)]

use crate::common;

use std::time::{Duration, Instant};

use common::{MASTER_KEY, Options, Server};
use serde_json::{Value, json};

/// Lets every test server call loopback addresses.
const ALLOW_EVERY_ADDRESS: [&str; 2] = ["--experimental-allowed-ip-networks", "any"];

/// How long a test waits for a target to have processed what it received.
const TARGET_WAIT: Duration = Duration::from_secs(120);

/// Documents of the index the interruption scenarios export.
const LARGE_INDEX_DOCUMENTS: usize = 12_000;

/// The payload size of the interruption scenarios: a few documents per payload, so the
/// export lasts long enough to be interrupted in its middle.
const SMALL_PAYLOAD: &str = "1 KB";

fn options(extra_arguments: &[&str]) -> Options {
    Options {
        master_key: Some(MASTER_KEY.to_string()),
        extra_arguments: extra_arguments.iter().map(ToString::to_string).collect(),
        ..Options::default()
    }
}

fn start(extra_arguments: &[&str]) -> Server {
    Server::start_with(options(extra_arguments))
}

/// Sends a write answered 202 and waits for its task to succeed.
fn succeeded(server: &Server, method: &str, path: &str, body: &Value) {
    let response = server.send(method, path, Some(body));
    assert_eq!(response.status, 202, "{method} {path}: {}", response.text());
    let task = server.wait_task(&response.json()["taskUid"]);
    assert_eq!(task["status"], "succeeded", "{method} {path}: {task}");
}

/// Registers an export (answered 200 with the summarized task); its task uid.
fn export(server: &Server, body: &Value) -> u64 {
    let response = server.send("POST", "/export", Some(body));
    assert_eq!(response.status, 200, "{}", response.text());
    let summary = response.json();
    assert_eq!(summary["indexUid"], Value::Null, "{summary}");
    assert_eq!(summary["status"], "enqueued", "{summary}");
    assert_eq!(summary["type"], "export", "{summary}");
    assert!(summary["enqueuedAt"].is_string(), "{summary}");
    summary["taskUid"].as_u64().unwrap()
}

/// Waits until `server` has no enqueued or processing task, then checks none failed.
fn settle(server: &Server) {
    let started = Instant::now();
    loop {
        let pending = server
            .send("GET", "/tasks?statuses=enqueued,processing&limit=1", None)
            .json();
        if pending["results"].as_array().unwrap().is_empty() {
            break;
        }
        assert!(
            started.elapsed() < TARGET_WAIT,
            "tasks still pending: {pending}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let failures = server.send("GET", "/tasks?statuses=failed", None).json();
    assert_eq!(
        failures["results"],
        json!([]),
        "no task failed on {}",
        server.url()
    );
}

/// `documents` in one order whatever the order they were listed in.
fn sorted(mut documents: Vec<Value>) -> Vec<Value> {
    documents.sort_by_key(Value::to_string);
    documents
}

/// Every document of `index` (with `_vectors` when `vectors`), [`sorted`].
fn documents(server: &Server, index: &str, vectors: bool) -> Vec<Value> {
    let path = format!("/indexes/{index}/documents?limit=100000&retrieveVectors={vectors}");
    let response = server.send("GET", &path, None);
    assert_eq!(response.status, 200, "{index}: {}", response.text());
    sorted(response.json()["results"].as_array().unwrap().clone())
}

fn settings(server: &Server, index: &str) -> Value {
    let response = server.send("GET", &format!("/indexes/{index}/settings"), None);
    assert_eq!(response.status, 200, "{index}: {}", response.text());
    response.json()
}

fn index_status(server: &Server, index: &str) -> u16 {
    server
        .send("GET", &format!("/indexes/{index}"), None)
        .status
}

fn movies() -> Value {
    json!([
        {"id": 1, "title": "Carol", "genre": "drama", "year": 2015, "rating": 7.2,
         "cast": ["Cate Blanchett", "Rooney Mara"], "details": {"country": "US", "minutes": 118}},
        {"id": 2, "title": "Wonder Woman", "genre": "action", "year": 2017, "rating": 7.4,
         "cast": ["Gal Gadot"], "details": {"country": "US", "minutes": 141}},
        {"id": 3, "title": "Amélie", "genre": "drama", "year": 2001, "rating": 8.3,
         "cast": [], "details": null, "tagline": "Elle va changer votre vie ✨"},
        {"id": 4, "title": "Mad Max", "genre": "action", "year": 1979},
        {"id": 5, "title": "Le Fabuleux", "genre": "drama", "year": null, "extra": {"a": [1, {"b": true}]}},
    ])
}

fn movie_settings() -> Value {
    json!({
        "filterableAttributes": ["genre", "year"],
        "sortableAttributes": ["year"],
        "searchableAttributes": ["title", "cast"],
        "displayedAttributes": ["*"],
        "rankingRules": ["words", "typo", "year:desc", "proximity", "attribute", "sort", "exactness"],
        "stopWords": ["the", "le"],
        "synonyms": {"film": ["movie"]},
        "distinctAttribute": "title",
        "typoTolerance": {"minWordSizeForTypos": {"oneTypo": 4, "twoTypos": 9}},
        "pagination": {"maxTotalHits": 500},
        "faceting": {"maxValuesPerFacet": 50},
    })
}

/// `movies` (filtered) and `movies-archive` (the `movies*` pattern wins over its own), a new
/// `books` and an existing `comics` whose settings change only where asked, an unmatched
/// `private`: documents and settings compared on the target, the details before and after.
#[test]
fn patterns_filters_and_override_settings_arrive_as_asked() {
    let source = start(&ALLOW_EVERY_ADDRESS);
    let target = start(&[]);
    for index in ["movies", "movies-archive"] {
        succeeded(
            &source,
            "PATCH",
            &format!("/indexes/{index}/settings"),
            &movie_settings(),
        );
        succeeded(
            &source,
            "POST",
            &format!("/indexes/{index}/documents"),
            &movies(),
        );
    }
    let books = json!([
        {"isbn": "978-0", "title": "Dune", "pages": 412},
        {"isbn": "978-1", "title": "Solaris", "pages": 204},
    ]);
    succeeded(
        &source,
        "POST",
        "/indexes",
        &json!({"uid": "books", "primaryKey": "isbn"}),
    );
    succeeded(&source, "POST", "/indexes/books/documents", &books);
    succeeded(
        &source,
        "PATCH",
        "/indexes/books/settings",
        &json!({"sortableAttributes": ["pages"], "stopWords": ["a"]}),
    );
    for index in ["comics", "private"] {
        succeeded(
            &source,
            "POST",
            &format!("/indexes/{index}/documents"),
            &json!([{"id": 10, "name": index}]),
        );
    }
    succeeded(
        &source,
        "PATCH",
        "/indexes/comics/settings",
        &json!({"filterableAttributes": ["name"]}),
    );
    // The target already holds `comics` (settings kept: no override) and `books` (settings
    // replaced: override), each with a document of its own.
    succeeded(
        &target,
        "PATCH",
        "/indexes/comics/settings",
        &json!({"searchableAttributes": ["name"]}),
    );
    succeeded(
        &target,
        "POST",
        "/indexes/comics/documents",
        &json!([{"id": 99, "name": "target only"}]),
    );
    succeeded(
        &target,
        "POST",
        "/indexes",
        &json!({"uid": "books", "primaryKey": "isbn"}),
    );
    succeeded(
        &target,
        "PATCH",
        "/indexes/books/settings",
        &json!({"searchableAttributes": ["title"], "rankingRules": ["words"]}),
    );
    let comics_settings_before = settings(&target, "comics");

    let body = json!({
        "url": target.url(),
        "apiKey": MASTER_KEY,
        "payloadSize": "1 KB",
        "indexes": {
            "movies*": {"filter": "genre = drama"},
            "movies-archive": {"filter": "genre = action"},
            "books": {"overrideSettings": true},
            "comics": {"filter": null, "overrideSettings": false},
        },
    });
    // A large addition to `private` (which no pattern selects) keeps the scheduler busy, so
    // the export is still enqueued when its details are read.
    let busy = source.send(
        "POST",
        "/indexes/private/documents",
        Some(&large_documents()),
    );
    assert_eq!(busy.status, 202, "{}", busy.text());
    let uid = export(&source, &body);
    let enqueued = source.send("GET", &format!("/tasks/{uid}"), None).json();
    assert_eq!(enqueued["status"], "enqueued", "{enqueued}");
    let pattern_details = json!({
        "url": target.url(),
        "apiKey": "masteXXXXXX...",
        "payloadSize": "1 KB",
        "indexes": {
            "books": {"filter": null, "overrideSettings": true},
            "comics": {"filter": null, "overrideSettings": false},
            "movies*": {"filter": "genre = drama", "overrideSettings": false},
            "movies-archive": {"filter": "genre = action", "overrideSettings": false},
        },
    });
    assert_eq!(enqueued["details"], pattern_details, "{enqueued}");
    let task = source.wait_task(uid);
    assert_eq!(task["status"], "succeeded", "{task}");
    assert_eq!(task["error"], Value::Null);
    assert_eq!(
        task["details"],
        json!({
            "url": target.url(),
            "apiKey": "masteXXXXXX...",
            "payloadSize": "1 KB",
            "indexes": {
                "books": {"filter": null, "overrideSettings": true, "matched_documents": 2},
                "comics": {"filter": null, "overrideSettings": false, "matched_documents": 1},
                "movies": {"filter": "genre = drama", "overrideSettings": false, "matched_documents": 3},
                "movies-archive": {"filter": "genre = drama", "overrideSettings": false, "matched_documents": 3},
            },
        }),
        "{task}"
    );

    settle(&target);
    let drama = sorted(
        movies()
            .as_array()
            .unwrap()
            .iter()
            .filter(|movie| movie["genre"] == "drama")
            .cloned()
            .collect(),
    );
    for index in ["movies", "movies-archive"] {
        assert_eq!(documents(&target, index, false), drama, "{index}");
        assert_eq!(
            settings(&target, index),
            settings(&source, index),
            "{index}"
        );
        let on_target = target
            .send("GET", &format!("/indexes/{index}"), None)
            .json();
        assert_eq!(on_target["primaryKey"], "id", "{on_target}");
    }
    assert_eq!(
        documents(&target, "books", false),
        sorted(books.as_array().unwrap().clone())
    );
    assert_eq!(settings(&target, "books"), settings(&source, "books"));
    assert_eq!(
        documents(&target, "comics", false),
        sorted(vec![
            json!({"id": 10, "name": "comics"}),
            json!({"id": 99, "name": "target only"})
        ])
    );
    assert_eq!(settings(&target, "comics"), comics_settings_before);
    assert_eq!(
        index_status(&target, "private"),
        404,
        "no pattern matches it"
    );
}

/// The `_vectors` of a `userProvided` embedder arrive with the embedder's settings.
#[test]
fn user_provided_vectors_arrive_with_their_embedder() {
    let source = start(&ALLOW_EVERY_ADDRESS);
    let target = start(&[]);
    succeeded(
        &source,
        "PATCH",
        "/indexes/points/settings",
        &json!({"embedders": {"e": {"source": "userProvided", "dimensions": 3}}}),
    );
    succeeded(
        &source,
        "POST",
        "/indexes/points/documents",
        &json!([
            {"id": 1, "t": "a", "_vectors": {"e": [1, 2, 3]}},
            {"id": 2, "t": "b", "_vectors": {"e": [[1, 0, 0], [0, 1, 0.5]]}},
            {"id": 3, "t": "c", "_vectors": {"e": {"embeddings": [0, 0, 1], "regenerate": false}}},
            {"id": 4, "t": "d", "_vectors": {"e": null}},
            {"id": 5, "_vectors": {"e": null, "other": [1, 2]}},
        ]),
    );
    let uid = export(&source, &json!({"url": target.url(), "apiKey": MASTER_KEY}));
    let task = source.wait_task(uid);
    assert_eq!(task["status"], "succeeded", "{task}");
    assert_eq!(
        task["details"]["indexes"],
        json!({"points": {"filter": null, "overrideSettings": false, "matched_documents": 5}})
    );
    settle(&target);
    let exported = documents(&target, "points", true);
    assert_eq!(exported, documents(&source, "points", true));
    let second = exported
        .iter()
        .find(|document| document["id"] == 2)
        .unwrap();
    assert_eq!(
        second["_vectors"]["e"]["embeddings"],
        json!([[1.0, 0.0, 0.0], [0.0, 1.0, 0.5]])
    );
    assert_eq!(settings(&target, "points"), settings(&source, "points"));
    // The vectors are searchable on the target.
    let hits = target
        .send(
            "POST",
            "/indexes/points/search",
            Some(&json!({"vector": [0, 0, 1], "hybrid": {"embedder": "e", "semanticRatio": 1.0}, "limit": 1})),
        )
        .json();
    assert_eq!(hits["hits"][0]["id"], 3, "{hits}");
}

/// Without `--experimental-allowed-ip-networks` a loopback target is refused: the task fails
/// and the target receives nothing; a CIDR covering loopback lets the same export through.
#[test]
fn a_private_target_is_refused_unless_its_network_is_allowed() {
    let target = start(&[]);
    let body = json!({"url": target.url(), "apiKey": MASTER_KEY});
    let refusing = start(&[]);
    succeeded(&refusing, "POST", "/indexes/movies/documents", &movies());
    let task = refusing.wait_task(export(&refusing, &body));
    assert_eq!(task["status"], "failed", "{task}");
    assert_eq!(task["error"]["code"], "internal", "{task}");
    assert_eq!(task["error"]["type"], "internal", "{task}");
    let message = task["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("Failed to export documents to remote server: rejected IP `127.0.0.1`"),
        "{message}"
    );
    assert_eq!(
        task["details"]["indexes"],
        json!({"*": {"filter": null, "overrideSettings": false}}),
        "a failed export keeps its patterns: {task}"
    );
    assert_eq!(index_status(&target, "movies"), 404);

    let allowing = start(&["--experimental-allowed-ip-networks", "127.0.0.0/8"]);
    succeeded(&allowing, "POST", "/indexes/movies/documents", &movies());
    let task = allowing.wait_task(export(&allowing, &body));
    assert_eq!(task["status"], "succeeded", "{task}");
    settle(&target);
    assert_eq!(
        documents(&target, "movies", false),
        documents(&allowing, "movies", false)
    );
}

/// Failures while the task runs: a filter of the wrong type or syntax, an attribute that is
/// not filterable, a wrong API key, an unreachable target — each fails the task with code
/// `internal` and Meilisearch's message.
#[test]
fn failures_while_running_fail_the_task_as_internal() {
    let source = start(&ALLOW_EVERY_ADDRESS);
    let target = start(&[]);
    succeeded(
        &source,
        "PATCH",
        "/indexes/movies/settings",
        &json!({"filterableAttributes": ["genre"]}),
    );
    succeeded(&source, "POST", "/indexes/movies/documents", &movies());
    let cases = [
        (
            json!({"url": target.url(), "apiKey": MASTER_KEY, "indexes": {"movies": {"filter": 5}}}),
            "Index `movies`: Invalid syntax for the filter parameter: `expected String, Array, found: 5`.".to_string(),
        ),
        (
            json!({"url": target.url(), "apiKey": MASTER_KEY, "indexes": {"movies": {"filter": "year > 2000"}}}),
            "Index `movies`: Attribute `year` is not filterable. Available filterable attribute patterns are: `genre`.\n1:5 year > 2000".to_string(),
        ),
        (
            json!({"url": target.url(), "apiKey": "not-the-key"}),
            "Failed to export documents to remote server invalid_api_key (auth): The provided API key is invalid. <https://docs.meilisearch.com/errors#invalid_api_key>".to_string(),
        ),
        (
            json!({"url": target.url()}),
            "Failed to export documents to remote server missing_authorization_header (auth): The Authorization header is missing. It must use the bearer authorization method. <https://docs.meilisearch.com/errors#missing_authorization_header>".to_string(),
        ),
    ];
    for (body, message) in cases {
        let task = source.wait_task(export(&source, &body));
        assert_eq!(task["status"], "failed", "{body}: {task}");
        assert_eq!(
            task["error"],
            json!({
                "message": message,
                "code": "internal",
                "type": "internal",
                "link": "https://docs.meilisearch.com/errors#internal",
            }),
            "{body}"
        );
    }
    assert_eq!(index_status(&target, "movies"), 404, "nothing was created");
    // A target that is not there: refused connections, retried, then the task fails.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = closed.local_addr().unwrap();
    drop(closed);
    let task = source.wait_task(export(
        &source,
        &json!({"url": format!("http://{address}")}),
    ));
    assert_eq!(task["status"], "failed", "{task}");
    let message = task["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!(
            "Failed to export documents to remote server: could not connect to `{address}`"
        )),
        "{message}"
    );
    // An empty URL (the default) fails when the task runs.
    let task = source.wait_task(export(&source, &json!({})));
    assert_eq!(task["status"], "failed", "{task}");
    assert_eq!(task["error"]["code"], "internal", "{task}");
}

fn assert_enqueue_error(server: &Server, body: &str, code: &str, message: &str) {
    let response = server.raw(&common::json_request(
        "POST",
        "/export",
        Some(MASTER_KEY),
        body,
    ));
    assert_eq!(response.status, 400, "{body}: {}", response.text());
    assert_eq!(
        response.json(),
        json!({
            "message": message,
            "code": code,
            "type": "invalid_request",
            "link": format!("https://docs.meilisearch.com/errors#{code}"),
        }),
        "{body}"
    );
}

/// Every field's enqueue error, with Meilisearch's code and message; nothing is registered.
#[test]
fn every_enqueue_error_has_meilisearch_code_and_message() {
    let server = start(&[]);
    let cases: [(&str, &str, &str); 14] = [
        (
            r#"{"url": 5}"#,
            "invalid_export_url",
            "Invalid value type at `.url`: expected a string, but found a positive integer: `5`",
        ),
        (
            r#"{"url": null}"#,
            "invalid_export_url",
            "Invalid value type at `.url`: expected a string, but found null",
        ),
        (
            r#"{"apiKey": 5}"#,
            "invalid_export_api_key",
            "Invalid value type at `.apiKey`: expected a string, but found a positive integer: `5`",
        ),
        (
            r#"{"apiKey": ["key"]}"#,
            "invalid_export_api_key",
            "Invalid value type at `.apiKey`: expected a string, but found an array: `[\"key\"]`",
        ),
        (
            r#"{"payloadSize": -1}"#,
            "invalid_export_payload_size",
            "Invalid value type at `.payloadSize`: expected a positive integer or a string, but found a negative integer: `-1`",
        ),
        (
            r#"{"payloadSize": 1.5}"#,
            "invalid_export_payload_size",
            "Invalid value type at `.payloadSize`: expected a positive integer or a string, but found a number: `1.5`",
        ),
        (
            r#"{"payloadSize": true}"#,
            "invalid_export_payload_size",
            "Invalid value type at `.payloadSize`: expected a positive integer or a string, but found a boolean: `true`",
        ),
        (
            r#"{"payloadSize": "abc"}"#,
            "invalid_export_payload_size",
            "Invalid value at `.payloadSize`: the character 'a' is not a number",
        ),
        (
            r#"{"indexes": {"bad pattern": {}}}"#,
            "bad_request",
            "Invalid value at `.indexes`: the key \"bad pattern\" could not be deserialized into the key type `meilisearch_types::index_uid_pattern::IndexUidPattern`",
        ),
        (
            r#"{"indexes": {"mov ies*": {}}}"#,
            "bad_request",
            "Invalid value at `.indexes`: the key \"mov ies*\" could not be deserialized into the key type `meilisearch_types::index_uid_pattern::IndexUidPattern`",
        ),
        (
            r#"{"indexes": ["movies"]}"#,
            "bad_request",
            "Invalid value type at `.indexes`: expected an object, but found an array: `[\"movies\"]`",
        ),
        (
            r#"{"indexes": {"movies": {"overrideSettings": "yes"}}}"#,
            "invalid_export_index_override_settings",
            "Invalid value type at `.indexes.movies.overrideSettings`: expected a boolean, but found a string: `\"yes\"`",
        ),
        (
            r#"{"indexes": {"movies": {"filters": "a = 1"}}}"#,
            "bad_request",
            "Unknown field `filters` inside `.indexes.movies`: did you mean `filter`? expected one of `filter`, `overrideSettings`",
        ),
        (
            r#"{"url": "http://localhost:7700", "doggo": 1}"#,
            "bad_request",
            "Unknown field `doggo`: expected one of `url`, `apiKey`, `payloadSize`, `indexes`",
        ),
    ];
    for (body, code, message) in cases {
        assert_enqueue_error(&server, body, code, message);
    }
    let tasks = server.send("GET", "/tasks", None).json();
    assert_eq!(tasks["total"], 0, "no export was registered: {tasks}");

    // What is accepted: sizes with units (a lower-case `b` counts bits), a filter of any
    // JSON type (checked when the task runs), an empty pattern map.
    for (payload_size, shown) in [
        (json!("24MiB"), "24 MiB"),
        (json!("24mib"), "3 MiB"),
        (json!("100 MB"), "95.367431640625 MiB"),
        (json!(1000), "1 KB"),
        (json!(100_000_000), "95.367431640625 MiB"),
    ] {
        let uid = export(
            &server,
            &json!({"url": "http://127.0.0.1:1", "payloadSize": payload_size, "indexes": {}}),
        );
        let task = server.send("GET", &format!("/tasks/{uid}"), None).json();
        assert_eq!(task["details"]["payloadSize"], shown, "{task}");
    }
    // With no index to export nothing is called: the export succeeds whatever its URL, and
    // its details name no index.
    let task = server.wait_task(export(&server, &json!({"url": "x"})));
    assert_eq!(task["status"], "succeeded", "{task}");
    assert_eq!(
        task["details"],
        json!({"url": "x", "indexes": {}}),
        "{task}"
    );
    // A filter that is no filter fails the task once it runs; the details keep it as given.
    succeeded(&server, "POST", "/indexes/movies/documents", &movies());
    let body =
        json!({"url": "x", "apiKey": "short", "indexes": {"*": {"filter": {"not": "a filter"}}}});
    let task = server.wait_task(export(&server, &body));
    assert_eq!(task["status"], "failed", "{task}");
    assert_eq!(
        task["error"]["message"],
        "Index `movies`: Invalid syntax for the filter parameter: `expected String, Array, found: {\"not\":\"a filter\"}`.",
        "{task}"
    );
    assert_eq!(
        task["details"],
        json!({
            "url": "x",
            "apiKey": "XXX...",
            "indexes": {"*": {"filter": {"not": "a filter"}, "overrideSettings": false}},
        }),
        "no payloadSize unless given: {task}"
    );
}

/// [`LARGE_INDEX_DOCUMENTS`] small documents.
fn large_documents() -> Value {
    (0..LARGE_INDEX_DOCUMENTS)
        .map(|id| json!({"id": id, "title": format!("document number {id}"), "group": id % 7}))
        .collect()
}

/// An index of [`LARGE_INDEX_DOCUMENTS`] documents on `server`.
fn add_large_index(server: &Server) {
    succeeded(
        server,
        "POST",
        "/indexes/large/documents",
        &large_documents(),
    );
}

/// Waits until `target` received at least one document payload of an export.
fn wait_for_first_payload(target: &Server) {
    let started = Instant::now();
    loop {
        let received = target
            .send("GET", "/tasks?types=documentAdditionOrUpdate&limit=1", None)
            .json();
        if received["total"].as_u64().unwrap_or(0) > 0 {
            return;
        }
        assert!(
            started.elapsed() < TARGET_WAIT,
            "no payload arrived: {received}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The documents `target` received in document payloads, summed over its tasks.
fn received_documents(target: &Server) -> u64 {
    let mut total = 0;
    let mut from: Option<u64> = None;
    loop {
        let page_start = from.map(|uid| format!("&from={uid}")).unwrap_or_default();
        let path = format!("/tasks?types=documentAdditionOrUpdate&limit=1000{page_start}");
        let page = target.send("GET", &path, None).json();
        for task in page["results"].as_array().unwrap() {
            total += task["details"]["receivedDocuments"].as_u64().unwrap();
        }
        match page["next"].as_u64() {
            Some(next) => from = Some(next),
            None => return total,
        }
    }
}

/// A large export interrupted three ways: canceled (the task is canceled), its target killed
/// (the task fails, never succeeds), and its source killed (the restarted source runs the
/// export again and reports success only once every document was sent).
#[test]
fn an_interrupted_export_never_reports_success_for_a_partial_export() {
    let scratch = tempfile::tempdir().unwrap();
    let source_directory = scratch.path().join("source.ms");
    let source_options = options(&ALLOW_EVERY_ADDRESS);
    let source = Server::start_on(&source_directory, &source_options);
    add_large_index(&source);
    let body = |target: &Server| json!({"url": target.url(), "apiKey": MASTER_KEY, "payloadSize": SMALL_PAYLOAD});

    // Canceled while it sends.
    let target = start(&[]);
    let uid = export(&source, &body(&target));
    wait_for_first_payload(&target);
    let cancel = source.send("POST", &format!("/tasks/cancel?uids={uid}"), None);
    assert_eq!(cancel.status, 200, "{}", cancel.text());
    let task = source.wait_task(uid);
    assert_eq!(task["status"], "canceled", "{task}");
    assert_eq!(task["canceledBy"], cancel.json()["taskUid"], "{task}");
    drop(target);

    // Its target killed while it sends.
    let target = start(&[]);
    let uid = export(&source, &body(&target));
    wait_for_first_payload(&target);
    target.kill();
    let task = source.wait_task(uid);
    assert_eq!(task["status"], "failed", "{task}");
    assert_eq!(task["error"]["code"], "internal", "{task}");
    let message = task["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("Failed to export documents to remote server: "),
        "{message}"
    );
    assert!(
        task["details"]["indexes"]["*"].is_object(),
        "no matched documents reported: {task}"
    );

    // Its source killed while it sends, then restarted.
    let target = start(&[]);
    let uid = export(&source, &body(&target));
    wait_for_first_payload(&target);
    source.kill();
    let source = Server::start_on(&source_directory, &source_options);
    let task = source.wait_task(uid);
    assert_eq!(task["status"], "succeeded", "{task}");
    assert_eq!(
        task["details"]["indexes"],
        json!({"large": {"filter": null, "overrideSettings": false, "matched_documents": LARGE_INDEX_DOCUMENTS}}),
        "{task}"
    );
    settle(&target);
    assert_eq!(
        documents(&target, "large", false),
        documents(&source, "large", false)
    );
    // The first run sent part of the documents before the crash, the second sent them all.
    let received = received_documents(&target);
    assert!(
        received > LARGE_INDEX_DOCUMENTS as u64,
        "the export was interrupted and ran again: {received} documents received"
    );
}
