//! Federated search as Meilisearch answers it (issue 36, item 8): `federation.facetsByIndex`
//! may name an index no query uses (the index must exist and the facets must be filterable
//! there, as Meilisearch checks; it then adds nothing to the answer), and the merge keeps a
//! sorted query's own order, comparing hits rule group by rule group.

use crate::common;

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
    assert_eq!(error["code"], "invalid_search_facets", "{error}");
    let message = error["message"].as_str().expect("a message");
    assert!(
        message.starts_with("Inside `.federation.facetsByIndex.unused`: ")
            && message.ends_with("\n - Note: index `unused` is not used in queries"),
        "{message}"
    );
}

/// Federated merging compares hits rule group by rule group as Meilisearch does: with `sort`
/// as the first ranking rule, hits of two sorted queries interleave by price whatever their
/// weighted scores, and a document both queries find appears once, where it came first.
#[test]
fn federated_merging_keeps_sorted_queries_in_their_sort_order() {
    let server = Server::start();
    let settings = json!({
        "sortableAttributes": ["price"],
        "rankingRules": ["sort", "words", "typo", "proximity", "attribute", "exactness"],
    });
    let response = server.send("PATCH", "/indexes/items/settings", Some(&settings));
    let task = server.wait_task(&response.json()["taskUid"]);
    assert_eq!(task["status"], "succeeded", "{task}");
    let documents = json!([
        {"id": 1, "title": "alpha beta", "price": 30},
        {"id": 2, "title": "alpha", "price": 10},
        {"id": 3, "title": "beta gamma delta", "price": 20},
        {"id": 4, "title": "beta", "price": 40},
    ]);
    let response = server.send("POST", "/indexes/items/documents", Some(&documents));
    let task = server.wait_task(&response.json()["taskUid"]);
    assert_eq!(task["status"], "succeeded", "{task}");
    let body = json!({
        "federation": {},
        "queries": [
            {"indexUid": "items", "q": "alpha", "sort": ["price:asc"]},
            {"indexUid": "items", "q": "beta", "sort": ["price:asc"], "federationOptions": {"weight": 0.5}},
        ],
    });
    let response = server.send("POST", "/multi-search", Some(&body));
    assert_eq!(response.status, 200, "{}", response.text());
    let answer = response.json();
    let merged: Vec<(i64, i64)> = answer["hits"]
        .as_array()
        .expect("hits")
        .iter()
        .map(|hit| {
            (
                hit["id"].as_i64().expect("an id"),
                hit["_federation"]["queriesPosition"]
                    .as_i64()
                    .expect("a position"),
            )
        })
        .collect();
    assert_eq!(merged, vec![(2, 0), (3, 1), (1, 0), (4, 1)], "{answer}");
}

/// An index asked for an empty facet list answers empty counts, as 1.41 does; `null` leaves it
/// out, and an answer where no index computed facets has no `facetsByIndex` at all.
#[test]
fn an_empty_facet_list_answers_empty_counts() {
    let server = Server::start();
    index(&server, "used");
    let response = federated(&server, json!({"used": []}));
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(
        response.json()["facetsByIndex"],
        json!({"used": {"distribution": {}, "stats": {}}})
    );

    let response = federated(&server, json!({"used": null}));
    assert_eq!(response.status, 200, "{}", response.text());
    assert!(
        response.json().get("facetsByIndex").is_none(),
        "{}",
        response.text()
    );
}

/// `showPerformanceDetails: null` in a query reads as absent (what a Meilisearch remote sends
/// inside the queries it forwards); any value, even `false`, is refused in a federated query.
#[test]
fn a_federated_query_takes_a_null_performance_flag_only() {
    let server = Server::start();
    index(&server, "used");
    let query = |flag: Value| {
        json!({
            "federation": {},
            "queries": [{"indexUid": "used", "q": "carol", "showPerformanceDetails": flag}],
        })
    };
    let response = server.send("POST", "/multi-search", Some(&query(Value::Null)));
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(response.json()["hits"].as_array().map(Vec::len), Some(1));

    let response = server.send("POST", "/multi-search", Some(&query(json!(false))));
    assert_eq!(response.status, 400, "{}", response.text());
    assert_eq!(
        response.json()["code"],
        "invalid_multi_search_query_show_performance_details"
    );

    let plain =
        json!({"queries": [{"indexUid": "used", "q": "carol", "showPerformanceDetails": null}]});
    let response = server.send("POST", "/multi-search", Some(&plain));
    assert_eq!(response.status, 200, "{}", response.text());
}
