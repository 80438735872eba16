//! The `PATCH /network` bodies of the benchmark: instance `i` is the remote `ms{i}` and owns
//! exactly the shard `s{i}`; `ms0` is the leader.
//!
//! Invariants: every remote carries the same search and write key (the instances share one
//! master key); the shard names are the same for a network formed at once and for one grown
//! to the same size, so both place every document on the same instance (rendezvous hashing
//! depends on the shard names only).

use serde_json::{Map, Value, json};

/// The name of the leader (instance 0).
pub const LEADER_NAME: &str = "ms0";

/// The remote name of instance `instance`.
pub fn instance_name(instance: usize) -> String {
    format!("ms{instance}")
}

/// The shard instance `instance` owns.
pub fn shard_name(instance: usize) -> String {
    format!("s{instance}")
}

/// Every instance as a remote: `{"ms{i}": {"url", "searchApiKey", "writeApiKey"}}`.
pub fn remotes(urls: &[String], key: &str) -> Value {
    let remotes: Map<String, Value> = urls
        .iter()
        .enumerate()
        .map(|(instance, url)| {
            (
                instance_name(instance),
                json!({"url": url, "searchApiKey": key, "writeApiKey": key}),
            )
        })
        .collect();
    Value::Object(remotes)
}

/// One shard per instance: `{"s{i}": {"remotes": ["ms{i}"]}}`.
pub fn one_shard_each(instances: usize) -> Value {
    let shards: Map<String, Value> = (0..instances)
        .map(|instance| {
            (
                shard_name(instance),
                json!({"remotes": [instance_name(instance)]}),
            )
        })
        .collect();
    Value::Object(shards)
}

/// The leader's first `PATCH /network`: the whole network, `ms0` leading.
pub fn forming_body(urls: &[String], key: &str) -> Value {
    json!({
        "self": LEADER_NAME,
        "leader": LEADER_NAME,
        "remotes": remotes(urls, key),
        "shards": one_shard_each(urls.len()),
    })
}

/// The leader's `PATCH /network` that grows the network to every instance of `urls`, each
/// with its own shard (the existing instances keep theirs).
pub fn growing_body(urls: &[String], key: &str) -> Value {
    json!({
        "remotes": remotes(urls, key),
        "shards": one_shard_each(urls.len()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_instance_is_a_remote_owning_its_own_shard_and_the_first_leads() {
        let urls = vec![
            "http://127.0.0.1:7801".to_string(),
            "http://127.0.0.1:7802".to_string(),
        ];
        let body = forming_body(&urls, "key");
        assert_eq!(body["self"], "ms0");
        assert_eq!(body["leader"], "ms0");
        assert_eq!(body["remotes"]["ms1"]["url"], "http://127.0.0.1:7802");
        assert_eq!(body["remotes"]["ms1"]["writeApiKey"], "key");
        assert_eq!(body["shards"]["s1"]["remotes"], json!(["ms1"]));
        assert_eq!(body["shards"].as_object().map(Map::len), Some(2));
        let grown = growing_body(&urls, "key");
        assert!(grown.get("self").is_none() && grown.get("leader").is_none());
        assert_eq!(grown["shards"], body["shards"]);
    }
}
