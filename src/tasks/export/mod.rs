//! The `export` task (reference §4): every index a pattern of the task selects is sent to
//! the target, one index after the other in uid order — the index prepared there
//! ([`target`]), then the documents the pattern's filter selects, streamed by every shard
//! of the index at once (`crate::host::export`).
//!
//! Pattern matching is Meilisearch's: for each index, the first pattern in pattern order
//! (`*` sorts before letters) that matches its uid gives its filter and `overrideSettings`;
//! an index no pattern matches is not exported.
//!
//! Outcome: the task succeeds once the target accepted every call, and its details'
//! `indexes` then name each exported index with its `matched_documents`; any failure fails
//! the task with code `internal` (as Meilisearch wraps every export error), its details
//! unchanged; a cancelation interrupts it (its batch is aborted, the cancelation then
//! cancels it). A crash re-runs the whole export (documents are upserts, so sending them
//! again changes nothing): no run reports success unless every document was accepted.

pub mod target;

use std::cell::Cell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use shards::filter::{Filter, FilterableRules, check_filterable};

use self::target::{IndexOnTarget, prepare_index};
use super::control_side::ControlSide;
use super::model::{Details, ExportIndexSettings, KindWithContent, Task};
use super::scheduler::{BatchEnd, failed, succeeded_with};
use crate::coordinator::Coordinator;
use crate::coordinator::catalog::IndexRecord;
use crate::errors::{Code, ResponseError};
use crate::host::export::remote::{ExportTarget, RemoteError};
use crate::host::export::{ExportDocuments, ExportProgress};

/// How often the control core looks for a cancelation and updates the progress while the
/// shards send documents.
pub const EXPORT_WATCH_INTERVAL: Duration = Duration::from_millis(50);

/// What running an export needs.
pub struct ExportWork {
    pub coordinator: Rc<Coordinator>,
    pub control: Rc<ControlSide>,
    /// Whether the `chat` and `foreignKeys` settings are sent (their features are on).
    pub show_chat: bool,
    pub show_foreign_keys: bool,
    /// The payload size of an export that gives none.
    pub default_payload_bytes: u64,
}

/// The documents of one index to send: those `filter` selects, to `target`, in payloads of
/// at most `payload_bytes_max` uncompressed bytes.
struct DocumentsToSend<'target> {
    filter: Option<Filter>,
    target: &'target ExportTarget,
    payload_bytes_max: u64,
}

/// Why an export stopped before its end.
enum Stop {
    Failed(ResponseError),
    Interrupted,
}

impl From<ResponseError> for Stop {
    fn from(error: ResponseError) -> Self {
        Stop::Failed(error)
    }
}

impl From<RemoteError> for Stop {
    fn from(error: RemoteError) -> Self {
        Stop::Failed(error.into_task_error())
    }
}

/// Runs the export `task` (alone in its batch).
pub async fn run_export(work: &ExportWork, task: Task) -> BatchEnd {
    let finished = match work.export(&task).await {
        Ok(exported) => succeeded_with(task, |details| {
            if let Details::Export { indexes, .. } = details {
                *indexes = exported;
            }
        }),
        Err(Stop::Failed(error)) => failed(task, ResponseError::new(Code::Internal, error.message)),
        Err(Stop::Interrupted) => return BatchEnd::Interrupted,
    };
    BatchEnd::Finished {
        tasks: vec![finished],
        catalog: None,
        removed_storages: Vec::new(),
    }
}

/// The indexes of `records` the `patterns` select, in uid order, each with the settings of
/// the first pattern (in pattern order) matching it.
pub fn select_indexes<'a>(
    records: impl Iterator<Item = &'a Arc<IndexRecord>>,
    patterns: &'a BTreeMap<String, ExportIndexSettings>,
) -> Vec<(&'a Arc<IndexRecord>, &'a ExportIndexSettings)> {
    let mut selected: Vec<_> = records
        .filter_map(|record| {
            patterns
                .iter()
                .find(|(pattern, _)| pattern_matches(pattern, &record.uid))
                .map(|(_, settings)| (record, settings))
        })
        .collect();
    selected.sort_by(|left, right| left.0.uid.cmp(&right.0.uid));
    selected
}

/// Whether index uid pattern `pattern` (a uid, or a prefix ending in `*`) matches `uid`.
fn pattern_matches(pattern: &str, uid: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => uid.starts_with(prefix),
        None => pattern == uid,
    }
}

impl ExportWork {
    /// Exports every selected index; their details once all were accepted.
    async fn export(&self, task: &Task) -> Result<BTreeMap<String, ExportIndexSettings>, Stop> {
        let KindWithContent::Export {
            url,
            api_key,
            payload_size,
            indexes,
        } = &task.kind
        else {
            return Err(ResponseError::internal("an export batch holds another task").into());
        };
        let target = ExportTarget::new(url, api_key.as_deref());
        let payload_bytes_max = payload_size.unwrap_or(self.default_payload_bytes);
        let catalog = self.coordinator.catalog();
        let mut exported = BTreeMap::new();
        for (record, settings) in select_indexes(catalog.iter(), indexes) {
            if self.interrupted() {
                return Err(Stop::Interrupted);
            }
            let matched = self
                .export_index(&target, record, settings, payload_bytes_max)
                .await?;
            exported.insert(
                record.uid.clone(),
                ExportIndexSettings {
                    matched_documents: Some(matched),
                    ..settings.clone()
                },
            );
        }
        Ok(exported)
    }

    /// Exports one index: its filter checked, the index prepared on the target, then its
    /// documents; the number of documents the filter matched.
    async fn export_index(
        &self,
        target: &ExportTarget,
        record: &IndexRecord,
        settings: &ExportIndexSettings,
        payload_bytes_max: u64,
    ) -> Result<u64, Stop> {
        let step = format!("exporting index `{}`", record.uid);
        self.control.set_progress(&step, 0, 0);
        let filter = checked_filter(settings.filter.as_ref(), record)?
            .map(|filter| filter.with_network_shards(self.coordinator.filter_shards()));
        let index = IndexOnTarget {
            uid: &record.uid,
            primary_key: record.primary_key.as_deref(),
            settings: record
                .settings
                .export_view(self.show_chat, self.show_foreign_keys),
            override_settings: settings.override_settings,
        };
        prepare_index(target, index).await?;
        if self.interrupted() {
            return Err(Stop::Interrupted);
        }
        let documents = DocumentsToSend {
            filter,
            target,
            payload_bytes_max,
        };
        self.send_documents(record, &step, documents).await
    }

    /// Has every shard of `record` send its documents, watching for a cancelation meanwhile;
    /// the number of documents sent.
    async fn send_documents(
        &self,
        record: &IndexRecord,
        step: &str,
        documents: DocumentsToSend<'_>,
    ) -> Result<u64, Stop> {
        let progress = Arc::new(ExportProgress::default());
        let done = Cell::new(false);
        let shards = async {
            let answers = self
                .coordinator
                .ask_every_shard(&record.shard_set(), |_| ExportDocuments {
                    filter: documents.filter.clone(),
                    target: documents.target.clone(),
                    documents_path: format!("/indexes/{}/documents", record.uid),
                    payload_bytes_max: documents.payload_bytes_max,
                    progress: progress.clone(),
                })
                .await;
            done.set(true);
            answers
        };
        let watch = async {
            while !done.get() {
                crate::runtime::sleep(EXPORT_WATCH_INTERVAL).await;
                if self.interrupted() {
                    progress.stop.store(true, Ordering::Relaxed);
                }
                let count = |counter: &std::sync::atomic::AtomicU64| {
                    u32::try_from(counter.load(Ordering::Relaxed)).unwrap_or(u32::MAX)
                };
                self.control
                    .set_progress(step, count(&progress.sent), count(&progress.matched));
            }
        };
        let (answers, ()) = futures_lite::future::zip(shards, watch).await;
        let mut documents = 0;
        let mut stopped = false;
        for answer in answers {
            let exported = answer.map_err(|error| shard_failure(error, &record.uid))?;
            documents += exported.documents;
            stopped |= exported.stopped;
        }
        if stopped {
            // Only a cancelation stops a shard without another shard failing.
            return Err(Stop::Interrupted);
        }
        Ok(documents)
    }

    /// Whether a cancelation asked to interrupt the batch being processed.
    fn interrupted(&self) -> bool {
        self.control
            .processing
            .borrow()
            .is_some_and(|(_, interrupt)| interrupt)
    }
}

/// The filter of an index's pattern, parsed and checked against the index's filterable
/// attributes; errors carry Meilisearch's ``Index `uid`: `` prefix.
fn checked_filter(
    value: Option<&serde_json::Value>,
    record: &IndexRecord,
) -> Result<Option<Filter>, ResponseError> {
    let index_error = |message: String| {
        ResponseError::new(
            Code::InvalidDocumentFilter,
            format!("Index `{}`: {message}", record.uid),
        )
    };
    let Some(value) = value else {
        return Ok(None);
    };
    let Some(filter) = Filter::from_json(value).map_err(|error| index_error(error.message))? else {
        return Ok(None);
    };
    let rules =
        FilterableRules::from_setting(&record.settings.setting_view("filterableAttributes"))
            .map_err(ResponseError::internal)?;
    check_filterable(&filter, &rules).map_err(|error| index_error(error.message))?;
    Ok(Some(filter))
}

/// A shard's failure as the task's: a filter the shard could not evaluate names the index.
fn shard_failure(error: ResponseError, index_uid: &str) -> Stop {
    if matches!(
        error.code,
        Code::InvalidDocumentFilter | Code::InvalidSearchFilter
    ) {
        let message = format!("Index `{index_uid}`: {}", error.message);
        return Stop::Failed(ResponseError::new(error.code, message));
    }
    Stop::Failed(error)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(uid: &str) -> Arc<IndexRecord> {
        let now = time::OffsetDateTime::UNIX_EPOCH;
        Arc::new(IndexRecord::new(
            uid,
            format!("storage-{uid}"),
            1,
            None,
            now,
        ))
    }

    fn pattern(filter: &str) -> ExportIndexSettings {
        ExportIndexSettings {
            filter: Some(serde_json::Value::from(filter)),
            override_settings: false,
            matched_documents: None,
        }
    }

    fn selection(uids: &[&str], patterns: &[(&str, &str)]) -> Vec<(String, String)> {
        let records: Vec<Arc<IndexRecord>> = uids.iter().map(|uid| record(uid)).collect();
        let patterns: BTreeMap<String, ExportIndexSettings> = patterns
            .iter()
            .map(|(pattern_text, filter)| ((*pattern_text).to_owned(), pattern(filter)))
            .collect();
        select_indexes(records.iter(), &patterns)
            .into_iter()
            .map(|(record, settings)| {
                let filter = settings.filter.as_ref().and_then(|value| value.as_str());
                (record.uid.clone(), filter.unwrap_or_default().to_owned())
            })
            .collect()
    }

    #[test]
    fn the_first_matching_pattern_in_pattern_order_wins_and_indexes_go_by_uid() {
        let owned = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(uid, filter)| ((*uid).to_owned(), (*filter).to_owned()))
                .collect()
        };
        // `*` sorts before letters: it wins over `movies`.
        assert_eq!(
            selection(&["movies", "books"], &[("movies", "own"), ("*", "star")]),
            owned(&[("books", "star"), ("movies", "star")])
        );
        // `movies*` sorts before `movies-archive` (`*` before `-`).
        assert_eq!(
            selection(
                &["movies-archive", "movies", "private"],
                &[("movies-archive", "own"), ("movies*", "prefix")]
            ),
            owned(&[("movies", "prefix"), ("movies-archive", "prefix")])
        );
        assert_eq!(selection(&["movies"], &[]), owned(&[]));
        assert_eq!(
            selection(&["movie", "movies"], &[("movies", "exact")]),
            owned(&[("movies", "exact")])
        );
    }
}
