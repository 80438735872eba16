//! `/network` and remote federated search, black-box: the route's toggle, every refusal of
//! a patch with Meilisearch 1.41's code and message, the merge rules, persistence across a
//! restart, and federated searches across real instances on loopback — a remote that
//! answers, one that is down, one that never answers, one with a wrong key, one refused by
//! the IP policy, and an instance asked as a remote (`Meili-Proxy-Search`).

#![allow(clippy::unwrap_used)]

use crate::common;

use std::net::TcpListener;
use std::time::{Duration, Instant};

use common::{MASTER_KEY, Options, Server, json_request};
use serde_json::{Value, json};

/// Lets outgoing requests reach loopback addresses.
const ALLOW_LOOPBACK: &[&str] = &["--experimental-allowed-ip-networks", "127.0.0.0/8"];

fn start(master_key: bool, allow_loopback: bool) -> Server {
    let mut extra_arguments: Vec<String> = Vec::new();
    if allow_loopback {
        extra_arguments.extend(ALLOW_LOOPBACK.iter().map(|argument| argument.to_string()));
    }
    Server::start_with(Options {
        master_key: master_key.then(|| MASTER_KEY.to_owned()),
        extra_arguments,
        cores: Some(2),
        ..Options::default()
    })
}

fn enable_network(server: &Server) {
    let response = server.send(
        "PATCH",
        "/experimental-features",
        Some(&json!({"network": true})),
    );
    assert_eq!(response.status, 200, "{}", response.text());
}

fn patch_network(server: &Server, body: Value) -> common::HttpResponse {
    server.send("PATCH", "/network", Some(&body))
}

fn assert_error(response: &common::HttpResponse, status: u16, code: &str, message: &str) {
    assert_eq!(response.status, status, "{}", response.text());
    let body = response.json();
    assert_eq!(body["code"], code, "{body}");
    assert_eq!(body["message"], message, "{body}");
}

/// Adds `documents` to `index` and waits for the task to succeed.
fn add_documents(server: &Server, index: &str, documents: Value) {
    let response = server.send(
        "POST",
        &format!("/indexes/{index}/documents"),
        Some(&documents),
    );
    assert_eq!(response.status, 202, "{}", response.text());
    let task = server.wait_task(response.json()["taskUid"].as_u64().unwrap());
    assert_eq!(task["status"], "succeeded", "{task}");
}

fn multi_search(server: &Server, body: Value) -> common::HttpResponse {
    server.send("POST", "/multi-search", Some(&body))
}

#[test]
fn the_route_needs_the_network_toggle_and_a_bad_body_is_refused_first() {
    let server = start(false, false);
    let message = "Using the /network route requires enabling the `network` experimental feature. See https://github.com/orgs/meilisearch/discussions/805";
    assert_error(
        &server.send("GET", "/network", None),
        400,
        "feature_not_enabled",
        message,
    );
    assert_error(
        &patch_network(&server, json!({})),
        400,
        "feature_not_enabled",
        message,
    );
    assert_error(
        &patch_network(&server, json!({"selfie": "a"})),
        400,
        "bad_request",
        "Unknown field `selfie`: expected one of `remotes`, `shards`, `previousShards`, `self`, `leader`, `previousRemotes`",
    );
    enable_network(&server);
    let fresh = server.send("GET", "/network", None);
    assert_eq!(fresh.status, 200);
    assert_eq!(
        fresh.json(),
        json!({"self": null, "remotes": {}, "shards": {}, "leader": null,
               "version": "00000000-0000-0000-0000-000000000000"})
    );
}

#[test]
fn every_refused_patch_answers_meilisearch_error_and_changes_nothing() {
    let server = start(false, false);
    enable_network(&server);
    let cases = [
        (
            json!({"remotes": {"new": {"url": "http://a", "doggo": 1}}}),
            "invalid_network_remotes",
            "Unknown field `doggo` inside `.remotes.new`: expected one of `url`, `searchApiKey`, `writeApiKey`",
        ),
        (
            json!({"self": 42}),
            "invalid_network_self",
            "Invalid value type at `.self`: expected a string, but found a positive integer: `42`",
        ),
        (
            json!({"remotes": {"b": {"searchApiKey": "k"}}}),
            "missing_network_url",
            "Missing field `.remotes.b.url`",
        ),
        (
            json!({"remotes": {"b": {"url": "not a url"}}}),
            "invalid_network_url",
            "Invalid `.remotes.b.url` (`not a url`): relative URL without a base",
        ),
        (
            json!({"remotes": {"b": {"url": "http://b", "writeApiKey": 3}}}),
            "invalid_network_write_api_key",
            "Invalid value type at `.remotes.b.writeApiKey`: expected a string, but found a positive integer: `3`",
        ),
        (
            json!({"previousRemotes": {}}),
            "unexpected_network_previous_remotes",
            "Unexpected `previousRemotes` in network call.\n  - Note: `previousRemote` is reserved for internal use.",
        ),
        (
            json!({"leader": "other"}),
            "not_leader",
            "This remote is not the leader of the network.\n  - Note: only the leader `other` can receive new tasks.",
        ),
        (
            json!({"self": "a", "leader": "a"}),
            "invalid_network_remotes",
            "leader `a` is missing from remotes",
        ),
    ];
    for (body, code, message) in cases {
        assert_error(&patch_network(&server, body.clone()), 400, code, message);
    }
    let unchanged = server.send("GET", "/network", None).json();
    assert_eq!(unchanged["version"], "00000000-0000-0000-0000-000000000000");
    assert_eq!(unchanged["remotes"], json!({}));
}

#[test]
fn patches_merge_field_by_field_and_the_network_survives_a_restart() {
    let scratch = tempfile::tempdir().unwrap();
    let data_directory = scratch.path().join("data.ms");
    let options = Options::default();
    let server = Server::start_on(&data_directory, &options);
    enable_network(&server);
    let first = patch_network(
        &server,
        json!({"self": "a", "remotes": {
            "a": {"url": "http://localhost:7700"},
            "b": {"url": "http://b.example:7700", "searchApiKey": "search-b", "writeApiKey": "write-b"},
            "c": {"url": "http://c.example:7700"}},
          "shards": {"s0": {"remotes": ["a", "b"]}, "s1": {"remotes": ["c"], "addRemotes": ["b"], "removeRemotes": ["c"]}}}),
    );
    assert_eq!(first.status, 200, "{}", first.text());
    let first = first.json();
    assert_eq!(
        first["shards"],
        json!({"s0": {"remotes": ["a", "b"]}, "s1": {"remotes": ["b"]}})
    );
    assert_eq!(
        first["remotes"]["b"],
        json!({"url": "http://b.example:7700", "searchApiKey": "search-b", "writeApiKey": "write-b", "status": "available"})
    );
    // Removing a remote takes it out of every shard; a shard left empty goes.
    let second = patch_network(
        &server,
        json!({"remotes": {"b": null, "a": {"searchApiKey": "search-a"}}}),
    )
    .json();
    assert_eq!(second["shards"], json!({"s0": {"remotes": ["a"]}}));
    assert_eq!(second["remotes"]["a"]["searchApiKey"], "search-a");
    assert_eq!(second["remotes"]["a"]["url"], "http://localhost:7700");
    assert!(second["version"].as_str().unwrap() > first["version"].as_str().unwrap());
    server.stop();
    let restarted = Server::start_on(&data_directory, &options);
    assert_eq!(restarted.send("GET", "/network", None).json(), second);
    let reset = patch_network(
        &restarted,
        json!({"remotes": null, "shards": null, "self": null}),
    )
    .json();
    assert_eq!(reset["remotes"], json!({}));
    assert_eq!(reset["self"], Value::Null);
}

/// Two instances with one index each, `a` knowing `b` as a remote.
struct Pair {
    a: Server,
    b: Server,
}

fn pair() -> Pair {
    let a = start(false, true);
    let b = start(true, false);
    enable_network(&a);
    enable_network(&b);
    add_documents(
        &a,
        "movies",
        json!([{"id": 1, "title": "Carol in Paris"}, {"id": 2, "title": "Carol"}]),
    );
    add_documents(
        &b,
        "movies",
        json!([{"id": 10, "title": "Carol at sea"}, {"id": 11, "title": "Other"}]),
    );
    let response = patch_network(
        &a,
        json!({"self": "a", "remotes": {
            "a": {"url": a.url()},
            "b": {"url": b.url(), "searchApiKey": MASTER_KEY}}}),
    );
    assert_eq!(response.status, 200, "{}", response.text());
    Pair { a, b }
}

fn federated_query(remotes: &[&str]) -> Value {
    let queries: Vec<Value> = remotes
        .iter()
        .map(|remote| json!({"indexUid": "movies", "q": "carol", "federationOptions": {"remote": remote}}))
        .collect();
    json!({"federation": {}, "queries": queries})
}

#[test]
fn a_federated_search_merges_local_and_remote_hits_tagged_by_remote() {
    let Pair { a, b: _b } = pair();
    let response = multi_search(&a, federated_query(&["a", "b"]));
    assert_eq!(response.status, 200, "{}", response.text());
    let body = response.json();
    assert_eq!(body["remoteErrors"], json!({}), "{body}");
    let mut found: Vec<(u64, String, u64)> = body["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|hit| {
            let federation = &hit["_federation"];
            assert!(federation.get("weightedScoreValues").is_none(), "{hit}");
            (
                hit["id"].as_u64().unwrap(),
                federation["remote"].as_str().unwrap().to_owned(),
                federation["queriesPosition"].as_u64().unwrap(),
            )
        })
        .collect();
    found.sort();
    assert_eq!(
        found,
        [
            (1, "a".to_owned(), 0),
            (2, "a".to_owned(), 0),
            (10, "b".to_owned(), 1)
        ]
    );
    assert_eq!(body["estimatedTotalHits"], 3);
    // Scores decide the order across instances.
    let scores: Vec<f64> = body["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|hit| hit["_federation"]["weightedRankingScore"].as_f64().unwrap())
        .collect();
    assert!(
        scores.windows(2).all(|pair| pair[0] >= pair[1]),
        "{scores:?}"
    );
    // Offset and limit apply to the merged list.
    let mut paged = federated_query(&["a", "b"]);
    paged["federation"] = json!({"offset": 1, "limit": 1});
    let paged = multi_search(&a, paged).json();
    assert_eq!(paged["hits"].as_array().unwrap().len(), 1);
    assert_eq!(paged["hits"][0]["id"], body["hits"][1]["id"]);
}

#[test]
fn an_instance_asked_as_a_remote_answers_score_values_and_no_remote() {
    let Pair { a: _a, b } = pair();
    let request = json_request("POST", "/multi-search", Some(MASTER_KEY), &json!({
        "federation": {}, "queries": [{"indexUid": "movies", "q": "carol", "federationOptions": {"queryPosition": 3}}]
    }).to_string());
    let request = request.replacen("Host: t\r\n", "Host: t\r\nMeili-Proxy-Search: true\r\n", 1);
    let response = b.raw(&request);
    assert_eq!(response.status, 200, "{}", response.text());
    let hit = &response.json()["hits"][0];
    let federation = &hit["_federation"];
    assert_eq!(federation["queriesPosition"], 3);
    assert!(federation.get("remote").is_none(), "{hit}");
    let score = federation["weightedRankingScore"].as_f64().unwrap();
    assert_eq!(
        federation["weightedScoreValues"],
        json!([{"weightedScore": score}])
    );
}

#[test]
fn remote_failures_are_reported_per_remote_and_never_fail_the_search() {
    let Pair { a, b } = pair();
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_url = format!("http://{}", silent.local_addr().unwrap());
    let response = patch_network(
        &a,
        json!({"remotes": {
            "down": {"url": closed_url},
            "silent": {"url": silent_url},
            "wrongkey": {"url": b.url(), "searchApiKey": "not-the-key"}}}),
    );
    assert_eq!(response.status, 200, "{}", response.text());
    let started = Instant::now();
    let response = multi_search(&a, federated_query(&["a", "down", "silent", "wrongkey"]));
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(response.status, 200, "{}", response.text());
    let body = response.json();
    let errors = &body["remoteErrors"];
    assert_eq!(
        errors["down"]["code"], "remote_could_not_send_request",
        "{errors}"
    );
    assert_eq!(errors["silent"]["code"], "remote_timeout", "{errors}");
    assert_eq!(
        errors["silent"]["message"],
        "remote host did not answer before the deadline"
    );
    assert_eq!(
        errors["wrongkey"]["code"], "remote_invalid_api_key",
        "{errors}"
    );
    assert_eq!(errors["wrongkey"]["type"], "auth");
    assert_eq!(body["hits"].as_array().unwrap().len(), 2, "{body}");
    drop(silent);
}

#[test]
fn remotes_must_be_registered_and_need_the_toggle_and_the_ip_policy() {
    let Pair { a, b } = pair();
    assert_error(
        &multi_search(&a, federated_query(&["a", "nowhere"])),
        400,
        "invalid_multi_search_remote",
        "Invalid `queries[1].federation_options.remote`: remote `nowhere` is not registered",
    );
    // `b` does not allow loopback addresses: its call to `a` is refused by its policy.
    let response = patch_network(&b, json!({"self": "b", "remotes": {"a": {"url": a.url()}}}));
    assert_eq!(response.status, 200, "{}", response.text());
    let body = multi_search(&b, federated_query(&["a"])).json();
    assert_eq!(
        body["remoteErrors"]["a"]["code"], "remote_could_not_send_request",
        "{body}"
    );
    let response = b.send(
        "PATCH",
        "/experimental-features",
        Some(&json!({"network": false})),
    );
    assert_eq!(response.status, 200);
    assert_error(
        &multi_search(&b, federated_query(&["a"])),
        400,
        "feature_not_enabled",
        "Performing a remote federated search requires enabling the `network` experimental feature. See https://github.com/orgs/meilisearch/discussions/805",
    );
}

#[test]
fn use_network_needs_the_toggle_even_when_false() {
    let server = start(false, false);
    add_documents(&server, "movies", json!([{"id": 1, "title": "Carol"}]));
    let message = "passing `useNetwork` in a search query requires enabling the `network` experimental feature. See https://github.com/orgs/meilisearch/discussions/805";
    assert_error(
        &server.send(
            "POST",
            "/indexes/movies/search",
            Some(&json!({"q": "carol", "useNetwork": false})),
        ),
        400,
        "feature_not_enabled",
        message,
    );
    assert_error(
        &server.send(
            "GET",
            "/indexes/movies/search?q=carol&useNetwork=true",
            None,
        ),
        400,
        "feature_not_enabled",
        message,
    );
    enable_network(&server);
    let local = server.send(
        "POST",
        "/indexes/movies/search",
        Some(&json!({"q": "carol", "useNetwork": false})),
    );
    assert_eq!(local.status, 200, "{}", local.text());
    assert_eq!(local.json()["hits"][0]["id"], 1);
}

#[test]
fn a_networked_search_asks_every_remote_once_and_answers_as_one_index() {
    let Pair { a, b } = pair();
    for server in [&a, &b] {
        let response = server.send(
            "PUT",
            "/indexes/movies/settings/filterable-attributes",
            Some(&json!(["genre"])),
        );
        server.wait_task(response.json()["taskUid"].as_u64().unwrap());
    }
    add_documents(
        &a,
        "movies",
        json!([{"id": 3, "title": "Carol again", "genre": "drama"}]),
    );
    add_documents(
        &b,
        "movies",
        json!([{"id": 12, "title": "Carol forever", "genre": "drama"}]),
    );
    let response = a.send(
        "POST",
        "/indexes/movies/search",
        Some(&json!({"q": "carol", "useNetwork": true, "facets": ["genre"], "limit": 10})),
    );
    assert_eq!(response.status, 200, "{}", response.text());
    let body = response.json();
    assert_eq!(body["query"], "carol");
    assert_eq!(body["estimatedTotalHits"], 5, "{body}");
    assert_eq!(body["limit"], 10);
    assert_eq!(
        body["facetDistribution"],
        json!({"genre": {"drama": 2}}),
        "{body}"
    );
    assert_eq!(body["remoteErrors"], json!({}));
    let mut remotes: Vec<(u64, String)> = body["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|hit| {
            (
                hit["id"].as_u64().unwrap(),
                hit["_federation"]["remote"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    remotes.sort();
    let expected: Vec<(u64, String)> = [(1, "a"), (2, "a"), (3, "a"), (10, "b"), (12, "b")]
        .iter()
        .map(|(id, remote)| (*id, (*remote).to_owned()))
        .collect();
    assert_eq!(remotes, expected);
    networked_get_and_multi_search(&a);
}

/// The networked search of the test above through GET and inside a federated multi-search.
fn networked_get_and_multi_search(a: &Server) {
    let get = a
        .send(
            "GET",
            "/indexes/movies/search?q=carol&useNetwork=true",
            None,
        )
        .json();
    assert_eq!(get["estimatedTotalHits"], 5, "{get}");
    let federated = multi_search(
        a,
        json!({"federation": {}, "queries": [{"indexUid": "movies", "q": "carol", "useNetwork": true}]}),
    )
    .json();
    assert_eq!(
        federated["hits"].as_array().unwrap().len(),
        5,
        "{federated}"
    );
    assert_error(
        &multi_search(
            a,
            json!({"federation": {}, "queries": [{"indexUid": "movies", "q": "carol", "useNetwork": true, "federationOptions": {"remote": "b"}}]}),
        ),
        400,
        "invalid_multi_search_federation_options",
        "Inside `.queries[0]`: Using `.useNetwork` is not allowed as the same time as `.federationOptions.remote`.\n  - Hint: to perform an explicit query against a remote, remove `.useNetwork`.\n  - Hint: to automatically perform queries against the entire network, remove `.federationOptions.remote`.",
    );
}

#[test]
fn the_shard_filter_needs_the_toggle_and_names_existing_shards() {
    let server = start(false, false);
    add_documents(&server, "movies", json!([{"id": 1, "title": "Carol"}]));
    let search = |filter: &str| {
        server.send(
            "POST",
            "/indexes/movies/search",
            Some(&json!({"q": "carol", "filter": filter})),
        )
    };
    assert_error(
        &search("_shard = \"s0\""),
        400,
        "feature_not_enabled",
        "using a shard filter requires enabling the `network` experimental feature. See https://github.com/orgs/meilisearch/discussions/805\n1:7 _shard = \"s0\"",
    );
    enable_network(&server);
    // Without a leader no document belongs to a network shard, as in Meilisearch.
    assert_error(
        &search("_shard = \"s0\""),
        400,
        "invalid_search_filter",
        "Index `movies`: Shard `s0` does not exist",
    );
}
