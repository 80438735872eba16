//! Merging a `PATCH /network` into the network, with Meilisearch 1.41's rules and order:
//! the merged `self` and `leader`, the leader gate, a new version, the shards (their
//! `remotes`, then `addRemotes`, then `removeRemotes`), the remotes (a removed remote leaves
//! every shard), shards left without remotes dropped, then — only when a leader is set —
//! the leader's checks.
//!
//! Invariants: the merge is pure (the caller persists its result); on any error nothing of
//! the patch applies; the result keeps every invariant of [`Network`].

use std::collections::BTreeMap;

use uuid::Uuid;

use super::model::{Network, Remote, Shard};
use super::patch::{NetworkPatch, RemotePatch, RemotesPatch, ShardPatch, ShardsPatch};
use crate::errors::{Code, ResponseError};
use crate::settings::setting::Setting;

/// The network after `patch`, or the error Meilisearch answers for it.
pub fn merge_network(old: &Network, patch: NetworkPatch) -> Result<Network, ResponseError> {
    let local = merged_name(patch.local, &old.local);
    let leader = merged_name(patch.leader, &old.leader);
    check_leader_is_local(leader.as_deref(), local.as_deref())?;
    let version = Uuid::now_v7();
    let mut shards = merged_shards(&old.shards, patch.shards);
    let remotes = merged_remotes(&old.remotes, patch.remotes, &mut shards)?;
    shards.retain(|_, shard| !shard.remotes.is_empty());
    let merged = Network {
        local,
        remotes,
        shards,
        leader,
        version,
    };
    if let Some(leader) = merged.leader.as_deref() {
        check_leader_network(&merged, leader)?;
    }
    Ok(merged)
}

/// `self` or `leader` after the patch.
fn merged_name(patch: Setting<String>, old: &Option<String>) -> Option<String> {
    match patch {
        Setting::Set(name) => Some(name),
        Setting::Reset => None,
        Setting::NotSet => old.clone(),
    }
}

/// Only the leader itself may change a network that has a leader.
fn check_leader_is_local(leader: Option<&str>, local: Option<&str>) -> Result<(), ResponseError> {
    match leader {
        Some(leader) if local != Some(leader) => Err(not_leader(leader)),
        _ => Ok(()),
    }
}

/// `not_leader`: this instance is not `leader`.
pub fn not_leader(leader: &str) -> ResponseError {
    ResponseError::new(
        Code::NotLeader,
        format!(
            "This remote is not the leader of the network.\n  - Note: only the leader `{leader}` can receive new tasks."
        ),
    )
}

fn merged_shards(
    old: &BTreeMap<String, Shard>,
    patch: Setting<ShardsPatch>,
) -> BTreeMap<String, Shard> {
    match patch {
        Setting::NotSet => old.clone(),
        Setting::Reset => BTreeMap::new(),
        Setting::Set(changes) => {
            let mut shards = old.clone();
            for (name, change) in changes {
                match change {
                    None => {
                        shards.remove(&name);
                    }
                    Some(change) => {
                        let shard = shards.entry(name).or_default();
                        apply_shard_patch(shard, change);
                    }
                }
            }
            shards
        }
    }
}

/// `remotes` replaces the owners (absent or `null` keeps them), `addRemotes` adds,
/// `removeRemotes` removes, in that order.
fn apply_shard_patch(shard: &mut Shard, patch: ShardPatch) {
    if let Setting::Set(remotes) = patch.remotes {
        shard.remotes = remotes.into_iter().collect();
    }
    if let Setting::Set(added) = patch.add_remotes {
        shard.remotes.extend(added);
    }
    if let Setting::Set(removed) = patch.remove_remotes {
        for remote in removed {
            shard.remotes.remove(&remote);
        }
    }
}

fn merged_remotes(
    old: &BTreeMap<String, Remote>,
    patch: Setting<RemotesPatch>,
    shards: &mut BTreeMap<String, Shard>,
) -> Result<BTreeMap<String, Remote>, ResponseError> {
    let changes = match patch {
        Setting::NotSet => return Ok(old.clone()),
        Setting::Reset => return Ok(BTreeMap::new()),
        Setting::Set(changes) => changes,
    };
    let mut remotes = old.clone();
    for (name, change) in changes {
        match change {
            None => {
                remotes.remove(&name);
                for shard in shards.values_mut() {
                    shard.remotes.remove(&name);
                }
            }
            Some(change) => {
                let merged = merged_remote(&name, remotes.get(&name), change)?;
                remotes.insert(name, merged);
            }
        }
    }
    Ok(remotes)
}

/// One remote after its patch: a new remote needs a URL, an existing one keeps what the
/// patch does not name; a URL must parse and can never be reset.
fn merged_remote(
    name: &str,
    old: Option<&Remote>,
    patch: RemotePatch,
) -> Result<Remote, ResponseError> {
    let url = match (patch.url, old) {
        (Setting::Set(url), _) => checked_url(name, url)?,
        (Setting::Reset, Some(_)) => {
            return Err(ResponseError::new(
                Code::InvalidNetworkUrl,
                format!("Field `.remotes.{name}.url` cannot be set to `null`"),
            ));
        }
        (Setting::NotSet, Some(old)) => old.url.clone(),
        (Setting::Reset | Setting::NotSet, None) => {
            return Err(ResponseError::new(
                Code::MissingNetworkUrl,
                format!("Missing field `.remotes.{name}.url`"),
            ));
        }
    };
    Ok(Remote {
        url,
        search_api_key: merged_name(
            patch.search_api_key,
            &old.and_then(|old| old.search_api_key.clone()),
        ),
        write_api_key: merged_name(
            patch.write_api_key,
            &old.and_then(|old| old.write_api_key.clone()),
        ),
    })
}

/// `url` if it parses as a WHATWG URL.
fn checked_url(name: &str, url: String) -> Result<String, ResponseError> {
    match url::Url::parse(&url) {
        Ok(_) => Ok(url),
        Err(error) => Err(ResponseError::new(
            Code::InvalidNetworkUrl,
            format!("Invalid `.remotes.{name}.url` (`{url}`): {error}"),
        )),
    }
}

/// With a leader: the leader is a remote, some shard remains, and every shard's owners
/// are remotes.
fn check_leader_network(network: &Network, leader: &str) -> Result<(), ResponseError> {
    if !network.remotes.contains_key(leader) {
        return Err(ResponseError::new(
            Code::InvalidNetworkRemotes,
            format!("leader `{leader}` is missing from remotes"),
        ));
    }
    if network.shards.is_empty() {
        return Err(ResponseError::new(
            Code::InvalidNetworkShards,
            "there must be at least one shard owned by at least one remote",
        ));
    }
    for (shard_name, shard) in &network.shards {
        let unknown: Option<&String> = shard
            .remotes
            .iter()
            .find(|remote| !network.remotes.contains_key(*remote));
        if let Some(remote) = unknown {
            return Err(ResponseError::new(
                Code::InvalidNetworkShards,
                format!("unknown remote `{remote}` in `.{shard_name}.remotes`"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::decode::JsonError;
    use std::collections::BTreeSet;

    fn patch(body: &str) -> NetworkPatch {
        crate::decode::decode_json_value::<NetworkPatch, JsonError>(
            serde_json::from_str(body).unwrap(),
        )
        .unwrap()
    }

    fn merged(old: &Network, body: &str) -> Result<Network, ResponseError> {
        merge_network(old, patch(body))
    }

    #[test]
    fn remotes_merge_field_by_field_and_every_patch_gets_a_new_version() {
        let first = merged(
            &Network::default(),
            r#"{"self": "a", "remotes": {"a": {"url": "http://a:7700", "searchApiKey": "s"}}}"#,
        )
        .unwrap();
        assert_ne!(first.version, Uuid::nil());
        let second = merged(&first, r#"{"remotes": {"a": {"writeApiKey": "w"}}}"#).unwrap();
        let remote = &second.remotes["a"];
        assert_eq!(remote.url, "http://a:7700");
        assert_eq!(remote.search_api_key.as_deref(), Some("s"));
        assert_eq!(remote.write_api_key.as_deref(), Some("w"));
        assert!(second.version > first.version);
        let cleared = merged(&second, r#"{"remotes": {"a": {"searchApiKey": null}}}"#).unwrap();
        assert_eq!(cleared.remotes["a"].search_api_key, None);
    }

    #[test]
    fn a_new_remote_needs_a_url_and_an_old_one_cannot_lose_it() {
        let error = merged(&Network::default(), r#"{"remotes": {"b": {}}}"#).unwrap_err();
        assert_eq!(error.code, Code::MissingNetworkUrl);
        assert_eq!(error.message, "Missing field `.remotes.b.url`");
        let network = merged(
            &Network::default(),
            r#"{"remotes": {"b": {"url": "http://b"}}}"#,
        )
        .unwrap();
        let error = merged(&network, r#"{"remotes": {"b": {"url": null}}}"#).unwrap_err();
        assert_eq!(error.code, Code::InvalidNetworkUrl);
        assert_eq!(
            error.message,
            "Field `.remotes.b.url` cannot be set to `null`"
        );
        let error = merged(&network, r#"{"remotes": {"b": {"url": "b"}}}"#).unwrap_err();
        assert_eq!(
            error.message,
            "Invalid `.remotes.b.url` (`b`): relative URL without a base"
        );
    }

    #[test]
    fn a_removed_remote_leaves_every_shard_and_empty_shards_go() {
        let network = merged(
            &Network::default(),
            r#"{"remotes": {"a": {"url": "http://a"}, "b": {"url": "http://b"}},
                "shards": {"s0": {"remotes": ["a", "b"]}, "s1": {"remotes": ["b"]}}}"#,
        )
        .unwrap();
        let after = merged(&network, r#"{"remotes": {"b": null}}"#).unwrap();
        assert_eq!(after.shards.len(), 1);
        assert_eq!(after.shards["s0"].remotes, BTreeSet::from(["a".to_owned()]));
    }

    #[test]
    fn add_and_remove_remotes_apply_after_remotes() {
        let network = merged(
            &Network::default(),
            r#"{"shards": {"s": {"remotes": ["a", "b"], "addRemotes": ["c"], "removeRemotes": ["a"]}}}"#,
        )
        .unwrap();
        let owners: Vec<&str> = network.shards["s"]
            .remotes
            .iter()
            .map(String::as_str)
            .collect();
        assert_eq!(owners, ["b", "c"]);
    }

    #[test]
    fn a_leader_must_be_self_a_remote_and_own_shards_of_known_remotes() {
        let error = merged(&Network::default(), r#"{"leader": "a"}"#).unwrap_err();
        assert_eq!(error.code, Code::NotLeader);
        let error = merged(&Network::default(), r#"{"leader": "a", "self": "a"}"#).unwrap_err();
        assert_eq!(error.message, "leader `a` is missing from remotes");
        let error = merged(
            &Network::default(),
            r#"{"leader": "a", "self": "a", "remotes": {"a": {"url": "http://a"}}}"#,
        )
        .unwrap_err();
        assert_eq!(error.code, Code::InvalidNetworkShards);
        let error = merged(
            &Network::default(),
            r#"{"leader": "a", "self": "a", "remotes": {"a": {"url": "http://a"}},
                "shards": {"s": {"remotes": ["a", "z"]}}}"#,
        )
        .unwrap_err();
        assert_eq!(error.message, "unknown remote `z` in `.s.remotes`");
    }
}
