//! Every experimental toggle this server gates, checked off and on against the real binary:
//! `containsFilter` (the `CONTAINS` operator wherever a filter goes), `multimodal` (`media`,
//! vector filters, embedder fragments), `compositeEmbedders`, `editDocumentsByFunction`,
//! `getTaskDocumentsRoute`, and `foreignKeys` (the setting, its display, and the hydration
//! of search hits from the foreign index in single, multi and federated searches). Messages
//! and expected documents are Meilisearch 1.41's.

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]

use crate::common;

use common::{MASTER_KEY, Options, Server, request};
use serde_json::{Value, json};

const CONTAINS_MESSAGE: &str = "Using `CONTAINS` in a filter requires enabling the `contains filter` experimental feature. See https://github.com/orgs/meilisearch/discussions/763";
const VECTOR_FILTER_MESSAGE: &str = "using a vector filter requires enabling the `multimodal` experimental feature. See https://github.com/orgs/meilisearch/discussions/846";

fn server_with(extra_arguments: &[&str]) -> Server {
    Server::start_with(Options {
        master_key: Some(MASTER_KEY.to_owned()),
        extra_arguments: extra_arguments
            .iter()
            .map(|&text| text.to_owned())
            .collect(),
        ..Options::default()
    })
}

fn set_features(server: &Server, features: Value) {
    let response = server.send("PATCH", "/experimental-features", Some(&features));
    assert_eq!(response.status, 200, "{}", response.text());
}

/// Sends a task-registering request and waits for the task; answers the finished task.
fn run_task(server: &Server, method: &str, path: &str, body: &Value) -> Value {
    let response = server.send(method, path, Some(body));
    assert_eq!(response.status, 202, "{method} {path}: {}", response.text());
    server.wait_task(&response.json()["taskUid"])
}

fn succeeded(server: &Server, method: &str, path: &str, body: &Value) {
    let task = run_task(server, method, path, body);
    assert_eq!(task["status"], "succeeded", "{method} {path}: {task}");
}

/// The error object of a `feature_not_enabled` refusal with `message`.
fn feature_error(message: &str) -> Value {
    json!({
        "message": message,
        "code": "feature_not_enabled",
        "type": "invalid_request",
        "link": "https://docs.meilisearch.com/errors#feature_not_enabled"
    })
}

fn assert_refused(response: &common::HttpResponse, message: &str, context: &str) {
    assert_eq!(response.status, 400, "{context}: {}", response.text());
    assert_eq!(response.json(), feature_error(message), "{context}");
}

/// An index `docs` with a filterable `doggo`, a user-provided embedder and two documents.
fn docs_index(server: &Server) {
    succeeded(
        server,
        "POST",
        "/indexes",
        &json!({"uid": "docs", "primaryKey": "id"}),
    );
    succeeded(
        server,
        "PATCH",
        "/indexes/docs/settings",
        &json!({
            "filterableAttributes": ["doggo"],
            "embedders": {"default": {"source": "userProvided", "dimensions": 2}}
        }),
    );
    succeeded(
        server,
        "POST",
        "/indexes/docs/documents",
        &json!([
            {"id": 1, "doggo": "kefir the dog", "_vectors": {"default": [1.0, 0.0]}},
            {"id": 2, "doggo": "echo", "_vectors": {"default": [0.9, 0.1]}},
            {"id": 3, "doggo": "kefirou", "_vectors": {"default": null}}
        ]),
    );
}

/// Every route that takes a filter, with `filter` in it: (description, method, path, body).
fn filter_routes(filter: &str) -> Vec<(&'static str, &'static str, String, Option<Value>)> {
    let encoded: String = url_encode(filter);
    vec![
        (
            "search",
            "POST",
            "/indexes/docs/search".to_owned(),
            Some(json!({"filter": filter})),
        ),
        (
            "search by GET",
            "GET",
            format!("/indexes/docs/search?filter={encoded}"),
            None,
        ),
        (
            "facet search",
            "POST",
            "/indexes/docs/facet-search".to_owned(),
            Some(json!({"facetName": "doggo", "filter": filter})),
        ),
        (
            "similar",
            "POST",
            "/indexes/docs/similar".to_owned(),
            Some(json!({"id": 2, "embedder": "default", "filter": filter})),
        ),
        (
            "similar by GET",
            "GET",
            format!("/indexes/docs/similar?id=2&embedder=default&filter={encoded}"),
            None,
        ),
        (
            "documents fetch",
            "POST",
            "/indexes/docs/documents/fetch".to_owned(),
            Some(json!({"filter": filter})),
        ),
        (
            "documents list",
            "GET",
            format!("/indexes/docs/documents?filter={encoded}"),
            None,
        ),
        (
            "delete by filter",
            "POST",
            "/indexes/docs/documents/delete".to_owned(),
            Some(json!({"filter": filter})),
        ),
        (
            "edit by function",
            "POST",
            "/indexes/docs/documents/edit".to_owned(),
            Some(json!({"function": "doc.seen = true", "filter": filter})),
        ),
    ]
}

fn url_encode(text: &str) -> String {
    text.bytes()
        .map(|byte| match byte {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => {
                (byte as char).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect()
}

fn send(server: &Server, method: &str, path: &str, body: Option<&Value>) -> common::HttpResponse {
    match body {
        Some(body) => server.send(method, path, Some(body)),
        None => server.raw(&request(method, path, Some(MASTER_KEY))),
    }
}

#[test]
fn contains_is_refused_in_every_filter_until_its_feature_is_on() {
    let server = server_with(&[]);
    docs_index(&server);
    set_features(&server, json!({"editDocumentsByFunction": true}));
    for filter in [
        "doggo CONTAINS kefir",
        "doggo != echo AND doggo CONTAINS kefir",
    ] {
        let column = filter.find("CONTAINS").expect("the keyword") + 1;
        let expected = format!(
            "{CONTAINS_MESSAGE}\n{column}:{} {filter}",
            column + "CONTAINS".len()
        );
        for (what, method, path, body) in filter_routes(filter) {
            let response = send(&server, method, &path, body.as_ref());
            assert_refused(&response, &expected, what);
        }
        for federation in [None, Some(json!({}))] {
            let mut body = json!({"queries": [{"indexUid": "docs", "q": "", "filter": filter}]});
            if let Some(federation) = &federation {
                body["federation"] = federation.clone();
            }
            let response = server.send("POST", "/multi-search", Some(&body));
            assert_refused(
                &response,
                &format!("Inside `.queries[0]`: {expected}"),
                "multi-search",
            );
        }
    }
    // The array form points into the string that holds the keyword.
    let response = server.send(
        "POST",
        "/indexes/docs/search",
        Some(&json!({"filter": ["doggo != echo", ["doggo CONTAINS kefir"]]})),
    );
    assert_refused(
        &response,
        &format!("{CONTAINS_MESSAGE}\n7:15 doggo CONTAINS kefir"),
        "array filter",
    );
    // STARTS WITH is not gated.
    let response = server.send(
        "POST",
        "/indexes/docs/search",
        Some(&json!({"filter": "doggo STARTS WITH kefir"})),
    );
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(response.json()["hits"].as_array().map(Vec::len), Some(2));

    set_features(&server, json!({"containsFilter": true}));
    for (what, method, path, body) in filter_routes("doggo CONTAINS dog") {
        let response = send(&server, method, &path, body.as_ref());
        assert!(
            response.status == 200 || response.status == 202,
            "{what}: {} {}",
            response.status,
            response.text()
        );
        if what == "search" || what == "documents fetch" {
            let key = if what == "search" { "hits" } else { "results" };
            let ids: Vec<Value> = response.json()[key]
                .as_array()
                .expect("a list")
                .iter()
                .map(|hit| hit["id"].clone())
                .collect();
            assert_eq!(ids, [json!(1)], "{what}");
        }
        if response.status == 202 {
            let task = server.wait_task(&response.json()["taskUid"]);
            assert_eq!(task["status"], "succeeded", "{what}: {task}");
        }
    }
    let left = server
        .send("GET", "/indexes/docs/documents?fields=id", None)
        .json();
    assert_eq!(left["results"], json!([{"id": 2}, {"id": 3}]), "{left}");

    // The command-line flag forces the feature on without it being stored.
    let flagged = server_with(&["--experimental-contains-filter"]);
    docs_index(&flagged);
    let response = flagged.send(
        "POST",
        "/indexes/docs/search",
        Some(&json!({"filter": "doggo CONTAINS kefir"})),
    );
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(response.json()["hits"].as_array().map(Vec::len), Some(2));
}

#[test]
fn multimodal_gates_media_vector_filters_and_fragments() {
    let server = server_with(&[]);
    docs_index(&server);
    set_features(&server, json!({"editDocumentsByFunction": true}));
    let media_message = "passing `media` in a search query requires enabling the `multimodal` experimental feature. See https://github.com/orgs/meilisearch/discussions/846";
    let media = json!({"media": {"image": "a.png"}, "hybrid": {"embedder": "default", "semanticRatio": 0.0}});
    let response = server.send("POST", "/indexes/docs/search", Some(&media));
    assert_refused(&response, media_message, "media");
    // The kind of search is checked first, as Meilisearch checks it.
    let response = server.send(
        "POST",
        "/indexes/docs/search",
        Some(&json!({"media": {"image": "a.png"}})),
    );
    assert_eq!(response.json()["code"], "missing_search_hybrid");
    let response = server.send(
        "POST",
        "/indexes/docs/search",
        Some(&json!({"media": {}, "vector": [1.0, 0.0], "hybrid": {"embedder": "default"}})),
    );
    assert_eq!(response.json()["code"], "invalid_search_media_and_vector");
    let response = server.send(
        "POST",
        "/indexes/docs/facet-search",
        Some(&json!({"facetName": "doggo", "media": {}, "hybrid": {"embedder": "default", "semanticRatio": 0.0}})),
    );
    assert_refused(&response, media_message, "facet search media");
    let response = server.send(
        "POST",
        "/multi-search",
        Some(&json!({"queries": [{"indexUid": "docs", "media": {}, "hybrid": {"embedder": "default", "semanticRatio": 0.0}}]})),
    );
    assert_refused(
        &response,
        &format!("Inside `.queries[0]`: {media_message}"),
        "multi-search media",
    );
    for filter in ["_vectors EXISTS", "doggo = echo OR _vectors.default EXISTS"] {
        let column = filter.find("_vectors").expect("the vector filter") + 1;
        let expected = format!(
            "{VECTOR_FILTER_MESSAGE}\n{column}:{} {filter}",
            column + "_vectors".len()
        );
        for (what, method, path, body) in filter_routes(filter) {
            let response = send(&server, method, &path, body.as_ref());
            assert_refused(&response, &expected, what);
        }
    }
    for (field, action) in [
        ("indexingFragments", "setting `indexingFragments`"),
        ("searchFragments", "setting `searchFragments`"),
    ] {
        let mut embedder = json!({
            "source": "rest",
            "url": "http://localhost:1/embed",
            "request": {"input": "{{fragment}}"},
            "response": {"embedding": "{{embedding}}"},
            "dimensions": 2
        });
        embedder[field] = json!({"text": {"value": "{{doc.doggo}}"}});
        let response = server.send(
            "PATCH",
            "/indexes/docs/settings",
            Some(&json!({"embedders": {"fragmented": embedder}})),
        );
        assert_refused(
            &response,
            &format!(
                "{action} requires enabling the `multimodal` experimental feature. See https://github.com/orgs/meilisearch/discussions/846"
            ),
            field,
        );
    }

    set_features(&server, json!({"multimodal": true}));
    let response = server.send("POST", "/indexes/docs/search", Some(&media));
    assert_eq!(response.status, 200, "{}", response.text());
    for (filter, expected) in [
        ("_vectors EXISTS", json!([1, 2])),
        ("_vectors.default EXISTS", json!([1, 2])),
        ("NOT _vectors EXISTS", json!([3])),
        ("_vectors.default.documentTemplate EXISTS", json!([])),
        ("_vectors.default.regenerate EXISTS", json!([])),
        (
            "_vectors.default.userProvided EXISTS AND doggo != kefirou",
            json!([1, 2]),
        ),
    ] {
        let response = server.send(
            "POST",
            "/indexes/docs/search",
            Some(&json!({"filter": filter, "attributesToRetrieve": ["id"], "sort": []})),
        );
        assert_eq!(response.status, 200, "{filter}: {}", response.text());
        let mut ids: Vec<u64> = response.json()["hits"]
            .as_array()
            .expect("hits")
            .iter()
            .filter_map(|hit| hit["id"].as_u64())
            .collect();
        ids.sort_unstable();
        assert_eq!(json!(ids), expected, "{filter}");
    }
    for (filter, message) in [
        (
            "_vectors.other EXISTS",
            "Index `docs`: The embedder `other` does not exist. Available embedders are: `default`.\n10:15 _vectors.other EXISTS",
        ),
        (
            "_vectors.default.fragments.basic EXISTS",
            "Index `docs`: The fragment `basic` does not exist on embedder `default`. This embedder does not have any configured fragments.\n28:33 _vectors.default.fragments.basic EXISTS",
        ),
    ] {
        let response = server.send(
            "POST",
            "/indexes/docs/search",
            Some(&json!({"filter": filter})),
        );
        assert_eq!(response.status, 400, "{filter}");
        assert_eq!(response.json()["message"], message, "{filter}");
        assert_eq!(response.json()["code"], "invalid_search_filter", "{filter}");
    }
}

#[test]
fn composite_embedders_are_gated_by_each_of_their_fields() {
    let server = server_with(&[]);
    succeeded(&server, "POST", "/indexes", &json!({"uid": "docs"}));
    let message = |action: &str| {
        format!(
            "{action} requires enabling the `composite embedders` experimental feature. See https://github.com/orgs/meilisearch/discussions/816"
        )
    };
    for (embedder, action) in [
        (
            json!({"source": "composite"}),
            "using `\"composite\"` as source",
        ),
        (
            json!({"source": "userProvided", "searchEmbedder": {"source": "openAi"}}),
            "setting `searchEmbedder`",
        ),
        (
            json!({"source": "userProvided", "indexingEmbedder": {"source": "openAi"}}),
            "setting `indexingEmbedder`",
        ),
    ] {
        let response = server.send(
            "PATCH",
            "/indexes/docs/settings",
            Some(&json!({"embedders": {"k": embedder}})),
        );
        assert_refused(&response, &message(action), action);
    }
    set_features(&server, json!({"compositeEmbedders": true}));
    let response = server.send(
        "PATCH",
        "/indexes/docs/settings",
        Some(&json!({"embedders": {"k": {"source": "composite"}}})),
    );
    assert_eq!(response.status, 400, "{}", response.text());
    assert_eq!(
        response.json()["code"],
        "invalid_settings_embedders",
        "past the gate"
    );
}

#[test]
fn document_edition_and_task_documents_routes_are_gated() {
    let server = server_with(&[]);
    let task = run_task(
        &server,
        "POST",
        "/indexes/docs/documents",
        &json!([{"id": 1, "name": "kefir"}]),
    );
    let edit = json!({"function": "doc.name = doc.name.to_upper()"});
    let response = server.send("POST", "/indexes/docs/documents/edit", Some(&edit));
    assert_refused(
        &response,
        "Using the documents edit route requires enabling the `edit documents by function` experimental feature. See https://github.com/orgs/meilisearch/discussions/762",
        "edit",
    );
    let documents_path = format!("/tasks/{}/documents", task["uid"]);
    let response = server.raw(&request("GET", &documents_path, Some(MASTER_KEY)));
    assert_refused(
        &response,
        "Getting the documents of an enqueued task requires enabling the `get task documents route` experimental feature. See https://github.com/orgs/meilisearch/discussions/808",
        "task documents",
    );
    set_features(
        &server,
        json!({"editDocumentsByFunction": true, "getTaskDocumentsRoute": true}),
    );
    succeeded(&server, "POST", "/indexes/docs/documents/edit", &edit);
    let document = server.send("GET", "/indexes/docs/documents/1", None).json();
    assert_eq!(document["name"], "KEFIR");
    // Past the gate: the payload of a finished task is gone (the route serves enqueued
    // tasks' payloads, see tests/document_edition.rs).
    let response = server.raw(&request("GET", &documents_path, Some(MASTER_KEY)));
    assert_eq!(response.status, 404, "{}", response.text());
    assert_eq!(response.json()["code"], "task_file_not_found");
}

/// The authors (foreign) index of the foreign-key tests.
fn authors() -> Value {
    json!([
        {"id": "a1", "name": "Alice"},
        {"id": "a2", "name": "Bob"},
        {"id": "a3", "name": "Charlie"},
        {"id": "a4", "name": "Diana"},
        {"id": "a5", "name": "Ethan"},
    ])
}

fn books() -> Value {
    json!([
        {"id": "b1", "title": "Rust in action", "author": "a1", "related_authors": ["a2", "a3"]},
        {"id": "b2", "title": "Captain Marvel story", "author": "a2", "related_authors": ["a3", "a4"]},
        {"id": "b3", "title": "The Great Gatsby", "author": "zz", "related_authors": ["a5", 1.5]},
    ])
}

fn hits(response: &common::HttpResponse) -> Value {
    assert_eq!(response.status, 200, "{}", response.text());
    response.json()["hits"].clone()
}

fn person(id: &str, name: &str) -> Value {
    json!({"id": id, "name": name})
}

#[test]
fn foreign_keys_hydrate_hits_from_the_foreign_index_only_while_enabled() {
    let server = server_with(&[]);
    succeeded(
        &server,
        "POST",
        "/indexes",
        &json!({"uid": "authors", "primaryKey": "id"}),
    );
    succeeded(&server, "POST", "/indexes/authors/documents", &authors());
    succeeded(
        &server,
        "POST",
        "/indexes",
        &json!({"uid": "books", "primaryKey": "id"}),
    );
    let foreign_keys = json!([
        {"foreignIndexUid": "authors", "fieldName": "author"},
        {"foreignIndexUid": "authors", "fieldName": "related_authors"}
    ]);
    let response = server.send(
        "PATCH",
        "/indexes/books/settings",
        Some(&json!({"foreignKeys": foreign_keys})),
    );
    assert_refused(
        &response,
        "setting `foreignKeys` in the index settings requires enabling the `foreign_keys` experimental feature. See https://github.com/orgs/meilisearch/discussions/873",
        "foreign keys setting",
    );
    set_features(&server, json!({"foreignKeys": true}));
    succeeded(
        &server,
        "PATCH",
        "/indexes/books/settings",
        &json!({"foreignKeys": foreign_keys}),
    );
    succeeded(&server, "POST", "/indexes/books/documents", &books());
    let settings = server.send("GET", "/indexes/books/settings", None).json();
    assert_eq!(settings["foreignKeys"], foreign_keys);

    let query = json!({
        "q": "Rust",
        "attributesToRetrieve": ["title", "author", "related_authors"],
        "attributesToHighlight": ["title"]
    });
    let hydrated = json!([{
        "title": "Rust in action",
        "author": person("a1", "Alice"),
        "related_authors": [person("a2", "Bob"), person("a3", "Charlie")],
        "_formatted": {
            "title": "<em>Rust</em> in action",
            "author": person("a1", "Alice"),
            "related_authors": [person("a2", "Bob"), person("a3", "Charlie")]
        }
    }]);
    let search = server.send("POST", "/indexes/books/search", Some(&query));
    assert_eq!(hits(&search), hydrated);
    let mut multi_query = query.clone();
    multi_query["indexUid"] = json!("books");
    let multi = server.send(
        "POST",
        "/multi-search",
        Some(&json!({"queries": [multi_query]})),
    );
    assert_eq!(
        multi.json()["results"][0]["hits"],
        hydrated,
        "{}",
        multi.text()
    );

    // A missing foreign document: `{}` in one search; kept as it was in a federated one.
    // A value that is no document id stays as it was in both.
    let gatsby = json!({"q": "Gatsby", "attributesToRetrieve": ["author", "related_authors"]});
    let single = hits(&server.send("POST", "/indexes/books/search", Some(&gatsby)));
    assert_eq!(
        single,
        json!([{"author": {}, "related_authors": [person("a5", "Ethan"), 1.5]}])
    );
    let mut federated_query = gatsby.clone();
    federated_query["indexUid"] = json!("books");
    let federated = server.send(
        "POST",
        "/multi-search",
        Some(&json!({"federation": {}, "queries": [federated_query]})),
    );
    let mut federated_hits = hits(&federated);
    federated_hits[0]
        .as_object_mut()
        .expect("a hit")
        .remove("_federation");
    assert_eq!(
        federated_hits,
        json!([{"author": "zz", "related_authors": [person("a5", "Ethan"), 1.5]}])
    );
    let captain = json!({
        "federation": {},
        "queries": [{"indexUid": "books", "q": "Captain", "attributesToRetrieve": ["title", "author"], "attributesToHighlight": ["title"]}]
    });
    let mut captain_hits = hits(&server.send("POST", "/multi-search", Some(&captain)));
    assert_eq!(captain_hits[0]["_federation"]["indexUid"], "books");
    captain_hits[0]
        .as_object_mut()
        .expect("a hit")
        .remove("_federation");
    assert_eq!(
        captain_hits,
        json!([{
            "title": "Captain Marvel story",
            "author": person("a2", "Bob"),
            "_formatted": {"title": "<em>Captain</em> Marvel story", "author": person("a2", "Bob")}
        }])
    );

    // The foreign documents show the foreign index's displayed attributes.
    succeeded(
        &server,
        "PATCH",
        "/indexes/authors/settings",
        &json!({"displayedAttributes": ["name"]}),
    );
    let search = server.send(
        "POST",
        "/indexes/books/search",
        Some(&json!({"q": "Rust", "attributesToRetrieve": ["author"]})),
    );
    assert_eq!(hits(&search), json!([{"author": {"name": "Alice"}}]));

    // A foreign index that does not exist fails the search.
    succeeded(
        &server,
        "POST",
        "/indexes",
        &json!({"uid": "orphans", "primaryKey": "id"}),
    );
    succeeded(
        &server,
        "PATCH",
        "/indexes/orphans/settings",
        &json!({"foreignKeys": [{"foreignIndexUid": "nowhere", "fieldName": "author"}]}),
    );
    succeeded(
        &server,
        "POST",
        "/indexes/orphans/documents",
        &json!([{"id": 1, "author": "a1"}]),
    );
    let response = server.send("POST", "/indexes/orphans/search", Some(&json!({})));
    assert_eq!(response.status, 404, "{}", response.text());
    assert_eq!(response.json()["message"], "Index `nowhere` not found.");

    // Off: no hydration, and the setting is hidden.
    set_features(&server, json!({"foreignKeys": false}));
    let search = server.send("POST", "/indexes/books/search", Some(&query));
    assert_eq!(
        hits(&search),
        json!([{
            "title": "Rust in action",
            "author": "a1",
            "related_authors": ["a2", "a3"],
            "_formatted": {
                "title": "<em>Rust</em> in action",
                "author": "a1",
                "related_authors": ["a2", "a3"]
            }
        }])
    );
    let settings = server.send("GET", "/indexes/books/settings", None).json();
    assert!(settings.get("foreignKeys").is_none(), "{settings}");
    let response = server.send("POST", "/indexes/orphans/search", Some(&json!({})));
    assert_eq!(response.status, 200, "{}", response.text());
}
