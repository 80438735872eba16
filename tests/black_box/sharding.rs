//! Documents and searches in a sharded network (Meilisearch Enterprise's network with a
//! leader), black-box, with three instances on loopback: `ms0` (the leader) owns shard
//! `ms0`, `ms1` owns shard `ms1`, and `ms2` owns shard `ms2` and replicates shard `ms1`.
//! Every write goes to the leader, which forwards it to every instance; each keeps only the
//! documents of its own shards.
//!
//! What is checked: the golden rendezvous assignment of Meilisearch's own network tests;
//! `indexedDocuments` and `deletedDocuments` counting only kept documents; the `_shard`
//! filter (`=`, `!=`, `IN`, `NOT`) in search, document fetches, deletions by filter and
//! exports, with every refusal; a network search from any instance answering what one
//! instance holding everything answers (hits, totals, facets), never a hit twice with
//! replicas; and a killed replica replaced by the shard's other owner.

#![allow(clippy::unwrap_used, clippy::too_many_lines)]

use crate::common;

use std::collections::BTreeSet;

use common::{MASTER_KEY, Options, Server};
use serde_json::{Value, json};

/// Outgoing calls (forwarded writes, remote searches, exports) may reach loopback addresses.
const ALLOW_LOOPBACK: [&str; 2] = ["--experimental-allowed-ip-networks", "127.0.0.0/8"];

/// The instances of the network, the leader first.
const NAMES: [&str; 3] = ["ms0", "ms1", "ms2"];

/// The network's shards and their remotes: `ms1` is replicated on `ms2`.
const SHARDS: [(&str, &[&str]); 3] = [
    ("ms0", &["ms0"]),
    ("ms1", &["ms1", "ms2"]),
    ("ms2", &["ms2"]),
];

/// The golden ids and the shard Meilisearch Enterprise puts each in (reference §2.2).
const GOLDEN: [(&str, &str); 8] = [
    ("A", "ms1"),
    ("B", "ms1"),
    ("C", "ms2"),
    ("D", "ms0"),
    ("E", "ms2"),
    ("1", "ms1"),
    ("2", "ms0"),
    ("3", "ms1"),
];

/// The words the corpus's titles are made of.
const WORDS: [&str; 8] = [
    "alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "theta",
];
/// The genres of the corpus.
const GENRES: [&str; 5] = ["drama", "comedy", "horror", "documentary", "western"];
/// Documents of the corpus.
const CORPUS_DOCUMENTS: u64 = 300;

fn start_instance() -> Server {
    let server = Server::start_with(Options {
        master_key: Some(MASTER_KEY.to_owned()),
        extra_arguments: ALLOW_LOOPBACK.iter().map(|arg| (*arg).to_owned()).collect(),
        cores: Some(2),
        ..Options::default()
    });
    enable(&server, json!({"network": true}));
    server
}

/// One instance of the network.
struct Instance {
    name: &'static str,
    server: Option<Server>,
}

impl Instance {
    fn server(&self) -> &Server {
        self.server.as_ref().expect("the instance runs")
    }

    fn kill(&mut self) {
        self.server.take().expect("the instance runs").kill();
    }
}

/// Starts the three instances and makes `ms0` the leader of the network of [`SHARDS`].
fn start_network() -> Vec<Instance> {
    let servers: Vec<Server> = NAMES.iter().map(|_| start_instance()).collect();
    let remotes: serde_json::Map<String, Value> = NAMES
        .iter()
        .zip(&servers)
        .map(|(name, server)| {
            let remote = json!({"url": server.url(), "searchApiKey": MASTER_KEY,
                                "writeApiKey": MASTER_KEY});
            ((*name).to_owned(), remote)
        })
        .collect();
    let shards: serde_json::Map<String, Value> = SHARDS
        .iter()
        .map(|(name, remotes)| ((*name).to_owned(), json!({ "remotes": remotes })))
        .collect();
    let body = json!({"self": "ms0", "leader": "ms0", "remotes": remotes, "shards": shards});
    let response = servers[0].send("PATCH", "/network", Some(&body));
    let task = finished(&servers[0], &response);
    assert_eq!(task["status"], "succeeded", "{task}");
    for (name, server) in NAMES.iter().zip(&servers).skip(1) {
        let uid = task["network"]["remote_tasks"][name]["taskUid"].as_u64();
        let change = server.wait_task(uid.unwrap_or_else(|| panic!("{task}")));
        assert_eq!(change["status"], "succeeded", "{change}");
    }
    NAMES
        .iter()
        .zip(servers)
        .map(|(name, server)| Instance {
            name,
            server: Some(server),
        })
        .collect()
}

fn enable(server: &Server, features: Value) {
    let response = server.send("PATCH", "/experimental-features", Some(&features));
    assert_eq!(response.status, 200, "{}", response.text());
}

/// Sends a write to the leader; answers the finished task of every instance (the leader's,
/// then each remote's copy), in [`NAMES`] order.
fn write(instances: &[Instance], method: &str, path: &str, body: Option<&Value>) -> Vec<Value> {
    let leader = instances[0].server();
    let task = finished(leader, &leader.send(method, path, body));
    let mut tasks = vec![task.clone()];
    for instance in &instances[1..] {
        let uid = task["network"]["remote_tasks"][instance.name]["taskUid"].as_u64();
        let uid = uid.unwrap_or_else(|| panic!("{task}"));
        tasks.push(instance.server().wait_task(uid));
    }
    tasks
}

/// [`write`], every task succeeded.
fn write_ok(instances: &[Instance], method: &str, path: &str, body: Option<&Value>) -> Vec<Value> {
    let tasks = write(instances, method, path, body);
    for task in &tasks {
        assert_eq!(task["status"], "succeeded", "{task}");
    }
    tasks
}

/// Waits for the task a 202 answer enqueued; answers the finished task.
fn finished(server: &Server, response: &common::HttpResponse) -> Value {
    assert_eq!(response.status, 202, "{}", response.text());
    server.wait_task(response.json()["taskUid"].as_u64().unwrap())
}

fn succeeded(server: &Server, response: &common::HttpResponse) -> Value {
    let task = finished(server, response);
    assert_eq!(task["status"], "succeeded", "{task}");
    task
}

fn add(server: &Server, index: &str, documents: &Value) -> Value {
    let path = format!("/indexes/{index}/documents");
    succeeded(server, &server.send("POST", &path, Some(documents)))
}

fn settings(server: &Server, index: &str, settings: &Value) {
    let path = format!("/indexes/{index}/settings");
    succeeded(server, &server.send("PATCH", &path, Some(settings)));
}

fn search(server: &Server, index: &str, body: &Value) -> Value {
    let response = server.send("POST", &format!("/indexes/{index}/search"), Some(body));
    assert_eq!(response.status, 200, "{}", response.text());
    response.json()
}

/// The ids of `hits`, as strings.
fn ids(hits: &Value) -> Vec<String> {
    hits.as_array()
        .unwrap()
        .iter()
        .map(|hit| match &hit["id"] {
            Value::String(id) => id.clone(),
            other => other.to_string(),
        })
        .collect()
}

fn id_set(hits: &Value) -> BTreeSet<String> {
    ids(hits).into_iter().collect()
}

fn set(ids: &[&str]) -> BTreeSet<String> {
    ids.iter().map(|id| (*id).to_owned()).collect()
}

/// The golden ids of the shards `shards`.
fn golden_of(shards: &[&str]) -> BTreeSet<String> {
    GOLDEN
        .iter()
        .filter(|(_, shard)| shards.contains(shard))
        .map(|(id, _)| (*id).to_owned())
        .collect()
}

/// The shards an instance owns.
fn owned_by(name: &str) -> Vec<&'static str> {
    SHARDS
        .iter()
        .filter(|(_, remotes)| remotes.contains(&name))
        .map(|(shard, _)| *shard)
        .collect()
}

fn assert_error(response: &common::HttpResponse, status: u16, code: &str, message: &str) {
    assert_eq!(response.status, status, "{}", response.text());
    let body = response.json();
    assert_eq!(body["code"], code, "{body}");
    assert_eq!(body["message"], message, "{body}");
}

/// Every document of the `golden` index an instance stores (one page).
fn stored(server: &Server, index: &str) -> BTreeSet<String> {
    // This instance's own: a listing reads the whole network by default when it shards
    // (`useNetwork` needs the `network` feature, which a lone instance has not).
    let networked = server.send("GET", "/experimental-features", None).json()["network"] == true;
    let body = if networked {
        json!({"limit": 1000, "useNetwork": false})
    } else {
        json!({"limit": 1000})
    };
    let response = server.send(
        "POST",
        &format!("/indexes/{index}/documents/fetch"),
        Some(&body),
    );
    assert_eq!(response.status, 200, "{}", response.text());
    id_set(&response.json()["results"])
}

#[test]
fn each_instance_keeps_the_golden_documents_of_its_shards_and_filters_by_shard() {
    let instances = start_network();
    let documents: Vec<Value> = GOLDEN
        .iter()
        .map(|(id, _)| json!({"id": id, "title": format!("document {id}")}))
        .collect();
    let tasks = write_ok(
        &instances,
        "POST",
        "/indexes/golden/documents",
        Some(&Value::Array(documents)),
    );
    let numbers = json!([{"id": 1}, {"id": 2}, {"id": 3}]);
    write_ok(
        &instances,
        "POST",
        "/indexes/numbers/documents",
        Some(&numbers),
    );
    for (instance, task) in instances.iter().zip(&tasks) {
        let server = instance.server();
        let kept = golden_of(&owned_by(instance.name));
        assert_eq!(task["details"]["receivedDocuments"], 8, "{task}");
        assert_eq!(task["details"]["indexedDocuments"], kept.len(), "{task}");
        assert_eq!(stored(server, "golden"), kept, "{}", instance.name);
        // Integer ids hash as their decimal text.
        let expected: BTreeSet<String> = ["1", "2", "3"]
            .into_iter()
            .filter(|id| kept.contains(*id))
            .map(str::to_owned)
            .collect();
        assert_eq!(stored(server, "numbers"), expected, "{}", instance.name);
    }
    let replica = instances[2].server();
    shard_filters_select_by_shard(replica);
    shard_filters_refuse_what_meilisearch_refuses(&instances);
    editions_and_similar_documents_filter_by_shard(&instances);
    exports_filter_by_shard(replica);
    deletions_skip_the_documents_of_other_shards(&instances);
}

/// `_shard` in searches and document fetches on `ms2` (shards `ms1` and `ms2`).
fn shard_filters_select_by_shard(server: &Server) {
    let local = |filter: Value| {
        let body = json!({"filter": filter, "useNetwork": false, "limit": 100});
        id_set(&search(server, "golden", &body)["hits"])
    };
    assert_eq!(local(json!("_shard = \"ms1\"")), golden_of(&["ms1"]));
    assert_eq!(local(json!("_shard = ms2")), golden_of(&["ms2"]));
    // A shard of the network this instance does not own exists, and is empty here.
    assert_eq!(local(json!("_shard = ms0")), BTreeSet::new());
    assert_eq!(local(json!("_shard != ms1")), golden_of(&["ms2"]));
    assert_eq!(local(json!("_shard IN [ms0, ms2]")), golden_of(&["ms2"]));
    assert_eq!(local(json!("NOT _shard IN [ms2]")), golden_of(&["ms1"]));
    assert_eq!(
        local(json!(["_shard = ms1", ["_shard = ms2", "_shard = ms0"]])),
        BTreeSet::new()
    );
    assert_eq!(
        local(json!([["_shard = ms1", "_shard = ms2"]])),
        golden_of(&["ms1", "ms2"])
    );
    let fetched = server.send(
        "POST",
        "/indexes/golden/documents/fetch",
        Some(&json!({"filter": "_shard = ms2"})),
    );
    assert_eq!(id_set(&fetched.json()["results"]), golden_of(&["ms2"]));
    let listed = server.send(
        "GET",
        "/indexes/golden/documents?filter=_shard%20%3D%20ms1",
        None,
    );
    assert_eq!(id_set(&listed.json()["results"]), golden_of(&["ms1"]));
}

/// Every refusal of a `_shard` filter, with Meilisearch's code and message on each route
/// (searched on `ms2`; deletions go through the leader to every instance).
fn shard_filters_refuse_what_meilisearch_refuses(instances: &[Instance]) {
    let server = instances[2].server();
    let local = |filter: &str| {
        let body = json!({"filter": filter, "useNetwork": false});
        server.send("POST", "/indexes/golden/search", Some(&body))
    };
    assert_error(
        &local("_shard = nope"),
        400,
        "invalid_search_filter",
        "Index `golden`: Shard `nope` does not exist",
    );
    assert_error(
        &local("_shard IN [ms1, nope]"),
        400,
        "invalid_search_filter",
        "Index `golden`: Shard `nope` does not exist",
    );
    let operator = |operator: &str| {
        format!(
            "Index `golden`: Filter operator `{operator} is not allowed for the special attribute `_shard`.\n  - Note: allowed operators: =, !=, IN. \n  - Note: other operators are not allowed for the special attribute `_shard`."
        )
    };
    for (filter, name) in [
        ("_shard EXISTS", "EXISTS"),
        ("_shard > ms0", ">"),
        ("_shard ms0 TO ms2", "TO"),
        ("_shard IS NULL", "IS NULL"),
    ] {
        assert_error(
            &local(filter),
            400,
            "invalid_search_filter",
            &operator(name),
        );
    }
    // The document routes answer the engine's code without the index.
    assert_error(
        &server.send(
            "POST",
            "/indexes/golden/documents/fetch",
            Some(&json!({"filter": "_shard = nope"})),
        ),
        400,
        "invalid_search_filter",
        "Shard `nope` does not exist",
    );
    // A deletion by filter fails its task on every instance, with the index named.
    let tasks = write(
        instances,
        "POST",
        "/indexes/golden/documents/delete",
        Some(&json!({"filter": "_shard = nope"})),
    );
    for task in tasks {
        assert_eq!(task["status"], "failed", "{task}");
        assert_eq!(task["error"]["code"], "invalid_search_filter", "{task}");
        assert_eq!(
            task["error"]["message"],
            "Index `golden`: Shard `nope` does not exist"
        );
    }
    // A network search restricts each shard's copy the same way: the user's shard clause
    // still selects by shard across the network.
    let networked = search(
        server,
        "golden",
        &json!({"filter": "_shard = ms0", "limit": 100}),
    );
    assert_eq!(id_set(&networked["hits"]), golden_of(&["ms0"]));
}

/// `_shard` in the filter of an edition by function (through the leader) and of similar
/// documents (on `ms2`).
fn editions_and_similar_documents_filter_by_shard(instances: &[Instance]) {
    for instance in instances {
        enable(instance.server(), json!({"editDocumentsByFunction": true}));
    }
    let body = json!({"function": "doc.title = \"edited\"", "filter": "_shard = ms2"});
    let tasks = write_ok(
        instances,
        "POST",
        "/indexes/golden/documents/edit",
        Some(&body),
    );
    let edited: Vec<&Value> = tasks
        .iter()
        .map(|task| &task["details"]["editedDocuments"])
        .collect();
    assert_eq!(edited, [&json!(0), &json!(0), &json!(2)]);
    let server = instances[2].server();
    let found = search(
        server,
        "golden",
        &json!({"q": "edited", "useNetwork": false, "limit": 100}),
    );
    assert_eq!(id_set(&found["hits"]), golden_of(&["ms2"]));
    let body = json!({"function": "doc.title = \"again\"", "filter": "_shard = nope"});
    for task in write(
        instances,
        "POST",
        "/indexes/golden/documents/edit",
        Some(&body),
    ) {
        assert_eq!(task["error"]["code"], "invalid_search_filter", "{task}");
        assert_eq!(
            task["error"]["message"],
            "Index `golden`: Shard `nope` does not exist"
        );
    }
    let embedders = json!({"embedders": {"default": {"source": "userProvided", "dimensions": 2}}});
    write_ok(
        instances,
        "PATCH",
        "/indexes/vectors/settings",
        Some(&embedders),
    );
    let documents: Vec<Value> = GOLDEN
        .iter()
        .enumerate()
        .map(|(number, (id, _))| json!({"id": id, "_vectors": {"default": [1.0, number]}}))
        .collect();
    write_ok(
        instances,
        "POST",
        "/indexes/vectors/documents",
        Some(&Value::Array(documents)),
    );
    let similar = |filter: &str| {
        let body = json!({"id": "A", "embedder": "default", "filter": filter});
        server.send("POST", "/indexes/vectors/similar", Some(&body))
    };
    let response = similar("_shard = ms2");
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(id_set(&response.json()["hits"]), golden_of(&["ms2"]));
    let response = similar("_shard != ms2");
    let mut others = golden_of(&["ms1"]);
    others.remove("A");
    assert_eq!(id_set(&response.json()["hits"]), others);
    assert_error(
        &similar("_shard = nope"),
        400,
        "invalid_search_filter",
        "Shard `nope` does not exist",
    );
}

/// An export of `ms2` filtered by shard sends only that shard's documents.
fn exports_filter_by_shard(server: &Server) {
    let target = Server::start_with(Options {
        master_key: Some(MASTER_KEY.to_owned()),
        ..Options::default()
    });
    let body = json!({
        "url": target.url(),
        "apiKey": MASTER_KEY,
        "indexes": {"golden": {"filter": "_shard = ms1"}},
    });
    let response = server.send("POST", "/export", Some(&body));
    assert_eq!(response.status, 200, "{}", response.text());
    let task = server.wait_task(response.json()["taskUid"].as_u64().unwrap());
    assert_eq!(task["status"], "succeeded", "{task}");
    let deadline = std::time::Instant::now() + common::TASK_WAIT;
    loop {
        let tasks = target.send("GET", "/tasks?statuses=enqueued,processing", None);
        if tasks.json()["results"].as_array().unwrap().is_empty() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the import never ended"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(stored(&target, "golden"), golden_of(&["ms1"]));
    // Without the `network` feature, `_shard` is refused at the edge, pointing at it.
    assert_error(
        &target.send(
            "POST",
            "/indexes/golden/documents/fetch",
            Some(&json!({"filter": "_shard = ms2"})),
        ),
        400,
        "feature_not_enabled",
        "using a shard filter requires enabling the `network` experimental feature. See https://github.com/orgs/meilisearch/discussions/805\n1:7 _shard = ms2",
    );
}

/// Deletions by id count and delete only the documents of the instance's shards; a
/// deletion by `_shard` filter deletes the shard's documents wherever they are.
fn deletions_skip_the_documents_of_other_shards(instances: &[Instance]) {
    let deleted_ids = ["A", "C", "D", "Z"];
    let tasks = write_ok(
        instances,
        "POST",
        "/indexes/golden/documents/delete-batch",
        Some(&json!(deleted_ids)),
    );
    for (instance, task) in instances.iter().zip(&tasks) {
        let kept = golden_of(&owned_by(instance.name));
        let deleted = deleted_ids.iter().filter(|id| kept.contains(**id)).count();
        assert_eq!(task["details"]["providedIds"], 4, "{task}");
        assert_eq!(task["details"]["deletedDocuments"], deleted, "{task}");
        let remaining: BTreeSet<String> = kept
            .iter()
            .filter(|id| !deleted_ids.contains(&id.as_str()))
            .cloned()
            .collect();
        assert_eq!(
            stored(instance.server(), "golden"),
            remaining,
            "{}",
            instance.name
        );
    }
    let tasks = write_ok(
        instances,
        "POST",
        "/indexes/golden/documents/delete",
        Some(&json!({"filter": "_shard = ms1"})),
    );
    let deleted: Vec<&Value> = tasks
        .iter()
        .map(|task| &task["details"]["deletedDocuments"])
        .collect();
    assert_eq!(deleted, [&json!(0), &json!(3), &json!(3)]);
    assert_eq!(stored(instances[0].server(), "golden"), set(&["2"]));
    assert_eq!(stored(instances[1].server(), "golden"), BTreeSet::new());
    assert_eq!(stored(instances[2].server(), "golden"), set(&["E"]));
}

/// The corpus: titles of a few words, a genre and a unique rank.
fn corpus() -> Vec<Value> {
    (0..CORPUS_DOCUMENTS)
        .map(|number| {
            let index = number as usize;
            let title: Vec<&str> = (0..1 + index % 4)
                .map(|word| WORDS[(index * 7 + word * 3) % WORDS.len()])
                .collect();
            json!({
                "id": format!("doc-{number}"),
                "title": title.join(" "),
                "genre": GENRES[(index * 11) % GENRES.len()],
                "rank": (number * 37) % CORPUS_DOCUMENTS,
            })
        })
        .collect()
}

/// Loads the corpus into `server` (an instance alone).
fn load_corpus(server: &Server) {
    settings(server, "corpus", &corpus_settings());
    add(server, "corpus", &Value::Array(corpus()));
}

fn corpus_settings() -> Value {
    json!({"filterableAttributes": ["genre"], "sortableAttributes": ["rank"]})
}

/// The searches compared between the network and one instance holding everything.
fn compared_searches() -> Vec<Value> {
    vec![
        json!({"sort": ["rank:asc"], "limit": 25, "offset": 10}),
        json!({"q": "alpha", "sort": ["rank:desc"], "limit": 1000, "facets": ["genre"]}),
        json!({"filter": "genre = drama", "sort": ["rank:asc"], "limit": 7, "facets": ["genre"]}),
        json!({"q": "beta gamma", "limit": 1000, "facets": ["genre"]}),
        json!({"q": "omega", "filter": "genre IN [horror, western]", "limit": 1000}),
    ]
}

/// Hits as `(id, ranking score)` pairs sorted by score then id, to compare lists whose
/// equal-score hits may come in another order.
fn scored(answer: &Value) -> Vec<(String, String)> {
    let mut hits: Vec<(String, String)> = answer["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|hit| {
            let id = hit["id"].as_str().unwrap().to_owned();
            let score = format!("{:.6}", hit["_rankingScore"].as_f64().unwrap());
            (id, score)
        })
        .collect();
    hits.sort_by(|left, right| right.1.cmp(&left.1).then(left.0.cmp(&right.0)));
    hits
}

/// `networked` (a network search) answers what `reference` (one instance) answers.
#[track_caller]
fn assert_same_answer(networked: &Value, reference: &Value, query: &Value) {
    let hit_ids = ids(&networked["hits"]);
    let distinct: BTreeSet<&String> = hit_ids.iter().collect();
    assert_eq!(distinct.len(), hit_ids.len(), "a hit came twice: {query}");
    assert_eq!(
        networked["estimatedTotalHits"], reference["estimatedTotalHits"],
        "{query}"
    );
    assert_eq!(
        networked["facetDistribution"], reference["facetDistribution"],
        "{query}"
    );
    if query.get("q").is_none() || query.get("sort").is_some() {
        assert_eq!(hit_ids, ids(&reference["hits"]), "{query}");
    } else {
        assert_eq!(scored(networked), scored(reference), "{query}");
    }
    assert_eq!(networked["remoteErrors"], json!({}), "{query}");
}

#[test]
fn a_network_search_from_any_instance_answers_as_one_instance_holding_everything() {
    let mut instances = start_network();
    let reference = Server::start_with(Options {
        master_key: Some(MASTER_KEY.to_owned()),
        ..Options::default()
    });
    load_corpus(&reference);
    let settings = corpus_settings();
    write_ok(
        &instances,
        "PATCH",
        "/indexes/corpus/settings",
        Some(&settings),
    );
    let documents = Value::Array(corpus());
    write_ok(
        &instances,
        "POST",
        "/indexes/corpus/documents",
        Some(&documents),
    );
    let held: usize = instances
        .iter()
        .map(|instance| stored(instance.server(), "corpus").len())
        .sum();
    let replicated = stored(instances[1].server(), "corpus").len();
    assert_eq!(
        held,
        CORPUS_DOCUMENTS as usize + replicated,
        "ms1 is on two instances"
    );
    for query in compared_searches() {
        let mut scored_query = query.clone();
        scored_query["showRankingScore"] = json!(true);
        let expected = search(&reference, "corpus", &scored_query);
        for instance in &instances {
            let answer = search(instance.server(), "corpus", &scored_query);
            assert_same_answer(&answer, &expected, &query);
            shard_hits_come_from_their_owners(&answer, instance.name);
        }
    }
    a_federated_multi_search_asks_each_shard_once(instances[1].server(), &reference);
    // `useNetwork: false` searches the instance alone.
    let alone = search(
        instances[0].server(),
        "corpus",
        &json!({"useNetwork": false, "limit": 1000}),
    );
    assert_eq!(
        id_set(&alone["hits"]),
        stored(instances[0].server(), "corpus")
    );
    assert!(alone.get("remoteErrors").is_none(), "{alone}");
    // A killed replica: its shard is asked of the other owner.
    instances[1].kill();
    for query in compared_searches() {
        let mut scored_query = query.clone();
        scored_query["showRankingScore"] = json!(true);
        let expected = search(&reference, "corpus", &scored_query);
        // The owner asked first is random: ask often enough to have met the dead one.
        for _ in 0..4 {
            let answer = search(instances[0].server(), "corpus", &scored_query);
            assert_same_answer(&answer, &expected, &query);
        }
    }
    // Every owner of `ms1` and `ms2` gone: both shards are reported, `ms0` still answers.
    instances[2].kill();
    let answer = search(
        instances[0].server(),
        "corpus",
        &json!({"limit": 1000, "facets": ["genre"]}),
    );
    let errors: BTreeSet<&String> = answer["remoteErrors"].as_object().unwrap().keys().collect();
    assert_eq!(
        errors,
        BTreeSet::from([&"ms1".to_owned(), &"ms2".to_owned()])
    );
    assert_eq!(
        answer["remoteErrors"]["ms2"]["code"], "remote_could_not_send_request",
        "{answer}"
    );
    assert_eq!(
        id_set(&answer["hits"]),
        stored(instances[0].server(), "corpus")
    );
}

/// Each hit of a network search asked from `asker` names an instance that owns the hit's
/// shard, `asker` itself for the shards it owns.
fn shard_hits_come_from_their_owners(answer: &Value, asker: &str) {
    for hit in answer["hits"].as_array().unwrap() {
        let remote = hit["_federation"]["remote"].as_str().unwrap();
        assert!(NAMES.contains(&remote), "{hit}");
        let position = hit["_federation"]["queriesPosition"].as_u64().unwrap() as usize;
        // A single-index network search numbers the shards' copies in shard name order.
        let (shard, owners) = SHARDS[position];
        assert!(owners.contains(&remote), "{hit} from shard {shard}");
        if owners.contains(&asker) {
            assert_eq!(remote, asker, "{hit}");
        }
    }
}

/// A federated multi-search whose query is networked (the default with a leader): every
/// copy keeps the query's position, and the merge equals one instance's.
fn a_federated_multi_search_asks_each_shard_once(server: &Server, reference: &Server) {
    let body = json!({
        "federation": {"limit": 1000},
        "queries": [{"indexUid": "corpus", "q": "kappa", "showRankingScore": true}],
    });
    let response = server.send("POST", "/multi-search", Some(&body));
    assert_eq!(response.status, 200, "{}", response.text());
    let answer = response.json();
    let expected = search(
        reference,
        "corpus",
        &json!({"q": "kappa", "limit": 1000, "showRankingScore": true}),
    );
    assert_eq!(scored(&answer), scored(&expected));
    assert_eq!(answer["estimatedTotalHits"], expected["estimatedTotalHits"]);
    for hit in answer["hits"].as_array().unwrap() {
        assert_eq!(hit["_federation"]["queriesPosition"], 0, "{hit}");
    }
    assert_eq!(answer["remoteErrors"], json!({}));
}
