//! Meilisearch's own front-end client against coresearch, in a real headless Chromium
//! (`browser/mod.rs`): InstantSearch.js with `@meilisearch/instant-meilisearch` and its peer
//! `meilisearch`, the pinned releases from the npm registry (`browser/npm_packages.rs`), on a
//! page served from another origin by a static server thread of the test, as a site's
//! front end is (so every call crosses CORS with the default search key).
//!
//! Typing a query shows the hits the API answers with their highlighted words; checking a
//! refinement narrows them to the API's answer for that filter; the refinement list shows the
//! API's facet counts. Screenshots go to `target/test-artifacts/dashboard/`.

use crate::browser;
use crate::common;

use std::collections::HashMap;

use browser::Browser;
use browser::npm_packages::{INSTANT_MEILISEARCH, INSTANTSEARCH, MEILISEARCH_JS};
use browser::static_server::{self, File};
use common::{MASTER_KEY, Options, Server};
use serde_json::{Value, json};

const INDEX: &str = "movies";
/// The page, with a slot for its configuration (`host`, `apiKey`, `indexName`).
const PAGE: &str = include_str!("../fixtures/instantsearch/index.html");
const CONFIGURATION_SLOT: &str = "{{CONFIGURATION}}";
/// The name Meilisearch gives the search key it makes with a master key.
const DEFAULT_SEARCH_KEY_NAME: &str = "Default Search API Key";
/// The widgets' state: failures, hits (id and highlighted words) and the genre counts.
const READ_PAGE: &str = r#"
return {
  failures: document.getElementById("failures").textContent,
  hits: Array.from(document.querySelectorAll(".ais-Hits-item"), (item) => [
    item.querySelector(".id").textContent,
    Array.from(item.querySelectorAll("mark.ais-Highlight-highlighted"), (mark) => mark.textContent),
  ]),
  genres: Object.fromEntries(Array.from(document.querySelectorAll(".ais-RefinementList-item"),
    (item) => [item.querySelector(".ais-RefinementList-labelText").textContent,
      Number(item.querySelector(".ais-RefinementList-count").textContent)])),
};
"#;
/// Tags no document holds, asked of the API to find what it highlights.
const PRE_TAG: &str = "\u{1}";
const POST_TAG: &str = "\u{2}";

fn seeded_server() -> Server {
    let server = Server::start_with(Options {
        master_key: Some(MASTER_KEY.to_owned()),
        ..Options::default()
    });
    let documents = json!([
        {"id": 1, "title": "Carol", "genre": "drama"},
        {"id": 2, "title": "Caroline in the City", "genre": "comedy"},
        {"id": 3, "title": "A Christmas Carol", "genre": "drama"},
        {"id": 4, "title": "Carolina Nights", "genre": "comedy"},
        {"id": 5, "title": "Dune", "genre": "science fiction"}
    ]);
    let settings = json!({"filterableAttributes": ["genre"]});
    for (method, path, body) in [
        ("POST", format!("/indexes/{INDEX}/documents"), documents),
        ("PATCH", format!("/indexes/{INDEX}/settings"), settings),
    ] {
        let task = server.send(method, &path, Some(&body)).json();
        let done = server.wait_task(&task["taskUid"]);
        assert_eq!(done["status"], "succeeded", "{done}");
    }
    server
}

/// The default search key the server made.
fn search_key(server: &Server) -> String {
    let keys = server.send("GET", "/keys", None).json();
    let keys = keys["results"].as_array().expect("results");
    let key = keys
        .iter()
        .find(|key| key["name"] == DEFAULT_SEARCH_KEY_NAME)
        .expect("a default search key");
    key["key"].as_str().expect("a key").to_owned()
}

/// Serves the page and the three packages' files from a static server of the test.
async fn serve_page(server: &Server, key: &str) -> String {
    let configuration = json!({"host": server.url(), "apiKey": key, "indexName": INDEX});
    let page = PAGE.replacen(
        CONFIGURATION_SLOT,
        &configuration.to_string().replace('<', "\\u003c"),
        1,
    );
    let script = "text/javascript; charset=utf-8";
    let packaged = [
        (
            "/instantsearch.js",
            script,
            &INSTANTSEARCH,
            "dist/instantsearch.production.min.js",
        ),
        (
            "/instant-meilisearch.js",
            script,
            &INSTANT_MEILISEARCH,
            "dist/index.js",
        ),
        (
            "/basic_search.css",
            "text/css",
            &INSTANT_MEILISEARCH,
            "templates/basic_search.css",
        ),
        ("/meilisearch.js", script, &MEILISEARCH_JS, "dist/index.js"),
    ];
    let mut files = HashMap::new();
    for (path, content_type, package, file) in packaged {
        let body = package.file(file).await;
        files.insert(path.to_owned(), File { content_type, body });
    }
    let html = "text/html; charset=utf-8";
    files.insert(
        "/".to_owned(),
        File {
            content_type: html,
            body: page.into_bytes(),
        },
    );
    format!("http://{}/", static_server::serve(files))
}

/// The API's hits (id and highlighted title words) for `q` with `filter`, and its genre
/// counts.
fn expected(server: &Server, q: &str, filter: Value) -> (Value, Value) {
    let body = json!({
        "q": q, "filter": filter, "facets": ["genre"], "attributesToHighlight": ["title"],
        "highlightPreTag": PRE_TAG, "highlightPostTag": POST_TAG,
    });
    let answer = server
        .send("POST", &format!("/indexes/{INDEX}/search"), Some(&body))
        .json();
    let hits = answer["hits"].as_array().expect("hits").iter().map(|hit| {
        let title = hit["_formatted"]["title"].as_str().expect("a title");
        let marks: Vec<&str> = title
            .split(PRE_TAG)
            .skip(1)
            .map(|piece| piece.split_once(POST_TAG).expect("a highlight closes").0)
            .collect();
        json!([hit["id"].to_string(), marks])
    });
    (
        Value::Array(hits.collect()),
        answer["facetDistribution"]["genre"].clone(),
    )
}

#[tokio::test]
async fn instant_meilisearch_renders_coresearch_hits_in_a_real_browser() {
    let server = seeded_server();
    let page = serve_page(&server, &search_key(&server)).await;
    let browser = Browser::start("instant-meilisearch").await;
    browser.open(&page).await;

    browser.type_into(".ais-SearchBox-input", "carol").await;
    let (hits, genres) = expected(&server, "carol", Value::Null);
    assert!(hits.as_array().is_some_and(|hits| hits.len() > 1));
    let state = browser
        .wait_for("the highlighted hits of carol", READ_PAGE, |state| {
            state["hits"] == hits && state["genres"] == genres
        })
        .await;
    assert_eq!(state["failures"], "", "the page ran without errors");
    browser.screenshot("hits").await;

    browser
        .click(r#".ais-RefinementList-checkbox[value="drama"]"#)
        .await;
    let (narrowed, _) = expected(&server, "carol", json!("genre = drama"));
    assert!(
        narrowed
            .as_array()
            .is_some_and(|narrowed| narrowed.len() < hits.as_array().map_or(0, Vec::len))
    );
    let state = browser
        .wait_for("the hits of drama", READ_PAGE, |state| {
            state["hits"] == narrowed
        })
        .await;
    assert_eq!(state["failures"], "", "the page ran without errors");
    browser.screenshot("refined").await;
    browser.close().await;
}
