//! Embedder settings through raw HTTP, checked beside Meilisearch 1.50: the enqueue-time
//! refusals (code, type, status, message) of every field type, every source's allowed and
//! mandatory fields and the composite nesting rules; the checks a `settingsUpdate` task runs
//! on the merged embedder (the task fails whole and changes nothing); the `binaryQuantized`
//! one-way rule; the source-change merge rule; and the read view of each source.

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]

use crate::common;

use common::{MASTER_KEY, Options, Server};
use serde_json::{Value, json};

/// The embedders sub-route of the test index.
const EMBEDDERS: &str = "/indexes/movies/settings/embedders";
/// Meilisearch's default embedder document template.
const DEFAULT_TEMPLATE: &str = "{% for field in fields %}{% if field.is_searchable and field.value != nil %}{{ field.name }}: {{ field.value }}\n{% endif %}{% endfor %}";
/// The note listing `userProvided`'s fields.
const USER_PROVIDED_FIELDS: &str = "\n  - note: available fields for source `userProvided`: `source`, `dimensions`, `distribution`, `binaryQuantized`";

/// A server with a master key that never downloads a `huggingFace` model (a test here
/// must not fetch one from the real hub when the machine is online).
fn server() -> Server {
    Server::start_with(Options {
        master_key: Some(MASTER_KEY.to_owned()),
        environment: vec![("HF_HUB_OFFLINE".to_owned(), "1".to_owned())],
        ..Options::default()
    })
}

fn composite_server() -> Server {
    let server = server();
    let response = server.send(
        "PATCH",
        "/experimental-features",
        Some(&json!({ "compositeEmbedders": true })),
    );
    assert_eq!(response.status, 200, "{}", response.text());
    server
}

/// Asserts `body` on `path` is refused at enqueue with `code` and `message`.
fn assert_refused_at(server: &Server, path: &str, body: Value, code: &str, message: &str) {
    let response = server.send("PATCH", path, Some(&body));
    assert_eq!(response.status, 400, "{body}: {}", response.text());
    let error = response.json();
    assert_eq!(error["message"], message, "{body}");
    assert_eq!(error["code"], code, "{body}");
    assert_eq!(error["type"], "invalid_request", "{body}");
    assert_eq!(
        error["link"],
        format!("https://docs.meilisearch.com/errors#{code}"),
        "{body}"
    );
}

fn assert_refused(server: &Server, body: Value, message: &str) {
    assert_refused_at(
        server,
        EMBEDDERS,
        body,
        "invalid_settings_embedders",
        message,
    );
}

/// Sends an embedders update and answers its finished task.
fn apply(server: &Server, body: Value) -> Value {
    let response = server.send("PATCH", EMBEDDERS, Some(&body));
    assert_eq!(response.status, 202, "{body}: {}", response.text());
    let uid = response.json()["taskUid"].as_u64().expect("a task uid");
    server.wait_task(uid)
}

fn assert_succeeds(server: &Server, body: Value) {
    let task = apply(server, body.clone());
    assert_eq!(task["status"], "succeeded", "{body}: {task}");
}

fn embedders(server: &Server) -> Value {
    let response = server.send("GET", EMBEDDERS, None);
    assert_eq!(response.status, 200, "{}", response.text());
    response.json()
}

/// Asserts the task of `body` fails with `invalid_settings_embedders` and `message` (after
/// the index prefix), leaving the embedders as they were.
fn assert_task_fails(server: &Server, body: Value, message: &str) {
    let before = embedders(server);
    let task = apply(server, body.clone());
    assert_eq!(task["status"], "failed", "{body}: {task}");
    assert_eq!(
        task["error"]["code"], "invalid_settings_embedders",
        "{task}"
    );
    assert_eq!(task["error"]["type"], "invalid_request", "{task}");
    assert_eq!(
        task["error"]["message"],
        format!("Index `movies`: {message}"),
        "{body}"
    );
    assert_eq!(embedders(server), before, "{body} changed the embedders");
}

#[test]
fn field_types_are_refused_at_enqueue_with_deserialization_messages() {
    let server = server();
    let cases = [
        (
            json!({"a": {"source": "userProvided", "dimensions": "x"}}),
            "Invalid value type at `.a.dimensions`: expected a positive integer, but found a string: `\"x\"`",
        ),
        (
            json!({"a": {"source": "userProvided", "dimensions": -1}}),
            "Invalid value type at `.a.dimensions`: expected a positive integer, but found a negative integer: `-1`",
        ),
        (
            json!({"a": {"source": "userProvided", "dimensions": 1.5}}),
            "Invalid value type at `.a.dimensions`: expected a positive integer, but found a number: `1.5`",
        ),
        (
            json!({"a": {"source": "userProvided", "dimensions": 3, "binaryQuantized": "yes"}}),
            "Invalid value type at `.a.binaryQuantized`: expected a boolean, but found a string: `\"yes\"`",
        ),
        (
            json!({"a": {"source": "userProvided", "dimensions": 3, "distribution": {"mean": 2, "sigma": 0.1}}}),
            "Invalid value at `.a.distribution`: the distribution mean must be in the range [0, 1], got 2",
        ),
        (
            json!({"a": {"source": "userProvided", "dimensions": 3, "distribution": {"mean": 0.5}}}),
            "Missing field `sigma` inside `.a.distribution`",
        ),
        (
            json!({"a": {"source": "userProvided", "dimensions": 3, "distribution": {"mean": 0.5, "sigma": "a"}}}),
            "Invalid value type at `.a.distribution.sigma`: expected a number, but found a string: `\"a\"`",
        ),
        (
            json!({"a": {"source": "userProvided", "dimensions": 3, "distribution": {"mean": 0.5, "sigma": 0.2, "x": 1}}}),
            "Unknown field `x` inside `.a.distribution`: expected one of `mean`, `sigma`",
        ),
        (
            json!({"a": {"source": "userProvided", "dimensions": 3, "distribution": 5}}),
            "Invalid value type at `.a.distribution`: expected an object, but found a positive integer: `5`",
        ),
        (
            json!({"a": {"source": "huggingFace", "pooling": "foo"}}),
            "Unknown value `foo` at `.a.pooling`: expected one of `useModel`, `forceCls`, `forceMean`",
        ),
        (
            json!({"a": {"source": "huggingFace", "pooling": 3}}),
            "Invalid value type at `.a.pooling`: expected a string, but found a positive integer: `3`",
        ),
        (
            json!({"a": {"source": "huggingFace", "model": 3}}),
            "Invalid value type at `.a.model`: expected a string, but found a positive integer: `3`",
        ),
        (
            json!({"a": {"source": "openAi", "documentTemplateMaxBytes": "a"}}),
            "Invalid value type at `.a.documentTemplateMaxBytes`: expected a positive integer, but found a string: `\"a\"`",
        ),
        (
            json!({"a": {"source": "openAi", "url": 3}}),
            "Invalid value type at `.a.url`: expected a string, but found a positive integer: `3`",
        ),
        (
            json!({"a": {"source": "rest", "headers": {"a": 3}}}),
            "Invalid value type at `.a.headers.a`: expected a string, but found a positive integer: `3`",
        ),
        (
            json!({"a": {"source": "rest", "headers": []}}),
            "Invalid value type at `.a.headers`: expected an object, but found an array: `[]`",
        ),
        (
            json!({"a": {"source": 3}}),
            "Invalid value type at `.a.source`: expected a string, but found a positive integer: `3`",
        ),
        (
            json!({"a": {"source": "foo"}}),
            "Unknown value `foo` at `.a.source`: expected one of `openAi`, `huggingFace`, `ollama`, `userProvided`, `rest`, `composite`",
        ),
        (
            json!({"a": {"foo": 1}}),
            "Unknown field `foo` inside `.a`: expected one of `source`, `model`, `revision`, `pooling`, `apiKey`, `dimensions`, `binaryQuantized`, `documentTemplate`, `documentTemplateMaxBytes`, `url`, `indexingFragments`, `searchFragments`, `request`, `response`, `headers`, `searchEmbedder`, `indexingEmbedder`, `distribution`",
        ),
        (
            json!({"a": 3}),
            "Invalid value type at `.a`: expected an object, but found a positive integer: `3`",
        ),
        (
            json!({"a": {"source": "openAi", "documentTemplate": 3}}),
            "Invalid value type at `.a.documentTemplate`: expected a string, but found a positive integer: `3`",
        ),
        (
            json!({"a": {"source": "openAi", "apiKey": 3}}),
            "Invalid value type at `.a.apiKey`: expected a string, but found a positive integer: `3`",
        ),
    ];
    for (body, message) in cases {
        assert_refused(&server, body, message);
    }
    assert_refused_at(
        &server,
        "/indexes/movies/settings",
        json!({"embedders": {"a": {"source": "userProvided", "dimensions": "x"}}}),
        "invalid_settings_embedders",
        "Invalid value type at `.embedders.a.dimensions`: expected a positive integer, but found a string: `\"x\"`",
    );
}

#[test]
fn source_rules_and_value_checks_are_refused_at_enqueue() {
    let server = server();
    let cases = [
        (
            json!({"a": {"source": "userProvided", "dimensions": 0}}),
            "`.embedders.a.dimensions`: `dimensions` cannot be zero".to_owned(),
        ),
        (
            json!({"a": {"source": "openAi", "documentTemplate": "x", "documentTemplateMaxBytes": 0}}),
            "`.embedders.a.documentTemplateMaxBytes`: `documentTemplateMaxBytes` cannot be zero"
                .to_owned(),
        ),
        (
            json!({"a": {"source": "openAi", "url": "not a url"}}),
            "`.embedders.a.url`: could not parse `not a url`: relative URL without a base".to_owned(),
        ),
        (
            json!({"a": {"source": "userProvided", "documentTemplate": "x", "dimensions": 3}}),
            format!(
                "`.embedders.a`: Field `documentTemplate` unavailable for source `userProvided`.\n  - note: `documentTemplate` is available for sources: `openAi`, `huggingFace`, `ollama`, `rest`{USER_PROVIDED_FIELDS}"
            ),
        ),
        (
            json!({"a": {"source": "userProvided", "dimensions": 3, "documentTemplateMaxBytes": 5}}),
            format!(
                "`.embedders.a`: Field `documentTemplateMaxBytes` unavailable for source `userProvided`.\n  - note: `documentTemplateMaxBytes` is available for sources: `openAi`, `huggingFace`, `ollama`, `rest`{USER_PROVIDED_FIELDS}"
            ),
        ),
        (
            json!({"a": {"source": "userProvided", "dimensions": 3, "apiKey": null}}),
            format!(
                "`.embedders.a`: Field `apiKey` unavailable for source `userProvided`.\n  - note: `apiKey` is available for sources: `openAi`, `ollama`, `rest`{USER_PROVIDED_FIELDS}"
            ),
        ),
        (
            json!({"a": {"source": "huggingFace", "apiKey": "x"}}),
            "`.embedders.a`: Field `apiKey` unavailable for source `huggingFace`.\n  - note: `apiKey` is available for sources: `openAi`, `ollama`, `rest`\n  - note: available fields for source `huggingFace`: `source`, `model`, `revision`, `pooling`, `documentTemplate`, `documentTemplateMaxBytes`, `distribution`, `binaryQuantized`".to_owned(),
        ),
        (
            json!({"a": {"source": "userProvided"}}),
            "`.embedders.a`: Missing field `dimensions` (note: this field is mandatory for source `userProvided`)".to_owned(),
        ),
        (
            json!({"a": {"source": "userProvided", "dimensions": null}}),
            "`.embedders.a`: Missing field `dimensions` (note: this field is mandatory for source `userProvided`)".to_owned(),
        ),
        (
            json!({"a": {"source": "rest"}}),
            "`.embedders.a`: Missing field `url` (note: this field is mandatory for source `rest`)"
                .to_owned(),
        ),
        (
            json!({"a": {"source": "rest", "url": "http://x.com"}}),
            "`.embedders.a`: Missing field `request` (note: this field is mandatory for source `rest`)"
                .to_owned(),
        ),
        (
            json!({"a": {"source": "ollama"}}),
            "`.embedders.a`: Missing field `model` (note: this field is mandatory for source `ollama`)"
                .to_owned(),
        ),
        (
            json!({"a": {"source": "openAi", "model": "foo"}}),
            "`.embedders.a.model`: Invalid model `foo` for OpenAI. Supported models: [\"text-embedding-ada-002\", \"text-embedding-3-small\", \"text-embedding-3-large\"]".to_owned(),
        ),
        (
            json!({"a": {"source": "openAi", "model": "text-embedding-ada-002", "dimensions": 12}}),
            "`.embedders.a.dimensions`: Model `text-embedding-ada-002` does not support overriding its native dimensions of 1536. Found 12".to_owned(),
        ),
        (
            json!({"a": {"source": "openAi", "model": "text-embedding-3-large", "dimensions": 4000}}),
            "`.embedders.a.dimensions`: Model `text-embedding-3-large` does not support overriding its dimensions to a value higher than 3072. Found 4000".to_owned(),
        ),
    ];
    for (body, message) in cases {
        assert_refused(&server, body, &message);
    }
    assert_refused_at(
        &server,
        "/indexes/movies/settings",
        json!({"embedders": {"a": {"source": "userProvided"}}}),
        "invalid_settings_embedders",
        "`.embedders.a`: Missing field `dimensions` (note: this field is mandatory for source `userProvided`)",
    );
    let rest = |request: Value, response: Value| json!({"a": {"source": "rest", "url": "http://x.com", "request": request, "response": response}});
    assert_refused_at(
        &server,
        EMBEDDERS,
        rest(json!({"input": "x"}), json!({"data": "{{embedding}}"})),
        "vector_embedding_error",
        "Error while generating embeddings: user error: in `request`: \"{{text}}\" not found\n  - Note: this template is using a document template, and so expects to contain the placeholder \"{{text}}\" rather than \"{{fragment}}\"",
    );
    assert_refused_at(
        &server,
        EMBEDDERS,
        rest(json!({"input": "{{text}}"}), json!({"data": "x"})),
        "vector_embedding_error",
        "Error while generating embeddings: user error: in `response`: \"{{embedding}}\" not found",
    );
}

#[test]
fn composite_embedders_are_gated_and_their_sub_embedders_checked() {
    let server = server();
    let composite = json!({"k": {"source": "composite", "searchEmbedder": {"source": "openAi"}, "indexingEmbedder": {"source": "openAi"}}});
    assert_refused_at(
        &server,
        EMBEDDERS,
        composite,
        "feature_not_enabled",
        "using `\"composite\"` as source requires enabling the `composite embedders` experimental feature. See https://github.com/orgs/meilisearch/discussions/816",
    );
    let server = composite_server();
    let indexing_open_ai = json!({"source": "openAi"});
    let with_search = |search: Value| json!({"k": {"source": "composite", "searchEmbedder": search, "indexingEmbedder": indexing_open_ai}});
    let cases = [
        (
            json!({"k": {"source": "composite"}}),
            "`.embedders.k`: Missing field `searchEmbedder` (note: this field is mandatory for source `composite`)",
        ),
        (
            json!({"k": {"source": "composite", "searchEmbedder": {"source": "openAi"}}}),
            "`.embedders.k`: Missing field `indexingEmbedder` (note: this field is mandatory for source `composite`)",
        ),
        (
            with_search(json!({"source": "userProvided", "dimensions": 3})),
            "`.embedders.k.searchEmbedder.source`: Source `userProvided` is not available in a nested embedder",
        ),
        (
            with_search(json!({"model": "x"})),
            "`.embedders.k.searchEmbedder`: Missing field `source`.\n  - note: this field is mandatory for nested embedders",
        ),
        (
            with_search(json!({"source": "openAi", "documentTemplate": "x"})),
            "`.embedders.k.searchEmbedder`: Field `documentTemplate` unavailable for source `openAi` for the search embedder.\n  - note: available fields for source `openAi` for the search embedder: `source`, `model`, `apiKey`, `dimensions`, `url`\n  - note: `documentTemplate` is available when source `openAi` is not for the search embedder",
        ),
        (
            with_search(json!({"source": "openAi", "binaryQuantized": true})),
            "`.embedders.k.searchEmbedder`: Field `binaryQuantized` unavailable for source `openAi` for the search embedder.\n  - note: available fields for source `openAi` for the search embedder: `source`, `model`, `apiKey`, `dimensions`, `url`\n  - note: `binaryQuantized` is available when source `openAi` is not for the search embedder",
        ),
        (
            with_search(json!({"source": "openAi", "foo": 1})),
            "Unknown field `foo` inside `.k.searchEmbedder`: expected one of `source`, `model`, `revision`, `pooling`, `apiKey`, `dimensions`, `documentTemplate`, `documentTemplateMaxBytes`, `url`, `indexingFragments`, `searchFragments`, `request`, `response`, `headers`, `distribution`, `binaryQuantized`, `searchEmbedder`, `indexingEmbedder`",
        ),
        (
            with_search(json!({"source": "openAi", "dimensions": "x"})),
            "Invalid value type at `.k.searchEmbedder.dimensions`: expected a positive integer, but found a string: `\"x\"`",
        ),
        (
            with_search(json!(3)),
            "Invalid value type at `.k.searchEmbedder`: expected an object, but found a positive integer: `3`",
        ),
        (
            with_search(json!({"source": "openAi", "searchEmbedder": {"a": 1}})),
            "`.embedders.k.searchEmbedder`: Unknown field `a`: expected one of `source`, `model`, `revision`, `pooling`, `apiKey`, `dimensions`, `documentTemplate`, `documentTemplateMaxBytes`, `url`, `indexingFragments`, `searchFragments`, `request`, `response`, `headers`, `distribution`, `binaryQuantized`, `searchEmbedder`, `indexingEmbedder`\n  - note: nesting embedders in `searchEmbedder` is not allowed",
        ),
        (
            json!({"k": {"source": "composite", "searchEmbedder": {"source": "openAi"}, "indexingEmbedder": {"source": "openAi", "searchEmbedder": {}}}}),
            "`.embedders.k.indexingEmbedder`: Field `searchEmbedder` unavailable for source `openAi` for the indexing embedder.\n  - note: `searchEmbedder` is available for sources: `composite`\n  - note: available fields for source `openAi` for the indexing embedder: `source`, `model`, `apiKey`, `dimensions`, `documentTemplate`, `documentTemplateMaxBytes`, `url`",
        ),
        (
            json!({"k": {"source": "composite", "searchEmbedder": {"source": "openAi"}, "indexingEmbedder": {"source": "ollama"}}}),
            "`.embedders.k`: Missing field `model` (note: this field is mandatory for source `ollama`)",
        ),
        (
            json!({"k": {"source": "openAi", "searchEmbedder": {"source": "openAi"}}}),
            "`.embedders.k`: Field `searchEmbedder` unavailable for source `openAi`.\n  - note: `searchEmbedder` is available for sources: `composite`\n  - note: available fields for source `openAi`: `source`, `model`, `apiKey`, `dimensions`, `documentTemplate`, `documentTemplateMaxBytes`, `url`, `distribution`, `binaryQuantized`",
        ),
    ];
    for (body, message) in cases {
        assert_refused(&server, body, message);
    }
}

#[test]
fn merged_embedder_checks_fail_the_task_and_change_nothing() {
    let server = server();
    assert_succeeds(
        &server,
        json!({"u": {"source": "userProvided", "dimensions": 3}}),
    );
    assert_task_fails(
        &server,
        json!({"u": {"documentTemplate": "x"}}),
        &format!(
            "`.embedders.u`: Field `documentTemplate` unavailable for source `userProvided`.\n  - note: `documentTemplate` is available for sources: `openAi`, `huggingFace`, `ollama`, `rest`{USER_PROVIDED_FIELDS}"
        ),
    );
    assert_task_fails(
        &server,
        json!({"o3": {"dimensions": 5000}}),
        "`.embedders.o3.dimensions`: Model `text-embedding-3-small` does not support overriding its dimensions to a value higher than 1536. Found 5000",
    );
    assert_succeeds(
        &server,
        json!({"o": {"apiKey": "sk-abcdefghijklmnopqrstuvwxyz123456", "dimensions": 4}}),
    );
    // A source change keeps `apiKey`, which `huggingFace` refuses: the whole update fails,
    // the other embedder of the same update included.
    assert_task_fails(
        &server,
        json!({"o": {"source": "huggingFace"}, "other": {"source": "userProvided", "dimensions": 2}}),
        "`.embedders.o`: Field `apiKey` unavailable for source `huggingFace`.\n  - note: `apiKey` is available for sources: `openAi`, `ollama`, `rest`\n  - note: available fields for source `huggingFace`: `source`, `model`, `revision`, `pooling`, `documentTemplate`, `documentTemplateMaxBytes`, `distribution`, `binaryQuantized`",
    );
    assert_task_fails(
        &server,
        json!({"o": {"model": "text-embedding-ada-002"}}),
        "`.embedders.o.dimensions`: Model `text-embedding-ada-002` does not support overriding its native dimensions of 1536. Found 4",
    );
    let settings = server.send("GET", "/indexes/movies/settings", None).json();
    assert_eq!(settings["embedders"], embedders(&server));
}

#[test]
fn binary_quantization_cannot_be_disabled() {
    let server = server();
    assert_succeeds(
        &server,
        json!({"u": {"source": "userProvided", "dimensions": 3, "binaryQuantized": true}}),
    );
    assert_task_fails(
        &server,
        json!({"u": {"binaryQuantized": false}}),
        "`.embedders.u.binaryQuantized`: Cannot disable the binary quantization.\n - Note: Binary quantization is a lossy operation that cannot be reverted.\n - Hint: Add a new embedder that is non-quantized and regenerate the vectors.",
    );
    assert_eq!(
        embedders(&server),
        json!({"u": {"source": "userProvided", "dimensions": 3, "binaryQuantized": true}})
    );
    assert_succeeds(&server, json!({"u": {"binaryQuantized": true}}));
}

#[test]
fn a_source_change_drops_the_fields_the_new_source_resets() {
    let server = server();
    assert_succeeds(
        &server,
        json!({"o": {"dimensions": 4, "url": "https://example.com/v1", "documentTemplate": "{{doc.a}}", "distribution": {"mean": 0.5, "sigma": 0.2}}}),
    );
    assert_succeeds(&server, json!({"o": {"source": "openAi"}}));
    assert_eq!(embedders(&server)["o"]["dimensions"], 4, "same source");
    assert_succeeds(
        &server,
        json!({"o": {"source": "ollama", "model": "nomic", "dimensions": 3}}),
    );
    assert_eq!(
        embedders(&server)["o"],
        json!({"source": "ollama", "model": "nomic", "dimensions": 3, "documentTemplate": "{{doc.a}}", "documentTemplateMaxBytes": 400, "distribution": {"mean": 0.5, "sigma": 0.2}})
    );
    assert_succeeds(
        &server,
        json!({"o": {"source": "userProvided", "dimensions": 2}}),
    );
    assert_eq!(
        embedders(&server)["o"],
        json!({"source": "userProvided", "dimensions": 2, "distribution": {"mean": 0.5, "sigma": 0.2}})
    );
}

#[test]
fn the_read_view_shows_each_source_with_meilisearch_defaults() {
    let server = composite_server();
    assert_succeeds(
        &server,
        json!({
            "openDefault": {},
            "open": {"apiKey": "sk-abcdefghijklmnopqrstuvwxyz123456", "url": "https://example.com/v1", "dimensions": 4, "documentTemplateMaxBytes": 0, "binaryQuantized": false},
            "user": {"source": "userProvided", "dimensions": 3, "distribution": {"mean": 0.3, "sigma": 0.4}},
            "rest": {"source": "rest", "url": "http://127.0.0.1:1/x", "request": {"input": "{{text}}"}, "response": {"data": "{{embedding}}"}, "apiKey": "short", "dimensions": 3},
            "ollama": {"source": "ollama", "model": "nomic", "dimensions": 3},
        }),
    );
    let view = embedders(&server);
    let expected = json!({
        "ollama": {"source": "ollama", "model": "nomic", "dimensions": 3, "documentTemplate": DEFAULT_TEMPLATE, "documentTemplateMaxBytes": 400},
        "open": {"source": "openAi", "model": "text-embedding-3-small", "apiKey": "sk-abXXXXXX...", "dimensions": 4, "binaryQuantized": false, "documentTemplate": DEFAULT_TEMPLATE, "documentTemplateMaxBytes": 400, "url": "https://example.com/v1"},
        "openDefault": {"source": "openAi", "model": "text-embedding-3-small", "documentTemplate": DEFAULT_TEMPLATE, "documentTemplateMaxBytes": 400},
        "rest": {"source": "rest", "apiKey": "XXX...", "dimensions": 3, "documentTemplate": DEFAULT_TEMPLATE, "documentTemplateMaxBytes": 400, "url": "http://127.0.0.1:1/x", "request": {"input": "{{text}}"}, "response": {"data": "{{embedding}}"}, "headers": {}},
        "user": {"source": "userProvided", "dimensions": 3, "distribution": {"mean": 0.3, "sigma": 0.4}},
    });
    assert_eq!(view, expected);
    // Field order is part of the answer.
    let text = server.send("GET", EMBEDDERS, None).text();
    assert_eq!(
        text,
        serde_json::to_string(&expected).expect("a JSON value serializes")
    );
    let settings = server.send("GET", "/indexes/movies/settings", None).json();
    assert_eq!(settings["embedders"], expected);
}

/// Sources whose embeddings cannot be computed when the settings change fail the task, as
/// Meilisearch fails it without its model or embedder: a `huggingFace` model (not in the
/// cache, and not downloaded: the server is offline), and a remote embedder whose dimensions must be found by embedding a test
/// text it cannot reach (a loopback address outside `--experimental-allowed-ip-networks`).
#[test]
fn embedders_that_cannot_embed_fail_the_settings_task() {
    let server = composite_server();
    for embedder in [
        json!({"source": "huggingFace"}),
        json!({"source": "composite", "searchEmbedder": {"source": "openAi", "apiKey": "abcdefghijkl"}, "indexingEmbedder": {"source": "huggingFace", "documentTemplate": "{{doc.a}}"}}),
        json!({"source": "rest", "url": "http://127.0.0.1:1/x", "request": {"input": "{{text}}"}, "response": {"data": "{{embedding}}"}}),
    ] {
        let task = apply(&server, json!({"e": embedder}));
        assert_eq!(task["status"], "failed", "{task}");
        assert_eq!(task["error"]["code"], "vector_embedding_error", "{task}");
        let message = task["error"]["message"].as_str().expect("a message");
        assert!(message.starts_with("Index `movies`: "), "{message}");
    }
    assert_eq!(embedders(&server), json!({}), "nothing was applied");
}

#[test]
fn a_document_template_that_does_not_parse_is_refused_at_enqueue() {
    let server = server();
    let body = json!({"e": {"source": "rest", "url": "http://127.0.0.1:1/x", "request": {"input": "{{text}}"}, "response": {"data": "{{embedding}}"}, "dimensions": 3, "documentTemplate": "{{ doc.a "}});
    let response = server.send("PATCH", EMBEDDERS, Some(&body));
    assert_eq!(response.status, 400, "{}", response.text());
    let error = response.json();
    assert_eq!(error["code"], "invalid_settings_embedders");
    assert_eq!(
        error["message"],
        "`.embedders.e.documentTemplate`: Invalid template: user error: cannot parse template: liquid:  --> 1:4\n  |\n1 | {{ doc.a \n  |    ^---\n  |\n  = expected Literal\n."
    );
}

#[test]
fn rest_fragments_are_declared_on_both_sides_and_not_beside_a_template() {
    let server = server();
    let response = server.send(
        "PATCH",
        "/experimental-features",
        Some(&json!({ "multimodal": true })),
    );
    assert_eq!(response.status, 200, "{}", response.text());
    let rest = |extra: Value| {
        let mut embedder = json!({"source": "rest", "url": "http://127.0.0.1:1/x", "response": {"data": "{{embedding}}"}, "dimensions": 3, "request": {"input": "{{fragment}}"}});
        for (key, value) in extra.as_object().expect("an object") {
            embedder[key] = value.clone();
        }
        json!({ "m": embedder })
    };
    let fragment = json!({"value": "{{doc.a}}"});
    assert_refused_at(
        &server,
        EMBEDDERS,
        rest(
            json!({"indexingFragments": {"a": fragment}, "searchFragments": {"b": fragment}, "documentTemplate": "x"}),
        ),
        "vector_embedding_error",
        "Error while generating embeddings: user error: cannot pass both fragments and a document template.\n  - Note: 1 fragments declared in `indexingFragments` and 1 fragments declared in `search_fragments_len`.\n  - Hint: remove the declared fragments or remove the `documentTemplate`",
    );
    assert_refused_at(
        &server,
        EMBEDDERS,
        rest(
            json!({"indexingFragments": {"a": fragment}, "searchFragments": {"b": fragment}, "request": {"input": "{{text}}"}}),
        ),
        "vector_embedding_error",
        "Error while generating embeddings: user error: in `request`: \"{{fragment}}\" not found\n  - Note: this template is using fragments, and so expects to contain the placeholder \"{{fragment}}\" rathern than \"{{text}}\"",
    );
    let task = apply(
        &server,
        rest(
            json!({"indexingFragments": {"a": fragment, "b": fragment, "c": fragment, "d": fragment}}),
        ),
    );
    assert_eq!(task["status"], "failed", "{task}");
    assert_eq!(task["error"]["code"], "vector_embedding_error");
    assert_eq!(
        task["error"]["message"],
        "Index `movies`: Error while generating embeddings: user error: inconsistent fragments: `searchFragments` is empty, but `indexingFragments` declares 4 fragments: a, b, c, ...\n - Hint: declare at least one fragment in `searchFragments` or remove fragments from `indexingFragments` by setting them to `null`"
    );
    assert_succeeds(
        &server,
        rest(
            json!({"indexingFragments": {"a": fragment}, "searchFragments": {"b": {"value": "{{q}}"}}}),
        ),
    );
    assert_eq!(
        embedders(&server)["m"],
        json!({"source": "rest", "dimensions": 3, "url": "http://127.0.0.1:1/x", "indexingFragments": {"a": fragment}, "searchFragments": {"b": {"value": "{{q}}"}}, "request": {"input": "{{fragment}}"}, "response": {"data": "{{embedding}}"}, "headers": {}})
    );
}
