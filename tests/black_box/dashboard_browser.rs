//! The dashboard at `GET /`, used as a person would, in a real headless Chromium
//! (`browser/mod.rs` says how and why): the API key prompt, the index picker with document
//! counts, highlighted hits as one types, a facet that narrows the list, the filter box and
//! its errors, and markup inside documents shown as text.
//!
//! Every expectation is the API's own answer to the same question, asked by the test beside
//! the browser, so the page is checked against the server rather than against numbers
//! written here. Screenshots of each step are kept in `target/test-artifacts/dashboard/`.

use crate::browser;
use crate::common;

use browser::Browser;
use common::{MASTER_KEY, Options, Server, request};
use serde_json::{Value, json};

/// The index the test searches and the one beside it in the picker.
const MOVIES: &str = "movies";
const BOOKS: &str = "books";
/// A key the server refuses.
const WRONG_KEY: &str = "not-the-master-key";
/// The dashboard's state, read from its elements (`src/dashboard/page.html`).
const READ_DASHBOARD: &str = r##"
const element = (id) => document.getElementById(id);
const text = (id) => (element(id).hidden ? null : element(id).textContent);
const count = (value) => Number(value.replace(/,/g, ""));
return {
  keyForm: !element("key-form").hidden,
  keyMessage: text("key-message"),
  workspace: !element("workspace").hidden,
  error: text("error"),
  options: Array.from(element("index-picker").options, (option) => option.textContent),
  picked: element("index-picker").value,
  documentCount: element("document-count").textContent,
  hits: Array.from(document.querySelectorAll("#hits > li"), (item) => ({
    fields: Object.fromEntries(Array.from(item.querySelectorAll("dt"),
      (term) => [term.textContent, term.nextElementSibling.textContent])),
    marks: Array.from(item.querySelectorAll("mark"), (mark) => mark.textContent),
    elements: Array.from(item.querySelectorAll("dd *"), (node) => node.localName),
  })),
  facets: Object.fromEntries(Array.from(document.querySelectorAll("#facets fieldset"),
    (group) => [group.querySelector("legend").textContent,
      Object.fromEntries(Array.from(group.querySelectorAll("li"), (item) => [
        item.querySelector(".facet-value").textContent,
        [count(item.querySelector(".facet-count").textContent),
          item.querySelector("input").checked]]))])),
};
"##;
/// Tags no document holds, asked of the API to find what it highlights.
const PRE_TAG: &str = "\u{1}";
const POST_TAG: &str = "\u{2}";

fn movies() -> Value {
    json!([
        {"id": 1, "title": "Carol", "genre": "drama", "year": 2015},
        {"id": 2, "title": "Caroline and the <b>bold</b> & <img src=x onerror=alert(1)>",
         "genre": "comedy", "year": 2001},
        {"id": 3, "title": "A Christmas Carol", "genre": "drama", "year": 1999},
        {"id": 4, "title": "Carolina Nights", "genre": "comedy", "year": 2003},
        {"id": 5, "title": "Dune", "genre": "science fiction", "year": 2021},
        {"id": 6, "title": "Carol of the Bells", "genre": "musical", "year": 1995}
    ])
}

/// A server with a master key holding `movies` (genre and year filterable) and `books`.
fn seeded_server() -> Server {
    let server = Server::start_with(Options {
        master_key: Some(MASTER_KEY.to_owned()),
        ..Options::default()
    });
    let books = json!([{"id": "b1", "title": "Dune"}, {"id": "b2", "title": "Emma"}]);
    let settings = json!({"filterableAttributes": ["genre", "year"]});
    let writes = [
        (format!("/indexes/{MOVIES}/documents"), movies()),
        (format!("/indexes/{MOVIES}/settings"), settings),
        (format!("/indexes/{BOOKS}/documents"), books),
    ];
    for (path, body) in writes {
        let method = if path.ends_with("settings") {
            "PATCH"
        } else {
            "POST"
        };
        let task = server.send(method, &path, Some(&body)).json();
        let done = server.wait_task(&task["taskUid"]);
        assert_eq!(done["status"], "succeeded", "{done}");
    }
    server
}

/// What the page must show for a search: every hit's id and highlighted words in order,
/// and the facet counts.
#[derive(Debug, PartialEq)]
struct Expected {
    hits: Vec<(String, Vec<String>)>,
    facets: Value,
}

/// The API's answer to `q` with `filter`, as the page must show it.
fn expected(server: &Server, q: &str, filter: Value) -> Expected {
    let body = json!({
        "q": q, "filter": filter, "facets": ["*"], "attributesToHighlight": ["*"],
        "highlightPreTag": PRE_TAG, "highlightPostTag": POST_TAG,
    });
    let answer = server
        .send("POST", &format!("/indexes/{MOVIES}/search"), Some(&body))
        .json();
    let hits = answer["hits"].as_array().expect("hits").iter().map(|hit| {
        let mut marks = Vec::new();
        let formatted = &hit["_formatted"];
        for name in hit.as_object().expect("a hit is an object").keys() {
            collect_marks(&formatted[name], &mut marks);
        }
        let id = match &hit["id"] {
            Value::String(id) => id.clone(),
            id => id.to_string(),
        };
        (id, marks)
    });
    let facets = answer["facetDistribution"]
        .as_object()
        .expect("facetDistribution")
        .iter()
        .map(|(name, counts)| (name.clone(), counts.clone()))
        .collect::<serde_json::Map<_, _>>();
    Expected {
        hits: hits.collect(),
        facets: Value::Object(facets),
    }
}

/// The highlighted spans of every string inside `value`.
fn collect_marks(value: &Value, marks: &mut Vec<String>) {
    match value {
        Value::String(text) => {
            for piece in text.split(PRE_TAG).skip(1) {
                let (marked, _) = piece.split_once(POST_TAG).expect("a highlight closes");
                marks.push(marked.to_owned());
            }
        }
        Value::Array(values) => values.iter().for_each(|value| collect_marks(value, marks)),
        Value::Object(fields) => fields
            .values()
            .for_each(|value| collect_marks(value, marks)),
        _ => {}
    }
}

/// What the page shows, in the shape of [`Expected`].
fn shown(state: &Value) -> Expected {
    let hits = state["hits"].as_array().expect("hits").iter().map(|hit| {
        let marks = hit["marks"].as_array().expect("marks");
        let marks = marks
            .iter()
            .map(|mark| mark.as_str().expect("text").to_owned());
        (
            hit["fields"]["id"].as_str().unwrap_or("").to_owned(),
            marks.collect(),
        )
    });
    let facets = state["facets"]
        .as_object()
        .expect("facets")
        .iter()
        .map(|(name, values)| {
            let counts = values.as_object().expect("values").iter();
            let counts = counts.map(|(value, shown)| (value.clone(), shown[0].clone()));
            (name.clone(), Value::Object(counts.collect()))
        });
    Expected {
        hits: hits.collect(),
        facets: Value::Object(facets.collect()),
    }
}

/// The text the page's document counts read for `count` documents.
fn documents_label(count: u64) -> String {
    format!("{count} document{}", if count == 1 { "" } else { "s" })
}

async fn wait_for_results(browser: &Browser, what: &str, wanted: &Expected) -> Value {
    browser
        .wait_for(what, READ_DASHBOARD, |state| shown(state) == *wanted)
        .await
}

/// The prompt appears, refuses a wrong key with the server's message, accepts the master
/// key; the picker lists every index with its document count.
async fn enter_the_key(browser: &Browser, server: &Server) {
    browser
        .wait_for("the key prompt", READ_DASHBOARD, |state| {
            state["keyForm"] == true && state["workspace"] == false
        })
        .await;
    browser.screenshot("key-prompt").await;
    browser.type_into("#key-input", WRONG_KEY).await;
    browser.click("#key-form button[type=submit]").await;
    let refusal = server.raw(&request("GET", "/indexes", Some(WRONG_KEY)));
    assert_eq!(refusal.status, 403);
    let message = refusal.json()["message"]
        .as_str()
        .expect("message")
        .to_owned();
    browser
        .wait_for("the refusal of the wrong key", READ_DASHBOARD, |state| {
            state["keyForm"] == true
                && state["keyMessage"]
                    .as_str()
                    .is_some_and(|shown| shown.contains(&message))
        })
        .await;
    browser.type_into("#key-input", MASTER_KEY).await;
    browser.click("#key-form button[type=submit]").await;
    let options: Vec<String> = [BOOKS, MOVIES]
        .iter()
        .map(|uid| {
            let stats = server
                .send("GET", &format!("/indexes/{uid}/stats"), None)
                .json();
            let count = stats["numberOfDocuments"].as_u64().expect("a count");
            format!("{uid} ({})", documents_label(count))
        })
        .collect();
    browser
        .wait_for(
            "every index with its document count",
            READ_DASHBOARD,
            |state| {
                state["keyForm"] == false
                    && state["workspace"] == true
                    && state["options"] == json!(options)
            },
        )
        .await;
}

#[tokio::test]
async fn the_dashboard_searches_highlights_and_narrows_by_facet_in_a_real_browser() {
    let server = seeded_server();
    let browser = Browser::start("dashboard").await;
    browser.open(&format!("{}/", server.url())).await;
    enter_the_key(&browser, &server).await;

    browser.select("#index-picker", MOVIES).await;
    let stats = server
        .send("GET", &format!("/indexes/{MOVIES}/stats"), None)
        .json();
    let count = documents_label(stats["numberOfDocuments"].as_u64().expect("a count"));
    let everything = expected(&server, "", Value::Null);
    // The count is fetched beside the first search: either may show first.
    let state = browser
        .wait_for("every movie and the count", READ_DASHBOARD, |state| {
            shown(state) == everything && state["documentCount"] == count.as_str()
        })
        .await;
    assert_eq!(state["picked"], MOVIES);

    browser.type_into("#search-input", "carol").await;
    let typed = expected(&server, "carol", Value::Null);
    assert!(typed.hits.iter().all(|(_, marks)| !marks.is_empty()));
    let state = wait_for_results(&browser, "highlighted hits for carol", &typed).await;
    browser.screenshot("highlighted-hits").await;
    assert_markup_is_text(&state);

    browser
        .click(r##"#facets input[data-facet-attribute="genre"][data-facet-value="drama"]"##)
        .await;
    let narrowed = expected(&server, "carol", json!("genre = drama"));
    assert!(!narrowed.hits.is_empty() && narrowed.hits.len() < typed.hits.len());
    let state = wait_for_results(&browser, "the hits of drama", &narrowed).await;
    assert_eq!(
        state["facets"]["genre"]["drama"][1], true,
        "the facet stays checked"
    );
    browser.screenshot("facet-narrowed").await;

    use_the_filter_box(&browser, &server).await;
    reopen_with_the_remembered_key(&browser, &server).await;
    browser.close().await;
}

/// Every hit's markup is shown as text: the only elements inside a hit are highlights.
fn assert_markup_is_text(state: &Value) {
    let markup = movies()[1]["title"].as_str().expect("a title").to_owned();
    let hits = state["hits"].as_array().expect("hits");
    assert!(
        hits.iter()
            .any(|hit| hit["fields"]["title"].as_str() == Some(markup.as_str())),
        "the title with markup is shown as written: {state:#}"
    );
    for hit in hits {
        let elements = hit["elements"].as_array().expect("elements");
        assert!(elements.iter().all(|name| name == "mark"), "{hit:#}");
    }
}

/// A filter typed in the box narrows with the checked facet; a wrong one shows the
/// server's error.
async fn use_the_filter_box(browser: &Browser, server: &Server) {
    browser.type_into("#filter-input", "year > 2000").await;
    let filtered = expected(server, "carol", json!(["genre = drama", "year > 2000"]));
    wait_for_results(browser, "the hits of drama after 2000", &filtered).await;

    browser.clear("#filter-input").await;
    browser.type_into("#filter-input", "year >").await;
    let body = json!({"q": "carol", "filter": "year >"});
    let refusal = server.send("POST", &format!("/indexes/{MOVIES}/search"), Some(&body));
    assert_eq!(refusal.status, 400);
    let message = refusal.json()["message"]
        .as_str()
        .expect("message")
        .to_owned();
    browser
        .wait_for("the filter's error", READ_DASHBOARD, |state| {
            state["error"].as_str().is_some_and(|error| {
                error.contains(&message) && error.contains("invalid_search_filter")
            })
        })
        .await;
    browser.screenshot("filter-error").await;
}

/// A reload keeps the key and the index: no prompt, the movies listed again.
async fn reopen_with_the_remembered_key(browser: &Browser, server: &Server) {
    browser.open(&format!("{}/", server.url())).await;
    let everything = expected(server, "", Value::Null);
    let state = wait_for_results(browser, "the movies after a reload", &everything).await;
    assert_eq!(state["keyForm"], false);
    assert_eq!(state["picked"], MOVIES);
    assert_eq!(state["error"], Value::Null);
}

/// Meilisearch 1.41 serves its dashboard at `/` only in development; in production `/`
/// answers its status object. Headers: the page's policy names its inlined script.
#[test]
fn the_root_serves_the_dashboard_in_development_and_the_status_in_production() {
    let development = Server::start();
    let page = development.raw(&request("GET", "/", None));
    assert_eq!(page.status, 200);
    assert_eq!(
        page.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    let policy = page.header("content-security-policy").expect("a policy");
    assert!(policy.contains("script-src 'sha256-"), "{policy}");
    assert!(page.text().contains(r#"id="search-input""#));

    let production = Server::start_with(Options {
        master_key: Some(MASTER_KEY.to_owned()),
        extra_arguments: vec!["--env".to_owned(), "production".to_owned()],
        ..Options::default()
    });
    let status = production.raw(&request("GET", "/", None));
    assert_eq!(status.status, 200);
    assert_eq!(status.json(), json!({"status": "Meilisearch is running"}));
}
