//! Dumps against the server binary (issue 41, items 1 and 2): `POST /dumps` writes a `.dump`
//! in Meilisearch's format V6 into `--dump-dir`, `--import-dump` brings it back at start.
//!
//! - a round trip: indexes with settings, an embedder and `_vectors`, keys, features,
//!   webhooks, network and tasks dumped, imported into a new server, and compared there —
//!   documents, settings, keys (same uids and key strings), tasks, batches and searches;
//! - a dump laid out exactly as Meilisearch 1.41 writes one (built here from its layout)
//!   and a real one written by Meilisearch (`tests/fixtures/meilisearch/`, MIT) import;
//! - corrupt, truncated, foreign and future-version dumps stop the start with a message and
//!   leave no data directory; the start-up decisions of `--ignore-missing-dump` and
//!   `--ignore-dump-if-db-exists` are Meilisearch's;
//! - a kill -9 during a dump leaves the earlier dump intact and no partial dump, and the
//!   restarted server finishes the interrupted dump;
//! - a key restricted to some indexes cannot create a dump.

#![allow(clippy::unwrap_used, clippy::too_many_lines)]

use crate::common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{MASTER_KEY, Options, Server, json_request};
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

/// How long a start that must fail may take.
const FAILING_START_TIMEOUT: Duration = Duration::from_secs(60);

fn options(extra: &[&str]) -> Options {
    Options {
        master_key: Some(MASTER_KEY.to_string()),
        extra_arguments: extra.iter().map(|argument| argument.to_string()).collect(),
        ..Options::default()
    }
}

/// Sends a write and waits for its task to succeed.
fn succeed(server: &Server, method: &str, path: &str, body: Option<&Value>) -> Value {
    let response = server.send(method, path, body);
    assert_eq!(response.status, 202, "{method} {path}: {}", response.text());
    let task = server.wait_task(&response.json()["taskUid"]);
    assert_eq!(task["status"], "succeeded", "{method} {path}: {task}");
    task
}

/// The dump directory the test harness gives a server.
fn dump_directory(server: &Server) -> PathBuf {
    server.data_directory.with_extension("dumps")
}

/// Creates a dump and answers its file.
fn create_dump(server: &Server) -> PathBuf {
    let task = succeed(server, "POST", "/dumps", None);
    assert_eq!(task["type"], "dumpCreation");
    assert_eq!(task["indexUid"], Value::Null);
    let uid = task["details"]["dumpUid"].as_str().unwrap().to_owned();
    assert_eq!(uid.len(), "20240516-155134151".len(), "{uid}");
    let path = dump_directory(server).join(format!("{uid}.dump"));
    assert!(path.is_file(), "{path:?}");
    path
}

/// The key string Meilisearch and coresearch derive for `uid` under the master key.
fn key_string(uid: &str) -> String {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(MASTER_KEY.as_bytes()).unwrap();
    mac.update(uid.as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

fn get(server: &Server, path: &str) -> Value {
    let response = server.send("GET", path, None);
    assert_eq!(response.status, 200, "GET {path}: {}", response.text());
    response.json()
}

/// A search's answer, without its processing time and request uid.
fn post(server: &Server, path: &str, body: &Value) -> Value {
    let response = server.send("POST", path, Some(body));
    assert_eq!(response.status, 200, "POST {path}: {}", response.text());
    let mut answer = response.json();
    let object = answer.as_object_mut().unwrap();
    object.remove("processingTimeMs");
    object.remove("requestUid");
    answer
}

/// Fills a server with what a dump must carry; answers the searches to compare.
fn populate(server: &Server) -> Vec<(String, Value)> {
    let movies: Vec<Value> = (0..300)
        .map(|n| {
            let word = ["carol", "drama", "comedy"][n % 3];
            let genre = ["drama", "comedy", "horror"][n % 3];
            json!({"id": n, "title": format!("movie {n} {word}"), "year": 1950 + n % 70,
                   "genre": genre})
        })
        .collect();
    succeed(
        server,
        "POST",
        "/indexes/movies/documents",
        Some(&json!(movies)),
    );
    succeed(
        server,
        "PATCH",
        "/indexes/movies/settings",
        Some(&json!({
            "filterableAttributes": ["genre", "year"],
            "sortableAttributes": ["year"],
            "synonyms": {"film": ["movie"]},
            "stopWords": ["the"],
            "rankingRules": ["words", "sort", "typo", "proximity", "attribute", "exactness"],
            "typoTolerance": {"minWordSizeForTypos": {"oneTypo": 4, "twoTypos": 8}},
        })),
    );
    succeed(
        server,
        "POST",
        "/indexes",
        Some(&json!({"uid": "books", "primaryKey": "isbn"})),
    );
    let books = json!([{"isbn": "a-1", "name": "Dune"}, {"isbn": "b-2", "name": "Emma"}]);
    succeed(server, "PUT", "/indexes/books/documents", Some(&books));
    succeed(
        server,
        "PATCH",
        "/indexes/vectors/settings",
        Some(&json!({"embedders": {"e": {"source": "userProvided", "dimensions": 3}}})),
    );
    let vectors = json!([
        {"id": 1, "text": "north", "_vectors": {"e": [1.0, 0.0, 0.0]}},
        {"id": 2, "text": "east", "_vectors": {"e": [0.0, 1.0, 0.0]}},
        {"id": 3, "text": "up", "_vectors": {"e": {"embeddings": [[0.0, 0.0, 1.0]], "regenerate": false}}},
        {"id": 4, "text": "none", "_vectors": {"e": null}},
    ]);
    succeed(server, "POST", "/indexes/vectors/documents", Some(&vectors));
    // A failed task belongs to the history too.
    let response = server.send(
        "POST",
        "/indexes/books/documents",
        Some(&json!([{"name": "no id"}])),
    );
    let failed = server.wait_task(&response.json()["taskUid"]);
    assert_eq!(failed["status"], "failed");
    vec![
        (
            "/indexes/movies/search".to_owned(),
            json!({"q": "carol", "limit": 50}),
        ),
        (
            "/indexes/movies/search".to_owned(),
            json!({"q": "film", "filter": "genre = drama AND year > 1990", "sort": ["year:desc"],
                   "facets": ["genre"]}),
        ),
        ("/indexes/books/search".to_owned(), json!({"q": "dun"})),
        (
            "/indexes/vectors/search".to_owned(),
            json!({"vector": [0.9, 0.1, 0.0], "hybrid": {"embedder": "e", "semanticRatio": 1.0},
                   "retrieveVectors": true, "showRankingScore": true}),
        ),
    ]
}

/// The control state a dump must carry.
fn set_control_state(server: &Server) {
    let body = json!({"actions": ["search", "documents.get"], "indexes": ["movies"],
                      "expiresAt": "2090-01-01T00:00:00Z", "name": "reader"});
    assert_eq!(server.send("POST", "/keys", Some(&body)).status, 201);
    let features = json!({"editDocumentsByFunction": true, "network": true, "renderRoute": true,
                          "disableDocumentsFetchQueue": true});
    assert_eq!(
        server
            .send("PATCH", "/experimental-features", Some(&features))
            .status,
        200
    );
    // A loopback address nothing listens on: deliveries fail without leaving the machine.
    let webhook = json!({"url": "http://127.0.0.1:9/hook", "headers": {"authorization": "TOKEN"}});
    assert_eq!(server.send("POST", "/webhooks", Some(&webhook)).status, 201);
    let network = json!({"self": "ms-0", "remotes": {
        "ms-0": {"url": "http://127.0.0.1:1", "searchApiKey": "s"},
        "ms-1": {"url": "http://127.0.0.1:2", "writeApiKey": "w"}}});
    let response = server.send("PATCH", "/network", Some(&network));
    assert_eq!(response.status, 200, "{}", response.text());
}

/// Every document of `index`, with vectors, by id.
fn documents(server: &Server, index: &str) -> Vec<Value> {
    let page = get(
        server,
        &format!("/indexes/{index}/documents?limit=1000&retrieveVectors=true"),
    );
    let mut all = page["results"].as_array().unwrap().clone();
    all.sort_by_key(|document| document.to_string());
    all
}

/// The keys by uid, with their key strings.
fn keys(server: &Server) -> Vec<Value> {
    let mut keys = get(server, "/keys?limit=100")["results"]
        .as_array()
        .unwrap()
        .clone();
    keys.sort_by_key(|key| key["uid"].as_str().unwrap().to_owned());
    keys
}

/// The network without what an import drops (`self`, `leader`) and its version.
fn network_remotes(server: &Server) -> Value {
    get(server, "/network")["remotes"].clone()
}

#[test]
fn a_dump_brings_back_every_document_setting_key_task_and_search() {
    let source = Server::start_with(options(&[]));
    let searches = populate(&source);
    set_control_state(&source);
    let dump = create_dump(&source);
    let dump_task_uid = get(&source, "/tasks?types=dumpCreation")["results"][0]["uid"]
        .as_u64()
        .unwrap();

    let scratch = tempfile::tempdir().unwrap();
    let imported_directory = scratch.path().join("imported.ms");
    let dump_argument = dump.to_string_lossy().into_owned();
    let imported = Server::start_on(
        &imported_directory,
        &options(&["--import-dump", &dump_argument]),
    );

    assert_eq!(get(&imported, "/indexes"), get(&source, "/indexes"));
    for index in ["movies", "books", "vectors"] {
        assert_eq!(
            documents(&imported, index),
            documents(&source, index),
            "{index}"
        );
        let settings = format!("/indexes/{index}/settings");
        assert_eq!(
            get(&imported, &settings),
            get(&source, &settings),
            "{index}"
        );
        let stats = format!("/indexes/{index}/stats");
        assert_eq!(
            get(&imported, &stats)["numberOfDocuments"],
            get(&source, &stats)["numberOfDocuments"]
        );
    }
    assert_eq!(keys(&imported), keys(&source));
    for key in keys(&imported) {
        assert_eq!(key["key"], key_string(key["uid"].as_str().unwrap()));
    }
    assert_eq!(
        get(&imported, "/experimental-features"),
        get(&source, "/experimental-features")
    );
    assert_eq!(get(&imported, "/webhooks"), get(&source, "/webhooks"));
    assert_eq!(network_remotes(&imported), network_remotes(&source));
    assert_eq!(
        get(&imported, "/network")["self"],
        Value::Null,
        "an import drops `self`"
    );
    for (path, query) in &searches {
        assert_eq!(
            post(&imported, path, query),
            post(&source, path, query),
            "{path} {query}"
        );
    }
    // The history before the dump is the same, task by task and batch by batch.
    let before_dump = format!("/tasks?limit=1000&from={}", dump_task_uid - 1);
    assert_eq!(get(&imported, &before_dump), get(&source, &before_dump));
    let batches = "/batches?limit=1000&types=documentAdditionOrUpdate,settingsUpdate,indexCreation";
    assert_eq!(get(&imported, batches), get(&source, batches));
    let dump_task = get(&imported, &format!("/tasks/{dump_task_uid}"));
    assert_eq!(dump_task["status"], "succeeded", "{dump_task}");
    // New tasks continue after the imported ones, and the imported indexes take writes.
    let task = succeed(
        &imported,
        "POST",
        "/indexes/movies/documents",
        Some(&json!([{"id": 1000, "title": "new carol"}])),
    );
    assert_eq!(task["uid"].as_u64().unwrap(), dump_task_uid + 1);
    let created = succeed(
        &imported,
        "POST",
        "/indexes",
        Some(&json!({"uid": "fresh"})),
    );
    assert_eq!(created["status"], "succeeded");
    let hits = post(
        &imported,
        "/indexes/movies/search",
        &json!({"q": "new carol"}),
    );
    assert_eq!(hits["hits"][0]["id"], 1000, "{hits}");
    // A dump of the imported server imports again (coresearch reads its own dumps).
    let again = create_dump(&imported);
    drop(imported);
    let twice = Server::start_on(
        &scratch.path().join("twice.ms"),
        &options(&["--import-dump", &again.to_string_lossy()]),
    );
    assert_eq!(documents(&twice, "movies").len(), 301);
    assert_eq!(keys(&twice).len(), keys(&source).len());
}

/// The files of a dump: (path inside the dump, content).
type DumpFiles = Vec<(String, String)>;

/// The files of a dump written by Meilisearch 1.41, as its dump writer lays them out.
fn meilisearch_dump_files() -> DumpFiles {
    let lines =
        |values: &[Value]| -> String { values.iter().map(|value| format!("{value}\n")).collect() };
    let key = |uid: &str, name: &str, actions: Value| {
        json!({"description": null, "name": name, "uid": uid, "actions": actions,
               "indexes": ["*"], "expires_at": null,
               "created_at": "2025-11-20T10:00:00.123456Z", "updated_at": "2025-11-20T10:00:00.123456Z"})
    };
    let keys = [
        key(
            "d04fd40f-9746-4d8a-b5e4-593ebd1034eb",
            "Default Search API Key",
            json!(["search"]),
        ),
        key(
            "78bb43c1-f78d-4292-b7fc-b108c4e8c9ac",
            "Default Admin API Key",
            json!(["*"]),
        ),
    ];
    let settings = json!({
        "displayedAttributes": ["*"], "searchableAttributes": ["title", "genre"],
        "filterableAttributes": ["genre"], "sortableAttributes": ["year"], "foreignKeys": [],
        "rankingRules": ["words", "typo", "proximity", "attribute", "sort", "exactness"],
        "stopWords": [], "nonSeparatorTokens": [], "separatorTokens": [], "dictionary": [],
        "synonyms": {}, "distinctAttribute": null, "proximityPrecision": "byWord",
        "typoTolerance": {"enabled": true, "minWordSizeForTypos": {"oneTypo": 5, "twoTypos": 9},
                          "disableOnWords": [], "disableOnAttributes": [], "disableOnNumbers": false},
        "faceting": {"maxValuesPerFacet": 100, "sortFacetValuesBy": {"*": "alpha"}},
        "pagination": {"maxTotalHits": 1000},
        "embedders": {"default": {"source": "userProvided", "dimensions": 2}},
        "searchCutoffMs": null, "localizedAttributes": null, "facetSearch": true,
        "prefixSearch": "indexingTime",
        "chat": {"description": "", "documentTemplate": "{% for field in fields %}{{ field.name }}\n{% endfor %}",
                 "documentTemplateMaxBytes": 400, "searchParameters": {}}
    });
    let documents = [
        json!({"id": 1, "title": "Carol", "genre": "drama", "year": 2015,
               "_vectors": {"default": {"embeddings": [[1.0, 0.0]], "regenerate": false}}}),
        json!({"id": 2, "title": "Jaws", "genre": "horror", "year": 1975,
               "_vectors": {"default": {"embeddings": [[0.0, 1.0]], "regenerate": false}}}),
    ];
    let import = |count: u64| {
        json!({"documentImport": {"primary_key": null, "method": "ReplaceDocuments",
                                  "documents_count": count, "allow_index_creation": true}})
    };
    let tasks = [
        json!({"uid": 0, "batchUid": 0, "indexUid": "movies", "status": "succeeded",
               "type": import(2),
               "details": {"DocumentAdditionOrUpdate": {"received_documents": 2, "indexed_documents": 2}},
               "enqueuedAt": "2025-11-20T10:01:00.000001Z", "startedAt": "2025-11-20T10:01:00.1Z",
               "finishedAt": "2025-11-20T10:01:00.2Z"}),
        json!({"uid": 1, "batchUid": 1, "indexUid": "movies", "status": "succeeded",
               "type": {"settings": {"settings": {"filterableAttributes": ["genre"]},
                                     "is_deletion": false, "allow_index_creation": true}},
               "details": {"SettingsUpdate": {"settings": {"filterableAttributes": ["genre"]}}},
               "enqueuedAt": "2025-11-20T10:02:00Z", "startedAt": "2025-11-20T10:02:00.1Z",
               "finishedAt": "2025-11-20T10:02:00.2Z"}),
        json!({"uid": 2, "batchUid": 2, "indexUid": null, "status": "succeeded",
               "type": {"taskCancelation": {"query": "?uids=0", "tasks": [58, 48, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 16, 0, 0, 0, 0, 0]}},
               "details": {"TaskCancelation": {"matched_tasks": 1, "canceled_tasks": 0, "original_filter": "?uids=0"}},
               "enqueuedAt": "2025-11-20T10:03:00Z", "startedAt": "2025-11-20T10:03:00.1Z",
               "finishedAt": "2025-11-20T10:03:00.2Z"}),
        json!({"uid": 3, "batchUid": 3, "indexUid": null, "status": "succeeded",
               "type": {"dumpCreation": {"keys": keys, "instance_uid": "cb887dcc-34b3-48d1-addd-9815ae721a81"}},
               "details": {"Dump": {"dump_uid": null}},
               "enqueuedAt": "2025-11-20T10:04:00Z", "startedAt": "2025-11-20T10:04:00.1Z",
               "finishedAt": "2025-11-20T10:04:00.2Z"}),
        json!({"uid": 4, "batchUid": null, "indexUid": "movies", "status": "enqueued",
               "type": import(1), "details": {"DocumentAdditionOrUpdate": {"received_documents": 1, "indexed_documents": null}},
               "enqueuedAt": "2025-11-20T10:04:00.5Z", "customMetadata": "late"}),
    ];
    let batch = |uid: u32, kind: &str, index: Option<&str>, details: Value| {
        let index_uids = index.map_or(json!({}), |index| json!({ index: 1 }));
        json!({"uid": uid, "details": details,
               "stats": {"totalNbTasks": 1, "status": {"succeeded": 1}, "types": {kind: 1}, "indexUids": index_uids},
               "startedAt": format!("2025-11-20T10:0{}:00.1Z", uid + 1),
               "finishedAt": format!("2025-11-20T10:0{}:00.2Z", uid + 1),
               "enqueuedAt": {"earliest": format!("2025-11-20T10:0{}:00Z", uid + 1),
                              "oldest": format!("2025-11-20T10:0{}:00Z", uid + 1)},
               "stopReason": "batched all enqueued tasks"})
    };
    let batches = [
        batch(
            0,
            "documentAdditionOrUpdate",
            Some("movies"),
            json!({"receivedDocuments": 2, "indexedDocuments": 2}),
        ),
        batch(
            1,
            "settingsUpdate",
            Some("movies"),
            json!({"filterableAttributes": ["genre"]}),
        ),
        batch(
            2,
            "taskCancelation",
            None,
            json!({"matchedTasks": 1, "canceledTasks": 0, "originalFilter": "?uids=0"}),
        ),
        batch(3, "dumpCreation", None, json!({"dumpUid": null})),
    ];
    vec![
        ("metadata.json".into(), json!({"dumpVersion": "V6", "dbVersion": "1.41.0", "dumpDate": "2025-11-20T10:04:00.15Z"}).to_string()),
        ("instance_uid.uuid".into(), "cb887dcc-34b3-48d1-addd-9815ae721a81".into()),
        ("keys.jsonl".into(), lines(&keys)),
        ("experimental-features.json".into(), json!({"metrics": false, "logsRoute": false, "editDocumentsByFunction": true,
            "containsFilter": false, "dynamicSearchRules": false, "network": true, "getTaskDocumentsRoute": false,
            "taskQueueCompactionRoute": false, "compositeEmbedders": false, "chatCompletions": false,
            "multimodal": false, "foreignKeys": false}).to_string()),
        ("network.json".into(), json!({"self": "ms-0", "remotes": {"ms-0": {"url": "http://localhost:7700", "searchApiKey": null, "writeApiKey": null}},
            "shards": {}, "leader": "ms-0", "version": "0199a1c2-0000-7000-8000-000000000000"}).to_string()),
        ("webhooks.json".into(), json!({"webhooks": {"627ea538-733d-4545-8d2d-03526eb381ce": {"url": "http://127.0.0.1:9/hook", "headers": {"authorization": "TOKEN"}}}}).to_string()),
        ("tasks/queue.jsonl".into(), lines(&tasks)),
        ("tasks/update_files/4.jsonl".into(), lines(&[json!({"id": 3, "title": "Heat", "genre": "drama", "year": 1995,
            "_vectors": {"default": {"embeddings": [[0.7, 0.7]], "regenerate": false}}})])),
        ("batches/queue.jsonl".into(), lines(&batches)),
        ("indexes/movies/metadata.json".into(), json!({"uid": "movies", "primaryKey": "id",
            "createdAt": "2025-11-20T10:01:00.15Z", "updatedAt": "2025-11-20T10:02:00.15Z"}).to_string()),
        ("indexes/movies/settings.json".into(), settings.to_string()),
        ("indexes/movies/documents.jsonl".into(), lines(&documents)),
    ]
}

/// A `.dump` archive of `files` (path, content), as Meilisearch's writer makes one: a
/// gzip-compressed tar with a `./` entry per directory.
fn archive(path: &Path, files: &[(String, String)]) {
    let encoder = flate2::write::GzEncoder::new(
        std::fs::File::create(path).unwrap(),
        flate2::Compression::default(),
    );
    let mut builder = tar::Builder::new(encoder);
    for directory in ["chat-completions-settings", "dynamic-search-rules"] {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Directory);
        header.set_mode(0o755);
        header.set_size(0);
        builder
            .append_data(&mut header, format!("./{directory}/"), std::io::empty())
            .unwrap();
    }
    for (name, content) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(content.len() as u64);
        header.set_mode(0o644);
        builder
            .append_data(&mut header, format!("./{name}"), content.as_bytes())
            .unwrap();
    }
    builder.into_inner().unwrap().finish().unwrap();
}

#[test]
fn a_dump_laid_out_as_meilisearch_1_41_writes_it_imports_whole() {
    let scratch = tempfile::tempdir().unwrap();
    let dump = scratch.path().join("meilisearch.dump");
    archive(&dump, &meilisearch_dump_files());
    let server = Server::start_on(
        &scratch.path().join("data.ms"),
        &options(&["--import-dump", &dump.to_string_lossy()]),
    );
    let index = get(&server, "/indexes/movies");
    assert_eq!(index["primaryKey"], "id");
    assert_eq!(index["createdAt"], "2025-11-20T10:01:00.15Z");
    // The dump's date, unless the dump's enqueued addition (below) already ran: it runs as
    // soon as the server is up and updates the index then.
    let updated_at = index["updatedAt"].as_str().unwrap().to_owned();
    let settings = get(&server, "/indexes/movies/settings");
    assert_eq!(settings["searchableAttributes"], json!(["title", "genre"]));
    assert_eq!(settings["filterableAttributes"], json!(["genre"]));
    assert_eq!(settings["sortableAttributes"], json!(["year"]));
    assert_eq!(settings["embedders"]["default"]["dimensions"], 2);
    // The enqueued addition of the dump runs once the server is up, with its documents.
    let late = server.wait_task(4);
    assert_eq!(late["status"], "succeeded", "{late}");
    let date = |text: &str| {
        time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).unwrap()
    };
    let ran_at = date(late["startedAt"].as_str().unwrap());
    assert!(
        updated_at == "2025-11-20T10:02:00.15Z" || date(&updated_at) >= ran_at,
        "updatedAt {updated_at} is neither the dump's nor after the addition started ({ran_at})"
    );
    let index = get(&server, "/indexes/movies");
    assert!(
        date(index["updatedAt"].as_str().unwrap()) >= ran_at,
        "{index}"
    );
    assert_eq!(late["customMetadata"], "late");
    assert_eq!(late["details"]["indexedDocuments"], 1);
    let all = documents(&server, "movies");
    assert_eq!(all.len(), 3);
    assert_eq!(
        all[0]["_vectors"]["default"]["embeddings"],
        json!([[1.0, 0.0]])
    );
    let semantic = post(
        &server,
        "/indexes/movies/search",
        &json!({"vector": [0.0, 1.0], "hybrid": {"embedder": "default", "semanticRatio": 1.0}}),
    );
    assert_eq!(semantic["hits"][0]["title"], "Jaws", "{semantic}");
    let filtered = post(
        &server,
        "/indexes/movies/search",
        &json!({"filter": "genre = drama", "sort": ["year:asc"]}),
    );
    let titles: Vec<&str> = filtered["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|hit| hit["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, vec!["Heat", "Carol"]);
    // Keys keep their uids, so their key strings under the same master key.
    let keys = keys(&server);
    assert_eq!(keys.len(), 2);
    for key in &keys {
        assert_eq!(key["key"], key_string(key["uid"].as_str().unwrap()));
    }
    let search_key = key_string("d04fd40f-9746-4d8a-b5e4-593ebd1034eb");
    let response = server.raw(&json_request(
        "POST",
        "/indexes/movies/search",
        Some(&search_key),
        "{}",
    ));
    assert_eq!(response.status, 200, "{}", response.text());
    // History, batches, features, webhooks and network as the dump has them.
    let tasks = get(&server, "/tasks?from=3");
    let uids: Vec<u64> = tasks["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|task| task["uid"].as_u64().unwrap())
        .collect();
    assert_eq!(uids, vec![3, 2, 1, 0]);
    let cancelation = get(&server, "/tasks/2");
    assert_eq!(
        cancelation["details"],
        json!({"matchedTasks": 1, "canceledTasks": 0, "originalFilter": "?uids=0"})
    );
    assert_eq!(
        get(&server, "/tasks/0")["finishedAt"],
        "2025-11-20T10:01:00.2Z"
    );
    assert_eq!(
        get(&server, "/batches/1")["details"],
        json!({"filterableAttributes": ["genre"]})
    );
    let filtered_batches = get(&server, "/batches?indexUids=movies&types=settingsUpdate");
    assert_eq!(filtered_batches["total"], 1, "{filtered_batches}");
    assert_eq!(
        filtered_batches["results"][0]["uid"], 1,
        "{filtered_batches}"
    );
    let features = get(&server, "/experimental-features");
    assert_eq!(features["editDocumentsByFunction"], true);
    assert_eq!(features["network"], true);
    let webhooks = get(&server, "/webhooks");
    assert_eq!(
        webhooks["results"][0]["uuid"],
        "627ea538-733d-4545-8d2d-03526eb381ce"
    );
    let network = get(&server, "/network");
    assert_eq!(network["self"], Value::Null);
    assert_eq!(network["leader"], Value::Null);
    assert_eq!(network["remotes"]["ms-0"]["url"], "http://localhost:7700");
    // The next task follows the dump's.
    let next = json!([{"id": 9, "_vectors": {"default": null}}]);
    let next = succeed(&server, "POST", "/indexes/movies/documents", Some(&next));
    assert_eq!(next["uid"], 5);
}

#[test]
fn a_dump_written_by_meilisearch_imports() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/meilisearch/v6-with-webhooks.dump");
    let scratch = tempfile::tempdir().unwrap();
    let server = Server::start_on(
        &scratch.path().join("data.ms"),
        &options(&["--import-dump", &fixture.to_string_lossy()]),
    );
    let keys = keys(&server);
    let uids: Vec<&str> = keys
        .iter()
        .map(|key| key["uid"].as_str().unwrap())
        .collect();
    assert_eq!(
        uids,
        vec![
            "422ee132-8a7e-421a-8acc-1a41a20fbf4f",
            "47c1a14b-ff83-41f1-8c6c-1a12fe1a61af",
            "b8398632-7eb7-4f96-ad00-785b7cf2aa5d",
            "fdfef2f9-4811-4d2a-bbcc-aa4f1c674c97",
        ]
    );
    for key in &keys {
        assert_eq!(key["key"], key_string(key["uid"].as_str().unwrap()));
    }
    let webhooks = get(&server, "/webhooks");
    assert_eq!(
        webhooks["results"].as_array().unwrap().len(),
        3,
        "{webhooks}"
    );
    let dump_task = get(&server, "/tasks/0");
    assert_eq!(dump_task["type"], "dumpCreation");
    assert_eq!(dump_task["status"], "succeeded");
    assert_eq!(dump_task["enqueuedAt"], "2025-07-31T09:21:30.470805Z");
    assert_eq!(get(&server, "/indexes")["total"], 0);
    // The fixture's webhooks point to public hosts: removed before any task runs, so no
    // delivery leaves the machine.
    for webhook in webhooks["results"].as_array().unwrap() {
        let path = format!("/webhooks/{}", webhook["uuid"].as_str().unwrap());
        assert_eq!(server.send("DELETE", &path, None).status, 204);
    }
    // Dumping the imported instance carries the instance uid Meilisearch wrote.
    let dump = create_dump(&server);
    let mut contents = String::new();
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(
        std::fs::File::open(dump).unwrap(),
    ));
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        if entry.path().unwrap().ends_with("instance_uid.uuid") {
            entry.read_to_string(&mut contents).unwrap();
        }
    }
    assert_eq!(contents, "cb887dcc-34b3-48d1-addd-9815ae721a81");
}

/// Starts the binary with `arguments`, which must fail; answers its error output.
fn failing_start(arguments: &[&str]) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_coresearch"))
        .args([
            "--http-addr",
            "127.0.0.1:0",
            "--cores",
            "2",
            "--no-analytics",
        ])
        .args(arguments)
        .env("MEILI_LOG_LEVEL", "WARN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > FAILING_START_TIMEOUT {
            child.kill().unwrap();
            panic!("{arguments:?} did not stop");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut errors = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut errors)
        .unwrap();
    assert!(!status.success(), "{arguments:?} started: {errors}");
    errors
}

/// The entries of `directory` (none when it is missing).
fn entries(directory: &Path) -> Vec<String> {
    std::fs::read_dir(directory)
        .map(|entries| {
            entries
                .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn corrupt_truncated_foreign_and_future_dumps_stop_the_start_and_leave_nothing() {
    let scratch = tempfile::tempdir().unwrap();
    let good = scratch.path().join("good.dump");
    archive(&good, &meilisearch_dump_files());
    let bytes = std::fs::read(&good).unwrap();
    let with = |change: &dyn Fn(&mut DumpFiles)| {
        let mut files = meilisearch_dump_files();
        change(&mut files);
        files
    };
    let set = |files: &mut DumpFiles, name: &str, content: &str| {
        files.iter_mut().find(|(file, _)| file == name).unwrap().1 = content.to_owned();
    };
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "truncated",
            bytes[..bytes.len() / 2].to_vec(),
            "is damaged or truncated",
        ),
        (
            "tail-cut",
            bytes[..bytes.len() - 6].to_vec(),
            "is damaged or truncated",
        ),
        (
            "garbage",
            b"this is not a dump at all".to_vec(),
            "is damaged or truncated",
        ),
    ];
    let mut dumps: Vec<(String, PathBuf, String)> = cases
        .into_iter()
        .map(|(name, content, message)| {
            let path = scratch.path().join(format!("{name}.dump"));
            std::fs::write(&path, content).unwrap();
            (name.to_owned(), path, message.to_owned())
        })
        .collect();
    let variants: Vec<(&str, DumpFiles, &str)> = vec![
        (
            "future",
            with(&|files| {
                set(
                    files,
                    "metadata.json",
                    r#"{"dumpVersion":"V7","dbVersion":"2.0.0","dumpDate":"2030-01-01T00:00:00Z"}"#,
                )
            }),
            "format `V7` (written by version 2.0.0), newer than the format V6",
        ),
        (
            "older",
            with(&|files| {
                set(
                    files,
                    "metadata.json",
                    r#"{"dumpVersion":"V5","dbVersion":"0.29.0","dumpDate":"2022-01-01T00:00:00Z"}"#,
                )
            }),
            "format V5 (written by Meilisearch 0.29.0 before 1.0)",
        ),
        (
            "bad-task",
            with(&|files| set(files, "tasks/queue.jsonl", "{\"uid\": 0, \"oops\": true}\n")),
            "tasks/queue.jsonl, line 1",
        ),
        (
            "bad-settings",
            with(&|files| {
                set(
                    files,
                    "indexes/movies/settings.json",
                    r#"{"rankingRules": ["nope"]}"#,
                )
            }),
            "indexes/movies/settings.json",
        ),
        (
            "no-keys",
            with(&|files| files.retain(|(name, _)| name != "keys.jsonl")),
            "keys.jsonl",
        ),
        (
            "bad-document",
            with(&|files| {
                set(
                    files,
                    "indexes/movies/documents.jsonl",
                    "{\"id\": \"no spaces allowed\"}\n",
                )
            }),
            "the index `movies` of the dump could not be imported",
        ),
    ];
    for (name, files, message) in variants {
        let path = scratch.path().join(format!("{name}.dump"));
        archive(&path, &files);
        dumps.push((name.to_owned(), path, message.to_owned()));
    }
    for (name, dump, message) in dumps {
        let database = scratch.path().join(format!("{name}.ms"));
        let errors = failing_start(&[
            "--db-path",
            &database.to_string_lossy(),
            "--import-dump",
            &dump.to_string_lossy(),
        ]);
        assert!(
            errors.contains("could not import the dump"),
            "{name}: {errors}"
        );
        assert!(
            errors.contains(&message),
            "{name}: expected `{message}` in {errors}"
        );
        assert!(!database.exists(), "{name}: a data directory was left");
    }
    let left: Vec<String> = entries(scratch.path())
        .into_iter()
        .filter(|name| name.starts_with('.'))
        .collect();
    assert!(left.is_empty(), "staging folders were left: {left:?}");
}

#[test]
fn missing_dumps_and_existing_databases_are_decided_as_meilisearch_does() {
    let scratch = tempfile::tempdir().unwrap();
    let missing = scratch.path().join("missing.dump");
    let database = scratch.path().join("data.ms");
    let database_text = database.to_string_lossy().into_owned();
    let missing_text = missing.to_string_lossy().into_owned();
    let errors = failing_start(&["--db-path", &database_text, "--import-dump", &missing_text]);
    assert!(
        errors.contains(&format!("dump doesn't exist at {missing:?}")),
        "{errors}"
    );
    // Ignored, the server starts empty.
    let server = Server::start_on(
        &database,
        &options(&["--import-dump", &missing_text, "--ignore-missing-dump"]),
    );
    succeed(
        &server,
        "POST",
        "/indexes/kept/documents",
        Some(&json!([{"id": 1}])),
    );
    drop(server);
    let dump = scratch.path().join("good.dump");
    archive(&dump, &meilisearch_dump_files());
    let dump_text = dump.to_string_lossy().into_owned();
    let errors = failing_start(&["--db-path", &database_text, "--import-dump", &dump_text]);
    let canonical = database.canonicalize().unwrap();
    assert!(
        errors.contains(&format!(
            "database already exists at {canonical:?}, try to delete it or rename it"
        )),
        "{errors}"
    );
    // Ignored, the existing database is opened unchanged.
    let server = Server::start_on(
        &database,
        &options(&["--import-dump", &dump_text, "--ignore-dump-if-db-exists"]),
    );
    let uids: Vec<String> = get(&server, "/indexes")["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|index| index["uid"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(uids, vec!["kept".to_owned()]);
}

/// Documents in the heavy index: enough bytes that writing and compressing a dump of them
/// takes a while, though they are cheap to index (the payload is not searchable).
const HEAVY_DOCUMENTS: usize = 20_000;

/// Fills the index `heavy` with [`HEAVY_DOCUMENTS`] documents of about 2 KB each.
fn index_heavy(server: &Server) {
    succeed(
        server,
        "PATCH",
        "/indexes/heavy/settings",
        Some(&json!({"searchableAttributes": ["title"]})),
    );
    let documents: Vec<Value> = (0..HEAVY_DOCUMENTS)
        .map(|n| {
            let payload: String = (0..200)
                .map(|k| format!("{:09}", n * 7919 + k * 104_729))
                .collect();
            json!({"id": n, "title": format!("heavy {n}"), "payload": payload})
        })
        .collect();
    succeed(
        server,
        "POST",
        "/indexes/heavy/documents",
        Some(&json!(documents)),
    );
}

/// Waits until a dump is being written in `directory` (its staging directory exists).
fn wait_for_a_dump_in_progress(directory: &Path) {
    let started = Instant::now();
    while !entries(directory)
        .iter()
        .any(|name| name.ends_with(".dump.staging"))
    {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the dump never started"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn a_kill_during_a_dump_leaves_earlier_dumps_whole_and_no_partial_dump() {
    let scratch = tempfile::tempdir().unwrap();
    let database = scratch.path().join("data.ms");
    let server = Server::start_on(&database, &options(&[]));
    index_heavy(&server);
    let earlier = create_dump(&server);
    let earlier_bytes = std::fs::read(&earlier).unwrap();
    let directory = dump_directory(&server);
    let response = server.send("POST", "/dumps", None);
    assert_eq!(response.status, 202);
    let interrupted_uid = response.json()["taskUid"].as_u64().unwrap();
    wait_for_a_dump_in_progress(&directory);
    server.kill();
    let names = entries(&directory);
    let finished: Vec<&String> = names
        .iter()
        .filter(|name| name.ends_with(".dump"))
        .collect();
    assert_eq!(
        finished.len(),
        1,
        "only the earlier dump has a dump's name: {names:?}"
    );
    assert_eq!(
        std::fs::read(&earlier).unwrap(),
        earlier_bytes,
        "the earlier dump changed"
    );
    // The instance restarts intact and runs the interrupted dump again.
    let server = Server::start_on(&database, &options(&[]));
    let task = server.wait_task(interrupted_uid);
    assert_eq!(task["status"], "succeeded", "{task}");
    let names = entries(&directory);
    assert_eq!(
        names.iter().filter(|name| name.ends_with(".dump")).count(),
        2,
        "{names:?}"
    );
    assert!(
        !names
            .iter()
            .any(|name| name.ends_with(".tmp") || name.ends_with(".staging")),
        "{names:?}"
    );
    let count = HEAVY_DOCUMENTS as u64;
    assert_eq!(
        get(&server, "/indexes/heavy/stats")["numberOfDocuments"],
        count
    );
    drop(server);
    // The earlier dump still imports whole.
    let restored = Server::start_on(
        &scratch.path().join("restored.ms"),
        &options(&["--import-dump", &earlier.to_string_lossy()]),
    );
    assert_eq!(
        get(&restored, "/indexes/heavy/stats")["numberOfDocuments"],
        count
    );
    let document = get(&restored, "/indexes/heavy/documents/123");
    assert_eq!(document["title"], "heavy 123");
}

#[test]
fn a_canceled_dump_stops_and_leaves_nothing_behind() {
    let server = Server::start_with(options(&[]));
    index_heavy(&server);
    let directory = dump_directory(&server);
    let response = server.send("POST", "/dumps", None);
    let dump_uid = response.json()["taskUid"].as_u64().unwrap();
    wait_for_a_dump_in_progress(&directory);
    let response = server.send("POST", &format!("/tasks/cancel?uids={dump_uid}"), None);
    assert_eq!(response.status, 200, "{}", response.text());
    let cancelation = server.wait_task(&response.json()["taskUid"]);
    assert_eq!(cancelation["details"]["canceledTasks"], 1, "{cancelation}");
    let dump = server.wait_task(dump_uid);
    assert_eq!(dump["status"], "canceled", "{dump}");
    assert_eq!(dump["details"], json!({"dumpUid": null}));
    let names = entries(&directory);
    assert!(
        names.is_empty(),
        "a canceled dump leaves nothing: {names:?}"
    );
    // The next dump runs whole.
    create_dump(&server);
}

#[test]
fn only_a_key_over_every_index_creates_a_dump() {
    let server = Server::start_with(options(&[]));
    let body = json!({"actions": ["*"], "indexes": ["movies"], "expiresAt": null});
    let response = server.send("POST", "/keys", Some(&body));
    assert_eq!(response.status, 201, "{}", response.text());
    let restricted = response.json()["key"].as_str().unwrap().to_owned();
    let response = server.raw(&json_request("POST", "/dumps", Some(&restricted), ""));
    assert_eq!(response.status, 403, "{}", response.text());
    assert_eq!(response.json()["code"], "invalid_api_key");
    let body = json!({"actions": ["dumps.create"], "indexes": ["*"], "expiresAt": null});
    let dumper = server.send("POST", "/keys", Some(&body)).json()["key"]
        .as_str()
        .unwrap()
        .to_owned();
    let response = server.raw(&json_request("POST", "/dumps", Some(&dumper), ""));
    assert_eq!(response.status, 202, "{}", response.text());
    let summary = response.json();
    assert_eq!(summary["type"], "dumpCreation");
    assert_eq!(summary["status"], "enqueued");
    let task = server.wait_task(&summary["taskUid"]);
    assert_eq!(task["status"], "succeeded", "{task}");
    let mut file = std::fs::File::open(dump_directory(&server).join(format!(
        "{}.dump",
        task["details"]["dumpUid"].as_str().unwrap()
    )))
    .unwrap();
    let mut magic = [0u8; 2];
    file.read_exact(&mut magic).unwrap();
    assert_eq!(magic, [0x1f, 0x8b], "a dump is gzip");
}

/// The files of the `.dump` at `path`, by path inside the archive.
fn dump_entries(path: &Path) -> std::collections::BTreeMap<String, String> {
    let file = std::fs::File::open(path).unwrap();
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let mut entries = std::collections::BTreeMap::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        if entry.header().entry_type().is_file() {
            let name = entry.path().unwrap().to_string_lossy().into_owned();
            let mut content = String::new();
            entry.read_to_string(&mut content).unwrap();
            entries.insert(name, content);
        }
    }
    entries
}

#[test]
fn a_document_addition_waiting_when_the_dump_ran_comes_back_with_its_documents() {
    let source = Server::start_with(options(&[]));
    let big: Vec<Value> = (0..40_000)
        .map(|n| json!({"id": n, "text": format!("words {n}")}))
        .collect();
    let response = source.send("POST", "/indexes/big/documents", Some(&json!(big)));
    let big_uid = response.json()["taskUid"].as_u64().unwrap();
    let started = Instant::now();
    while get(&source, &format!("/tasks/{big_uid}"))["status"] != "processing" {
        assert!(started.elapsed() < Duration::from_secs(30));
        std::thread::sleep(Duration::from_millis(5));
    }
    // A CSV addition and a dump wait behind the big batch; the dump goes first (as in
    // Meilisearch, dumps come before index tasks), so the addition is still enqueued in it.
    let csv = "id,title,year:number\n1,Carol,2015\n2,Heat,1995\n";
    let request = format!(
        "POST /indexes/movies/documents HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {MASTER_KEY}\r\nContent-Type: text/csv\r\nContent-Length: {}\r\n\r\n{csv}",
        csv.len()
    );
    let waiting = source.raw(&request);
    assert_eq!(waiting.status, 202, "{}", waiting.text());
    let waiting_uid = waiting.json()["taskUid"].as_u64().unwrap();
    let dump_task = source.send("POST", "/dumps", None).json();
    assert_eq!(
        get(&source, &format!("/tasks/{big_uid}"))["status"],
        "processing",
        "the big batch must still run when the dump is registered"
    );
    let dump_task = source.wait_task(&dump_task["taskUid"]);
    assert_eq!(dump_task["status"], "succeeded", "{dump_task}");
    let dump = dump_directory(&source).join(format!(
        "{}.dump",
        dump_task["details"]["dumpUid"].as_str().unwrap()
    ));
    let entries = dump_entries(&dump);
    let queued: Value = entries["tasks/queue.jsonl"]
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|task| task["uid"] == waiting_uid)
        .unwrap();
    assert_eq!(queued["status"], "enqueued", "{queued}");
    assert_eq!(
        queued["type"]["documentImport"]["documents_count"], 2,
        "{queued}"
    );
    assert_eq!(
        entries[&format!("tasks/update_files/{waiting_uid}.jsonl")],
        "{\"id\":\"1\",\"title\":\"Carol\",\"year\":2015}\n{\"id\":\"2\",\"title\":\"Heat\",\"year\":1995}\n"
    );
    assert_eq!(
        entries["indexes/big/documents.jsonl"].lines().count(),
        40_000
    );
    assert_eq!(source.wait_task(waiting_uid)["status"], "succeeded");

    let scratch = tempfile::tempdir().unwrap();
    let imported = Server::start_on(
        &scratch.path().join("imported.ms"),
        &options(&["--import-dump", &dump.to_string_lossy()]),
    );
    let task = imported.wait_task(waiting_uid);
    assert_eq!(task["status"], "succeeded", "{task}");
    assert_eq!(task["details"]["indexedDocuments"], 2);
    assert_eq!(documents(&imported, "movies"), documents(&source, "movies"));
    assert_eq!(
        get(&imported, "/indexes/big/stats")["numberOfDocuments"],
        40_000
    );
}

#[test]
fn a_dump_that_cannot_be_written_fails_with_dump_process_failed() {
    let scratch = tempfile::tempdir().unwrap();
    let not_a_directory = scratch.path().join("dumps");
    std::fs::write(
        &not_a_directory,
        "a file where the dump directory should be",
    )
    .unwrap();
    let server = Server::start_on(
        &scratch.path().join("data.ms"),
        &options(&["--dump-dir", &not_a_directory.to_string_lossy()]),
    );
    let response = server.send("POST", "/dumps", None);
    assert_eq!(response.status, 202, "{}", response.text());
    let task = server.wait_task(&response.json()["taskUid"]);
    assert_eq!(task["status"], "failed", "{task}");
    assert_eq!(task["details"], json!({"dumpUid": null}));
    let error = &task["error"];
    assert_eq!(error["code"], "dump_process_failed", "{task}");
    assert_eq!(error["type"], "internal");
    assert_eq!(
        error["link"],
        "https://docs.meilisearch.com/errors#dump_process_failed"
    );
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .starts_with("Dump process failed: "),
        "{task}"
    );
    // The server goes on: the next task runs.
    succeed(
        &server,
        "POST",
        "/indexes/after/documents",
        Some(&json!([{"id": 1}])),
    );
}

/// A dump whose history holds fewer batches than the import ran (Meilisearch leaves the
/// batch of the dump being written out): the batches after the import still reach the
/// shards — a batch uid given twice would be skipped by the shards as already applied.
#[test]
fn writes_after_importing_a_dump_with_a_short_batch_history_are_applied() {
    let scratch = tempfile::tempdir().unwrap();
    let dump = scratch.path().join("short-history.dump");
    let mut files = meilisearch_dump_files();
    files
        .iter_mut()
        .find(|(file, _)| file == "batches/queue.jsonl")
        .unwrap()
        .1 = String::new();
    archive(&dump, &files);
    let server = Server::start_on(
        &scratch.path().join("data.ms"),
        &options(&["--import-dump", &dump.to_string_lossy()]),
    );
    server.wait_task(4);
    let before = documents(&server, "movies").len();
    let added = json!([{"id": 77, "title": "After", "_vectors": {"default": null}}]);
    let task = succeed(&server, "POST", "/indexes/movies/documents", Some(&added));
    assert_eq!(task["details"]["indexedDocuments"], 1, "{task}");
    assert_eq!(documents(&server, "movies").len(), before + 1);
    assert_eq!(
        server
            .send("GET", "/indexes/movies/documents/77", None)
            .status,
        200
    );
}
