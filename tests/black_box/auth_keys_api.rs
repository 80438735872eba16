//! The `/keys` API, black-box: through the official `meilisearch-sdk` client and raw HTTP.
//! Key objects must have Meilisearch's exact shape and key order, key strings must be the
//! HMAC a client library computes, and every error must carry Meilisearch's code and
//! exact message (reference §1.7, §3.2, §4).

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]
#![allow(clippy::unwrap_used)]

use crate::common;

use common::{HttpResponse, MASTER_KEY, Options, Server, json_request, request};
use hmac::{Hmac, Mac};
use meilisearch_sdk::client::Client;
use meilisearch_sdk::key::{Action as SdkAction, KeyBuilder, KeyUpdater, KeysQuery};
use serde_json::{Value, json};
use sha2::Sha256;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// The fields of a key object, in Meilisearch's order.
const KEY_FIELDS: [&str; 9] = [
    "name",
    "description",
    "key",
    "uid",
    "actions",
    "indexes",
    "expiresAt",
    "createdAt",
    "updatedAt",
];

/// Every action in Meilisearch 1.41's declaration order (reference §4.1), as the
/// "expected one of" list of an unknown action names them.
const ACTIONS_IN_ORDER: &str = "`*`, `search`, `documents.*`, `documents.add`, \
`documents.get`, `documents.delete`, `indexes.*`, `indexes.create`, `indexes.get`, \
`indexes.update`, `indexes.delete`, `indexes.swap`, `tasks.*`, `tasks.cancel`, \
`tasks.delete`, `tasks.get`, `settings.*`, `settings.get`, `settings.update`, `stats.*`, \
`stats.get`, `metrics.*`, `metrics.get`, `dumps.*`, `dumps.create`, `snapshots.*`, \
`snapshots.create`, `version`, `keys.create`, `keys.get`, `keys.update`, `keys.delete`, \
`experimental.get`, `experimental.update`, `export`, `network.get`, `network.update`, \
`chatCompletions`, `chats.*`, `chats.get`, `chats.delete`, `chatsSettings.*`, \
`chatsSettings.get`, `chatsSettings.update`, `*.get`, `webhooks.get`, `webhooks.update`, \
`webhooks.delete`, `webhooks.create`, `webhooks.*`, `indexes.compact`, `fields.post`, \
`tasks.compact`, `dynamicSearchRules.get`, `dynamicSearchRules.create`, \
`dynamicSearchRules.update`, `dynamicSearchRules.delete`, `dynamicSearchRules.*`";

const MISSING_MASTER_KEY_MESSAGE: &str = "Meilisearch is running without a master key. To access \
this API endpoint, you must have set a master key at launch.";

fn options() -> Options {
    Options {
        master_key: Some(MASTER_KEY.to_string()),
        ..Options::default()
    }
}

/// The key string a client computes: lowercase hex HMAC-SHA256(master key, uid).
fn client_computed_key(master_key: &str, uid: &str) -> String {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(master_key.as_bytes())
        .expect("new_from_slice succeeds");
    mac.update(uid.as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

fn create(server: &Server, body: Value) -> Value {
    let response = server.send("POST", "/keys", Some(&body));
    assert_eq!(response.status, 201, "{}", response.text());
    response.json()
}

/// Asserts the whole error object: status, message, code, type and link.
fn assert_error(response: &HttpResponse, status: u16, code: &str, kind: &str, message: &str) {
    assert_eq!(response.status, status, "{}", response.text());
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

fn field_order(object: &Value) -> Vec<&str> {
    object
        .as_object()
        .expect("as_object finds a value of that type")
        .keys()
        .map(String::as_str)
        .collect()
}

fn parse_date(value: &Value) -> OffsetDateTime {
    OffsetDateTime::parse(
        value.as_str().expect("as_str finds a value of that type"),
        &Rfc3339,
    )
    .expect("parse succeeds")
}

fn future_date() -> String {
    (OffsetDateTime::now_utc() + time::Duration::days(3650))
        .replace_nanosecond(0)
        .expect("replace_nanosecond succeeds")
        .format(&Rfc3339)
        .expect("format succeeds")
}

#[test]
fn create_answers_201_with_the_exact_key_object_in_order() {
    let server = Server::start_with(options());
    let before = OffsetDateTime::now_utc();
    let key = create(
        &server,
        json!({
            "name": "Indexing",
            "description": "Indexing API key",
            "actions": ["documents.add", "*.get", "documents.add"],
            "indexes": ["products", "movies*"],
            "expiresAt": "2050-11-13T00:00:00Z",
        }),
    );
    assert_eq!(field_order(&key), KEY_FIELDS);
    assert_eq!(key["name"], "Indexing");
    assert_eq!(key["description"], "Indexing API key");
    // Actions are answered as given, not normalized.
    assert_eq!(
        key["actions"],
        json!(["documents.add", "*.get", "documents.add"])
    );
    assert_eq!(key["indexes"], json!(["products", "movies*"]));
    assert_eq!(key["expiresAt"], "2050-11-13T00:00:00Z");
    let uid = key["uid"]
        .as_str()
        .expect("as_str finds a value of that type");
    let parsed = uuid::Uuid::parse_str(uid).expect("parse_str succeeds");
    assert_eq!(parsed.get_version_num(), 4);
    assert_eq!(uid, parsed.hyphenated().to_string());
    assert_eq!(key["key"], client_computed_key(MASTER_KEY, uid));
    let created_at = parse_date(&key["createdAt"]);
    assert_eq!(key["createdAt"], key["updatedAt"]);
    assert!(created_at >= before - time::Duration::seconds(1));
    assert!(created_at <= OffsetDateTime::now_utc() + time::Duration::seconds(1));

    // Optional fields default to null, and every accepted date format is answered as RFC 3339.
    for (given, answered) in [
        ("2050-11-13", "2050-11-13T00:00:00Z"),
        ("2050-11-13 01:02:03", "2050-11-13T01:02:03Z"),
        ("2050-11-13T01:02:03", "2050-11-13T01:02:03Z"),
    ] {
        let key = create(
            &server,
            json!({"actions": ["search"], "indexes": ["*"], "expiresAt": given}),
        );
        assert_eq!(field_order(&key), KEY_FIELDS);
        assert_eq!(key["name"], Value::Null);
        assert_eq!(key["description"], Value::Null);
        assert_eq!(key["expiresAt"], answered, "{given}");
    }
}

#[test]
fn key_string_is_the_hmac_of_the_uid_under_the_master_key() {
    // Known answer from Meilisearch's own test suite: master key `MASTER_KEY`, nil uid.
    let server = Server::start_with(Options {
        master_key: Some("MASTER_KEY".to_string()),
        ..Options::default()
    });
    let response = server.raw(&json_request(
        "POST",
        "/keys",
        Some("MASTER_KEY"),
        r#"{"actions":["search"],"indexes":["dog"],"expiresAt":null,"uid":"00000000-0000-0000-0000-000000000000"}"#,
    ));
    assert_eq!(response.status, 201, "{}", response.text());
    let key = response.json();
    assert_eq!(
        key["key"],
        "aeb94973e0b6e912d94165430bbe87dee91a7c4f891ce19050c3910ec96977e9"
    );
    assert_eq!(
        key["key"],
        client_computed_key("MASTER_KEY", "00000000-0000-0000-0000-000000000000")
    );
    // A uid given in another UUID form is stored hyphenated, and a duplicate is refused.
    let response = server.raw(&json_request(
        "POST",
        "/keys",
        Some("MASTER_KEY"),
        r#"{"actions":["search"],"indexes":["dog"],"expiresAt":null,"uid":"00000000000000000000000000000000"}"#,
    ));
    assert_error(
        &response,
        409,
        "api_key_already_exists",
        "invalid_request",
        "`uid` field value `00000000-0000-0000-0000-000000000000` is already an existing API key.",
    );
}

#[tokio::test]
async fn sdk_creates_gets_updates_and_deletes_a_key() {
    let server = Server::start_with(options());
    let client = Client::new(server.url(), Some(MASTER_KEY)).expect("new succeeds");
    let expires_at = OffsetDateTime::now_utc() + time::Duration::days(30);
    let mut builder = KeyBuilder::new();
    builder
        .with_name("SDK key")
        .with_description("made by the SDK")
        .with_actions([SdkAction::Search, SdkAction::DocumentsAdd])
        .with_index("movies")
        .with_expires_at(expires_at);
    let created = client
        .create_key(&builder)
        .await
        .expect("create_key succeeds");
    assert_eq!(created.name.as_deref(), Some("SDK key"));
    assert_eq!(created.description.as_deref(), Some("made by the SDK"));
    assert_eq!(
        created.actions,
        vec![SdkAction::Search, SdkAction::DocumentsAdd]
    );
    assert_eq!(created.indexes, vec!["movies".to_string()]);
    assert_eq!(created.expires_at.expect("expires_at succeeds"), expires_at);
    assert_eq!(created.key, client_computed_key(MASTER_KEY, &created.uid));

    // Get by uid and by key string.
    let by_uid = client
        .get_key(&created.uid)
        .await
        .expect("get_key succeeds");
    let by_key = client
        .get_key(&created.key)
        .await
        .expect("get_key succeeds");
    for fetched in [&by_uid, &by_key] {
        assert_eq!(fetched.uid, created.uid);
        assert_eq!(fetched.key, created.key);
        assert_eq!(fetched.created_at, created.created_at);
    }
    let raw_by_key = server.send("GET", &format!("/keys/{}", created.key), None);
    let raw_by_uid = server.send("GET", &format!("/keys/{}", created.uid), None);
    assert_eq!(raw_by_key.status, 200);
    assert_eq!(raw_by_key.json(), raw_by_uid.json());
    assert_eq!(field_order(&raw_by_key.json()), KEY_FIELDS);

    // Update name and description only.
    let mut updater = KeyUpdater::new(&created.uid);
    updater
        .with_name("renamed")
        .with_description("new description");
    let updated = client
        .update_key(&updater)
        .await
        .expect("update_key succeeds");
    assert_eq!(updated.name.as_deref(), Some("renamed"));
    assert_eq!(updated.description.as_deref(), Some("new description"));
    assert_eq!(updated.actions, created.actions);
    assert_eq!(updated.indexes, created.indexes);
    assert_eq!(updated.expires_at, created.expires_at);
    assert_eq!(updated.key, created.key);
    assert_eq!(updated.created_at, created.created_at);
    assert!(updated.updated_at > created.updated_at);

    // The SDK lists newest first.
    let keys = client.get_keys().await.expect("get_keys succeeds");
    assert_eq!(keys.results.len(), 5);
    assert_eq!(keys.results[0].uid, created.uid);
    let mut query = KeysQuery::new();
    query.with_offset(1).with_limit(2);
    let page = client
        .get_keys_with(&query)
        .await
        .expect("get_keys_with succeeds");
    assert_eq!((page.offset, page.limit), (1, 2));
    assert_eq!(
        page.results
            .iter()
            .map(|key| key.name.clone().expect("clone succeeds"))
            .collect::<Vec<_>>(),
        ["Default Search API Key", "Default Admin API Key"]
    );

    // Delete, then the key is gone.
    client
        .delete_key(&created.uid)
        .await
        .expect("delete_key succeeds");
    let error = client.get_key(&created.uid).await.unwrap_err();
    match error {
        meilisearch_sdk::errors::Error::Meilisearch(error) => {
            assert_eq!(
                error.error_code,
                meilisearch_sdk::errors::ErrorCode::ApiKeyNotFound
            );
            assert_eq!(
                error.error_message,
                format!("API key `{}` not found.", created.uid)
            );
        }
        other => panic!("unexpected error {other:?}"),
    }
}

#[test]
fn list_is_newest_first_with_offset_limit_and_total() {
    let server = Server::start_with(options());
    let names = ["first", "second", "third"];
    for name in names {
        create(
            &server,
            json!({"name": name, "actions": ["search"], "indexes": ["*"], "expiresAt": null}),
        );
    }
    let names_of = |page: &Value| -> Vec<String> {
        page["results"]
            .as_array()
            .expect("as_array finds a value of that type")
            .iter()
            .map(|key| {
                key["name"]
                    .as_str()
                    .expect("as_str finds a value of that type")
                    .to_string()
            })
            .collect()
    };
    let page = server.send("GET", "/keys", None);
    assert_eq!(page.status, 200);
    let page = page.json();
    assert_eq!(field_order(&page), ["results", "offset", "limit", "total"]);
    assert_eq!(
        (&page["offset"], &page["limit"], &page["total"]),
        (&json!(0), &json!(20), &json!(7))
    );
    assert_eq!(
        names_of(&page),
        [
            "third",
            "second",
            "first",
            "Default Search API Key",
            "Default Admin API Key",
            "Default Read-Only Admin API Key",
            "Default Chat API Key",
        ]
    );
    for key in page["results"]
        .as_array()
        .expect("as_array finds a value of that type")
    {
        assert_eq!(field_order(key), KEY_FIELDS);
    }
    let page = server.send("GET", "/keys?offset=1&limit=2", None).json();
    assert_eq!(
        (&page["offset"], &page["limit"], &page["total"]),
        (&json!(1), &json!(2), &json!(7))
    );
    assert_eq!(names_of(&page), ["second", "first"]);
    let page = server.send("GET", "/keys?offset=10", None).json();
    assert_eq!(page["results"], json!([]));
    assert_eq!(page["total"], 7);

    assert_error(
        &server.send("GET", "/keys?offset=doggo", None),
        400,
        "invalid_api_key_offset",
        "invalid_request",
        "Invalid value in parameter `offset`: could not parse `doggo` as a positive integer",
    );
    assert_error(
        &server.send("GET", "/keys?limit=-1", None),
        400,
        "invalid_api_key_limit",
        "invalid_request",
        "Invalid value in parameter `limit`: could not parse `-1` as a positive integer",
    );
    assert_error(
        &server.send("GET", "/keys?doggo=no_limit", None),
        400,
        "bad_request",
        "invalid_request",
        "Unknown parameter `doggo`: expected one of `offset`, `limit`",
    );
}

#[test]
fn the_four_default_keys_exist_with_their_names_descriptions_and_actions() {
    let server = Server::start_with(options());
    let page = server.send("GET", "/keys", None).json();
    assert_eq!(page["total"], 4);
    let expected = [
        (
            "Default Search API Key",
            "Use it to search from the frontend",
            json!(["search"]),
        ),
        (
            "Default Admin API Key",
            "Use it for anything that is not a search operation. Caution! Do not expose it on a \
             public frontend",
            json!(["*"]),
        ),
        (
            "Default Read-Only Admin API Key",
            "Use it to read information across the whole database. Caution! Do not expose this \
             key on a public frontend",
            json!(["*.get", "keys.get"]),
        ),
        (
            "Default Chat API Key",
            "Use it to chat and search from the frontend",
            json!(["chatCompletions", "search"]),
        ),
    ];
    let results = page["results"]
        .as_array()
        .expect("as_array finds a value of that type");
    assert_eq!(results.len(), expected.len());
    let mut key_strings = Vec::new();
    for (key, (name, description, actions)) in results.iter().zip(expected) {
        assert_eq!(field_order(key), KEY_FIELDS);
        assert_eq!(key["name"], name);
        assert_eq!(key["description"], description);
        assert_eq!(key["actions"], actions);
        assert_eq!(key["indexes"], json!(["*"]));
        assert_eq!(key["expiresAt"], Value::Null);
        assert_eq!(
            key["key"],
            client_computed_key(
                MASTER_KEY,
                key["uid"]
                    .as_str()
                    .expect("as_str finds a value of that type")
            )
        );
        key_strings.push(
            key["key"]
                .as_str()
                .expect("as_str finds a value of that type")
                .to_string(),
        );
    }
    let status = |path: &str, method: &str, key: &str| {
        let text = if method == "GET" {
            request(method, path, Some(key))
        } else {
            json_request(method, path, Some(key), "{}")
        };
        server.raw(&text).status
    };
    let [search, admin, read_only, chat] = [0, 1, 2, 3].map(|position| &key_strings[position]);
    // The admin key reaches everything, keys included.
    assert_eq!(status("/version", "GET", admin), 200);
    assert_eq!(status("/keys", "GET", admin), 200);
    assert_eq!(status("/experimental-features", "PATCH", admin), 200);
    // The read-only admin key reads, keys included, but changes nothing.
    assert_eq!(status("/version", "GET", read_only), 200);
    assert_eq!(status("/experimental-features", "GET", read_only), 200);
    assert_eq!(status("/keys", "GET", read_only), 200);
    assert_eq!(status("/experimental-features", "PATCH", read_only), 403);
    assert_eq!(status("/keys", "POST", read_only), 403);
    // Search and chat keys reach none of the non-search routes.
    for key in [search, chat] {
        assert_eq!(status("/version", "GET", key), 403);
        assert_eq!(status("/keys", "GET", key), 403);
    }
}

#[test]
fn update_changes_name_and_description_and_nothing_else() {
    let server = Server::start_with(options());
    let key = create(
        &server,
        json!({"name": "n", "description": "d", "actions": ["search"], "indexes": ["a*"], "expiresAt": future_date()}),
    );
    let uid = key["uid"]
        .as_str()
        .expect("as_str finds a value of that type");
    let path = format!("/keys/{uid}");
    // `null` clears a field, an absent field is kept.
    let response = server.send("PATCH", &path, Some(&json!({"name": null})));
    assert_eq!(response.status, 200, "{}", response.text());
    let updated = response.json();
    assert_eq!(field_order(&updated), KEY_FIELDS);
    assert_eq!(updated["name"], Value::Null);
    assert_eq!(updated["description"], "d");
    for field in ["key", "uid", "actions", "indexes", "expiresAt", "createdAt"] {
        assert_eq!(updated[field], key[field], "{field}");
    }
    assert!(parse_date(&updated["updatedAt"]) > parse_date(&key["updatedAt"]));
    // The key string addresses the key too.
    let by_key = format!(
        "/keys/{}",
        key["key"]
            .as_str()
            .expect("as_str finds a value of that type")
    );
    let updated = server
        .send(
            "PATCH",
            &by_key,
            Some(&json!({"description": "e", "name": "m"})),
        )
        .json();
    assert_eq!(
        (&updated["name"], &updated["description"]),
        (&json!("m"), &json!("e"))
    );
    assert_eq!(server.send("GET", &path, None).json(), updated);
    // An empty patch changes nothing but `updatedAt`.
    let again = server.send("PATCH", &path, Some(&json!({}))).json();
    assert_eq!(again["name"], "m");
    assert_eq!(again["description"], "e");
}

#[test]
fn update_rejects_every_immutable_field_with_its_code() {
    let server = Server::start_with(options());
    let key = create(
        &server,
        json!({"actions": ["search"], "indexes": ["*"], "expiresAt": null}),
    );
    let path = format!(
        "/keys/{}",
        key["uid"]
            .as_str()
            .expect("as_str finds a value of that type")
    );
    for (field, code, value) in [
        ("uid", "immutable_api_key_uid", json!("doggo")),
        ("actions", "immutable_api_key_actions", json!(["*"])),
        ("indexes", "immutable_api_key_indexes", json!(["*"])),
        ("expiresAt", "immutable_api_key_expires_at", json!(null)),
        (
            "createdAt",
            "immutable_api_key_created_at",
            json!("2050-11-13"),
        ),
        (
            "updatedAt",
            "immutable_api_key_updated_at",
            json!("2050-11-13"),
        ),
    ] {
        let response = server.send(
            "PATCH",
            &path,
            Some(&json!({"name": "changed", field: value})),
        );
        assert_error(
            &response,
            400,
            code,
            "invalid_request",
            &format!("Immutable field `{field}`: expected one of `description`, `name`"),
        );
    }
    assert_error(
        &server.send("PATCH", &path, Some(&json!({"doggo": "bork"}))),
        400,
        "bad_request",
        "invalid_request",
        "Unknown field `doggo`: expected one of `description`, `name`",
    );
    assert_error(
        &server.send("PATCH", &path, Some(&json!({"name": ["doggo"]}))),
        400,
        "invalid_api_key_name",
        "invalid_request",
        "Invalid value type at `.name`: expected a string, but found an array: `[\"doggo\"]`",
    );
    assert_error(
        &server.send("PATCH", &path, Some(&json!({"description": 3}))),
        400,
        "invalid_api_key_description",
        "invalid_request",
        "Invalid value type at `.description`: expected a string, but found a positive integer: `3`",
    );
    // Nothing was changed by the refused patches.
    assert_eq!(server.send("GET", &path, None).json(), key);
    // The body is checked before the key is looked up (as Meilisearch does).
    assert_error(
        &server.send("PATCH", "/keys/doggo", Some(&json!({"uid": "doggo"}))),
        400,
        "immutable_api_key_uid",
        "invalid_request",
        "Immutable field `uid`: expected one of `description`, `name`",
    );
}

#[test]
fn delete_answers_204_then_the_key_is_not_found() {
    let server = Server::start_with(options());
    let key = create(
        &server,
        json!({"actions": ["version"], "indexes": ["*"], "expiresAt": null}),
    );
    let uid = key["uid"]
        .as_str()
        .expect("as_str finds a value of that type");
    let key_string = key["key"]
        .as_str()
        .expect("as_str finds a value of that type");
    assert_eq!(
        server
            .raw(&request("GET", "/version", Some(key_string)))
            .status,
        200
    );
    let response = server.send("DELETE", &format!("/keys/{uid}"), None);
    assert_eq!(response.status, 204);
    assert!(response.body.is_empty());
    let not_found = format!("API key `{uid}` not found.");
    for method in ["GET", "DELETE"] {
        assert_error(
            &server.send(method, &format!("/keys/{uid}"), None),
            404,
            "api_key_not_found",
            "invalid_request",
            &not_found,
        );
    }
    assert_error(
        &server.send(
            "PATCH",
            &format!("/keys/{uid}"),
            Some(&json!({"name": "x"})),
        ),
        404,
        "api_key_not_found",
        "invalid_request",
        &not_found,
    );
    // A key string that matches no key is named as given.
    assert_error(
        &server.send("GET", &format!("/keys/{key_string}"), None),
        404,
        "api_key_not_found",
        "invalid_request",
        &format!("API key `{key_string}` not found."),
    );
    assert_error(
        &server.send("GET", "/keys/doggo", None),
        404,
        "api_key_not_found",
        "invalid_request",
        "API key `doggo` not found.",
    );
    assert_error(
        &server.raw(&request("GET", "/version", Some(key_string))),
        403,
        "invalid_api_key",
        "auth",
        "The provided API key is invalid.",
    );
    // Deleting by key string works too.
    let other = create(
        &server,
        json!({"actions": ["version"], "indexes": ["*"], "expiresAt": null}),
    );
    let other_key = other["key"]
        .as_str()
        .expect("as_str finds a value of that type");
    assert_eq!(
        server
            .send("DELETE", &format!("/keys/{other_key}"), None)
            .status,
        204
    );
    assert_eq!(
        server
            .send(
                "GET",
                &format!(
                    "/keys/{}",
                    other["uid"]
                        .as_str()
                        .expect("as_str finds a value of that type")
                ),
                None
            )
            .status,
        404
    );
}

#[test]
fn create_rejects_bad_bodies_with_meilisearch_codes_and_messages() {
    let server = Server::start_with(options());
    let cases: Vec<(Value, &str, String)> = vec![
        (
            json!({"indexes": ["doggo"], "expiresAt": null}),
            "missing_api_key_actions",
            "Missing field `actions`".to_string(),
        ),
        (
            json!({"actions": ["*"], "expiresAt": null}),
            "missing_api_key_indexes",
            "Missing field `indexes`".to_string(),
        ),
        (
            json!({"actions": ["*"], "indexes": ["doggo"]}),
            "missing_api_key_expires_at",
            "Missing field `expiresAt`".to_string(),
        ),
        (
            json!({"actions": ["doggo"], "indexes": ["*"], "expiresAt": null}),
            "invalid_api_key_actions",
            format!("Unknown value `doggo` at `.actions[0]`: expected one of {ACTIONS_IN_ORDER}"),
        ),
        (
            json!({"actions": "doggo"}),
            "invalid_api_key_actions",
            "Invalid value type at `.actions`: expected an array, but found a string: `\"doggo\"`"
                .to_string(),
        ),
        (
            json!({"actions": ["*"], "indexes": ["good doggo"], "expiresAt": null}),
            "invalid_api_key_indexes",
            "Invalid value at `.indexes[0]`: `good doggo` is not a valid index uid pattern. Index \
             uid patterns can be an integer or a string containing only alphanumeric characters, \
             hyphens (-), underscores (_), and optionally end with a star (*)."
                .to_string(),
        ),
        (
            json!({"indexes": "doggo"}),
            "invalid_api_key_indexes",
            "Invalid value type at `.indexes`: expected an array, but found a string: `\"doggo\"`"
                .to_string(),
        ),
        (
            json!({"actions": ["*"], "indexes": ["*"], "expiresAt": "2010-11-13T00:00:00Z"}),
            "invalid_api_key_expires_at",
            "Invalid value at `.expiresAt`: `2010-11-13T00:00:00Z` is not a valid date. It should \
             follow the RFC 3339 format to represents a date or datetime in the future or \
             specified as a null value. e.g. 'YYYY-MM-DD' or 'YYYY-MM-DD HH:MM:SS'.\n"
                .to_string(),
        ),
        (
            json!({"actions": ["*"], "indexes": ["*"], "expiresAt": "doggo"}),
            "invalid_api_key_expires_at",
            "Invalid value at `.expiresAt`: `doggo` is not a valid date. It should follow the \
             RFC 3339 format to represents a date or datetime in the future or specified as a \
             null value. e.g. 'YYYY-MM-DD' or 'YYYY-MM-DD HH:MM:SS'.\n"
                .to_string(),
        ),
        (
            json!({"uid": "doggo"}),
            "invalid_api_key_uid",
            "Invalid value at `.uid`: invalid character: found `o` at 1".to_string(),
        ),
        (
            json!({"description": ["doggo"]}),
            "invalid_api_key_description",
            "Invalid value type at `.description`: expected a string, but found an array: \
             `[\"doggo\"]`"
                .to_string(),
        ),
        (
            json!({"name": ["doggo"]}),
            "invalid_api_key_name",
            "Invalid value type at `.name`: expected a string, but found an array: `[\"doggo\"]`"
                .to_string(),
        ),
        (
            json!({"actions": ["*"], "indexes": ["*"], "expiresAt": null, "doggo": "bork"}),
            "bad_request",
            "Unknown field `doggo`: expected one of `description`, `name`, `uid`, `actions`, \
             `indexes`, `expiresAt`"
                .to_string(),
        ),
        (
            json!({"expires_at": "doggo"}),
            "bad_request",
            "Unknown field `expires_at`: did you mean `expiresAt`? expected one of \
             `description`, `name`, `uid`, `actions`, `indexes`, `expiresAt`"
                .to_string(),
        ),
    ];
    for (body, code, message) in cases {
        let response = server.send("POST", "/keys", Some(&body));
        assert_error(&response, 400, code, "invalid_request", &message);
    }
    // None of the refused bodies created a key.
    assert_eq!(server.send("GET", "/keys", None).json()["total"], 4);
}

#[test]
fn without_a_master_key_keys_routes_answer_401_and_the_others_stay_open() {
    let server = Server::start();
    for (method, path) in [
        ("POST", "/keys"),
        ("GET", "/keys"),
        ("GET", "/keys/00000000-0000-0000-0000-000000000000"),
        ("PATCH", "/keys/00000000-0000-0000-0000-000000000000"),
        ("DELETE", "/keys/00000000-0000-0000-0000-000000000000"),
    ] {
        for key in [None, Some("anything"), Some(MASTER_KEY)] {
            let text = if method == "POST" || method == "PATCH" {
                json_request(
                    method,
                    path,
                    key,
                    r#"{"actions":["*"],"indexes":["*"],"expiresAt":null}"#,
                )
            } else {
                request(method, path, key)
            };
            assert_error(
                &server.raw(&text),
                401,
                "missing_master_key",
                "auth",
                MISSING_MASTER_KEY_MESSAGE,
            );
        }
    }
    for key in [None, Some("anything")] {
        for (method, path) in [
            ("GET", "/version"),
            ("GET", "/experimental-features"),
            ("GET", "/health"),
            ("GET", "/"),
        ] {
            let response = server.raw(&request(method, path, key));
            assert_eq!(response.status, 200, "{method} {path} with {key:?}");
        }
        let response = server.raw(&json_request("PATCH", "/experimental-features", key, "{}"));
        assert_eq!(response.status, 200);
    }
}

#[test]
fn with_a_master_key_a_request_without_a_key_gets_401_and_a_wrong_key_403() {
    let server = Server::start_with(options());
    assert_error(
        &server.raw(&request("GET", "/keys", None)),
        401,
        "missing_authorization_header",
        "auth",
        "The Authorization header is missing. It must use the bearer authorization method.",
    );
    assert_error(
        &server.raw(&request("GET", "/keys", Some("doggo"))),
        403,
        "invalid_api_key",
        "auth",
        "The provided API key is invalid.",
    );
    let response = server
        .raw("GET /keys HTTP/1.1\r\nHost: t\r\nAuthorization: Basic ZG9nZ286Ym9yaw==\r\n\r\n");
    assert_error(
        &response,
        401,
        "missing_authorization_header",
        "auth",
        "The Authorization header is missing. It must use the bearer authorization method.",
    );
    let response = server.raw("GET /keys HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer\r\n\r\n");
    assert_error(
        &response,
        403,
        "invalid_api_key",
        "auth",
        "The provided API key is invalid.",
    );
}
