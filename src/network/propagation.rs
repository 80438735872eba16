//! How a leader hands a network change to the other instances (`PATCH /network` with the
//! origin headers), and how a follower reads it: the body names the whole new network
//! (`remotes`, `shards`, `leader`), the receiver's name in it (`self`, `null` for a removed
//! instance) and the network before the change (`previousRemotes`, `previousShards`).
//!
//! Invariants: a follower does not merge — the leader's body replaces its view, with the
//! leader's version; a body without a leader is refused ("Duplicated task without
//! leader"); every remote it names has a URL.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::model::{Network, Remote, Shard};
use super::patch::{NetworkPatch, RemotesPatch, ShardsPatch};
use super::task_network::Origin;
use crate::errors::{Code, ResponseError};
use crate::settings::setting::Setting;

/// The body the leader sends `target` (`None`: an instance the change removes).
pub fn follower_body(
    new: &Network,
    old: &Network,
    target: Option<&str>,
    with_previous_remotes: bool,
) -> Value {
    let previous_remotes = if with_previous_remotes {
        remotes_json(&old.remotes)
    } else {
        Value::Null
    };
    json!({
        "remotes": remotes_json(&new.remotes),
        "shards": shards_json(&new.shards),
        "previousRemotes": previous_remotes,
        "previousShards": shards_json(&old.shards),
        "self": target,
        "leader": new.leader,
    })
}

fn remotes_json(remotes: &BTreeMap<String, Remote>) -> Value {
    let remotes: Map<String, Value> = remotes
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
    Value::Object(remotes)
}

fn shards_json(shards: &BTreeMap<String, Shard>) -> Value {
    let shards: Map<String, Value> = shards
        .iter()
        .map(|(name, shard)| (name.clone(), json!({ "remotes": shard.remotes })))
        .collect();
    Value::Object(shards)
}

/// The follower's network after the leader's `patch` sent as `origin`, and the network
/// before it (the follower's own name with the leader's previous remotes and shards).
pub fn follower_networks(
    current: &Network,
    patch: NetworkPatch,
    origin: &Origin,
) -> Result<(Network, Network), ResponseError> {
    let leader = match patch.leader {
        Setting::Set(leader) => leader,
        _ => {
            return Err(ResponseError::new(
                Code::InvalidNetworkLeader,
                "Duplicated task without leader",
            ));
        }
    };
    let new = Network {
        local: match patch.local {
            Setting::Set(name) => Some(name),
            _ => None,
        },
        remotes: remotes_of(patch.remotes)?,
        shards: shards_of(patch.shards),
        leader: Some(leader),
        version: origin.network_version,
    };
    let old = Network {
        remotes: remotes_of(patch.previous_remotes)?,
        shards: shards_of(patch.previous_shards),
        ..current.clone()
    };
    Ok((new, old))
}

fn remotes_of(patch: Setting<RemotesPatch>) -> Result<BTreeMap<String, Remote>, ResponseError> {
    let Setting::Set(remotes) = patch else {
        return Ok(BTreeMap::new());
    };
    let mut result = BTreeMap::new();
    for (name, remote) in remotes {
        let Some(remote) = remote else { continue };
        let Setting::Set(url) = remote.url else {
            return Err(ResponseError::new(
                Code::MissingNetworkUrl,
                format!("Missing field `.remotes.{name}.url`"),
            ));
        };
        let remote = Remote {
            url,
            search_api_key: remote.search_api_key.set(),
            write_api_key: remote.write_api_key.set(),
        };
        result.insert(name, remote);
    }
    Ok(result)
}

fn shards_of(patch: Setting<ShardsPatch>) -> BTreeMap<String, Shard> {
    let Setting::Set(shards) = patch else {
        return BTreeMap::new();
    };
    shards
        .into_iter()
        .filter_map(|(name, shard)| {
            let remotes = shard?.remotes.set()?;
            Some((
                name,
                Shard {
                    remotes: remotes.into_iter().collect(),
                },
            ))
        })
        .filter(|(_, shard)| !shard.remotes.is_empty())
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use uuid::Uuid;

    use super::*;
    use crate::decode::JsonError;

    fn network(local: &str, names: &[&str]) -> Network {
        let mut network = Network {
            local: Some(local.to_owned()),
            leader: Some(names[0].to_owned()),
            version: Uuid::now_v7(),
            ..Network::default()
        };
        for name in names {
            let remote = Remote {
                url: format!("http://{name}:7700"),
                search_api_key: None,
                write_api_key: Some(format!("key-{name}")),
            };
            network.remotes.insert((*name).to_owned(), remote);
            let shard = Shard {
                remotes: [(*name).to_owned()].into_iter().collect(),
            };
            network.shards.insert(format!("s-{name}"), shard);
        }
        network
    }

    #[test]
    fn a_follower_reads_back_the_network_its_leader_sent() {
        let old = network("ms0", &["ms0", "ms1"]);
        let new = network("ms0", &["ms0", "ms1", "ms2"]);
        let body = follower_body(&new, &old, Some("ms2"), true);
        let patch = crate::decode::decode_json_value::<NetworkPatch, JsonError>(body).unwrap();
        let origin = Origin {
            remote_name: "ms0".into(),
            task_uid: 4,
            network_version: new.version,
        };
        let follower = Network::default();
        let (read_new, read_old) = follower_networks(&follower, patch, &origin).unwrap();
        assert_eq!(read_new.local.as_deref(), Some("ms2"));
        assert_eq!(read_new.remotes, new.remotes);
        assert_eq!(read_new.shards, new.shards);
        assert_eq!(read_new.leader, new.leader);
        assert_eq!(read_new.version, new.version);
        assert_eq!(read_old.remotes, old.remotes);
        assert_eq!(read_old.shards, old.shards);
    }

    #[test]
    fn a_body_without_leader_is_refused() {
        let body = json!({"remotes": {}, "self": "ms1"});
        let patch = crate::decode::decode_json_value::<NetworkPatch, JsonError>(body).unwrap();
        let origin = Origin {
            remote_name: "ms0".into(),
            task_uid: 1,
            network_version: Uuid::nil(),
        };
        let error = follower_networks(&Network::default(), patch, &origin).unwrap_err();
        assert_eq!(error.code, Code::InvalidNetworkLeader);
    }
}
