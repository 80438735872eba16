//! Decoding and validation of the `/keys` request bodies (`POST /keys`, `PATCH /keys/{key}`)
//! from a parsed JSON value, with Meilisearch's error codes and messages.
//!
//! Invariants:
//! - fields are checked in the order the body gives them and the first problem wins (as
//!   deserr does); missing required fields are reported afterwards, in the order
//!   `actions`, `indexes`, `expiresAt`;
//! - a problem inside a field carries that field's code; an unknown field or a non-object
//!   body is `bad_request`; PATCH maps the immutable fields to `immutable_api_key_*`.
//!
//! Messages come from [`super::json_messages`] until the shared decode layer lands.

use serde_json::{Map, Value};
use time::OffsetDateTime;
use uuid::Uuid;

use super::actions::{Action, wire_names};
use super::expiration::parse_expiration_date;
use super::index_pattern::IndexUidPattern;
use super::json_messages as messages;
use super::uuid_text::parse_uid;
use crate::errors::{Code, ResponseError};

/// The fields `POST /keys` accepts, in declaration order.
pub const CREATE_FIELDS: &[&str] = &[
    "description",
    "name",
    "uid",
    "actions",
    "indexes",
    "expiresAt",
];

/// The fields `PATCH /keys/{key}` accepts, in declaration order.
pub const PATCH_FIELDS: &[&str] = &["description", "name"];

/// A validated `POST /keys` body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateApiKey {
    pub description: Option<String>,
    pub name: Option<String>,
    /// The uid given, or a fresh random v4 uid.
    pub uid: Uuid,
    pub actions: Vec<Action>,
    pub indexes: Vec<IndexUidPattern>,
    pub expires_at: Option<OffsetDateTime>,
}

/// A change to one optional text field of a key.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum FieldChange {
    /// The field was not in the body: keep the current value.
    #[default]
    Keep,
    /// The field was `null`: clear it.
    Clear,
    /// The field was a string: set it.
    Set(String),
}

impl FieldChange {
    /// The value after applying the change to `current`.
    pub fn apply(self, current: Option<String>) -> Option<String> {
        match self {
            FieldChange::Keep => current,
            FieldChange::Clear => None,
            FieldChange::Set(value) => Some(value),
        }
    }
}

/// A validated `PATCH /keys/{key}` body.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PatchApiKey {
    pub description: FieldChange,
    pub name: FieldChange,
}

fn error(code: Code, message: String) -> ResponseError {
    ResponseError::new(code, message)
}

/// The body as an object, or `bad_request` for any other JSON type.
fn root_object(body: &Value) -> Result<&Map<String, Value>, ResponseError> {
    body.as_object().ok_or_else(|| {
        error(
            Code::BadRequest,
            messages::invalid_type("", "an object", body),
        )
    })
}

/// `null` → `None`, a string → `Some`, anything else → the field's code.
fn optional_string(
    field: &str,
    value: &Value,
    code: Code,
) -> Result<Option<String>, ResponseError> {
    match value {
        Value::Null => Ok(None),
        Value::String(text) => Ok(Some(text.clone())),
        other => Err(error(
            code,
            messages::invalid_type(&format!(".{field}"), "a string", other),
        )),
    }
}

fn parse_uid_field(value: &Value) -> Result<Uuid, ResponseError> {
    let Value::String(text) = value else {
        return Err(error(
            Code::InvalidApiKeyUid,
            messages::invalid_type(".uid", "a string", value),
        ));
    };
    parse_uid(text).map_err(|uuid_error| {
        error(
            Code::InvalidApiKeyUid,
            messages::invalid_value(".uid", &uuid_error.to_string()),
        )
    })
}

fn parse_actions(value: &Value) -> Result<Vec<Action>, ResponseError> {
    let code = Code::InvalidApiKeyActions;
    let Value::Array(items) = value else {
        return Err(error(
            code,
            messages::invalid_type(".actions", "an array", value),
        ));
    };
    let mut actions = Vec::with_capacity(items.len());
    for (position, item) in items.iter().enumerate() {
        let location = format!(".actions[{position}]");
        let Value::String(name) = item else {
            return Err(error(
                code,
                messages::invalid_type(&location, "a string", item),
            ));
        };
        let action = Action::from_wire_name(name).ok_or_else(|| {
            error(
                code,
                messages::unknown_value(name, &location, &wire_names()),
            )
        })?;
        actions.push(action);
    }
    Ok(actions)
}

fn parse_indexes(value: &Value) -> Result<Vec<IndexUidPattern>, ResponseError> {
    let code = Code::InvalidApiKeyIndexes;
    let Value::Array(items) = value else {
        return Err(error(
            code,
            messages::invalid_type(".indexes", "an array", value),
        ));
    };
    let mut patterns = Vec::with_capacity(items.len());
    for (position, item) in items.iter().enumerate() {
        let location = format!(".indexes[{position}]");
        let Value::String(text) = item else {
            return Err(error(
                code,
                messages::invalid_type(&location, "a string", item),
            ));
        };
        let pattern = IndexUidPattern::parse(text).map_err(|pattern_error| {
            error(
                code,
                messages::invalid_value(&location, &pattern_error.to_string()),
            )
        })?;
        patterns.push(pattern);
    }
    Ok(patterns)
}

fn parse_expires_at(
    value: &Value,
    now: OffsetDateTime,
) -> Result<Option<OffsetDateTime>, ResponseError> {
    let code = Code::InvalidApiKeyExpiresAt;
    match value {
        Value::Null => Ok(None),
        Value::String(text) => parse_expiration_date(text, now)
            .map(Some)
            .map_err(|date_error| {
                error(
                    code,
                    messages::invalid_value(".expiresAt", &date_error.to_string()),
                )
            }),
        other => Err(error(
            code,
            messages::invalid_type(".expiresAt", "a string", other),
        )),
    }
}

/// Validates a `POST /keys` body at `now` (expiration dates must be after `now`).
pub fn parse_create_api_key(
    body: &Value,
    now: OffsetDateTime,
) -> Result<CreateApiKey, ResponseError> {
    let object = root_object(body)?;
    let mut description = None;
    let mut name = None;
    let mut uid = None;
    let mut actions = None;
    let mut indexes = None;
    let mut expires_at = None;
    for (field, value) in object {
        match field.as_str() {
            "description" => {
                description = optional_string(field, value, Code::InvalidApiKeyDescription)?
            }
            "name" => name = optional_string(field, value, Code::InvalidApiKeyName)?,
            "uid" => uid = Some(parse_uid_field(value)?),
            "actions" => actions = Some(parse_actions(value)?),
            "indexes" => indexes = Some(parse_indexes(value)?),
            "expiresAt" => expires_at = Some(parse_expires_at(value, now)?),
            unknown => {
                return Err(error(
                    Code::BadRequest,
                    messages::unknown_field(unknown, CREATE_FIELDS),
                ));
            }
        }
    }
    let missing = |code: Code, field: &str| error(code, messages::missing_field(field));
    Ok(CreateApiKey {
        description,
        name,
        uid: uid.unwrap_or_else(Uuid::new_v4),
        actions: actions.ok_or_else(|| missing(Code::MissingApiKeyActions, "actions"))?,
        indexes: indexes.ok_or_else(|| missing(Code::MissingApiKeyIndexes, "indexes"))?,
        expires_at: expires_at.ok_or_else(|| missing(Code::MissingApiKeyExpiresAt, "expiresAt"))?,
    })
}

/// The code of a PATCH field that exists on a key but may not be changed.
fn immutable_field_code(field: &str) -> Option<Code> {
    match field {
        "uid" => Some(Code::ImmutableApiKeyUid),
        "actions" => Some(Code::ImmutableApiKeyActions),
        "indexes" => Some(Code::ImmutableApiKeyIndexes),
        "expiresAt" => Some(Code::ImmutableApiKeyExpiresAt),
        "createdAt" => Some(Code::ImmutableApiKeyCreatedAt),
        "updatedAt" => Some(Code::ImmutableApiKeyUpdatedAt),
        _ => None,
    }
}

fn field_change(field: &str, value: &Value, code: Code) -> Result<FieldChange, ResponseError> {
    Ok(match optional_string(field, value, code)? {
        None => FieldChange::Clear,
        Some(text) => FieldChange::Set(text),
    })
}

/// Validates a `PATCH /keys/{key}` body.
pub fn parse_patch_api_key(body: &Value) -> Result<PatchApiKey, ResponseError> {
    let object = root_object(body)?;
    let mut patch = PatchApiKey::default();
    for (field, value) in object {
        match field.as_str() {
            "description" => {
                patch.description = field_change(field, value, Code::InvalidApiKeyDescription)?
            }
            "name" => patch.name = field_change(field, value, Code::InvalidApiKeyName)?,
            other => {
                return Err(match immutable_field_code(other) {
                    Some(code) => error(code, messages::immutable_field(other, PATCH_FIELDS)),
                    None => error(
                        Code::BadRequest,
                        messages::unknown_field(other, PATCH_FIELDS),
                    ),
                });
            }
        }
    }
    Ok(patch)
}
