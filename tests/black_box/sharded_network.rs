//! A sharded network of real instances on loopback (Meilisearch Enterprise's leader
//! protocol): the leader's `PATCH /network` checked across the network and handed to every
//! follower as a `networkTopologyChange` task, writes forwarded by the leader to every
//! remote with the tasks' `network` bookkeeping, followers refusing users' writes, the
//! inter-instance headers' refusals, a wrong write key recorded per remote, and documents
//! moved by changes of the shards (an instance joins, a replica is added, an instance
//! leaves) to exactly where the new topology says, and the visibility rule of a network
//! search (a sortable attribute that is not displayed orders the merged hits, unseen).

#![allow(clippy::unwrap_used)]

use crate::common;

use common::network::{
    document_ids, kill_and_restart, last_task_of_type, network_options, owners_of,
    start_network_instance, wait_for_every_change,
};
use common::{MASTER_KEY, Server};
use serde_json::{Value, json};

/// The names of the instances, the first one the leader.
const NAMES: [&str; 3] = ["ms0", "ms1", "ms2"];

fn start_instance() -> Server {
    start_network_instance(&network_options(2))
}

/// Remotes naming every instance, with `write_key` as every write key.
fn remotes(servers: &[Server], write_key: &str) -> Value {
    let mut remotes = serde_json::Map::new();
    for (name, server) in NAMES.iter().zip(servers) {
        remotes.insert(
            (*name).to_owned(),
            json!({"url": server.url(), "searchApiKey": MASTER_KEY, "writeApiKey": write_key}),
        );
    }
    Value::Object(remotes)
}

/// One shard per instance, named after it.
fn one_shard_each() -> Value {
    json!({"s0": {"remotes": ["ms0"]}, "s1": {"remotes": ["ms1"]}, "s2": {"remotes": ["ms2"]}})
}

/// Starts three instances and makes `ms0` the leader of a network of one shard each.
fn sharded_network() -> Vec<Server> {
    let servers: Vec<Server> = (0..NAMES.len()).map(|_| start_instance()).collect();
    let body = json!({"self": "ms0", "leader": "ms0", "remotes": remotes(&servers, MASTER_KEY),
                      "shards": one_shard_each()});
    let response = servers[0].send("PATCH", "/network", Some(&body));
    assert_eq!(response.status, 202, "{}", response.text());
    let summarized = response.json();
    assert_eq!(summarized["type"], "networkTopologyChange");
    let task = servers[0].wait_task(summarized["taskUid"].as_u64().unwrap());
    assert_eq!(task["status"], "succeeded", "{task}");
    assert_eq!(task["details"]["message"], "Finished");
    for name in ["ms1", "ms2"] {
        assert!(
            task["network"]["remote_tasks"][name]["taskUid"].is_u64(),
            "{task}"
        );
    }
    // A follower may still be finishing its own change: a later PATCH would be refused.
    wait_for_every_change(&servers);
    servers
}

#[test]
fn the_leader_hands_its_network_to_every_follower() {
    let servers = sharded_network();
    let leader_network = servers[0].send("GET", "/network", None).json();
    for (name, server) in NAMES.iter().zip(&servers).skip(1) {
        let network = server.send("GET", "/network", None).json();
        assert_eq!(network["self"], *name);
        assert_eq!(network["leader"], "ms0");
        assert_eq!(network["version"], leader_network["version"]);
        assert_eq!(network["shards"], leader_network["shards"]);
        assert_eq!(network["remotes"], leader_network["remotes"]);
        let task = last_task_of_type(server, "networkTopologyChange");
        let task = server.wait_task(task["uid"].as_u64().unwrap());
        assert_eq!(task["status"], "succeeded", "{task}");
        assert_eq!(task["network"]["origin"]["remoteName"], "ms0");
        assert_eq!(
            task["network"]["origin"]["networkVersion"],
            leader_network["version"]
        );
    }
    // A follower may not change the network, nor take a user's write.
    let refused = servers[1].send("PATCH", "/network", Some(&json!({"remotes": {}})));
    assert_eq!(refused.status, 400, "{}", refused.text());
    assert_eq!(refused.json()["code"], "not_leader");
    let refused = servers[1].send(
        "POST",
        "/indexes/books/documents",
        Some(&json!([{"id": 1}])),
    );
    assert_eq!(refused.status, 400, "{}", refused.text());
    assert_eq!(refused.json()["code"], "not_leader");
    assert_eq!(
        refused.json()["message"],
        "This remote is not the leader of the network.\n  - Note: only the leader `ms0` can receive new tasks."
    );
}

#[test]
fn the_leader_forwards_every_write_and_records_each_remote_task() {
    let servers = sharded_network();
    let documents: Vec<Value> = (0..60)
        .map(|id| json!({"id": id, "title": format!("book {id}")}))
        .collect();
    let response = servers[0].send(
        "POST",
        "/indexes/books/documents?customMetadata=batch-1",
        Some(&json!(documents)),
    );
    assert_eq!(response.status, 202, "{}", response.text());
    let uid = response.json()["taskUid"].as_u64().unwrap();
    let task = servers[0].wait_task(uid);
    assert_eq!(task["status"], "succeeded", "{task}");
    assert_eq!(task["customMetadata"], "batch-1");
    let version = servers[0].send("GET", "/network", None).json()["version"].clone();
    assert_eq!(task["network"]["network_version"], version);
    for (name, server) in NAMES.iter().zip(&servers).skip(1) {
        let remote_uid = task["network"]["remote_tasks"][name]["taskUid"]
            .as_u64()
            .unwrap_or_else(|| panic!("{task}"));
        let copy = server.wait_task(remote_uid);
        assert_eq!(copy["status"], "succeeded", "{copy}");
        assert_eq!(copy["type"], "documentAdditionOrUpdate");
        assert_eq!(copy["customMetadata"], "batch-1");
        assert_eq!(copy["details"]["receivedDocuments"], 60);
        assert_eq!(copy["network"]["origin"]["remoteName"], "ms0");
        assert_eq!(copy["network"]["origin"]["taskUid"], uid);
    }
    // Settings and deletions follow the same way.
    let response = servers[0].send(
        "PATCH",
        "/indexes/books/settings",
        Some(&json!({"filterableAttributes": ["title"]})),
    );
    let task = servers[0].wait_task(response.json()["taskUid"].as_u64().unwrap());
    assert_eq!(task["status"], "succeeded", "{task}");
    for server in &servers[1..] {
        let last = last_task_of_type(server, "settingsUpdate");
        let last = server.wait_task(last["uid"].as_u64().unwrap());
        assert_eq!(last["status"], "succeeded", "{last}");
        let settings = server.send("GET", "/indexes/books/settings/filterable-attributes", None);
        assert_eq!(settings.json(), json!(["title"]));
    }
    let response = servers[0].send("DELETE", "/indexes/books", None);
    servers[0].wait_task(response.json()["taskUid"].as_u64().unwrap());
    for server in &servers[1..] {
        let last = last_task_of_type(server, "indexDeletion");
        server.wait_task(last["uid"].as_u64().unwrap());
        assert_eq!(server.send("GET", "/indexes/books", None).status, 404);
    }
}

#[test]
fn a_wrong_write_key_refuses_the_change_and_is_recorded_per_write() {
    let servers: Vec<Server> = (0..NAMES.len()).map(|_| start_instance()).collect();
    let mut remotes = remotes(&servers, MASTER_KEY);
    remotes["ms2"]["writeApiKey"] = json!("not-the-key-of-ms2-at-all");
    let body =
        json!({"self": "ms0", "leader": "ms0", "remotes": remotes, "shards": one_shard_each()});
    // The leader's checks call ms2 with the wrong key: the change is refused, nothing stored.
    let response = servers[0].send("PATCH", "/network", Some(&body));
    assert_eq!(response.status, 403, "{}", response.text());
    assert_eq!(response.json()["code"], "remote_invalid_api_key");
    assert_eq!(
        servers[0].send("GET", "/network", None).json()["leader"],
        Value::Null
    );
    // With a key of ms2 that is deleted once the network is up, writes reach ms1 only and
    // the leader's task says why ms2 has no copy.
    let key = servers[2].send(
        "POST",
        "/keys",
        Some(&json!({"actions": ["*"], "indexes": ["*"], "expiresAt": null})),
    );
    assert_eq!(key.status, 201, "{}", key.text());
    let key = key.json();
    remotes["ms2"]["writeApiKey"] = key["key"].clone();
    let body =
        json!({"self": "ms0", "leader": "ms0", "remotes": remotes, "shards": one_shard_each()});
    let response = servers[0].send("PATCH", "/network", Some(&body));
    assert_eq!(response.status, 202, "{}", response.text());
    servers[0].wait_task(response.json()["taskUid"].as_u64().unwrap());
    let deleted = servers[2].send(
        "DELETE",
        &format!("/keys/{}", key["uid"].as_str().unwrap()),
        None,
    );
    assert_eq!(deleted.status, 204, "{}", deleted.text());
    let response = servers[0].send(
        "POST",
        "/indexes/books/documents",
        Some(&json!([{"id": 1}])),
    );
    assert_eq!(response.status, 202, "{}", response.text());
    let task = servers[0].wait_task(response.json()["taskUid"].as_u64().unwrap());
    let remote_tasks = &task["network"]["remote_tasks"];
    assert!(remote_tasks["ms1"]["taskUid"].is_u64(), "{task}");
    assert_eq!(
        remote_tasks["ms2"]["error"]["code"], "remote_invalid_api_key",
        "{task}"
    );
    assert!(remote_tasks["ms2"].get("taskUid").is_none(), "{task}");
}

#[test]
fn network_headers_are_checked() {
    let servers = sharded_network();
    let follower = &servers[1];
    let half_origin = format!(
        "POST /indexes/books/documents HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {MASTER_KEY}\r\nContent-Type: application/json\r\nX-Meili-Proxy-Origin-Remote: ms0\r\nContent-Length: 2\r\n\r\n[]"
    );
    let response = follower.raw(&half_origin);
    assert_eq!(response.status, 400, "{}", response.text());
    assert_eq!(
        response.json()["code"],
        "inconsistent_document_change_headers"
    );
    let old_version = format!(
        "POST /indexes/books/documents HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {MASTER_KEY}\r\nContent-Type: application/json\r\nX-Meili-Proxy-Origin-Remote: ms0\r\nX-Meili-Proxy-Origin-TaskUid: 3\r\nX-Meili-Proxy-Origin-Network-Version: 00000000-0000-0000-0000-000000000000\r\nContent-Length: 2\r\n\r\n[]"
    );
    let response = follower.raw(&old_version);
    assert_eq!(response.status, 400, "{}", response.text());
    assert_eq!(response.json()["code"], "network_version_too_old");
    let version = follower.send("GET", "/network", None).json()["version"].clone();
    let current = old_version.replace(
        "00000000-0000-0000-0000-000000000000",
        version.as_str().unwrap(),
    );
    let response = follower.raw(&current);
    assert_eq!(response.status, 202, "{}", response.text());
}

#[test]
fn changing_a_remotes_key_moves_nothing_and_reaches_every_follower() {
    let servers = sharded_network();
    let response = servers[0].send(
        "POST",
        "/indexes/books/documents",
        Some(&json!([{"id": 0}, {"id": 1}, {"id": 2}])),
    );
    let task = servers[0].wait_task(response.json()["taskUid"].as_u64().unwrap());
    assert_eq!(task["status"], "succeeded", "{task}");
    // Changing a remote's key moves nothing and is accepted.
    let response = servers[0].send(
        "PATCH",
        "/network",
        Some(&json!({"remotes": {"ms1": {"searchApiKey": "another"}}})),
    );
    assert_eq!(response.status, 202, "{}", response.text());
    let task = servers[0].wait_task(response.json()["taskUid"].as_u64().unwrap());
    assert_eq!(task["status"], "succeeded", "{task}");
    wait_for_every_change(&servers);
    let follower = servers[2].send("GET", "/network", None).json();
    assert_eq!(follower["remotes"]["ms1"]["searchApiKey"], "another");
    assert_documents_where_the_topology_says(&servers, &one_shard_each(), 3);
}

/// Checks that every document of `0..count` is on exactly the instances `shards` names.
fn assert_documents_where_the_topology_says(servers: &[Server], shards: &Value, count: u64) {
    let held: Vec<_> = servers
        .iter()
        .map(|server| document_ids(server, "books"))
        .collect();
    for id in (0..count).map(|id| id.to_string()) {
        let owners = owners_of(shards, &id);
        for (name, documents) in NAMES.iter().zip(&held) {
            let owned = owners.iter().any(|owner| owner == name);
            assert_eq!(
                documents.contains(&id),
                owned,
                "document {id} on {name} (owners {owners:?})"
            );
        }
    }
}

#[test]
fn documents_move_when_a_shard_is_added_and_when_an_instance_leaves() {
    let servers: Vec<Server> = (0..NAMES.len()).map(|_| start_instance()).collect();
    let two_shards = json!({"s0": {"remotes": ["ms0"]}, "s1": {"remotes": ["ms1"]}});
    let mut all_remotes = remotes(&servers, MASTER_KEY);
    all_remotes.as_object_mut().unwrap().remove("ms2");
    let body =
        json!({"self": "ms0", "leader": "ms0", "remotes": all_remotes, "shards": two_shards});
    let response = servers[0].send("PATCH", "/network", Some(&body));
    assert_eq!(response.status, 202, "{}", response.text());
    wait_for_every_change(&servers[..2]);
    const COUNT: u64 = 1_500;
    let documents: Vec<Value> = (0..COUNT)
        .map(|id| json!({"id": id, "title": format!("book {id}")}))
        .collect();
    let response = servers[0].send("POST", "/indexes/books/documents", Some(&json!(documents)));
    assert_eq!(response.status, 202, "{}", response.text());
    servers[0].wait_task(response.json()["taskUid"].as_u64().unwrap());
    wait_for_every_change(&servers[..2]);
    // ms2 joins with a shard of its own, and s0 gets a second owner.
    let three = json!({"s0": {"remotes": ["ms0", "ms2"]}, "s1": {"remotes": ["ms1"]}, "s2": {"remotes": ["ms2"]}});
    let body = json!({"remotes": remotes(&servers, MASTER_KEY), "shards": three});
    let response = servers[0].send("PATCH", "/network", Some(&body));
    assert_eq!(response.status, 202, "{}", response.text());
    wait_for_every_change(&servers);
    let shards = servers[0].send("GET", "/network", None).json()["shards"].clone();
    assert_documents_where_the_topology_says(&servers, &shards, COUNT);
    let change = last_task_of_type(&servers[1], "networkTopologyChange");
    assert!(
        change["details"]["movedDocuments"].as_u64().unwrap() > 0,
        "{change}"
    );
    // ms1 leaves: its shard goes to ms0 and ms2.
    let two = json!({"s0": {"remotes": ["ms0", "ms2"]}, "s1": null, "s2": {"remotes": ["ms2"]}});
    let body = json!({"remotes": {"ms1": null}, "shards": two});
    let response = servers[0].send("PATCH", "/network", Some(&body));
    assert_eq!(response.status, 202, "{}", response.text());
    wait_for_every_change(&servers);
    let shards = servers[0].send("GET", "/network", None).json()["shards"].clone();
    assert_documents_where_the_topology_says(&servers, &shards, COUNT);
    assert!(document_ids(&servers[1], "books").is_empty());
    let union: std::collections::BTreeSet<String> = servers
        .iter()
        .flat_map(|server| document_ids(server, "books"))
        .collect();
    assert_eq!(union.len() as u64, COUNT);
}

/// Three instances, `ms0` and `ms1` sharding `count` documents; their data directories and
/// options, to restart them.
fn two_instance_network_with_documents(count: u64) -> Vec<Server> {
    let servers: Vec<Server> = (0..NAMES.len()).map(|_| start_instance()).collect();
    let mut first_remotes = remotes(&servers, MASTER_KEY);
    first_remotes.as_object_mut().unwrap().remove("ms2");
    let two_shards = json!({"s0": {"remotes": ["ms0"]}, "s1": {"remotes": ["ms1"]}});
    let body =
        json!({"self": "ms0", "leader": "ms0", "remotes": first_remotes, "shards": two_shards});
    let response = servers[0].send("PATCH", "/network", Some(&body));
    assert_eq!(response.status, 202, "{}", response.text());
    wait_for_every_change(&servers[..2]);
    let documents: Vec<Value> = (0..count)
        .map(|id| json!({"id": id, "title": format!("book number {id}"), "year": 1900 + id % 120}))
        .collect();
    let response = servers[0].send("POST", "/indexes/books/documents", Some(&json!(documents)));
    assert_eq!(response.status, 202, "{}", response.text());
    let task = servers[0].wait_task(response.json()["taskUid"].as_u64().unwrap());
    assert_eq!(task["status"], "succeeded", "{task}");
    wait_for_every_change(&servers[..2]);
    servers
}

/// Kills instance `victim` right after the leader accepted a change that brings `ms2` in,
/// restarts it where it was, and checks that every document ends where the topology says.
fn kill_during_a_change(victim: usize) {
    const COUNT: u64 = 20_000;
    let mut servers = two_instance_network_with_documents(COUNT);
    let three = json!({"s0": {"remotes": ["ms0"]}, "s1": {"remotes": ["ms1", "ms2"]}, "s2": {"remotes": ["ms2"]}});
    let body = json!({"remotes": remotes(&servers, MASTER_KEY), "shards": three});
    let response = servers[0].send("PATCH", "/network", Some(&body));
    assert_eq!(response.status, 202, "{}", response.text());
    let change = last_task_of_type(&servers[victim], "networkTopologyChange");
    assert!(
        matches!(change["status"].as_str(), Some("enqueued" | "processing")),
        "the change is still running when the instance is killed: {change}"
    );
    let killed = servers.remove(victim);
    let restarted = kill_and_restart(killed, &network_options(2));
    servers.insert(victim, restarted);
    wait_for_every_change(&servers);
    let shards = servers[0].send("GET", "/network", None).json()["shards"].clone();
    assert_documents_where_the_topology_says(&servers, &shards, COUNT);
}

#[test]
fn a_follower_killed_during_a_change_ends_with_every_document_in_place() {
    kill_during_a_change(1);
}

#[test]
fn the_leader_killed_during_a_change_ends_with_every_document_in_place() {
    kill_during_a_change(0);
}

#[test]
fn canceling_a_change_that_waits_for_a_dead_instance_loses_nothing_and_frees_writes() {
    const COUNT: u64 = 3_000;
    let mut servers = two_instance_network_with_documents(COUNT);
    let before: Vec<_> = servers[..2]
        .iter()
        .map(|server| document_ids(server, "books"))
        .collect();
    let three =
        json!({"s0": {"remotes": ["ms0"]}, "s1": {"remotes": ["ms1"]}, "s2": {"remotes": ["ms2"]}});
    let body = json!({"remotes": remotes(&servers, MASTER_KEY), "shards": three});
    let response = servers[0].send("PATCH", "/network", Some(&body));
    assert_eq!(response.status, 202, "{}", response.text());
    // ms2 dies for good: the others keep trying to send it its documents.
    servers.remove(2).kill();
    for server in &servers {
        let change = last_task_of_type(server, "networkTopologyChange");
        let uid = change["uid"].as_u64().unwrap();
        let waited = std::time::Instant::now();
        loop {
            let change = server.send("GET", &format!("/tasks/{uid}"), None).json();
            if change["status"] == "processing" {
                break;
            }
            assert!(
                waited.elapsed() < std::time::Duration::from_secs(30),
                "{change}"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
        let cancel = server.send("POST", &format!("/tasks/cancel?uids={uid}"), None);
        assert_eq!(cancel.status, 200, "{}", cancel.text());
        let canceled = server.wait_task(uid);
        assert_eq!(canceled["status"], "canceled", "{canceled}");
    }
    // Nothing was deleted: every instance still holds what it held.
    for (server, held) in servers.iter().zip(&before) {
        let now = document_ids(server, "books");
        assert!(
            held.is_subset(&now),
            "documents were deleted by a canceled change"
        );
    }
    // The leader takes writes again.
    let response = servers[0].send(
        "POST",
        "/indexes/books/documents",
        Some(&json!([{"id": COUNT}])),
    );
    assert_eq!(response.status, 202, "{}", response.text());
    let task = servers[0].wait_task(response.json()["taskUid"].as_u64().unwrap());
    assert_eq!(task["status"], "succeeded", "{task}");
}

/// Where Meilisearch 1.41 Enterprise placed these ids with shards `s0` (its leader) and `s1`
/// (seen by hand: a Meilisearch follower of a coresearch leader kept 1–5, "A" and "C").
#[test]
fn documents_land_on_the_shards_meilisearch_enterprise_gives_them() {
    let servers: Vec<Server> = (0..2).map(|_| start_instance()).collect();
    let mut two_remotes = serde_json::Map::new();
    for (name, server) in NAMES.iter().zip(&servers) {
        two_remotes.insert(
            (*name).to_owned(),
            json!({"url": server.url(), "writeApiKey": MASTER_KEY}),
        );
    }
    let shards = json!({"s0": {"remotes": ["ms0"]}, "s1": {"remotes": ["ms1"]}});
    let body = json!({"self": "ms0", "leader": "ms0", "remotes": two_remotes, "shards": shards});
    let response = servers[0].send("PATCH", "/network", Some(&body));
    assert_eq!(response.status, 202, "{}", response.text());
    wait_for_every_change(&servers);
    let documents = json!([{"id": 1}, {"id": 2}, {"id": 3}, {"id": 4}, {"id": 5},
                           {"id": "A"}, {"id": "B"}, {"id": "C"}, {"id": "D"}, {"id": "E"}]);
    let response = servers[0].send("POST", "/indexes/books/documents", Some(&documents));
    servers[0].wait_task(response.json()["taskUid"].as_u64().unwrap());
    wait_for_every_change(&servers);
    let on_s0: Vec<String> = document_ids(&servers[0], "books").into_iter().collect();
    let on_s1: Vec<String> = document_ids(&servers[1], "books").into_iter().collect();
    assert_eq!(on_s0, ["\"B\"", "\"D\"", "\"E\""]);
    assert_eq!(on_s1, ["\"A\"", "\"C\"", "1", "2", "3", "4", "5"]);
}

#[test]
fn a_canceled_change_frees_the_leaders_writes() {
    let servers = two_instance_network_with_documents(10);
    // A large addition registered just before the change runs first.
    let documents: Vec<Value> = (100..40_100)
        .map(|id| json!({"id": id, "title": format!("t {id}")}))
        .collect();
    let response = servers[0].send("POST", "/indexes/books/documents", Some(&json!(documents)));
    assert_eq!(response.status, 202, "{}", response.text());
    let three =
        json!({"s0": {"remotes": ["ms0"]}, "s1": {"remotes": ["ms1"]}, "s2": {"remotes": ["ms2"]}});
    let body = json!({"remotes": remotes(&servers, MASTER_KEY), "shards": three});
    let response = servers[0].send("PATCH", "/network", Some(&body));
    assert_eq!(response.status, 202, "{}", response.text());
    let change = response.json()["taskUid"].as_u64().unwrap();
    let cancel = servers[0].send("POST", &format!("/tasks/cancel?uids={change}"), None);
    assert_eq!(cancel.status, 200, "{}", cancel.text());
    let canceled = servers[0].wait_task(change);
    assert_eq!(canceled["status"], "canceled", "{canceled}");
    let response = servers[0].send(
        "POST",
        "/indexes/books/documents",
        Some(&json!([{"id": 1}])),
    );
    assert_eq!(response.status, 202, "{}", response.text());
    let task = servers[0].wait_task(response.json()["taskUid"].as_u64().unwrap());
    assert_eq!(task["status"], "succeeded", "{task}");
}

/// Two new instances join at once, after settings were changed: every instance ends with the
/// leader's settings (an instance that had not yet registered the change once received
/// another instance's index before its own change, and sent its default settings on).
#[test]
fn instances_joining_together_all_end_with_the_leaders_settings() {
    const FOUR: [&str; 4] = ["ms0", "ms1", "ms2", "ms3"];
    let servers: Vec<Server> = FOUR.iter().map(|_| start_instance()).collect();
    let remotes_of = |count: usize| {
        let mut remotes = serde_json::Map::new();
        for (name, server) in FOUR.iter().zip(&servers).take(count) {
            remotes.insert(
                (*name).to_owned(),
                json!({"url": server.url(), "searchApiKey": MASTER_KEY, "writeApiKey": MASTER_KEY}),
            );
        }
        Value::Object(remotes)
    };
    let shards_of = |count: usize| {
        let shards: serde_json::Map<String, Value> = FOUR
            .iter()
            .take(count)
            .map(|name| (format!("s-{name}"), json!({"remotes": [name]})))
            .collect();
        Value::Object(shards)
    };
    let body =
        json!({"self": "ms0", "leader": "ms0", "remotes": remotes_of(2), "shards": shards_of(2)});
    let response = servers[0].send("PATCH", "/network", Some(&body));
    assert_eq!(response.status, 202, "{}", response.text());
    wait_for_every_change(&servers[..2]);
    let documents: Vec<Value> = (0..2_000)
        .map(|id| json!({"id": id, "year": 1990 + id % 30}))
        .collect();
    let response = servers[0].send("POST", "/indexes/books/documents", Some(&json!(documents)));
    servers[0].wait_task(response.json()["taskUid"].as_u64().unwrap());
    let settings = json!({"filterableAttributes": ["year"], "sortableAttributes": ["year"]});
    let response = servers[0].send("PATCH", "/indexes/books/settings", Some(&settings));
    servers[0].wait_task(response.json()["taskUid"].as_u64().unwrap());
    wait_for_every_change(&servers[..2]);
    let body = json!({"remotes": remotes_of(4), "shards": shards_of(4)});
    let response = servers[0].send("PATCH", "/network", Some(&body));
    assert_eq!(response.status, 202, "{}", response.text());
    wait_for_every_change(&servers);
    let mut total = 0;
    for server in &servers {
        let filterable = server.send("GET", "/indexes/books/settings/filterable-attributes", None);
        assert_eq!(filterable.json(), json!(["year"]), "{}", server.url());
        total += server.send("GET", "/indexes/books/stats", None).json()["numberOfDocuments"]
            .as_u64()
            .unwrap();
    }
    assert_eq!(total, 2_000);
    let search = json!({"filter": "year = 2000", "sort": ["year:asc"], "limit": 100});
    let answer = servers[0]
        .send("POST", "/indexes/books/search", Some(&search))
        .json();
    assert_eq!(answer["remoteErrors"], json!({}), "{answer}");
    assert_eq!(answer["hits"].as_array().unwrap().len(), 67, "{answer}");
}

/// The visibility rule of a network search: an attribute that is sortable but not displayed
/// orders the hits merged from every shard (the merge reads the sort values the shards
/// report, not the hits' fields), and never shows in a hit, even when
/// `attributesToRetrieve` names it.
#[test]
fn a_hidden_sortable_attribute_orders_the_merged_hits_and_stays_hidden() {
    let servers = sharded_network();
    const COUNT: u64 = 600;
    // Distinct ranks in a shuffled order: the ids say nothing of the ranks.
    let rank_of = |id: u64| (id * 7_919) % 1_000;
    let documents: Vec<Value> = (0..COUNT)
        .map(|id| json!({"id": id, "title": format!("book {id}"), "rank": rank_of(id)}))
        .collect();
    let response = servers[0].send("POST", "/indexes/books/documents", Some(&json!(documents)));
    assert_eq!(response.status, 202, "{}", response.text());
    let settings = json!({"sortableAttributes": ["rank"], "displayedAttributes": ["id", "title"]});
    let response = servers[0].send("PATCH", "/indexes/books/settings", Some(&settings));
    assert_eq!(response.status, 202, "{}", response.text());
    let task = servers[0].wait_task(response.json()["taskUid"].as_u64().unwrap());
    assert_eq!(task["status"], "succeeded", "{task}");
    wait_for_every_change(&servers);
    let mut by_rank: Vec<u64> = (0..COUNT).collect();
    by_rank.sort_by_key(|id| rank_of(*id));
    for (order, expected) in [
        ("asc", by_rank.clone()),
        ("desc", by_rank.into_iter().rev().collect()),
    ] {
        for retrieve in [None, Some(json!(["id", "rank"])), Some(json!(["*"]))] {
            let mut query = json!({"sort": [format!("rank:{order}")], "limit": 90});
            if let Some(retrieve) = &retrieve {
                query["attributesToRetrieve"] = retrieve.clone();
            }
            let answer = servers[0]
                .send("POST", "/indexes/books/search", Some(&query))
                .json();
            assert_eq!(answer["remoteErrors"], json!({}), "{answer}");
            assert_eq!(answer["estimatedTotalHits"], COUNT, "{answer}");
            let hits = answer["hits"].as_array().unwrap();
            let ids: Vec<u64> = hits.iter().map(|hit| hit["id"].as_u64().unwrap()).collect();
            assert_eq!(ids, expected[..90], "rank:{order}, retrieving {retrieve:?}");
            for hit in hits {
                assert!(hit.get("rank").is_none(), "rank shown: {hit}");
                // Nor do the sort values the shards reported for the merge.
                assert!(
                    hit["_federation"].get("weightedScoreValues").is_none(),
                    "{hit}"
                );
            }
            // The page mixes every shard's hits: the merge, not one shard, ordered it.
            let remotes: std::collections::BTreeSet<&str> = hits
                .iter()
                .map(|hit| hit["_federation"]["remote"].as_str().unwrap())
                .collect();
            assert_eq!(remotes.len(), NAMES.len(), "{remotes:?}");
        }
    }
}
