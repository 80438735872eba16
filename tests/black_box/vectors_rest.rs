//! A `rest` embedder served by a small HTTP server the test starts (issue 38): dimensions
//! found with a test text when the settings change, documents embedded from their
//! `documentTemplate` while they are indexed, `q` embedded at search time, and an embedder
//! that fails failing the task with `vector_embedding_error` and nothing applied; a
//! `composite` embedder whose two sides are two such servers.

#![allow(clippy::unwrap_used, clippy::too_many_lines)]

use crate::common;

use std::sync::atomic::Ordering;

use common::rest_embedder::Embedder;
use common::{MASTER_KEY, Options, Server};
use serde_json::{Value, json};

fn server() -> Server {
    Server::start_with(Options {
        master_key: Some(MASTER_KEY.to_string()),
        extra_arguments: vec![
            "--experimental-allowed-ip-networks".to_string(),
            "any".to_string(),
            "--shards-per-index".to_string(),
            "2".to_string(),
            "--documents-per-shard".to_string(),
            "0".to_string(),
        ],
        ..Options::default()
    })
}

fn task(server: &Server, method: &str, path: &str, body: &Value) -> Value {
    let response = server.send(method, path, Some(body));
    assert_eq!(response.status, 202, "{}", response.text());
    server.wait_task(&response.json()["taskUid"])
}

#[test]
fn a_rest_embedder_embeds_documents_and_queries_and_its_failures_fail_the_task() {
    let embedder = Embedder::start();
    let server = server();
    let settings = json!({"embedders": {"rest": embedder.settings()}});
    let done = task(&server, "PATCH", "/indexes/r/settings", &settings);
    assert_eq!(done["status"], "succeeded", "{done}");
    let documents = json!([
        {"id": 1, "title": "banana"},
        {"id": 2, "title": "tree"},
        {"id": 3, "title": "potato boot"},
        {"id": 4, "title": "own", "_vectors": {"rest": [9.0, 9.0, 9.0]}},
    ]);
    let done = task(&server, "POST", "/indexes/r/documents", &documents);
    assert_eq!(done["status"], "succeeded", "{done}");
    let first = server
        .send("GET", "/indexes/r/documents/1?retrieveVectors=true", None)
        .json();
    assert_eq!(
        first["_vectors"]["rest"],
        json!({"embeddings": [[3.5, 0.5, 0.5]], "regenerate": true}),
        "{first}"
    );
    let own = server
        .send("GET", "/indexes/r/documents/4?retrieveVectors=true", None)
        .json();
    assert_eq!(
        own["_vectors"]["rest"],
        json!({"embeddings": [[9.0, 9.0, 9.0]], "regenerate": false})
    );
    let stats = server.send("GET", "/indexes/r/stats", None).json();
    assert_eq!(stats["numberOfEmbeddings"], 4, "{stats}");
    // `q` is embedded by the embedder: "ooo" is closest to "potato boot".
    let search =
        json!({"q": "ooo", "hybrid": {"embedder": "rest", "semanticRatio": 1.0}, "limit": 1});
    let response = server.send("POST", "/indexes/r/search", Some(&search));
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(response.json()["hits"][0]["id"], 3, "{}", response.text());
    // A template change embeds the generated embeddings again, never the given ones.
    let template = json!({"embedders": {"rest": {"documentTemplate": "{{doc.title}} aaa"}}});
    let done = task(&server, "PATCH", "/indexes/r/settings", &template);
    assert_eq!(done["status"], "succeeded", "{done}");
    let first = server
        .send("GET", "/indexes/r/documents/1?retrieveVectors=true", None)
        .json();
    assert_eq!(
        first["_vectors"]["rest"]["embeddings"],
        json!([[6.5, 0.5, 0.5]]),
        "{first}"
    );
    let own = server
        .send("GET", "/indexes/r/documents/4?retrieveVectors=true", None)
        .json();
    assert_eq!(
        own["_vectors"]["rest"]["embeddings"],
        json!([[9.0, 9.0, 9.0]])
    );
    // A distribution change embeds nothing.
    let embedded = embedder.texts.load(Ordering::SeqCst);
    let distribution =
        json!({"embedders": {"rest": {"distribution": {"mean": 0.7, "sigma": 0.2}}}});
    let done = task(&server, "PATCH", "/indexes/r/settings", &distribution);
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!(embedder.texts.load(Ordering::SeqCst), embedded);
    // An embedder that answers 500 fails the task whole.
    embedder.failing.store(true, Ordering::SeqCst);
    let failed = task(
        &server,
        "POST",
        "/indexes/r/documents",
        &json!([{"id": 5, "title": "apple"}]),
    );
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(
        failed["error"]["code"], "vector_embedding_error",
        "{failed}"
    );
    let message = failed["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("Index `r`: "), "{message}");
    assert!(message.contains("the model is down"), "{message}");
    let missing = server.send("GET", "/indexes/r/documents/5", None);
    assert_eq!(missing.status, 404);
    assert!(embedder.texts.load(Ordering::SeqCst) >= 5);
}

/// Texts the embedder embeds for two identical hybrid searches, with `cache_entries`.
fn query_embeddings_for_two_same_searches(cache_entries: &str) -> usize {
    let embedder = Embedder::start();
    let server = Server::start_with(Options {
        master_key: Some(MASTER_KEY.to_string()),
        extra_arguments: vec![
            "--experimental-allowed-ip-networks".to_string(),
            "any".to_string(),
            "--experimental-embedding-cache-entries".to_string(),
            cache_entries.to_string(),
        ],
        // One core: each core keeps its own cache.
        cores: Some(1),
        ..Options::default()
    });
    let settings = json!({"embedders": {"rest": embedder.settings()}});
    let done = task(&server, "PATCH", "/indexes/c/settings", &settings);
    assert_eq!(done["status"], "succeeded", "{done}");
    let done = task(
        &server,
        "POST",
        "/indexes/c/documents",
        &json!([{"id": 1, "title": "potato"}]),
    );
    assert_eq!(done["status"], "succeeded", "{done}");
    let before = embedder.texts.load(Ordering::SeqCst);
    let search = json!({"q": "ooo", "hybrid": {"embedder": "rest", "semanticRatio": 1.0}});
    for _ in 0..2 {
        let response = server.send("POST", "/indexes/c/search", Some(&search));
        assert_eq!(response.status, 200, "{}", response.text());
        assert_eq!(response.json()["hits"][0]["id"], 1, "{}", response.text());
    }
    embedder.texts.load(Ordering::SeqCst) - before
}

/// Each search embeds its query and nothing else (the index knows the embedder's
/// dimensions); with the cache, the same query is embedded once.
#[test]
fn the_embedding_cache_embeds_a_repeated_query_once() {
    let cached = query_embeddings_for_two_same_searches("4");
    let uncached = query_embeddings_for_two_same_searches("0");
    assert_eq!(cached, 1);
    assert_eq!(uncached, 2);
}

/// A `composite` embedder through the API: documents are embedded by its indexing side only,
/// `q` by its search side only, and the hits rank by the indexed embeddings.
#[test]
fn a_composite_embedder_indexes_with_its_indexing_side_and_searches_with_its_search_side() {
    let indexing = Embedder::start();
    let searching = Embedder::start();
    let server = server();
    let enabled = server.send(
        "PATCH",
        "/experimental-features",
        Some(&json!({"compositeEmbedders": true})),
    );
    assert_eq!(enabled.status, 200, "{}", enabled.text());
    let mut indexing_side = indexing.settings();
    indexing_side["dimensions"] = json!(3);
    let mut search_side = searching.settings();
    search_side
        .as_object_mut()
        .unwrap()
        .remove("documentTemplate");
    search_side["dimensions"] = json!(3);
    let settings = json!({"embedders": {"both": {
        "source": "composite",
        "indexingEmbedder": indexing_side,
        "searchEmbedder": search_side,
    }}});
    let done = task(&server, "PATCH", "/indexes/c/settings", &settings);
    assert_eq!(done["status"], "succeeded", "{done}");
    let (indexed_before, searched_before) = (
        indexing.texts.load(Ordering::SeqCst),
        searching.texts.load(Ordering::SeqCst),
    );
    let documents = json!([
        {"id": 1, "title": "banana"},
        {"id": 2, "title": "tree"},
        {"id": 3, "title": "potato boot"},
    ]);
    let done = task(&server, "POST", "/indexes/c/documents", &documents);
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!(indexing.texts.load(Ordering::SeqCst) - indexed_before, 3);
    assert_eq!(searching.texts.load(Ordering::SeqCst), searched_before);
    let third = server
        .send("GET", "/indexes/c/documents/3?retrieveVectors=true", None)
        .json();
    assert_eq!(
        third["_vectors"]["both"],
        json!({"embeddings": [[1.5, 0.5, 4.5]], "regenerate": true}),
        "{third}"
    );
    for (query, closest) in [("ooo", 3), ("aaa", 1), ("eee", 2)] {
        let search =
            json!({"q": query, "hybrid": {"embedder": "both", "semanticRatio": 1.0}, "limit": 1});
        let response = server.send("POST", "/indexes/c/search", Some(&search));
        assert_eq!(response.status, 200, "{}", response.text());
        assert_eq!(
            response.json()["hits"][0]["id"],
            closest,
            "{query}: {}",
            response.text()
        );
    }
    assert_eq!(indexing.texts.load(Ordering::SeqCst) - indexed_before, 3);
    assert_eq!(searching.texts.load(Ordering::SeqCst) - searched_before, 3);
}
