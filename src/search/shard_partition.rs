//! Network search by shard (Meilisearch Enterprise 1.41, when the network has a leader): a
//! networked query becomes one copy per network shard, in shard name order, each restricted
//! to its shard by a `_shard = "S"` filter AND-ed with the query's own, and sent to one
//! instance that owns the shard — this instance when it owns it, else one of the shard's
//! remotes chosen at random.
//!
//! Where coresearch goes further than 1.41: a copy also carries the shard's other owners, in
//! a random order, so that when the chosen remote fails the copy is asked of the next owner
//! ([`super::remote`]) before the shard counts as lost in `remoteErrors`. As in 1.50, the
//! owners that failed lately ([`crate::network::availability`]) are asked last.
//!
//! Invariants: every shard with at least one remote is searched exactly once (replicas never
//! add a hit twice, and the `_shard` filter keeps an owner from answering for its other
//! shards); a shard without remotes is left out, as Meilisearch leaves it; the shard name in
//! the filter is written with Rust's `escape_default`, as Meilisearch writes it.

use serde_json::Value;

use super::prepare::fuse_filters;
use crate::network::Network;
use crate::network::availability::RemoteAvailability;

/// The copy of a networked query for one network shard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardCopy {
    pub shard: String,
    /// The instances to ask, in order: this instance alone when it owns the shard, else every
    /// owner, shuffled (the first one is Meilisearch's random choice).
    pub owners: Vec<String>,
}

/// The copies of a networked query under `network` (which has a leader), by shard name; a
/// shard's available owners come first (see [`owners_in_order`]).
pub fn shard_copies(network: &Network, availability: &RemoteAvailability) -> Vec<ShardCopy> {
    let mut copies = Vec::with_capacity(network.shards.len());
    for (name, shard) in &network.shards {
        let owners = match &network.local {
            Some(local) if shard.remotes.contains(local) => vec![local.clone()],
            _ => owners_in_order(shard.remotes.iter().cloned(), availability),
        };
        if owners.is_empty() {
            tracing::warn!(shard = %name, "no remote for the shard: it is not searched");
            continue;
        }
        copies.push(ShardCopy {
            shard: name.clone(),
            owners,
        });
    }
    copies
}

/// A shard's owners in the order they are asked: the available ones shuffled (the first is
/// Meilisearch's random choice among them), then the unavailable ones shuffled, asked only
/// when every available one failed (Meilisearch 1.50 never asks them).
fn owners_in_order(
    owners: impl Iterator<Item = String>,
    availability: &RemoteAvailability,
) -> Vec<String> {
    let (mut available, mut unavailable): (Vec<String>, Vec<String>) =
        owners.partition(|owner| availability.is_available(owner));
    fastrand::shuffle(&mut available);
    fastrand::shuffle(&mut unavailable);
    available.extend(unavailable);
    available
}

/// `filter` restricted to the network shard `shard`: `[filter…, "_shard = \"S\""]`.
pub fn shard_filter(filter: Option<Value>, shard: &str) -> Option<Value> {
    let clause = format!("_shard = \"{}\"", shard.escape_default());
    fuse_filters(filter, Some(Value::String(clause)))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use serde_json::json;

    use super::*;
    use crate::network::Shard;

    fn network(local: &str, shards: &[(&str, &[&str])]) -> Network {
        Network {
            local: Some(local.to_owned()),
            leader: Some("ms0".to_owned()),
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

    #[test]
    fn every_shard_is_asked_once_of_this_instance_when_it_owns_it() {
        let shards: &[(&str, &[&str])] = &[
            ("s2", &["ms2"]),
            ("s0", &["ms0", "ms1"]),
            ("s1", &["ms1", "ms2"]),
            ("empty", &[]),
        ];
        let copies = shard_copies(&network("ms1", shards), &RemoteAvailability::default());
        let names: Vec<&str> = copies.iter().map(|copy| copy.shard.as_str()).collect();
        assert_eq!(names, ["s0", "s1", "s2"]);
        assert_eq!(copies[0].owners, ["ms1"]);
        assert_eq!(copies[1].owners, ["ms1"]);
        assert_eq!(copies[2].owners, ["ms2"]);
    }

    #[test]
    fn a_shard_of_others_lists_every_owner_in_some_order() {
        let shards: &[(&str, &[&str])] = &[("s0", &["ms1", "ms2", "ms3"])];
        let mut firsts = BTreeSet::new();
        for _ in 0..200 {
            let copies = shard_copies(&network("ms0", shards), &RemoteAvailability::default());
            let owners: BTreeSet<&str> = copies[0].owners.iter().map(String::as_str).collect();
            assert_eq!(owners, BTreeSet::from(["ms1", "ms2", "ms3"]));
            firsts.insert(copies[0].owners[0].clone());
        }
        assert_eq!(firsts.len(), 3, "the first owner is chosen at random");
    }

    #[test]
    fn unavailable_owners_are_asked_last_and_still_asked() {
        let shards: &[(&str, &[&str])] = &[("s0", &["ms1", "ms2", "ms3"])];
        let availability = RemoteAvailability::default();
        availability.failed("ms1");
        availability.failed("ms3");
        for _ in 0..50 {
            let copies = shard_copies(&network("ms0", shards), &availability);
            assert_eq!(copies[0].owners[0], "ms2");
            let last: BTreeSet<&str> = copies[0].owners[1..].iter().map(String::as_str).collect();
            assert_eq!(last, BTreeSet::from(["ms1", "ms3"]));
        }
    }

    #[test]
    fn the_shard_clause_is_anded_with_the_query_filter() {
        assert_eq!(shard_filter(None, "s0"), Some(json!("_shard = \"s0\"")));
        assert_eq!(
            shard_filter(Some(json!(["a = 1", ["b = 2", "c = 3"]])), "s\"1"),
            Some(json!(["a = 1", ["b = 2", "c = 3"], "_shard = \"s\\\"1\""]))
        );
        assert_eq!(
            shard_filter(Some(json!("a = 1")), "ü"),
            Some(json!(["a = 1", "_shard = \"\\u{fc}\""]))
        );
    }
}
