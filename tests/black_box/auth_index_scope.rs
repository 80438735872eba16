//! What the routes naming no index show a key restricted to some indexes: only its indexes.
//! The route matrix (`auth_route_matrix.rs`) checks who passes authentication; this file
//! checks that the routes that let restricted keys through (`/indexes`, `/stats`, `/tasks`,
//! `/batches`, `/swap-indexes`, `/multi-search`) then narrow their work to the key's
//! indexes, as Meilisearch does: tasks about several indexes or none (swaps, task
//! cancelations and deletions) stay hidden, and a named index outside the key is refused.

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]

use crate::common;

use common::{MASTER_KEY, Options, Server, json_request, request};
use serde_json::{Value, json};

fn start() -> Server {
    Server::start_with(Options {
        master_key: Some(MASTER_KEY.to_string()),
        ..Options::default()
    })
}

/// Runs `method path` with the master key, waits for its task and returns it.
fn run_task(server: &Server, method: &str, path: &str, body: &Value) -> Value {
    let response = server.send(method, path, Some(body));
    assert_eq!(response.status, 202, "{method} {path}: {}", response.text());
    let task = server.wait_task(&response.json()["taskUid"]);
    assert_eq!(task["status"], "succeeded", "{task}");
    task
}

fn get(server: &Server, path: &str, key: &str) -> common::HttpResponse {
    server.raw(&request("GET", path, Some(key)))
}

/// Two indexes with a document each, a swap of two more, and a key of every action
/// restricted to `mine`: returns the key and the uids of the tasks of `theirs` and the swap.
struct Fixture {
    server: Server,
    key: String,
    mine_task: Value,
    theirs_task: Value,
    swap_task: Value,
}

fn fixture() -> Fixture {
    let server = start();
    let mine_task = run_task(
        &server,
        "POST",
        "/indexes/mine/documents",
        &json!([{"id": 1, "title": "mine"}]),
    );
    let theirs_task = run_task(
        &server,
        "POST",
        "/indexes/theirs/documents",
        &json!([{"id": 1, "title": "theirs"}]),
    );
    let swap_task = run_task(
        &server,
        "POST",
        "/swap-indexes",
        &json!([{"indexes": ["mine", "theirs"]}]),
    );
    // Swap back, so that `mine` holds its own document again.
    run_task(
        &server,
        "POST",
        "/swap-indexes",
        &json!([{"indexes": ["mine", "theirs"]}]),
    );
    let body = json!({"actions": ["*"], "indexes": ["mine"], "expiresAt": null});
    let created = server.send("POST", "/keys", Some(&body));
    assert_eq!(created.status, 201, "{}", created.text());
    let key = created.json()["key"]
        .as_str()
        .expect("a created key has its key string")
        .to_string();
    Fixture {
        server,
        key,
        mine_task,
        theirs_task,
        swap_task,
    }
}

fn uids(list: &Value) -> Vec<Value> {
    list["results"]
        .as_array()
        .expect("a listing has results")
        .iter()
        .map(|item| item["uid"].clone())
        .collect()
}

#[test]
fn listings_show_only_the_keys_indexes_and_their_one_index_tasks() {
    let Fixture {
        server,
        key,
        mine_task,
        ..
    } = fixture();
    let indexes = get(&server, "/indexes", &key).json();
    assert_eq!(uids(&indexes), vec![json!("mine")], "{indexes}");

    let stats = get(&server, "/stats", &key).json();
    let names: Vec<&String> = stats["indexes"]
        .as_object()
        .expect("stats list indexes")
        .keys()
        .collect();
    assert_eq!(names, vec!["mine"], "{stats}");

    let tasks = get(&server, "/tasks", &key).json();
    assert_eq!(uids(&tasks), vec![mine_task["uid"].clone()], "{tasks}");
    let batches = get(&server, "/batches", &key).json();
    assert_eq!(
        uids(&batches),
        vec![mine_task["batchUid"].clone()],
        "{batches}"
    );
    let everything = server.send("GET", "/tasks", None).json();
    assert_eq!(uids(&everything).len(), 4, "{everything}");
}

#[test]
fn a_task_or_batch_outside_the_keys_indexes_is_not_found() {
    let fixture = fixture();
    let server = &fixture.server;
    let own = get(
        server,
        &format!("/tasks/{}", fixture.mine_task["uid"]),
        &fixture.key,
    );
    assert_eq!(own.status, 200, "{}", own.text());
    let own_batch = get(
        server,
        &format!("/batches/{}", fixture.mine_task["batchUid"]),
        &fixture.key,
    );
    assert_eq!(own_batch.status, 200, "{}", own_batch.text());
    for task in [&fixture.theirs_task, &fixture.swap_task] {
        let response = get(server, &format!("/tasks/{}", task["uid"]), &fixture.key);
        assert_eq!(response.status, 404, "task {task}: {}", response.text());
        assert_eq!(response.json()["code"], "task_not_found");
        let response = get(
            server,
            &format!("/batches/{}", task["batchUid"]),
            &fixture.key,
        );
        assert_eq!(response.status, 404, "batch of {task}: {}", response.text());
        assert_eq!(response.json()["code"], "batch_not_found");
        // With the master key both are there.
        let path = format!("/tasks/{}", task["uid"]);
        assert_eq!(server.send("GET", &path, None).status, 200);
    }
}

#[test]
fn naming_an_index_outside_the_key_is_refused_and_changes_nothing() {
    let fixture = fixture();
    let server = &fixture.server;
    let key = Some(fixture.key.as_str());
    let swap = json!([{"indexes": ["mine", "theirs"]}]).to_string();
    let response = server.raw(&json_request("POST", "/swap-indexes", key, &swap));
    assert_eq!(response.status, 403, "{}", response.text());
    assert_eq!(response.json()["code"], "invalid_api_key");

    let search = json!({"queries": [{"indexUid": "theirs", "q": ""}]}).to_string();
    let response = server.raw(&json_request("POST", "/multi-search", key, &search));
    assert_eq!(response.status, 403, "{}", response.text());
    assert_eq!(response.json()["code"], "invalid_api_key");
    let search = json!({"queries": [{"indexUid": "mine", "q": ""}]}).to_string();
    let response = server.raw(&json_request("POST", "/multi-search", key, &search));
    assert_eq!(response.status, 200, "{}", response.text());

    let create = json!({"uid": "elsewhere"}).to_string();
    let response = server.raw(&json_request("POST", "/indexes", key, &create));
    assert_eq!(response.status, 403, "{}", response.text());
    assert_eq!(response.json()["code"], "invalid_api_key");

    // Deleting or canceling every task reaches only the key's own one-index tasks.
    // Meilisearch answers a task deletion 200, not 202.
    let response = server.raw(&request("DELETE", "/tasks?uids=*", key));
    assert_eq!(response.status, 200, "{}", response.text());
    let deletion = server.wait_task(&response.json()["taskUid"]);
    assert_eq!(deletion["details"]["deletedTasks"], 1, "{deletion}");
    for task in [&fixture.theirs_task, &fixture.swap_task] {
        let path = format!("/tasks/{}", task["uid"]);
        assert_eq!(server.send("GET", &path, None).status, 200, "{task}");
    }
    let theirs = server
        .send("GET", "/indexes/theirs/documents/1", None)
        .json();
    assert_eq!(theirs["title"], "theirs", "{theirs}");
}
