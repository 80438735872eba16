//! `GET /stats` and `GET /indexes/{uid}/stats` with `showInternalDatabaseSizes` and
//! `sizeFormat` (Meilisearch 1.50): coresearch's own parts (trees, free pages, an embedder's
//! graph and vector files, the task queue), sizes as bytes or with a binary unit, the same
//! parts after a crash, and Meilisearch's refusal of every bad parameter.

use serde_json::{Value, json};

use crate::common::{Options, Server};

/// Documents of the index: text and a three-dimension vector each.
const DOCUMENTS: u64 = 300;

fn options() -> Options {
    Options {
        master_key: Some(crate::common::MASTER_KEY.to_owned()),
        ..Options::default()
    }
}

/// An index `books` of [`DOCUMENTS`] documents with a `userProvided` embedder `default`.
fn books(server: &Server) {
    let settings = json!({"embedders": {"default": {"source": "userProvided", "dimensions": 3}}});
    let task = server
        .send("PATCH", "/indexes/books/settings", Some(&settings))
        .json();
    assert_eq!(server.wait_task(&task["taskUid"])["status"], "succeeded");
    let documents: Vec<Value> = (0..DOCUMENTS)
        .map(|id| {
            let angle = id as f64 / 10.0;
            json!({
                "id": id,
                "title": format!("book number {id} about stars"),
                "_vectors": {"default": [angle.cos(), angle.sin(), 1.0]},
            })
        })
        .collect();
    let task = server
        .send("POST", "/indexes/books/documents", Some(&json!(documents)))
        .json();
    assert_eq!(server.wait_task(&task["taskUid"])["status"], "succeeded");
}

/// `bytes` as `sizeFormat=human` writes it: a number with at most two decimals, a space and
/// a binary unit.
fn is_human_size(text: &str) -> bool {
    let Some((number, unit)) = text.split_once(' ') else {
        return false;
    };
    let decimals = number
        .split_once('.')
        .map_or(0, |(_, fraction)| fraction.len());
    number.parse::<f64>().is_ok()
        && decimals <= 2
        && ["B", "KiB", "MiB", "GiB", "TiB"].contains(&unit)
}

/// A size given as a number of bytes.
fn bytes(size: &Value) -> u64 {
    size.as_u64().expect("a number of bytes")
}

/// The parts of `stats`' `internalDatabaseSizes`.
fn parts(stats: &Value) -> &serde_json::Map<String, Value> {
    stats["internalDatabaseSizes"]
        .as_object()
        .expect("sizes are an object")
}

#[test]
fn internal_sizes_name_coresearch_parts_and_survive_a_crash() {
    let server = Server::start_with(options());
    books(&server);

    let plain = server.send("GET", "/indexes/books/stats", None).json();
    assert!(plain.get("internalDatabaseSizes").is_none(), "{plain}");
    assert!(plain["rawDocumentDbSize"].is_u64(), "{plain}");
    let raw = server
        .send("GET", "/indexes/books/stats?sizeFormat=raw", None)
        .json();
    assert_eq!(raw["rawDocumentDbSize"], plain["rawDocumentDbSize"]);

    let stats = server
        .send(
            "GET",
            "/indexes/books/stats?showInternalDatabaseSizes=true",
            None,
        )
        .json();
    let sizes = parts(&stats);
    for part in ["documents", "externalIds", "wordDocuments", "freePages"] {
        assert!(sizes.contains_key(part), "{part} in {stats}");
    }
    for part in ["documents", "vectorGraph.default", "vectorFiles.default"] {
        assert!(bytes(&sizes[part]) > 0, "{part} in {stats}");
    }
    // The keys come in Meilisearch's order, the sizes after `isIndexing`.
    let keys: Vec<&String> = stats.as_object().expect("an object").keys().collect();
    assert_eq!(keys[3..5], ["isIndexing", "internalDatabaseSizes"]);

    global_sizes_name_the_same_parts(&server, sizes);
    human_sizes_have_a_binary_unit(&server);

    let server = server.crash_and_restart(&options());
    let again = server
        .send(
            "GET",
            "/indexes/books/stats?showInternalDatabaseSizes=true",
            None,
        )
        .json();
    assert!(parts(&again).keys().eq(sizes.keys()), "{again}");
    for part in ["documents", "vectorGraph.default", "vectorFiles.default"] {
        assert!(bytes(&parts(&again)[part]) > 0, "{part}: {again}");
    }
}

/// `GET /stats` gives each index the parts its own stats give, and the server's parts.
fn global_sizes_name_the_same_parts(server: &Server, sizes: &serde_json::Map<String, Value>) {
    let global = server
        .send("GET", "/stats?showInternalDatabaseSizes=true", None)
        .json();
    // Idle maintenance may repack a tree between two reads: the parts are the same, not
    // necessarily their bytes.
    let index_sizes = parts(&global["indexes"]["books"]);
    assert!(index_sizes.keys().eq(sizes.keys()), "{global}");
    let index_bytes: u64 = index_sizes.values().map(bytes).sum();
    assert!(index_bytes <= bytes(&global["databaseSize"]), "{global}");
    assert!(
        bytes(&global["internalDatabaseSizes"]["taskQueue"]) > 0,
        "{global}"
    );
    for part in ["taskQueueFreePages", "payloadFiles", "keys"] {
        assert!(parts(&global)[part].is_u64(), "{part} in {global}");
    }
    let plain = server.send("GET", "/stats", None).json();
    assert!(plain.get("internalDatabaseSizes").is_none(), "{plain}");
}

/// With `sizeFormat=human` every size of `GET /stats` is a text with a binary unit.
fn human_sizes_have_a_binary_unit(server: &Server) {
    let human = server
        .send(
            "GET",
            "/stats?showInternalDatabaseSizes=true&sizeFormat=human",
            None,
        )
        .json();
    let index = &human["indexes"]["books"];
    let totals = [
        &human["databaseSize"],
        &human["usedDatabaseSize"],
        &index["rawDocumentDbSize"],
        &index["avgDocumentSize"],
    ];
    for size in totals
        .into_iter()
        .chain(parts(index).values())
        .chain(parts(&human).values())
    {
        assert!(
            is_human_size(size.as_str().expect("a text")),
            "{size} in {human}"
        );
    }
}

#[test]
fn bad_stats_parameters_get_meilisearchs_errors() {
    let server = Server::start_with(options());
    let task = server
        .send("POST", "/indexes", Some(&json!({"uid": "books"})))
        .json();
    server.wait_task(&task["taskUid"]);
    let cases = [
        (
            "sizeFormat=HUMAN",
            "invalid_stats_size_format",
            "Unknown value `HUMAN` for parameter `sizeFormat`: expected one of `human`, `raw`",
        ),
        (
            "sizeFormat=",
            "invalid_stats_size_format",
            "Unknown value `` for parameter `sizeFormat`: expected one of `human`, `raw`",
        ),
        (
            "showInternalDatabaseSizes=yes",
            "invalid_stats_show_internal_database_sizes",
            "Invalid value in parameter `showInternalDatabaseSizes`: could not parse `yes` as a boolean, expected either `true` or `false`",
        ),
        (
            "foo=1",
            "bad_request",
            "Unknown parameter `foo`: expected one of `showInternalDatabaseSizes`, `sizeFormat`",
        ),
    ];
    for path in ["/stats", "/indexes/books/stats"] {
        for (query, code, message) in cases {
            let response = server.send("GET", &format!("{path}?{query}"), None);
            assert_eq!(response.status, 400, "{path}?{query}");
            let body = response.json();
            assert_eq!(body["code"], code, "{path}?{query}: {body}");
            assert_eq!(body["message"], message, "{path}?{query}");
            assert_eq!(body["type"], "invalid_request");
            assert_eq!(
                body["link"],
                format!("https://docs.meilisearch.com/errors#{code}")
            );
        }
    }
}
