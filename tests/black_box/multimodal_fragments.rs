//! Multimodal embedders (issue 38): a `rest` embedder with `indexingFragments` and
//! `searchFragments`, served by a small HTTP server the test starts that embeds texts and
//! "images" (an image is its URL; a URL naming an animal maps to that animal's direction,
//! close to, but not on, the direction of a text naming it). Documents are embedded through
//! every indexing fragment that applies to them, each fragment's vector is kept under that
//! fragment, `media` and `q` are embedded through the search fragment that applies to them,
//! the fragment filters select by fragment, updates and settings changes embed only what
//! renders differently, and the vectors survive a crash, a restart and a dump.

#![allow(clippy::unwrap_used, clippy::too_many_lines)]

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use common::{MASTER_KEY, Options, Server};
use serde_json::{Value, json};

/// The direction of an animal named in a text or an image URL (`None`: no animal).
fn animal(text: &str) -> Option<[f32; 3]> {
    [
        ("cat", [1.0, 0.0, 0.0]),
        ("dog", [0.0, 1.0, 0.0]),
        ("bird", [0.0, 0.0, 1.0]),
    ]
    .into_iter()
    .find(|(name, _)| text.contains(name))
    .map(|(_, direction)| direction)
}

/// A text's embedding: its animal's direction tilted towards the next axis.
fn text_embedding(text: &str) -> Vec<f32> {
    match animal(text) {
        Some([x, y, z]) => vec![x + 0.3 * z, y + 0.3 * x, z + 0.3 * y],
        None => vec![0.5, 0.5, 0.5],
    }
}

/// An image's embedding: its animal's direction tilted towards the previous axis.
fn image_embedding(url: &str) -> Vec<f32> {
    match animal(url) {
        Some([x, y, z]) => vec![x + 0.1 * y, y + 0.1 * z, z + 0.1 * x],
        None => vec![0.2, 0.2, 0.9],
    }
}

/// The embedding of one rendered fragment: `{"text": …}` or `{"image": …}`.
fn fragment_embedding(fragment: &Value) -> Vec<f32> {
    if let Some(url) = fragment["image"].as_str() {
        image_embedding(url)
    } else {
        text_embedding(fragment["text"].as_str().unwrap_or_default())
    }
}

/// A REST embedder on a loopback port: `{"input": fragment}` → `{"embedding": [...]}`;
/// records every fragment it embedded.
struct Embedder {
    address: SocketAddr,
    received: Arc<Mutex<Vec<Value>>>,
}

impl Embedder {
    fn start() -> Embedder {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let received = Arc::new(Mutex::new(Vec::new()));
        let log = received.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let log = log.clone();
                std::thread::spawn(move || serve(stream, &log));
            }
        });
        Embedder { address, received }
    }

    /// The fragments embedded since the last call.
    fn take(&self) -> Vec<Value> {
        std::mem::take(&mut *self.received.lock().unwrap())
    }

    fn url(&self) -> String {
        format!("http://{}/embed", self.address)
    }

    /// A multimodal embedder: a text and an image fragment on each side.
    fn settings(&self) -> Value {
        json!({
            "source": "rest",
            "url": self.url(),
            "dimensions": 3,
            "request": {"input": "{{fragment}}"},
            "response": {"embedding": "{{embedding}}"},
            "indexingFragments": {
                "text": {"value": {"text": "{{doc.title}}"}},
                "image": {"value": {"image": "{{doc.picture}}"}}
            },
            "searchFragments": {
                "text": {"value": {"text": "{{q}}"}},
                "image": {"value": {"image": "{{media.picture}}"}}
            }
        })
    }
}

/// Answers the requests of one keep-alive connection.
fn serve(stream: TcpStream, received: &Mutex<Vec<Value>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    loop {
        let mut length = 0usize;
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if line == "\r\n" {
                break;
            }
            let lower = line.to_ascii_lowercase();
            if let Some(value) = lower.strip_prefix("content-length:") {
                length = value.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        let request: Value = serde_json::from_slice(&body).unwrap();
        let fragment = request["input"].clone();
        let answer = json!({"embedding": fragment_embedding(&fragment)}).to_string();
        received.lock().unwrap().push(fragment);
        let response = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{answer}",
            answer.len()
        );
        if writer.write_all(response.as_bytes()).is_err() {
            return;
        }
    }
}

fn options() -> Options {
    Options {
        master_key: Some(MASTER_KEY.to_string()),
        extra_arguments: vec![
            "--experimental-allowed-ip-networks".to_string(),
            "any".to_string(),
            "--shards-per-index".to_string(),
            "2".to_string(),
            "--documents-per-shard".to_string(),
            "0".to_string(),
        ],
        ..Options::default()
    }
}

fn task(server: &Server, method: &str, path: &str, body: &Value) -> Value {
    let response = server.send(method, path, Some(body));
    assert_eq!(response.status, 202, "{}", response.text());
    server.wait_task(&response.json()["taskUid"])
}

fn succeed(server: &Server, method: &str, path: &str, body: &Value) {
    let done = task(server, method, path, body);
    assert_eq!(done["status"], "succeeded", "{method} {path}: {done}");
}

/// A server with the `multimodal` feature on.
fn multimodal_server() -> Server {
    let server = Server::start_with(options());
    let response = server.send(
        "PATCH",
        "/experimental-features",
        Some(&json!({"multimodal": true})),
    );
    assert_eq!(response.status, 200, "{}", response.text());
    server
}

/// Four documents: two with a picture and a title, one with a title only, one whose
/// picture and title name different animals.
fn documents() -> Value {
    json!([
        {"id": 1, "title": "a cat on a mat", "picture": "http://img/cat.png"},
        {"id": 2, "title": "a dog in the park"},
        {"id": 3, "title": "bird watching", "picture": "http://img/bird.png"},
        {"id": 4, "title": "a quiet evening", "picture": "http://img/dog.png"},
    ])
}

/// An index `m` with the multimodal embedder and [`documents`].
fn indexed(server: &Server, embedder: &Embedder) {
    let settings =
        json!({"embedders": {"multi": embedder.settings()}, "filterableAttributes": ["id"]});
    succeed(server, "PATCH", "/indexes/m/settings", &settings);
    succeed(server, "POST", "/indexes/m/documents", &documents());
}

/// Document `id`'s `_vectors.multi`.
fn vectors(server: &Server, id: u64) -> Value {
    let response = server.send(
        "GET",
        &format!("/indexes/m/documents/{id}?retrieveVectors=true"),
        None,
    );
    assert_eq!(response.status, 200, "{}", response.text());
    response.json()["_vectors"]["multi"].clone()
}

fn search(server: &Server, body: &Value) -> Value {
    let response = server.send("POST", "/indexes/m/search", Some(body));
    assert_eq!(response.status, 200, "{body}: {}", response.text());
    response.json()
}

fn ids(hits: &Value) -> Vec<u64> {
    hits.as_array()
        .unwrap()
        .iter()
        .map(|hit| hit["id"].as_u64().unwrap())
        .collect()
}

/// The ids a filter selects, sorted.
fn filtered(server: &Server, filter: &str) -> Vec<u64> {
    let mut selected = ids(&search(server, &json!({"filter": filter, "limit": 100}))["hits"]);
    selected.sort_unstable();
    selected
}

fn rounded(values: &[f32]) -> Value {
    json!(
        values
            .iter()
            .map(|value| (value * 1000.0).round() / 1000.0)
            .collect::<Vec<f32>>()
    )
}

/// The embeddings of a `_vectors` entry, rounded to three decimals.
fn embeddings(entry: &Value) -> Value {
    Value::Array(
        entry["embeddings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|embedding| {
                let values: Vec<f32> = embedding
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|value| value.as_f64().unwrap() as f32)
                    .collect();
                rounded(&values)
            })
            .collect(),
    )
}

#[test]
fn documents_are_embedded_through_every_fragment_that_applies_and_searched_by_media_or_q() {
    let embedder = Embedder::start();
    let server = multimodal_server();
    indexed(&server, &embedder);
    let received = embedder.take();
    let images = received
        .iter()
        .filter(|fragment| fragment["image"].is_string())
        .count();
    let texts = received
        .iter()
        .filter(|fragment| fragment["text"].is_string())
        .count();
    // Document 2 has no picture: its image fragment does not apply and is not sent.
    assert_eq!((images, texts), (3, 4), "{received:?}");
    // One vector per fragment, in fragment order (`image` then `text`).
    let first = vectors(&server, 1);
    assert_eq!(first["regenerate"], true, "{first}");
    assert_eq!(
        embeddings(&first),
        json!([
            rounded(&image_embedding("cat")),
            rounded(&text_embedding("cat"))
        ])
    );
    assert_eq!(
        embeddings(&vectors(&server, 2)),
        json!([rounded(&text_embedding("dog"))])
    );
    let stats = server.send("GET", "/indexes/m/stats", None).json();
    assert_eq!(stats["numberOfEmbeddings"], 7, "{stats}");
    assert_eq!(stats["numberOfEmbeddedDocuments"], 4, "{stats}");

    // `media` goes through the image search fragment: the dog picture is closest to the
    // dog image of document 4, then to the dog text of document 2.
    let by_media = search(
        &server,
        &json!({"media": {"picture": "http://img/dog.png"}, "hybrid": {"embedder": "multi", "semanticRatio": 1.0},
                "limit": 2, "showRankingScore": true}),
    );
    assert_eq!(ids(&by_media["hits"]), vec![4, 2], "{by_media}");
    let best = by_media["hits"][0]["_rankingScore"].as_f64().unwrap();
    assert!(best > 0.999, "{by_media}");
    // Without `q`, a `media` search is semantic whatever the ratio.
    let default_ratio = search(
        &server,
        &json!({"media": {"picture": "http://img/bird.png"}, "hybrid": {"embedder": "multi"}, "limit": 1}),
    );
    assert_eq!(ids(&default_ratio["hits"]), vec![3], "{default_ratio}");
    assert_eq!(default_ratio["semanticHitCount"], 1, "{default_ratio}");
    // `q` goes through the text search fragment: "cat" is closest to document 1's text.
    embedder.take();
    let by_q = search(
        &server,
        &json!({"q": "cat", "hybrid": {"embedder": "multi", "semanticRatio": 1.0}, "limit": 1}),
    );
    assert_eq!(ids(&by_q["hits"]), vec![1], "{by_q}");
    assert_eq!(embedder.take(), vec![json!({"text": "cat"})]);

    // The fragment filters select by fragment.
    for (filter, expected) in [
        ("_vectors.multi.fragments.image EXISTS", vec![1, 3, 4]),
        ("_vectors.multi.fragments.text EXISTS", vec![1, 2, 3, 4]),
        ("NOT _vectors.multi.fragments.image EXISTS", vec![2]),
        ("_vectors.multi.documentTemplate EXISTS", vec![]),
        ("_vectors.multi.regenerate EXISTS", vec![1, 2, 3, 4]),
        ("_vectors.multi.userProvided EXISTS", vec![]),
    ] {
        assert_eq!(filtered(&server, filter), expected, "{filter}");
    }
    let unknown = server.send(
        "POST",
        "/indexes/m/search",
        Some(&json!({"filter": "_vectors.multi.fragments.imgae EXISTS"})),
    );
    assert_eq!(unknown.status, 400, "{}", unknown.text());
    let message = unknown.json()["message"].as_str().unwrap().to_owned();
    assert!(
        message.starts_with("Index `m`: The fragment `imgae` does not exist on embedder `multi`. Available fragments on this embedder are: `image`, `text`. Did you mean `image`?"),
        "{message}"
    );
}

#[test]
fn updates_embed_only_the_fragments_that_render_differently() {
    let embedder = Embedder::start();
    let server = multimodal_server();
    indexed(&server, &embedder);
    embedder.take();
    // A new title: only the text fragment is embedded again; the image vector stays.
    succeed(
        &server,
        "PUT",
        "/indexes/m/documents",
        &json!([{"id": 1, "title": "a dog now"}]),
    );
    assert_eq!(embedder.take(), vec![json!({"text": "a dog now"})]);
    assert_eq!(
        embeddings(&vectors(&server, 1)),
        json!([
            rounded(&image_embedding("cat")),
            rounded(&text_embedding("dog"))
        ])
    );
    // The same document again embeds nothing.
    succeed(
        &server,
        "POST",
        "/indexes/m/documents",
        &json!([{"id": 1, "title": "a dog now", "picture": "http://img/cat.png"}]),
    );
    assert_eq!(embedder.take(), Vec::<Value>::new());
    // Without its picture, the image fragment no longer applies: its vector goes, nothing
    // is embedded.
    succeed(
        &server,
        "POST",
        "/indexes/m/documents",
        &json!([{"id": 1, "title": "a dog now"}]),
    );
    assert_eq!(embedder.take(), Vec::<Value>::new());
    assert_eq!(
        embeddings(&vectors(&server, 1)),
        json!([rounded(&text_embedding("dog"))])
    );
    assert_eq!(
        filtered(&server, "_vectors.multi.fragments.image EXISTS"),
        vec![3, 4]
    );
    // Embeddings a user gives belong to no fragment, and are never embedded again.
    succeed(
        &server,
        "POST",
        "/indexes/m/documents",
        &json!([{"id": 5, "title": "a cat", "picture": "http://img/cat.png",
                 "_vectors": {"multi": [[0.5, 0.5, 0.5]]}}]),
    );
    assert_eq!(embedder.take(), Vec::<Value>::new());
    assert_eq!(vectors(&server, 5)["regenerate"], false);
    assert_eq!(
        filtered(&server, "_vectors.multi.fragments.text EXISTS"),
        vec![1, 2, 3, 4]
    );
    assert_eq!(
        filtered(&server, "_vectors.multi.userProvided EXISTS"),
        vec![5]
    );
    succeed(
        &server,
        "PUT",
        "/indexes/m/documents",
        &json!([{"id": 5, "title": "a bird"}]),
    );
    assert_eq!(embedder.take(), Vec::<Value>::new());
    // Asking to regenerate embeds every fragment that applies.
    succeed(
        &server,
        "PUT",
        "/indexes/m/documents",
        &json!([{"id": 5, "_vectors": {"multi": {"regenerate": true}}}]),
    );
    let mut received = embedder.take();
    received.sort_by_key(Value::to_string);
    assert_eq!(
        received,
        vec![
            json!({"image": "http://img/cat.png"}),
            json!({"text": "a bird"})
        ]
    );
    assert_eq!(vectors(&server, 5)["regenerate"], true);
    assert_eq!(
        filtered(&server, "_vectors.multi.fragments.image EXISTS"),
        vec![3, 4, 5]
    );
    // A deleted document's vectors go with it.
    succeed(&server, "DELETE", "/indexes/m/documents/5", &json!(null));
    let stats = server.send("GET", "/indexes/m/stats", None).json();
    assert_eq!(stats["numberOfEmbeddings"], 6, "{stats}");
}

#[test]
fn settings_changes_drop_removed_fragments_and_embed_only_new_renders() {
    let embedder = Embedder::start();
    let server = multimodal_server();
    indexed(&server, &embedder);
    embedder.take();
    // Removing the image fragment drops its vectors and embeds nothing.
    let removal = json!({"embedders": {"multi": {"indexingFragments": {"image": null}}}});
    succeed(&server, "PATCH", "/indexes/m/settings", &removal);
    assert_eq!(embedder.take(), Vec::<Value>::new());
    assert_eq!(
        embeddings(&vectors(&server, 1)),
        json!([rounded(&text_embedding("cat"))])
    );
    let stats = server.send("GET", "/indexes/m/stats", None).json();
    assert_eq!(stats["numberOfEmbeddings"], 4, "{stats}");
    let gone = server.send(
        "POST",
        "/indexes/m/search",
        Some(&json!({"filter": "_vectors.multi.fragments.image EXISTS"})),
    );
    assert_eq!(gone.status, 400, "{}", gone.text());
    assert!(
        gone.json()["message"]
            .as_str()
            .unwrap()
            .starts_with("Index `m`: The fragment `image` does not exist on embedder `multi`. Available fragments on this embedder are: `text`."),
        "{}",
        gone.text()
    );
    // A new fragment embeds its renders only.
    let added = json!({"embedders": {"multi": {"indexingFragments": {"caption": {"value": {"text": "{{doc.title}} with {{doc.picture}}"}}}}}});
    succeed(&server, "PATCH", "/indexes/m/settings", &added);
    let mut received = embedder.take();
    received.sort_by_key(Value::to_string);
    assert_eq!(
        received,
        vec![
            json!({"text": "a cat on a mat with http://img/cat.png"}),
            json!({"text": "a quiet evening with http://img/dog.png"}),
            json!({"text": "bird watching with http://img/bird.png"}),
        ]
    );
    assert_eq!(
        filtered(&server, "_vectors.multi.fragments.caption EXISTS"),
        vec![1, 3, 4]
    );
    // A changed fragment embeds the documents whose render changed: "{{doc.title}}" and
    // "{{ doc.title }}" render alike, so nothing is embedded.
    let same_render = json!({"embedders": {"multi": {"indexingFragments": {"text": {"value": {"text": "{{ doc.title }}"}}}}}});
    succeed(&server, "PATCH", "/indexes/m/settings", &same_render);
    assert_eq!(embedder.take(), Vec::<Value>::new());
    let new_render = json!({"embedders": {"multi": {"indexingFragments": {"text": {"value": {"text": "{{ doc.title | upcase }}"}}}}}});
    succeed(&server, "PATCH", "/indexes/m/settings", &new_render);
    assert_eq!(embedder.take().len(), 4);
    // Search fragments shape queries only: changing them embeds no document.
    let search_side = json!({"embedders": {"multi": {"searchFragments": {"text": {"value": {"text": "{{ q }}!"}}}}}});
    succeed(&server, "PATCH", "/indexes/m/settings", &search_side);
    assert_eq!(embedder.take(), Vec::<Value>::new());
    // A new `request` embeds every fragment of every document again.
    let request = json!({"embedders": {"multi": {"request": {"input": "{{fragment}}", "v": 2}}}});
    succeed(&server, "PATCH", "/indexes/m/settings", &request);
    assert_eq!(embedder.take().len(), 7);
}

#[test]
fn fragment_vectors_survive_a_crash_a_restart_and_a_dump() {
    let embedder = Embedder::start();
    let server = multimodal_server();
    indexed(&server, &embedder);
    let before = vectors(&server, 1);
    let data_directory = server.data_directory.clone();
    let scratch = server.kill_keeping_data();
    let mut restarted = Server::start_on(&data_directory, &options());
    restarted.keep_scratch(scratch);
    assert_eq!(vectors(&restarted, 1), before);
    assert_eq!(
        filtered(&restarted, "_vectors.multi.fragments.image EXISTS"),
        vec![1, 3, 4]
    );
    let by_media = search(
        &restarted,
        &json!({"media": {"picture": "http://img/cat.png"}, "hybrid": {"embedder": "multi"}, "limit": 1}),
    );
    assert_eq!(ids(&by_media["hits"]), vec![1], "{by_media}");
    // An update after the restart still embeds only what changed.
    embedder.take();
    succeed(
        &restarted,
        "PUT",
        "/indexes/m/documents",
        &json!([{"id": 3, "title": "a cat"}]),
    );
    assert_eq!(embedder.take(), vec![json!({"text": "a cat"})]);

    // A dump writes each fragment embedder's vectors with `regenerate: false`, as
    // Meilisearch does: imported, they are the user's and embed nothing.
    let dump = restarted.send("POST", "/dumps", None);
    assert_eq!(dump.status, 202, "{}", dump.text());
    let done = restarted.wait_task(&dump.json()["taskUid"]);
    assert_eq!(done["status"], "succeeded", "{done}");
    let uid = done["details"]["dumpUid"].as_str().unwrap();
    let path = data_directory
        .with_extension("dumps")
        .join(format!("{uid}.dump"));
    embedder.take();
    let imported_scratch = tempfile::tempdir().unwrap();
    let mut import = options();
    import.extra_arguments.push("--import-dump".to_string());
    import
        .extra_arguments
        .push(path.to_string_lossy().into_owned());
    let imported = Server::start_on(&imported_scratch.path().join("imported.ms"), &import);
    assert_eq!(embedder.take(), Vec::<Value>::new());
    let first = vectors(&imported, 1);
    assert_eq!(first["regenerate"], false, "{first}");
    assert_eq!(embeddings(&first), embeddings(&before));
    assert_eq!(
        filtered(&imported, "_vectors.multi.userProvided EXISTS"),
        vec![1, 2, 3, 4]
    );
}

/// An export carries each fragment embedder's vectors as a dump does: `regenerate: false`,
/// so the target embeds nothing.
#[test]
fn an_export_carries_fragment_vectors_as_the_user_s() {
    let embedder = Embedder::start();
    let source = multimodal_server();
    let target = multimodal_server();
    indexed(&source, &embedder);
    embedder.take();
    let response = source.send(
        "POST",
        "/export",
        Some(&json!({"url": target.url(), "apiKey": MASTER_KEY})),
    );
    assert_eq!(response.status, 200, "{}", response.text());
    let done = source.wait_task(&response.json()["taskUid"]);
    assert_eq!(done["status"], "succeeded", "{done}");
    let started = std::time::Instant::now();
    loop {
        let pending = target
            .send("GET", "/tasks?statuses=enqueued,processing&limit=1", None)
            .json();
        if pending["results"].as_array().unwrap().is_empty() {
            break;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "{pending}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let failures = target.send("GET", "/tasks?statuses=failed", None).json();
    assert_eq!(failures["results"], json!([]), "{failures}");
    assert_eq!(embedder.take(), Vec::<Value>::new());
    let exported = vectors(&target, 1);
    assert_eq!(exported["regenerate"], false, "{exported}");
    assert_eq!(embeddings(&exported), embeddings(&vectors(&source, 1)));
    assert_eq!(vectors(&source, 1)["regenerate"], true);
}

/// A search's error: its status, code and message.
fn search_error(server: &Server, body: &Value) -> (u16, String, String) {
    let response = server.send("POST", "/indexes/m/search", Some(body));
    let json = response.json();
    (
        response.status,
        json["code"].as_str().unwrap_or_default().to_owned(),
        json["message"].as_str().unwrap_or_default().to_owned(),
    )
}

#[test]
fn media_and_fragment_errors_are_meilisearch_s() {
    let embedder = Embedder::start();
    let server = multimodal_server();
    indexed(&server, &embedder);
    let other = json!({"embedders": {
        "plain": {"source": "rest", "url": embedder.url(), "dimensions": 3,
                  "request": {"input": {"text": "{{text}}"}}, "response": {"embedding": "{{embedding}}"},
                  "documentTemplate": "{{doc.title}}"},
        "manual": {"source": "userProvided", "dimensions": 3}
    }});
    succeed(&server, "PATCH", "/indexes/m/settings", &other);
    let semantic = |embedder: &str| json!({"embedder": embedder, "semanticRatio": 1.0});
    let cases = [
        (
            json!({"media": {"picture": "x"}, "vector": [1, 0, 0], "hybrid": semantic("multi")}),
            400,
            "invalid_search_media_and_vector",
            "Invalid request: both `media` and `vector` parameters are present.".to_owned(),
        ),
        (
            json!({"media": {"picture": "x"}}),
            400,
            "missing_search_hybrid",
            "Invalid request: missing `hybrid` parameter when `vector` or `media` are present."
                .to_owned(),
        ),
        (
            json!({"media": {"sound": "x.wav"}, "hybrid": semantic("multi")}),
            400,
            "vector_embedding_error",
            "Error while generating embeddings: user error: Query matches no search fragment.\n  - Note: {\"q\":null,\"media\":{\"sound\":\"x.wav\"}}".to_owned(),
        ),
        (
            json!({"q": "cat", "media": {"picture": "x"}, "hybrid": semantic("multi")}),
            400,
            "vector_embedding_error",
            "Error while generating embeddings: user error: Query matches multiple search fragments.\n  - Note: First matched fragment `image`.\n  - Note: Second matched fragment `text`.\n  - Note: {\"q\":\"cat\",\"media\":{\"picture\":\"x\"}}".to_owned(),
        ),
        (
            json!({"media": {"picture": "x"}, "hybrid": semantic("plain")}),
            400,
            "vector_embedding_error",
            "Error while generating embeddings: user error: `media` requested, and the configuration has source `rest`, but the configuration doesn't have `searchFragments`.".to_owned(),
        ),
        (
            json!({"media": {"picture": "x"}, "hybrid": semantic("manual")}),
            400,
            "vector_embedding_error",
            "Error while generating embeddings: user error: `media` requested but the configuration doesn't have source `rest`".to_owned(),
        ),
    ];
    for (body, status, code, message) in cases {
        let (got_status, got_code, got_message) = search_error(&server, &body);
        assert_eq!(
            (got_status, got_code.as_str(), got_message.as_str()),
            (status, code, message.as_str()),
            "{body}"
        );
    }
    // In a hybrid search with a query text, a query that cannot be embedded (both search
    // fragments apply) leaves the keyword hits.
    let hybrid = search(
        &server,
        &json!({"q": "bird", "media": {"picture": "x"}, "hybrid": {"embedder": "multi", "semanticRatio": 0.5}}),
    );
    assert_eq!(ids(&hybrid["hits"]), vec![3], "{hybrid}");
    assert_eq!(hybrid["semanticHitCount"], 0, "{hybrid}");
    // Without the feature, `media` is refused.
    let response = server.send(
        "PATCH",
        "/experimental-features",
        Some(&json!({"multimodal": false})),
    );
    assert_eq!(response.status, 200);
    let (status, code, _) = search_error(
        &server,
        &json!({"media": {"picture": "x"}, "hybrid": semantic("multi")}),
    );
    assert_eq!((status, code.as_str()), (400, "feature_not_enabled"));
}

#[test]
fn fragment_settings_that_cannot_work_fail_their_task() {
    let embedder = Embedder::start();
    let server = multimodal_server();
    let mut settings = embedder.settings();
    settings.as_object_mut().unwrap().remove("dimensions");
    let failed = task(
        &server,
        "PATCH",
        "/indexes/f/settings",
        &json!({"embedders": {"multi": settings}}),
    );
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(failed["error"]["code"], "vector_embedding_error");
    assert_eq!(
        failed["error"]["message"],
        "Index `f`: Error while generating embeddings: user error: cannot infer `dimensions` for an embedder using `indexingFragments`.\n  - Note: Specify `dimensions` explicitly or don't use `indexingFragments`."
    );
    // A fragment that does not parse is refused with the `request` it goes into…
    let mut settings = embedder.settings();
    settings["indexingFragments"]["text"]["value"]["text"] = json!("{% if %}");
    let refused = server.send(
        "PATCH",
        "/indexes/f/settings",
        Some(&json!({"embedders": {"multi": settings}})),
    );
    assert_eq!(refused.status, 400, "{}", refused.text());
    assert_eq!(refused.json()["code"], "vector_embedding_error");
    let message = refused.json()["message"].as_str().unwrap().to_owned();
    assert!(
        message.starts_with("Error while generating embeddings: user error: in `.indexingFragments.text.text`, error while parsing template: liquid: "),
        "{message}"
    );
    // …and fails its task without it.
    succeed(
        &server,
        "PATCH",
        "/indexes/f/settings",
        &json!({"embedders": {"multi": embedder.settings()}}),
    );
    let broken =
        json!({"embedders": {"multi": {"searchFragments": {"text": {"value": {"text": "{{ q"}}}}}});
    let failed = task(&server, "PATCH", "/indexes/f/settings", &broken);
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(failed["error"]["code"], "vector_embedding_error");
    let message = failed["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("Index `f`: Error while generating embeddings: user error: in `.searchFragments.text.text`, error while parsing template: liquid: "),
        "{message}"
    );
    let stored = server
        .send("GET", "/indexes/f/settings/embedders", None)
        .json();
    assert_eq!(
        stored["multi"]["searchFragments"]["text"],
        json!({"value": {"text": "{{q}}"}})
    );
}
