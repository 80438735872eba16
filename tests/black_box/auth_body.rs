//! The `/keys` request bodies: every validation error with Meilisearch 1.41's exact code
//! and message (strings taken from Meilisearch's own test snapshots where they exist).

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]
#![allow(clippy::unwrap_used)]

use coresearch::auth::{Action, FieldChange, parse_create_api_key, parse_patch_api_key};
use coresearch::errors::{Code, ResponseError};
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::macros::datetime;
use uuid::Uuid;

const NOW: OffsetDateTime = datetime!(2026-11-21 15:00:00 UTC);

fn create_error(body: Value) -> ResponseError {
    parse_create_api_key(&body, NOW).unwrap_err()
}

fn patch_error(body: Value) -> ResponseError {
    parse_patch_api_key(&body).unwrap_err()
}

fn assert_error(error: ResponseError, code: Code, message: &str) {
    assert_eq!(error.message, message);
    assert_eq!(error.code, code, "{message}");
}

const ACTION_LIST: &str = "`*`, `search`, `documents.*`, `documents.add`, `documents.get`, `documents.delete`, `indexes.*`, `indexes.create`, `indexes.get`, `indexes.update`, `indexes.delete`, `indexes.swap`, `tasks.*`, `tasks.cancel`, `tasks.delete`, `tasks.get`, `settings.*`, `settings.get`, `settings.update`, `stats.*`, `stats.get`, `metrics.*`, `metrics.get`, `dumps.*`, `dumps.create`, `snapshots.*`, `snapshots.create`, `version`, `keys.create`, `keys.get`, `keys.update`, `keys.delete`, `experimental.get`, `experimental.update`, `export`, `network.get`, `network.update`, `chatCompletions`, `chats.*`, `chats.get`, `chats.delete`, `chatsSettings.*`, `chatsSettings.get`, `chatsSettings.update`, `*.get`, `webhooks.get`, `webhooks.update`, `webhooks.delete`, `webhooks.create`, `webhooks.*`, `indexes.compact`, `fields.post`, `tasks.compact`, `dynamicSearchRules.get`, `dynamicSearchRules.create`, `dynamicSearchRules.update`, `dynamicSearchRules.delete`, `dynamicSearchRules.*`";

#[test]
fn a_complete_create_body_is_accepted_as_given() {
    let body = json!({
        "name": "n", "description": null, "uid": "01b4bc42-eb33-4041-b481-254d00cce834",
        "actions": ["documents.*", "search", "search"], "indexes": ["products", "sal*", "*"],
        "expiresAt": "2050-11-13"
    });
    let create = parse_create_api_key(&body, NOW).expect("parse_create_api_key succeeds");
    assert_eq!(create.name.as_deref(), Some("n"));
    assert_eq!(create.description, None);
    assert_eq!(
        create.uid.to_string(),
        "01b4bc42-eb33-4041-b481-254d00cce834"
    );
    assert_eq!(
        create.actions,
        [Action::DocumentsAll, Action::Search, Action::Search]
    );
    let indexes: Vec<_> = create
        .indexes
        .iter()
        .map(|pattern| pattern.as_str())
        .collect();
    assert_eq!(indexes, ["products", "sal*", "*"]);
    assert_eq!(create.expires_at, Some(datetime!(2050-11-13 00:00:00 UTC)));
}

#[test]
fn a_missing_uid_is_a_fresh_random_v4() {
    let body = json!({"actions": [], "indexes": [], "expiresAt": null});
    let first = parse_create_api_key(&body, NOW).expect("parse_create_api_key succeeds");
    let second = parse_create_api_key(&body, NOW).expect("parse_create_api_key succeeds");
    assert_eq!(first.uid.get_version_num(), 4);
    assert_ne!(first.uid, second.uid);
    assert_eq!(first.expires_at, None);
}

#[test]
fn create_text_fields_must_be_strings_or_null() {
    assert_error(
        create_error(json!({"description": ["doggo"]})),
        Code::InvalidApiKeyDescription,
        "Invalid value type at `.description`: expected a string, but found an array: `[\"doggo\"]`",
    );
    assert_error(
        create_error(json!({"name": {"name": "products"}})),
        Code::InvalidApiKeyName,
        "Invalid value type at `.name`: expected a string, but found an object: `{\"name\":\"products\"}`",
    );
}

#[test]
fn create_uid_errors_carry_the_uuid_parser_message() {
    assert_error(
        create_error(json!({"uid": ["doggo"]})),
        Code::InvalidApiKeyUid,
        "Invalid value type at `.uid`: expected a string, but found an array: `[\"doggo\"]`",
    );
    assert_error(
        create_error(json!({"uid": "doggo"})),
        Code::InvalidApiKeyUid,
        "Invalid value at `.uid`: invalid character: found `o` at 1",
    );
    assert_error(
        create_error(json!({"uid": "0123456789abc"})),
        Code::InvalidApiKeyUid,
        "Invalid value at `.uid`: invalid length: found 13",
    );
    assert_error(
        create_error(json!({"uid": null})),
        Code::InvalidApiKeyUid,
        "Invalid value type at `.uid`: expected a string, but found null",
    );
}

#[test]
fn create_actions_errors() {
    assert_error(
        create_error(json!({"actions": "doggo"})),
        Code::InvalidApiKeyActions,
        "Invalid value type at `.actions`: expected an array, but found a string: `\"doggo\"`",
    );
    assert_error(
        create_error(json!({"actions": ["doggo"]})),
        Code::InvalidApiKeyActions,
        &format!("Unknown value `doggo` at `.actions[0]`: expected one of {ACTION_LIST}"),
    );
    assert_error(
        create_error(json!({"actions": ["search", "doc.add"]})),
        Code::InvalidApiKeyActions,
        &format!("Unknown value `doc.add` at `.actions[1]`: expected one of {ACTION_LIST}"),
    );
    assert_error(
        create_error(json!({"actions": ["documents.ad"]})),
        Code::InvalidApiKeyActions,
        &format!(
            "Unknown value `documents.ad` at `.actions[0]`: did you mean `documents.add`? expected one of {ACTION_LIST}"
        ),
    );
    assert_error(
        create_error(json!({"actions": [13]})),
        Code::InvalidApiKeyActions,
        "Invalid value type at `.actions[0]`: expected a string, but found a positive integer: `13`",
    );
    assert_error(
        create_error(json!({"actions": ["keys.*"]})),
        Code::InvalidApiKeyActions,
        &format!("Unknown value `keys.*` at `.actions[0]`: expected one of {ACTION_LIST}"),
    );
}

#[test]
fn create_indexes_errors() {
    assert_error(
        create_error(json!({"indexes": "doggo"})),
        Code::InvalidApiKeyIndexes,
        "Invalid value type at `.indexes`: expected an array, but found a string: `\"doggo\"`",
    );
    assert_error(
        create_error(json!({"indexes": ["good doggo"]})),
        Code::InvalidApiKeyIndexes,
        "Invalid value at `.indexes[0]`: `good doggo` is not a valid index uid pattern. Index uid patterns can be an integer or a string containing only alphanumeric characters, hyphens (-), underscores (_), and optionally end with a star (*).",
    );
    assert_error(
        create_error(json!({"indexes": ["invalid index # / \\name with spaces"]})),
        Code::InvalidApiKeyIndexes,
        "Invalid value at `.indexes[0]`: `invalid index # / \\name with spaces` is not a valid index uid pattern. Index uid patterns can be an integer or a string containing only alphanumeric characters, hyphens (-), underscores (_), and optionally end with a star (*).",
    );
    assert_error(
        create_error(json!({"indexes": ["ok", "bad doggo*"]})),
        Code::InvalidApiKeyIndexes,
        "Invalid value at `.indexes[1]`: `bad doggo` is not a valid index uid pattern. Index uid patterns can be an integer or a string containing only alphanumeric characters, hyphens (-), underscores (_), and optionally end with a star (*).",
    );
    assert_error(
        create_error(json!({"indexes": [null]})),
        Code::InvalidApiKeyIndexes,
        "Invalid value type at `.indexes[0]`: expected a string, but found null",
    );
}

#[test]
fn create_expires_at_errors() {
    assert_error(
        create_error(json!({"expiresAt": {"name": "products"}})),
        Code::InvalidApiKeyExpiresAt,
        "Invalid value type at `.expiresAt`: expected a string, but found an object: `{\"name\":\"products\"}`",
    );
    assert_error(
        create_error(json!({"expiresAt": "2010-11-13T00:00:00Z"})),
        Code::InvalidApiKeyExpiresAt,
        "Invalid value at `.expiresAt`: `2010-11-13T00:00:00Z` is not a valid date. It should follow the RFC 3339 format to represents a date or datetime in the future or specified as a null value. e.g. 'YYYY-MM-DD' or 'YYYY-MM-DD HH:MM:SS'.\n",
    );
    assert_error(
        create_error(json!({"expiresAt": "doggo"})),
        Code::InvalidApiKeyExpiresAt,
        "Invalid value at `.expiresAt`: `doggo` is not a valid date. It should follow the RFC 3339 format to represents a date or datetime in the future or specified as a null value. e.g. 'YYYY-MM-DD' or 'YYYY-MM-DD HH:MM:SS'.\n",
    );
}

#[test]
fn create_missing_fields_are_reported_in_declaration_order() {
    assert_error(
        create_error(json!({"indexes": ["doggo"], "expiresAt": null})),
        Code::MissingApiKeyActions,
        "Missing field `actions`",
    );
    assert_error(
        create_error(json!({"uid": Uuid::nil(), "actions": ["*"], "expiresAt": null})),
        Code::MissingApiKeyIndexes,
        "Missing field `indexes`",
    );
    assert_error(
        create_error(json!({"uid": Uuid::nil(), "actions": ["*"], "indexes": ["doggo"]})),
        Code::MissingApiKeyExpiresAt,
        "Missing field `expiresAt`",
    );
    assert_error(
        create_error(json!({})),
        Code::MissingApiKeyActions,
        "Missing field `actions`",
    );
}

#[test]
fn create_unknown_fields_are_bad_requests_with_did_you_mean() {
    assert_error(
        create_error(json!({"expires_at": ["doggo"]})),
        Code::BadRequest,
        "Unknown field `expires_at`: did you mean `expiresAt`? expected one of `description`, `name`, `uid`, `actions`, `indexes`, `expiresAt`",
    );
    assert_error(
        create_error(
            json!({"uid": Uuid::nil(), "actions": ["*"], "indexes": ["doggo"], "expiresAt": null, "doggo": "bork"}),
        ),
        Code::BadRequest,
        "Unknown field `doggo`: expected one of `description`, `name`, `uid`, `actions`, `indexes`, `expiresAt`",
    );
}

#[test]
fn non_object_bodies_are_bad_requests() {
    assert_error(
        create_error(Value::Null),
        Code::BadRequest,
        "Invalid value type: expected an object, but found null",
    );
    assert_error(
        patch_error(json!([1])),
        Code::BadRequest,
        "Invalid value type: expected an object, but found an array: `[1]`",
    );
}

#[test]
fn patch_sets_clears_or_keeps_name_and_description() {
    let patch = parse_patch_api_key(&json!({"name": "new", "description": null}))
        .expect("parse_patch_api_key succeeds");
    assert_eq!(patch.name, FieldChange::Set("new".into()));
    assert_eq!(patch.description, FieldChange::Clear);
    let empty = parse_patch_api_key(&json!({})).expect("parse_patch_api_key succeeds");
    assert_eq!(empty.name, FieldChange::Keep);
    assert_eq!(empty.description, FieldChange::Keep);
    assert_eq!(FieldChange::Keep.apply(Some("a".into())), Some("a".into()));
    assert_eq!(FieldChange::Clear.apply(Some("a".into())), None);
}

#[test]
fn patch_type_errors_carry_the_field_code() {
    assert_error(
        patch_error(json!({"description": ["doggo"]})),
        Code::InvalidApiKeyDescription,
        "Invalid value type at `.description`: expected a string, but found an array: `[\"doggo\"]`",
    );
    assert_error(
        patch_error(json!({"name": 13})),
        Code::InvalidApiKeyName,
        "Invalid value type at `.name`: expected a string, but found a positive integer: `13`",
    );
}

#[test]
fn patch_immutable_fields_have_their_own_codes() {
    let cases = [
        ("uid", Code::ImmutableApiKeyUid),
        ("actions", Code::ImmutableApiKeyActions),
        ("indexes", Code::ImmutableApiKeyIndexes),
        ("expiresAt", Code::ImmutableApiKeyExpiresAt),
        ("createdAt", Code::ImmutableApiKeyCreatedAt),
        ("updatedAt", Code::ImmutableApiKeyUpdatedAt),
    ];
    for (field, code) in cases {
        let mut body = serde_json::Map::new();
        body.insert(field.to_string(), json!("doggo"));
        assert_error(
            patch_error(Value::Object(body)),
            code,
            &format!("Immutable field `{field}`: expected one of `description`, `name`"),
        );
    }
}

#[test]
fn patch_unknown_fields_are_bad_requests() {
    assert_error(
        patch_error(json!({"doggo": "bork"})),
        Code::BadRequest,
        "Unknown field `doggo`: expected one of `description`, `name`",
    );
    assert_error(
        patch_error(json!({"key": "bork"})),
        Code::BadRequest,
        "Unknown field `key`: expected one of `description`, `name`",
    );
    assert_error(
        patch_error(json!({"descriptio": "bork"})),
        Code::BadRequest,
        "Unknown field `descriptio`: did you mean `description`? expected one of `description`, `name`",
    );
}

#[test]
fn errors_leave_as_the_error_object() {
    let error = create_error(json!({"indexes": ["doggo"], "expiresAt": null}));
    assert_eq!(error.status(), 400);
    assert_eq!(
        error.to_json(),
        r#"{"message":"Missing field `actions`","code":"missing_api_key_actions","type":"invalid_request","link":"https://docs.meilisearch.com/errors#missing_api_key_actions"}"#
    );
}
