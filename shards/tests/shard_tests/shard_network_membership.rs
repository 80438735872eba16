//! `_shard` filters on a shard: each document belongs to the network shard its external id
//! hashes to (rendezvous over the shard names), whatever batches created, replaced, deleted
//! or cleared before, whether the membership was kept from an earlier filter and updated by
//! the commits since, computed afresh, asked by an older snapshot, or asked for another
//! network.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};
use shards::filter::{Filter, evaluate};
use shards::network_shards::NetworkShards;
use shards::shard::{Operation, Shard, ShardSnapshot};
use storage_engine::{Options, SyncMode};

fn open(directory: &tempfile::TempDir) -> Shard {
    let options = Options {
        sync_mode: SyncMode::None,
        ..Options::default()
    };
    Shard::open(&directory.path().join("shard.pages"), options).expect("open succeeds")
}

fn shards(names: &[&str]) -> NetworkShards {
    NetworkShards::new(names.iter().map(|name| (*name).to_owned()))
}

fn replace(id: &str) -> Operation {
    let mut document = Map::new();
    document.insert("id".to_owned(), Value::String(id.to_owned()));
    Operation::Replace {
        external_id: id.to_owned(),
        document,
    }
}

fn delete(id: &str) -> Operation {
    Operation::Delete {
        external_id: id.to_owned(),
    }
}

/// The external ids `filter` selects on `snapshot`, with the filter's `_shard` conditions
/// evaluated against `network`.
fn selected(snapshot: &ShardSnapshot, filter: &str, network: &NetworkShards) -> BTreeSet<String> {
    let rules = snapshot.settings().filterable_rules().clone();
    let filter = Filter::parse(filter)
        .unwrap()
        .unwrap()
        .with_network_shards(Some(network.clone()));
    let source = snapshot.facet_source();
    let ids = evaluate(&filter, &rules, &source).expect("the filter evaluates");
    assert!(source.take_error().is_none());
    snapshot.external_ids(&ids).unwrap().into_iter().collect()
}

/// The live ids of `live` that belong to the shard `name` of `network`.
fn expected(live: &BTreeSet<String>, network: &NetworkShards, name: &str) -> BTreeSet<String> {
    live.iter()
        .filter(|id| network.shard_of(id).map(|at| network.names()[at].as_str()) == Some(name))
        .cloned()
        .collect()
}

#[track_caller]
fn check_every_shard(snapshot: &ShardSnapshot, network: &NetworkShards, live: &BTreeSet<String>) {
    for name in network.names() {
        let filter = format!("_shard = \"{name}\"");
        assert_eq!(
            selected(snapshot, &filter, network),
            expected(live, network, name),
            "{filter}"
        );
    }
}

#[test]
fn golden_ids_land_in_the_shards_meilisearch_enterprise_gives_them() {
    let directory = tempfile::tempdir().unwrap();
    let shard = open(&directory);
    let ids = ["A", "B", "C", "D", "E", "1", "2", "3"];
    shard
        .apply(1, ids.iter().map(|id| replace(id)).collect())
        .unwrap();
    let snapshot = shard.read().unwrap();
    let network = shards(&["ms0", "ms1", "ms2"]);
    let of = |filter: &str| selected(&snapshot, filter, &network);
    let set = |ids: &[&str]| {
        ids.iter()
            .map(|id| (*id).to_owned())
            .collect::<BTreeSet<_>>()
    };
    assert_eq!(of("_shard = ms0"), set(&["D", "2"]));
    assert_eq!(of("_shard = ms1"), set(&["A", "B", "1", "3"]));
    assert_eq!(of("_shard = ms2"), set(&["C", "E"]));
    assert_eq!(of("_shard != ms1"), set(&["C", "D", "E", "2"]));
    assert_eq!(of("_shard IN [ms0, ms2]"), set(&["C", "D", "E", "2"]));
    assert_eq!(of("NOT _shard IN [ms0, ms2]"), set(&["A", "B", "1", "3"]));
}

/// A generator of pseudo-random numbers (xorshift), seeded per test.
struct Random(u64);

impl Random {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % bound
    }
}

/// One random batch: creations, replacements, deletions and, rarely, a clear first.
fn random_batch(random: &mut Random, live: &mut BTreeSet<String>) -> Vec<Operation> {
    let mut operations = Vec::new();
    if random.below(12) == 0 {
        operations.push(Operation::DeleteAll);
        live.clear();
    }
    for _ in 0..random.below(40) {
        let id = format!("doc-{}", random.below(150));
        if random.below(3) == 0 {
            operations.push(delete(&id));
            live.remove(&id);
        } else {
            operations.push(replace(&id));
            live.insert(id);
        }
    }
    operations
}

#[test]
fn membership_follows_every_batch_whether_kept_or_computed() {
    let seed = 0x5eed_u64 ^ u64::from(std::process::id());
    println!("seed {seed}");
    let mut random = Random(seed | 1);
    let directory = tempfile::tempdir().unwrap();
    let shard = open(&directory);
    let network = shards(&["s0", "s1", "s2", "s3"]);
    let mut live = BTreeSet::new();
    for batch in 1..=120u64 {
        let before = shard.read().unwrap();
        let live_before = live.clone();
        let operations = random_batch(&mut random, &mut live);
        shard.apply(batch, operations).unwrap();
        // An older snapshot still sees its own commit's membership.
        if random.below(4) == 0 {
            check_every_shard(&before, &network, &live_before);
        }
        drop(before);
        // Filters run after most batches (the kept membership is then updated by the next
        // commit), not after every one (it is then computed again).
        if random.below(3) != 0 {
            check_every_shard(&shard.read().unwrap(), &network, &live);
        }
    }
    check_every_shard(&shard.read().unwrap(), &network, &live);
    // Another network: its own shards, from the same documents.
    let other = shards(&["alpha", "beta"]);
    check_every_shard(&shard.read().unwrap(), &other, &live);
    shard.apply(121, vec![replace("late")]).unwrap();
    live.insert("late".to_owned());
    check_every_shard(&shard.read().unwrap(), &other, &live);
    check_every_shard(&shard.read().unwrap(), &network, &live);
}

#[test]
fn membership_survives_reopening_by_being_computed_again() {
    let directory = tempfile::tempdir().unwrap();
    let network = shards(&["ms0", "ms1"]);
    let live: BTreeSet<String> = (0..50).map(|number| number.to_string()).collect();
    {
        let shard = open(&directory);
        shard
            .apply(1, live.iter().map(|id| replace(id)).collect())
            .unwrap();
        check_every_shard(&shard.read().unwrap(), &network, &live);
    }
    let shard = open(&directory);
    check_every_shard(&shard.read().unwrap(), &network, &live);
    shard
        .set_filterable_fields(&json!(["id"]))
        .expect("a settings rebuild keeps ids");
    check_every_shard(&shard.read().unwrap(), &network, &live);
}
