//! Helpers of the multi-instance network tests: instances that may call each other on
//! loopback with the `network` feature on, remotes naming them, where the topology places a
//! document (the rendezvous winner among the shard names, as Meilisearch Enterprise), the
//! documents an instance holds, and waiting for every instance's network change.
//!
//! Invariant: every instance is started with the master key [`MASTER_KEY`], which is also
//! every remote's search and write key, so any instance may call any other.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use super::{MASTER_KEY, Options, Server};

/// How long a killed instance stays down before its restart: long enough for the others
/// to find it gone.
const RESTART_DOWNTIME: std::time::Duration = std::time::Duration::from_millis(300);

/// The options of an instance of a test network using `cores` cores.
pub fn network_options(cores: usize) -> Options {
    Options {
        master_key: Some(MASTER_KEY.to_owned()),
        extra_arguments: vec![
            "--experimental-allowed-ip-networks".to_owned(),
            "127.0.0.0/8".to_owned(),
        ],
        cores: Some(cores),
        ..Options::default()
    }
}

/// Starts an instance with `options` and turns its `network` feature on.
pub fn start_network_instance(options: &Options) -> Server {
    let server = Server::start_with(options.clone());
    let response = server.send(
        "PATCH",
        "/experimental-features",
        Some(&json!({"network": true})),
    );
    assert_eq!(response.status, 200, "{}", response.text());
    server
}

/// Kills `server` with SIGKILL (a crash) and, after [`RESTART_DOWNTIME`], starts it again
/// on its data directory and address, with `options`.
pub fn kill_and_restart(server: Server, options: &Options) -> Server {
    let (address, data_directory) = (server.address, server.data_directory.clone());
    let scratch = server.kill_keeping_data();
    std::thread::sleep(RESTART_DOWNTIME);
    let mut restarted = Server::start_at(&data_directory, options, address);
    restarted.keep_scratch(scratch);
    restarted
}

/// `server` as a remote: its URL, with [`MASTER_KEY`] to search and to write.
pub fn remote_of(server: &Server) -> Value {
    json!({"url": server.url(), "searchApiKey": MASTER_KEY, "writeApiKey": MASTER_KEY})
}

/// Remotes naming each of `servers` by the name at the same place in `names`, with
/// [`MASTER_KEY`] to search and to write.
pub fn remotes_named(names: &[&str], servers: &[Server]) -> Value {
    let remotes: serde_json::Map<String, Value> = names
        .iter()
        .zip(servers)
        .map(|(name, server)| ((*name).to_owned(), remote_of(server)))
        .collect();
    Value::Object(remotes)
}

/// The remotes that must hold the document `id` under `shards` (`{shard: {"remotes":
/// [...]}}`): those of the shard whose name wins the rendezvous for `id`.
pub fn owners_of(shards: &Value, id: &str) -> Vec<String> {
    let names: Vec<&str> = shards
        .as_object()
        .expect("shards are an object")
        .keys()
        .map(String::as_str)
        .collect();
    let shard = shards::rendezvous::rendezvous_winner(names.iter().copied(), id)
        .expect("a network has a shard");
    shards[shard]["remotes"]
        .as_array()
        .expect("a shard has remotes")
        .iter()
        .map(|name| name.as_str().expect("a remote is named").to_owned())
        .collect()
}

/// The documents of `index` on `server` itself (none when it has no such index), by id (as
/// JSON text), with only `fields`. A listing reads the whole network by default when the
/// network has a leader, so an instance with the `network` feature is asked for its own.
pub fn documents_of(server: &Server, index: &str, fields: &str) -> BTreeMap<String, Value> {
    let features = server.send("GET", "/experimental-features", None).json();
    let own = if features["network"] == true {
        "&useNetwork=false"
    } else {
        ""
    };
    let page = server
        .send(
            "GET",
            &format!("/indexes/{index}/documents?limit=1000000&fields={fields}{own}"),
            None,
        )
        .json();
    page["results"]
        .as_array()
        .map(|results| {
            results
                .iter()
                .map(|document| (document["id"].to_string(), document.clone()))
                .collect()
        })
        .unwrap_or_default()
}

/// Every document id of `index` on `server`, as JSON text.
pub fn document_ids(server: &Server, index: &str) -> BTreeSet<String> {
    documents_of(server, index, "id").into_keys().collect()
}

/// The latest task of type `kind` on `server`.
pub fn last_task_of_type(server: &Server, kind: &str) -> Value {
    let page = server
        .send("GET", &format!("/tasks?types={kind}&limit=1"), None)
        .json();
    page["results"][0].clone()
}

/// Waits until every instance's latest network change and every task after it succeeded.
pub fn wait_for_every_change<'server>(servers: impl IntoIterator<Item = &'server Server>) {
    for server in servers {
        let change = last_task_of_type(server, "networkTopologyChange");
        let change = server.wait_task(change["uid"].as_u64().expect("a change was registered"));
        assert_eq!(change["status"], "succeeded", "{change}");
        let last = server.send("GET", "/tasks?limit=1", None).json()["results"][0].clone();
        let last = server.wait_task(last["uid"].as_u64().expect("a task was registered"));
        assert_eq!(last["status"], "succeeded", "{last}");
    }
}
