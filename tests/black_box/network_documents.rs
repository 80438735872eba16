//! Document reads and facet searches across a sharded network (Meilisearch 1.50's
//! `useNetwork` on the documents routes and on `facet-search`), on three real instances (`ms0`
//! the leader, one shard each): a listing reads every shard by default and pages through them
//! each document once, sorted or not; a document held by another shard is found; a proxied
//! listing carries its sort values; facet counts add up over the shards; a dead remote is
//! named in `remoteErrors`, shown `unavailable` in `/network`, and a control message sets a
//! remote's status.

use crate::common;

use std::collections::BTreeSet;

use common::network::{
    document_ids, network_options, remotes_named, start_network_instance, wait_for_every_change,
};
use common::{MASTER_KEY, Server, json_request};
use serde_json::{Value, json};

/// The instances' names, the first the leader.
const NAMES: [&str; 3] = ["ms0", "ms1", "ms2"];
/// Documents of the test index.
const DOCUMENTS: u64 = 60;
/// The genres documents take in turn.
const GENRES: [&str; 3] = ["drama", "comedy", "action"];

/// Three instances, one shard each, led by `ms0`, holding the `books` index (sortable and
/// filterable by `year` and `id`) spread over the shards.
fn network_with_books() -> Vec<Server> {
    let servers: Vec<Server> = (0..NAMES.len())
        .map(|_| start_network_instance(&network_options(2)))
        .collect();
    let shards =
        json!({"s0": {"remotes": ["ms0"]}, "s1": {"remotes": ["ms1"]}, "s2": {"remotes": ["ms2"]}});
    let body = json!({"self": "ms0", "leader": "ms0", "remotes": remotes_named(&NAMES, &servers), "shards": shards});
    let response = servers[0].send("PATCH", "/network", Some(&body));
    assert_eq!(response.status, 202, "{}", response.text());
    wait_for_every_change(&servers);
    let settings =
        json!({"sortableAttributes": ["year", "id"], "filterableAttributes": ["year", "genre"]});
    let response = servers[0].send("PATCH", "/indexes/books/settings", Some(&settings));
    assert_eq!(response.status, 202, "{}", response.text());
    wait_for_every_change(&servers);
    let documents: Vec<Value> = (0..DOCUMENTS)
        .map(|id| {
            json!({"id": id, "title": format!("book {id}"), "year": 1900 + (id * 7) % 50,
                   "genre": GENRES[(id % 3) as usize]})
        })
        .collect();
    let response = servers[0].send("POST", "/indexes/books/documents", Some(&json!(documents)));
    assert_eq!(response.status, 202, "{}", response.text());
    wait_for_every_change(&servers);
    servers
}

fn fetch(server: &Server, body: &Value) -> Value {
    let response = server.send("POST", "/indexes/books/documents/fetch", Some(body));
    assert_eq!(response.status, 200, "{body}: {}", response.text());
    response.json()
}

fn ids(page: &Value) -> Vec<u64> {
    page["results"]
        .as_array()
        .expect("a listing has results")
        .iter()
        .map(|document| document["id"].as_u64().expect("ids are numbers"))
        .collect()
}

/// Every id of a listing read page by page with `body`, `size` at a time.
fn paged(server: &Server, body: &Value, size: u64) -> Vec<u64> {
    let mut all = Vec::new();
    let mut offset = 0;
    while offset < DOCUMENTS + size {
        let mut page_body = body.clone();
        page_body["offset"] = json!(offset);
        page_body["limit"] = json!(size);
        let page = fetch(server, &page_body);
        assert_eq!(page["total"], DOCUMENTS, "{page}");
        all.extend(ids(&page));
        offset += size;
    }
    all
}

#[test]
fn listings_read_every_shard_and_page_through_each_document_once() {
    let servers = network_with_books();
    let every: Vec<u64> = (0..DOCUMENTS).collect();
    for server in &servers {
        let local = document_ids(server, "books");
        assert!(
            !local.is_empty() && local.len() < DOCUMENTS as usize,
            "{local:?}"
        );
        let page = server
            .send("GET", "/indexes/books/documents?limit=1000", None)
            .json();
        assert_eq!(page["total"], DOCUMENTS, "{page}");
        let mut listed = ids(&page);
        listed.sort_unstable();
        assert_eq!(listed, every);
        let sorted = paged(server, &json!({"sort": ["id:asc"]}), 7);
        assert_eq!(sorted, every);
        let mut unsorted = paged(server, &json!({}), 9);
        assert_eq!(unsorted.len(), DOCUMENTS as usize, "{unsorted:?}");
        unsorted.sort_unstable();
        assert_eq!(unsorted, every);
        let by_year = fetch(
            server,
            &json!({"sort": ["year:desc", "id:asc"], "limit": 1000}),
        );
        let years: Vec<u64> = by_year["results"]
            .as_array()
            .expect("results")
            .iter()
            .map(|document| document["year"].as_u64().expect("a year"))
            .collect();
        assert!(years.windows(2).all(|pair| pair[0] >= pair[1]), "{years:?}");
        let filtered = fetch(server, &json!({"filter": "year < 1910", "limit": 1000}));
        let expected = (0..DOCUMENTS).filter(|id| (id * 7) % 50 < 10).count();
        assert_eq!(filtered["total"], expected as u64, "{filtered}");
        assert!(filtered.get("remoteErrors").is_none(), "{filtered}");
        let here = fetch(server, &json!({"useNetwork": false, "limit": 1000}));
        assert_eq!(here["total"], local.len() as u64, "{here}");
    }
}

#[test]
fn a_document_of_another_shard_is_found_across_the_network_only() {
    let servers = network_with_books();
    let local = document_ids(&servers[1], "books");
    let elsewhere = (0..DOCUMENTS)
        .find(|id| !local.contains(&id.to_string()))
        .expect("a document lives on another shard");
    let path = format!("/indexes/books/documents/{elsewhere}");
    let found = servers[1].send("GET", &format!("{path}?fields=id,title"), None);
    assert_eq!(found.status, 200, "{}", found.text());
    assert_eq!(
        found.json(),
        json!({"id": elsewhere, "title": format!("book {elsewhere}")})
    );
    let here = servers[1].send("GET", &format!("{path}?useNetwork=false"), None);
    assert_eq!(here.status, 404, "{}", here.text());
    assert_eq!(here.json()["code"], "document_not_found");
    let nowhere = servers[1].send("GET", "/indexes/books/documents/999999", None);
    assert_eq!(nowhere.status, 404, "{}", nowhere.text());
}

#[test]
fn a_proxied_listing_carries_each_documents_sort_values() {
    let servers = network_with_books();
    let body = r#"{"sort": ["year:asc"], "fields": ["id"], "useNetwork": false, "limit": 3}"#;
    let request = json_request(
        "POST",
        "/indexes/books/documents/fetch",
        Some(MASTER_KEY),
        body,
    )
    .replacen("\r\n\r\n", "\r\nMeili-Proxy-Search: true\r\n\r\n", 1);
    let response = servers[1].raw(&request);
    assert_eq!(response.status, 200, "{}", response.text());
    let page = response.json();
    for document in page["results"].as_array().expect("results") {
        let values = &document["_federation"]["weightedScoreValues"];
        // Facet numbers are floats, as Meilisearch shows them.
        let year = values[0]["sort"]["value"].as_f64().expect("a year value");
        assert_eq!(values[0]["sort"]["asc"], true, "{document}");
        assert!((1900.0..1950.0).contains(&year), "{document}");
        assert!(
            document.get("year").is_none(),
            "fields still apply: {document}"
        );
    }
}

#[test]
fn a_dead_remote_is_reported_shown_unavailable_and_its_status_can_be_set() {
    let mut servers = network_with_books();
    let survivors: BTreeSet<String> = document_ids(&servers[0], "books")
        .union(&document_ids(&servers[1], "books"))
        .cloned()
        .collect();
    servers.pop().expect("three instances").kill();
    let page = fetch(&servers[0], &json!({"limit": 1000}));
    assert_eq!(page["total"], survivors.len() as u64, "{page}");
    assert_eq!(
        page["results"].as_array().map(Vec::len),
        Some(survivors.len())
    );
    assert_eq!(
        page["remoteErrors"]["ms2"]["code"], "remote_could_not_send_request",
        "{page}"
    );
    let status = |server: &Server, name: &str| {
        server.send("GET", "/network", None).json()["remotes"][name]["status"].clone()
    };
    assert_eq!(status(&servers[0], "ms2"), "unavailable");
    assert_eq!(status(&servers[0], "ms1"), "available");
    let control = |name: &str, status: &str| {
        json!({
            "origin": {"remoteName": "ms0", "taskUid": 0, "networkVersion": "00000000-0000-0000-0000-000000000000"},
            "message": {"type": "statusChangeForRemote", "remote": name, "status": status}
        })
    };
    let response = servers[0].send(
        "POST",
        "/network/control",
        Some(&control("ms2", "available")),
    );
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(status(&servers[0], "ms2"), "available");
    let response = servers[0].send(
        "POST",
        "/network/control",
        Some(&control("ms1", "unavailable")),
    );
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(status(&servers[0], "ms1"), "unavailable");
    // An unavailable owner is still asked when it is the shard's only one.
    let page = fetch(&servers[0], &json!({"limit": 1000}));
    assert!(page["remoteErrors"].get("ms1").is_none(), "{page}");
}

#[test]
fn use_network_is_checked_as_meilisearch_checks_it() {
    let server = Server::start();
    let response = server.send(
        "POST",
        "/indexes/books/documents/fetch",
        Some(&json!({"useNetwork": 3})),
    );
    assert_eq!(response.status, 400, "{}", response.text());
    assert_eq!(
        response.json(),
        json!({
            "message": "Invalid value type at `.useNetwork`: expected a boolean, but found a positive integer: `3`",
            "code": "invalid_document_use_network",
            "type": "invalid_request",
            "link": "https://docs.meilisearch.com/errors#invalid_document_use_network"
        })
    );
    let response = server.send("GET", "/indexes/books/documents?useNetwork=maybe", None);
    assert_eq!(response.status, 400, "{}", response.text());
    assert_eq!(response.json()["code"], "invalid_document_use_network");
    let gate = "passing `useNetwork` in a search query requires enabling the `network` experimental feature. See https://github.com/orgs/meilisearch/discussions/805";
    for (method, path, body) in [
        (
            "POST",
            "/indexes/books/documents/fetch",
            Some(json!({"useNetwork": true})),
        ),
        ("GET", "/indexes/books/documents?useNetwork=false", None),
        ("GET", "/indexes/books/documents/1?useNetwork=true", None),
        (
            "POST",
            "/indexes/books/facet-search",
            Some(json!({"facetName": "genre", "useNetwork": false})),
        ),
    ] {
        let response = server.send(method, path, body.as_ref());
        assert_eq!(response.status, 400, "{path}: {}", response.text());
        assert_eq!(response.json()["message"], gate, "{path}");
    }
}

/// The `(value, count)` pairs of a facet search answer.
fn facet_counts(answer: &Value) -> Vec<(String, u64)> {
    answer["facetHits"]
        .as_array()
        .expect("facetHits")
        .iter()
        .map(|hit| {
            let value = hit["value"].as_str().expect("a value").to_owned();
            (value, hit["count"].as_u64().expect("a count"))
        })
        .collect()
}

#[test]
fn facet_counts_add_up_over_every_shard() {
    let servers = network_with_books();
    let search = |server: &Server, body: Value| {
        let response = server.send("POST", "/indexes/books/facet-search", Some(&body));
        assert_eq!(response.status, 200, "{body}: {}", response.text());
        response.json()
    };
    let per_genre = DOCUMENTS / 3;
    for server in &servers {
        let answer = search(server, json!({"facetName": "genre"}));
        assert_eq!(
            facet_counts(&answer),
            [
                ("action".to_owned(), per_genre),
                ("comedy".to_owned(), per_genre),
                ("drama".to_owned(), per_genre)
            ]
        );
        assert_eq!(answer["remoteErrors"], json!({}), "{answer}");
        let narrowed = search(
            server,
            json!({"facetName": "genre", "facetQuery": "dra", "filter": "year < 1925"}),
        );
        let expected = (0..DOCUMENTS)
            .filter(|id| id % 3 == 0 && (id * 7) % 50 < 25)
            .count() as u64;
        assert_eq!(
            facet_counts(&narrowed),
            [("drama".to_owned(), expected)],
            "{narrowed}"
        );
        assert_eq!(narrowed["facetQuery"], "dra");
        let here = search(server, json!({"facetName": "genre", "useNetwork": false}));
        let local: u64 = facet_counts(&here).iter().map(|(_, count)| count).sum();
        assert_eq!(local, document_ids(server, "books").len() as u64, "{here}");
        assert!(here.get("remoteErrors").is_none(), "{here}");
    }
}
