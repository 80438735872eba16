//! The durable write path through the official `meilisearch-sdk` client and raw HTTP:
//! indexes, documents in every payload format, settings, tasks and batches, on two cores
//! with two shards per index, and after a crash.

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]

use crate::common;

use common::{MASTER_KEY, Options, Server, json_request, request};
use meilisearch_sdk::client::Client;
use meilisearch_sdk::documents::DocumentDeletionQuery;
use meilisearch_sdk::tasks::{Task, TaskType};
use serde_json::{Value, json};

fn options() -> Options {
    Options {
        master_key: Some(MASTER_KEY.to_string()),
        ..Options::default()
    }
}

fn movies() -> Vec<Value> {
    vec![
        json!({"id": 1, "title": "Carol", "genre": "drama", "year": 2015, "info": {"stars": 4}}),
        json!({"id": 2, "title": "Wonder Woman", "genre": "action", "year": 2017}),
        json!({"id": 3, "title": "Life of Pi", "genre": "drama", "year": 2012}),
        json!({"id": 4, "title": "Mad Max", "genre": "action", "year": 2015}),
        json!({"id": "five", "title": "Moana", "genre": ["animation", "family"], "year": 2016}),
    ]
}

/// Waits for the task and asserts it succeeded.
async fn succeed(client: &Client, task: meilisearch_sdk::task_info::TaskInfo) -> Task {
    let task = task
        .wait_for_completion(client, None, None)
        .await
        .expect("wait_for_completion succeeds");
    assert!(task.is_success(), "task failed: {task:?}");
    task
}

fn ids(documents: &[Value]) -> Vec<String> {
    let mut ids: Vec<String> = documents
        .iter()
        .map(|document| match &document["id"] {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        })
        .collect();
    ids.sort();
    ids
}

#[tokio::test]
async fn documents_added_through_the_sdk_are_read_back_from_every_shard() {
    let server = Server::start_with(options());
    let client = Client::new(server.url(), Some(MASTER_KEY)).expect("new succeeds");
    let index = client.index("movies");
    succeed(
        &client,
        index
            .add_documents(&movies(), Some("id"))
            .await
            .expect("add_documents succeeds"),
    )
    .await;

    let listed = index
        .get_documents::<Value>()
        .await
        .expect("get_documents succeeds");
    assert_eq!(listed.total, 5);
    assert_eq!(
        listed.results,
        movies(),
        "listed in the order they were added, as one unsharded index"
    );
    // Every document is reachable by id, whichever shard and core holds it.
    for document in movies() {
        let id = match &document["id"] {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        let fetched: Value = index
            .get_document(&id)
            .await
            .expect("get_document succeeds");
        assert_eq!(fetched, document, "document {id} comes back as sent");
    }
    let fetched = client
        .get_index("movies")
        .await
        .expect("get_index succeeds");
    assert_eq!(fetched.primary_key.as_deref(), Some("id"));
    let stats = index.get_stats().await.expect("get_stats succeeds");
    assert_eq!(stats.number_of_documents, 5);
    assert_eq!(stats.field_distribution["title"], 5);
    assert_eq!(stats.field_distribution["info"], 1);
}

#[tokio::test]
async fn updates_merge_fields_and_deletions_count_what_they_removed() {
    let server = Server::start_with(options());
    let client = Client::new(server.url(), Some(MASTER_KEY)).expect("new succeeds");
    let index = client.index("movies");
    succeed(
        &client,
        index
            .add_documents(&movies(), Some("id"))
            .await
            .expect("add_documents succeeds"),
    )
    .await;
    succeed(
        &client,
        index
            .add_or_update(&[json!({"id": 1, "rating": 5})], None)
            .await
            .expect("add_or_update succeeds"),
    )
    .await;
    let carol: Value = index
        .get_document("1")
        .await
        .expect("get_document succeeds");
    assert_eq!(carol["title"], "Carol");
    assert_eq!(carol["rating"], 5);

    let task = succeed(
        &client,
        index
            .delete_documents(&[3, 42])
            .await
            .expect("delete_documents succeeds"),
    )
    .await;
    let Task::Succeeded { content } = task else {
        unreachable!()
    };
    let TaskType::DocumentDeletion {
        details: Some(details),
    } = content.update_type
    else {
        panic!("not a deletion: {:?}", content.update_type)
    };
    assert_eq!(details.deleted_documents, Some(1));
    assert_eq!(details.provided_ids, Some(2));

    // Deletion by filter needs the attribute filterable.
    succeed(
        &client,
        index
            .set_filterable_attributes(["genre"])
            .await
            .expect("set_filterable_attributes succeeds"),
    )
    .await;
    let mut query = DocumentDeletionQuery::new(&index);
    query.with_filter("genre = action");
    succeed(
        &client,
        index
            .delete_documents_with(&query)
            .await
            .expect("delete_documents_with succeeds"),
    )
    .await;
    let listed = index
        .get_documents::<Value>()
        .await
        .expect("get_documents succeeds");
    assert_eq!(ids(&listed.results), ["1", "five"]);

    succeed(
        &client,
        index
            .delete_all_documents()
            .await
            .expect("delete_all_documents succeeds"),
    )
    .await;
    assert_eq!(
        index
            .get_documents::<Value>()
            .await
            .expect("get_documents succeeds")
            .total,
        0
    );
}

#[test]
fn filters_sorts_fields_and_pagination_merge_across_shards() {
    let server = Server::start();
    server.raw(&json_request(
        "POST",
        "/indexes/movies/documents",
        None,
        &Value::from(movies()).to_string(),
    ));
    server.raw(&json_request(
        "PATCH",
        "/indexes/movies/settings",
        None,
        r#"{"filterableAttributes": ["genre", "year"], "sortableAttributes": ["year", "title"]}"#,
    ));
    wait_idle(&server);
    let response = server.raw(&json_request(
        "POST",
        "/indexes/movies/documents/fetch",
        None,
        r#"{"filter": "year >= 2015", "sort": ["year:asc", "title:desc"], "fields": ["title"], "limit": 3}"#,
    ));
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(
        response.json(),
        json!({
            "results": [{"title": "Mad Max"}, {"title": "Carol"}, {"title": "Moana"}],
            "offset": 0, "limit": 3, "total": 4
        })
    );
    let response = server.raw(&request(
        "GET",
        "/indexes/movies/documents?filter=genre%20%3D%20drama&sort=year:desc&offset=1",
        None,
    ));
    assert_eq!(response.json()["results"], json!([movies()[2]]));
    assert_eq!(response.json()["total"], 2);
    let response = server.raw(&request(
        "GET",
        "/indexes/movies/documents?filter=title%20%3D%20Carol",
        None,
    ));
    assert_eq!(response.status, 400);
    assert_eq!(response.json()["code"], "invalid_document_filter");
    assert!(
        response.json()["message"]
            .as_str()
            .expect("as_str finds a value of that type")
            .starts_with("Attribute `title` is not filterable."),
        "{}",
        response.text()
    );
    let response = server.raw(&request(
        "GET",
        "/indexes/movies/documents?sort=genre:asc",
        None,
    ));
    assert_eq!(response.json()["code"], "invalid_document_sort");
}

#[test]
fn listings_keep_the_order_documents_were_first_added_in_across_shards_and_batches() {
    let server = Server::start();
    let mut expected = Vec::new();
    for batch in 0..3 {
        let documents: Vec<Value> = (0..12)
            .map(|position| json!({"id": 100 - batch * 12 - position}))
            .collect();
        expected.extend(documents.iter().map(|document| document["id"].clone()));
        server.raw(&json_request(
            "POST",
            "/indexes/numbers/documents",
            None,
            &Value::from(documents).to_string(),
        ));
        wait_idle(&server);
    }
    // Replacing a document keeps its place.
    server.raw(&json_request(
        "POST",
        "/indexes/numbers/documents",
        None,
        r#"[{"id": 100, "replaced": true}]"#,
    ));
    wait_idle(&server);
    let listed = server
        .raw(&request(
            "GET",
            "/indexes/numbers/documents?limit=100",
            None,
        ))
        .json();
    let order: Vec<Value> = listed["results"]
        .as_array()
        .expect("as_array finds a value of that type")
        .iter()
        .map(|document| document["id"].clone())
        .collect();
    assert_eq!(order, expected);
    let page = server
        .raw(&request(
            "GET",
            "/indexes/numbers/documents?offset=10&limit=3",
            None,
        ))
        .json();
    let page: Vec<Value> = page["results"]
        .as_array()
        .expect("as_array finds a value of that type")
        .iter()
        .map(|document| document["id"].clone())
        .collect();
    assert_eq!(page, expected[10..13]);
}

#[test]
fn ndjson_and_csv_payloads_are_indexed_with_typed_csv_columns() {
    let server = Server::start();
    let ndjson = "{\"product_id\": \"a1\", \"price\": 3}\n{\"product_id\": \"b2\", \"price\": 4}\n";
    let response = server.raw(&payload_request(
        "/indexes/shop/documents",
        "application/x-ndjson",
        ndjson,
    ));
    assert_eq!(response.status, 202, "{}", response.text());
    let csv = "product_id;price:number;available:boolean\nc3;5.5;true\nd4;;false\n";
    let response = server.raw(&payload_request(
        "/indexes/shop/documents?csvDelimiter=%3B",
        "text/csv",
        csv,
    ));
    assert_eq!(response.status, 202, "{}", response.text());
    wait_idle(&server);
    let document = server
        .raw(&request("GET", "/indexes/shop/documents/c3", None))
        .json();
    assert_eq!(
        document,
        json!({"product_id": "c3", "price": 5.5, "available": true})
    );
    let document = server
        .raw(&request("GET", "/indexes/shop/documents/d4", None))
        .json();
    assert_eq!(
        document,
        json!({"product_id": "d4", "price": null, "available": false})
    );
    let index = server.raw(&request("GET", "/indexes/shop", None)).json();
    assert_eq!(
        index["primaryKey"], "product_id",
        "inferred from the `id` suffix"
    );
}

#[test]
fn bad_payloads_are_refused_at_upload_and_bad_documents_fail_their_task_alone() {
    let server = Server::start();
    let response = server.raw(&payload_request(
        "/indexes/shop/documents",
        "text/plain",
        "{}",
    ));
    assert_eq!(response.status, 415);
    assert_eq!(response.json()["code"], "invalid_content_type");
    let response = server.raw(&payload_request(
        "/indexes/shop/documents",
        "application/json",
        "[{\"id\": 1},",
    ));
    assert_eq!(response.status, 400);
    assert_eq!(response.json()["code"], "malformed_payload");
    let response = server.raw(&payload_request(
        "/indexes/bad%20uid/documents",
        "application/json",
        "[]",
    ));
    assert_eq!(response.json()["code"], "invalid_index_uid");

    // One valid task and one with an invalid id, batched together: only the second fails.
    server.raw(&payload_request(
        "/indexes/shop/documents",
        "application/json",
        r#"[{"id": 1, "name": "ok"}]"#,
    ));
    let bad = server
        .raw(&payload_request(
            "/indexes/shop/documents",
            "application/json",
            r#"[{"id": "not valid!"}]"#,
        ))
        .json();
    wait_idle(&server);
    let task = server
        .raw(&request("GET", &format!("/tasks/{}", bad["taskUid"]), None))
        .json();
    assert_eq!(task["status"], "failed");
    assert_eq!(task["error"]["code"], "invalid_document_id");
    assert_eq!(task["details"]["indexedDocuments"], 0);
    let listed = server
        .raw(&request("GET", "/indexes/shop/documents", None))
        .json();
    assert_eq!(listed["results"], json!([{"id": 1, "name": "ok"}]));
    let missing = server.raw(&request("GET", "/indexes/shop/documents/9", None));
    assert_eq!(missing.status, 404);
    assert_eq!(missing.json()["message"], "Document `9` not found.");
}

#[test]
fn index_lifecycle_create_update_swap_rename_and_delete() {
    let server = Server::start();
    for uid in ["a", "b"] {
        server.raw(&json_request(
            "POST",
            "/indexes",
            None,
            &json!({"uid": uid}).to_string(),
        ));
    }
    server.raw(&json_request(
        "POST",
        "/indexes/a/documents",
        None,
        r#"[{"id": "in-a"}]"#,
    ));
    let duplicate = server
        .raw(&json_request("POST", "/indexes", None, r#"{"uid": "a"}"#))
        .json();
    wait_idle(&server);
    let task = server
        .raw(&request(
            "GET",
            &format!("/tasks/{}", duplicate["taskUid"]),
            None,
        ))
        .json();
    assert_eq!(task["error"]["code"], "index_already_exists");

    server.raw(&json_request(
        "POST",
        "/swap-indexes",
        None,
        r#"[{"indexes": ["a", "b"]}]"#,
    ));
    server.raw(&json_request(
        "PATCH",
        "/indexes/b",
        None,
        r#"{"uid": "c"}"#,
    ));
    wait_idle(&server);
    let listed = server.raw(&request("GET", "/indexes", None)).json();
    let uids: Vec<&str> = listed["results"]
        .as_array()
        .expect("as_array finds a value of that type")
        .iter()
        .map(|index| {
            index["uid"]
                .as_str()
                .expect("as_str finds a value of that type")
        })
        .collect();
    assert_eq!(uids, ["a", "c"]);
    let moved = server.raw(&request("GET", "/indexes/c/documents/in-a", None));
    assert_eq!(
        moved.status, 200,
        "the documents follow the swap and the rename"
    );

    let deletion = server.raw(&request("DELETE", "/indexes/c", None)).json();
    wait_idle(&server);
    let task = server
        .raw(&request(
            "GET",
            &format!("/tasks/{}", deletion["taskUid"]),
            None,
        ))
        .json();
    assert_eq!(task["details"]["deletedDocuments"], 1);
    assert_eq!(server.raw(&request("GET", "/indexes/c", None)).status, 404);
}

#[test]
fn settings_are_stored_validated_and_reset_per_sub_route() {
    let server = Server::start();
    let response = server.raw(&json_request(
        "PUT",
        "/indexes/books/settings/ranking-rules",
        None,
        r#"["words", "year:desc"]"#,
    ));
    assert_eq!(response.status, 202, "a settings update creates the index");
    server.raw(&json_request(
        "PATCH",
        "/indexes/books/settings/typo-tolerance",
        None,
        r#"{"minWordSizeForTypos": {"oneTypo": 4}}"#,
    ));
    wait_idle(&server);
    let rules = server
        .raw(&request(
            "GET",
            "/indexes/books/settings/ranking-rules",
            None,
        ))
        .json();
    assert_eq!(rules, json!(["words", "year:desc"]));
    let typo = server
        .raw(&request(
            "GET",
            "/indexes/books/settings/typo-tolerance",
            None,
        ))
        .json();
    assert_eq!(
        typo["minWordSizeForTypos"],
        json!({"oneTypo": 4, "twoTypos": 9})
    );
    let wrong_verb = server.raw(&json_request(
        "PUT",
        "/indexes/books/settings/typo-tolerance",
        None,
        "{}",
    ));
    assert_eq!(wrong_verb.status, 405);
    let invalid = server.raw(&json_request(
        "PUT",
        "/indexes/books/settings/ranking-rules",
        None,
        r#"["nope"]"#,
    ));
    assert_eq!(invalid.json()["code"], "invalid_settings_ranking_rules");
    server.raw(&request(
        "DELETE",
        "/indexes/books/settings/ranking-rules",
        None,
    ));
    wait_idle(&server);
    let rules = server
        .raw(&request("GET", "/indexes/books/settings", None))
        .json()["rankingRules"]
        .clone();
    assert_eq!(rules[0], "words");
    assert_eq!(
        rules
            .as_array()
            .expect("as_array finds a value of that type")
            .len(),
        7
    );
}

#[test]
fn acknowledged_tasks_and_documents_survive_a_crash() {
    let scratch = tempfile::tempdir().expect("tempdir succeeds");
    let data = scratch.path().join("data.ms");
    let server = Server::start_on(&data, &Options::default());
    server.raw(&json_request(
        "POST",
        "/indexes/movies/documents",
        None,
        &Value::from(movies()).to_string(),
    ));
    wait_idle(&server);
    let mut acknowledged = Vec::new();
    for round in 0..20 {
        let response = server.raw(&json_request(
            "POST",
            "/indexes/movies/documents",
            None,
            &json!([{"id": format!("crash-{round}"), "round": round}]).to_string(),
        ));
        assert_eq!(response.status, 202);
        acknowledged.push(
            response.json()["taskUid"]
                .as_u64()
                .expect("as_u64 finds a value of that type"),
        );
    }
    server.kill();

    let server = Server::start_on(&data, &Options::default());
    wait_idle(&server);
    for uid in acknowledged {
        let task = server
            .raw(&request("GET", &format!("/tasks/{uid}"), None))
            .json();
        assert_eq!(
            task["status"], "succeeded",
            "task {uid} after the crash: {task}"
        );
    }
    let listed = server
        .raw(&request("GET", "/indexes/movies/documents?limit=100", None))
        .json();
    assert_eq!(listed["total"], 25);
    let stats = server
        .raw(&request("GET", "/indexes/movies/stats", None))
        .json();
    assert_eq!(stats["numberOfDocuments"], 25);
}

#[test]
fn tasks_and_batches_are_listed_filtered_canceled_and_deleted() {
    let server = Server::start();
    for round in 0..3 {
        server.raw(&json_request(
            "POST",
            "/indexes/logs/documents",
            None,
            &json!([{"id": round}]).to_string(),
        ));
    }
    wait_idle(&server);
    let listed = server
        .raw(&request(
            "GET",
            "/tasks?types=documentAdditionOrUpdate&statuses=succeeded&limit=2",
            None,
        ))
        .json();
    assert_eq!(listed["total"], 3);
    assert_eq!(
        listed["results"]
            .as_array()
            .expect("as_array finds a value of that type")
            .len(),
        2
    );
    assert_eq!(listed["next"], 0);
    let batch = server.raw(&request("GET", "/batches/0", None)).json();
    assert_eq!(batch["uid"], 0);
    assert_eq!(
        batch["stats"]["types"]["documentAdditionOrUpdate"],
        batch["stats"]["totalNbTasks"]
    );
    let missing = server.raw(&request("GET", "/tasks/999", None));
    assert_eq!(missing.status, 404);
    assert_eq!(missing.json()["code"], "task_not_found");

    let deletion = server.raw(&request("DELETE", "/tasks?uids=0,1", None));
    assert_eq!(deletion.status, 200);
    wait_idle(&server);
    let remaining = server
        .raw(&request("GET", "/tasks?uids=0,1,2", None))
        .json();
    assert_eq!(remaining["total"], 1);
    let no_filter = server.raw(&request("POST", "/tasks/cancel", None));
    assert_eq!(no_filter.json()["code"], "missing_task_filters");
}

fn payload_request(path: &str, content_type: &str, body: &str) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nHost: test\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// Waits until no task is enqueued or processing.
fn wait_idle(server: &Server) {
    for _ in 0..600 {
        let pending = server
            .raw(&request(
                "GET",
                "/tasks?statuses=enqueued,processing&limit=1",
                None,
            ))
            .json();
        if pending["total"] == 0 {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("tasks still pending after 12 s");
}

#[test]
fn an_update_file_no_task_refers_to_is_removed_at_start() {
    let scratch = tempfile::tempdir().expect("tempdir succeeds");
    let data = scratch.path().join("data.ms");
    let server = Server::start_on(&data, &Options::default());
    server.raw(&json_request(
        "POST",
        "/indexes/kept/documents",
        None,
        r#"[{"id": 1}]"#,
    ));
    wait_idle(&server);
    server.kill();
    let orphan = data.join("update_files").join("left-by-a-crash.json");
    std::fs::write(&orphan, b"[]").expect("write succeeds");
    let server = Server::start_on(&data, &Options::default());
    assert!(!orphan.exists(), "the orphan update file is removed");
    let kept = server.raw(&request("GET", "/indexes/kept/documents/1", None));
    assert_eq!(kept.status, 200);
}

/// `SLOW_PAYLOAD_DOCUMENTS` documents as one JSON payload: long enough to apply that tasks
/// enqueued right after it wait for it.
fn slow_payload() -> String {
    let documents: Vec<Value> = (0..SLOW_PAYLOAD_DOCUMENTS)
        .map(|id| json!({"id": id, "text": "a document long enough to take some time to apply"}))
        .collect();
    Value::from(documents).to_string()
}

/// Documents of [`slow_payload`].
const SLOW_PAYLOAD_DOCUMENTS: u64 = 60_000;

#[test]
fn a_cancelation_stops_the_processing_batch_and_cancels_what_waits() {
    let server = Server::start();
    let big = slow_payload();
    let first = server
        .raw(&json_request("POST", "/indexes/slow/documents", None, &big))
        .json();
    let second = server
        .raw(&json_request(
            "POST",
            "/indexes/other/documents",
            None,
            r#"[{"id": "waiting"}]"#,
        ))
        .json();
    let cancel = server.raw(&request(
        "POST",
        &format!(
            "/tasks/cancel?uids={},{}",
            first["taskUid"], second["taskUid"]
        ),
        None,
    ));
    assert_eq!(cancel.status, 200, "{}", cancel.text());
    let cancel_uid = cancel.json()["taskUid"].clone();
    wait_idle(&server);
    let cancelation = server
        .raw(&request("GET", &format!("/tasks/{cancel_uid}"), None))
        .json();
    assert_eq!(cancelation["status"], "succeeded", "{cancelation}");
    for task in [&first, &second] {
        let task = server
            .raw(&request(
                "GET",
                &format!("/tasks/{}", task["taskUid"]),
                None,
            ))
            .json();
        match task["status"]
            .as_str()
            .expect("as_str finds a value of that type")
        {
            // The big batch may have finished before the cancelation was registered.
            "succeeded" => assert_eq!(task["uid"], first["taskUid"]),
            "canceled" => assert_eq!(task["canceledBy"], cancel_uid, "{task}"),
            other => panic!("task ended {other}: {task}"),
        }
    }
    let canceled = cancelation["details"]["canceledTasks"]
        .as_u64()
        .expect("as_u64 finds a value of that type");
    let documents = server.raw(&request("GET", "/indexes/slow/documents?limit=1", None));
    if canceled == 2 {
        // Nothing of the interrupted batch is visible.
        assert!(documents.status == 404 || documents.json()["total"] == 0);
    } else {
        assert_eq!(documents.json()["total"], SLOW_PAYLOAD_DOCUMENTS);
    }
    println!("canceled {canceled} tasks");
}

#[test]
fn concurrent_writes_from_many_connections_on_every_core_are_all_registered() {
    let server = Server::start();
    let address = server.address.to_string();
    let clients: Vec<_> = (0..8)
        .map(|client| {
            let address = address.clone();
            std::thread::spawn(move || {
                let mut uids = Vec::new();
                for round in 0..15 {
                    let body = json!([{"id": format!("c{client}-r{round}")}]).to_string();
                    let response = common::raw_to(
                        &address,
                        &json_request("POST", "/indexes/busy/documents", None, &body),
                    )
                    .expect("the server answers");
                    assert_eq!(response.status, 202, "{}", response.text());
                    uids.push(
                        response.json()["taskUid"]
                            .as_u64()
                            .expect("as_u64 finds a value of that type"),
                    );
                }
                uids
            })
        })
        .collect();
    let mut uids: Vec<u64> = clients
        .into_iter()
        .flat_map(|client| client.join().expect("join succeeds"))
        .collect();
    uids.sort_unstable();
    uids.dedup();
    assert_eq!(uids.len(), 120, "every registration got its own uid");
    wait_idle(&server);
    let failed = server
        .raw(&request("GET", "/tasks?statuses=failed", None))
        .json();
    assert_eq!(failed["total"], 0, "{failed}");
    let stats = server
        .raw(&request("GET", "/indexes/busy/stats", None))
        .json();
    assert_eq!(stats["numberOfDocuments"], 120);
}

/// One batch of several additions to an index whose primary key is known (their update files
/// are read on both cores, and most documents reach their shard as spans the shard reads
/// itself), mixed with what takes the general path: an id written by two payloads (merged), a
/// CSV payload, a deletion, and an id written twice in one payload. The documents are the ones
/// the tasks describe, applied in order.
#[test]
fn a_batch_of_mixed_additions_applies_each_document_as_the_tasks_order_it() {
    let server = Server::start();
    let created = server.raw(&json_request(
        "POST",
        "/indexes",
        None,
        r#"{"uid": "mixed", "primaryKey": "id"}"#,
    ));
    assert_eq!(created.status, 202, "{}", created.text());
    wait_idle(&server);
    // Keeps the scheduler busy while the tasks below are enqueued, so they form one batch.
    server.raw(&json_request(
        "POST",
        "/indexes/slow/documents",
        None,
        &slow_payload(),
    ));
    let replaced: String = (1..=300)
        .map(|id| format!("{{\"id\":{id},\"v\":\"a\"}}\n"))
        .collect();
    let updated: Vec<Value> = (250..=320).map(|id| json!({"id": id, "w": "b"})).collect();
    let mut uids = Vec::new();
    let mut enqueue = |raw: String| {
        let response = server.raw(&raw);
        assert_eq!(response.status, 202, "{}", response.text());
        uids.push(response.json()["taskUid"].clone());
    };
    enqueue(payload_request(
        "/indexes/mixed/documents",
        "application/x-ndjson",
        &replaced,
    ));
    enqueue(json_request(
        "PUT",
        "/indexes/mixed/documents",
        None,
        &Value::from(updated).to_string(),
    ));
    enqueue(payload_request(
        "/indexes/mixed/documents",
        "text/csv",
        "id,v\n5,csv\n6,csv\n",
    ));
    enqueue(json_request(
        "POST",
        "/indexes/mixed/documents/delete-batch",
        None,
        "[7]",
    ));
    enqueue(json_request(
        "POST",
        "/indexes/mixed/documents",
        None,
        r#"[{"id": 8, "v": "first"}, {"id": 9, "v": "x"}, {"id": 8, "v": "last"}]"#,
    ));
    wait_idle(&server);
    let mut batches = Vec::new();
    for uid in &uids {
        let task = server
            .raw(&request("GET", &format!("/tasks/{uid}"), None))
            .json();
        assert_eq!(task["status"], "succeeded", "{task}");
        batches.push(task["batchUid"].clone());
    }
    assert!(
        batches.iter().all(|batch| *batch == batches[0]),
        "the tasks form one batch: {batches:?}"
    );
    let mut expected: Vec<Value> = Vec::new();
    for id in 1..=320 {
        let document = match id {
            5 | 6 => json!({"id": id.to_string(), "v": "csv"}),
            7 => continue,
            8 => json!({"id": 8, "v": "last"}),
            9 => json!({"id": 9, "v": "x"}),
            250..=300 => json!({"id": id, "v": "a", "w": "b"}),
            301.. => json!({"id": id, "w": "b"}),
            _ => json!({"id": id, "v": "a"}),
        };
        expected.push(document);
    }
    let listed = server
        .raw(&request("GET", "/indexes/mixed/documents?limit=1000", None))
        .json();
    let mut documents = listed["results"]
        .as_array()
        .expect("the listing has results")
        .clone();
    let key = |document: &Value| match &document["id"] {
        Value::String(text) => text.parse::<u64>().expect("numeric ids"),
        number => number.as_u64().expect("numeric ids"),
    };
    documents.sort_by_key(key);
    assert_eq!(documents.len(), expected.len());
    for (document, expected) in documents.iter().zip(&expected) {
        assert_eq!(document, expected);
    }
}

/// A swap and a rename rewrite the history as Meilisearch 1.41 does (these answers are a
/// 1.41 binary's for the same requests): earlier tasks name the index their data now lives
/// under, so `indexUids` follows the data.
#[test]
fn swaps_and_renames_rewrite_the_index_uids_of_earlier_tasks() {
    let server = Server::start();
    let steps: [(&str, &str, &str); 6] = [
        ("POST", "/indexes", r#"{"uid": "a"}"#),
        ("POST", "/indexes", r#"{"uid": "b"}"#),
        ("POST", "/indexes/a/documents", r#"[{"id": "in-a"}]"#),
        ("POST", "/swap-indexes", r#"[{"indexes": ["a", "b"]}]"#),
        ("PATCH", "/indexes/b", r#"{"uid": "c"}"#),
        (
            "POST",
            "/swap-indexes",
            r#"[{"indexes": ["c", "d"], "rename": true}]"#,
        ),
    ];
    for (method, path, body) in steps {
        server.raw(&json_request(method, path, None, body));
    }
    wait_idle(&server);
    let listed = |index: &str| -> Vec<(u64, String, String)> {
        let answer = server
            .raw(&request("GET", &format!("/tasks?indexUids={index}"), None))
            .json();
        answer["results"]
            .as_array()
            .expect("a task list")
            .iter()
            .map(|task| {
                (
                    task["uid"].as_u64().expect("a uid"),
                    task["indexUid"].as_str().unwrap_or_default().to_owned(),
                    task["type"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect()
    };
    let owned = |rows: &[(u64, &str, &str)]| -> Vec<(u64, String, String)> {
        rows.iter()
            .map(|(uid, index, kind)| (*uid, index.to_string(), kind.to_string()))
            .collect()
    };
    assert_eq!(listed("a"), owned(&[(1, "a", "indexCreation")]));
    assert_eq!(listed("c"), owned(&[]));
    assert_eq!(
        listed("d"),
        owned(&[
            (4, "b", "indexUpdate"),
            (2, "d", "documentAdditionOrUpdate"),
            (0, "d", "indexCreation"),
        ])
    );
    assert_eq!(listed("b"), owned(&[(4, "b", "indexUpdate")]));
}

/// A replacement batch larger than one existing-ids request (4,096 ids per shard): every
/// stored id is found across the rounds, so the documents are replaced, none duplicated,
/// and only the new ids are created.
#[test]
fn a_batch_replacing_more_ids_than_one_lookup_round_replaces_each_once() {
    let server = Server::start_with(options());
    let first: Vec<Value> = (0..10_000)
        .map(|id| json!({"id": id, "title": format!("first {id}")}))
        .collect();
    let task = server.send("POST", "/indexes/big/documents", Some(&Value::from(first)));
    let uid = task.json()["taskUid"].clone();
    assert_eq!(server.wait_task(&uid)["status"], "succeeded");
    let second: Vec<Value> = (1_000..11_000)
        .map(|id| json!({"id": id, "title": format!("second {id}")}))
        .collect();
    let task = server.send("POST", "/indexes/big/documents", Some(&Value::from(second)));
    let uid = task.json()["taskUid"].clone();
    let finished = server.wait_task(&uid);
    assert_eq!(finished["status"], "succeeded", "{finished}");
    assert_eq!(finished["details"]["indexedDocuments"], 10_000);
    let stats = server.send("GET", "/indexes/big/stats", None).json();
    assert_eq!(stats["numberOfDocuments"], 11_000, "{stats}");
    for (id, title) in [
        (0, "first 0"),
        (4_321, "second 4321"),
        (10_999, "second 10999"),
    ] {
        let document = server
            .send("GET", &format!("/indexes/big/documents/{id}"), None)
            .json();
        assert_eq!(document["title"], title, "document {id}");
    }
    let listed = server
        .send("GET", "/indexes/big/documents?limit=20000&fields=id", None)
        .json();
    let mut ids: Vec<i64> = listed["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|document| document["id"].as_i64().expect("numeric id"))
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..11_000).collect::<Vec<i64>>(), "each id once");
}
