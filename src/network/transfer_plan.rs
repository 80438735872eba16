//! Which documents move when a sharded network changes, as one instance sees it: the
//! instances this one sends each of its documents to, and whether it keeps the document.
//!
//! A document belongs to one shard of a network: the rendezvous winner among the
//! network's shard names for its id (`shards::rendezvous`). When the network changes from
//! `old` to `new`:
//! - the document's new owners are the remotes of its shard in `new`;
//! - of its old owners (the remotes of its shard in `old`), exactly one sends it to each new
//!   owner that did not hold it: the rendezvous winner among the old owners' names for the
//!   old shard's name (Meilisearch Enterprise's choice of the instance that ships a shard);
//! - when `old` did not shard (no leader, or no shard), nobody knows who holds what: every
//!   instance sends every document it holds to each of its new owners but itself;
//! - an instance keeps a document only if it is among the document's new owners.
//!
//! Invariants: the plan is pure (a function of the two networks and the id); every new
//! owner ends up with a copy from at least one old holder, provided the old owners held
//! it; no instance sends a document to itself.

use std::collections::{BTreeMap, BTreeSet};

use shards::rendezvous::rendezvous_winner;

use super::model::{Network, Shard};

/// One instance's view of a network change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransferPlan {
    old: Network,
    new: Network,
    /// This instance's name before the change (the sender's name).
    old_name: Option<String>,
    /// This instance's name after the change (`None`: the change removes it).
    new_name: Option<String>,
}

impl TransferPlan {
    /// The plan of the instance named `old.local` before and `new.local` after.
    pub fn new(old: Network, new: Network) -> TransferPlan {
        let new_name = new.local.clone();
        let old_name = old.local.clone().or_else(|| new_name.clone());
        TransferPlan {
            old,
            new,
            old_name,
            new_name,
        }
    }

    /// The new network.
    pub fn new_network(&self) -> &Network {
        &self.new
    }

    /// The remotes this instance sends the document `external_id` to.
    pub fn targets(&self, external_id: &str) -> Vec<&str> {
        let Some(new_owners) = owners(&self.new.shards, external_id) else {
            return Vec::new();
        };
        let old_owners = if self.old.leader.is_some() {
            owners_with_shard(&self.old.shards, external_id)
        } else {
            None
        };
        let already_held: BTreeSet<&str> = match old_owners {
            Some((old_shard, old_owners)) => {
                let sender = rendezvous_winner(old_owners.iter().map(String::as_str), old_shard);
                if sender != self.old_name.as_deref() {
                    return Vec::new();
                }
                old_owners.iter().map(String::as_str).collect()
            }
            None => BTreeSet::new(),
        };
        new_owners
            .iter()
            .map(String::as_str)
            .filter(|owner| !already_held.contains(owner))
            .filter(|owner| Some(*owner) != self.new_name.as_deref())
            .collect()
    }

    /// Whether this instance keeps the document `external_id` after the change.
    pub fn keeps(&self, external_id: &str) -> bool {
        let Some(name) = self.new_name.as_deref() else {
            return false;
        };
        owners(&self.new.shards, external_id).is_some_and(|owners| owners.contains(name))
    }

    /// Every remote of either network but this instance, each once (with its newest URL and
    /// keys): whom this instance waits for before it deletes what it no longer keeps.
    pub fn peers(&self) -> BTreeMap<&str, &super::Remote> {
        let mut peers = BTreeMap::new();
        for (name, remote) in self.old.remotes.iter().chain(self.new.remotes.iter()) {
            let is_self = Some(name.as_str()) == self.new_name.as_deref()
                || Some(name.as_str()) == self.old_name.as_deref();
            if !is_self {
                peers.insert(name.as_str(), remote);
            }
        }
        peers
    }
}

/// The remotes of the shard `external_id` belongs to.
fn owners<'network>(
    shards: &'network BTreeMap<String, Shard>,
    external_id: &str,
) -> Option<&'network BTreeSet<String>> {
    owners_with_shard(shards, external_id).map(|(_, owners)| owners)
}

fn owners_with_shard<'network>(
    shards: &'network BTreeMap<String, Shard>,
    external_id: &str,
) -> Option<(&'network str, &'network BTreeSet<String>)> {
    let shard = rendezvous_winner(shards.keys().map(String::as_str), external_id)?;
    shards.get(shard).map(|found| (shard, &found.remotes))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::network::Remote;

    fn network(local: Option<&str>, leader: bool, shards: &[(&str, &[&str])]) -> Network {
        let mut network = Network {
            local: local.map(str::to_owned),
            leader: leader.then(|| "ms0".to_owned()),
            ..Network::default()
        };
        for (shard, remotes) in shards {
            for remote in *remotes {
                network
                    .remotes
                    .insert((*remote).to_owned(), Remote::default());
            }
            let remotes = remotes.iter().map(|remote| (*remote).to_owned()).collect();
            network
                .shards
                .insert((*shard).to_owned(), Shard { remotes });
        }
        network
    }

    const IDS: usize = 2_000;

    /// Every instance's plan over the same ids: who ends up with what.
    fn simulate(
        old: &Network,
        new: &Network,
        names: &[&str],
    ) -> BTreeMap<String, BTreeSet<String>> {
        let mut held: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for id in (0..IDS).map(|id| id.to_string()) {
            let old_holders: Vec<&str> = if old.leader.is_some() {
                owners(&old.shards, &id)
                    .unwrap()
                    .iter()
                    .map(String::as_str)
                    .collect()
            } else {
                names.to_vec()
            };
            for holder in &old_holders {
                let plan = TransferPlan::new(
                    Network {
                        local: Some((*holder).to_owned()),
                        ..old.clone()
                    },
                    Network {
                        local: new
                            .remotes
                            .contains_key(*holder)
                            .then(|| (*holder).to_owned()),
                        ..new.clone()
                    },
                );
                if plan.keeps(&id) {
                    held.entry((*holder).to_owned())
                        .or_default()
                        .insert(id.clone());
                }
                for target in plan.targets(&id) {
                    held.entry(target.to_owned())
                        .or_default()
                        .insert(id.clone());
                }
            }
        }
        held
    }

    fn assert_exactly_where_the_topology_says(
        new: &Network,
        held: &BTreeMap<String, BTreeSet<String>>,
    ) {
        for id in (0..IDS).map(|id| id.to_string()) {
            let expected = owners(&new.shards, &id).unwrap();
            for (name, documents) in held {
                assert_eq!(
                    documents.contains(&id),
                    expected.contains(name),
                    "{id} on {name}"
                );
            }
            for owner in expected {
                assert!(
                    held.get(owner)
                        .is_some_and(|documents| documents.contains(&id)),
                    "{id} missing on {owner}"
                );
            }
        }
    }

    #[test]
    fn adding_a_shard_sends_each_moved_document_once_to_its_new_owner() {
        let old = network(None, true, &[("s0", &["ms0"]), ("s1", &["ms1"])]);
        let new = network(
            None,
            true,
            &[("s0", &["ms0"]), ("s1", &["ms1"]), ("s2", &["ms2"])],
        );
        let held = simulate(&old, &new, &["ms0", "ms1"]);
        assert_exactly_where_the_topology_says(&new, &held);
    }

    #[test]
    fn a_new_replica_gets_the_whole_shard_from_one_old_owner() {
        let old = network(None, true, &[("s0", &["ms0", "ms1"]), ("s1", &["ms2"])]);
        let new = network(
            None,
            true,
            &[("s0", &["ms0", "ms1", "ms3"]), ("s1", &["ms2"])],
        );
        let held = simulate(&old, &new, &["ms0", "ms1", "ms2"]);
        assert_exactly_where_the_topology_says(&new, &held);
        // Only one of the two old owners of s0 sends each document.
        let senders: BTreeSet<bool> = ["ms0", "ms1"]
            .iter()
            .map(|name| {
                let plan = TransferPlan::new(
                    Network {
                        local: Some((*name).to_owned()),
                        ..old.clone()
                    },
                    Network {
                        local: Some((*name).to_owned()),
                        ..new.clone()
                    },
                );
                (0..IDS).any(|id| !plan.targets(&id.to_string()).is_empty())
            })
            .collect();
        assert_eq!(senders.len(), 2, "exactly one of the two sends");
    }

    #[test]
    fn removing_an_instance_hands_its_shard_over_and_it_keeps_nothing() {
        let old = network(
            None,
            true,
            &[("s0", &["ms0"]), ("s1", &["ms1"]), ("s2", &["ms2"])],
        );
        let new = network(None, true, &[("s0", &["ms0"]), ("s1", &["ms1"])]);
        let held = simulate(&old, &new, &["ms0", "ms1", "ms2"]);
        assert!(held.get("ms2").is_none_or(BTreeSet::is_empty));
        assert_exactly_where_the_topology_says(&new, &held);
    }

    #[test]
    fn starting_to_shard_sends_from_every_holder() {
        let old = network(None, false, &[]);
        let new = network(None, true, &[("s0", &["ms0"]), ("s1", &["ms1", "ms2"])]);
        let held = simulate(&old, &new, &["ms0", "ms1", "ms2"]);
        assert_exactly_where_the_topology_says(&new, &held);
    }

    #[test]
    fn peers_are_everyone_but_this_instance() {
        let old = network(Some("ms0"), true, &[("s0", &["ms0"]), ("s1", &["ms1"])]);
        let new = network(Some("ms0"), true, &[("s0", &["ms0"]), ("s2", &["ms2"])]);
        let plan = TransferPlan::new(old, new);
        let peers: Vec<&str> = plan.peers().keys().copied().collect();
        assert_eq!(peers, ["ms1", "ms2"]);
    }
}
