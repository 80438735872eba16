//! Dynamic search rules against the server binary, through raw HTTP, as Meilisearch 1.50
//! has them (issue 72, item 2), with 1.41's bodies and dumps still read:
//!
//! - the routes (`POST /dynamic-search-rules` lists, with `filter.query`; `GET`
//!   `/dynamic-search-rules/{uid}`; `PATCH`/`DELETE` one and `DELETE` all, answered with
//!   `dsrUpdate`/`dsrClear` tasks) behind the `dynamicSearchRules` feature, with every
//!   refusal's code, message and status, in Meilisearch's order (key, path, body, gate);
//! - the rules survive a restart and a kill -9, and travel in dumps and snapshots;
//! - in search, multi-search and federated search, matching active rules pin documents at
//!   their positions (whatever the query, within the filter), counted in the totals and the
//!   facets, with a pin's score details; priorities decide between rules; inactive rules, a
//!   failing condition, another index or the feature off pin nothing.

#![allow(clippy::unwrap_used, clippy::too_many_lines)]

use crate::common;

use std::path::Path;

use common::{HttpResponse, MASTER_KEY, Options, Server, json_request};
use serde_json::{Value, json};

fn options(extra: &[&str]) -> Options {
    Options {
        master_key: Some(MASTER_KEY.to_string()),
        extra_arguments: extra.iter().map(|argument| argument.to_string()).collect(),
        ..Options::default()
    }
}

fn start() -> Server {
    Server::start_with(options(&[]))
}

fn set_feature(server: &Server, enabled: bool) {
    let response = server.send(
        "PATCH",
        "/experimental-features",
        Some(&json!({ "dynamicSearchRules": enabled })),
    );
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(response.json()["dynamicSearchRules"], enabled);
}

/// A server with the feature on.
fn start_enabled() -> Server {
    let server = start();
    set_feature(&server, true);
    server
}

fn pin(id: &str, position: u32) -> Value {
    json!({"selector": {"id": id}, "action": {"type": "pin", "position": position}})
}

fn patch_rule(server: &Server, uid: &str, body: &Value) -> HttpResponse {
    server.send("PATCH", &format!("/dynamic-search-rules/{uid}"), Some(body))
}

/// Sends a rule change, whose `dsrUpdate`/`dsrClear` task must succeed; answers the task.
fn change(server: &Server, method: &str, path: &str, body: Option<&Value>) -> Value {
    let response = server.send(method, path, body);
    assert_eq!(response.status, 202, "{method} {path}: {}", response.text());
    let summary = response.json();
    assert_eq!(summary["indexUid"], ".meili_dsr", "{summary}");
    let task = server.wait_task(&summary["taskUid"]);
    assert_eq!(task["status"], "succeeded", "{method} {path}: {task}");
    task
}

/// Creates (or updates) rule `uid`, which must succeed; answers the rule as it now is.
fn put_rule(server: &Server, uid: &str, body: &Value) -> Value {
    let path = format!("/dynamic-search-rules/{uid}");
    change(server, "PATCH", &path, Some(body));
    let response = server.send("GET", &path, None);
    assert_eq!(response.status, 200, "{uid}: {}", response.text());
    response.json()
}

/// Deletes rule `uid` (its task must succeed).
fn delete_rule(server: &Server, uid: &str) -> Value {
    change(
        server,
        "DELETE",
        &format!("/dynamic-search-rules/{uid}"),
        None,
    )
}

fn list(server: &Server, body: &Value) -> HttpResponse {
    server.send("POST", "/dynamic-search-rules", Some(body))
}

fn assert_error(response: &HttpResponse, status: u16, code: &str, message: &str) {
    assert_eq!(response.status, status, "{}", response.text());
    let kind = match code {
        "dynamic_search_rule_not_found"
        | "feature_not_enabled"
        | "bad_request"
        | "missing_payload"
        | "malformed_payload" => "invalid_request",
        other if other.starts_with("invalid_") => "invalid_request",
        _ => "auth",
    };
    assert_eq!(
        response.json(),
        json!({
            "message": message,
            "code": code,
            "type": kind,
            "link": format!("https://docs.meilisearch.com/errors#{code}"),
        })
    );
}

/// Sends a write and waits for its task to succeed.
fn succeed(server: &Server, method: &str, path: &str, body: Option<&Value>) -> Value {
    let response = server.send(method, path, body);
    assert_eq!(response.status, 202, "{method} {path}: {}", response.text());
    let task = server.wait_task(&response.json()["taskUid"]);
    assert_eq!(task["status"], "succeeded", "{method} {path}: {task}");
    task
}

/// Index `movies`: `kind` and `color` filterable, five documents (two shards each).
fn add_movies(server: &Server) {
    succeed(
        server,
        "PATCH",
        "/indexes/movies/settings",
        Some(&json!({"filterableAttributes": ["kind", "color"]})),
    );
    let documents = json!([
        {"id": "organic-match", "title": "Batman Returns", "kind": "keep", "color": "red"},
        {"id": "pinned-miss", "title": "The Matrix", "kind": "keep", "color": "blue"},
        {"id": "filtered-pin", "title": "Batman Returns again", "kind": "drop", "color": "green"},
        {"id": "second-match", "title": "Batman Forever", "kind": "keep", "color": "red"},
        {"id": "other", "title": "Heat", "kind": "keep", "color": "black"},
    ]);
    succeed(
        server,
        "POST",
        "/indexes/movies/documents",
        Some(&documents),
    );
}

fn search(server: &Server, index: &str, body: &Value) -> Value {
    let response = server.send("POST", &format!("/indexes/{index}/search"), Some(body));
    assert_eq!(response.status, 200, "{}", response.text());
    response.json()
}

fn ids(hits: &Value) -> Vec<String> {
    hits.as_array()
        .unwrap()
        .iter()
        .map(|hit| hit["id"].as_str().unwrap().to_owned())
        .collect()
}

fn hit_ids(answer: &Value) -> Vec<String> {
    ids(&answer["hits"])
}

#[test]
fn the_routes_are_gated_by_the_feature_after_the_body_and_path_are_checked() {
    let server = start();
    let gated = "Using the `/dynamic-search-rules` routes requires enabling the `dynamic search \
                 rules` experimental feature. See https://github.com/orgs/meilisearch/discussions/884";
    assert_error(
        &list(&server, &json!({})),
        400,
        "feature_not_enabled",
        gated,
    );
    let path = "/dynamic-search-rules/rule-a";
    assert_error(
        &server.send("GET", path, None),
        400,
        "feature_not_enabled",
        gated,
    );
    assert_error(
        &patch_rule(&server, "rule-a", &json!({"actions": [pin("1", 0)]})),
        400,
        "feature_not_enabled",
        gated,
    );
    for path in [path, "/dynamic-search-rules"] {
        assert_error(
            &server.send("DELETE", path, None),
            400,
            "feature_not_enabled",
            gated,
        );
    }
    // Meilisearch's extractors run before its handler: a bad body wins over the gate.
    assert_error(
        &patch_rule(&server, "rule-a", &json!({"bogus": 1})),
        400,
        "bad_request",
        "Unknown field `bogus`: expected one of `description`, `precedence`, `active`, \
         `conditions`, `actions`",
    );
    assert_eq!(
        server
            .send("GET", "/tasks?types=dsrUpdate,dsrClear", None)
            .json()["total"],
        0,
        "no refused change registered a task"
    );
    assert_error(
        &list(&server, &json!({"limit": -1})),
        400,
        "invalid_dynamic_search_rule_limit",
        "Invalid value type at `.limit`: expected a positive integer, but found a negative \
         integer: `-1`",
    );
    // And a path uid that is no index uid: actix's plain-text 404.
    let response = server.send("GET", "/dynamic-search-rules/a%20b", None);
    assert_eq!(response.status, 404);
    assert!(
        response
            .header("content-type")
            .unwrap()
            .starts_with("text/plain"),
        "{:?}",
        response.header("content-type")
    );
    assert_eq!(
        response.text(),
        "`a b` is not a valid index uid. Index uid can be an integer or a string containing only \
         alphanumeric characters, hyphens (-) and underscores (_), and can not be more than 512 \
         bytes."
    );
    assert_eq!(
        server.send("GET", "/dynamic-search-rules", None).status,
        405
    );

    set_feature(&server, true);
    assert_eq!(
        list(&server, &json!({})).json(),
        json!({"results": [], "offset": 0, "limit": 20, "total": 0})
    );
    put_rule(&server, "rule-a", &json!({"actions": [pin("1", 0)]}));
    set_feature(&server, false);
    assert_error(
        &server.send("GET", path, None),
        400,
        "feature_not_enabled",
        gated,
    );
    set_feature(&server, true);
    assert_eq!(server.send("GET", path, None).status, 200);
}

#[test]
fn rules_are_created_read_patched_listed_and_deleted_by_tasks() {
    let server = start_enabled();
    let full = json!({
        "description": "Black Friday 2025 rules",
        "precedence": 10,
        "active": true,
        "conditions": {
            "time": {"start": "2025-11-28T00:00:00Z", "end": "2025-11-28T23:59:59Z"},
            "query": {"isEmpty": true}
        },
        "actions": [
            {"selector": {"indexUid": "products", "id": "123"}, "action": {"type": "pin", "position": 1}},
            {"selector": {"id": "789"}, "action": {"type": "pin", "position": 3}}
        ]
    });
    let response = server.send(
        "PATCH",
        "/dynamic-search-rules/black-friday?customMetadata=launch",
        Some(&full),
    );
    assert_eq!(response.status, 202, "{}", response.text());
    let summary = response.json();
    assert_eq!(
        (&summary["indexUid"], &summary["status"], &summary["type"]),
        (
            &json!(".meili_dsr"),
            &json!("enqueued"),
            &json!("dsrUpdate")
        )
    );
    assert_eq!(summary["customMetadata"], "launch");
    let task = server.wait_task(&summary["taskUid"]);
    assert_eq!(task["status"], "succeeded", "{task}");
    assert_eq!(task["details"], json!({"rule": full, "updatedRules": 1}));
    assert_eq!(task["customMetadata"], "launch");
    let mut expected = json!({"uid": "black-friday"});
    for (key, value) in full.as_object().unwrap() {
        expected[key] = value.clone();
    }
    let created = server
        .send("GET", "/dynamic-search-rules/black-friday", None)
        .json();
    assert_eq!(created, expected);
    let keys: Vec<&String> = created.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "uid",
            "description",
            "precedence",
            "active",
            "conditions",
            "actions"
        ]
    );

    // Defaults: active, no conditions, no actions, no description nor precedence shown.
    let minimal = put_rule(&server, "minimal", &json!({}));
    assert_eq!(
        minimal,
        json!({"uid": "minimal", "active": true, "conditions": {}, "actions": []})
    );

    // A patch changes only what it names; `null` resets.
    let updated = put_rule(&server, "black-friday", &json!({"description": "updated"}));
    expected["description"] = json!("updated");
    assert_eq!(updated, expected);
    let reset = put_rule(
        &server,
        "black-friday",
        &json!({"precedence": null, "description": null, "conditions": null, "active": false}),
    );
    assert_eq!(
        reset,
        json!({"uid": "black-friday", "active": false, "conditions": {}, "actions": full["actions"]})
    );
    assert_eq!(
        put_rule(&server, "black-friday", &json!({"active": null}))["active"],
        true
    );
    let minimal = put_rule(&server, "minimal", &json!({"actions": [pin("9", 7)]}));
    assert_eq!(minimal["actions"], json!([pin("9", 7)]));
    assert_eq!(
        put_rule(&server, "minimal", &json!({"actions": null}))["actions"],
        json!([])
    );

    // A 1.41 client's body: `priority` and a list of conditions, read in the 1.50 form.
    let legacy = put_rule(
        &server,
        "legacy",
        &json!({"priority": 3, "conditions": [
            {"scope": "query", "contains": "winter"},
            {"scope": "query", "contains": "coats"}
        ], "actions": [pin("5", 0)]}),
    );
    assert_eq!(legacy["precedence"], 3);
    assert_eq!(
        legacy["conditions"],
        json!({"query": {"words": "winter coats"}})
    );

    listings_filter_and_page(&server);

    // Deletion: a task, which succeeds whether or not the rule was there.
    let task = delete_rule(&server, "minimal");
    assert_eq!(
        (&task["type"], &task["details"]),
        (&json!("dsrUpdate"), &json!({"updatedRules": 1}))
    );
    assert_error(
        &server.send("GET", "/dynamic-search-rules/minimal", None),
        404,
        "dynamic_search_rule_not_found",
        "Dynamic search rule `minimal` not found.",
    );
    delete_rule(&server, "minimal");
    // Clearing: every rule, counted.
    let task = change(
        &server,
        "DELETE",
        "/dynamic-search-rules?customMetadata=wipe",
        None,
    );
    assert_eq!(task["type"], "dsrClear");
    assert_eq!(task["details"], json!({"deletedDocuments": 3}));
    assert_eq!(task["customMetadata"], "wipe");
    assert_eq!(list(&server, &json!({})).json()["total"], 0);
    // The tasks are listed, filtered and counted like every task.
    let tasks = server
        .send("GET", "/tasks?types=dsrUpdate,dsrClear", None)
        .json();
    assert_eq!(tasks["total"], 12, "{tasks}");
}

/// The listing of `black-friday`, `legacy`, `minimal` and a `promo-off` it adds: pagination, `filter.active`, `filter.query` (words of the
/// description and of the query words, the last words left out until one rule holds them)
/// and 1.41's `filter.attributePatterns`.
fn listings_filter_and_page(server: &Server) {
    put_rule(
        server,
        "promo-off",
        &json!({"active": false, "description": "Winter sale"}),
    );
    let uids = |body: Value| -> Vec<String> {
        list(server, &body).json()["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|rule| rule["uid"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        uids(json!({})),
        ["black-friday", "legacy", "minimal", "promo-off"]
    );
    let page = list(server, &json!({"offset": 1, "limit": 1})).json();
    assert_eq!(
        (
            &page["results"][0]["uid"],
            &page["offset"],
            &page["limit"],
            &page["total"]
        ),
        (&json!("legacy"), &json!(1), &json!(1), &json!(4))
    );
    assert_eq!(uids(json!({"filter": {"active": false}})), ["promo-off"]);
    assert_eq!(
        uids(json!({"filter": {"query": "WINTER"}})),
        ["legacy", "promo-off"]
    );
    assert_eq!(
        uids(json!({"filter": {"query": "winter", "active": true}})),
        ["legacy"]
    );
    assert_eq!(
        uids(json!({"filter": {"query": "sale winter"}})),
        ["promo-off"]
    );
    assert_eq!(
        uids(json!({"filter": {"query": "winter nothing"}})),
        ["legacy", "promo-off"]
    );
    assert!(uids(json!({"filter": {"query": "nothing winter"}})).is_empty());
    assert!(uids(json!({"filter": {"query": "wint"}})).is_empty());
    assert_eq!(
        uids(json!({"filter": {"attributePatterns": ["promo*", "*day"]}})),
        ["black-friday", "promo-off"]
    );
}

#[test]
fn every_refusal_has_meilisearch_code_and_message() {
    let server = start_enabled();
    let refusals: Vec<(Value, &str, &str)> = vec![
        (
            json!({"description": 1}),
            "invalid_dynamic_search_rule_description",
            "Invalid value type at `.description`: expected a string, but found a positive integer: `1`",
        ),
        (
            json!({"precedence": -3}),
            "invalid_dynamic_search_rule_priority",
            "Invalid value type at `.precedence`: expected a positive integer, but found a negative integer: `-3`",
        ),
        (
            json!({"priority": -3}),
            "invalid_dynamic_search_rule_priority",
            "Invalid value type at `.precedence`: expected a positive integer, but found a negative integer: `-3`",
        ),
        (
            json!({"active": "yes"}),
            "invalid_dynamic_search_rule_active",
            "Invalid value type at `.active`: expected a boolean, but found a string: `\"yes\"`",
        ),
        (
            json!({"conditions": "x"}),
            "invalid_dynamic_search_rule_conditions",
            "Invalid value type at `.conditions`: expected an object, but found a string: `\"x\"`",
        ),
        (
            json!({"conditions": {"foo": 1}}),
            "invalid_dynamic_search_rule_conditions",
            "Unknown field `foo` inside `.conditions`: expected one of `time`, `query`",
        ),
        (
            json!({"conditions": {"query": {"words": 1}}}),
            "invalid_dynamic_search_rule_conditions",
            "Invalid value type at `.conditions.query.words`: expected a string, but found a positive integer: `1`",
        ),
        (
            json!({"conditions": {"query": {"isEmpty": true, "words": "a"}}}),
            "bad_request",
            "Invalid value at `.conditions.query`: either `isEmpty` or `words` can be used, not both at once",
        ),
        (
            json!({"conditions": {"time": {"start": "2026-02-01T00:00:00Z", "end": "2026-01-01T00:00:00Z"}}}),
            "bad_request",
            "Invalid value at `.conditions.time`: `end` (`2026-01-01 0:00:00.0 +00:00:00`) should be later than `start` (`2026-02-01 0:00:00.0 +00:00:00`)",
        ),
        (
            json!({"conditions": {"time": {"start": "bad"}}}),
            "invalid_dynamic_search_rule_conditions",
            "Invalid value at `.conditions.time.start`: `bad` is not a valid date. It should follow the RFC 3339 format to represents a date or datetime in the future or specified as a null value. e.g. 'YYYY-MM-DD' or 'YYYY-MM-DD HH:MM:SS'.\n",
        ),
        // 1.41's list of conditions keeps 1.41's refusals.
        (
            json!({"conditions": [{"scope": "query", "isEmpty": false, "contains": "batman"}]}),
            "bad_request",
            "Invalid value at `.conditions[0]`: either `isEmpty` or `contains` can be used, not all at once",
        ),
        (
            json!({"conditions": [{"scope": "query"}]}),
            "bad_request",
            "Invalid value at `.conditions[0]`: at least `isEmpty` or `contains` must be used",
        ),
        (
            json!({"actions": [{"selector": {}, "action": {"type": "pin", "position": 0}}]}),
            "invalid_dynamic_search_rule_actions",
            "Missing field `id` inside `.actions[0].selector`",
        ),
        (
            json!({"actions": [{"selector": {"indexUid": "not valid", "id": "1"}, "action": {"type": "pin", "position": 0}}]}),
            "invalid_dynamic_search_rule_actions",
            "Invalid value at `.actions[0].selector.indexUid`: `not valid` is not a valid index uid. Index uid can be an integer or a string containing only alphanumeric characters, hyphens (-) and underscores (_), and can not be more than 512 bytes.",
        ),
        (
            json!({"actions": [{"selector": {"id": 1}, "action": {"type": "pin", "position": 0}}]}),
            "invalid_dynamic_search_rule_actions",
            "Invalid value type at `.actions[0].selector.id`: expected a string, but found a positive integer: `1`",
        ),
        (
            json!({"actions": [{"selector": {"id": "1"}, "action": {"type": "pin", "position": -1}}]}),
            "invalid_dynamic_search_rule_actions",
            "Invalid value type at `.actions[0].action.position`: expected a positive integer, but found a negative integer: `-1`",
        ),
    ];
    for (body, code, message) in refusals {
        let response = patch_rule(&server, "r", &body);
        assert_error(&response, 400, code, message);
    }
    // Refusals that name what Meilisearch's decoder names: only the code is checked here.
    for (body, code) in [
        (
            json!({"conditions": [{"scope": "weather"}]}),
            "invalid_dynamic_search_rule_conditions",
        ),
        (
            json!({"actions": [{"selector": {"id": "1"}, "action": {"type": "boost"}}]}),
            "invalid_dynamic_search_rule_actions",
        ),
        (
            json!({"actions": [{"selector": {"id": "1", "x": 1}, "action": {"type": "pin", "position": 0}}]}),
            "invalid_dynamic_search_rule_actions",
        ),
    ] {
        let response = patch_rule(&server, "r", &body);
        assert_eq!(response.status, 400, "{body}: {}", response.text());
        assert_eq!(response.json()["code"], code, "{body}");
    }
    assert_eq!(
        server.send("GET", "/tasks?types=dsrUpdate", None).json()["total"],
        0,
        "no refused body registered a task"
    );
    assert_error(
        &server.send(
            "PATCH",
            "/dynamic-search-rules/r?customMetadata=a&x=1",
            Some(&json!({})),
        ),
        400,
        "bad_request",
        "Unknown parameter `x`: expected one of `customMetadata`",
    );

    let list_refusals: Vec<(Value, &str, &str)> = vec![
        (
            json!({"offset": "1"}),
            "invalid_dynamic_search_rule_offset",
            "Invalid value type at `.offset`: expected a positive integer, but found a string: `\"1\"`",
        ),
        (
            json!({"filter": []}),
            "invalid_dynamic_search_rule_filter",
            "Invalid value type at `.filter`: expected an object, but found an array: `[]`",
        ),
        (
            json!({"filter": {"uid": "x"}}),
            "invalid_dynamic_search_rule_filter",
            "Unknown field `uid` inside `.filter`: expected one of `query`, `active`, `attributePatterns`",
        ),
        (
            json!({"filter": {"attributePatterns": "promo*"}}),
            "invalid_dynamic_search_rule_filter_attribute_patterns",
            "Invalid value type at `.filter.attributePatterns`: expected an array, but found a string: `\"promo*\"`",
        ),
        (
            json!({"filter": {"query": 1}}),
            "invalid_dynamic_search_rule_filter_query",
            "Invalid value type at `.filter.query`: expected a string, but found a positive integer: `1`",
        ),
        (
            json!({"filter": {"active": 1}}),
            "invalid_dynamic_search_rule_filter_active",
            "Invalid value type at `.filter.active`: expected a boolean, but found a positive integer: `1`",
        ),
        (
            json!({"page": 1}),
            "bad_request",
            "Unknown field `page`: expected one of `offset`, `limit`, `filter`",
        ),
    ];
    for (body, code, message) in list_refusals {
        assert_error(&list(&server, &body), 400, code, message);
    }
    let raw = server.raw(&json_request(
        "POST",
        "/dynamic-search-rules",
        Some(MASTER_KEY),
        "",
    ));
    assert_error(&raw, 400, "missing_payload", "A json payload is missing.");
}

#[test]
fn rules_survive_a_restart_and_a_kill() {
    let scratch = tempfile::tempdir().unwrap();
    let data = scratch.path().join("data.ms");
    let server = Server::start_on(&data, &options(&[]));
    set_feature(&server, true);
    let kept = put_rule(
        &server,
        "kept",
        &json!({"precedence": 3, "conditions": {"query": {"words": "bat"}}, "actions": [pin("1", 2)]}),
    );
    put_rule(&server, "deleted", &json!({"actions": [pin("2", 0)]}));
    delete_rule(&server, "deleted");
    assert!(server.stop().success());

    let server = Server::start_on(&data, &options(&[]));
    let listed = list(&server, &json!({})).json();
    assert_eq!(listed["results"], json!([kept]));
    // A succeeded task's change is on disk: a crash right after keeps it.
    let updated = put_rule(&server, "kept", &json!({"description": "after restart"}));
    let crashed = put_rule(&server, "crashed", &json!({"actions": [pin("3", 1)]}));
    server.kill();

    let server = Server::start_on(&data, &options(&[]));
    assert_eq!(
        list(&server, &json!({})).json()["results"],
        json!([crashed, updated])
    );
}

/// The rules file of a data directory written before 1.50 (the 1.41 form) reads in the 1.50
/// form; a rule whose conditions can never hold together is left out.
#[test]
fn a_rules_file_of_1_41_opens_in_the_1_50_form() {
    let scratch = tempfile::tempdir().unwrap();
    let data = scratch.path().join("data.ms");
    let server = Server::start_on(&data, &options(&[]));
    set_feature(&server, true);
    put_rule(&server, "placeholder", &json!({}));
    assert!(server.stop().success());
    let legacy = json!({
        "old": {"uid": "old", "priority": 2, "active": true,
            "conditions": [{"scope": "query", "contains": "black"}, {"scope": "time", "end": "2100-01-01T00:00:00Z"}],
            "actions": [{"selector": {"id": "7"}, "action": {"type": "pin", "position": 0}}]},
        "never": {"uid": "never", "active": true,
            "conditions": [{"scope": "query", "isEmpty": true}, {"scope": "query", "isEmpty": false}],
            "actions": []}
    });
    std::fs::write(data.join("dynamic-search-rules.json"), legacy.to_string()).unwrap();
    let server = Server::start_on(&data, &options(&[]));
    assert_eq!(
        list(&server, &json!({})).json()["results"],
        json!([{"uid": "old", "precedence": 2, "active": true,
            "conditions": {"time": {"end": "2100-01-01T00:00:00Z"}, "query": {"words": "black"}},
            "actions": [{"selector": {"id": "7"}, "action": {"type": "pin", "position": 0}}]}])
    );
}

#[test]
fn a_rule_pins_documents_within_the_filter_whatever_the_query() {
    let server = start_enabled();
    add_movies(&server);
    let before = search(&server, "movies", &json!({"q": "Batman Returns"}));
    put_rule(
        &server,
        "returns",
        &json!({
            "conditions": [{"scope": "query", "contains": "RETURNS"}],
            "actions": [pin("pinned-miss", 0), pin("filtered-pin", 1), pin("no-such-document", 0)]
        }),
    );
    // The pinned document need not match the query; the filter still applies to pins.
    let answer = search(
        &server,
        "movies",
        &json!({"q": "Batman Returns", "filter": "kind = keep", "showRankingScore": true,
                "showRankingScoreDetails": true, "facets": ["color"]}),
    );
    assert_eq!(
        hit_ids(&answer),
        ["pinned-miss", "organic-match", "second-match"]
    );
    let pinned = &answer["hits"][0];
    assert_eq!(pinned["_rankingScore"], json!(1.0));
    assert_eq!(
        pinned["_rankingScoreDetails"],
        json!({"pin": {"order": 0, "position": 0}})
    );
    assert_eq!(answer["estimatedTotalHits"], 3);
    assert_eq!(
        answer["facetDistribution"],
        json!({"color": {"blue": 1, "red": 2}})
    );
    // Without the filter the second pin shows at its place.
    let answer = search(&server, "movies", &json!({"q": "batman returns"}));
    assert_eq!(
        hit_ids(&answer),
        [
            "pinned-miss",
            "filtered-pin",
            "organic-match",
            "second-match"
        ]
    );
    assert_eq!(answer["estimatedTotalHits"], 4);
    // Pages count the pins.
    let page = search(
        &server,
        "movies",
        &json!({"q": "Batman Returns", "filter": "kind = keep", "page": 2, "hitsPerPage": 2}),
    );
    assert_eq!(hit_ids(&page), ["second-match"]);
    assert_eq!(
        (page["totalHits"].clone(), page["totalPages"].clone()),
        (json!(3), json!(2))
    );
    // A query without the rule's text gets no pin.
    let answer = search(&server, "movies", &json!({"q": "Batman"}));
    assert!(
        !hit_ids(&answer).contains(&"pinned-miss".to_owned()),
        "{answer}"
    );
    // The feature off, the rule is kept but not applied.
    set_feature(&server, false);
    let answer = search(&server, "movies", &json!({"q": "Batman Returns"}));
    assert_eq!(hit_ids(&answer), hit_ids(&before));
}

#[test]
fn late_pins_follow_the_ranked_hits_and_offsets_count_them() {
    let server = start_enabled();
    succeed(
        &server,
        "POST",
        "/indexes/products/documents",
        Some(
            &json!([{"id": "organic-1"}, {"id": "late-pin-1"}, {"id": "organic-2"}, {"id": "late-pin-2"}]),
        ),
    );
    put_rule(
        &server,
        "pump",
        &json!({"actions": [pin("late-pin-1", 10), pin("late-pin-2", 20)]}),
    );
    let answer = search(&server, "products", &json!({"limit": 10}));
    let mut first = hit_ids(&answer);
    first[..2].sort();
    assert_eq!(
        first,
        ["organic-1", "organic-2", "late-pin-1", "late-pin-2"]
    );
    assert_eq!(answer["estimatedTotalHits"], 4);
    let answer = search(&server, "products", &json!({"offset": 2, "limit": 2}));
    assert_eq!(hit_ids(&answer), ["late-pin-1", "late-pin-2"]);
    // An empty query matches `isEmpty: true`; a query text does not.
    put_rule(
        &server,
        "empty",
        &json!({"conditions": [{"scope": "query", "isEmpty": true}], "actions": [pin("organic-2", 0)]}),
    );
    let answer = search(&server, "products", &json!({"q": "  "}));
    assert_eq!(
        hit_ids(&answer),
        ["organic-2", "organic-1", "late-pin-1", "late-pin-2"]
    );
    // Pins need no match: the query's two hits, then the late pins.
    let answer = search(&server, "products", &json!({"q": "organic"}));
    assert_eq!(
        hit_ids(&answer),
        ["organic-1", "organic-2", "late-pin-1", "late-pin-2"]
    );
    delete_rule(&server, "pump");
    let answer = search(&server, "products", &json!({"q": "organic"}));
    assert_eq!(hit_ids(&answer), ["organic-1", "organic-2"]);
    assert_eq!(answer["estimatedTotalHits"], 2);
}

#[test]
fn priorities_decide_between_rules_and_inactive_or_unmatched_rules_pin_nothing() {
    let server = start_enabled();
    add_movies(&server);
    let query = json!({"q": "Batman"});
    // Same position: the smaller priority first. Same document: the smaller priority's place.
    put_rule(
        &server,
        "a-low",
        &json!({"priority": 9, "actions": [pin("other", 0), pin("pinned-miss", 3)]}),
    );
    put_rule(
        &server,
        "b-high",
        &json!({"priority": 1, "actions": [pin("pinned-miss", 0)]}),
    );
    let answer = search(&server, "movies", &query);
    let hits = hit_ids(&answer);
    assert_eq!(hits[..2], ["pinned-miss", "other"], "{answer}");
    assert_eq!(hits.iter().filter(|id| *id == "pinned-miss").count(), 1);
    // Swapping priorities swaps them.
    put_rule(&server, "b-high", &json!({"priority": 20}));
    let hits = hit_ids(&search(&server, "movies", &query));
    assert_eq!(hits[0], "other");
    assert_eq!(hits[3], "pinned-miss");
    // A rule without priority comes after every numbered one.
    put_rule(
        &server,
        "b-high",
        &json!({"priority": null, "actions": [pin("filtered-pin", 0)]}),
    );
    let hits = hit_ids(&search(&server, "movies", &query));
    assert_eq!(hits[..2], ["other", "filtered-pin"]);

    // Inactive rules, closed time windows and other indexes pin nothing.
    put_rule(&server, "a-low", &json!({"active": false}));
    put_rule(
        &server,
        "b-high",
        &json!({"conditions": [{"scope": "time", "end": "2001-01-01T00:00:00Z"}]}),
    );
    put_rule(
        &server,
        "c-elsewhere",
        &json!({"actions": [{"selector": {"indexUid": "books", "id": "other"}, "action": {"type": "pin", "position": 0}}]}),
    );
    put_rule(
        &server,
        "d-future",
        &json!({"conditions": [{"scope": "time", "start": "2999-01-01T00:00:00Z"}], "actions": [pin("other", 0)]}),
    );
    let answer = search(&server, "movies", &query);
    assert!(!hit_ids(&answer).contains(&"other".to_owned()), "{answer}");
    assert!(
        !hit_ids(&answer).contains(&"pinned-miss".to_owned()),
        "{answer}"
    );
    // An open window and the right index pin again.
    put_rule(
        &server,
        "b-high",
        &json!({"conditions": [{"scope": "time", "start": "2001-01-01T00:00:00Z", "end": "2999-01-01T00:00:00Z"}]}),
    );
    put_rule(
        &server,
        "c-elsewhere",
        &json!({"priority": 5, "actions": [{"selector": {"indexUid": "movies", "id": "other"}, "action": {"type": "pin", "position": 0}}]}),
    );
    let hits = hit_ids(&search(&server, "movies", &query));
    assert_eq!(hits[..2], ["other", "filtered-pin"]);
}

#[test]
fn multi_search_and_federated_search_pin_documents() {
    let server = start_enabled();
    add_movies(&server);
    succeed(
        &server,
        "POST",
        "/indexes/books/documents",
        Some(&json!([{"id": "b1", "title": "Batman: Year One"}, {"id": "b2", "title": "Dune"}])),
    );
    put_rule(
        &server,
        "movies-rule",
        &json!({"actions": [{"selector": {"indexUid": "movies", "id": "pinned-miss"}, "action": {"type": "pin", "position": 1}}]}),
    );
    put_rule(
        &server,
        "books-rule",
        &json!({"conditions": [{"scope": "query", "contains": "batman"}],
                "actions": [{"selector": {"indexUid": "books", "id": "b2"}, "action": {"type": "pin", "position": 0}}]}),
    );
    let queries = json!([
        {"indexUid": "movies", "q": "Batman", "filter": "kind = keep"},
        {"indexUid": "books", "q": "Batman"}
    ]);
    let response = server.send("POST", "/multi-search", Some(&json!({"queries": queries})));
    assert_eq!(response.status, 200, "{}", response.text());
    let results = response.json()["results"].clone();
    assert_eq!(ids(&results[0]["hits"])[1], "pinned-miss");
    assert_eq!(results[0]["estimatedTotalHits"], 3);
    assert_eq!(ids(&results[1]["hits"]), ["b2", "b1"]);

    let response = server.send(
        "POST",
        "/multi-search",
        Some(&json!({"federation": {"limit": 3}, "queries": queries})),
    );
    assert_eq!(response.status, 200, "{}", response.text());
    let answer = response.json();
    let hits = answer["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 3, "{answer}");
    assert_eq!(hits[0]["id"], "b2", "{answer}");
    assert_eq!(hits[1]["id"], "pinned-miss", "{answer}");
    assert_eq!(
        hits[0]["_federation"],
        json!({"indexUid": "books", "queriesPosition": 1, "weightedRankingScore": 1.0})
    );
    assert_eq!(hits[1]["_federation"]["indexUid"], "movies");
    assert_eq!(answer["estimatedTotalHits"], 5);
    // The pins of the page before are not shown again.
    let response = server.send(
        "POST",
        "/multi-search",
        Some(&json!({"federation": {"offset": 2, "limit": 10}, "queries": queries})),
    );
    let later = ids(&response.json()["hits"]);
    assert!(!later.contains(&"b2".to_owned()) && !later.contains(&"pinned-miss".to_owned()));
    assert_eq!(later.len(), 3, "{later:?}");
    // Pins at one position go by index uid (Meilisearch groups local queries by index).
    put_rule(
        &server,
        "movies-first",
        &json!({"actions": [{"selector": {"indexUid": "movies", "id": "other"}, "action": {"type": "pin", "position": 0}}]}),
    );
    let response = server.send(
        "POST",
        "/multi-search",
        Some(&json!({"federation": {"limit": 4}, "queries": queries})),
    );
    let hits = ids(&response.json()["hits"]);
    assert_eq!(hits[..3], ["b2", "other", "pinned-miss"], "{hits:?}");
}

/// Starts a server on a new data directory in `scratch` from `argument` (`--import-dump` or
/// `--import-snapshot`) and `file`.
fn restore(scratch: &Path, name: &str, argument: &str, file: &Path) -> Server {
    let file = file.to_string_lossy().into_owned();
    Server::start_on(&scratch.join(name), &options(&[argument, &file]))
}

#[test]
fn dumps_and_snapshots_carry_the_rules() {
    let server = start_enabled();
    add_movies(&server);
    let first = put_rule(
        &server,
        "first",
        &json!({"description": "d", "priority": 2,
                "conditions": [{"scope": "time", "start": "2020-01-01T00:00:00+02:00"}],
                "actions": [pin("pinned-miss", 0)]}),
    );
    let second = put_rule(
        &server,
        "second",
        &json!({"active": false, "actions": [pin("other", 0)]}),
    );
    let task = succeed(&server, "POST", "/dumps", None);
    let uid = task["details"]["dumpUid"].as_str().unwrap();
    let dump = server
        .data_directory
        .with_extension("dumps")
        .join(format!("{uid}.dump"));
    succeed(&server, "POST", "/snapshots", None);
    let name = server.data_directory.file_name().unwrap().to_string_lossy();
    let snapshot = server
        .data_directory
        .with_extension("snapshots")
        .join(format!("{name}.snapshot"));

    // The dump holds one file per rule, as Meilisearch lays them out.
    let unpacked = tempfile::tempdir().unwrap();
    let archive = flate2::read::GzDecoder::new(std::fs::File::open(&dump).unwrap());
    tar::Archive::new(archive).unpack(unpacked.path()).unwrap();
    let rules_directory = unpacked.path().join("dynamic-search-rules");
    let read = |name: &str| -> Value {
        serde_json::from_slice(&std::fs::read(rules_directory.join(name)).unwrap()).unwrap()
    };
    assert_eq!(read("000000000.json"), first);
    assert_eq!(read("000000001.json"), second);

    let scratch = tempfile::tempdir().unwrap();
    for (name, argument, file) in [
        ("from-dump.ms", "--import-dump", &dump),
        ("from-snapshot.ms", "--import-snapshot", &snapshot),
    ] {
        let restored = restore(scratch.path(), name, argument, file);
        assert_eq!(
            list(&restored, &json!({})).json()["results"],
            json!([first, second]),
            "{name}"
        );
        let answer = search(&restored, "movies", &json!({"q": "Batman"}));
        assert_eq!(hit_ids(&answer)[0], "pinned-miss", "{name}: {answer}");
    }
}

#[test]
fn a_dump_laid_out_by_meilisearch_brings_its_rules() {
    let scratch = tempfile::tempdir().unwrap();
    let dump = scratch.path().join("meilisearch.dump");
    let rule = json!({"uid": "from-meilisearch", "priority": 4, "active": true,
        "conditions": [{"scope": "query", "isEmpty": true}],
        "actions": [{"selector": {"indexUid": "products", "id": "123"}, "action": {"type": "pin", "position": 1}}]});
    let features = json!({"metrics": false, "logsRoute": false, "editDocumentsByFunction": false,
        "containsFilter": false, "dynamicSearchRules": true, "network": false,
        "getTaskDocumentsRoute": false, "taskQueueCompactionRoute": false,
        "compositeEmbedders": false, "chatCompletions": false, "multimodal": false,
        "foreignKeys": false});
    let files = [
        (
            "metadata.json",
            json!({"dumpVersion": "V6", "dbVersion": "1.41.0", "dumpDate": "2025-11-20T10:04:00.15Z"})
                .to_string(),
        ),
        ("keys.jsonl", String::new()),
        ("experimental-features.json", features.to_string()),
        ("tasks/queue.jsonl", String::new()),
        ("dynamic-search-rules/000000000.json", rule.to_string()),
    ];
    let encoder = flate2::write::GzEncoder::new(
        std::fs::File::create(&dump).unwrap(),
        flate2::Compression::default(),
    );
    let mut builder = tar::Builder::new(encoder);
    for (name, content) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(content.len() as u64);
        header.set_mode(0o644);
        builder
            .append_data(&mut header, format!("./{name}"), content.as_bytes())
            .unwrap();
    }
    builder.into_inner().unwrap().finish().unwrap();
    let server = restore(scratch.path(), "data.ms", "--import-dump", &dump);
    assert_eq!(
        server
            .send("GET", "/dynamic-search-rules/from-meilisearch", None)
            .json(),
        json!({"uid": "from-meilisearch", "precedence": 4, "active": true,
            "conditions": {"query": {"isEmpty": true}},
            "actions": [{"selector": {"indexUid": "products", "id": "123"}, "action": {"type": "pin", "position": 1}}]})
    );
}

/// In a sharded network the rules' changes are writes like any other (Meilisearch 1.50
/// forwards them): the leader forwards each to every remote, whose copy of the task applies
/// it, and a follower refuses a user's change with `not_leader`.
#[test]
fn the_leader_forwards_rule_changes_and_a_follower_refuses_them() {
    use common::network::{
        network_options, remotes_named, start_network_instance, wait_for_every_change,
    };
    let servers: Vec<Server> = (0..2)
        .map(|_| {
            let server = start_network_instance(&network_options(2));
            set_feature(&server, true);
            server
        })
        .collect();
    let remotes = remotes_named(&["ms0", "ms1"], &servers);
    let network = json!({"self": "ms0", "leader": "ms0", "remotes": remotes,
                         "shards": {"s0": {"remotes": ["ms0"]}, "s1": {"remotes": ["ms1"]}}});
    let response = servers[0].send("PATCH", "/network", Some(&network));
    assert_eq!(response.status, 202, "{}", response.text());
    wait_for_every_change(&servers);
    let rule = json!({"description": "pinned", "precedence": 1, "active": true,
                      "conditions": {"query": {"isEmpty": true}}, "actions": [pin("7", 1)]});
    let task = change(
        &servers[0],
        "PATCH",
        "/dynamic-search-rules/first",
        Some(&rule),
    );
    assert!(
        task["network"]["remote_tasks"]["ms1"]["taskUid"].is_u64(),
        "{task}"
    );
    change(
        &servers[0],
        "PATCH",
        "/dynamic-search-rules/second",
        Some(&rule),
    );
    wait_for_every_change(&servers);
    let on_follower = servers[1].send("GET", "/dynamic-search-rules/first", None);
    assert_eq!(on_follower.status, 200, "{}", on_follower.text());
    assert_eq!(on_follower.json()["description"], "pinned");
    let refused = patch_rule(&servers[1], "third", &rule);
    assert_eq!(refused.status, 400, "{}", refused.text());
    assert_eq!(refused.json()["code"], "not_leader", "{}", refused.text());
    delete_rule(&servers[0], "first");
    wait_for_every_change(&servers);
    let gone = servers[1].send("GET", "/dynamic-search-rules/first", None);
    assert_eq!(gone.status, 404, "{}", gone.text());
    change(&servers[0], "DELETE", "/dynamic-search-rules", None);
    wait_for_every_change(&servers);
    let listed = list(&servers[1], &json!({})).json();
    assert_eq!(listed["total"], 0, "{listed}");
}

/// A network change brings the leader's rules to every instance (Meilisearch 1.50 exports
/// them as one more index): an instance that joins with rules of its own ends with exactly
/// the leader's, and one whose rules are off still finishes the change, without rules. Run
/// with and without an index on the network, which changes what the leader announces.
#[test]
fn a_network_change_brings_the_leaders_rules_to_every_instance() {
    use common::network::{
        network_options, remotes_named, start_network_instance, wait_for_every_change,
    };
    const NAMES: [&str; 4] = ["ms0", "ms1", "ms2", "ms3"];
    for with_index in [true, false] {
        let servers: Vec<Server> = NAMES
            .iter()
            .map(|name| {
                let server = start_network_instance(&network_options(2));
                set_feature(&server, *name != "ms3");
                server
            })
            .collect();
        let stale = json!({"description": "stale", "actions": [pin("1", 0)]});
        change(
            &servers[2],
            "PATCH",
            "/dynamic-search-rules/stale",
            Some(&stale),
        );
        let remotes = remotes_named(&NAMES, &servers);
        let first = json!({"self": "ms0", "leader": "ms0", "remotes": remotes,
                           "shards": {"s0": {"remotes": ["ms0"]}, "s1": {"remotes": ["ms1"]}}});
        let response = servers[0].send("PATCH", "/network", Some(&first));
        assert_eq!(response.status, 202, "{}", response.text());
        wait_for_every_change(&servers[..2]);
        if with_index {
            let documents: Vec<Value> = (0..40).map(|id| json!({"id": id})).collect();
            succeed(
                &servers[0],
                "POST",
                "/indexes/books/documents",
                Some(&json!(documents)),
            );
            wait_for_every_change(&servers[..2]);
        }
        let rules = [
            (
                "pinned",
                json!({"description": "pinned", "precedence": 1, "active": false,
                              "conditions": {"query": {"isEmpty": true}}, "actions": [pin("7", 1)]}),
            ),
            (
                "words",
                json!({"conditions": {"query": {"words": "phone"}}, "actions": [pin("3", 0)]}),
            ),
        ];
        for (uid, rule) in &rules {
            change(
                &servers[0],
                "PATCH",
                &format!("/dynamic-search-rules/{uid}"),
                Some(rule),
            );
        }
        wait_for_every_change(&servers[..2]);
        let grown = json!({"shards": {"s0": {"remotes": ["ms0"]}, "s1": {"remotes": ["ms1"]},
                                      "s2": {"remotes": ["ms2"]}, "s3": {"remotes": ["ms3"]}}});
        let response = servers[0].send("PATCH", "/network", Some(&grown));
        assert_eq!(response.status, 202, "{}", response.text());
        wait_for_every_change(&servers);
        let leaders = list(&servers[0], &json!({})).json();
        assert_eq!(leaders["total"], 2, "{leaders}");
        for server in &servers[1..3] {
            let listed = list(server, &json!({})).json();
            assert_eq!(listed["results"], leaders["results"], "index {with_index}");
        }
        let off = list(&servers[3], &json!({}));
        assert_eq!(off.status, 400, "{}", off.text());
        assert_eq!(off.json()["code"], "feature_not_enabled");
        if with_index {
            let total: usize = servers
                .iter()
                .map(|server| common::network::document_ids(server, "books").len())
                .sum();
            assert_eq!(total, 40);
        }
    }
}
