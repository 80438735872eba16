//! Vectors through the API (issue 38): `userProvided` embedders, `_vectors` in every accepted
//! form and with Meilisearch's errors, `retrieveVectors`, embedding statistics, semantic and
//! hybrid search, `/similar`, recall against brute force across shards, embedder changes,
//! restarts and a kill -9 while vectors are indexed. Expected answers were taken from
//! Meilisearch 1.50 given the same requests.

#![allow(clippy::unwrap_used, clippy::too_many_lines)]

use crate::common;

use common::{MASTER_KEY, Options, Server};
use meilisearch_sdk::client::Client;
use serde_json::{Value, json};

/// Shards per index: more than the cores, so every search merges several shards.
const SHARDS_PER_INDEX: &str = "3";

fn server_on(directory: Option<&std::path::Path>) -> Server {
    let options = Options {
        master_key: Some(MASTER_KEY.to_string()),
        extra_arguments: vec![
            "--shards-per-index".to_string(),
            SHARDS_PER_INDEX.to_string(),
            // Every index holds its shards from the start, however few its documents.
            "--documents-per-shard".to_string(),
            "0".to_string(),
        ],
        ..Options::default()
    };
    match directory {
        Some(directory) => Server::start_on(directory, &options),
        None => Server::start_with(options),
    }
}

fn server() -> Server {
    server_on(None)
}

/// Sends a write and waits for its task.
fn task(server: &Server, method: &str, path: &str, body: &Value) -> Value {
    let response = server.send(method, path, Some(body));
    assert_eq!(response.status, 202, "{}", response.text());
    server.wait_task(&response.json()["taskUid"])
}

fn succeeded(server: &Server, method: &str, path: &str, body: &Value) {
    let task = task(server, method, path, body);
    assert_eq!(task["status"], "succeeded", "{task}");
}

fn post(server: &Server, path: &str, body: &Value) -> Value {
    let response = server.send("POST", path, Some(body));
    assert_eq!(response.status, 200, "{}", response.text());
    response.json()
}

fn user_provided(server: &Server, index: &str, dimensions: usize) {
    succeeded(
        server,
        "PATCH",
        &format!("/indexes/{index}/settings"),
        &json!({"embedders": {"e": {"source": "userProvided", "dimensions": dimensions}}}),
    );
}

/// Whether a JSON number is `expected` (to the last bits `serde_json`'s parsing may differ in).
fn close(value: &Value, expected: f64) -> bool {
    value
        .as_f64()
        .is_some_and(|number| (number - expected).abs() < 1e-12)
}

fn ids(hits: &Value) -> Vec<i64> {
    hits.as_array()
        .unwrap()
        .iter()
        .map(|hit| hit["id"].as_i64().unwrap())
        .collect()
}

fn five_documents() -> Value {
    json!([
        {"id": 1, "t": "a", "_vectors": {"e": [1, 2, 3]}},
        {"id": 2, "t": "b", "_vectors": {"e": [[1, 0, 0], [0, 1, 0]]}},
        {"id": 3, "t": "c", "_vectors": {"e": {"embeddings": [0, 0, 1], "regenerate": false}}},
        {"id": 4, "t": "d", "_vectors": {"e": null}},
        {"id": 5, "_vectors": {"e": null, "other": [1, 2]}},
    ])
}

#[test]
fn every_form_of_vectors_is_stored_and_returned_as_meilisearch_returns_it() {
    let server = server();
    user_provided(&server, "v", 3);
    succeeded(&server, "POST", "/indexes/v/documents", &five_documents());
    let listed = server
        .send("GET", "/indexes/v/documents?retrieveVectors=true", None)
        .json();
    assert_eq!(
        listed["results"],
        json!([
            {"id": 1, "t": "a", "_vectors": {"e": {"embeddings": [[1.0, 2.0, 3.0]], "regenerate": false}}},
            {"id": 2, "t": "b", "_vectors": {"e": {"embeddings": [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], "regenerate": false}}},
            {"id": 3, "t": "c", "_vectors": {"e": {"embeddings": [[0.0, 0.0, 1.0]], "regenerate": false}}},
            {"id": 4, "t": "d", "_vectors": {"e": {"embeddings": [], "regenerate": false}}},
            {"id": 5, "_vectors": {"other": [1, 2], "e": {"embeddings": [], "regenerate": false}}},
        ])
    );
    let plain = server.send("GET", "/indexes/v/documents", None).json();
    assert!(
        plain["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|document| document.get("_vectors").is_none()),
        "{plain}"
    );
    let one = server
        .send("GET", "/indexes/v/documents/2?retrieveVectors=true", None)
        .json();
    assert_eq!(
        one["_vectors"]["e"]["embeddings"][1],
        json!([0.0, 1.0, 0.0])
    );
    let fetched = post(
        &server,
        "/indexes/v/documents/fetch",
        &json!({"ids": ["3"], "retrieveVectors": true}),
    );
    assert_eq!(
        fetched["results"][0]["_vectors"]["e"]["embeddings"],
        json!([[0.0, 0.0, 1.0]])
    );
    let stats = server.send("GET", "/indexes/v/stats", None).json();
    assert_eq!(stats["numberOfEmbeddings"], 4, "{stats}");
    assert_eq!(stats["numberOfEmbeddedDocuments"], 3, "{stats}");
    assert_eq!(
        stats["fieldDistribution"],
        json!({"id": 5, "t": 4}),
        "{stats}"
    );
    // `_vectors` is never searchable text: a number only vectors hold matches nothing.
    let found = post(&server, "/indexes/v/search", &json!({"q": "0"}));
    assert_eq!(found["hits"], json!([]), "{found}");
}

#[test]
fn bad_vectors_fail_the_task_with_meilisearch_errors_and_change_nothing() {
    let server = server();
    user_provided(&server, "v", 3);
    succeeded(
        &server,
        "POST",
        "/indexes/v/documents",
        &json!([{"id": 1, "_vectors": {"e": [1, 2, 3]}}]),
    );
    let cases = [
        (
            json!([{"id": 10, "_vectors": {"e": [1, 2]}}]),
            "invalid_vector_dimensions",
            "Index `v`: Invalid vector dimensions in document with id `10` in `._vectors.e`.\n  - note: embedding #0 has dimensions 2\n  - note: embedder `e` requires 3",
        ),
        (
            json!([{"id": 10, "_vectors": {"e": [1, "a", 3]}}]),
            "invalid_vectors_type",
            "Index `v`: Bad embedder configuration in the document with id: `10`. Invalid value type at `._vectors.e[1]`: expected a number, but found a string: `\"a\"`",
        ),
        (
            json!([{"id": 10, "_vectors": {"e": "abc"}}]),
            "invalid_vectors_type",
            "Index `v`: Bad embedder configuration in the document with id: `10`. Expected `._vectors.e` to be an array of floats, an array of arrays of floats, or an object with at least the field `regenerate`, but got the string `abc`",
        ),
        (
            json!([{"id": 10, "_vectors": {"e": {"embeddings": [1, 2, 3]}}}]),
            "invalid_vectors_type",
            "Index `v`: Bad embedder configuration in the document with id: `10`. Missing field `._vectors.e.regenerate`\n  - note: `._vectors.e` must be an array of floats, an array of arrays of floats, or an object with field `regenerate`",
        ),
        (
            json!([{"id": 10, "_vectors": {"e": [[1, 2, 3], [1, 2]]}}]),
            "invalid_vector_dimensions",
            "Index `v`: Invalid vector dimensions in document with id `10` in `._vectors.e`.\n  - note: embedding #1 has dimensions 2\n  - note: embedder `e` requires 3",
        ),
        (
            json!([{"id": 10, "t": "no vectors"}]),
            "vector_embedding_error",
            "Index `v`: While embedding documents for embedder `e`: no vectors provided for document `10`\n- Note: `e` has `source: userProvided`, so documents must provide embeddings as an array in `_vectors.e`.\n- Hint: opt-out for a document with `_vectors.e: null`",
        ),
    ];
    for (documents, code, message) in cases {
        // A good document in the same payload is not applied either.
        let mut payload = vec![json!({"id": 11, "_vectors": {"e": [0, 1, 0]}})];
        payload.extend(documents.as_array().unwrap().iter().cloned());
        let failed = task(
            &server,
            "POST",
            "/indexes/v/documents",
            &Value::Array(payload),
        );
        assert_eq!(failed["status"], "failed", "{failed}");
        assert_eq!(failed["error"]["code"], code, "{failed}");
        assert_eq!(failed["error"]["message"], message, "{failed}");
    }
    let stats = server.send("GET", "/indexes/v/stats", None).json();
    assert_eq!(stats["numberOfDocuments"], 1, "{stats}");
    assert_eq!(stats["numberOfEmbeddings"], 1, "{stats}");
    // A stored document replaced without `_vectors` keeps its embeddings.
    succeeded(
        &server,
        "POST",
        "/indexes/v/documents",
        &json!([{"id": 1, "t": "new"}]),
    );
    succeeded(
        &server,
        "PUT",
        "/indexes/v/documents",
        &json!([{"id": 1, "u": "more"}]),
    );
    let kept = server
        .send("GET", "/indexes/v/documents/1?retrieveVectors=true", None)
        .json();
    assert_eq!(
        kept,
        json!({"id": 1, "t": "new", "u": "more", "_vectors": {"e": {"embeddings": [[1.0, 2.0, 3.0]], "regenerate": false}}})
    );
    // Deleting every document deletes every vector.
    succeeded(&server, "DELETE", "/indexes/v/documents", &json!(null));
    let stats = server.send("GET", "/indexes/v/stats", None).json();
    assert_eq!(stats["numberOfEmbeddings"], 0, "{stats}");
    succeeded(
        &server,
        "POST",
        "/indexes/v/documents",
        &json!([{"id": 2, "_vectors": {"e": [0, 0, 1]}}]),
    );
    let stats = server.send("GET", "/indexes/v/stats", None).json();
    assert_eq!(stats["numberOfEmbeddings"], 1, "{stats}");
}

#[test]
fn semantic_and_hybrid_search_rank_and_score_as_meilisearch() {
    let server = server();
    user_provided(&server, "v", 3);
    succeeded(&server, "POST", "/indexes/v/documents", &five_documents());
    let semantic = post(
        &server,
        "/indexes/v/search",
        &json!({"vector": [1, 0.1, 0], "hybrid": {"embedder": "e", "semanticRatio": 1.0},
                "showRankingScore": true, "showRankingScoreDetails": true}),
    );
    assert_eq!(ids(&semantic["hits"]), vec![2, 1, 3, 4, 5], "{semantic}");
    assert!(close(
        &semantic["hits"][0]["_rankingScore"],
        0.997_518_539_428_710_9
    ));
    let details = &semantic["hits"][0]["_rankingScoreDetails"]["vectorSort"];
    assert_eq!(details["order"], 0, "{details}");
    assert!(
        close(&details["similarity"], 0.997_518_539_428_710_9),
        "{details}"
    );
    assert_eq!(semantic["hits"][2]["_rankingScore"], json!(0.5));
    assert_eq!(
        semantic["hits"][3]["_rankingScoreDetails"],
        json!({"vectorSort": {"order": 0, "similarity": null}})
    );
    assert_eq!(semantic["estimatedTotalHits"], 5);
    assert_eq!(semantic["semanticHitCount"], 5);
    let hybrid = post(
        &server,
        "/indexes/v/search",
        &json!({"q": "b", "vector": [1, 0.1, 0], "hybrid": {"embedder": "e"},
                "showRankingScore": true, "retrieveVectors": true}),
    );
    assert_eq!(ids(&hybrid["hits"]), vec![2, 1, 3, 4, 5], "{hybrid}");
    assert_eq!(
        hybrid["hits"][0]["_rankingScore"],
        json!(1.0),
        "the keyword hit"
    );
    assert_eq!(hybrid["semanticHitCount"], 4, "{hybrid}");
    assert_eq!(hybrid["queryVector"], json!([1.0, 0.1, 0.0]));
    let keys: Vec<&String> = hybrid.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "hits",
            "query",
            "queryVector",
            "processingTimeMs",
            "limit",
            "offset",
            "estimatedTotalHits",
            "requestUid",
            "semanticHitCount"
        ]
    );
    // A window and a filter apply to the semantic ranking.
    succeeded(
        &server,
        "PATCH",
        "/indexes/v/settings",
        &json!({"filterableAttributes": ["id"]}),
    );
    let filtered = post(
        &server,
        "/indexes/v/search",
        &json!({"vector": [1, 0, 0], "hybrid": {"embedder": "e", "semanticRatio": 1},
                "filter": "id > 1", "offset": 1, "limit": 2}),
    );
    assert_eq!(ids(&filtered["hits"]), vec![3, 4], "{filtered}");
    assert_eq!(filtered["estimatedTotalHits"], 4);
    // A `userProvided` embedder cannot embed `q`: the keyword hits answer.
    let keyword = post(
        &server,
        "/indexes/v/search",
        &json!({"q": "c", "hybrid": {"embedder": "e"}}),
    );
    assert_eq!(ids(&keyword["hits"]), vec![3], "{keyword}");
    assert_eq!(keyword["semanticHitCount"], 0);
    let errors = [
        (
            json!({"vector": [1, 2], "hybrid": {"embedder": "e"}}),
            "invalid_vector_dimensions",
            "Invalid vector dimensions: expected: `3`, found: `2`.",
        ),
        (
            json!({"vector": [1, 0, 0], "hybrid": {"embedder": "nope"}}),
            "invalid_search_embedder",
            "Cannot find embedder with name `nope`.",
        ),
    ];
    for (body, code, message) in errors {
        let response = server.send("POST", "/indexes/v/search", Some(&body));
        assert_eq!(response.status, 400, "{}", response.text());
        assert_eq!(response.json()["code"], code);
        assert_eq!(response.json()["message"], message);
    }
}

#[test]
fn similar_documents_leave_out_the_document_and_those_without_vectors() {
    let server = server();
    user_provided(&server, "v", 3);
    succeeded(&server, "POST", "/indexes/v/documents", &five_documents());
    let similar = post(
        &server,
        "/indexes/v/similar",
        &json!({"id": 1, "embedder": "e", "showRankingScore": true}),
    );
    assert_eq!(ids(&similar["hits"]), vec![3, 2], "{similar}");
    assert!(close(
        &similar["hits"][0]["_rankingScore"],
        0.900_891_840_457_916_3
    ));
    assert_eq!(similar["id"], "1");
    assert_eq!(similar["estimatedTotalHits"], 4);
    let keys: Vec<&String> = similar.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "hits",
            "id",
            "processingTimeMs",
            "limit",
            "offset",
            "estimatedTotalHits"
        ]
    );
    let by_get = server
        .send(
            "GET",
            "/indexes/v/similar?id=1&embedder=e&limit=1&retrieveVectors=true",
            None,
        )
        .json();
    assert_eq!(
        by_get["hits"],
        json!([{"id": 3, "t": "c", "_vectors": {"e": {"embeddings": [[0.0, 0.0, 1.0]], "regenerate": false}}}])
    );
    let errors = [
        (
            json!({"id": 99, "embedder": "e"}),
            "not_found_similar_id",
            "Document `99` not found.",
        ),
        (json!({"id": 1}), "bad_request", "Missing field `embedder`"),
        (
            json!({"id": 1, "embedder": "nope"}),
            "invalid_similar_embedder",
            "Cannot find embedder with name `nope`.",
        ),
    ];
    for (body, code, message) in errors {
        let response = server.send("POST", "/indexes/v/similar", Some(&body));
        assert_eq!(response.status, 400, "{}", response.text());
        assert_eq!(response.json()["code"], code);
        assert_eq!(response.json()["message"], message);
    }
    let detailed = post(
        &server,
        "/indexes/v/similar",
        &json!({"id": 1, "embedder": "e", "showPerformanceDetails": true}),
    );
    let stages: Vec<&String> = detailed["performanceDetails"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(stages, ["search > format", "search"], "{detailed}");
    let invalid = server.send(
        "POST",
        "/indexes/v/similar",
        Some(&json!({"id": "a b", "embedder": "e"})),
    );
    assert_eq!(
        invalid.json()["code"],
        "invalid_similar_id",
        "{}",
        invalid.text()
    );
}

/// Deterministic pseudo-random vectors (SplitMix64).
fn random_vectors(count: usize, dimensions: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut state = seed;
    let mut next = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut value = state;
        value = (value ^ (value >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        value = (value ^ (value >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        value ^= value >> 31;
        (value >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    };
    (0..count)
        .map(|_| (0..dimensions).map(|_| next()).collect())
        .collect()
}

fn cosine(left: &[f32], right: &[f32]) -> f32 {
    let dot: f32 = left.iter().zip(right).map(|(a, b)| a * b).sum();
    let norm = |vector: &[f32]| vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (norm(left) * norm(right))
}

#[test]
fn recall_at_ten_against_brute_force_is_at_least_ninety_five_percent() {
    const DOCUMENTS: usize = 3_000;
    const DIMENSIONS: usize = 24;
    const QUERIES: usize = 40;
    let server = server();
    user_provided(&server, "r", DIMENSIONS);
    let vectors = random_vectors(DOCUMENTS, DIMENSIONS, 7);
    let documents: Vec<Value> = vectors
        .iter()
        .enumerate()
        .map(|(id, vector)| json!({"id": id, "_vectors": {"e": vector}}))
        .collect();
    succeeded(
        &server,
        "POST",
        "/indexes/r/documents",
        &Value::Array(documents),
    );
    let mut found = 0;
    for query in random_vectors(QUERIES, DIMENSIONS, 99) {
        let mut exact: Vec<(usize, f32)> = vectors
            .iter()
            .enumerate()
            .map(|(id, vector)| (id, cosine(&query, vector)))
            .collect();
        exact.sort_by(|left, right| right.1.total_cmp(&left.1));
        let truth: Vec<i64> = exact.iter().take(10).map(|(id, _)| *id as i64).collect();
        let answer = post(
            &server,
            "/indexes/r/search",
            &json!({"vector": query, "hybrid": {"embedder": "e", "semanticRatio": 1}, "limit": 10}),
        );
        found += ids(&answer["hits"])
            .iter()
            .filter(|id| truth.contains(id))
            .count();
    }
    let recall = found as f64 / (QUERIES * 10) as f64;
    assert!(recall >= 0.95, "recall@10 {recall}");
}

/// Embeddings whose normalised form differs from what was sent: in the last bits, wholly,
/// or past what `f32` squares hold.
fn awkward_embeddings() -> Vec<(i64, Value)> {
    vec![
        (1, json!([[0.1, -0.7, 1e-7, -123.456]])),
        (2, json!([[3.0, 4.0, 0.0, 0.0], [-2.5, 0.3333, 7.0, 1e30]])),
        (3, json!([[0.2, 0.2, 0.2, 0.2]])),
    ]
}

/// Every document's `_vectors.e.embeddings`, as listed with `retrieveVectors`.
fn listed_embeddings(server: &Server, index: &str) -> Vec<(i64, Value)> {
    let listed = server
        .send(
            "GET",
            &format!("/indexes/{index}/documents?retrieveVectors=true"),
            None,
        )
        .json();
    listed["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|document| {
            (
                document["id"].as_i64().unwrap(),
                document["_vectors"]["e"]["embeddings"].clone(),
            )
        })
        .collect()
}

/// Document 1's own vector finds it first, at a semantic score of 1.
fn finds_itself(server: &Server, index: &str) {
    let search = json!({
        "vector": [0.1, -0.7, 1e-7, -123.456],
        "hybrid": {"embedder": "e", "semanticRatio": 1},
        "limit": 3,
        "showRankingScore": true,
    });
    let found = post(server, &format!("/indexes/{index}/search"), &search);
    assert_eq!(ids(&found["hits"])[0], 1, "{found}");
    assert!(
        found["hits"][0]["_rankingScore"]
            .as_f64()
            .is_some_and(|score| score > 0.999_99),
        "{found}"
    );
}

#[test]
fn embeddings_come_back_bit_for_bit_through_quantization_replacement_and_restart() {
    let scratch = tempfile::tempdir().unwrap();
    let directory = scratch.path().join("data.ms");
    let server = server_on(Some(&directory));
    user_provided(&server, "v", 4);
    let documents: Vec<Value> = awkward_embeddings()
        .into_iter()
        .map(|(id, embeddings)| json!({"id": id, "_vectors": {"e": embeddings}}))
        .collect();
    succeeded(&server, "POST", "/indexes/v/documents", &json!(documents));
    assert_eq!(listed_embeddings(&server, "v"), awkward_embeddings());
    finds_itself(&server, "v");
    // Quantization moves every embedding into a new graph, which must keep them as sent.
    succeeded(
        &server,
        "PATCH",
        "/indexes/v/settings",
        &json!({"embedders": {"e": {"binaryQuantized": true}}}),
    );
    assert_eq!(listed_embeddings(&server, "v"), awkward_embeddings());
    finds_itself(&server, "v");
    // A replaced document's new embedding is the one read back; the others are untouched.
    let replaced = json!([[-1.5, 2.25, 1e-3, 9.0]]);
    succeeded(
        &server,
        "POST",
        "/indexes/v/documents",
        &json!([{"id": 3, "_vectors": {"e": replaced}}]),
    );
    let mut expected = awkward_embeddings();
    expected[2].1 = replaced;
    assert_eq!(listed_embeddings(&server, "v"), expected);
    drop(server);
    let server = server_on(Some(&directory));
    assert_eq!(listed_embeddings(&server, "v"), expected);
    finds_itself(&server, "v");
    let one = server
        .send("GET", "/indexes/v/documents/2?retrieveVectors=true", None)
        .json();
    assert_eq!(one["_vectors"]["e"]["embeddings"], expected[1].1, "{one}");
}

#[test]
fn embedder_changes_adopt_drop_and_keep_vectors_across_restarts() {
    let scratch = tempfile::tempdir().unwrap();
    let directory = scratch.path().join("data.ms");
    let server = server_on(Some(&directory));
    // Vectors given before the embedder exists are kept, then adopted by it.
    succeeded(
        &server,
        "POST",
        "/indexes/v/documents",
        &json!([{"id": 1, "_vectors": {"e": [1, 0, 0]}}, {"id": 2, "_vectors": {"e": [0, 1, 0]}}]),
    );
    user_provided(&server, "v", 3);
    let stats = server.send("GET", "/indexes/v/stats", None).json();
    assert_eq!(stats["numberOfEmbeddings"], 2, "{stats}");
    // Binary quantization keeps the embeddings.
    succeeded(
        &server,
        "PATCH",
        "/indexes/v/settings",
        &json!({"embedders": {"e": {"binaryQuantized": true}}}),
    );
    let search =
        json!({"vector": [0, 1, 0.1], "hybrid": {"embedder": "e", "semanticRatio": 1}, "limit": 1});
    assert_eq!(
        ids(&post(&server, "/indexes/v/search", &search)["hits"]),
        vec![2]
    );
    succeeded(&server, "DELETE", "/indexes/v/documents/2", &json!(null));
    let stats = server.send("GET", "/indexes/v/stats", None).json();
    assert_eq!(stats["numberOfEmbeddings"], 1, "{stats}");
    drop(server);
    let server = server_on(Some(&directory));
    assert_eq!(
        ids(&post(&server, "/indexes/v/search", &search)["hits"]),
        vec![1]
    );
    // Dropping the embedder drops its vectors.
    succeeded(
        &server,
        "PATCH",
        "/indexes/v/settings",
        &json!({"embedders": {"e": null}}),
    );
    let stats = server.send("GET", "/indexes/v/stats", None).json();
    assert_eq!(stats["numberOfEmbeddings"], 0, "{stats}");
    succeeded(&server, "DELETE", "/indexes/v/documents", &json!(null));
}

#[test]
fn a_kill_during_vector_indexing_leaves_graph_and_documents_agreeing() {
    const BATCHES: usize = 6;
    const PER_BATCH: usize = 1_500;
    const DIMENSIONS: usize = 16;
    let scratch = tempfile::tempdir().unwrap();
    let directory = scratch.path().join("data.ms");
    let server = server_on(Some(&directory));
    user_provided(&server, "k", DIMENSIONS);
    let vectors = random_vectors(BATCHES * PER_BATCH, DIMENSIONS, 3);
    let mut last = Value::Null;
    for batch in 0..BATCHES {
        let documents: Vec<Value> = (batch * PER_BATCH..(batch + 1) * PER_BATCH)
            .map(|id| json!({"id": id, "_vectors": {"e": vectors[id]}}))
            .collect();
        let response = server.send(
            "POST",
            "/indexes/k/documents",
            Some(&Value::Array(documents)),
        );
        assert_eq!(response.status, 202);
        last = response.json()["taskUid"].clone();
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    server.kill();
    let server = server_on(Some(&directory));
    let task = server.wait_task(&last);
    assert_eq!(task["status"], "succeeded", "{task}");
    let stats = server.send("GET", "/indexes/k/stats", None).json();
    assert_eq!(
        stats["numberOfDocuments"],
        (BATCHES * PER_BATCH) as u64,
        "{stats}"
    );
    assert_eq!(
        stats["numberOfEmbeddings"], stats["numberOfDocuments"],
        "{stats}"
    );
    assert_eq!(
        stats["numberOfEmbeddedDocuments"], stats["numberOfDocuments"],
        "{stats}"
    );
    let nearest = post(
        &server,
        "/indexes/k/search",
        &json!({"vector": vectors[4_321], "hybrid": {"embedder": "e", "semanticRatio": 1}, "limit": 1}),
    );
    assert_eq!(ids(&nearest["hits"]), vec![4_321]);
}

#[tokio::test]
async fn the_official_sdk_runs_hybrid_and_similar_searches() {
    let server = server();
    user_provided(&server, "sdk", 3);
    succeeded(&server, "POST", "/indexes/sdk/documents", &five_documents());
    let client = Client::new(server.url(), Some(MASTER_KEY)).unwrap();
    let index = client.index("sdk");
    let vector = [0.0_f32, 0.1, 1.0];
    let results = index
        .search()
        .with_vector(&vector)
        .with_hybrid("e", 1.0)
        .with_limit(2)
        .execute::<Value>()
        .await
        .unwrap();
    let found: Vec<i64> = results
        .hits
        .iter()
        .map(|hit| hit.result["id"].as_i64().unwrap())
        .collect();
    assert_eq!(found, vec![3, 1]);
    let similar = index
        .similar_search("3", "e")
        .execute::<Value>()
        .await
        .unwrap();
    let found: Vec<i64> = similar
        .hits
        .iter()
        .map(|hit| hit.result["id"].as_i64().unwrap())
        .collect();
    assert_eq!(found, vec![1, 2]);
}

#[test]
fn multi_search_and_federation_carry_semantic_queries_as_meilisearch() {
    let server = server();
    user_provided(&server, "w", 3);
    succeeded(&server, "POST", "/indexes/w/documents", &five_documents());
    let separate = post(
        &server,
        "/multi-search",
        &json!({"queries": [
            {"indexUid": "w", "vector": [1, 0, 0], "hybrid": {"embedder": "e", "semanticRatio": 1}, "limit": 2},
            {"indexUid": "w", "q": "c", "vector": [0, 1, 0], "hybrid": {"embedder": "e"}, "limit": 2},
        ]}),
    );
    assert_eq!(ids(&separate["results"][0]["hits"]), vec![2, 1]);
    assert_eq!(separate["results"][0]["semanticHitCount"], 2);
    assert_eq!(ids(&separate["results"][1]["hits"]), vec![2, 3]);
    assert_eq!(separate["results"][1]["semanticHitCount"], 1);
    let federated = post(
        &server,
        "/multi-search",
        &json!({"federation": {"limit": 3}, "queries": [
            {"indexUid": "w", "vector": [1, 0, 0], "hybrid": {"embedder": "e", "semanticRatio": 1}},
            {"indexUid": "w", "q": "c"},
        ]}),
    );
    assert_eq!(ids(&federated["hits"]), vec![2, 3, 1], "{federated}");
    assert_eq!(federated["hits"][1]["_federation"]["queriesPosition"], 1);
    // The documents of one index count once, whichever queries match them.
    assert_eq!(federated["estimatedTotalHits"], 5, "{federated}");
    assert_eq!(federated["semanticHitCount"], 2, "{federated}");
}

#[test]
fn distinct_keeps_the_closest_document_of_each_value_across_shards() {
    let server = server();
    user_provided(&server, "d", 2);
    succeeded(
        &server,
        "PATCH",
        "/indexes/d/settings",
        &json!({"filterableAttributes": ["group"]}),
    );
    let documents: Vec<Value> = (0..30)
        .map(|id| {
            let angle = id as f32 / 30.0;
            json!({"id": id, "group": id % 3, "_vectors": {"e": [1.0 - angle, angle]}})
        })
        .collect();
    succeeded(
        &server,
        "POST",
        "/indexes/d/documents",
        &Value::Array(documents),
    );
    let answer = post(
        &server,
        "/indexes/d/search",
        &json!({"vector": [1, 0], "hybrid": {"embedder": "e", "semanticRatio": 1},
                "distinct": "group", "limit": 5}),
    );
    assert_eq!(ids(&answer["hits"]), vec![0, 1, 2], "{answer}");
}

/// Thirty closest documents share one value and the others hold one each: whatever shards
/// hold them, a semantic page with distinct is full (the closest of the shared value, then
/// the next closest documents), and an exact count counts each value once, as one index does.
#[test]
fn distinct_fills_the_page_when_the_closest_documents_share_a_value() {
    let server = server();
    user_provided(&server, "d", 2);
    succeeded(
        &server,
        "PATCH",
        "/indexes/d/settings",
        &json!({"filterableAttributes": ["group"], "distinctAttribute": "group"}),
    );
    let documents: Vec<Value> = (0..60)
        .map(|id| {
            let angle = id as f32 / 60.0;
            let group = if id < 30 {
                "near".to_string()
            } else {
                format!("g{id}")
            };
            json!({"id": id, "group": group, "_vectors": {"e": [1.0 - angle, angle]}})
        })
        .collect();
    succeeded(
        &server,
        "POST",
        "/indexes/d/documents",
        &Value::Array(documents),
    );
    let semantic = json!({"vector": [1, 0], "hybrid": {"embedder": "e", "semanticRatio": 1}});
    let mut body = semantic.clone();
    body["limit"] = json!(5);
    let answer = post(&server, "/indexes/d/search", &body);
    assert_eq!(ids(&answer["hits"]), vec![0, 30, 31, 32, 33], "{answer}");

    let mut body = semantic.clone();
    body["hitsPerPage"] = json!(5);
    body["page"] = json!(2);
    let answer = post(&server, "/indexes/d/search", &body);
    assert_eq!(ids(&answer["hits"]), vec![34, 35, 36, 37, 38], "{answer}");
    assert_eq!(answer["totalHits"], 31, "{answer}");

    // `similar` ranks the same way: the document itself left out.
    let answer = post(
        &server,
        "/indexes/d/similar",
        &json!({"id": 0, "embedder": "e", "limit": 3}),
    );
    assert_eq!(ids(&answer["hits"]), vec![1, 30, 31], "{answer}");
}
