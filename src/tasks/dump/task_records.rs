//! A task as one line of a dump's `tasks/queue.jsonl`, in Meilisearch's dump format V6, and
//! the conversions between it and the queue's [`Task`].
//!
//! The record's shape is Meilisearch's: camelCase top-level fields (`batchUid` and
//! `indexUid` always written, the others only when set), the type as an externally tagged
//! object whose variant names are camelCase (`documentImport`, `settings`,
//! `tasksDeletion`, …) with snake_case fields, task uid sets as the bytes of a serialized
//! roaring bitmap, and `details` as Meilisearch's `Details` enum: PascalCase variants with
//! snake_case fields, byte sizes as human-readable strings ([`super::details_records`]).
//!
//! Invariants: every task converts to a record; a record converts back to the same task
//! except for what the dump does not carry (a document addition's update file name and
//! size, `skipCreation`, a dump task's keys); a record that does not fit is an error naming
//! the task, never a silently dropped task.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use time::OffsetDateTime;

use super::details_records::{details_from_record, details_to_record};
use crate::errors::{Code, ResponseError};
use crate::tasks::model::{
    DocumentMethod, ExportIndexSettings, IndexSwap, KindWithContent, Status, Task, TaskError,
};

/// One line of `tasks/queue.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskRecord {
    pub uid: u32,
    #[serde(default)]
    pub batch_uid: Option<u32>,
    #[serde(default)]
    pub index_uid: Option<String>,
    pub status: Status,
    #[serde(rename = "type")]
    pub kind: KindRecord,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canceled_by: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorRecord>,
    #[serde(with = "time::serde::rfc3339")]
    pub enqueued_at: OffsetDateTime,
    #[serde(
        with = "time::serde::rfc3339::option",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub started_at: Option<OffsetDateTime>,
    #[serde(
        with = "time::serde::rfc3339::option",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub finished_at: Option<OffsetDateTime>,
    /// The task's place in a sharded network (`crate::network::task_network`), as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_metadata: Option<String>,
}

/// A task's error as the dump writes it: the API error object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorRecord {
    pub message: String,
    pub code: String,
    #[serde(rename = "type")]
    pub error_type: String,
    pub link: String,
}

/// How a document addition merges, as Meilisearch names it in dumps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum MethodRecord {
    ReplaceDocuments,
    UpdateDocuments,
}

/// One pair of a swap.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwapRecord {
    pub indexes: (String, String),
    #[serde(default)]
    pub rename: bool,
}

/// One pattern of an export.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportPatternRecord {
    #[serde(default)]
    pub filter: Option<Value>,
    #[serde(default)]
    pub override_settings: bool,
}

/// The type of a task with its content, as Meilisearch's dumps write it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum KindRecord {
    DocumentImport {
        primary_key: Option<String>,
        method: MethodRecord,
        documents_count: u64,
        allow_index_creation: bool,
    },
    DocumentDeletion {
        documents_ids: Vec<String>,
    },
    DocumentClear,
    DocumentDeletionByFilter {
        filter: Value,
    },
    DocumentEdition {
        filter: Option<Value>,
        context: Option<Map<String, Value>>,
        function: String,
    },
    Settings {
        settings: Map<String, Value>,
        is_deletion: bool,
        allow_index_creation: bool,
    },
    IndexDeletion,
    IndexCreation {
        primary_key: Option<String>,
    },
    IndexUpdate {
        primary_key: Option<String>,
        uid: Option<String>,
    },
    IndexSwap {
        swaps: Vec<SwapRecord>,
    },
    TaskCancelation {
        query: String,
        tasks: TaskUidSet,
    },
    TasksDeletion {
        query: String,
        tasks: TaskUidSet,
    },
    DumpCreation {
        keys: Vec<Value>,
        instance_uid: Option<String>,
    },
    SnapshotCreation,
    Export {
        url: String,
        api_key: Option<String>,
        payload_size: Option<Value>,
        indexes: BTreeMap<String, ExportPatternRecord>,
    },
    UpgradeDatabase {
        from: (u32, u32, u32),
    },
    IndexCompaction {
        index_uid: String,
    },
    /// Meilisearch's topology change state; kept opaque.
    NetworkTopologyChange(Value),
    DsrUpdate(DsrUpdateRecord),
    DsrClear,
}

/// A `dsrUpdate` task as Meilisearch 1.50's dumps write it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum DsrUpdateRecord {
    /// The rule's uid and the fields of its `PATCH`.
    CreateOrUpdate {
        rule_id: String,
        update: Value,
    },
    Deletion(String),
}

/// A set of task uids, written as Meilisearch writes a roaring bitmap in JSON: the bytes of
/// its portable serialization, as an array of numbers.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TaskUidSet(pub Vec<u32>);

impl Serialize for TaskUidSet {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let bitmap: roaring::RoaringBitmap = self.0.iter().copied().collect();
        let mut bytes = Vec::with_capacity(bitmap.serialized_size());
        bitmap
            .serialize_into(&mut bytes)
            .map_err(serde::ser::Error::custom)?;
        bytes.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for TaskUidSet {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let bytes = Vec::<u8>::deserialize(deserializer)?;
        let bitmap = roaring::RoaringBitmap::deserialize_from(bytes.as_slice())
            .map_err(serde::de::Error::custom)?;
        Ok(TaskUidSet(bitmap.into_iter().collect()))
    }
}

/// The record of `task`; `keys` are the key records a dump task carries.
pub fn task_to_record(task: &Task, keys: &[Value]) -> TaskRecord {
    TaskRecord {
        uid: task.uid,
        batch_uid: task.batch_uid,
        index_uid: task.index_uid().map(str::to_owned),
        status: task.status,
        kind: kind_to_record(&task.kind, keys),
        canceled_by: task.canceled_by,
        details: task
            .details
            .as_ref()
            .map(|details| details_to_record(details, &task.kind)),
        error: task.error.as_ref().map(|TaskError(error)| ErrorRecord {
            message: error.message.clone(),
            code: error.code.name().to_owned(),
            error_type: error.code.error_type().name().to_owned(),
            link: error.code.link(),
        }),
        enqueued_at: task.enqueued_at,
        started_at: task.started_at,
        finished_at: task.finished_at,
        network: task
            .network
            .as_ref()
            .and_then(|network| serde_json::to_value(network).ok()),
        custom_metadata: task.custom_metadata.clone(),
    }
}

fn kind_to_record(kind: &KindWithContent, keys: &[Value]) -> KindRecord {
    document_kind_to_record(kind)
        .or_else(|| instance_kind_to_record(kind, keys))
        .expect("every kind is about documents and settings, or about indexes and the instance")
}

/// The record of the kinds about documents and settings.
fn document_kind_to_record(kind: &KindWithContent) -> Option<KindRecord> {
    Some(match kind.clone() {
        KindWithContent::DocumentAdditionOrUpdate {
            primary_key,
            method,
            documents_count,
            allow_index_creation,
            ..
        } => KindRecord::DocumentImport {
            primary_key,
            method: match method {
                DocumentMethod::Replace => MethodRecord::ReplaceDocuments,
                DocumentMethod::Update => MethodRecord::UpdateDocuments,
            },
            documents_count,
            allow_index_creation,
        },
        KindWithContent::DocumentDeletion { document_ids, .. } => KindRecord::DocumentDeletion {
            documents_ids: document_ids,
        },
        KindWithContent::DocumentDeletionByFilter { filter, .. } => {
            KindRecord::DocumentDeletionByFilter { filter }
        }
        KindWithContent::DocumentEdition {
            filter,
            context,
            function,
            ..
        } => KindRecord::DocumentEdition {
            filter,
            context,
            function,
        },
        KindWithContent::DocumentClear { .. } => KindRecord::DocumentClear,
        KindWithContent::SettingsUpdate {
            settings,
            is_deletion,
            allow_index_creation,
            ..
        } => KindRecord::Settings {
            settings,
            is_deletion,
            allow_index_creation,
        },
        _ => return None,
    })
}

/// The record of the kinds about whole indexes or the instance.
fn instance_kind_to_record(kind: &KindWithContent, keys: &[Value]) -> Option<KindRecord> {
    Some(match kind.clone() {
        KindWithContent::IndexDeletion { .. } => KindRecord::IndexDeletion,
        KindWithContent::IndexCreation { primary_key, .. } => {
            KindRecord::IndexCreation { primary_key }
        }
        KindWithContent::IndexUpdate {
            primary_key,
            new_index_uid,
            ..
        } => KindRecord::IndexUpdate {
            primary_key,
            uid: new_index_uid,
        },
        KindWithContent::IndexSwap { swaps } => KindRecord::IndexSwap {
            swaps: swaps
                .into_iter()
                .map(|swap| SwapRecord {
                    indexes: swap.indexes,
                    rename: swap.rename,
                })
                .collect(),
        },
        KindWithContent::TaskCancelation { query, tasks } => KindRecord::TaskCancelation {
            query,
            tasks: TaskUidSet(tasks),
        },
        KindWithContent::TaskDeletion { query, tasks } => KindRecord::TasksDeletion {
            query,
            tasks: TaskUidSet(tasks),
        },
        KindWithContent::DumpCreation => KindRecord::DumpCreation {
            keys: keys.to_vec(),
            instance_uid: None,
        },
        KindWithContent::SnapshotCreation => KindRecord::SnapshotCreation,
        KindWithContent::Export {
            url,
            api_key,
            payload_size,
            indexes,
        } => KindRecord::Export {
            url,
            api_key,
            payload_size: payload_size.map(super::details_records::byte_size_value),
            indexes: indexes
                .into_iter()
                .map(|(pattern, settings)| {
                    let record = ExportPatternRecord {
                        filter: settings.filter,
                        override_settings: settings.override_settings,
                    };
                    (pattern, record)
                })
                .collect(),
        },
        KindWithContent::UpgradeDatabase { from } => KindRecord::UpgradeDatabase { from },
        KindWithContent::IndexCompaction { index_uid } => KindRecord::IndexCompaction { index_uid },
        KindWithContent::NetworkTopologyChange => KindRecord::NetworkTopologyChange(Value::Null),
        other => return rule_kind_to_record(other),
    })
}

/// The record of the dynamic search rules' kinds (`None` for any other).
fn rule_kind_to_record(kind: KindWithContent) -> Option<KindRecord> {
    Some(match kind {
        KindWithContent::DsrUpdate {
            rule_uid,
            update: Some(update),
        } => KindRecord::DsrUpdate(DsrUpdateRecord::CreateOrUpdate {
            rule_id: rule_uid,
            update: Value::Object(update.to_json()),
        }),
        KindWithContent::DsrUpdate {
            rule_uid,
            update: None,
        } => KindRecord::DsrUpdate(DsrUpdateRecord::Deletion(rule_uid)),
        KindWithContent::DsrClear => KindRecord::DsrClear,
        _ => return None,
    })
}

/// The dynamic search rules' kinds of a record (an error for any other record).
fn rule_kind_from_record(record: KindRecord) -> Result<KindWithContent, String> {
    Ok(match record {
        KindRecord::DsrUpdate(DsrUpdateRecord::CreateOrUpdate { rule_id, update }) => {
            let update = crate::control::dynamic_search_rule_patch::RulePatch::decode(update)
                .map_err(|error| format!("rule `{rule_id}`: {}", error.message))?;
            KindWithContent::DsrUpdate {
                rule_uid: rule_id,
                update: Some(update),
            }
        }
        KindRecord::DsrUpdate(DsrUpdateRecord::Deletion(rule_uid)) => KindWithContent::DsrUpdate {
            rule_uid,
            update: None,
        },
        KindRecord::DsrClear => KindWithContent::DsrClear,
        other => return Err(format!("unexpected type {other:?}")),
    })
}

/// Where the documents of an imported document addition are: the update file's name and
/// size (an enqueued task), or `None` for a finished task, whose documents are gone.
pub type ImportedContent = Option<(String, u64)>;

/// The name a finished document addition's update file gets: it names no file, as
/// Meilisearch gives such tasks the nil uuid.
pub const GONE_UPDATE_FILE: &str = "00000000-0000-0000-0000-000000000000.ndjson";

/// The task of `record`. A task the dump shows processing (a dump cannot, but a hand-made
/// one might) comes back enqueued, so it runs after the import.
pub fn task_from_record(record: TaskRecord, content: ImportedContent) -> Result<Task, String> {
    let uid = record.uid;
    let failure = |reason: String| format!("task {uid}: {reason}");
    let kind = kind_from_record(record.kind, record.index_uid, content).map_err(failure)?;
    let details = record
        .details
        .map(details_from_record)
        .transpose()
        .map_err(failure)?;
    let processing = record.status == Status::Processing;
    Ok(Task {
        uid,
        batch_uid: record.batch_uid.filter(|_| !processing),
        status: if processing {
            Status::Enqueued
        } else {
            record.status
        },
        kind,
        details,
        error: record.error.map(|error| {
            let code = Code::from_name(&error.code).unwrap_or(Code::Internal);
            TaskError(ResponseError {
                code,
                message: error.message,
                status_override: None,
            })
        }),
        canceled_by: record.canceled_by,
        enqueued_at: record.enqueued_at,
        started_at: record.started_at.filter(|_| !processing),
        finished_at: record.finished_at.filter(|_| !processing),
        custom_metadata: record.custom_metadata,
        network: record
            .network
            .and_then(|network| serde_json::from_value(network).ok()),
    })
}

/// The task type of `kind` on index `index_uid`.
fn kind_from_record(
    kind: KindRecord,
    index_uid: Option<String>,
    content: ImportedContent,
) -> Result<KindWithContent, String> {
    match document_kind_from_record(kind, &index_uid, content)? {
        Ok(kind) => Ok(kind),
        Err(kind) => index_kind_from_record(kind, index_uid),
    }
}

/// The task type of the kinds about documents and settings; any other record back.
fn document_kind_from_record(
    kind: KindRecord,
    index_uid: &Option<String>,
    content: ImportedContent,
) -> Result<Result<KindWithContent, KindRecord>, String> {
    let index = || {
        index_uid
            .clone()
            .ok_or_else(|| "its index is missing".to_owned())
    };
    Ok(Ok(match kind {
        KindRecord::DocumentImport {
            primary_key,
            method,
            documents_count,
            allow_index_creation,
        } => {
            let (content_file, content_bytes) =
                content.unwrap_or_else(|| (GONE_UPDATE_FILE.to_owned(), 0));
            KindWithContent::DocumentAdditionOrUpdate {
                index_uid: index()?,
                primary_key,
                method: match method {
                    MethodRecord::ReplaceDocuments => DocumentMethod::Replace,
                    MethodRecord::UpdateDocuments => DocumentMethod::Update,
                },
                content_file,
                documents_count,
                content_bytes,
                allow_index_creation,
                skip_creation: false,
            }
        }
        KindRecord::DocumentDeletion { documents_ids } => KindWithContent::DocumentDeletion {
            index_uid: index()?,
            document_ids: documents_ids,
        },
        KindRecord::DocumentClear => KindWithContent::DocumentClear {
            index_uid: index()?,
        },
        KindRecord::DocumentDeletionByFilter { filter } => {
            KindWithContent::DocumentDeletionByFilter {
                index_uid: index()?,
                filter,
            }
        }
        KindRecord::DocumentEdition {
            filter,
            context,
            function,
        } => KindWithContent::DocumentEdition {
            index_uid: index()?,
            filter,
            context,
            function,
        },
        KindRecord::Settings {
            settings,
            is_deletion,
            allow_index_creation,
        } => KindWithContent::SettingsUpdate {
            index_uid: index()?,
            settings,
            is_deletion,
            allow_index_creation,
        },
        other => return Ok(Err(other)),
    }))
}

/// The task type of the kinds about whole indexes or the instance.
fn index_kind_from_record(
    kind: KindRecord,
    index_uid: Option<String>,
) -> Result<KindWithContent, String> {
    let index = || {
        index_uid
            .clone()
            .ok_or_else(|| "its index is missing".to_owned())
    };
    Ok(match kind {
        KindRecord::IndexDeletion => KindWithContent::IndexDeletion {
            index_uid: index()?,
        },
        KindRecord::IndexCreation { primary_key } => KindWithContent::IndexCreation {
            index_uid: index()?,
            primary_key,
        },
        KindRecord::IndexUpdate { primary_key, uid } => KindWithContent::IndexUpdate {
            index_uid: index()?,
            primary_key,
            new_index_uid: uid,
        },
        KindRecord::IndexSwap { swaps } => KindWithContent::IndexSwap {
            swaps: swaps
                .into_iter()
                .map(|swap| IndexSwap {
                    indexes: swap.indexes,
                    rename: swap.rename,
                })
                .collect(),
        },
        KindRecord::TaskCancelation { query, tasks } => KindWithContent::TaskCancelation {
            query,
            tasks: tasks.0,
        },
        KindRecord::TasksDeletion { query, tasks } => KindWithContent::TaskDeletion {
            query,
            tasks: tasks.0,
        },
        KindRecord::DumpCreation { .. } => KindWithContent::DumpCreation,
        KindRecord::SnapshotCreation => KindWithContent::SnapshotCreation,
        KindRecord::Export {
            url,
            api_key,
            payload_size,
            indexes,
        } => KindWithContent::Export {
            url,
            api_key,
            payload_size: payload_size
                .map(super::details_records::byte_size_from_value)
                .transpose()?,
            indexes: indexes
                .into_iter()
                .map(|(pattern, record)| {
                    let settings = ExportIndexSettings {
                        filter: record.filter,
                        override_settings: record.override_settings,
                        matched_documents: None,
                    };
                    (pattern, settings)
                })
                .collect(),
        },
        KindRecord::UpgradeDatabase { from } => KindWithContent::UpgradeDatabase { from },
        KindRecord::IndexCompaction { index_uid } => KindWithContent::IndexCompaction { index_uid },
        KindRecord::NetworkTopologyChange(_) => KindWithContent::NetworkTopologyChange,
        other => return rule_kind_from_record(other),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::tasks::model::Details;
    use time::macros::datetime;

    fn round_trip(task: Task) {
        let line = serde_json::to_string(&task_to_record(&task, &[])).unwrap();
        let record: TaskRecord = serde_json::from_str(&line).unwrap();
        let content = match &task.kind {
            KindWithContent::DocumentAdditionOrUpdate {
                content_file,
                content_bytes,
                ..
            } => Some((content_file.clone(), *content_bytes)),
            _ => None,
        };
        assert_eq!(task_from_record(record, content).unwrap(), task, "{line}");
    }

    #[test]
    fn a_meilisearch_line_reads_as_its_task() {
        let line = r#"{"uid":3,"indexUid":"vector","status":"failed","type":{"documentImport":{"primary_key":null,"method":"ReplaceDocuments","documents_count":1,"allow_index_creation":true}},"details":{"DocumentAdditionOrUpdate":{"received_documents":1,"indexed_documents":0}},"error":{"message":"Invalid vector dimensions: expected: `768`, found: `512`.","code":"invalid_vector_dimensions","type":"invalid_request","link":"https://docs.meilisearch.com/errors#invalid_vector_dimensions"},"enqueuedAt":"2024-05-16T15:37:50.5386Z","startedAt":"2024-05-16T15:37:50.539681Z","finishedAt":"2024-05-16T15:37:54.065705Z"}"#;
        let record: TaskRecord = serde_json::from_str(line).unwrap();
        let task = task_from_record(record, None).unwrap();
        assert_eq!(task.uid, 3);
        assert_eq!(task.status, Status::Failed);
        assert_eq!(task.index_uid(), Some("vector"));
        assert_eq!(
            task.details,
            Some(Details::DocumentAdditionOrUpdate {
                received_documents: 1,
                indexed_documents: Some(0)
            })
        );
        let error = task.error.unwrap().0;
        assert_eq!(error.code, Code::InvalidVectorDimensions);
        // Written back, the line is Meilisearch's but for the `batchUid` it always writes.
        let task = task_from_record(serde_json::from_str(line).unwrap(), None).unwrap();
        let written = serde_json::to_value(task_to_record(&task, &[])).unwrap();
        let mut expected: Value = serde_json::from_str(line).unwrap();
        expected["batchUid"] = Value::Null;
        assert_eq!(written, expected);
    }

    #[test]
    fn every_kind_of_task_comes_back_from_its_record() {
        let at = datetime!(2025-01-02 03:04:05 UTC);
        let kinds = vec![
            KindWithContent::DocumentAdditionOrUpdate {
                index_uid: "movies".into(),
                primary_key: Some("id".into()),
                method: DocumentMethod::Update,
                content_file: "file.ndjson".into(),
                documents_count: 3,
                content_bytes: 42,
                allow_index_creation: true,
                skip_creation: false,
            },
            KindWithContent::TaskCancelation {
                query: "?statuses=enqueued".into(),
                tasks: vec![0, 1, 70_000],
            },
            KindWithContent::Export {
                url: "http://localhost:7700".into(),
                api_key: Some("secret".into()),
                payload_size: Some(50 << 20),
                indexes: BTreeMap::from([(
                    "*".to_owned(),
                    ExportIndexSettings {
                        filter: Some(Value::from("a = 1")),
                        override_settings: true,
                        matched_documents: None,
                    },
                )]),
            },
            KindWithContent::IndexSwap {
                swaps: vec![IndexSwap {
                    indexes: ("a".into(), "b".into()),
                    rename: true,
                }],
            },
            KindWithContent::DocumentClear {
                index_uid: "movies".into(),
            },
            KindWithContent::IndexCompaction {
                index_uid: "movies".into(),
            },
        ];
        for kind in kinds {
            let mut task = Task::new(7, kind, at, Some("meta".into()));
            round_trip(task.clone());
            task.status = Status::Succeeded;
            task.batch_uid = Some(2);
            task.started_at = Some(at);
            task.finished_at = Some(at);
            round_trip(task);
        }
    }

    #[test]
    fn task_uid_sets_are_written_as_roaring_bitmap_bytes() {
        let set = TaskUidSet(vec![1, 2, 3]);
        let json = serde_json::to_value(&set).unwrap();
        let mut expected = Vec::new();
        roaring::RoaringBitmap::from_iter([1u32, 2, 3])
            .serialize_into(&mut expected)
            .unwrap();
        assert_eq!(json, serde_json::to_value(expected).unwrap());
        assert_eq!(serde_json::from_value::<TaskUidSet>(json).unwrap(), set);
    }
}
