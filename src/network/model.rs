//! The network: this instance's name, the other instances it knows (remotes), how the
//! network's shards map to remotes, the leader and the version, as `GET /network` shows them
//! and as the data directory keeps them (`network.json`).
//!
//! Invariants:
//! - remotes and shards are kept sorted by name (`BTreeMap`), a shard's remotes sorted and
//!   without duplicates (`BTreeSet`), as Meilisearch serializes them;
//! - every stored remote has a URL that parses as a WHATWG URL (checked when it was merged);
//! - no stored shard has an empty list of remotes (the merge drops those);
//! - the version of a network never patched is the nil UUID; each successful patch gives a
//!   new UUIDv7.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use uuid::Uuid;

use super::availability::RemoteAvailability;

/// File (in the data directory) that holds the network.
pub const NETWORK_FILE_NAME: &str = "network.json";

/// One other instance: where it answers, and the keys used to call it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Remote {
    pub url: String,
    /// Sent as `Authorization: Bearer` with remote searches.
    pub search_api_key: Option<String>,
    /// Sent as `Authorization: Bearer` with every other call to the remote.
    pub write_api_key: Option<String>,
}

/// One shard of the network: the remotes that hold a copy of it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub remotes: BTreeSet<String>,
}

/// The network as this instance knows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Network {
    #[serde(rename = "self")]
    pub local: Option<String>,
    pub remotes: BTreeMap<String, Remote>,
    #[serde(default)]
    pub shards: BTreeMap<String, Shard>,
    pub leader: Option<String>,
    pub version: Uuid,
}

impl Default for Network {
    fn default() -> Network {
        Network {
            local: None,
            remotes: BTreeMap::new(),
            shards: BTreeMap::new(),
            leader: None,
            version: Uuid::nil(),
        }
    }
}

impl Network {
    /// The network as `GET /network` answers it: keys in Meilisearch's order, API keys in
    /// clear (1.41 does not mask them), `null` for what is unset.
    pub fn view(&self) -> Value {
        let remotes: serde_json::Map<String, Value> = self
            .remotes
            .iter()
            .map(|(name, remote)| {
                let view = json!({
                    "url": remote.url,
                    "searchApiKey": remote.search_api_key,
                    "writeApiKey": remote.write_api_key,
                });
                (name.clone(), view)
            })
            .collect();
        let shards: serde_json::Map<String, Value> = self
            .shards
            .iter()
            .map(|(name, shard)| (name.clone(), json!({ "remotes": shard.remotes })))
            .collect();
        json!({
            "self": self.local,
            "remotes": remotes,
            "shards": shards,
            "leader": self.leader,
            "version": self.version.to_string(),
        })
    }

    /// [`Network::view`] with each remote's `status` (Meilisearch 1.50's `GET /network`).
    pub fn view_with_status(&self, availability: &RemoteAvailability) -> Value {
        let mut view = self.view();
        if let Some(remotes) = view["remotes"].as_object_mut() {
            for (name, remote) in remotes.iter_mut() {
                remote["status"] = json!(availability.status(name));
            }
        }
        view
    }

    /// Whether `name` is this instance.
    pub fn is_local(&self, name: &str) -> bool {
        self.local.as_deref() == Some(name)
    }

    /// Whether the network shards documents (Meilisearch Enterprise: a leader is set).
    pub fn is_sharding(&self) -> bool {
        self.leader.is_some()
    }
}

/// Reads the persisted network (the default one when none was ever saved).
pub fn load_network(data_directory: &std::path::Path) -> Result<Network, String> {
    let path = data_directory.join(NETWORK_FILE_NAME);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map_err(|error| format!("{} is damaged: {error}", path.display())),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(Network::default()),
        Err(error) => Err(format!("could not read {}: {error}", path.display())),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_network_reads_as_meilisearch_answers_it() {
        let view = Network::default().view().to_string();
        assert_eq!(
            view,
            r#"{"self":null,"remotes":{},"shards":{},"leader":null,"version":"00000000-0000-0000-0000-000000000000"}"#
        );
    }

    #[test]
    fn the_persisted_form_reads_back_equal() {
        let mut network = Network {
            local: Some("ms0".to_owned()),
            version: Uuid::now_v7(),
            ..Network::default()
        };
        network.remotes.insert(
            "ms0".to_owned(),
            Remote {
                url: "http://localhost:7700".to_owned(),
                search_api_key: Some("search".to_owned()),
                write_api_key: None,
            },
        );
        network.shards.insert(
            "s0".to_owned(),
            Shard {
                remotes: BTreeSet::from(["ms0".to_owned()]),
            },
        );
        let bytes = serde_json::to_vec(&network).unwrap();
        let back: Network = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(back, network);
    }
}
