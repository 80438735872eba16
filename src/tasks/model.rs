//! The task model: a task's identity, type with its content, status, details and dates, as
//! Meilisearch v1.41 keeps them (reference §2.2–2.3).
//!
//! Invariants:
//! - [`Status::ALL`] and [`Kind::ALL`] are in Meilisearch's declaration order, which is the
//!   order of error messages and of batch statistics;
//! - a task's `details` are `None` only for the kinds that have none (`snapshotCreation`,
//!   and `indexDeletion` finished without a document count);
//! - the dates are UTC; `started_at <= finished_at` when both are set.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::control::dynamic_search_rule_patch::RulePatch;
use crate::control::dynamic_search_rules::DYNAMIC_SEARCH_RULES_TASK_INDEX;
use crate::decode::FromQueryParameter;
use crate::errors::{Code, ResponseError};
use crate::settings::apply::mask_embedder_api_keys;

/// The global, increasing identifier of a task (starts at 0).
pub type TaskUid = u32;

/// The global, increasing identifier of a batch (starts at 0).
pub type BatchUid = u32;

/// The version Meilisearch-compatible upgrade tasks report as their target.
pub const TARGET_VERSION: (u32, u32, u32) = (1, 41, 0);

/// Where a task is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Status {
    Enqueued,
    Processing,
    Succeeded,
    Failed,
    Canceled,
}

impl Status {
    /// Every status, in Meilisearch's order.
    pub const ALL: [Status; 5] = [
        Status::Enqueued,
        Status::Processing,
        Status::Succeeded,
        Status::Failed,
        Status::Canceled,
    ];

    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            Status::Enqueued => "enqueued",
            Status::Processing => "processing",
            Status::Succeeded => "succeeded",
            Status::Failed => "failed",
            Status::Canceled => "canceled",
        }
    }

    /// Whether the task will not change any more (`succeeded`, `failed`, `canceled`).
    pub fn is_finished(self) -> bool {
        matches!(self, Status::Succeeded | Status::Failed | Status::Canceled)
    }

    /// Whether a stored task of kind `kind` may go from this status to `next` (the queue
    /// asserts it on every write of a task): enqueued → processing → succeeded, failed or
    /// canceled; an enqueued task may be canceled before it runs, and a processing one goes
    /// back to enqueued (an aborted batch, a crash, a network change between its batches).
    /// A failed `upgradeDatabase` is retried or canceled. Otherwise a finished task keeps
    /// its status (a history rewrite or a network record may still change other fields).
    pub fn may_become(self, next: Status, kind: Kind) -> bool {
        match (self, next) {
            (from, to) if from == to => true,
            (Status::Enqueued, Status::Processing | Status::Canceled) | (Status::Processing, _) => {
                true
            }
            (Status::Failed, Status::Processing | Status::Canceled) => {
                kind == Kind::UpgradeDatabase
            }
            _ => false,
        }
    }

    /// A stable one-byte code for on-disk keys.
    pub fn byte(self) -> u8 {
        match self {
            Status::Enqueued => 0,
            Status::Processing => 1,
            Status::Succeeded => 2,
            Status::Failed => 3,
            Status::Canceled => 4,
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

/// A `statuses` value that is not a status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseStatusError(pub String);

impl fmt::Display for ParseStatusError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<String> = Status::ALL
            .iter()
            .map(|status| format!("`{status}`"))
            .collect();
        write!(
            formatter,
            "`{}` is not a valid task status. Available statuses are {}.",
            self.0,
            names.join(", ")
        )
    }
}

impl std::error::Error for ParseStatusError {}

impl FromQueryParameter for Status {
    type Err = ParseStatusError;

    /// Case-insensitive, as Meilisearch.
    fn from_query_parameter(text: &str) -> Result<Self, ParseStatusError> {
        Status::ALL
            .into_iter()
            .find(|status| status.name().eq_ignore_ascii_case(text))
            .ok_or_else(|| ParseStatusError(text.to_owned()))
    }
}

/// The type of a task, as `type` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Kind {
    DocumentAdditionOrUpdate,
    DocumentEdition,
    DocumentDeletion,
    SettingsUpdate,
    IndexCreation,
    IndexDeletion,
    IndexUpdate,
    IndexSwap,
    TaskCancelation,
    TaskDeletion,
    DumpCreation,
    SnapshotCreation,
    Export,
    UpgradeDatabase,
    IndexCompaction,
    NetworkTopologyChange,
    DsrUpdate,
    DsrClear,
}

impl Kind {
    /// Every kind, in Meilisearch's order. [`Kind::byte`] (on-disk keys) is the position
    /// here: new kinds are appended, never inserted.
    pub const ALL: [Kind; 18] = [
        Kind::DocumentAdditionOrUpdate,
        Kind::DocumentEdition,
        Kind::DocumentDeletion,
        Kind::SettingsUpdate,
        Kind::IndexCreation,
        Kind::IndexDeletion,
        Kind::IndexUpdate,
        Kind::IndexSwap,
        Kind::TaskCancelation,
        Kind::TaskDeletion,
        Kind::DumpCreation,
        Kind::SnapshotCreation,
        Kind::Export,
        Kind::UpgradeDatabase,
        Kind::IndexCompaction,
        Kind::NetworkTopologyChange,
        Kind::DsrUpdate,
        Kind::DsrClear,
    ];

    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            Kind::DocumentAdditionOrUpdate => "documentAdditionOrUpdate",
            Kind::DocumentEdition => "documentEdition",
            Kind::DocumentDeletion => "documentDeletion",
            Kind::SettingsUpdate => "settingsUpdate",
            Kind::IndexCreation => "indexCreation",
            Kind::IndexDeletion => "indexDeletion",
            Kind::IndexUpdate => "indexUpdate",
            Kind::IndexSwap => "indexSwap",
            Kind::TaskCancelation => "taskCancelation",
            Kind::TaskDeletion => "taskDeletion",
            Kind::DumpCreation => "dumpCreation",
            Kind::SnapshotCreation => "snapshotCreation",
            Kind::Export => "export",
            Kind::UpgradeDatabase => "upgradeDatabase",
            Kind::IndexCompaction => "indexCompaction",
            Kind::NetworkTopologyChange => "networkTopologyChange",
            Kind::DsrUpdate => "dsrUpdate",
            Kind::DsrClear => "dsrClear",
        }
    }

    /// Whether tasks of this kind act on exactly one index (the others are hidden when a
    /// query names index uids or the key is restricted to some indexes).
    pub fn related_to_one_index(self) -> bool {
        matches!(
            self,
            Kind::DocumentAdditionOrUpdate
                | Kind::DocumentEdition
                | Kind::DocumentDeletion
                | Kind::SettingsUpdate
                | Kind::IndexCreation
                | Kind::IndexDeletion
                | Kind::IndexUpdate
                | Kind::IndexCompaction
        )
    }

    /// A stable one-byte code for on-disk keys.
    pub fn byte(self) -> u8 {
        let position = Kind::ALL
            .iter()
            .position(|kind| *kind == self)
            .expect("every kind is listed in Kind::ALL");
        u8::try_from(position).expect("there are fewer than 256 kinds")
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

/// A `types` value that is not a task type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseKindError(pub String);

impl fmt::Display for ParseKindError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<String> = Kind::ALL.iter().map(|kind| format!("`{kind}`")).collect();
        write!(
            formatter,
            "`{}` is not a valid task type. Available types are {}.",
            self.0,
            names.join(", ")
        )
    }
}

impl std::error::Error for ParseKindError {}

impl FromQueryParameter for Kind {
    type Err = ParseKindError;

    /// Case-insensitive, as Meilisearch.
    fn from_query_parameter(text: &str) -> Result<Self, ParseKindError> {
        Kind::ALL
            .into_iter()
            .find(|kind| kind.name().eq_ignore_ascii_case(text))
            .ok_or_else(|| ParseKindError(text.to_owned()))
    }
}

/// How a document addition merges with an existing document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum DocumentMethod {
    /// `POST /documents`: the new document replaces the old one.
    Replace,
    /// `PUT /documents`: fields are merged into the old document.
    Update,
}

/// One pair of an `indexSwap` task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexSwap {
    pub indexes: (String, String),
    pub rename: bool,
}

/// One index pattern of an `export` task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportIndexSettings {
    pub filter: Option<serde_json::Value>,
    pub override_settings: bool,
    /// Known once the export ran.
    pub matched_documents: Option<u64>,
}

/// A task's type with what it needs to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum KindWithContent {
    DocumentAdditionOrUpdate {
        index_uid: String,
        primary_key: Option<String>,
        method: DocumentMethod,
        /// The name of the update file holding the payload.
        content_file: String,
        /// Documents counted in the payload (`receivedDocuments`).
        documents_count: u64,
        /// Size of the update file, for the batch size limit.
        content_bytes: u64,
        allow_index_creation: bool,
        /// `skipCreation`: updates and replacements of missing documents are dropped.
        #[serde(default)]
        skip_creation: bool,
    },
    DocumentDeletion {
        index_uid: String,
        document_ids: Vec<String>,
    },
    DocumentDeletionByFilter {
        index_uid: String,
        filter: serde_json::Value,
    },
    DocumentEdition {
        index_uid: String,
        filter: Option<serde_json::Value>,
        context: Option<serde_json::Map<String, serde_json::Value>>,
        function: String,
    },
    DocumentClear {
        index_uid: String,
    },
    SettingsUpdate {
        index_uid: String,
        /// The submitted settings (settings key order, resets as the settings layer renders
        /// them, secrets kept: `details` masks them).
        settings: serde_json::Map<String, serde_json::Value>,
        is_deletion: bool,
        allow_index_creation: bool,
    },
    IndexDeletion {
        index_uid: String,
    },
    IndexCreation {
        index_uid: String,
        primary_key: Option<String>,
    },
    IndexUpdate {
        index_uid: String,
        primary_key: Option<String>,
        new_index_uid: Option<String>,
    },
    IndexSwap {
        swaps: Vec<IndexSwap>,
    },
    TaskCancelation {
        /// `?` followed by the raw query string.
        query: String,
        /// The task uids matched when the task was registered.
        tasks: Vec<TaskUid>,
    },
    TaskDeletion {
        query: String,
        tasks: Vec<TaskUid>,
    },
    DumpCreation,
    SnapshotCreation,
    Export {
        url: String,
        api_key: Option<String>,
        payload_size: Option<u64>,
        indexes: BTreeMap<String, ExportIndexSettings>,
    },
    UpgradeDatabase {
        from: (u32, u32, u32),
    },
    IndexCompaction {
        index_uid: String,
    },
    NetworkTopologyChange,
    /// `PATCH` (with `update`) or `DELETE` (without) of one dynamic search rule.
    DsrUpdate {
        rule_uid: String,
        update: Option<RulePatch>,
    },
    /// `DELETE /dynamic-search-rules`: every rule.
    DsrClear,
}

impl KindWithContent {
    /// The type `type` shows.
    pub fn kind(&self) -> Kind {
        match self {
            KindWithContent::DocumentAdditionOrUpdate { .. } => Kind::DocumentAdditionOrUpdate,
            KindWithContent::DocumentEdition { .. } => Kind::DocumentEdition,
            KindWithContent::DocumentDeletion { .. }
            | KindWithContent::DocumentDeletionByFilter { .. }
            | KindWithContent::DocumentClear { .. } => Kind::DocumentDeletion,
            KindWithContent::SettingsUpdate { .. } => Kind::SettingsUpdate,
            KindWithContent::IndexCreation { .. } => Kind::IndexCreation,
            KindWithContent::IndexDeletion { .. } => Kind::IndexDeletion,
            KindWithContent::IndexUpdate { .. } => Kind::IndexUpdate,
            KindWithContent::IndexSwap { .. } => Kind::IndexSwap,
            KindWithContent::TaskCancelation { .. } => Kind::TaskCancelation,
            KindWithContent::TaskDeletion { .. } => Kind::TaskDeletion,
            KindWithContent::DumpCreation => Kind::DumpCreation,
            KindWithContent::SnapshotCreation => Kind::SnapshotCreation,
            KindWithContent::Export { .. } => Kind::Export,
            KindWithContent::UpgradeDatabase { .. } => Kind::UpgradeDatabase,
            KindWithContent::IndexCompaction { .. } => Kind::IndexCompaction,
            KindWithContent::NetworkTopologyChange => Kind::NetworkTopologyChange,
            KindWithContent::DsrUpdate { .. } => Kind::DsrUpdate,
            KindWithContent::DsrClear => Kind::DsrClear,
        }
    }

    /// The index `indexUid` shows (`None` for global tasks, swaps included; the rules' tasks
    /// show Meilisearch's name of their queue, though they touch no index).
    pub fn index_uid(&self) -> Option<&str> {
        match self {
            KindWithContent::DocumentAdditionOrUpdate { index_uid, .. }
            | KindWithContent::DocumentEdition { index_uid, .. }
            | KindWithContent::DocumentDeletion { index_uid, .. }
            | KindWithContent::DocumentDeletionByFilter { index_uid, .. }
            | KindWithContent::DocumentClear { index_uid }
            | KindWithContent::SettingsUpdate { index_uid, .. }
            | KindWithContent::IndexCreation { index_uid, .. }
            | KindWithContent::IndexUpdate { index_uid, .. }
            | KindWithContent::IndexDeletion { index_uid }
            | KindWithContent::IndexCompaction { index_uid } => Some(index_uid),
            KindWithContent::IndexSwap { .. }
            | KindWithContent::TaskCancelation { .. }
            | KindWithContent::TaskDeletion { .. }
            | KindWithContent::DumpCreation
            | KindWithContent::SnapshotCreation
            | KindWithContent::Export { .. }
            | KindWithContent::UpgradeDatabase { .. }
            | KindWithContent::NetworkTopologyChange => None,
            KindWithContent::DsrUpdate { .. } | KindWithContent::DsrClear => {
                Some(DYNAMIC_SEARCH_RULES_TASK_INDEX)
            }
        }
    }

    /// Every index the task touches (what `indexUids` filters on): the task's index, the new
    /// uid of a rename, both sides of every swap (sorted, without duplicates).
    pub fn indexes(&self) -> Vec<&str> {
        match self {
            KindWithContent::IndexUpdate {
                index_uid,
                new_index_uid,
                ..
            } => {
                let mut indexes = vec![index_uid.as_str()];
                if let Some(new_uid) = new_index_uid {
                    indexes.push(new_uid.as_str());
                }
                indexes
            }
            KindWithContent::IndexSwap { swaps } => {
                let mut indexes: Vec<&str> = swaps
                    .iter()
                    .flat_map(|swap| [swap.indexes.0.as_str(), swap.indexes.1.as_str()])
                    .collect();
                indexes.sort_unstable();
                indexes.dedup();
                indexes
            }
            // Their `indexUid` names no index: they are global tasks.
            KindWithContent::DsrUpdate { .. } | KindWithContent::DsrClear => Vec::new(),
            other => other.index_uid().into_iter().collect(),
        }
    }

    /// The details a task has when it is registered; documents' tasks get theirs from
    /// `default_document_details`.
    pub fn default_details(&self) -> Option<Details> {
        Some(match self {
            KindWithContent::DocumentAdditionOrUpdate { .. }
            | KindWithContent::DocumentEdition { .. }
            | KindWithContent::DocumentDeletion { .. }
            | KindWithContent::DocumentDeletionByFilter { .. }
            | KindWithContent::DocumentClear { .. }
            | KindWithContent::IndexDeletion { .. } => self.default_document_details(),
            KindWithContent::SettingsUpdate { settings, .. } => {
                let mut settings = settings.clone();
                mask_embedder_api_keys(&mut settings);
                Details::SettingsUpdate { settings }
            }
            KindWithContent::IndexCreation { primary_key, .. } => Details::IndexInfo {
                primary_key: primary_key.clone(),
                old_index_uid: None,
                new_index_uid: None,
            },
            KindWithContent::IndexUpdate {
                index_uid,
                primary_key,
                new_index_uid,
            } => Details::IndexInfo {
                primary_key: primary_key.clone(),
                old_index_uid: new_index_uid.as_ref().map(|_| index_uid.clone()),
                new_index_uid: new_index_uid.clone(),
            },
            KindWithContent::IndexSwap { swaps } => Details::IndexSwap {
                swaps: swaps.clone(),
            },
            KindWithContent::TaskCancelation { query, tasks } => Details::TaskCancelation {
                matched_tasks: tasks.len() as u64,
                canceled_tasks: None,
                original_filter: query.clone(),
            },
            KindWithContent::TaskDeletion { query, tasks } => Details::TaskDeletion {
                matched_tasks: tasks.len() as u64,
                deleted_tasks: None,
                original_filter: query.clone(),
            },
            KindWithContent::DumpCreation => Details::Dump { dump_uid: None },
            KindWithContent::SnapshotCreation => return None,
            KindWithContent::Export {
                url,
                api_key,
                payload_size,
                indexes,
            } => Details::Export {
                url: url.clone(),
                api_key: api_key.clone(),
                payload_size: *payload_size,
                indexes: indexes.clone(),
            },
            KindWithContent::UpgradeDatabase { from } => Details::UpgradeDatabase {
                from: *from,
                to: TARGET_VERSION,
            },
            KindWithContent::IndexCompaction { .. } => Details::IndexCompaction {
                pre_compaction_size: None,
                post_compaction_size: None,
            },
            KindWithContent::NetworkTopologyChange => Details::NetworkTopologyChange {
                moved_documents: 0,
                message: NETWORK_CHANGE_DEFAULT_MESSAGE.to_owned(),
            },
            KindWithContent::DsrUpdate { .. } | KindWithContent::DsrClear => {
                return self.rule_details();
            }
        })
    }

    /// The details of a rule task when it is registered: a change shows its fields and one
    /// updated rule (as Meilisearch's do), a clear its deleted rules once known.
    fn rule_details(&self) -> Option<Details> {
        match self {
            KindWithContent::DsrUpdate { update, .. } => Some(Details::DsrUpdate {
                rule: update.as_ref().map(RulePatch::to_json),
                updated_rules: 1,
            }),
            KindWithContent::DsrClear => Some(Details::ClearAll {
                deleted_documents: None,
            }),
            _ => None,
        }
    }

    /// The details a task on documents (or an index deletion, which clears them) has when it
    /// is registered; `ClearAll` for any other kind (`default_details` never asks for one).
    fn default_document_details(&self) -> Details {
        match self {
            KindWithContent::DocumentAdditionOrUpdate {
                documents_count, ..
            } => Details::DocumentAdditionOrUpdate {
                received_documents: *documents_count,
                indexed_documents: None,
            },
            KindWithContent::DocumentEdition {
                filter,
                context,
                function,
                ..
            } => Details::DocumentEdition {
                deleted_documents: None,
                edited_documents: None,
                original_filter: filter.as_ref().map(serde_json::Value::to_string),
                context: context.clone(),
                function: function.clone(),
            },
            KindWithContent::DocumentDeletion { document_ids, .. } => Details::DocumentDeletion {
                provided_ids: document_ids.len() as u64,
                deleted_documents: None,
            },
            KindWithContent::DocumentDeletionByFilter { filter, .. } => {
                Details::DocumentDeletionByFilter {
                    original_filter: filter.to_string(),
                    deleted_documents: None,
                }
            }
            KindWithContent::DocumentClear { .. } | KindWithContent::IndexDeletion { .. } => {
                Details::ClearAll {
                    deleted_documents: None,
                }
            }
            _ => Details::ClearAll {
                deleted_documents: None,
            },
        }
    }
}

impl KindWithContent {
    /// The details of a task that finished without counting anything (Meilisearch's
    /// `default_finished_details`): counters become 0, except a clear which keeps `null` and
    /// an index deletion which has no details.
    pub fn default_finished_details(&self) -> Option<Details> {
        match self {
            KindWithContent::DocumentClear { .. } => Some(Details::ClearAll {
                deleted_documents: None,
            }),
            KindWithContent::IndexDeletion { .. } => None,
            KindWithContent::TaskCancelation { query, tasks } => Some(Details::TaskCancelation {
                matched_tasks: tasks.len() as u64,
                canceled_tasks: Some(0),
                original_filter: query.clone(),
            }),
            KindWithContent::TaskDeletion { query, tasks } => Some(Details::TaskDeletion {
                matched_tasks: tasks.len() as u64,
                deleted_tasks: Some(0),
                original_filter: query.clone(),
            }),
            KindWithContent::DocumentEdition {
                filter,
                context,
                function,
                ..
            } => Some(Details::DocumentEdition {
                deleted_documents: Some(0),
                edited_documents: Some(0),
                original_filter: filter.as_ref().map(serde_json::Value::to_string),
                context: context.clone(),
                function: function.clone(),
            }),
            KindWithContent::DocumentAdditionOrUpdate { .. }
            | KindWithContent::DocumentDeletion { .. }
            | KindWithContent::DocumentDeletionByFilter { .. } => {
                self.default_details().map(|details| details.to_failed())
            }
            _ => self.default_details(),
        }
    }
}

/// Refuses swaps that name an index more than once (checked when the task is registered).
pub fn check_index_swaps(swaps: &[IndexSwap]) -> Result<(), ResponseError> {
    let mut seen = std::collections::BTreeSet::new();
    let mut duplicates = std::collections::BTreeSet::new();
    for swap in swaps {
        for name in [&swap.indexes.0, &swap.indexes.1] {
            if !seen.insert(name) {
                duplicates.insert(name);
            }
        }
    }
    let message = match duplicates.len() {
        0 => return Ok(()),
        1 => format!(
            "Indexes must be declared only once during a swap. `{}` was specified several times.",
            duplicates.iter().next().expect("one duplicate")
        ),
        _ => {
            let names: Vec<String> = duplicates.iter().map(|name| format!("`{name}`")).collect();
            format!(
                "Indexes must be declared only once during a swap. {} were specified several times.",
                names.join(", ")
            )
        }
    };
    Err(ResponseError::new(
        Code::InvalidSwapDuplicateIndexFound,
        message,
    ))
}

/// The `message` of a network topology change before it runs.
pub const NETWORK_CHANGE_DEFAULT_MESSAGE: &str = "processing tasks for previous network versions";

/// What a task reports about its work; counters are `None` until the task finished.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Details {
    DocumentAdditionOrUpdate {
        received_documents: u64,
        indexed_documents: Option<u64>,
    },
    SettingsUpdate {
        settings: serde_json::Map<String, serde_json::Value>,
    },
    IndexInfo {
        primary_key: Option<String>,
        old_index_uid: Option<String>,
        new_index_uid: Option<String>,
    },
    DocumentDeletion {
        provided_ids: u64,
        deleted_documents: Option<u64>,
    },
    DocumentDeletionByFilter {
        original_filter: String,
        deleted_documents: Option<u64>,
    },
    DocumentEdition {
        deleted_documents: Option<u64>,
        edited_documents: Option<u64>,
        original_filter: Option<String>,
        context: Option<serde_json::Map<String, serde_json::Value>>,
        function: String,
    },
    ClearAll {
        deleted_documents: Option<u64>,
    },
    TaskCancelation {
        matched_tasks: u64,
        canceled_tasks: Option<u64>,
        original_filter: String,
    },
    TaskDeletion {
        matched_tasks: u64,
        deleted_tasks: Option<u64>,
        original_filter: String,
    },
    Dump {
        dump_uid: Option<String>,
    },
    IndexSwap {
        swaps: Vec<IndexSwap>,
    },
    Export {
        url: String,
        api_key: Option<String>,
        payload_size: Option<u64>,
        indexes: BTreeMap<String, ExportIndexSettings>,
    },
    UpgradeDatabase {
        from: (u32, u32, u32),
        to: (u32, u32, u32),
    },
    IndexCompaction {
        pre_compaction_size: Option<u64>,
        post_compaction_size: Option<u64>,
    },
    NetworkTopologyChange {
        moved_documents: u64,
        message: String,
    },
    /// A rule's change (`rule`: the fields of its `PATCH`, none for a deletion) and the
    /// rules it touches (1, as Meilisearch counts even a deletion of no rule).
    DsrUpdate {
        rule: Option<serde_json::Map<String, serde_json::Value>>,
        updated_rules: u64,
    },
}

impl Details {
    /// The details of a task that failed or was canceled: counters become 0.
    pub fn to_failed(&self) -> Details {
        let mut details = self.clone();
        match &mut details {
            Details::DocumentAdditionOrUpdate {
                indexed_documents, ..
            } => *indexed_documents = Some(0),
            Details::DocumentEdition {
                edited_documents, ..
            } => *edited_documents = Some(0),
            Details::DocumentDeletion {
                deleted_documents, ..
            }
            | Details::DocumentDeletionByFilter {
                deleted_documents, ..
            }
            | Details::ClearAll { deleted_documents } => *deleted_documents = Some(0),
            Details::TaskCancelation { canceled_tasks, .. } => *canceled_tasks = Some(0),
            Details::TaskDeletion { deleted_tasks, .. } => *deleted_tasks = Some(0),
            Details::IndexCompaction {
                pre_compaction_size,
                post_compaction_size,
            } => {
                *pre_compaction_size = None;
                *post_compaction_size = None;
            }
            Details::NetworkTopologyChange { message, .. } => {
                *message = format!("Failed. Previous status: {message}");
            }
            Details::SettingsUpdate { .. }
            | Details::IndexInfo { .. }
            | Details::Dump { .. }
            | Details::Export { .. }
            | Details::UpgradeDatabase { .. }
            | Details::IndexSwap { .. }
            | Details::DsrUpdate { .. } => {}
        }
        details
    }
}

/// The error of a failed task: an API error without its HTTP status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskError(pub ResponseError);

impl From<ResponseError> for TaskError {
    fn from(error: ResponseError) -> Self {
        TaskError(error)
    }
}

/// The stored form of a [`TaskError`]: the code by wire name.
#[derive(Serialize, Deserialize)]
struct StoredError {
    code: String,
    message: String,
}

impl Serialize for TaskError {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        StoredError {
            code: self.0.code.name().to_owned(),
            message: self.0.message.clone(),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for TaskError {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let stored = StoredError::deserialize(deserializer)?;
        let code = Code::ALL
            .iter()
            .copied()
            .find(|code| code.name() == stored.code)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown code `{}`", stored.code)))?;
        // Built directly: the stored message already carries any suffix `new` would add.
        Ok(TaskError(ResponseError {
            code,
            message: stored.message,
            status_override: None,
        }))
    }
}

/// One task of the queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    pub uid: TaskUid,
    pub batch_uid: Option<BatchUid>,
    pub status: Status,
    pub kind: KindWithContent,
    pub details: Option<Details>,
    pub error: Option<TaskError>,
    pub canceled_by: Option<TaskUid>,
    #[serde(with = "time::serde::rfc3339")]
    pub enqueued_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub started_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub finished_at: Option<OffsetDateTime>,
    pub custom_metadata: Option<String>,
    /// The task's place in a sharded network (`network`), if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<crate::network::task_network::TaskNetwork>,
}

impl Task {
    /// A new enqueued task with its registration details.
    pub fn new(
        uid: TaskUid,
        kind: KindWithContent,
        enqueued_at: OffsetDateTime,
        custom_metadata: Option<String>,
    ) -> Task {
        let mut task = Task {
            uid,
            batch_uid: None,
            status: Status::Enqueued,
            details: kind.default_details(),
            kind,
            error: None,
            canceled_by: None,
            enqueued_at,
            started_at: None,
            finished_at: None,
            custom_metadata,
            network: None,
        };
        task.forget_newer_tasks();
        task
    }

    /// The index `indexUid` shows.
    pub fn index_uid(&self) -> Option<&str> {
        self.kind.index_uid()
    }

    /// Every index the task touches.
    pub fn indexes(&self) -> Vec<&str> {
        self.kind.indexes()
    }

    /// The type.
    pub fn kind(&self) -> Kind {
        self.kind.kind()
    }

    /// A cancelation or deletion never targets itself or a newer task (Meilisearch removes
    /// them at registration, and `matchedTasks` counts what is left).
    fn forget_newer_tasks(&mut self) {
        let uid = self.uid;
        let remaining = match &mut self.kind {
            KindWithContent::TaskCancelation { tasks, .. }
            | KindWithContent::TaskDeletion { tasks, .. } => {
                tasks.retain(|task| *task < uid);
                tasks.len() as u64
            }
            _ => return,
        };
        if let Some(
            Details::TaskCancelation { matched_tasks, .. }
            | Details::TaskDeletion { matched_tasks, .. },
        ) = &mut self.details
        {
            *matched_tasks = remaining;
        }
    }
}
