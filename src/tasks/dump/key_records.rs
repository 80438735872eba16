//! An API key as one line of a dump's `keys.jsonl`, in Meilisearch's dump format V6: its
//! uid, name, description, actions and index patterns as given, and its dates in snake_case
//! fields. The key string is not written: it is derived from the uid and the master key, so
//! an instance started with the same master key answers the same key strings.
//!
//! Invariant: a record converts back to the same key; an action or index pattern this
//! server does not know is an error naming the key.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::auth::expiration::{format_rfc3339, parse_rfc3339};
use crate::auth::{Action, IndexUidPattern, Key};

/// One line of `keys.jsonl`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyRecord {
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    pub uid: Uuid,
    pub actions: Vec<String>,
    pub indexes: Vec<String>,
    pub expires_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

/// The record of `key`.
pub fn key_to_record(key: &Key) -> KeyRecord {
    KeyRecord {
        description: key.description.clone(),
        name: key.name.clone(),
        uid: key.uid,
        actions: key
            .actions
            .iter()
            .map(|action| action.wire_name().to_owned())
            .collect(),
        indexes: key.indexes.iter().map(ToString::to_string).collect(),
        expires_at: key.expires_at.map(format_rfc3339),
        created_at: format_rfc3339(key.created_at),
        updated_at: format_rfc3339(key.updated_at),
    }
}

/// The key of `record`.
pub fn key_from_record(record: KeyRecord) -> Result<Key, String> {
    let uid = record.uid;
    let failure = |reason: String| format!("API key {uid}: {reason}");
    let date = |text: &str| {
        parse_rfc3339(text).ok_or_else(|| failure(format!("`{text}` is not an RFC 3339 date")))
    };
    let actions = record
        .actions
        .iter()
        .map(|name| {
            Action::from_wire_name(name).ok_or_else(|| failure(format!("unknown action `{name}`")))
        })
        .collect::<Result<_, _>>()?;
    let indexes = record
        .indexes
        .iter()
        .map(|pattern| IndexUidPattern::parse(pattern).map_err(|error| failure(error.to_string())))
        .collect::<Result<_, _>>()?;
    Ok(Key {
        uid,
        name: record.name,
        description: record.description,
        actions,
        indexes,
        expires_at: record.expires_at.as_deref().map(date).transpose()?,
        created_at: date(&record.created_at)?,
        updated_at: date(&record.updated_at)?,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_meilisearch_key_line_reads_and_writes_back() {
        let line = r#"{"description":"Use it to read information across the whole database. Caution! Do not expose this key on a public frontend","name":"Default Read-Only Admin API Key","uid":"422ee132-8a7e-421a-8acc-1a41a20fbf4f","actions":["*.get","keys.get"],"indexes":["*"],"expires_at":null,"created_at":"2025-07-31T09:20:20.56552Z","updated_at":"2025-07-31T09:20:20.56552Z"}"#;
        let record: KeyRecord = serde_json::from_str(line).unwrap();
        let key = key_from_record(record).unwrap();
        assert_eq!(key.actions.len(), 2);
        let written = serde_json::to_string(&key_to_record(&key)).unwrap();
        assert_eq!(written, line);
    }

    #[test]
    fn an_unknown_action_is_refused_with_the_key_uid() {
        let line = r#"{"uid":"422ee132-8a7e-421a-8acc-1a41a20fbf4f","actions":["doggo"],"indexes":["*"],"expires_at":null,"created_at":"2025-07-31T09:20:20Z","updated_at":"2025-07-31T09:20:20Z"}"#;
        let record: KeyRecord = serde_json::from_str(line).unwrap();
        let error = key_from_record(record).unwrap_err();
        assert!(
            error.contains("422ee132") && error.contains("doggo"),
            "{error}"
        );
    }
}
