//! The layout of a dump in Meilisearch's dump format V6: the files a `.dump` archive (a
//! gzip-compressed tar) holds, and the small JSON records at its top.
//!
//! ```text
//! metadata.json                 {"dumpVersion":"V6","dbVersion":"1.41.0","dumpDate":…}
//! instance_uid.uuid             the instance uid, when there is one
//! keys.jsonl                    one API key per line (uid, actions, indexes, dates)
//! experimental-features.json    the runtime toggles
//! network.json                  the network (self, remotes, shards, leader, version)
//! webhooks.json                 {"webhooks": {uuid: {url, headers}}}
//! dynamic-search-rules/<n>.json one dynamic search rule per file, `n` on nine digits
//! chat-completions-settings/<workspace>.json  one chat workspace's settings per file
//! tasks/queue.jsonl             one task per line
//! tasks/update_files/<uid>.jsonl  the documents of each enqueued document addition
//! batches/queue.jsonl           one batch per line
//! indexes/<uid>/metadata.json   {uid, primaryKey, createdAt, updatedAt}
//! indexes/<uid>/settings.json   every setting, secrets in clear
//! indexes/<uid>/documents.jsonl one document per line, `_vectors` included
//! ```
//!
//! Invariant: a dump is identified by [`DumpMetadata::dump_version`]; only [`DumpVersion::V6`]
//! is read, older and newer versions are named in the refusal.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// The dump's metadata file.
pub const METADATA_FILE: &str = "metadata.json";
/// The instance uid file.
pub const INSTANCE_UID_FILE: &str = "instance_uid.uuid";
/// The API keys, one JSON object per line.
pub const KEYS_FILE: &str = "keys.jsonl";
/// The runtime toggles.
pub const FEATURES_FILE: &str = "experimental-features.json";
/// The network.
pub const NETWORK_FILE: &str = "network.json";
/// The webhooks registered through the API.
pub const WEBHOOKS_FILE: &str = "webhooks.json";
/// The folder of the dynamic search rules, one JSON file per rule.
pub const DYNAMIC_SEARCH_RULES_DIRECTORY: &str = "dynamic-search-rules";
/// The folder of the chat workspaces, one JSON file of settings (API key in clear) each.
pub const CHAT_WORKSPACES_DIRECTORY: &str = "chat-completions-settings";
/// The folder of the task queue.
pub const TASKS_DIRECTORY: &str = "tasks";
/// The folder of the batch queue.
pub const BATCHES_DIRECTORY: &str = "batches";
/// The queue file of the tasks and of the batches folders.
pub const QUEUE_FILE: &str = "queue.jsonl";
/// The folder (under [`TASKS_DIRECTORY`]) of the enqueued tasks' documents.
pub const UPDATE_FILES_DIRECTORY: &str = "update_files";
/// The folder of the indexes, one folder per index uid.
pub const INDEXES_DIRECTORY: &str = "indexes";
/// An index's metadata.
pub const INDEX_METADATA_FILE: &str = "metadata.json";
/// An index's settings.
pub const INDEX_SETTINGS_FILE: &str = "settings.json";
/// An index's documents.
pub const INDEX_DOCUMENTS_FILE: &str = "documents.jsonl";
/// The extension of a dump file.
pub const DUMP_EXTENSION: &str = "dump";

/// The name of the update file of task `task_uid` in a dump.
pub fn update_file_name(task_uid: u32) -> String {
    format!("{task_uid}.jsonl")
}

/// The name of the `number`th rule's file in [`DYNAMIC_SEARCH_RULES_DIRECTORY`]
/// (`000000007.json`), as Meilisearch names them.
pub fn dynamic_search_rule_file_name(number: usize) -> String {
    format!("{number:09}.json")
}

/// The file of workspace `uid` in [`CHAT_WORKSPACES_DIRECTORY`]: `<uid>.json`, as Meilisearch
/// names it, with `%`, `/` and NUL (which a path segment cannot hold) written `%25`, `%2F` and
/// `%00`.
pub fn chat_workspace_file_name(uid: &str) -> String {
    let mut name = String::with_capacity(uid.len() + 5);
    for character in uid.chars() {
        match character {
            '%' => name.push_str("%25"),
            '/' => name.push_str("%2F"),
            '\0' => name.push_str("%00"),
            other => name.push(other),
        }
    }
    name.push_str(".json");
    name
}

/// The workspace uid of a file stem of [`CHAT_WORKSPACES_DIRECTORY`] (the inverse of
/// [`chat_workspace_file_name`]).
pub fn chat_workspace_uid(stem: &str) -> String {
    stem.replace("%2F", "/")
        .replace("%00", "\0")
        .replace("%25", "%")
}

/// The format versions of Meilisearch dumps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DumpVersion {
    /// Meilisearch 0.x dumps, V1 to V5 (the number).
    Older(u8),
    /// Meilisearch 1.x (and coresearch) dumps.
    V6,
    /// A version this binary does not know, as written.
    Newer(String),
}

impl DumpVersion {
    /// The version `text` (`"V6"`) names.
    pub fn parse(text: &str) -> DumpVersion {
        match text {
            "V6" => DumpVersion::V6,
            "V1" | "V2" | "V3" | "V4" | "V5" => {
                DumpVersion::Older(text[1..].parse().expect("a digit from 1 to 5"))
            }
            other => DumpVersion::Newer(other.to_owned()),
        }
    }
}

/// `metadata.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DumpMetadata {
    /// `"V6"` for the dumps written here.
    pub dump_version: String,
    /// The version of the server that wrote the dump.
    pub db_version: String,
    #[serde(with = "time::serde::rfc3339")]
    pub dump_date: OffsetDateTime,
}

/// `indexes/<uid>/metadata.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexMetadata {
    pub uid: String,
    pub primary_key: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

/// The uid of a dump started at `started_at`, as Meilisearch names dumps:
/// `YYYYMMDD-HHMMSSmmm` in UTC.
pub fn dump_uid(started_at: OffsetDateTime) -> String {
    let date = started_at.to_offset(time::UtcOffset::UTC);
    format!(
        "{:04}{:02}{:02}-{:02}{:02}{:02}{:03}",
        date.year(),
        u8::from(date.month()),
        date.day(),
        date.hour(),
        date.minute(),
        date.second(),
        date.millisecond()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn a_dump_uid_is_the_start_time_to_the_millisecond() {
        assert_eq!(
            dump_uid(datetime!(2024-05-16 15:51:34.151044 UTC)),
            "20240516-155134151"
        );
        assert_eq!(
            dump_uid(datetime!(2024-01-02 03:04:05.006 +01:00)),
            "20240102-020405006"
        );
    }

    #[test]
    fn versions_are_told_apart() {
        assert_eq!(DumpVersion::parse("V6"), DumpVersion::V6);
        assert_eq!(DumpVersion::parse("V3"), DumpVersion::Older(3));
        assert_eq!(
            DumpVersion::parse("V7"),
            DumpVersion::Newer("V7".to_owned())
        );
    }

    #[test]
    fn metadata_reads_as_meilisearch_writes_it() {
        let text =
            r#"{"dumpVersion":"V6","dbVersion":"1.8.0","dumpDate":"2024-05-16T15:51:34.151044Z"}"#;
        let metadata: DumpMetadata = serde_json::from_str(text).expect("metadata decodes");
        assert_eq!(metadata.dump_version, "V6");
        assert_eq!(serde_json::to_string(&metadata).expect("encodes"), text);
    }
}
