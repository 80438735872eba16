//! `POST /render-template` (Meilisearch 1.50, experimental feature `renderRoute`) against the
//! real server: the feature gate and its persistence, templates read from an index (an
//! embedder's document template, its indexing and search fragments, the chat template) or
//! given inline, rendered with a stored document, an inline document or an inline search
//! query, every error with the status, code and message Meilisearch 1.50 answers (each
//! compared with the real Meilisearch 1.50 binary while the route was written), and the
//! keys: both `settings.get` and `documents.get`, and every index the body names.
//!
//! The fixture: index `dogs` with a fragment embedder `rest`, a document template embedder
//! `tmpl` (the default template), a `userProvided` embedder `manual`, searchable attribute
//! `name` only, a chat template; three dogs; index `books` with one book.

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]

use crate::common;

use std::sync::atomic::Ordering;

use common::rest_embedder::Embedder;
use common::{HttpResponse, MASTER_KEY, Options, Server, json_request};
use serde_json::{Value, json};

fn options() -> Options {
    Options {
        master_key: Some(MASTER_KEY.to_string()),
        extra_arguments: vec![
            "--experimental-allowed-ip-networks".to_string(),
            "any".to_string(),
        ],
        ..Options::default()
    }
}

fn set_features(server: &Server, features: Value) {
    let response = server.send("PATCH", "/experimental-features", Some(&features));
    assert_eq!(response.status, 200, "{}", response.text());
}

fn succeed(server: &Server, method: &str, path: &str, body: &Value) {
    let response = server.send(method, path, Some(body));
    assert_eq!(response.status, 202, "{}", response.text());
    let task = server.wait_task(&response.json()["taskUid"]);
    assert_eq!(task["status"], "succeeded", "{method} {path}: {task}");
}

fn render(server: &Server, body: &Value) -> HttpResponse {
    server.send("POST", "/render-template", Some(body))
}

fn render_with(server: &Server, key: Option<&str>, body: &Value) -> HttpResponse {
    server.raw(&json_request(
        "POST",
        "/render-template",
        key,
        &body.to_string(),
    ))
}

/// Asserts a 200 answer of `template` and `rendered`.
fn assert_rendered(response: &HttpResponse, template: Value, rendered: Value) {
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(
        response.json(),
        json!({"template": template, "rendered": rendered})
    );
}

/// Asserts an error answer, whole.
fn assert_error(response: &HttpResponse, status: u16, code: &str, message: &str) {
    let kind = match code {
        "invalid_api_key" | "missing_authorization_header" => "auth",
        _ => "invalid_request",
    };
    assert_eq!(response.status, status, "{message}: {}", response.text());
    assert_eq!(
        response.json(),
        json!({
            "message": message,
            "code": code,
            "type": kind,
            "link": format!("https://docs.meilisearch.com/errors#{code}"),
        })
    );
}

/// The fragment embedder of `dogs`.
fn fragment_embedder(embedder: &Embedder) -> Value {
    json!({
        "source": "rest",
        "url": format!("http://{}/embed", embedder.address),
        "dimensions": 3,
        "request": {"input": "{{fragment}}"},
        "response": {"embedding": "{{embedding}}"},
        "indexingFragments": {
            "withBreed": {"value": "{{ doc.name }} is a {{ doc.breed }}"},
            "basic": {"value": "{{ doc.name }} is a dog"},
            "obj": {"value": {"a": ["{{doc.name}}", 3, {"b": "{{doc.breed}}"}]}}
        },
        "searchFragments": {
            "justBreed": {"value": "It's a {{ media.breed }}"},
            "query": {"value": "pre {{ q }}"}
        }
    })
}

/// A server with every feature the route uses on, and the fixture of the module
/// documentation.
fn fixture(embedder: &Embedder) -> Server {
    let server = Server::start_with(options());
    set_features(
        &server,
        json!({"renderRoute": true, "multimodal": true, "chatCompletions": true}),
    );
    let template_embedder = json!({
        "source": "rest",
        "url": format!("http://{}/embed", embedder.address),
        "dimensions": 3,
        "request": {"input": "{{text}}"},
        "response": {"embedding": "{{embedding}}"},
    });
    let settings = json!({
        "embedders": {
            "rest": fragment_embedder(embedder),
            "tmpl": template_embedder,
            "manual": {"source": "userProvided", "dimensions": 3},
        },
        "searchableAttributes": ["name"],
        "chat": {"documentTemplate": "{{doc.name}}!"},
    });
    succeed(&server, "PATCH", "/indexes/dogs/settings", &settings);
    let vectors = json!({"manual": [1, 2, 3]});
    let dogs = json!([
        {"id": "0", "name": "kefir", "_vectors": vectors},
        {"id": "1", "name": "intel", "breed": "beagle", "age": 3, "_vectors": vectors},
        {"id": "2", "name": "doggo", "nested": {"a": {"b": 1}}, "_geo": {"lat": 1, "lng": 2},
         "_vectors": vectors},
    ]);
    succeed(&server, "POST", "/indexes/dogs/documents", &dogs);
    let books = json!([{"id": "b1", "title": "Dune", "author": {"name": "Herbert"}}]);
    succeed(&server, "POST", "/indexes/books/documents", &books);
    server
}

#[test]
fn the_route_is_gated_by_render_route_which_persists_across_a_restart() {
    let scratch = tempfile::tempdir().expect("tempdir succeeds");
    let data = scratch.path().join("data.ms");
    let server = Server::start_on(&data, &options());
    let body = json!({"template": {"kind": "inlineDocumentTemplate", "inline": "{{doc.a}}"},
                      "input": {"kind": "inlineDocument", "inline": {"a": "b"}}});
    assert_error(
        &render(&server, &body),
        400,
        "feature_not_enabled",
        "calling the /render-template route requires enabling the `render_route` experimental \
         feature. See https://github.com/orgs/meilisearch/discussions/888",
    );
    // The body is read before the gate, as Meilisearch's extractors do.
    assert_error(
        &render(&server, &json!({})),
        400,
        "bad_request",
        "Missing field `template`",
    );
    let features = server.send("GET", "/experimental-features", None).json();
    assert_eq!(features["renderRoute"], false, "{features}");
    set_features(&server, json!({"renderRoute": true}));
    assert_rendered(&render(&server, &body), json!("{{doc.a}}"), json!("b"));
    assert!(server.stop().success(), "SIGTERM ends the server with 0");

    let server = Server::start_on(&data, &options());
    let features = server.send("GET", "/experimental-features", None).json();
    assert_eq!(features["renderRoute"], true, "{features}");
    assert_rendered(&render(&server, &body), json!("{{doc.a}}"), json!("b"));
    set_features(&server, json!({"renderRoute": false}));
    let server = server.crash_and_restart(&options());
    let features = server.send("GET", "/experimental-features", None).json();
    assert_eq!(features["renderRoute"], false, "{features}");
    assert_eq!(render(&server, &body).json()["code"], "feature_not_enabled");
}

#[test]
fn inline_templates_render_inline_documents_and_queries() {
    let server = Server::start_with(options());
    set_features(&server, json!({"renderRoute": true, "multimodal": true}));
    let nested = json!({
        "template": {"kind": "inlineDocumentTemplate",
                     "inline": "{{ doc.name }} is a {{ doc.breed.name }} ({{ doc.breed.kind }})"},
        "input": {"kind": "inlineDocument",
                  "inline": {"name": "iko", "breed": {"name": "jack russell", "kind": "terrier"}}}
    });
    assert_rendered(
        &render(&server, &nested),
        json!("{{ doc.name }} is a {{ doc.breed.name }} ({{ doc.breed.kind }})"),
        json!("iko is a jack russell (terrier)"),
    );
    // Without an input (absent or null) the template is only shown.
    for body in [
        json!({"template": {"kind": "inlineDocumentTemplate", "inline": "{{ doc.x }}"}}),
        json!({"template": {"kind": "inlineDocumentTemplate", "inline": "{{ doc.x }}"}, "input": null}),
    ] {
        assert_rendered(&render(&server, &body), json!("{{ doc.x }}"), Value::Null);
    }
    // `fields`: every inline field is searchable, the reserved ones are hidden.
    let fields = json!({
        "template": {"kind": "inlineDocumentTemplate",
                     "inline": "{% for f in fields %}{{f.name}}={{f.value}}/{{f.is_searchable}};{% endfor %}"},
        "input": {"kind": "inlineDocument",
                  "inline": {"id": 1, "_vectors": {"a": 1}, "_geo": {"lat": 1}, "n": {"x": [1, 2]}}}
    });
    assert_eq!(
        render(&server, &fields).json()["rendered"],
        "id=1/true;n=x12/true;"
    );
    // A document template is cut at `documentTemplateMaxBytes` (400 by default), as
    // indexing cuts it.
    let cut = json!({
        "template": {"kind": "inlineDocumentTemplate", "inline": "{{doc.a}} and more",
                     "documentTemplateMaxBytes": 5},
        "input": {"kind": "inlineDocument", "inline": {"a": "éé"}}
    });
    assert_eq!(render(&server, &cut).json()["rendered"], "éé ");
    // A fragment keeps its shape; a search query gives it `q` and `media`.
    let fragment = json!({"text": "{{ q }}", "picture": ["{{ media.url }}", 3]});
    let search = json!({
        "template": {"kind": "inlineFragment", "inline": fragment},
        "input": {"kind": "inlineSearch",
                  "inline": {"q": "a dog", "media": {"url": "http://img/dog.png"}, "filter": "ignored"}}
    });
    assert_rendered(
        &render(&server, &search),
        fragment.clone(),
        json!({"text": "a dog", "picture": ["http://img/dog.png", 3]}),
    );
    let document = json!({
        "template": {"kind": "inlineFragment", "inline": {"name": "{{ doc.name }}"}},
        "input": {"kind": "inlineDocument", "inline": {"name": "iko"}}
    });
    assert_rendered(
        &render(&server, &document),
        json!({"name": "{{ doc.name }}"}),
        json!({"name": "iko"}),
    );
    let constant = json!({"template": {"kind": "inlineFragment", "inline": 5},
                          "input": {"kind": "inlineDocument", "inline": {}}});
    assert_rendered(&render(&server, &constant), json!(5), json!(5));
}

#[test]
fn templates_stored_in_an_index_render_stored_and_inline_inputs() {
    let embedder = Embedder::start();
    let server = fixture(&embedder);
    let embedded = embedder.texts.load(Ordering::SeqCst);
    let default_template = "{% for field in fields %}{% if field.is_searchable and field.value != nil %}{{ field.name }}: {{ field.value }}\n{% endif %}{% endfor %}";
    // An embedder's document template (the default one), with the index's searchable
    // attributes.
    let stored = json!({
        "template": {"kind": "documentTemplate", "indexUid": "dogs", "embedder": "tmpl"},
        "input": {"kind": "indexDocument", "indexUid": "dogs", "id": "1"}
    });
    assert_rendered(
        &render(&server, &stored),
        json!(default_template),
        json!("name: intel\n"),
    );
    // The input may come from another index, with that index's searchable attributes.
    let other = json!({
        "template": {"kind": "documentTemplate", "indexUid": "dogs", "embedder": "tmpl"},
        "input": {"kind": "indexDocument", "indexUid": "books", "id": "b1"}
    });
    assert_rendered(
        &render(&server, &other),
        json!(default_template),
        json!("id: b1\ntitle: Dune\nauthor: nameHerbert\n"),
    );
    let fields = json!({
        "template": {"kind": "inlineDocumentTemplate",
                     "inline": "{% for f in fields %}{{f.name}}={{f.value}}/{{f.is_searchable}};{% endfor %}"},
        "input": {"kind": "indexDocument", "indexUid": "dogs", "id": "2"}
    });
    assert_eq!(
        render(&server, &fields).json()["rendered"],
        "id=2/false;name=doggo/true;nested=ab1/false;"
    );
    // Indexing fragments render stored and inline documents, keeping their shape.
    let basic = json!({
        "template": {"kind": "indexingFragment", "indexUid": "dogs", "embedder": "rest", "fragment": "basic"},
        "input": {"kind": "indexDocument", "indexUid": "dogs", "id": "0"}
    });
    assert_rendered(
        &render(&server, &basic),
        json!("{{ doc.name }} is a dog"),
        json!("kefir is a dog"),
    );
    let object = json!({
        "template": {"kind": "indexingFragment", "indexUid": "dogs", "embedder": "rest", "fragment": "obj"},
        "input": {"kind": "indexDocument", "indexUid": "dogs", "id": "1"}
    });
    assert_rendered(
        &render(&server, &object),
        json!({"a": ["{{doc.name}}", 3, {"b": "{{doc.breed}}"}]}),
        json!({"a": ["intel", 3, {"b": "beagle"}]}),
    );
    let inline = json!({
        "template": {"kind": "indexingFragment", "indexUid": "dogs", "embedder": "rest", "fragment": "withBreed"},
        "input": {"kind": "inlineDocument", "inline": {"name": "iko", "breed": "jack russell"}}
    });
    assert_rendered(
        &render(&server, &inline),
        json!("{{ doc.name }} is a {{ doc.breed }}"),
        json!("iko is a jack russell"),
    );
    // Search fragments render queries.
    let search = json!({
        "template": {"kind": "searchFragment", "indexUid": "dogs", "embedder": "rest", "fragment": "justBreed"},
        "input": {"kind": "inlineSearch", "inline": {"media": {"name": "iko", "breed": "jack russell"}, "q": "unused"}}
    });
    assert_rendered(
        &render(&server, &search),
        json!("It's a {{ media.breed }}"),
        json!("It's a jack russell"),
    );
    let query = json!({
        "template": {"kind": "searchFragment", "indexUid": "dogs", "embedder": "rest", "fragment": "query"},
        "input": {"kind": "inlineSearch", "inline": {"q": "hello"}}
    });
    assert_rendered(
        &render(&server, &query),
        json!("pre {{ q }}"),
        json!("pre hello"),
    );
    // Shown without an input.
    let shown = json!({"template": {"kind": "searchFragment", "indexUid": "dogs", "embedder": "rest", "fragment": "query"}});
    assert_rendered(&render(&server, &shown), json!("pre {{ q }}"), Value::Null);
    // The chat template, with a stored and an inline document.
    let chat = json!({
        "template": {"kind": "chatDocumentTemplate", "indexUid": "dogs"},
        "input": {"kind": "indexDocument", "indexUid": "dogs", "id": "1"}
    });
    assert_rendered(
        &render(&server, &chat),
        json!("{{doc.name}}!"),
        json!("intel!"),
    );
    let chat = json!({
        "template": {"kind": "chatDocumentTemplate", "indexUid": "books"},
        "input": {"kind": "inlineDocument", "inline": {"name": "iko", "breed": "jack russell"}}
    });
    assert_rendered(
        &render(&server, &chat),
        json!(default_template),
        json!("name: iko\nbreed: jack russell\n"),
    );
    // Rendering embeds nothing.
    assert_eq!(embedder.texts.load(Ordering::SeqCst), embedded);
}

/// `(body, status, code, message)` of the errors that need the fixture's indexes.
fn fixture_errors() -> Vec<(Value, u16, &'static str, &'static str)> {
    let tmpl = |input: Value| json!({"template": {"kind": "documentTemplate", "indexUid": "dogs", "embedder": "tmpl"}, "input": input});
    vec![
        (
            json!({"template": {"kind": "documentTemplate", "indexUid": "nope", "embedder": "x"}}),
            404,
            "index_not_found",
            "error while fetching template: cannot open index `nope`: Index `nope` not found.",
        ),
        (
            tmpl(json!({"kind": "indexDocument", "indexUid": "nope", "id": "1"})),
            404,
            "index_not_found",
            "Cannot open index `nope`: Index `nope` not found.",
        ),
        (
            tmpl(json!({"kind": "inlineDocument", "indexUid": "nope", "inline": {}})),
            404,
            "index_not_found",
            "Cannot open index `nope`: Index `nope` not found.",
        ),
        (
            json!({"template": {"kind": "documentTemplate", "indexUid": "dogs", "embedder": "wrong"}}),
            400,
            "invalid_render_template",
            "error while fetching template: cannot find embedder `wrong` in index `dogs`",
        ),
        (
            json!({"template": {"kind": "documentTemplate", "indexUid": "dogs", "embedder": "rest"}}),
            400,
            "invalid_render_template",
            "error while fetching template: embedder `rest` in index `dogs` does not use a document template.",
        ),
        (
            json!({"template": {"kind": "documentTemplate", "indexUid": "dogs", "embedder": "manual"}}),
            400,
            "invalid_render_template",
            "error while fetching template: embedder `manual` in index `dogs` does not use a document template.",
        ),
        (
            json!({"template": {"kind": "indexingFragment", "indexUid": "dogs", "embedder": "tmpl", "fragment": "x"}}),
            400,
            "invalid_render_template",
            "error while fetching template: embedder `tmpl` in index `dogs` does not use fragments.",
        ),
        (
            json!({"template": {"kind": "indexingFragment", "indexUid": "dogs", "embedder": "wrong", "fragment": "x"}}),
            400,
            "invalid_render_template",
            "error while fetching template: cannot find embedder `wrong` in index `dogs`",
        ),
        (
            json!({"template": {"kind": "indexingFragment", "indexUid": "dogs", "embedder": "rest", "fragment": "bad"}}),
            400,
            "invalid_render_template",
            "error while fetching template: cannot find indexing fragment `bad` for embedder `rest` in index `dogs`",
        ),
        (
            json!({"template": {"kind": "searchFragment", "indexUid": "dogs", "embedder": "rest", "fragment": "bad"}}),
            400,
            "invalid_render_template",
            "error while fetching template: cannot find search fragment `bad` for embedder `rest` in index `dogs`",
        ),
        // Meilisearch reports a search fragment's missing embedder this way.
        (
            json!({"template": {"kind": "searchFragment", "indexUid": "dogs", "embedder": "wrong", "fragment": "x"}}),
            400,
            "invalid_render_template",
            "error while fetching template: cannot find indexing fragment `x` for embedder `wrong` in index `dogs`",
        ),
        (
            tmpl(json!({"kind": "indexDocument", "indexUid": "dogs", "id": "9999"})),
            404,
            "render_document_not_found",
            "error while fetching input: document `9999` not found in `dogs`",
        ),
        (
            tmpl(json!({"kind": "indexDocument", "indexUid": "dogs"})),
            400,
            "invalid_render_input",
            "error while fetching input: parameter `id` missing for kind `indexDocument`",
        ),
        (
            tmpl(json!({"kind": "indexDocument", "indexUid": "dogs", "id": "1", "inline": {}})),
            400,
            "invalid_render_input",
            "error while fetching input: parameter `inline` disallowed for kind `indexDocument`",
        ),
        (
            tmpl(json!({"kind": "inlineDocument", "indexUid": "dogs", "inline": {}})),
            400,
            "invalid_render_input",
            "error while fetching input: parameter `index_uid` disallowed for kind `inlineDocument`",
        ),
        (
            json!({"template": {"kind": "indexingFragment", "indexUid": "dogs", "embedder": "rest", "fragment": "withBreed"},
                   "input": {"kind": "indexDocument", "indexUid": "dogs", "id": "0"}}),
            400,
            "template_rendering_error",
            "error while rendering template: error while rendering template: liquid: Unknown index\n  with:\n    variable=doc\n    requested index=breed\n    available indexes=id, name\n",
        ),
        (
            json!({"template": {"kind": "indexingFragment", "indexUid": "dogs", "embedder": "rest", "fragment": "obj"},
                   "input": {"kind": "indexDocument", "indexUid": "dogs", "id": "0"}}),
            400,
            "template_rendering_error",
            "error while rendering template: in ``.a[2].b``, error while rendering template: liquid: Unknown index\n  with:\n    variable=doc\n    requested index=breed\n    available indexes=id, name\n",
        ),
        (
            json!({"template": {"kind": "inlineDocumentTemplate", "inline": "{{doc.missing}}"},
                   "input": {"kind": "indexDocument", "indexUid": "dogs", "id": "1"}}),
            400,
            "template_rendering_error",
            "error while rendering template: user error: missing field in document: liquid: Unknown index\n  with:\n    variable=doc\n    requested index=missing\n    available indexes=id, name, breed, age\n",
        ),
        (
            json!({"template": {"kind": "inlineFragment", "inline": {"g": "{{doc._geo}}"}},
                   "input": {"kind": "indexDocument", "indexUid": "dogs", "id": "2"}}),
            400,
            "template_rendering_error",
            "error while rendering template: in ``.g``, error while rendering template: liquid: Unknown index\n  with:\n    variable=doc\n    requested index=_geo\n    available indexes=id, name, nested\n",
        ),
        (
            json!({"template": {"kind": "searchFragment", "indexUid": "dogs", "embedder": "rest", "fragment": "query"},
                   "input": {"kind": "inlineSearch", "inline": {}}}),
            400,
            "template_rendering_error",
            "error while rendering template: error while rendering template: liquid: Unknown variable\n  with:\n    requested variable=q\n",
        ),
        (
            json!({"template": {"kind": "searchFragment", "indexUid": "dogs", "embedder": "rest", "fragment": "justBreed"},
                   "input": {"kind": "inlineSearch", "inline": {"media": null}}}),
            400,
            "template_rendering_error",
            "error while rendering template: error while rendering template: liquid: Unknown index\n  with:\n    variable=media\n    requested index=breed\n    available indexes=\n",
        ),
        (
            tmpl(json!({"kind": "inlineSearch", "inline": {"q": "x"}})),
            400,
            "template_rendering_error",
            "error while rendering template: cannot render a document template with a search query",
        ),
    ]
}

/// `(body, status, code, message)` of the errors of the body and of the kinds' fields.
fn request_errors() -> Vec<(Value, u16, &'static str, &'static str)> {
    let inline = |input: Value| json!({"template": {"kind": "inlineDocumentTemplate", "inline": "x"}, "input": input});
    vec![
        (json!({}), 400, "bad_request", "Missing field `template`"),
        (
            json!([]),
            400,
            "bad_request",
            "Invalid value type: expected an object, but found an array: `[]`",
        ),
        (
            json!({"template": {"kind": "inlineFragment", "inline": "x"}, "extra": 1}),
            400,
            "bad_request",
            "Unknown field `extra`: expected one of `template`, `input`",
        ),
        (
            json!({"template": {}}),
            400,
            "invalid_render_template",
            "Missing field `kind` inside `.template`",
        ),
        (
            json!({"template": null}),
            400,
            "invalid_render_template",
            "Invalid value type at `.template`: expected an object, but found null",
        ),
        (
            json!({"template": {"kind": "bad"}}),
            400,
            "invalid_render_template",
            "Unknown value `bad` at `.template.kind`: expected one of `documentTemplate`, `chatDocumentTemplate`, `indexingFragment`, `searchFragment`, `inlineDocumentTemplate`, `inlineFragment`",
        ),
        (
            json!({"template": {"kind": "inlineFragment", "inline": "x", "extra": 1}}),
            400,
            "invalid_render_template",
            "Unknown field `extra` inside `.template`: expected one of `kind`, `indexUid`, `embedder`, `fragment`, `inline`, `documentTemplateMaxBytes`",
        ),
        (
            json!({"template": {"kind": "inlineFragment", "indexUid": "a b"}}),
            400,
            "invalid_render_template",
            "Invalid value at `.template.indexUid`: `a b` is not a valid index uid. Index uid can be an integer or a string containing only alphanumeric characters, hyphens (-) and underscores (_), and can not be more than 512 bytes.",
        ),
        (
            json!({"template": {"kind": "inlineDocumentTemplate", "inline": "x", "documentTemplateMaxBytes": 0}}),
            400,
            "invalid_render_template",
            "Invalid value at `.template.documentTemplateMaxBytes`: a non-zero integer value lower than `18446744073709551615` was expected, but found a zero",
        ),
        (
            inline(json!({"kind": "bad"})),
            400,
            "invalid_render_input",
            "Unknown value `bad` at `.input.kind`: expected one of `indexDocument`, `inlineDocument`, `inlineSearch`",
        ),
        (
            inline(json!({})),
            400,
            "invalid_render_input",
            "Missing field `kind` inside `.input`",
        ),
        (
            inline(json!("a")),
            400,
            "invalid_render_input",
            "Invalid value type at `.input`: expected an object, but found a string: `\"a\"`",
        ),
        (
            inline(json!({"kind": "inlineDocument", "inline": {}, "id": 1})),
            400,
            "invalid_render_input",
            "Invalid value type at `.input.id`: expected a string, but found a positive integer: `1`",
        ),
        (
            json!({"template": {"kind": "documentTemplate", "embedder": "test"}}),
            400,
            "invalid_render_template",
            "error while fetching template: parameter `index_uid` missing for kind `documentTemplate`",
        ),
        (
            json!({"template": {"kind": "documentTemplate", "indexUid": "dogs"}}),
            400,
            "invalid_render_template",
            "error while fetching template: parameter `embedder` missing for kind `documentTemplate`",
        ),
        (
            json!({"template": {"kind": "documentTemplate", "embedder": "t", "fragment": "x", "inline": "y"}}),
            400,
            "invalid_render_template",
            "error while fetching template: parameter `fragment` disallowed for kind `documentTemplate`",
        ),
        (
            json!({"template": {"kind": "chatDocumentTemplate", "indexUid": "dogs", "embedder": "x"}}),
            400,
            "invalid_render_template",
            "error while fetching template: parameter `embedder` disallowed for kind `chatDocumentTemplate`",
        ),
        (
            json!({"template": {"kind": "indexingFragment", "indexUid": "dogs", "embedder": "rest"}}),
            400,
            "invalid_render_template",
            "error while fetching template: parameter `fragment` missing for kind `indexingFragment`",
        ),
        (
            json!({"template": {"kind": "searchFragment", "indexUid": "dogs", "embedder": "rest", "fragment": "f", "documentTemplateMaxBytes": 3}}),
            400,
            "invalid_render_template",
            "error while fetching template: parameter `document_template_max_bytes` disallowed for kind `searchFragment`",
        ),
        (
            json!({"template": {"kind": "inlineDocumentTemplate", "inline": null}}),
            400,
            "invalid_render_template",
            "error while fetching template: parameter `inline` missing for kind `inlineDocumentTemplate`",
        ),
        (
            json!({"template": {"kind": "inlineFragment", "inline": "x", "fragment": "f"}}),
            400,
            "invalid_render_template",
            "error while fetching template: parameter `fragment` disallowed for kind `inlineFragment`",
        ),
        (
            json!({"template": {"kind": "inlineDocumentTemplate", "inline": 1}}),
            400,
            "invalid_render_template",
            "error while fetching template: inline document templates must be strings",
        ),
        (
            json!({"template": {"kind": "inlineDocumentTemplate", "inline": "{{ doc.name"}}),
            400,
            "template_parsing_error",
            "error while fetching template: user error: cannot parse template: liquid:  --> 1:4\n  |\n1 | {{ doc.name\n  |    ^---\n  |\n  = expected Literal\n",
        ),
        (
            json!({"template": {"kind": "inlineFragment", "inline": {"a": ["{{ q"]}}}),
            400,
            "template_parsing_error",
            "error while fetching template: in ``.a[0]``, error while parsing template: liquid:  --> 1:4\n  |\n1 | {{ q\n  |    ^---\n  |\n  = expected Literal\n",
        ),
        (
            inline(json!({"kind": "inlineDocument", "inline": {}, "id": "1"})),
            400,
            "invalid_render_input",
            "error while fetching input: parameter `id` disallowed for kind `inlineDocument`",
        ),
        (
            inline(json!({"kind": "inlineDocument"})),
            400,
            "invalid_render_input",
            "error while fetching input: parameter `inline` missing for kind `inlineDocument`",
        ),
        (
            inline(json!({"kind": "indexDocument", "id": "1"})),
            400,
            "invalid_render_input",
            "error while fetching input: parameter `indexUid` missing for kind `indexDocument`",
        ),
        (
            inline(
                json!({"kind": "inlineDocument", "inline": "that's not an object, that's a string"}),
            ),
            400,
            "invalid_render_input",
            "error while fetching input: parsing inline document: invalid type: string \"that's not an object, that's a string\", expected a map at line 1 column 39\n  - Note: the inline document must be a JSON map",
        ),
        (
            inline(json!({"kind": "inlineSearch", "inline": [1]})),
            400,
            "invalid_render_input",
            "error while fetching input: parsing inline search: invalid type: sequence, expected a map at line 1 column 0\n  - Note: the inline search query must be a JSON map containing `q` and/or `media`",
        ),
        (
            inline(json!({"kind": "inlineSearch", "inline": {"q": 1}})),
            400,
            "invalid_render_input",
            "error while fetching input: `q` is not a string",
        ),
        (
            inline(json!({"kind": "inlineSearch", "id": "1", "inline": {}})),
            400,
            "invalid_render_input",
            "error while fetching input: parameter `id` disallowed for kind `inlineSearch`",
        ),
    ]
}

#[test]
fn every_error_answers_as_meilisearch_1_50_does() {
    let embedder = Embedder::start();
    let server = fixture(&embedder);
    for (body, status, code, message) in fixture_errors().into_iter().chain(request_errors()) {
        assert_error(&render(&server, &body), status, code, message);
    }
    // The kinds' own features, each checked before the kind's fields.
    set_features(
        &server,
        json!({"multimodal": false, "chatCompletions": false}),
    );
    let multimodal = |action: &str| {
        format!(
            "{action} requires enabling the `multimodal` experimental feature. See https://github.com/orgs/meilisearch/discussions/846"
        )
    };
    let gated = [
        (
            json!({"template": {"kind": "chatDocumentTemplate"}}),
            "error while fetching template: accessing chat settings requires enabling the `chat completions` experimental feature. See https://github.com/orgs/meilisearch/discussions/835".to_owned(),
        ),
        (
            json!({"template": {"kind": "indexingFragment"}}),
            format!("error while fetching template: {}", multimodal("accessing fragments")),
        ),
        (
            json!({"template": {"kind": "searchFragment", "indexUid": "nope"}}),
            format!("error while fetching template: {}", multimodal("accessing fragments")),
        ),
        (
            json!({"template": {"kind": "inlineFragment", "indexUid": "dogs"}}),
            format!("error while fetching template: {}", multimodal("rendering an inline fragment")),
        ),
        (
            json!({"template": {"kind": "inlineDocumentTemplate", "inline": "x"},
                   "input": {"kind": "inlineSearch", "indexUid": "dogs", "id": "1"}}),
            format!("error while fetching input: {}", multimodal("rendering search")),
        ),
    ];
    for (body, message) in gated {
        assert_error(
            &render(&server, &body),
            400,
            "feature_not_enabled",
            &message,
        );
    }
    // The input's index is opened before its kind's gate.
    let missing = json!({"template": {"kind": "inlineDocumentTemplate", "inline": "x"},
                         "input": {"kind": "inlineSearch", "indexUid": "nope"}});
    assert_error(
        &render(&server, &missing),
        404,
        "index_not_found",
        "Cannot open index `nope`: Index `nope` not found.",
    );
}

fn create_key(server: &Server, actions: Value, indexes: Value) -> String {
    let body = json!({"actions": actions, "indexes": indexes, "expiresAt": null});
    let response = server.send("POST", "/keys", Some(&body));
    assert_eq!(response.status, 201, "{}", response.text());
    response.json()["key"]
        .as_str()
        .expect("a created key has its key string")
        .to_owned()
}

#[test]
fn keys_need_both_actions_and_every_index_the_body_names() {
    let embedder = Embedder::start();
    let server = fixture(&embedder);
    let inline = json!({"template": {"kind": "inlineDocumentTemplate", "inline": "x"}});
    let dogs = json!({
        "template": {"kind": "documentTemplate", "indexUid": "dogs", "embedder": "tmpl"},
        "input": {"kind": "indexDocument", "indexUid": "dogs", "id": "1"}
    });
    let dogs_and_books = json!({
        "template": {"kind": "documentTemplate", "indexUid": "dogs", "embedder": "tmpl"},
        "input": {"kind": "indexDocument", "indexUid": "books", "id": "b1"}
    });
    let books_template = json!({"template": {"kind": "chatDocumentTemplate", "indexUid": "books"}});
    // An index the key does not reach is refused before it is looked for, and so is an
    // index an inline kind names (which that kind refuses afterwards).
    let missing =
        json!({"template": {"kind": "documentTemplate", "indexUid": "nope", "embedder": "x"}});
    let inline_naming_books = json!({
        "template": {"kind": "inlineDocumentTemplate", "inline": "x"},
        "input": {"kind": "inlineDocument", "indexUid": "books", "inline": {}}
    });
    let all = [
        &inline,
        &dogs,
        &dogs_and_books,
        &books_template,
        &missing,
        &inline_naming_books,
    ];

    let both_on_dogs = create_key(
        &server,
        json!(["settings.get", "documents.get"]),
        json!(["dogs"]),
    );
    let admitted = [true, true, false, false, false, false];
    for (body, admitted) in all.iter().zip(admitted) {
        let response = render_with(&server, Some(&both_on_dogs), body);
        if admitted {
            assert_eq!(response.status, 200, "{body}: {}", response.text());
        } else {
            assert_error(
                &response,
                403,
                "invalid_api_key",
                "The provided API key is invalid.",
            );
        }
    }
    let reads_on_d = create_key(&server, json!(["*.get"]), json!(["d*"]));
    assert_eq!(render_with(&server, Some(&reads_on_d), &dogs).status, 200);
    let response = render_with(&server, Some(&reads_on_d), &dogs_and_books);
    assert_error(
        &response,
        403,
        "invalid_api_key",
        "The provided API key is invalid.",
    );
    let families = create_key(&server, json!(["settings.*", "documents.*"]), json!(["*"]));
    for body in [&inline, &dogs, &dogs_and_books, &books_template] {
        let response = render_with(&server, Some(&families), body);
        assert_eq!(response.status, 200, "{body}: {}", response.text());
    }
    let response = render_with(&server, Some(&families), &missing);
    assert_eq!(response.status, 404, "{}", response.text());
    // One of the two actions is not enough, nor is `search`.
    for actions in [
        json!(["settings.get"]),
        json!(["documents.get"]),
        json!(["search"]),
    ] {
        let key = create_key(&server, actions.clone(), json!(["*"]));
        for body in all {
            let response = render_with(&server, Some(&key), body);
            assert_error(
                &response,
                403,
                "invalid_api_key",
                "The provided API key is invalid.",
            );
        }
    }
    assert_error(
        &render_with(&server, None, &inline),
        401,
        "missing_authorization_header",
        "The Authorization header is missing. It must use the bearer authorization method.",
    );
    assert_error(
        &render_with(&server, Some("not-a-key"), &inline),
        403,
        "invalid_api_key",
        "The provided API key is invalid.",
    );
    // The key is checked before the body.
    let response = server.raw(&json_request("POST", "/render-template", None, "{"));
    assert_eq!(response.status, 401, "{}", response.text());
}
