//! `federation.facetsByIndex` may name an index no query uses (issue 36, item 8): the index
//! must exist and the facets must be filterable there, as Meilisearch checks; it then adds
//! nothing to the answer.

mod common;

use common::Server;
use serde_json::{Value, json};

fn index(server: &Server, uid: &str) {
    let documents = json!([{"id": 1, "genre": "drama", "title": "carol"}]);
    let response = server.send(
        "POST",
        &format!("/indexes/{uid}/documents"),
        Some(&documents),
    );
    let task = server.wait_task(&response.json()["taskUid"]);
    assert_eq!(task["status"], "succeeded", "{task}");
    let settings = json!({"filterableAttributes": ["genre"]});
    let response = server.send(
        "PATCH",
        &format!("/indexes/{uid}/settings"),
        Some(&settings),
    );
    let task = server.wait_task(&response.json()["taskUid"]);
    assert_eq!(task["status"], "succeeded", "{task}");
}

fn federated(server: &Server, facets_by_index: Value) -> common::HttpResponse {
    let body = json!({
        "federation": {"facetsByIndex": facets_by_index},
        "queries": [{"indexUid": "used", "q": "carol"}],
    });
    server.send("POST", "/multi-search", Some(&body))
}

#[test]
fn facets_by_index_may_name_an_index_no_query_uses() {
    let server = Server::start();
    index(&server, "used");
    index(&server, "unused");
    let response = federated(&server, json!({"used": ["genre"], "unused": ["genre"]}));
    assert_eq!(response.status, 200, "{}", response.text());
    let answer = response.json();
    assert_eq!(answer["hits"].as_array().map(Vec::len), Some(1), "{answer}");
    let by_index = answer["facetsByIndex"].as_object().expect("facetsByIndex");
    assert!(by_index.contains_key("used"), "{answer}");
    assert!(!by_index.contains_key("unused"), "{answer}");

    let response = federated(&server, json!({"missing": ["genre"]}));
    assert_eq!(response.status, 400, "{}", response.text());
    assert_eq!(
        response.json()["message"],
        "Inside `.federation.facetsByIndex.missing`: Index `missing` not found.\n - Note: index `missing` is not used in queries"
    );
    assert_eq!(response.json()["code"], "index_not_found");

    let response = federated(&server, json!({"unused": ["title"]}));
    assert_eq!(response.status, 400, "{}", response.text());
    let error = response.json();
    assert_eq!(error["code"], "invalid_multi_search_facets", "{error}");
    let message = error["message"].as_str().expect("a message");
    assert!(
        message.starts_with("Inside `.federation.facetsByIndex.unused`: ")
            && message.ends_with("\n - Note: index `unused` is not used in queries"),
        "{message}"
    );
}
