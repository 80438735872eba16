//! `/experimental-features` through the official `meilisearch-sdk` client, and its
//! persistence across a graceful restart and a crash.

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]

use crate::common;

use common::{MASTER_KEY, Options, Server, json_request, request};
use meilisearch_sdk::client::Client;
use meilisearch_sdk::features::ExperimentalFeatures;

fn options() -> Options {
    Options {
        master_key: Some(MASTER_KEY.to_string()),
        ..Options::default()
    }
}

#[tokio::test]
async fn sdk_reads_health_version_and_features() {
    let server = Server::start_with(options());
    let client = Client::new(server.url(), Some(MASTER_KEY)).expect("new succeeds");
    assert_eq!(
        client.health().await.expect("health succeeds").status,
        "available"
    );
    assert_eq!(
        client
            .get_version()
            .await
            .expect("get_version succeeds")
            .pkg_version,
        "1.41.0"
    );
    let features = ExperimentalFeatures::new(&client)
        .get()
        .await
        .expect("get finds a value");
    assert!(!features.metrics);
    assert!(!features.network);
}

#[tokio::test]
async fn sdk_update_changes_only_what_it_sets_and_every_core_sees_it() {
    let server = Server::start_with(options());
    let client = Client::new(server.url(), Some(MASTER_KEY)).expect("new succeeds");
    let mut features = ExperimentalFeatures::new(&client);
    features.set_metrics(true).set_contains_filter(true);
    let updated = features.update().await.expect("update succeeds");
    assert!(updated.metrics && updated.contains_filter && !updated.network);
    // New connections land on either core; every one of them must see the change.
    for _ in 0..20 {
        let fresh = Client::new(server.url(), Some(MASTER_KEY)).expect("new succeeds");
        let seen = ExperimentalFeatures::new(&fresh)
            .get()
            .await
            .expect("get finds a value");
        assert!(seen.metrics && seen.contains_filter && !seen.network);
    }
}

#[test]
fn null_leaves_a_toggle_unchanged_and_the_answer_has_all_fifteen_fields() {
    let server = Server::start();
    server.raw(&json_request(
        "PATCH",
        "/experimental-features",
        None,
        r#"{"network": true}"#,
    ));
    let response = server.raw(&json_request(
        "PATCH",
        "/experimental-features",
        None,
        r#"{"network": null, "foreignKeys": true}"#,
    ));
    assert_eq!(response.status, 200);
    assert_eq!(
        response.json(),
        serde_json::json!({
            "metrics": false, "logsRoute": false, "editDocumentsByFunction": false,
            "containsFilter": false, "dynamicSearchRules": false, "network": true,
            "getTaskDocumentsRoute": false, "taskQueueCompactionRoute": false,
            "compositeEmbedders": false, "chatCompletions": false, "multimodal": false,
            "foreignKeys": true, "disableDocumentsFetchQueue": false, "legacySearch": true,
            "renderRoute": false
        })
    );
}

/// `legacySearch` stays on: coresearch has only 1.41's search pipeline, so turning it off is
/// refused and changes nothing else of the patch; turning it on is accepted.
#[test]
fn legacy_search_cannot_be_turned_off_and_a_refused_patch_changes_nothing() {
    let server = Server::start();
    let response = server.raw(&json_request(
        "PATCH",
        "/experimental-features",
        None,
        r#"{"metrics": true, "legacySearch": false}"#,
    ));
    assert_eq!(response.status, 400, "{}", response.text());
    assert_eq!(
        response.json(),
        serde_json::json!({
            "message": "Invalid value at `.legacySearch`: coresearch runs only the search pipeline of Meilisearch 1.41, which Meilisearch 1.50 calls legacy, so `legacySearch` cannot be `false`.",
            "code": "bad_request",
            "type": "invalid_request",
            "link": "https://docs.meilisearch.com/errors#bad_request"
        })
    );
    let features = server
        .raw(&request("GET", "/experimental-features", None))
        .json();
    assert_eq!(features["metrics"], false, "{features}");
    assert_eq!(features["legacySearch"], true, "{features}");
    let response = server.raw(&json_request(
        "PATCH",
        "/experimental-features",
        None,
        r#"{"legacySearch": true, "disableDocumentsFetchQueue": true}"#,
    ));
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(response.json()["legacySearch"], true);
    assert_eq!(response.json()["disableDocumentsFetchQueue"], true);
}

#[test]
fn features_survive_a_graceful_restart_and_a_crash() {
    let scratch = tempfile::tempdir().expect("tempdir succeeds");
    let data = scratch.path().join("data.ms");
    let server = Server::start_on(&data, &Options::default());
    let response = server.raw(&json_request(
        "PATCH",
        "/experimental-features",
        None,
        r#"{"chatCompletions": true, "disableDocumentsFetchQueue": true}"#,
    ));
    assert_eq!(response.status, 200);
    assert!(
        server.stop().success(),
        "SIGTERM must end the server with status 0"
    );

    let server = Server::start_on(&data, &Options::default());
    let features = server
        .raw(&request("GET", "/experimental-features", None))
        .json();
    assert_eq!(features["chatCompletions"], true);
    assert_eq!(features["disableDocumentsFetchQueue"], true);
    let response = server.raw(&json_request(
        "PATCH",
        "/experimental-features",
        None,
        r#"{"multimodal": true}"#,
    ));
    assert_eq!(response.status, 200);
    // Acknowledged means durable: a crash right after the answer loses nothing.
    server.kill();

    let server = Server::start_on(&data, &Options::default());
    let features = server
        .raw(&request("GET", "/experimental-features", None))
        .json();
    assert_eq!(features["chatCompletions"], true);
    assert_eq!(features["multimodal"], true);
    assert_eq!(features["disableDocumentsFetchQueue"], true);
    assert_eq!(features["legacySearch"], true);
}

#[test]
fn cli_flags_force_their_toggle_on() {
    let server = Server::start_with(Options {
        extra_arguments: vec!["--experimental-enable-metrics".into()],
        ..Options::default()
    });
    let features = server
        .raw(&request("GET", "/experimental-features", None))
        .json();
    assert_eq!(features["metrics"], true);
    assert_eq!(features["logsRoute"], false);
}
