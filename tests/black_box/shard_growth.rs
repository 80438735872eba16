//! Shards that follow the index, black-box: a new index starts with one shard and grows to
//! more as its documents come (`--documents-per-shard`, up to `--shards-per-index`); every
//! document, its internal order, its facets and its embeddings (given or generated, with
//! their flags) survive the growth and a crash after it; a crash in the middle of a growth
//! loses nothing and leaves no second copy; only the storage the catalog names stays on
//! disk.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

use common::rest_embedder::{Embedder, embedding_of};
use common::{MASTER_KEY, Options, Server};
use serde_json::{Value, json};

/// The most shards of an index in these tests.
const SHARDS_MAX: u32 = 4;
/// Documents per shard before an index grows, in these tests.
const DOCUMENTS_PER_SHARD: usize = 50;
/// Documents of the crash test.
const CRASH_DOCUMENTS: usize = 3_000;
/// Documents of the crash test's first batch: one shard holds them.
const CRASH_FIRST_DOCUMENTS: usize = 900;
/// Documents per shard in the crash test: its second batch grows the index to four shards,
/// copying the first batch's documents before it applies its own.
const CRASH_DOCUMENTS_PER_SHARD: usize = 1_000;
/// How long each crash test round lets the copy run, once seen started, before the kill.
const CRASH_DELAYS: [Duration; 3] = [
    Duration::ZERO,
    Duration::from_millis(30),
    Duration::from_millis(150),
];
/// What a batch's progress says while it copies an index into more shards.
const GROWING_STEP: &str = "copying documents to more shards";
/// How long the files of a storage the catalog no longer names may take to go.
const REMOVAL_WAIT: Duration = Duration::from_secs(10);
/// How long a test waits for a batch to reach the copy.
const GROWING_WAIT: Duration = Duration::from_secs(60);

fn options(documents_per_shard: usize) -> Options {
    Options {
        master_key: Some(MASTER_KEY.to_string()),
        extra_arguments: vec![
            "--shards-per-index".to_string(),
            SHARDS_MAX.to_string(),
            "--documents-per-shard".to_string(),
            documents_per_shard.to_string(),
            "--experimental-allowed-ip-networks".to_string(),
            "any".to_string(),
        ],
        ..Options::default()
    }
}

/// Waits until the batch being processed copies documents into more shards; panics if it
/// ends first or after [`GROWING_WAIT`].
fn wait_for_the_copy(server: &Server, task_uid: &Value) {
    let started = std::time::Instant::now();
    while started.elapsed() < GROWING_WAIT {
        let task = server
            .send("GET", &format!("/tasks/{task_uid}"), None)
            .json();
        assert!(
            matches!(task["status"].as_str(), Some("enqueued" | "processing")),
            "the task ended before its copy was seen: {task}"
        );
        if let Some(batch_uid) = task["batchUid"].as_u64() {
            let batch = server
                .send("GET", &format!("/batches/{batch_uid}"), None)
                .json();
            if batch["progress"]["steps"][0]["currentStep"] == GROWING_STEP {
                return;
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    panic!("no copy after {GROWING_WAIT:?}");
}

/// The storages on disk, each with its shard files.
fn storages(data_directory: &Path) -> Vec<(String, BTreeSet<String>)> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(data_directory.join("indexes")) else {
        return found;
    };
    for entry in entries.flatten() {
        let files = std::fs::read_dir(entry.path())
            .expect("a storage folder lists")
            .flatten()
            .map(|file| file.file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with("shard-") && name.ends_with(".store"))
            .collect();
        found.push((entry.file_name().to_string_lossy().into_owned(), files));
    }
    found.sort();
    found
}

/// The one storage on disk, once the storages the catalog no longer names are removed
/// (after the batch's tasks are recorded); panics if several stay past [`REMOVAL_WAIT`].
fn the_only_storage(data_directory: &Path) -> (String, BTreeSet<String>) {
    let started = std::time::Instant::now();
    loop {
        let mut storages = storages(data_directory);
        if storages.len() == 1 {
            return storages.remove(0);
        }
        assert!(
            started.elapsed() < REMOVAL_WAIT,
            "one storage on disk: {storages:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The shard files of the one storage on disk.
fn shard_files_of_the_only_storage(data_directory: &Path) -> usize {
    the_only_storage(data_directory).1.len()
}

fn book(id: usize, embedder: bool) -> Value {
    let subject = ["apples", "evenings", "oboes"][id % 3];
    let genre = ["novel", "poetry", "essay", "drama"][id % 4];
    let mut book = json!({
        "id": id,
        "title": format!("book {id} of {subject}"),
        "genre": genre,
        "year": 1900 + (id * 7) % 120,
    });
    if !embedder {
        return book;
    }
    book["_vectors"] = json!({"manual": [id as f32, 1.0, (id % 5) as f32]});
    book
}

fn add(server: &Server, documents: &[Value]) -> Value {
    let response = server.send(
        "POST",
        "/indexes/books/documents",
        Some(&Value::Array(documents.to_vec())),
    );
    assert_eq!(response.status, 202, "{}", response.text());
    let task = server.wait_task(&response.json()["taskUid"]);
    assert_eq!(task["status"], "succeeded", "{task}");
    task
}

fn set_up(server: &Server, rest: &Embedder) {
    let settings = json!({
        "filterableAttributes": ["genre", "year"],
        "sortableAttributes": ["year", "id"],
        "embedders": {
            "manual": {"source": "userProvided", "dimensions": 3},
            "rest": rest.settings(),
        },
    });
    let response = server.send("PATCH", "/indexes/books/settings", Some(&settings));
    assert_eq!(response.status, 202, "{}", response.text());
    let task = server.wait_task(&response.json()["taskUid"]);
    assert_eq!(task["status"], "succeeded", "{task}");
}

/// Every document by id, with its vectors: what the index holds, keyed by id.
fn every_document(server: &Server) -> Vec<Value> {
    let response = server.send(
        "POST",
        "/indexes/books/documents/fetch",
        Some(&json!({"limit": 10_000, "retrieveVectors": true})),
    );
    assert_eq!(response.status, 200, "{}", response.text());
    let body = response.json();
    body["results"]
        .as_array()
        .expect("a fetch answers its results")
        .clone()
}

/// What the index answers, to be compared before and after a growth or a crash.
fn answers(server: &Server) -> Vec<Value> {
    let searches = [
        json!({"q": "apples", "limit": 1000, "attributesToRetrieve": ["id"]}),
        json!({"filter": "genre = poetry AND year > 1950", "limit": 1000, "sort": ["year:asc", "id:asc"], "attributesToRetrieve": ["id"]}),
        json!({"facets": ["genre"], "limit": 0}),
        json!({"vector": [3.0, 1.0, 3.0], "hybrid": {"embedder": "manual", "semanticRatio": 1.0}, "limit": 5, "attributesToRetrieve": ["id"]}),
    ];
    searches
        .iter()
        .map(|search| {
            let response = server.send("POST", "/indexes/books/search", Some(search));
            assert_eq!(response.status, 200, "{search}: {}", response.text());
            let mut body = response.json();
            let fields = body.as_object_mut().expect("a search answers an object");
            fields.remove("processingTimeMs");
            fields.remove("requestUid");
            body
        })
        .collect()
}

/// The index lists `count` documents, each once, the first ones as `before` lists them, and
/// every document with its given and generated embeddings and their flags.
fn assert_every_document_once_with_its_vectors(server: &Server, before: &[Value], count: usize) {
    let documents = every_document(server);
    assert_eq!(documents.len(), count);
    let ids: BTreeSet<u64> = documents
        .iter()
        .map(|document| {
            document["id"]
                .as_u64()
                .expect("test documents have numeric ids")
        })
        .collect();
    assert_eq!(ids.len(), count, "no document twice");
    assert_eq!(
        documents[..before.len()],
        before[..],
        "the documents stored before are listed as they were, vectors and flags included"
    );
    for document in &documents {
        let id = document["id"]
            .as_u64()
            .expect("test documents have numeric ids") as usize;
        assert_eq!(
            document["_vectors"]["manual"],
            json!({"embeddings": [[id as f32, 1.0, (id % 5) as f32]], "regenerate": false}),
        );
        let title = document["title"]
            .as_str()
            .expect("test documents have a title");
        assert_eq!(
            document["_vectors"]["rest"],
            json!({"embeddings": [embedding_of(title)], "regenerate": true}),
        );
    }
}

#[test]
fn an_index_grows_as_its_documents_come_and_keeps_every_document_and_embedding() {
    let rest = Embedder::start();
    let options = options(DOCUMENTS_PER_SHARD);
    let server = Server::start_with(options.clone());
    set_up(&server, &rest);
    let first: Vec<Value> = (0..40).map(|id| book(id, true)).collect();
    add(&server, &first);
    assert_eq!(shard_files_of_the_only_storage(&server.data_directory), 1);
    let before_growth = every_document(&server);
    let embedded = rest.texts.load(Ordering::SeqCst);
    assert!(embedded >= 40, "the rest embedder embedded every document");

    // The 40 documents stored and the 90 the batch writes want three shards: before it
    // applies them, the index grows to four (the next power of two), copying the 40.
    let second: Vec<Value> = (40..130).map(|id| book(id, true)).collect();
    add(&server, &second);
    let (storage, shard_files) = the_only_storage(&server.data_directory);
    assert!(storage.ends_with(".shards-4"), "{storage}");
    assert_eq!(shard_files.len(), SHARDS_MAX as usize, "{shard_files:?}");
    let embedded_by_the_growing_batch = rest.texts.load(Ordering::SeqCst) - embedded;
    assert_every_document_once_with_its_vectors(&server, &before_growth, 130);
    let stats = server.send("GET", "/indexes/books/stats", None).json();
    assert_eq!(stats["numberOfDocuments"], 130);
    let answered = answers(&server);
    assert_eq!(answered[2]["facetDistribution"]["genre"]["novel"], 33);

    // The same number of new documents on the grown index (no growth: it has its most
    // shards) embeds as many texts (each document, plus what each shard's share of a batch
    // costs, seen: one text per shard): the growth embedded nothing of the 40 it copied.
    let embedded = rest.texts.load(Ordering::SeqCst);
    let third: Vec<Value> = (130..220).map(|id| book(id, true)).collect();
    add(&server, &third);
    let embedded_by_a_batch = rest.texts.load(Ordering::SeqCst) - embedded;
    assert_eq!(embedded_by_the_growing_batch, embedded_by_a_batch);
    // A copied document whose title changes is embedded again, as one never copied is: its
    // `regenerate` flag came along.
    let retitled = |id: usize| {
        let embedded = rest.texts.load(Ordering::SeqCst);
        let mut document = book(id, true);
        document["title"] = json!(format!("a new title {id}"));
        add(&server, &[document]);
        rest.texts.load(Ordering::SeqCst) - embedded
    };
    let copied = retitled(7);
    let never_copied = retitled(207);
    assert!(copied > 0);
    assert_eq!(copied, never_copied);
    let answered = answers(&server);

    let server = server.crash_and_restart(&options);
    assert_eq!(
        answers(&server),
        answered,
        "the grown index comes back after a crash"
    );
    assert_eq!(every_document(&server).len(), 220);
    assert_eq!(
        shard_files_of_the_only_storage(&server.data_directory),
        SHARDS_MAX as usize
    );

    // Deleting and adding on the grown index reaches the right shards.
    let response = server.send(
        "POST",
        "/indexes/books/documents/delete-batch",
        Some(&json!([0, 1, 2, 3, 4])),
    );
    assert_eq!(
        server.wait_task(&response.json()["taskUid"])["status"],
        "succeeded"
    );
    add(&server, &[book(500, true)]);
    let ids: BTreeSet<u64> = every_document(&server)
        .iter()
        .map(|document| {
            document["id"]
                .as_u64()
                .expect("test documents have numeric ids")
        })
        .collect();
    assert_eq!(ids.len(), 216);
    assert!(ids.contains(&500) && !ids.contains(&0));
}

#[test]
fn an_index_without_growth_gets_its_shards_at_once_and_a_tiny_one_keeps_one() {
    let server = Server::start_with(Options {
        extra_arguments: vec!["--shards-per-index".to_string(), "16".to_string()],
        ..Options::default()
    });
    let response = server.send(
        "POST",
        "/indexes/tiny/documents",
        Some(&json!([{"id": 1}, {"id": 2}, {"id": 3}, {"id": 4}, {"id": 5}])),
    );
    assert_eq!(
        server.wait_task(&response.json()["taskUid"])["status"],
        "succeeded"
    );
    assert_eq!(
        shard_files_of_the_only_storage(&server.data_directory),
        1,
        "five documents cost one page store, not sixteen"
    );
    drop(server);

    let server = Server::start_with(Options {
        extra_arguments: vec![
            "--shards-per-index".to_string(),
            "16".to_string(),
            "--documents-per-shard".to_string(),
            "0".to_string(),
        ],
        ..Options::default()
    });
    let response = server.send(
        "POST",
        "/indexes/fixed/documents",
        Some(&json!([{"id": 1}])),
    );
    assert_eq!(
        server.wait_task(&response.json()["taskUid"])["status"],
        "succeeded"
    );
    assert_eq!(shard_files_of_the_only_storage(&server.data_directory), 16);
}

#[test]
fn a_crash_in_the_middle_of_a_growth_loses_nothing_and_keeps_one_copy() {
    let options = options(CRASH_DOCUMENTS_PER_SHARD);
    let documents: Vec<Value> = (0..CRASH_DOCUMENTS).map(|id| book(id, false)).collect();
    for delay in CRASH_DELAYS {
        let server = Server::start_with(options.clone());
        let settings = json!({"filterableAttributes": ["genre"]});
        let response = server.send("PATCH", "/indexes/books/settings", Some(&settings));
        server.wait_task(&response.json()["taskUid"]);
        add(&server, &documents[..CRASH_FIRST_DOCUMENTS]);
        assert_eq!(shard_files_of_the_only_storage(&server.data_directory), 1);
        let response = server.send(
            "POST",
            "/indexes/books/documents",
            Some(&Value::Array(documents[CRASH_FIRST_DOCUMENTS..].to_vec())),
        );
        assert_eq!(response.status, 202);
        let task_uid = response.json()["taskUid"].clone();
        wait_for_the_copy(&server, &task_uid);
        std::thread::sleep(delay);
        let server = server.crash_and_restart(&options);
        let task = server.wait_task(&task_uid);
        assert_eq!(task["status"], "succeeded", "{delay:?}: {task}");
        let listed = every_document(&server);
        let ids: BTreeSet<u64> = listed
            .iter()
            .map(|document| {
                document["id"]
                    .as_u64()
                    .expect("test documents have numeric ids")
            })
            .collect();
        assert_eq!(
            listed.len(),
            CRASH_DOCUMENTS,
            "{delay:?}: every document once"
        );
        assert_eq!(ids.len(), CRASH_DOCUMENTS, "{delay:?}");
        let search = server
            .send(
                "POST",
                "/indexes/books/search",
                Some(&json!({"filter": "genre = drama", "limit": 0})),
            )
            .json();
        assert_eq!(
            search["estimatedTotalHits"],
            CRASH_DOCUMENTS / 4,
            "{delay:?}"
        );
        let (_, shard_files) = the_only_storage(&server.data_directory);
        assert_eq!(shard_files.len(), SHARDS_MAX as usize, "{delay:?}");
    }
}

#[test]
fn a_large_first_batch_lands_on_the_shards_it_needs() {
    let server = Server::start_with(options(DOCUMENTS_PER_SHARD));
    let documents: Vec<Value> = (0..130).map(|id| book(id, false)).collect();
    add(&server, &documents);
    let (storage, shard_files) = the_only_storage(&server.data_directory);
    assert!(storage.ends_with(".shards-4"), "{storage}");
    assert_eq!(shard_files.len(), SHARDS_MAX as usize);
    let stats = server.send("GET", "/indexes/books/stats", None).json();
    assert_eq!(stats["numberOfDocuments"], 130);
    let search = server
        .send(
            "POST",
            "/indexes/books/search",
            Some(&json!({"q": "oboes", "limit": 0})),
        )
        .json();
    assert_eq!(search["estimatedTotalHits"], 43);
}
