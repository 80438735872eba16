//! Sharding as Meilisearch Enterprise 1.41 applies it: on exactly when the network has a
//! leader; then every document belongs to one network shard (rendezvous of its external id
//! over the sorted shard names, [`NetworkShards::shard_of`]), and this instance keeps only the
//! documents of the shards whose remotes name it.
//!
//! Invariants (each Meilisearch's): without a leader nothing is sharded (every write is kept,
//! every `_shard` filter names a shard that does not exist); with a leader but no shard every
//! document is kept; with a leader and no `self`, this instance owns no shard and keeps
//! nothing.

use shards::network_shards::NetworkShards;

use super::Network;

/// The shards of a sharding network and which of them this instance owns.
#[derive(Debug, Clone)]
pub struct Sharding {
    shards: NetworkShards,
    /// By position in `shards`: whether `self` is one of the shard's remotes.
    owned: Vec<bool>,
}

impl Sharding {
    /// The sharding of `network`, `None` when it has no leader.
    pub fn of(network: &Network) -> Option<Sharding> {
        network.leader.as_ref()?;
        let shards = NetworkShards::new(network.shards.keys().cloned());
        let owned = shards
            .names()
            .iter()
            .map(|name| {
                let remotes = network.shards.get(name).map(|shard| &shard.remotes);
                match (&network.local, remotes) {
                    (Some(local), Some(remotes)) => remotes.contains(local),
                    _ => false,
                }
            })
            .collect();
        Some(Sharding { shards, owned })
    }

    /// The network's shards, what `_shard` filters are evaluated against.
    pub fn shards(&self) -> &NetworkShards {
        &self.shards
    }

    /// Whether this instance keeps the document `external_id` (one hash per shard).
    pub fn keeps(&self, external_id: &str) -> bool {
        match self.shards.shard_of(external_id) {
            Some(position) => self.owned[position],
            None => true,
        }
    }
}

/// The shards `_shard` filters are evaluated against under `network`: its shards when it has
/// a leader, none otherwise.
pub fn filter_shards(network: &Network) -> Option<NetworkShards> {
    Sharding::of(network).map(|sharding| sharding.shards)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::network::Shard;

    fn network(local: Option<&str>, leader: Option<&str>, shards: &[(&str, &[&str])]) -> Network {
        Network {
            local: local.map(str::to_owned),
            leader: leader.map(str::to_owned),
            shards: shards
                .iter()
                .map(|(name, remotes)| {
                    let remotes: BTreeSet<String> =
                        remotes.iter().map(|remote| (*remote).to_owned()).collect();
                    ((*name).to_owned(), Shard { remotes })
                })
                .collect(),
            ..Network::default()
        }
    }

    const THREE: &[(&str, &[&str])] = &[("ms0", &["ms0"]), ("ms1", &["ms1"]), ("ms2", &["ms2"])];

    #[test]
    fn an_instance_keeps_the_documents_of_its_own_shards() {
        let sharding = Sharding::of(&network(Some("ms1"), Some("ms0"), THREE))
            .expect("a leader shards the network");
        let kept: Vec<&str> = ["A", "B", "C", "D", "E", "1", "2", "3"]
            .into_iter()
            .filter(|id| sharding.keeps(id))
            .collect();
        assert_eq!(kept, ["A", "B", "1", "3"]);
    }

    #[test]
    fn a_replica_keeps_every_shard_it_is_named_in() {
        let shards: &[(&str, &[&str])] = &[("ms0", &["ms0", "ms2"]), ("ms1", &["ms1"])];
        let sharding = Sharding::of(&network(Some("ms2"), Some("ms0"), shards)).unwrap();
        for id in ["A", "B", "C", "D", "E"] {
            let shard = sharding.shards().shard_of(id).unwrap();
            assert_eq!(
                sharding.keeps(id),
                sharding.shards().names()[shard] == "ms0"
            );
        }
    }

    #[test]
    fn meilisearch_edge_cases_of_ownership() {
        assert!(Sharding::of(&network(Some("ms0"), None, THREE)).is_none());
        assert!(filter_shards(&network(Some("ms0"), None, THREE)).is_none());
        let no_self = Sharding::of(&network(None, Some("ms0"), THREE)).unwrap();
        assert!(!no_self.keeps("A") && !no_self.keeps("D"));
        let no_shard = Sharding::of(&network(Some("ms0"), Some("ms0"), &[])).unwrap();
        assert!(no_shard.keeps("A"));
    }
}
