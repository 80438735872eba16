//! What clients see of documents and fields where coresearch differed from Meilisearch
//! (issue 36, item 8): a payload naming an id twice counts it once in `indexedDocuments`,
//! and the field listing of an index with a primary key but no document lists the key.

use crate::common;

use common::Server;
use serde_json::{Value, json};

fn run(server: &Server, method: &str, path: &str, body: &Value) -> Value {
    let response = server.send(method, path, Some(body));
    assert_eq!(response.status, 202, "{}", response.text());
    let task = server.wait_task(&response.json()["taskUid"]);
    assert_eq!(task["status"], "succeeded", "{task}");
    task
}

#[test]
fn an_id_named_twice_in_a_payload_is_indexed_once() {
    let server = Server::start();
    let documents = json!([
        {"id": 1, "title": "first"},
        {"id": 1, "title": "second"},
        {"id": 2, "title": "other"},
    ]);
    let task = run(&server, "POST", "/indexes/twice/documents", &documents);
    assert_eq!(
        task["details"],
        json!({"receivedDocuments": 3, "indexedDocuments": 2})
    );
    let stored = server
        .send("GET", "/indexes/twice/documents/1", None)
        .json();
    assert_eq!(stored["title"], "second", "the last one wins");
    // A second payload naming stored ids counts each of its distinct ids.
    let again = json!([{"id": 2}, {"id": 3}, {"id": 3}]);
    let task = run(&server, "PUT", "/indexes/twice/documents", &again);
    assert_eq!(
        task["details"],
        json!({"receivedDocuments": 3, "indexedDocuments": 2})
    );
}

#[test]
fn the_fields_of_an_empty_index_list_its_primary_key() {
    let server = Server::start();
    run(
        &server,
        "POST",
        "/indexes",
        &json!({"uid": "empty", "primaryKey": "sku"}),
    );
    let response = server.send("POST", "/indexes/empty/fields", Some(&json!({})));
    assert_eq!(response.status, 200, "{}", response.text());
    let fields = response.json();
    assert_eq!(fields["total"], 1, "{fields}");
    assert_eq!(fields["results"][0]["name"], "sku", "{fields}");
}

/// `displayedAttributes` shapes search hits only: the documents routes return the stored
/// document, narrowed by `fields` alone, as Meilisearch does.
#[test]
fn displayed_attributes_do_not_hide_fields_on_the_documents_routes() {
    let server = Server::start();
    run(
        &server,
        "POST",
        "/indexes/shown/documents",
        &json!([{"id": 1, "title": "kept", "secret": "also kept"}]),
    );
    run(
        &server,
        "PATCH",
        "/indexes/shown/settings",
        &json!({"displayedAttributes": ["title"]}),
    );
    let whole = json!({"id": 1, "title": "kept", "secret": "also kept"});
    let one = server
        .send("GET", "/indexes/shown/documents/1", None)
        .json();
    assert_eq!(one, whole);
    let listed = server.send("GET", "/indexes/shown/documents", None).json();
    assert_eq!(listed["results"], json!([whole]));
    let fetched = server
        .send("POST", "/indexes/shown/documents/fetch", Some(&json!({})))
        .json();
    assert_eq!(fetched["results"], json!([whole]));
    let narrowed = server
        .send("GET", "/indexes/shown/documents/1?fields=secret", None)
        .json();
    assert_eq!(narrowed, json!({"secret": "also kept"}));
    let hit = server
        .send("POST", "/indexes/shown/search", Some(&json!({"q": "kept"})))
        .json();
    assert_eq!(
        hit["hits"],
        json!([{"title": "kept"}]),
        "search keeps hiding"
    );
}

/// A finished batch's details leave out the keys whose `null` Meilisearch does not show (it
/// stores the batch, and a stored "none yet" reads back as absent); the task keeps its null.
#[test]
fn a_finished_batch_omits_the_null_original_filter_its_task_shows() {
    let server = Server::start();
    run(
        &server,
        "POST",
        "/indexes/batched/documents",
        &json!([{"id": 1}, {"id": 2}]),
    );
    let task = run(
        &server,
        "POST",
        "/indexes/batched/documents/delete-batch",
        &json!([1]),
    );
    assert_eq!(
        task["details"],
        json!({"providedIds": 1, "deletedDocuments": 1, "originalFilter": null})
    );
    let batch = server
        .send("GET", &format!("/batches/{}", task["batchUid"]), None)
        .json();
    assert_eq!(
        batch["details"],
        json!({"providedIds": 1, "deletedDocuments": 1}),
        "{batch}"
    );
}

/// A deletion by a filter on an attribute the index cannot filter fails its task with 1.41's
/// ``Index `uid`: `` prefix, as an edition's does (checked beside Meilisearch 1.50).
#[test]
fn a_task_filter_on_an_unfilterable_attribute_names_the_index() {
    let server = Server::start();
    run(
        &server,
        "POST",
        "/indexes/named/documents",
        &json!([{"id": 1, "a": "x"}]),
    );
    let response = server.send(
        "POST",
        "/indexes/named/documents/delete",
        Some(&json!({"filter": "a = x"})),
    );
    assert_eq!(response.status, 202, "{}", response.text());
    let task = server.wait_task(&response.json()["taskUid"]);
    assert_eq!(task["status"], "failed", "{task}");
    assert_eq!(
        task["error"]["message"],
        "Index `named`: Attribute `a` is not filterable. This index does not have configured filterable attributes.\n1:2 a = x"
    );
    assert_eq!(task["error"]["code"], "invalid_document_filter");
    let stored = server.send("GET", "/indexes/named/documents/1", None);
    assert_eq!(stored.status, 200, "nothing was deleted");
}
