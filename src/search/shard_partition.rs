//! Network search by shard (Meilisearch Enterprise 1.41, when the network has a leader): a
//! networked query becomes one copy per network shard, in shard name order, each restricted
//! to its shard by a `_shard = "S"` filter AND-ed with the query's own, and sent to one
//! instance that owns the shard: this instance when it owns it, else one of the shard's
//! remotes.
//!
//! Which remote: Meilisearch picks one at random for every request. Two replicas of a shard
//! may order the same documents differently (ties go by internal id, and each replica numbers
//! its documents in the order they reached it: a replica filled by a topology change numbers
//! them anew), so a user paging through a search whose pages went to different replicas got
//! some documents twice and never saw others. Here the remote is chosen by rendezvous
//! hashing on the *read*: the request without its page ([`ReadKey`]) and the shard's name.
//! Every page of one search, listing or facet search sent to one instance is asked of the
//! same replica while that replica answers; different reads still spread over the replicas.
//!
//! Where coresearch goes further than 1.41: a copy also carries the shard's other owners, so
//! that when the chosen remote fails the copy is asked of the next owner ([`super::remote`])
//! before the shard counts as lost in `remoteErrors`. As in 1.50, the owners that failed
//! lately ([`crate::network::availability`]) are asked last.
//!
//! Invariants: every shard with at least one remote is searched exactly once (replicas never
//! add a hit twice, and the `_shard` filter keeps an owner from answering for its other
//! shards); a shard without remotes is left out, as Meilisearch leaves it; for one network,
//! one availability and one read key, the owners come in the same order every time; the
//! shard name in the filter is written with Rust's `escape_default`, as Meilisearch writes it.
//!
//! The same choice makes merged scores repeatable: a hit's `weightedRankingScore` is the
//! `_rankingScore` its replica computed times the query's weight, one multiplication and no
//! sum, and the merge only compares those values. Two identical searches sent to one
//! instance ask the same replicas, so they give the same hits with the same scores to the
//! last digit. Before, each search could be answered by another replica, and nothing made
//! two replicas compute a score to the same last bit.
//!
//! What it does not cover: an instance that owns the shard answers it itself, so pages of one
//! search sent to *different* instances that each hold a replica may still disagree on ties.

use serde_json::Value;
use shards::rendezvous::rendezvous_weight;
use xxhash_rust::xxh3::xxh3_64;

use super::prepare::fuse_filters;
use crate::network::Network;
use crate::network::availability::RemoteAvailability;

/// What identifies a read across its pages: a hash of the request without its page (no
/// `offset`, `limit`, `page` or `hitsPerPage`), the index's uid included. Reads with the same
/// key ask each shard of the same owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadKey(u64);

impl ReadKey {
    /// The key of a read of `index_uid` whose page-free parameters serialize to `parameters`.
    pub fn of(index_uid: &str, parameters: &str) -> ReadKey {
        let mut bytes = Vec::with_capacity(index_uid.len() + 1 + parameters.len());
        bytes.extend_from_slice(index_uid.as_bytes());
        bytes.push(0);
        bytes.extend_from_slice(parameters.as_bytes());
        ReadKey(xxh3_64(&bytes))
    }

    /// The weight of `owner` for this read of `shard`: the owner of greatest weight is asked
    /// first.
    fn weight(self, owner: &str, shard: &str) -> u64 {
        rendezvous_weight(owner, &format!("{shard}\u{1f}{:016x}", self.0))
    }
}

/// The copy of a networked query for one network shard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardCopy {
    pub shard: String,
    /// The instances to ask, in order: this instance alone when it owns the shard, else every
    /// owner, in the read's rendezvous order (see [`owners_in_order`]).
    pub owners: Vec<String>,
}

/// The copies of the read `read` under `network` (which has a leader), by shard name; a
/// shard's available owners come first (see [`owners_in_order`]).
pub fn shard_copies(
    network: &Network,
    availability: &RemoteAvailability,
    read: ReadKey,
) -> Vec<ShardCopy> {
    let mut copies = Vec::with_capacity(network.shards.len());
    for (name, shard) in &network.shards {
        let owners = match &network.local {
            Some(local) if shard.remotes.contains(local) => vec![local.clone()],
            _ => owners_in_order(shard.remotes.iter().cloned(), availability, read, name),
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

/// The owners of `shard` in the order they are asked for `read`: the available ones by
/// decreasing rendezvous weight, then the unavailable ones the same way, asked only when
/// every available one failed (Meilisearch 1.50 never asks them). Equal weights (a 64-bit
/// hash collision) go by name, so the order never depends on the owners' iteration order.
fn owners_in_order(
    owners: impl Iterator<Item = String>,
    availability: &RemoteAvailability,
    read: ReadKey,
    shard: &str,
) -> Vec<String> {
    let mut weighed: Vec<(bool, u64, String)> = owners
        .map(|owner| {
            let weight = read.weight(&owner, shard);
            (availability.is_available(&owner), weight, owner)
        })
        .collect();
    weighed.sort_unstable_by(|left, right| {
        right
            .0
            .cmp(&left.0)
            .then(right.1.cmp(&left.1))
            .then_with(|| left.2.cmp(&right.2))
    });
    weighed.into_iter().map(|(_, _, owner)| owner).collect()
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
        let read = ReadKey::of("books", "{}");
        let copies = shard_copies(
            &network("ms1", shards),
            &RemoteAvailability::default(),
            read,
        );
        let names: Vec<&str> = copies.iter().map(|copy| copy.shard.as_str()).collect();
        assert_eq!(names, ["s0", "s1", "s2"]);
        assert_eq!(copies[0].owners, ["ms1"]);
        assert_eq!(copies[1].owners, ["ms1"]);
        assert_eq!(copies[2].owners, ["ms2"]);
    }

    #[test]
    fn one_read_asks_the_same_owner_every_time_and_reads_spread_over_owners() {
        let shards: &[(&str, &[&str])] = &[("s0", &["ms1", "ms2", "ms3"])];
        let availability = RemoteAvailability::default();
        let mut firsts = BTreeSet::new();
        for query in 0..200 {
            let read = ReadKey::of("books", &format!("{{\"q\":\"word {query}\"}}"));
            let copies = shard_copies(&network("ms0", shards), &availability, read);
            let owners: BTreeSet<&str> = copies[0].owners.iter().map(String::as_str).collect();
            assert_eq!(owners, BTreeSet::from(["ms1", "ms2", "ms3"]));
            for _ in 0..5 {
                let again = shard_copies(&network("ms0", shards), &availability, read);
                assert_eq!(again[0].owners, copies[0].owners, "read {query}");
            }
            firsts.insert(copies[0].owners[0].clone());
        }
        assert_eq!(firsts.len(), 3, "reads spread over every owner");
    }

    #[test]
    fn the_order_depends_on_the_index_and_the_shard_too() {
        let shards: &[(&str, &[&str])] = &[("s0", &["ms1", "ms2"]), ("s1", &["ms1", "ms2"])];
        let availability = RemoteAvailability::default();
        let mut differs_by_shard = false;
        let mut differs_by_index = false;
        for query in 0..64 {
            let parameters = format!("{{\"q\":\"{query}\"}}");
            let books = shard_copies(
                &network("ms0", shards),
                &availability,
                ReadKey::of("books", &parameters),
            );
            let films = shard_copies(
                &network("ms0", shards),
                &availability,
                ReadKey::of("films", &parameters),
            );
            differs_by_shard |= books[0].owners != books[1].owners;
            differs_by_index |= books[0].owners != films[0].owners;
        }
        assert!(differs_by_shard && differs_by_index);
    }

    #[test]
    fn unavailable_owners_are_asked_last_and_still_asked() {
        let shards: &[(&str, &[&str])] = &[("s0", &["ms1", "ms2", "ms3"])];
        let availability = RemoteAvailability::default();
        availability.failed("ms1");
        availability.failed("ms3");
        for query in 0..50 {
            let read = ReadKey::of("books", &query.to_string());
            let copies = shard_copies(&network("ms0", shards), &availability, read);
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
