//! Regressions found by running the official Meilisearch JS SDK suite against the server:
//! each test pins one behaviour the suite expected of Meilisearch v1.41, with expected
//! values taken from the API reference.

mod common;

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
