//! Paging through a networked search over a replicated shard whose replicas order their
//! documents differently (issue #73, item 1), on three real instances: `ms0` leads and owns
//! `s1`; `s0` is owned by `ms1`, then also by `ms2`, which a topology change fills after half
//! of the documents were deleted, so that the documents added afterwards take the freed
//! internal ids on `ms1` and new ones on `ms2`.
//!
//! Every page of one search or listing is asked of the same replica, so the pages, read
//! with and without a query and through `documents/fetch`, give each document exactly once; and two identical searches give the
//! same hits with the same `weightedRankingScore`.

use crate::common;

use std::collections::BTreeSet;

use common::Server;
use common::network::{network_options, remotes_named, start_network_instance};
use serde_json::{Value, json};

/// The instances' names, the first the leader.
const NAMES: [&str; 3] = ["ms0", "ms1", "ms2"];
/// Documents first added; the even ones are deleted before `ms2` joins.
const FIRST_DOCUMENTS: u64 = 12_000;
/// Documents added after `ms2` joined, with ids from [`FIRST_DOCUMENTS`].
const LATER_DOCUMENTS: u64 = 6_000;
/// Live documents at the end.
const LIVE_DOCUMENTS: u64 = FIRST_DOCUMENTS / 2 + LATER_DOCUMENTS;
/// Hits per page.
const PAGE: u64 = 1_000;

fn book(id: u64) -> Value {
    json!({"id": id, "title": format!("book {id}"), "year": 1900 + id % 120})
}

fn accepted(server: &Server, method: &str, path: &str, body: &Value) -> u64 {
    let response = server.send(method, path, Some(body));
    assert_eq!(response.status, 202, "{path}: {}", response.text());
    response.json()["taskUid"]
        .as_u64()
        .expect("an accepted write has a task")
}

/// Waits until every instance's queue is done, and checks that nothing failed.
fn wait_until_settled(servers: &[Server]) {
    for server in servers {
        let last = server.send("GET", "/tasks?limit=1", None).json()["results"][0].clone();
        if let Some(uid) = last["uid"].as_u64() {
            let task = server.wait_task(uid);
            assert_eq!(task["status"], "succeeded", "{task}");
        }
        let failed = server.send("GET", "/tasks?statuses=failed", None).json();
        assert_eq!(failed["total"], 0, "{failed}");
    }
}

/// The network with `s0` on `ms1` only, then the documents added and the even ones deleted,
/// then `ms2` made a replica of `s0`, then the later documents added.
fn replicas_that_number_apart() -> Vec<Server> {
    let servers: Vec<Server> = NAMES
        .iter()
        .map(|_| start_network_instance(&network_options(2)))
        .collect();
    let remotes = remotes_named(&NAMES, &servers);
    let body = json!({"self": "ms0", "leader": "ms0", "remotes": remotes,
                      "shards": {"s0": {"remotes": ["ms1"]}, "s1": {"remotes": ["ms0"]}}});
    accepted(&servers[0], "PATCH", "/network", &body);
    wait_until_settled(&servers);
    let settings = json!({"searchableAttributes": ["title"], "sortableAttributes": ["id"],
                          "pagination": {"maxTotalHits": LIVE_DOCUMENTS}});
    accepted(&servers[0], "PATCH", "/indexes/books/settings", &settings);
    let documents: Vec<Value> = (0..FIRST_DOCUMENTS).map(book).collect();
    accepted(
        &servers[0],
        "POST",
        "/indexes/books/documents",
        &json!(documents),
    );
    wait_until_settled(&servers);
    let even: Vec<u64> = (0..FIRST_DOCUMENTS).step_by(2).collect();
    accepted(
        &servers[0],
        "POST",
        "/indexes/books/documents/delete-batch",
        &json!(even),
    );
    wait_until_settled(&servers);
    let body = json!({"shards": {"s0": {"remotes": ["ms1", "ms2"]}, "s1": {"remotes": ["ms0"]}}});
    accepted(&servers[0], "PATCH", "/network", &body);
    wait_until_settled(&servers);
    let later: Vec<Value> = (FIRST_DOCUMENTS..FIRST_DOCUMENTS + LATER_DOCUMENTS)
        .map(book)
        .collect();
    accepted(
        &servers[0],
        "POST",
        "/indexes/books/documents",
        &json!(later),
    );
    wait_until_settled(&servers);
    servers
}

fn search(server: &Server, body: &Value) -> Value {
    let response = server.send("POST", "/indexes/books/search", Some(body));
    assert_eq!(response.status, 200, "{body}: {}", response.text());
    response.json()
}

fn hit_ids(answer: &Value) -> Vec<u64> {
    answer["hits"]
        .as_array()
        .expect("a search has hits")
        .iter()
        .map(|hit| hit["id"].as_u64().expect("ids are numbers"))
        .collect()
}

/// The first page of `s0` on `server` itself, placeholder.
fn own_shard_order(server: &Server) -> Vec<u64> {
    let body = json!({"q": "", "useNetwork": false, "filter": "_shard = \"s0\"",
                      "limit": PAGE, "attributesToRetrieve": ["id"]});
    hit_ids(&search(server, &body))
}

/// Every hit of the networked search `body`, read page by page.
fn paged(server: &Server, body: &Value) -> Vec<u64> {
    let mut all = Vec::new();
    for page in 0..LIVE_DOCUMENTS.div_ceil(PAGE) {
        let mut page_body = body.clone();
        page_body["offset"] = json!(page * PAGE);
        page_body["limit"] = json!(PAGE);
        let answer = search(server, &page_body);
        let errors = &answer["remoteErrors"];
        assert!(
            errors.is_null() || errors.as_object().is_some_and(|map| map.is_empty()),
            "{answer}"
        );
        all.extend(hit_ids(&answer));
    }
    all
}

#[test]
fn pages_of_one_search_over_replicas_give_each_document_once() {
    let servers = replicas_that_number_apart();
    let (ms1, ms2) = (own_shard_order(&servers[1]), own_shard_order(&servers[2]));
    assert_eq!(ms1.len() as u64, PAGE);
    assert_ne!(ms1, ms2, "the replicas of s0 order their ties alike");
    let every: BTreeSet<u64> = (1..FIRST_DOCUMENTS)
        .step_by(2)
        .chain(FIRST_DOCUMENTS..FIRST_DOCUMENTS + LATER_DOCUMENTS)
        .collect();
    for query in ["", "book"] {
        let body = json!({"q": query, "attributesToRetrieve": ["id"]});
        let ids = paged(&servers[0], &body);
        let distinct: BTreeSet<u64> = ids.iter().copied().collect();
        assert_eq!(
            ids.len(),
            distinct.len(),
            "q {query:?}: a document came twice"
        );
        assert_eq!(distinct, every, "q {query:?}");
    }
    let listed = listed_page_by_page(&servers[0]);
    let distinct: BTreeSet<u64> = listed.iter().copied().collect();
    assert_eq!(listed.len(), distinct.len(), "a listed document came twice");
    assert_eq!(distinct, every);
}

/// Every document of a networked listing (`documents/fetch`), read page by page.
fn listed_page_by_page(server: &Server) -> Vec<u64> {
    let mut all = Vec::new();
    for page in 0..LIVE_DOCUMENTS.div_ceil(PAGE) {
        let body = json!({"offset": page * PAGE, "limit": PAGE, "fields": ["id"]});
        let response = server.send("POST", "/indexes/books/documents/fetch", Some(&body));
        assert_eq!(response.status, 200, "{}", response.text());
        let answer = response.json();
        assert_eq!(answer["total"], LIVE_DOCUMENTS, "{answer}");
        all.extend(
            answer["results"]
                .as_array()
                .expect("a listing has results")
                .iter()
                .map(|document| document["id"].as_u64().expect("ids are numbers")),
        );
    }
    all
}

#[test]
fn two_identical_searches_give_the_same_hits_and_scores() {
    let servers = replicas_that_number_apart();
    for query in ["book 1", "book 30017", "boook 77"] {
        let body = json!({"q": query, "limit": 200, "showRankingScore": true,
                          "attributesToRetrieve": ["id"]});
        let first = search(&servers[0], &body);
        assert!(
            first["hits"]
                .as_array()
                .is_some_and(|hits| !hits.is_empty()),
            "{first}"
        );
        for _ in 0..5 {
            let again = search(&servers[0], &body);
            assert_eq!(again["hits"], first["hits"], "q {query:?}");
        }
    }
}
