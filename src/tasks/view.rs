//! The JSON the API shows for tasks and batches: the summarized task answered by every
//! task-creating route, the full task of `GET /tasks`, the `details` object and its
//! accumulation over a batch, dates and durations (reference §0.5, §2.1, §2.2, §2.6).
//!
//! Invariants:
//! - objects are built key by key (serde_json keeps insertion order), so key order is
//!   Meilisearch's declaration order;
//! - dates are RFC 3339 in UTC with a `Z`, fractional seconds only when non-zero and trimmed;
//! - durations are ISO 8601 (`P[nD][T<s>[.fff|.ffffff|.fffffffff]S]`), `null` when negative.

use std::fmt::Write;

use serde_json::{Map, Value, json};
use time::format_description::well_known::Rfc3339;
use time::{Duration, OffsetDateTime};

use super::batch::Batch;
use super::model::{Details, ExportIndexSettings, IndexSwap, Task};
use crate::auth::masked_secret::masked_secret;

/// The key order of a settings object (`GET /settings`), used to order merged settings.
const SETTINGS_KEY_ORDER: [&str; 22] = crate::settings::apply::SETTING_KEYS;

/// Formats a date as RFC 3339 in UTC.
pub fn format_date(date: OffsetDateTime) -> String {
    date.to_offset(time::UtcOffset::UTC)
        .format(&Rfc3339)
        .expect("a date between years 0 and 9999 always formats as RFC 3339")
}

/// The JSON of an optional date.
fn date_value(date: Option<OffsetDateTime>) -> Value {
    date.map_or(Value::Null, |date| Value::String(format_date(date)))
}

/// Formats a duration as ISO 8601, `None` when negative.
pub fn format_duration(duration: Duration) -> Option<String> {
    const SECONDS_PER_DAY: i64 = 86_400;
    const NANOSECONDS_PER_MILLISECOND: i32 = 1_000_000;
    const NANOSECONDS_PER_MICROSECOND: i32 = 1_000;
    if duration.is_negative() {
        return None;
    }
    let whole_seconds = duration.whole_seconds();
    let days = whole_seconds / SECONDS_PER_DAY;
    let seconds = whole_seconds - days * SECONDS_PER_DAY;
    let nanoseconds = duration.subsec_nanoseconds();
    let has_date = days != 0;
    let has_time = seconds != 0 || nanoseconds != 0 || !has_date;
    let mut text = String::from("P");
    if has_date {
        write!(text, "{days}D").expect("writing to a String never fails");
    }
    if has_time {
        let written = if nanoseconds == 0 {
            write!(text, "T{seconds}S")
        } else if nanoseconds % NANOSECONDS_PER_MILLISECOND == 0 {
            let milliseconds = nanoseconds / NANOSECONDS_PER_MILLISECOND;
            write!(text, "T{seconds}.{milliseconds:03}S")
        } else if nanoseconds % NANOSECONDS_PER_MICROSECOND == 0 {
            let microseconds = nanoseconds / NANOSECONDS_PER_MICROSECOND;
            write!(text, "T{seconds}.{microseconds:06}S")
        } else {
            write!(text, "T{seconds}.{nanoseconds:09}S")
        };
        written.expect("writing to a String never fails");
    }
    Some(text)
}

/// The JSON of the duration between two optional dates.
fn duration_value(start: Option<OffsetDateTime>, end: Option<OffsetDateTime>) -> Value {
    start
        .zip(end)
        .and_then(|(start, end)| format_duration(end - start))
        .map_or(Value::Null, Value::String)
}

/// The task as task-creating routes answer it (`taskUid`, `indexUid`, `status`, `type`,
/// `enqueuedAt`, and `customMetadata` when set).
pub fn summarized_task(task: &Task) -> Value {
    let mut object = Map::new();
    object.insert("taskUid".into(), json!(task.uid));
    object.insert("indexUid".into(), json!(task.index_uid()));
    object.insert("status".into(), json!(task.status.name()));
    object.insert("type".into(), json!(task.kind().name()));
    object.insert("enqueuedAt".into(), json!(format_date(task.enqueued_at)));
    if let Some(metadata) = &task.custom_metadata {
        object.insert("customMetadata".into(), json!(metadata));
    }
    Value::Object(object)
}

/// The full task of `GET /tasks/{uid}` and `GET /tasks`.
pub fn task_view(task: &Task) -> Value {
    let mut object = Map::new();
    object.insert("uid".into(), json!(task.uid));
    object.insert("batchUid".into(), json!(task.batch_uid));
    object.insert("indexUid".into(), json!(task.index_uid()));
    object.insert("status".into(), json!(task.status.name()));
    object.insert("type".into(), json!(task.kind().name()));
    object.insert("canceledBy".into(), json!(task.canceled_by));
    if let Some(details) = &task.details {
        let view = DetailsView::from_details(details);
        object.insert("details".into(), Value::Object(view.to_json()));
    }
    let error = task.error.as_ref().map_or(Value::Null, |error| {
        let text = error.0.to_json();
        serde_json::from_str(&text).expect("an error object is valid JSON")
    });
    object.insert("error".into(), error);
    object.insert(
        "duration".into(),
        duration_value(task.started_at, task.finished_at),
    );
    object.insert("enqueuedAt".into(), json!(format_date(task.enqueued_at)));
    object.insert("startedAt".into(), date_value(task.started_at));
    object.insert("finishedAt".into(), date_value(task.finished_at));
    if let Some(network) = &task.network {
        let network = serde_json::to_value(network).expect("a task network is JSON");
        object.insert("network".into(), network);
    }
    if let Some(metadata) = &task.custom_metadata {
        object.insert("customMetadata".into(), json!(metadata));
    }
    Value::Object(object)
}

/// The batch of `GET /batches/{uid}` and `GET /batches`.
pub fn batch_view(batch: &Batch) -> Value {
    let mut object = Map::new();
    object.insert("uid".into(), json!(batch.uid));
    object.insert("progress".into(), progress_value(batch));
    object.insert("details".into(), Value::Object(batch_details(batch)));
    object.insert("stats".into(), stats_value(batch));
    object.insert(
        "duration".into(),
        duration_value(Some(batch.started_at), batch.finished_at),
    );
    object.insert("startedAt".into(), json!(format_date(batch.started_at)));
    object.insert("finishedAt".into(), date_value(batch.finished_at));
    object.insert("batchStrategy".into(), json!(batch.stop_reason));
    Value::Object(object)
}

/// The detail keys whose `null` a finished batch does not show: Meilisearch stores a
/// finished batch, and these keys' `null` ("none yet") reads back as absent.
const BATCH_DETAILS_OMITTED_WHEN_NULL: &[&str] = &[
    "editedDocuments",
    "primaryKey",
    "deletedDocuments",
    "canceledTasks",
    "deletedTasks",
    "originalFilter",
    "dumpUid",
    "context",
];

/// A batch's accumulated details as Meilisearch shows them (see
/// [`BATCH_DETAILS_OMITTED_WHEN_NULL`]); a batch still processing keeps every key.
fn batch_details(batch: &Batch) -> Map<String, Value> {
    let mut details = batch.details.clone();
    if batch.finished_at.is_some() {
        details.retain(|key, value| {
            !(value.is_null() && BATCH_DETAILS_OMITTED_WHEN_NULL.contains(&key.as_str()))
        });
    }
    details
}

fn progress_value(batch: &Batch) -> Value {
    let Some(progress) = &batch.progress else {
        return Value::Null;
    };
    let steps: Vec<Value> = progress
        .steps
        .iter()
        .map(|step| {
            let mut object = Map::new();
            object.insert("currentStep".into(), json!(step.current_step));
            object.insert("finished".into(), json!(step.finished));
            object.insert("total".into(), json!(step.total));
            Value::Object(object)
        })
        .collect();
    let mut object = Map::new();
    object.insert("steps".into(), Value::Array(steps));
    object.insert("percentage".into(), json!(progress.percentage));
    Value::Object(object)
}

fn stats_value(batch: &Batch) -> Value {
    let stats = &batch.stats;
    let mut object = Map::new();
    object.insert("totalNbTasks".into(), json!(stats.total_nb_tasks));
    let status: Map<String, Value> = stats
        .status
        .iter()
        .map(|(status, count)| (status.name().to_owned(), json!(count)))
        .collect();
    object.insert("status".into(), Value::Object(status));
    let types: Map<String, Value> = stats
        .types
        .iter()
        .map(|(kind, count)| (kind.name().to_owned(), json!(count)))
        .collect();
    object.insert("types".into(), Value::Object(types));
    let index_uids: Map<String, Value> = stats
        .index_uids
        .iter()
        .map(|(index, count)| (index.clone(), json!(count)))
        .collect();
    object.insert("indexUids".into(), Value::Object(index_uids));
    if !stats.progress_trace.is_empty() {
        object.insert(
            "progressTrace".into(),
            Value::Object(stats.progress_trace.clone()),
        );
    }
    if let Some(congestion) = &stats.write_channel_congestion {
        object.insert(
            "writeChannelCongestion".into(),
            Value::Object(congestion.clone()),
        );
    }
    if !stats.internal_database_sizes.is_empty() {
        object.insert(
            "internalDatabaseSizes".into(),
            Value::Object(stats.internal_database_sizes.clone()),
        );
    }
    let embedder = &batch.embedder_stats;
    if embedder.total != 0 || embedder.failed != 0 || embedder.last_error.is_some() {
        let mut requests = Map::new();
        requests.insert("total".into(), json!(embedder.total));
        requests.insert("failed".into(), json!(embedder.failed));
        if let Some(error) = &embedder.last_error {
            requests.insert("lastError".into(), json!(error));
        }
        object.insert("embedderRequests".into(), Value::Object(requests));
    }
    Value::Object(object)
}

/// `details` as the API shows it: every field optional, counters `Some(None)` while pending
/// (shown as `null`). Field order is the key order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DetailsView {
    pub received_documents: Option<u64>,
    pub indexed_documents: Option<Option<u64>>,
    pub edited_documents: Option<Option<u64>>,
    pub primary_key: Option<Option<String>>,
    pub provided_ids: Option<u64>,
    pub deleted_documents: Option<Option<u64>>,
    pub matched_tasks: Option<u64>,
    pub canceled_tasks: Option<Option<u64>>,
    pub deleted_tasks: Option<Option<u64>>,
    pub original_filter: Option<Option<String>>,
    pub dump_uid: Option<Option<String>>,
    pub context: Option<Option<Map<String, Value>>>,
    pub function: Option<String>,
    pub settings: Option<Map<String, Value>>,
    pub swaps: Option<Vec<IndexSwap>>,
    pub upgrade_from: Option<String>,
    pub upgrade_to: Option<String>,
    pub url: Option<String>,
    pub api_key: Option<String>,
    pub payload_size: Option<String>,
    pub indexes: Option<std::collections::BTreeMap<String, ExportIndexSettings>>,
    pub old_index_uid: Option<String>,
    pub new_index_uid: Option<String>,
    pub pre_compaction_size: Option<String>,
    pub post_compaction_size: Option<String>,
    pub moved_documents: Option<u64>,
    pub message: Option<String>,
    /// A dynamic search rule's `PATCH` fields (`dsrUpdate`).
    pub rule: Option<Map<String, Value>>,
    pub updated_rules: Option<u64>,
}

/// A size as Meilisearch writes it in details (`byte_unit`, binary or decimal unit).
pub fn human_size(bytes: u64) -> String {
    byte_unit::Byte::from_u64(bytes)
        .get_appropriate_unit(byte_unit::UnitType::Both)
        .to_string()
}

fn format_version(version: (u32, u32, u32)) -> String {
    format!("v{}.{}.{}", version.0, version.1, version.2)
}

impl DetailsView {
    /// The view of one task's details, built by the function of its family.
    pub fn from_details(details: &Details) -> DetailsView {
        match details {
            Details::DocumentAdditionOrUpdate { .. }
            | Details::DocumentEdition { .. }
            | Details::DocumentDeletion { .. }
            | Details::DocumentDeletionByFilter { .. }
            | Details::ClearAll { .. } => Self::from_document_details(details.clone()),
            Details::SettingsUpdate { .. }
            | Details::IndexInfo { .. }
            | Details::IndexSwap { .. }
            | Details::IndexCompaction { .. } => Self::from_index_details(details.clone()),
            Details::TaskCancelation { .. } | Details::TaskDeletion { .. } => {
                Self::from_task_details(details.clone())
            }
            Details::Dump { .. }
            | Details::Export { .. }
            | Details::UpgradeDatabase { .. }
            | Details::NetworkTopologyChange { .. } => Self::from_instance_details(details.clone()),
            Details::DsrUpdate {
                rule,
                updated_rules,
            } => DetailsView {
                rule: rule.clone(),
                updated_rules: Some(*updated_rules),
                ..DetailsView::default()
            },
        }
    }

    /// The view of the details of a task that adds, edits or deletes documents; the empty
    /// view for any other family (`from_details` never passes one).
    fn from_document_details(details: Details) -> DetailsView {
        let empty = DetailsView::default();
        match details {
            Details::DocumentAdditionOrUpdate {
                received_documents,
                indexed_documents,
            } => DetailsView {
                received_documents: Some(received_documents),
                indexed_documents: Some(indexed_documents),
                ..empty
            },
            Details::DocumentEdition {
                deleted_documents,
                edited_documents,
                original_filter,
                context,
                function,
            } => DetailsView {
                deleted_documents: Some(deleted_documents),
                edited_documents: Some(edited_documents),
                original_filter: Some(original_filter),
                context: Some(context),
                function: Some(function),
                ..empty
            },
            Details::DocumentDeletion {
                provided_ids,
                deleted_documents,
            } => DetailsView {
                provided_ids: Some(provided_ids),
                deleted_documents: Some(deleted_documents),
                original_filter: Some(None),
                ..empty
            },
            Details::DocumentDeletionByFilter {
                original_filter,
                deleted_documents,
            } => DetailsView {
                provided_ids: Some(0),
                original_filter: Some(Some(original_filter)),
                deleted_documents: Some(deleted_documents),
                ..empty
            },
            Details::ClearAll { deleted_documents } => DetailsView {
                deleted_documents: Some(deleted_documents),
                ..empty
            },
            _ => empty,
        }
    }

    /// The view of the details of a task that changes an index's settings, information,
    /// name or size; the empty view for any other family (`from_details` never passes one).
    fn from_index_details(details: Details) -> DetailsView {
        let empty = DetailsView::default();
        match details {
            Details::SettingsUpdate { settings } => DetailsView {
                settings: Some(settings),
                ..empty
            },
            Details::IndexInfo {
                primary_key,
                old_index_uid,
                new_index_uid,
            } => DetailsView {
                primary_key: Some(primary_key),
                old_index_uid,
                new_index_uid,
                ..empty
            },
            Details::IndexSwap { swaps } => DetailsView {
                swaps: Some(swaps),
                ..empty
            },
            Details::IndexCompaction {
                pre_compaction_size,
                post_compaction_size,
            } => DetailsView {
                pre_compaction_size: pre_compaction_size.map(human_size),
                post_compaction_size: post_compaction_size.map(human_size),
                ..empty
            },
            _ => empty,
        }
    }

    /// The view of the details of a task that cancels or deletes tasks; the empty view for
    /// any other family (`from_details` never passes one).
    fn from_task_details(details: Details) -> DetailsView {
        let empty = DetailsView::default();
        match details {
            Details::TaskCancelation {
                matched_tasks,
                canceled_tasks,
                original_filter,
            } => DetailsView {
                matched_tasks: Some(matched_tasks),
                canceled_tasks: Some(canceled_tasks),
                original_filter: Some(Some(original_filter)),
                ..empty
            },
            Details::TaskDeletion {
                matched_tasks,
                deleted_tasks,
                original_filter,
            } => DetailsView {
                matched_tasks: Some(matched_tasks),
                deleted_tasks: Some(deleted_tasks),
                original_filter: Some(Some(original_filter)),
                ..empty
            },
            _ => empty,
        }
    }

    /// The view of the details of a task on the whole instance (dump, export, upgrade,
    /// network change); the empty view for any other family (`from_details` never passes one).
    fn from_instance_details(details: Details) -> DetailsView {
        let empty = DetailsView::default();
        match details {
            Details::Dump { dump_uid } => DetailsView {
                dump_uid: Some(dump_uid),
                ..empty
            },
            Details::Export {
                url,
                api_key,
                payload_size,
                indexes,
            } => DetailsView {
                url: Some(url),
                api_key: api_key.as_deref().map(masked_secret),
                payload_size: payload_size.map(human_size),
                indexes: Some(indexes),
                ..empty
            },
            Details::UpgradeDatabase { from, to } => DetailsView {
                upgrade_from: Some(format_version(from)),
                upgrade_to: Some(format_version(to)),
                ..empty
            },
            Details::NetworkTopologyChange {
                moved_documents,
                message,
            } => DetailsView {
                moved_documents: Some(moved_documents),
                message: Some(message),
                ..empty
            },
            _ => empty,
        }
    }

    /// Adds `other` (a later task of the same batch): counters add up, first values win
    /// for texts, `upgradeTo` takes the last, swaps are appended, settings merged.
    pub fn accumulate(&mut self, other: &DetailsView) {
        sum(&mut self.received_documents, other.received_documents);
        sum(&mut self.moved_documents, other.moved_documents);
        first(&mut self.message, &other.message);
        sum_pending(&mut self.indexed_documents, other.indexed_documents);
        sum_pending(&mut self.edited_documents, other.edited_documents);
        first_pending(&mut self.primary_key, &other.primary_key);
        sum(&mut self.provided_ids, other.provided_ids);
        sum_pending(&mut self.deleted_documents, other.deleted_documents);
        sum(&mut self.matched_tasks, other.matched_tasks);
        sum_pending(&mut self.canceled_tasks, other.canceled_tasks);
        sum_pending(&mut self.deleted_tasks, other.deleted_tasks);
        self.accumulate_filter(&other.original_filter);
        first_pending(&mut self.dump_uid, &other.dump_uid);
        first_pending(&mut self.context, &other.context);
        first(&mut self.function, &other.function);
        match (&mut self.settings, &other.settings) {
            (Some(left), Some(right)) => merge_settings(left, right),
            (None, Some(right)) => self.settings = Some(right.clone()),
            _ => {}
        }
        match (&mut self.swaps, &other.swaps) {
            (Some(left), Some(right)) => left.extend(right.iter().cloned()),
            (None, Some(right)) => self.swaps = Some(right.clone()),
            _ => {}
        }
        first(&mut self.url, &other.url);
        first(&mut self.api_key, &other.api_key);
        first(&mut self.payload_size, &other.payload_size);
        first(&mut self.indexes, &other.indexes);
        first(&mut self.upgrade_from, &other.upgrade_from);
        if other.upgrade_to.is_some() {
            self.upgrade_to.clone_from(&other.upgrade_to);
        }
        first(&mut self.old_index_uid, &other.old_index_uid);
        first(&mut self.new_index_uid, &other.new_index_uid);
        first(&mut self.pre_compaction_size, &other.pre_compaction_size);
        first(&mut self.post_compaction_size, &other.post_compaction_size);
        // A batch of rule changes shows how many rules they touched, not each change.
        self.rule = None;
        sum(&mut self.updated_rules, other.updated_rules);
    }

    /// Two filters are joined with `&`.
    fn accumulate_filter(&mut self, other: &Option<Option<String>>) {
        self.original_filter = match (self.original_filter.take(), other) {
            (None, None) => None,
            (Some(None) | None, Some(None)) | (Some(None), None) => Some(None),
            (Some(None) | None, Some(Some(filter))) => Some(Some(filter.clone())),
            (Some(Some(filter)), None | Some(None)) => Some(Some(filter)),
            (Some(Some(left)), Some(Some(right))) => Some(Some(format!("{left}&{right}"))),
        };
    }

    /// The `details` object, keys in Meilisearch's order (settings flattened in place).
    pub fn to_json(&self) -> Map<String, Value> {
        let mut object = Map::new();
        let mut put = |key: &str, value: Option<Value>| {
            if let Some(value) = value {
                object.insert(key.to_owned(), value);
            }
        };
        put(
            "receivedDocuments",
            self.received_documents.map(|v| json!(v)),
        );
        put("indexedDocuments", self.indexed_documents.map(|v| json!(v)));
        put("editedDocuments", self.edited_documents.map(|v| json!(v)));
        put("primaryKey", self.primary_key.as_ref().map(|v| json!(v)));
        put("providedIds", self.provided_ids.map(|v| json!(v)));
        put("deletedDocuments", self.deleted_documents.map(|v| json!(v)));
        put("matchedTasks", self.matched_tasks.map(|v| json!(v)));
        put("canceledTasks", self.canceled_tasks.map(|v| json!(v)));
        put("deletedTasks", self.deleted_tasks.map(|v| json!(v)));
        put(
            "originalFilter",
            self.original_filter.as_ref().map(|v| json!(v)),
        );
        put("dumpUid", self.dump_uid.as_ref().map(|v| json!(v)));
        put("context", self.context.as_ref().map(|v| json!(v)));
        put("function", self.function.as_ref().map(|v| json!(v)));
        if let Some(settings) = &self.settings {
            for (key, value) in settings {
                put(key, Some(value.clone()));
            }
        }
        put("swaps", self.swaps.as_ref().map(|swaps| swaps_value(swaps)));
        put("upgradeFrom", self.upgrade_from.as_ref().map(|v| json!(v)));
        put("upgradeTo", self.upgrade_to.as_ref().map(|v| json!(v)));
        put("url", self.url.as_ref().map(|v| json!(v)));
        put("apiKey", self.api_key.as_ref().map(|v| json!(v)));
        put("payloadSize", self.payload_size.as_ref().map(|v| json!(v)));
        put("indexes", self.indexes.as_ref().map(export_indexes_value));
        put("oldIndexUid", self.old_index_uid.as_ref().map(|v| json!(v)));
        put("newIndexUid", self.new_index_uid.as_ref().map(|v| json!(v)));
        put(
            "preCompactionSize",
            self.pre_compaction_size.as_ref().map(|v| json!(v)),
        );
        put(
            "postCompactionSize",
            self.post_compaction_size.as_ref().map(|v| json!(v)),
        );
        put("movedDocuments", self.moved_documents.map(|v| json!(v)));
        put("message", self.message.as_ref().map(|v| json!(v)));
        put("rule", self.rule.as_ref().map(|v| json!(v)));
        put("updatedRules", self.updated_rules.map(|v| json!(v)));
        object
    }
}

fn swaps_value(swaps: &[IndexSwap]) -> Value {
    Value::Array(
        swaps
            .iter()
            .map(|swap| {
                let mut object = Map::new();
                object.insert(
                    "indexes".into(),
                    json!([swap.indexes.0.clone(), swap.indexes.1.clone()]),
                );
                object.insert("rename".into(), json!(swap.rename));
                Value::Object(object)
            })
            .collect(),
    )
}

fn export_indexes_value(
    indexes: &std::collections::BTreeMap<String, ExportIndexSettings>,
) -> Value {
    let mut object = Map::new();
    for (pattern, settings) in indexes {
        let mut entry = Map::new();
        entry.insert(
            "filter".into(),
            settings.filter.clone().unwrap_or(Value::Null),
        );
        entry.insert("overrideSettings".into(), json!(settings.override_settings));
        // snake_case, as Meilisearch 1.41 writes it (its details struct is not renamed;
        // seen on its binary: `"matched_documents": 178`).
        if let Some(matched) = settings.matched_documents {
            entry.insert("matched_documents".into(), json!(matched));
        }
        object.insert(pattern.clone(), Value::Object(entry));
    }
    Value::Object(object)
}

fn sum(left: &mut Option<u64>, right: Option<u64>) {
    if let Some(right) = right {
        *left = Some(left.map_or(right, |left| left.saturating_add(right)));
    }
}

fn sum_pending(left: &mut Option<Option<u64>>, right: Option<Option<u64>>) {
    *left = match (*left, right) {
        (None, None) => None,
        (None | Some(None), Some(None)) | (Some(None), None) => Some(None),
        (None | Some(None), Some(Some(count))) | (Some(Some(count)), None | Some(None)) => {
            Some(Some(count))
        }
        (Some(Some(left)), Some(Some(right))) => Some(Some(left.saturating_add(right))),
    };
}

fn first<T: Clone>(left: &mut Option<T>, right: &Option<T>) {
    if left.is_none() {
        left.clone_from(right);
    }
}

fn first_pending<T: Clone>(left: &mut Option<Option<T>>, right: &Option<Option<T>>) {
    match (&*left, right) {
        (None, Some(_)) | (Some(None), Some(Some(_))) => left.clone_from(right),
        _ => {}
    }
}

/// Later settings override earlier ones key by key, except two `embedders` objects whose
/// embedders are merged by name (sorted, as Meilisearch's map); the result keeps settings
/// key order.
fn merge_settings(left: &mut Map<String, Value>, right: &Map<String, Value>) {
    const EMBEDDERS_KEY: &str = "embedders";
    for (key, value) in right {
        match (left.get_mut(key), value) {
            (Some(Value::Object(earlier)), Value::Object(later)) if key == EMBEDDERS_KEY => {
                for (name, embedder) in later {
                    earlier.insert(name.clone(), embedder.clone());
                }
                earlier.sort_keys();
            }
            _ => {
                left.insert(key.clone(), value.clone());
            }
        }
    }
    let mut ordered = Map::new();
    for key in SETTINGS_KEY_ORDER {
        if let Some(value) = left.remove(key) {
            ordered.insert(key.to_owned(), value);
        }
    }
    ordered.append(left);
    *left = ordered;
}
