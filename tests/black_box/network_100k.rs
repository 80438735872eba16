//! A sharded network of four instances on loopback holding 100,000 documents, changed step
//! by step as its users would change it, beside a single instance that receives every write:
//!
//! 1. a remote joins with a shard of its own, while documents are added, updated and
//!    deleted through the leader;
//! 2. a remote leaves (its shard with it);
//! 3. a shard's remote is replaced by another instance;
//! 4. a follower is killed (kill -9) in the middle of a change and started again;
//! 5. the leader is killed in the middle of a change, right after acknowledging writes, and
//!    started again.
//!
//! After each step every document is on exactly the remotes the topology names, with the
//! content of the last write acknowledged for it (no acknowledged write is lost, none
//! undone), and the network's searches — counts, filters, facets, keyword totals, sorted
//! pages — answer as the single instance does.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::collections::BTreeMap;

use common::network::{
    documents_of, kill_and_restart, network_options, owners_of, remote_of, start_network_instance,
    wait_for_every_change,
};
use common::{MASTER_KEY, Options, Server};
use serde_json::{Map, Value, json};

/// The instances of the network, the first one the leader.
const NAMES: [&str; 4] = ["ms0", "ms1", "ms2", "ms3"];
/// The documents indexed before the first change.
const DOCUMENTS: u64 = 100_000;
/// The seed of the generated documents and writes.
const SEED: u64 = 0x5EED_0100_0000;
/// The words of the titles.
const VOCABULARY: [&str; 16] = [
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
    "kilo", "lima", "mike", "november", "oscar", "papa",
];
/// The values of the facet field.
const GENRES: [&str; 8] = [
    "rock", "jazz", "pop", "folk", "blues", "soul", "punk", "metal",
];
/// Prices are below this.
const PRICES: u64 = 1_000;
/// The words of a title.
const TITLE_WORDS: usize = 3;
/// The cores of every instance (five share the machine).
const CORES_PER_INSTANCE: usize = 1;
/// The rounds of writes made during the first change.
const WRITE_ROUNDS: usize = 6;
/// The documents each round of writes adds, and those it updates.
const WRITE_DOCUMENTS: u64 = 500;
/// The documents each round of writes deletes.
const WRITE_DELETIONS: u64 = 50;
/// The hits of a sorted page compared with the single instance's.
const SORTED_PAGE: u64 = 40;
/// The index's `maxTotalHits` and `maxValuesPerFacet`: above every count, so totals and
/// facet distributions are exact.
const EXHAUSTIVE: u64 = 1_000_000;
/// The index of the test.
const INDEX: &str = "books";
/// The fields compared between the network and the model.
const COMPARED_FIELDS: &str = "id,title,price,genre";

/// The network, the single instance beside it, and what every acknowledged write says.
struct Scenario {
    network: Vec<Server>,
    single: Server,
    /// The instances that joined the network at some point (they have change tasks) are
    /// the first `joined`.
    joined: usize,
    /// The remotes of the network now.
    members: Vec<&'static str>,
    /// The last acknowledged content of every document, by id.
    model: BTreeMap<u64, Value>,
    /// The network's shards now.
    shards: Value,
    random: fastrand::Rng,
    next_id: u64,
}

#[test]
fn a_network_of_100k_documents_changes_shape_and_answers_as_one_instance() {
    eprintln!("seed {SEED}");
    let started = std::time::Instant::now();
    let mut scenario = Scenario::start();
    scenario.check("before any change");
    eprintln!("{:?}: indexed and checked", started.elapsed());

    let shards = json!({"s0": {"remotes": ["ms0"]}, "s1": {"remotes": ["ms1"]},
                        "s2": {"remotes": ["ms2"]}});
    let change = scenario.change(&["ms0", "ms1", "ms2"], shards);
    let during = scenario.write_while_changing(change);
    assert!(during > 0, "no write was acknowledged during the change");
    scenario.settle();
    scenario.check("a remote joined with a shard");
    eprintln!("{:?}: a remote joined", started.elapsed());

    let shards = json!({"s0": {"remotes": ["ms0"]}, "s2": {"remotes": ["ms2"]}});
    scenario.change(&["ms0", "ms2"], shards);
    scenario.settle();
    scenario.check("a remote left");
    eprintln!("{:?}: a remote left", started.elapsed());

    let shards = json!({"s0": {"remotes": ["ms0"]}, "s2": {"remotes": ["ms3"]}});
    scenario.change(&["ms0", "ms2", "ms3"], shards);
    scenario.settle();
    scenario.check("a shard's remote was replaced");
    eprintln!("{:?}: a shard's remote replaced", started.elapsed());

    let shards = json!({"s0": {"remotes": ["ms0"]}, "s2": {"remotes": ["ms3"]},
                        "s3": {"remotes": ["ms2"]}});
    scenario.change(&["ms0", "ms2", "ms3"], shards);
    scenario.kill_during_change(3);
    scenario.settle();
    scenario.check("a follower was killed during a change");
    eprintln!("{:?}: a follower killed", started.elapsed());

    let shards = json!({"s0": {"remotes": ["ms0", "ms2"]}, "s2": {"remotes": ["ms3"]},
                        "s3": {"remotes": ["ms2"]}});
    scenario.change(&["ms0", "ms2", "ms3"], shards);
    scenario.write_round();
    scenario.kill_during_change(0);
    scenario.settle();
    scenario.check("the leader was killed during a change");
    eprintln!("{:?}: the leader killed", started.elapsed());
}

impl Scenario {
    /// Four instances, a network of the first two (a shard each) holding [`DOCUMENTS`]
    /// documents, and a single instance holding the same.
    fn start() -> Scenario {
        let options = network_options(CORES_PER_INSTANCE);
        let network: Vec<Server> = NAMES
            .iter()
            .map(|_| start_network_instance(&options))
            .collect();
        let single = Server::start_with(Options {
            master_key: Some(MASTER_KEY.to_owned()),
            cores: Some(CORES_PER_INSTANCE),
            ..Options::default()
        });
        let mut scenario = Scenario {
            network,
            single,
            joined: 0,
            members: Vec::new(),
            model: BTreeMap::new(),
            shards: json!({}),
            random: fastrand::Rng::with_seed(SEED),
            next_id: DOCUMENTS,
        };
        let shards = json!({"s0": {"remotes": ["ms0"]}, "s1": {"remotes": ["ms1"]}});
        scenario.change(&["ms0", "ms1"], shards);
        scenario.settle();
        let settings = json!({
            "searchableAttributes": ["title"],
            "filterableAttributes": ["price", "genre"],
            "sortableAttributes": ["price", "id"],
            "pagination": {"maxTotalHits": EXHAUSTIVE},
            "faceting": {"maxValuesPerFacet": EXHAUSTIVE},
        });
        scenario.write("PATCH", &format!("/indexes/{INDEX}/settings"), &settings);
        let documents: Vec<Value> = (0..DOCUMENTS).map(|id| scenario.new_document(id)).collect();
        scenario.add(documents);
        scenario.settle();
        scenario
    }

    /// A generated document `id`.
    fn new_document(&mut self, id: u64) -> Value {
        let title: Vec<&str> = (0..TITLE_WORDS)
            .map(|_| VOCABULARY[self.random.usize(..VOCABULARY.len())])
            .collect();
        json!({
            "id": id,
            "title": title.join(" "),
            "price": self.random.u64(..PRICES),
            "genre": GENRES[self.random.usize(..GENRES.len())],
        })
    }

    /// The leader's `PATCH /network` to the instances named `remotes` (the others of
    /// before are removed) and to `shards` (the shards of before that are gone are
    /// removed); answers the leader's change task.
    fn change(&mut self, remotes: &[&'static str], shards: Value) -> u64 {
        let mut named = Map::new();
        for (position, (name, server)) in NAMES.iter().zip(&self.network).enumerate() {
            if remotes.contains(name) {
                named.insert((*name).to_owned(), remote_of(server));
                self.joined = self.joined.max(position + 1);
            } else if self.members.contains(name) {
                named.insert((*name).to_owned(), Value::Null);
            }
        }
        let mut patched = shards.as_object().unwrap().clone();
        for old in self.shards.as_object().unwrap().keys() {
            patched.entry(old.clone()).or_insert(Value::Null);
        }
        let mut body = json!({"remotes": named, "shards": patched});
        if self.members.is_empty() {
            body["self"] = json!(NAMES[0]);
            body["leader"] = json!(NAMES[0]);
        }
        let response = self.network[0].send("PATCH", "/network", Some(&body));
        assert_eq!(response.status, 202, "{}", response.text());
        self.members = remotes.to_vec();
        self.shards = shards;
        response.json()["taskUid"].as_u64().unwrap()
    }

    /// Sends the same write to the leader and to the single instance; both acknowledge it.
    fn write(&self, method: &str, path: &str, body: &Value) {
        for server in [&self.network[0], &self.single] {
            let response = server.send(method, path, Some(body));
            assert_eq!(response.status, 202, "{method} {path}: {}", response.text());
        }
    }

    /// Adds (or replaces) `documents`.
    fn add(&mut self, documents: Vec<Value>) {
        self.write(
            "POST",
            &format!("/indexes/{INDEX}/documents"),
            &json!(documents),
        );
        for document in documents {
            self.model
                .insert(document["id"].as_u64().unwrap(), document);
        }
    }

    /// One round of writes: new documents, new prices for existing ones, some deletions.
    fn write_round(&mut self) {
        let first = self.next_id;
        self.next_id += WRITE_DOCUMENTS;
        let added: Vec<Value> = (first..self.next_id)
            .map(|id| self.new_document(id))
            .collect();
        self.add(added);
        let existing: Vec<u64> = self.model.keys().copied().collect();
        let mut updates = Vec::new();
        for _ in 0..WRITE_DOCUMENTS {
            let id = existing[self.random.usize(..existing.len())];
            let price = self.random.u64(..PRICES);
            updates.push(json!({"id": id, "price": price}));
            self.model.get_mut(&id).unwrap()["price"] = json!(price);
        }
        self.write(
            "PUT",
            &format!("/indexes/{INDEX}/documents"),
            &json!(updates),
        );
        let deleted: Vec<u64> = (0..WRITE_DELETIONS)
            .map(|_| existing[self.random.usize(..existing.len())])
            .collect();
        let path = format!("/indexes/{INDEX}/documents/delete-batch");
        self.write("POST", &path, &json!(deleted));
        for id in deleted {
            self.model.remove(&id);
        }
    }

    /// Rounds of writes while the leader's change `change` runs; answers how many rounds
    /// started before it ended.
    fn write_while_changing(&mut self, change: u64) -> usize {
        let mut during = 0;
        for _ in 0..WRITE_ROUNDS {
            let task = self.network[0].send("GET", &format!("/tasks/{change}"), None);
            if matches!(
                task.json()["status"].as_str(),
                Some("enqueued" | "processing")
            ) {
                during += 1;
            }
            self.write_round();
        }
        during
    }

    /// Kills instance `position` while its change runs, and starts it again.
    fn kill_during_change(&mut self, position: usize) {
        let change =
            common::network::last_task_of_type(&self.network[position], "networkTopologyChange");
        assert!(
            matches!(change["status"].as_str(), Some("enqueued" | "processing")),
            "the change still runs when {} is killed: {change}",
            NAMES[position]
        );
        let victim = self.network.remove(position);
        let restarted = kill_and_restart(victim, &network_options(CORES_PER_INSTANCE));
        self.network.insert(position, restarted);
    }

    /// Waits until every change and every write is over, on every instance.
    fn settle(&self) {
        wait_for_every_change(&self.network[..self.joined]);
        let last = self.single.send("GET", "/tasks?limit=1", None).json();
        if let Some(uid) = last["results"][0]["uid"].as_u64() {
            let task = self.single.wait_task(uid);
            assert_eq!(task["status"], "succeeded", "{task}");
        }
    }

    /// Every check of a step.
    fn check(&self, step: &str) {
        self.check_placement(step);
        self.check_searches(step);
    }

    /// Every document is on exactly its owners, with its last acknowledged content, and the
    /// single instance holds exactly the model.
    fn check_placement(&self, step: &str) {
        let expected: BTreeMap<String, Value> = self
            .model
            .iter()
            .map(|(id, document)| (id.to_string(), document.clone()))
            .collect();
        let single = documents_of(&self.single, INDEX, COMPARED_FIELDS);
        assert_eq!(single.len(), expected.len(), "{step}: the single instance");
        assert!(
            single == expected,
            "{step}: the single instance's documents"
        );
        for (name, server) in NAMES.iter().zip(&self.network) {
            let held = documents_of(server, INDEX, COMPARED_FIELDS);
            let owned: BTreeMap<String, Value> = expected
                .iter()
                .filter(|(id, _)| {
                    owners_of(&self.shards, id)
                        .iter()
                        .any(|owner| owner == name)
                })
                .map(|(id, document)| (id.clone(), document.clone()))
                .collect();
            let missing = owned.keys().filter(|id| !held.contains_key(*id)).count();
            let extra = held.keys().filter(|id| !owned.contains_key(*id)).count();
            let stale = owned
                .iter()
                .filter(|(id, document)| held.get(*id).is_some_and(|held| held != *document))
                .count();
            assert_eq!(
                (missing, extra, stale),
                (0, 0, 0),
                "{step}: {name} misses {missing}, holds {extra} it must not, {stale} differ"
            );
        }
    }

    /// The network's searches (through the leader) answer as the single instance's.
    fn check_searches(&self, step: &str) {
        for query in counted_queries() {
            let (network, single) = self.both_search(&query);
            for key in ["totalHits", "totalPages", "facetDistribution", "facetStats"] {
                assert_eq!(network[key], single[key], "{step}: {key} of {query}");
            }
        }
        for query in sorted_queries() {
            let (network, single) = self.both_search(&query);
            assert_eq!(ids(&network), ids(&single), "{step}: {query}");
            assert_eq!(
                network["estimatedTotalHits"], single["estimatedTotalHits"],
                "{step}: {query}"
            );
        }
    }

    /// `query`'s answers by the network (through the leader) and by the single instance.
    fn both_search(&self, query: &Value) -> (Value, Value) {
        let path = format!("/indexes/{INDEX}/search");
        let network = self.network[0].send("POST", &path, Some(query));
        assert_eq!(network.status, 200, "{query}: {}", network.text());
        let network = network.json();
        assert_eq!(network["remoteErrors"], json!({}), "{query}: {network}");
        let single = self.single.send("POST", &path, Some(query));
        assert_eq!(single.status, 200, "{query}: {}", single.text());
        (network, single.json())
    }
}

/// Queries whose totals and facets are compared.
fn counted_queries() -> Vec<Value> {
    let mut queries = vec![
        json!({"q": ""}),
        json!({"filter": "price < 250"}),
        json!({"filter": "genre = jazz"}),
        json!({"filter": "price >= 500 AND genre IN [rock, pop]"}),
        json!({"filter": "NOT genre = metal OR price = 7"}),
        json!({"q": "", "facets": ["genre", "price"]}),
        json!({"q": "alpha"}),
        json!({"q": "bravo charlie"}),
        json!({"q": "kilo", "filter": "price < 500", "facets": ["genre"]}),
        json!({"q": "oscar papa", "facets": ["genre", "price"]}),
    ];
    for query in &mut queries {
        query["page"] = json!(1);
        query["hitsPerPage"] = json!(5);
    }
    queries
}

/// Queries whose first page is compared hit by hit: sorted by price, then by id.
fn sorted_queries() -> Vec<Value> {
    let page = |query: Value| {
        let mut query = query;
        query["limit"] = json!(SORTED_PAGE);
        query["attributesToRetrieve"] = json!(["id"]);
        query
    };
    vec![
        page(json!({"sort": ["price:asc", "id:asc"]})),
        page(json!({"sort": ["price:desc", "id:desc"]})),
        page(json!({"sort": ["price:asc", "id:desc"], "filter": "genre = soul"})),
        page(json!({"q": "delta", "sort": ["price:desc", "id:asc"]})),
    ]
}

/// The ids of an answer's hits.
fn ids(answer: &Value) -> Vec<Value> {
    answer["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|hit| hit["id"].clone())
        .collect()
}
