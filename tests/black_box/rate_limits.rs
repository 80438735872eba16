//! Rate limits per API key and per tenant token (`--rate-limit-*`), against the real binary:
//! requests under the limit pass, past the burst a 429 `too_many_requests` with
//! `Retry-After`, a token comes back after the announced wait, keys and tenant tokens have
//! buckets of their own, the master key is never limited, a core gets its share of the
//! limit, the configuration file sets the limits, a bad value stops the start with the flag
//! named, and `/metrics` counts the refusals.

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Barrier};
use std::time::Duration;

use coresearch::auth::tenant_token::sign_tenant_token;
use jsonwebtoken::Algorithm;
use serde_json::{Value, json};

use crate::common::{
    HttpResponse, MASTER_KEY, Options, Server, failed_start, json_request, request,
};

/// A rate so slow that no token comes back while a test runs (one per 100 s).
const NO_REFILL_RATE: &str = "0.01";

fn limited_server(cores: usize, arguments: &[&str]) -> Server {
    let mut extra_arguments = vec!["--experimental-enable-metrics".to_owned()];
    extra_arguments.extend(arguments.iter().map(|argument| (*argument).to_owned()));
    Server::start_with(Options {
        master_key: Some(MASTER_KEY.to_owned()),
        cores: Some(cores),
        extra_arguments,
        ..Options::default()
    })
}

/// A new API key with every action on every index: its key string and uid.
fn create_key(server: &Server) -> (String, String) {
    let body = json!({"actions": ["*"], "indexes": ["*"], "expiresAt": null});
    let response = server.send("POST", "/keys", Some(&body));
    assert_eq!(response.status, 201, "{}", response.text());
    let key = response.json();
    (
        key["key"].as_str().expect("a string").to_owned(),
        key["uid"].as_str().expect("a string").to_owned(),
    )
}

/// `GET /indexes` with `key`, on a new connection.
fn list_indexes(server: &Server, key: &str) -> HttpResponse {
    server.raw(&request("GET", "/indexes", Some(key)))
}

/// A search of the (missing) index `movies` with `token`: 404 once past the limiter.
fn search(server: &Server, token: &str) -> HttpResponse {
    server.raw(&json_request(
        "POST",
        "/indexes/movies/search",
        Some(token),
        "{}",
    ))
}

fn tenant_token(parent_key: &str, parent_uid: &str, rules: Value) -> String {
    let claims = json!({"searchRules": rules, "apiKeyUid": parent_uid});
    sign_tenant_token(&claims, parent_key, Algorithm::HS256).expect("the token is signed")
}

/// The `Retry-After` of a 429, checked to be whole seconds, at least one.
fn retry_after(response: &HttpResponse) -> u64 {
    let seconds: u64 = response
        .header("retry-after")
        .expect("a 429 carries Retry-After")
        .parse()
        .expect("Retry-After is whole seconds");
    assert!(seconds >= 1);
    seconds
}

fn assert_refused(response: &HttpResponse, identity: &str) {
    assert_eq!(response.status, 429, "{}", response.text());
    assert_eq!(response.header("content-type"), Some("application/json"));
    let body = response.json();
    assert_eq!(body["code"], "too_many_requests");
    assert_eq!(body["type"], "invalid_request");
    assert_eq!(
        body["link"],
        "https://docs.meilisearch.com/errors#too_many_requests"
    );
    let message = body["message"].as_str().expect("a string");
    assert!(
        message.starts_with(&format!(
            "Too many requests with this {identity}: the limit is"
        )),
        "{message}"
    );
    assert!(
        message.ends_with(&format!("Retry after {}s.", retry_after(response))),
        "{message}"
    );
    assert_eq!(
        body.as_object().expect("an error object").len(),
        4,
        "{body}"
    );
}

/// `coresearch_rate_limited_requests_total` and `coresearch_rate_limit_buckets` for `kind`.
fn rate_limit_figures(server: &Server, kind: &str) -> (f64, f64) {
    let response = server.send("GET", "/metrics", None);
    assert_eq!(response.status, 200, "{}", response.text());
    let text = response.text();
    let value = |family: &str| {
        let series = format!("{family}{{kind=\"{kind}\"}} ");
        text.lines()
            .find_map(|line| line.strip_prefix(&series))
            .unwrap_or_else(|| panic!("no {series} in\n{text}"))
            .parse::<f64>()
            .expect("a number")
    };
    (
        value("coresearch_rate_limited_requests_total"),
        value("coresearch_rate_limit_buckets"),
    )
}

#[test]
fn past_the_burst_a_key_gets_429_with_retry_after_until_a_token_comes_back() {
    // One token every 2 s, three at once.
    let server = limited_server(
        1,
        &[
            "--rate-limit-api-key-requests-per-second",
            "0.5",
            "--rate-limit-api-key-burst",
            "3",
        ],
    );
    let (key_a, _) = create_key(&server);
    let (key_b, _) = create_key(&server);
    for _ in 0..3 {
        assert_eq!(list_indexes(&server, &key_a).status, 200);
    }
    let refused = list_indexes(&server, &key_a);
    assert_refused(&refused, "API key");
    assert!(retry_after(&refused) <= 2, "one token comes back every 2 s");
    let message = refused.json()["message"]
        .as_str()
        .expect("a string")
        .to_owned();
    assert!(
        message.contains("the limit is 0.5 requests per second with bursts of 3."),
        "{message}"
    );
    // Key B has a bucket of its own: key A's exhaustion costs it nothing, and its three
    // requests sent at once all pass.
    let passed: Vec<u16> = std::thread::scope(|scope| {
        let sent: Vec<_> = (0..3)
            .map(|_| scope.spawn(|| list_indexes(&server, &key_b).status))
            .collect();
        sent.into_iter()
            .map(|thread| thread.join().expect("the client thread ends"))
            .collect()
    });
    assert_eq!(passed, [200, 200, 200]);
    assert_refused(&list_indexes(&server, &key_b), "API key");
    // The master key is never limited.
    for _ in 0..10 {
        assert_eq!(server.send("GET", "/indexes", None).status, 200);
    }
    // Unauthenticated and refused requests are not charged: key A is still refused for its
    // limit, not for something else, and a wrong key is a 403.
    assert_eq!(list_indexes(&server, "not-a-key").status, 403);
    // After the announced wait, one token is back, and only one.
    let wait = retry_after(&list_indexes(&server, &key_a));
    std::thread::sleep(Duration::from_secs(wait));
    assert_eq!(list_indexes(&server, &key_a).status, 200);
    assert_refused(&list_indexes(&server, &key_a), "API key");
    // Refusals so far: A three times, B once.
    assert_eq!(rate_limit_figures(&server, "api_key"), (4.0, 2.0));
    assert_eq!(rate_limit_figures(&server, "tenant_token"), (0.0, 0.0));
}

#[test]
fn tenant_tokens_have_buckets_of_their_own_apart_from_their_parent_key() {
    let server = limited_server(
        1,
        &[
            "--rate-limit-tenant-token-requests-per-second",
            NO_REFILL_RATE,
            "--rate-limit-tenant-token-burst",
            "2",
        ],
    );
    let (parent_key, parent_uid) = create_key(&server);
    let first = tenant_token(&parent_key, &parent_uid, json!(["*"]));
    let second = tenant_token(
        &parent_key,
        &parent_uid,
        json!({"movies": {"filter": "a = 1"}}),
    );
    for _ in 0..2 {
        assert_eq!(search(&server, &first).status, 404, "past the limiter");
    }
    let refused = search(&server, &first);
    assert_refused(&refused, "tenant token");
    assert!(retry_after(&refused) > 60, "one token per 100 s");
    // Another token of the same parent key, and the parent key itself (no API key limit).
    for _ in 0..2 {
        assert_eq!(search(&server, &second).status, 404);
    }
    assert_refused(&search(&server, &second), "tenant token");
    for _ in 0..5 {
        assert_eq!(search(&server, &parent_key).status, 404);
    }
    // Concurrent searches with a third token: exactly two pass.
    let third = tenant_token(&parent_key, &parent_uid, json!(["mov*"]));
    let statuses: Vec<u16> = std::thread::scope(|scope| {
        let sent: Vec<_> = (0..6)
            .map(|_| scope.spawn(|| search(&server, &third).status))
            .collect();
        sent.into_iter()
            .map(|thread| thread.join().expect("the client thread ends"))
            .collect()
    });
    assert_eq!(statuses.iter().filter(|status| **status == 404).count(), 2);
    assert_eq!(statuses.iter().filter(|status| **status == 429).count(), 4);
    assert_eq!(rate_limit_figures(&server, "tenant_token"), (6.0, 3.0));
    assert_eq!(rate_limit_figures(&server, "api_key"), (0.0, 0.0));
}

/// Sends `count` requests with `key` on one keep-alive connection (so on one core); their
/// statuses.
fn statuses_on_one_connection(server: &Server, key: &str, count: usize) -> Vec<u16> {
    let mut connection = server.connect().expect("the server accepts");
    (0..count)
        .map(|_| {
            connection.send(request("GET", "/indexes", Some(key)).as_bytes());
            connection
                .read_response()
                .expect("the server answers")
                .status
        })
        .collect()
}

#[test]
fn each_core_enforces_its_share_of_the_limit_without_sharing_buckets() {
    // Bursts of 8 on 2 cores: 4 per core.
    let server = limited_server(
        2,
        &[
            "--rate-limit-api-key-requests-per-second",
            NO_REFILL_RATE,
            "--rate-limit-api-key-burst",
            "8",
        ],
    );
    let (single, _) = create_key(&server);
    let statuses = statuses_on_one_connection(&server, &single, 6);
    assert_eq!(statuses, [200, 200, 200, 200, 429, 429], "one core's share");
    // Sixteen connections, open together (the cores even them out), one request each at
    // once: no more than the instance's burst passes, and at least one core's share.
    let (spread, _) = create_key(&server);
    let connections = 16;
    let barrier = Arc::new(Barrier::new(connections));
    let statuses: Vec<u16> = std::thread::scope(|scope| {
        let sent: Vec<_> = (0..connections)
            .map(|_| {
                let barrier = barrier.clone();
                let mut connection = server.connect().expect("the server accepts");
                let spread = spread.clone();
                scope.spawn(move || {
                    barrier.wait();
                    connection.send(request("GET", "/indexes", Some(&spread)).as_bytes());
                    connection
                        .read_response()
                        .expect("the server answers")
                        .status
                })
            })
            .collect();
        sent.into_iter()
            .map(|thread| thread.join().expect("the client thread ends"))
            .collect()
    });
    let passed = statuses.iter().filter(|status| **status == 200).count();
    let refused = statuses.iter().filter(|status| **status == 429).count();
    assert_eq!(passed + refused, connections, "{statuses:?}");
    assert!((4..=8).contains(&passed), "{statuses:?}");
    let (counted, _) = rate_limit_figures(&server, "api_key");
    assert_eq!(counted, (2 + refused) as f64);
}

#[test]
fn the_configuration_file_sets_the_limits_and_no_flag_means_no_limit() {
    let scratch = tempfile::tempdir().expect("a temporary directory");
    let file = scratch.path().join("limits.toml");
    std::fs::write(
        &file,
        format!(
            "rate_limit_api_key_requests_per_second = {NO_REFILL_RATE}\n\
             rate_limit_api_key_burst = 1\n"
        ),
    )
    .expect("the configuration file is written");
    let server = limited_server(
        1,
        &["--config-file-path", file.to_str().expect("a UTF-8 path")],
    );
    let (key, _) = create_key(&server);
    assert_eq!(list_indexes(&server, &key).status, 200);
    assert_refused(&list_indexes(&server, &key), "API key");
    drop(server);
    let unlimited = limited_server(1, &[]);
    let (key, _) = create_key(&unlimited);
    for _ in 0..30 {
        assert_eq!(list_indexes(&unlimited, &key).status, 200);
    }
    assert_eq!(rate_limit_figures(&unlimited, "api_key"), (0.0, 0.0));
}

#[test]
fn an_out_of_range_limit_stops_the_start_with_the_flag_named() {
    let rate = "--rate-limit-api-key-requests-per-second";
    for value in ["0", "-2", "fast", "2000000"] {
        let (code, stderr) = failed_start(&[&format!("{rate}={value}")], &[]);
        assert_eq!(code, 2, "{stderr}");
        assert!(stderr.contains(rate), "{stderr}");
        assert!(
            stderr.contains("expected a number from 0.001 to 1000000"),
            "{stderr}"
        );
    }
    let (code, stderr) = failed_start(
        &["--rate-limit-tenant-token-requests-per-second", "5"],
        &[("CORESEARCH_RATE_LIMIT_TENANT_TOKEN_BURST", "0")],
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("--rate-limit-tenant-token-burst"),
        "{stderr}"
    );
    assert!(
        stderr.contains("expected a whole number of requests from 1 to 1000000"),
        "{stderr}"
    );
    let scratch = tempfile::tempdir().expect("a temporary directory");
    let file = scratch.path().join("limits.toml");
    std::fs::write(&file, "rate_limit_api_key_requests_per_second = 0\n")
        .expect("the test file is written");
    let (code, stderr) = failed_start(
        &["--config-file-path", file.to_str().expect("a UTF-8 path")],
        &[],
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains(rate), "{stderr}");
    let (code, stderr) = failed_start(&["--rate-limit-api-key-burst", "3"], &[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains(rate), "a burst needs its rate: {stderr}");
}
