//! Regressions found by running the official Meilisearch JS SDK suite against the server:
//! each test pins one behaviour the suite expected of Meilisearch v1.41, with expected
//! values taken from the API reference.

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]

use crate::common;

use common::{MASTER_KEY, Options, Server};
use serde_json::{Value, json};

fn server_with_master_key() -> Server {
    Server::start_with(Options {
        master_key: Some(MASTER_KEY.to_string()),
        // One core, so the tests also run pinned to a single CPU.
        cores: Some(1),
        ..Options::default()
    })
}

/// Waits for task `uid` to finish and returns it.
fn wait_task(server: &Server, uid: &Value) -> Value {
    for _ in 0..600 {
        let task = server.send("GET", &format!("/tasks/{uid}"), None).json();
        if task["status"] != "enqueued" && task["status"] != "processing" {
            return task;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("task {uid} still pending after 12 s");
}

/// An embedder API key is stored as given and masked once on every read: a 21-byte key
/// keeps its first 3 characters followed by `XXXXX...` (reference §1.11 and §5.1).
#[test]
fn an_embedder_api_key_is_masked_once_on_read() {
    let server = server_with_master_key();
    let embedders = json!({
        "default": {
            "source": "openAi",
            "apiKey": "<your-OpenAI-API-key>",
            "model": "text-embedding-3-small",
            "dimensions": 1536
        }
    });
    let enqueued = server.send(
        "PATCH",
        "/indexes/movies/settings/embedders",
        Some(&embedders),
    );
    assert_eq!(enqueued.status, 202);
    let task = wait_task(&server, &enqueued.json()["taskUid"]);
    assert_eq!(task["status"], "succeeded", "{task}");
    assert_eq!(
        task["details"]["embedders"]["default"]["apiKey"],
        "<yoXXXXX..."
    );

    let sub_route = server
        .send("GET", "/indexes/movies/settings/embedders", None)
        .json();
    assert_eq!(sub_route["default"]["apiKey"], "<yoXXXXX...");
    let all = server.send("GET", "/indexes/movies/settings", None).json();
    assert_eq!(all["embedders"]["default"]["apiKey"], "<yoXXXXX...");
}

/// Sends `method path` with `body` and waits for the task it enqueues to succeed.
fn run_task(server: &Server, method: &str, path: &str, body: &Value) {
    let enqueued = server.send(method, path, Some(body));
    assert_eq!(enqueued.status, 202, "{}", enqueued.text());
    let task = wait_task(server, &enqueued.json()["taskUid"]);
    assert_eq!(task["status"], "succeeded", "{task}");
}

fn field_names(listing: &Value) -> Vec<&str> {
    listing["results"]
        .as_array()
        .expect("results is an array")
        .iter()
        .map(|field| field["name"].as_str().expect("name is a string"))
        .collect()
}

/// `POST /indexes/{uid}/fields` lists every field by name with what the settings make of it
/// (reference §1.2), filters by capability and attribute pattern, and paginates.
#[test]
fn index_fields_are_listed_with_their_capabilities() {
    let server = server_with_master_key();
    run_task(
        &server,
        "POST",
        "/indexes/movies/documents?primaryKey=id",
        &json!([
            {"id": 1, "title": "Alpha", "genre": "sci-fi"},
            {"id": 2, "title": "Bravo", "genre": "fantasy"}
        ]),
    );
    run_task(
        &server,
        "PATCH",
        "/indexes/movies/settings",
        &json!({
            "searchableAttributes": ["title"],
            "displayedAttributes": ["title", "genre"],
            "sortableAttributes": ["genre"],
            "distinctAttribute": "genre",
            "rankingRules": ["words", "genre:asc"],
            "filterableAttributes": [{
                "attributePatterns": ["genre"],
                "features": {"facetSearch": true, "filter": {"equality": true, "comparison": true}}
            }],
            "faceting": {"sortFacetValuesBy": {"genre": "count"}},
            "localizedAttributes": [{"attributePatterns": ["title"], "locales": ["eng", "fra"]}]
        }),
    );

    let all = server.send("POST", "/indexes/movies/fields", Some(&json!({})));
    assert_eq!(all.status, 200, "{}", all.text());
    let all = all.json();
    assert_eq!(field_names(&all), ["genre", "id", "title"]);
    assert_eq!(
        (&all["offset"], &all["limit"], &all["total"]),
        (&json!(0), &json!(20), &json!(3))
    );
    assert_eq!(
        all["results"][0],
        json!({
            "name": "genre",
            "displayed": {"enabled": true},
            "searchable": {"enabled": false},
            "sortable": {"enabled": true},
            "distinct": {"enabled": true},
            "rankingRule": {"enabled": true, "order": "asc"},
            "filterable": {
                "enabled": true, "sortBy": "count", "facetSearch": true,
                "equality": true, "comparison": true
            },
            "localized": {"locales": []}
        })
    );
    assert_eq!(
        all["results"][2],
        json!({
            "name": "title",
            "displayed": {"enabled": true},
            "searchable": {"enabled": true},
            "sortable": {"enabled": false},
            "distinct": {"enabled": false},
            "rankingRule": {"enabled": false},
            "filterable": {
                "enabled": false, "sortBy": "alpha", "facetSearch": false,
                "equality": false, "comparison": false
            },
            "localized": {"locales": ["Eng", "Fra"]}
        })
    );
    assert_eq!(all["results"][1]["displayed"], json!({"enabled": false}));

    let listed = |body: Value| {
        let response = server.send("POST", "/indexes/movies/fields", Some(&body));
        assert_eq!(response.status, 200, "{}", response.text());
        response.json()
    };
    let searchable = listed(json!({"filter": {"searchable": true}}));
    assert_eq!(field_names(&searchable), ["title"]);
    let hidden = listed(json!({"filter": {"displayed": false}}));
    assert_eq!(field_names(&hidden), ["id"]);
    let patterns = listed(json!({"filter": {"attributePatterns": ["tit*", "*re"]}}));
    assert_eq!(field_names(&patterns), ["genre", "title"]);
    let page = listed(json!({"offset": 1, "limit": 1}));
    assert_eq!(field_names(&page), ["id"]);
    assert_eq!(page["total"], 3);

    let bad_filter = server.send(
        "POST",
        "/indexes/movies/fields",
        Some(&json!({"filter": {"displayed": "yes"}})),
    );
    assert_eq!(bad_filter.status, 400);
    assert_eq!(
        bad_filter.json()["code"],
        "invalid_index_fields_filter_displayed"
    );
    let missing = server.send("POST", "/indexes/nope/fields", Some(&json!({})));
    assert_eq!(missing.status, 404);
    assert_eq!(missing.json()["code"], "index_not_found");
}
