//! Processing one index batch: index creation, update, deletion and swap, document
//! additions, updates and deletions, and settings updates. The document work is planned
//! here (payloads parsed, primary key resolved, ids validated, operations folded per
//! document id and split by shard) and applied by the shards in two phases: every shard
//! prepares its share, and only when all are ready does every shard commit. A document
//! edition (always alone in its batch) is not planned here: each shard runs the function on
//! its own matching documents while it prepares, in the same two phases.
//!
//! Invariants: a task whose payload or ids are invalid fails alone and contributes nothing;
//! if any shard cannot prepare, every shard aborts and the batch's document tasks fail with
//! that error, changing nothing; the catalog is only changed in the copy this batch returns.

use std::collections::{BTreeSet, HashSet};
use std::rc::Rc;
use std::sync::Arc;

use serde_json::Value;
use shards::documents::document_id::extract_document_id;
use shards::documents::operation::{
    BatchPlan as DocumentPlan, DocumentRef, DocumentRefs, IdHasher, MissingDocumentPolicy,
};
use shards::documents::payload::documents_from;
use shards::documents::primary_key::resolve_primary_key;
use shards::filter::{Filter, FilterableRules, check_filterable};
use time::OffsetDateTime;

use super::autobatch::BatchKind;
use super::batch_documents::PlannedPayload;
use super::control_side::ControlSide;
use super::model::{Details, DocumentMethod, KindWithContent, Task};
use super::owners::{owning_shards, share_out, shares_by_owner};
use super::payload_ids::{PayloadIds, PrefetchJob, Prefetched, prefetch, read_remaining_ids};
use super::scheduler::{BatchEnd, failed, succeeded_with};
use crate::coordinator::Coordinator;
use crate::coordinator::catalog::{Catalog, IndexRecord, ShardSet, storage_name};
use crate::errors::documents_error;
use crate::errors::{Code, ResponseError};
use crate::host::batch::{Abort, Commit, Prepare};
use crate::host::documents::{ExistingIds, MatchingIds, Stats, UsedIds};
use crate::host::edit::Edit;
use crate::host::edition::EditionRequest;
use crate::host::maintenance::Remove;
use crate::host::protocol::ShardRequest;
use crate::host::settings::{SetFacetSettings, SetTextSettings};
use crate::settings::apply::StoredSettings;
use crate::settings::text_settings::text_settings;

/// The progress step while the batch's tasks are read and planned.
const PROGRESS_PLANNING: &str = "processing tasks";
/// The progress step while the shards apply their shares.
const PROGRESS_INDEXING: &str = "indexing documents";
/// The progress step while the shards commit.
const PROGRESS_COMMITTING: &str = "committing shards";

/// The most ids a batch's plan makes room for before planning (about 400 MiB of map); a
/// bigger batch grows its map beyond that as it plans.
const PLAN_RESERVED_IDS_MAX: u64 = 4 << 20;

/// What every index batch needs.
pub struct BatchWork {
    pub coordinator: Rc<Coordinator>,
    /// The control core's side of the queue (progress, interruption, update files).
    pub control: Rc<ControlSide>,
    pub batch_uid: u32,
    pub shards_per_index: u32,
}

/// One index batch as the autobatcher formed it.
pub struct IndexBatch {
    pub index_uid: String,
    pub kind: BatchKind,
    pub must_create_index: bool,
    pub tasks: Vec<Task>,
}

/// The catalog being changed by a batch.
struct Changes {
    catalog: Catalog,
    changed: bool,
    removed_storages: Vec<ShardSet>,
}

impl Changes {
    fn put(&mut self, record: IndexRecord) {
        self.catalog.insert(record);
        self.changed = true;
    }
}

impl BatchWork {
    /// Processes `batch` and says how it ends.
    pub async fn run(&self, batch: IndexBatch) -> BatchEnd {
        let mut changes = Changes {
            catalog: self.coordinator.catalog().as_ref().clone(),
            changed: false,
            removed_storages: Vec::new(),
        };
        let tasks = self.dispatch(batch, &mut changes).await;
        if self.interrupted() {
            return BatchEnd::Interrupted;
        }
        BatchEnd::Finished {
            tasks,
            catalog: changes.changed.then_some(changes.catalog),
            removed_storages: changes.removed_storages,
        }
    }

    fn progress(&self, step: &str, finished: u32, total: u32) {
        self.control.set_progress(step, finished, total);
    }

    fn interrupted(&self) -> bool {
        self.control
            .processing
            .borrow()
            .is_some_and(|(_, interrupt)| interrupt)
    }

    async fn dispatch(&self, batch: IndexBatch, changes: &mut Changes) -> Vec<Task> {
        let IndexBatch {
            index_uid,
            kind,
            must_create_index,
            tasks,
        } = batch;
        match kind {
            BatchKind::IndexCreation { .. } => tasks
                .into_iter()
                .map(|task| self.create_index(&index_uid, task, changes))
                .collect(),
            BatchKind::IndexUpdate { .. } => {
                let mut finished = Vec::new();
                for task in tasks {
                    finished.push(self.update_index(&index_uid, task, changes).await);
                }
                finished
            }
            BatchKind::IndexDeletion { .. } => self.delete_index(&index_uid, tasks, changes).await,
            BatchKind::IndexSwap { .. } => tasks
                .into_iter()
                .map(|task| swap_indexes(task, changes))
                .collect(),
            BatchKind::DocumentOperation {
                allow_index_creation,
                ..
            }
            | BatchKind::Settings {
                allow_index_creation,
                ..
            }
            | BatchKind::ClearAndSettings {
                allow_index_creation,
                ..
            } => {
                let record = match self.ensure_index(
                    &index_uid,
                    must_create_index && allow_index_creation,
                    tasks.first().map_or(0, |task| task.uid),
                    changes,
                ) {
                    Ok(record) => record,
                    Err(error) => return fail_all(tasks, &error),
                };
                self.index_work(record, tasks, changes).await
            }
            BatchKind::DocumentClear { .. } | BatchKind::DocumentDeletion { .. } => {
                match self.ensure_index(&index_uid, false, 0, changes) {
                    Ok(record) => self.index_work(record, tasks, changes).await,
                    Err(error) => fail_all(tasks, &error),
                }
            }
            BatchKind::DocumentEdition { .. } => {
                match self.ensure_index(&index_uid, false, 0, changes) {
                    Ok(record) => {
                        let mut finished = Vec::with_capacity(tasks.len());
                        for task in tasks {
                            finished.push(self.edit_documents(&record, task, changes).await);
                        }
                        finished
                    }
                    Err(error) => fail_all(tasks, &error),
                }
            }
        }
    }

    /// The index of the batch, created when the batch may create it.
    fn ensure_index(
        &self,
        index_uid: &str,
        may_create: bool,
        creating_task: u32,
        changes: &mut Changes,
    ) -> Result<Arc<IndexRecord>, ResponseError> {
        if let Some(record) = changes.catalog.get(index_uid) {
            return Ok(record.clone());
        }
        if !may_create {
            return Err(ResponseError::index_not_found(index_uid));
        }
        let record = IndexRecord::new(
            index_uid,
            storage_name(creating_task),
            self.shards_per_index,
            None,
            OffsetDateTime::now_utc(),
        );
        changes.put(record);
        changes
            .catalog
            .get(index_uid)
            .cloned()
            .ok_or_else(|| ResponseError::internal("a created index vanished"))
    }

    fn create_index(&self, index_uid: &str, task: Task, changes: &mut Changes) -> Task {
        if changes.catalog.get(index_uid).is_some() {
            return failed(task, ResponseError::index_already_exists(index_uid));
        }
        let primary_key = match &task.kind {
            KindWithContent::IndexCreation { primary_key, .. } => primary_key.clone(),
            _ => None,
        };
        changes.put(IndexRecord::new(
            index_uid,
            storage_name(task.uid),
            self.shards_per_index,
            primary_key,
            OffsetDateTime::now_utc(),
        ));
        succeeded_with(task, |_| {})
    }

    async fn update_index(&self, index_uid: &str, task: Task, changes: &mut Changes) -> Task {
        let KindWithContent::IndexUpdate {
            primary_key,
            new_index_uid,
            ..
        } = task.kind.clone()
        else {
            return failed(task, ResponseError::internal("not an index update"));
        };
        let Some(record) = changes.catalog.get(index_uid).cloned() else {
            return failed(task, ResponseError::index_not_found(index_uid));
        };
        let mut updated = record.as_ref().clone();
        if let Some(primary_key) = primary_key
            && record.primary_key.as_deref() != Some(primary_key.as_str())
        {
            match self.document_count(&record).await {
                Ok(0) => updated.primary_key = Some(primary_key),
                Ok(_) => {
                    let current = record.primary_key.clone().unwrap_or_default();
                    return failed(
                        task,
                        ResponseError::new(
                            Code::IndexPrimaryKeyAlreadyExists,
                            format!(
                                "Index `{index_uid}`: Index already has a primary key: `{current}`."
                            ),
                        ),
                    );
                }
                Err(error) => return failed(task, error),
            }
        }
        if let Some(new_uid) = new_index_uid.filter(|new_uid| new_uid != index_uid) {
            if changes.catalog.get(&new_uid).is_some() {
                return failed(task, ResponseError::index_already_exists(&new_uid));
            }
            changes.catalog.remove(index_uid);
            updated.uid = new_uid;
        }
        updated.updated_at = OffsetDateTime::now_utc();
        changes.put(updated);
        succeeded_with(task, |_| {})
    }

    async fn delete_index(
        &self,
        index_uid: &str,
        tasks: Vec<Task>,
        changes: &mut Changes,
    ) -> Vec<Task> {
        let Some(record) = changes.catalog.get(index_uid).cloned() else {
            return fail_all(tasks, &ResponseError::index_not_found(index_uid));
        };
        let count = match self.document_count(&record).await {
            Ok(count) => count,
            Err(error) => return fail_all(tasks, &error),
        };
        changes.catalog.remove(index_uid);
        changes.changed = true;
        changes.removed_storages.push(record.shard_set());
        let mut first = true;
        tasks
            .into_iter()
            .map(|task| {
                let deleted = if first { count } else { 0 };
                first = false;
                succeeded_with(task, |details| {
                    if let Details::ClearAll { deleted_documents } = details {
                        *deleted_documents = Some(deleted);
                    }
                })
            })
            .collect()
    }

    /// The number of documents of `record`, summed over its shards.
    async fn document_count(&self, record: &IndexRecord) -> Result<u64, ResponseError> {
        let mut total = 0;
        for answer in self
            .coordinator
            .ask_every_shard(&record.shard_set(), |_| Stats)
            .await
        {
            total += answer?.number_of_documents;
        }
        Ok(total)
    }

    /// Document and settings tasks of one existing index, in task order.
    async fn index_work(
        &self,
        record: Arc<IndexRecord>,
        tasks: Vec<Task>,
        changes: &mut Changes,
    ) -> Vec<Task> {
        let mut record = record.as_ref().clone();
        let deletes = tasks.iter().any(|task| {
            matches!(
                task.kind,
                KindWithContent::DocumentDeletion { .. }
                    | KindWithContent::DocumentDeletionByFilter { .. }
                    | KindWithContent::DocumentClear { .. }
            )
        });
        let mut documents = DocumentWork::new(&record, deletes);
        documents.reserve_for(&tasks);
        let mut finished: Vec<Option<Task>> = Vec::with_capacity(tasks.len());
        let mut pending: Vec<(usize, Task, TaskEffect)> = Vec::new();
        let settings_before = record.settings.clone();
        let total = tasks.len() as u32;
        let mut prefetched = self.prefetch_payloads(&record, &tasks);
        for (step, task) in tasks.into_iter().enumerate() {
            self.progress(PROGRESS_PLANNING, step as u32, total);
            let position = finished.len();
            finished.push(None);
            let outcome = match &task.kind {
                KindWithContent::SettingsUpdate {
                    settings,
                    is_deletion,
                    ..
                } => apply_settings(&mut record, settings, *is_deletion).map(|()| TaskEffect::None),
                _ => {
                    documents
                        .plan_task(self, &record, &task, step, &mut prefetched)
                        .await
                }
            };
            match outcome {
                Ok(effect) => pending.push((position, task, effect)),
                Err(error) => finished[position] = Some(failed(task, error)),
            }
        }
        if let Some(primary_key) = documents.new_primary_key.take() {
            record.primary_key = Some(primary_key);
        }
        self.progress(PROGRESS_PLANNING, total, total);
        let applied = self.apply_documents(&record, documents).await;
        let settings_applied = match &applied {
            Ok(()) => self.apply_shard_settings(&settings_before, &record).await,
            Err(error) => Err(error.clone()),
        };
        for (position, task, effect) in pending {
            let is_document_task = !matches!(task.kind, KindWithContent::SettingsUpdate { .. });
            let outcome = if is_document_task {
                applied.clone()
            } else {
                settings_applied.clone()
            };
            finished[position] = Some(match outcome {
                Ok(()) => succeeded_with(task, |details| effect.fill(details)),
                Err(error) => failed(task, error),
            });
        }
        if applied.is_ok() && settings_applied.is_ok() {
            record.updated_at = OffsetDateTime::now_utc();
            changes.put(record);
        }
        finished.into_iter().flatten().collect()
    }

    /// Starts reading ahead, on every core, the update files of the document additions of
    /// `tasks` when the index's primary key is known already (each file is then read by
    /// itself) and there are several.
    fn prefetch_payloads(&self, record: &IndexRecord, tasks: &[Task]) -> Prefetched {
        let Some(primary_key) = record.primary_key.as_deref() else {
            return Prefetched::none();
        };
        let jobs: Vec<PrefetchJob> = tasks
            .iter()
            .enumerate()
            .filter_map(|(position, task)| match &task.kind {
                KindWithContent::DocumentAdditionOrUpdate {
                    primary_key: requested,
                    content_file,
                    ..
                } if requested
                    .as_deref()
                    .is_none_or(|requested| requested == primary_key) =>
                {
                    Some(PrefetchJob {
                        position,
                        path: self.control.update_files.path(content_file),
                        format: super::update_files::format_of(content_file)?,
                    })
                }
                _ => None,
            })
            .collect();
        if jobs.len() < 2 || self.coordinator.cores() < 2 {
            return Prefetched::none();
        }
        prefetch(&self.coordinator, jobs, primary_key)
    }

    /// Prepares every shard's share, then commits them all (or aborts them all).
    async fn apply_documents(
        &self,
        record: &IndexRecord,
        documents: DocumentWork,
    ) -> Result<(), ResponseError> {
        if documents.is_empty() {
            return Ok(());
        }
        let delete_all = documents.plan.delete_all_stored;
        let owners = owning_shards(&record.shard_names(), &documents.order).await;
        let assigned = self
            .assign_internal_ids(record, &documents, &owners)
            .await?;
        let mut assigned_shares = share_out(
            record.shards,
            assigned.into_iter().map(|(position, internal)| {
                (
                    owners[position],
                    (documents.order[position].clone(), internal),
                )
            }),
        );
        let batch_uid = u64::from(self.batch_uid);
        let prepared = self
            .prepare_every_shard(record, |shard| Prepare {
                batch_uid,
                delete_all,
                assigned: std::mem::take(&mut assigned_shares[shard as usize]),
            })
            .await;
        let sent = match prepared {
            Err(error) => Err(error),
            Ok(_) => {
                super::batch_documents::send_documents(
                    &self.coordinator,
                    &self.control.update_files,
                    record,
                    documents.payloads,
                    documents.plan.documents,
                    documents.order,
                    owners,
                )
                .await
            }
        };
        self.commit_or_abort(record, sent).await
    }

    /// The first phase of a batch on an index's shards: every shard prepares its share with
    /// `prepare` (uncommitted). Answers the shards' answers in shard order, or the first
    /// error.
    async fn prepare_every_shard<Request: ShardRequest>(
        &self,
        record: &IndexRecord,
        prepare: impl FnMut(u32) -> Request,
    ) -> Result<Vec<Request::Answer>, ResponseError> {
        self.progress(PROGRESS_INDEXING, 0, record.shards);
        let prepared = self
            .coordinator
            .ask_every_shard(&record.shard_set(), prepare)
            .await;
        let mut answers = Vec::with_capacity(prepared.len());
        let mut failure = None;
        for answer in prepared {
            match answer {
                Ok(answer) => answers.push(answer),
                Err(error) => {
                    failure.get_or_insert(error);
                }
            }
        }
        match failure {
            Some(error) => Err(error),
            None => Ok(answers),
        }
    }

    /// The second phase: when the shards' shares are all ready (`ready` is `Ok`) and no
    /// cancelation interrupted the batch, every shard commits; otherwise every shard aborts
    /// and the error is returned.
    async fn commit_or_abort<T>(
        &self,
        record: &IndexRecord,
        ready: Result<T, ResponseError>,
    ) -> Result<T, ResponseError> {
        let ready = match ready {
            Ok(_) if self.interrupted() => Err(ResponseError::internal("interrupted")),
            other => other,
        };
        let value = match ready {
            Ok(value) => value,
            Err(error) => {
                for answer in self
                    .coordinator
                    .ask_every_shard(&record.shard_set(), |_| Abort)
                    .await
                {
                    if let Err(abort_error) = answer {
                        tracing::warn!(%abort_error, "a shard could not abort");
                    }
                }
                return Err(error);
            }
        };
        self.progress(PROGRESS_COMMITTING, 0, record.shards);
        self.coordinator
            .on_every_shard(&record.shard_set(), |_| Commit)
            .await?;
        Ok(value)
    }

    /// Runs a `documentEdition` task: each shard runs the function on its matching
    /// documents in its prepared batch, then all commit (or all abort on the first error,
    /// the task failing and nothing changing). Both counters report the documents the
    /// function ran on, as Meilisearch does.
    async fn edit_documents(
        &self,
        record: &Arc<IndexRecord>,
        task: Task,
        changes: &mut Changes,
    ) -> Task {
        let KindWithContent::DocumentEdition {
            filter,
            context,
            function,
            ..
        } = &task.kind
        else {
            return failed(task, ResponseError::internal("not a document edition"));
        };
        let filter = match filter {
            Some(value) => match edition_filter(value, record) {
                Ok(filter) => filter,
                Err(error) => return failed(task, error),
            },
            None => None,
        };
        // An index without a primary key has no documents: nothing to edit.
        let Some(primary_key) = record.primary_key.clone() else {
            return succeeded_with(task, |details| fill_edition_counts(details, 0));
        };
        let edition = Box::new(EditionRequest {
            index_uid: record.uid.clone(),
            function: function.clone(),
            context: context.clone(),
            primary_key,
        });
        let batch_uid = u64::from(self.batch_uid);
        let prepared = self
            .prepare_every_shard(record, |_| Edit {
                batch_uid,
                filter: filter.clone(),
                edition: edition.clone(),
            })
            .await;
        let answers = self.commit_or_abort(record, prepared).await;
        let candidates: u64 = match answers {
            Ok(answers) => answers.iter().sum(),
            Err(error) => return failed(task, error),
        };
        if candidates > 0 {
            let mut updated = record.as_ref().clone();
            updated.updated_at = OffsetDateTime::now_utc();
            changes.put(updated);
        }
        succeeded_with(task, |details| fill_edition_counts(details, candidates))
    }

    /// Index-wide internal ids for the documents the batch creates, in the order the batch
    /// first met them: the smallest ids no shard uses, as one unsharded index would give.
    /// Answers each created document's position in `documents.order` with its internal id;
    /// `owners` holds the shard of each id in `documents.order`.
    async fn assign_internal_ids(
        &self,
        record: &IndexRecord,
        documents: &DocumentWork,
        owners: &[Option<u32>],
    ) -> Result<Vec<(usize, u32)>, ResponseError> {
        let delete_all = documents.plan.delete_all_stored;
        let mut used = roaring::RoaringBitmap::new();
        let mut stored = BTreeSet::new();
        if !delete_all {
            for answer in self
                .coordinator
                .ask_every_shard(&record.shard_set(), |_| UsedIds)
                .await
            {
                used |= answer?;
            }
            // No internal id in use means no document stored: nothing to look up.
            if !used.is_empty() {
                let shares = shares_by_owner(record.shards, &documents.order, owners);
                stored = self.stored_ids(record, shares).await?;
            }
        }
        let mut assigned = Vec::new();
        let mut candidate = 0u32;
        for (position, id) in documents.order.iter().enumerate() {
            let Some(planned) = documents.plan.documents.get(id) else {
                continue;
            };
            let is_stored = stored.contains(id);
            let creates = !is_stored
                && matches!(
                    planned.outcome(is_stored),
                    shards::documents::operation::Outcome::Written { .. }
                );
            if !creates {
                continue;
            }
            while used.contains(candidate) {
                candidate = candidate
                    .checked_add(1)
                    .ok_or_else(|| ResponseError::internal("every internal id is used"))?;
            }
            used.insert(candidate);
            assigned.push((position, candidate));
        }
        Ok(assigned)
    }

    /// Tells every shard the settings it indexes by, when they changed from `before`: the
    /// facet settings (filterable and sortable attributes) and the text settings.
    async fn apply_shard_settings(
        &self,
        before: &StoredSettings,
        record: &IndexRecord,
    ) -> Result<(), ResponseError> {
        let settings = &record.settings;
        if before.filterable_attributes != settings.filterable_attributes
            || before.sortable_attributes != settings.sortable_attributes
        {
            let filterable = settings.setting_view("filterableAttributes");
            let sortable: Vec<String> = settings.sortable_attributes.iter().cloned().collect();
            self.coordinator
                .on_every_shard(&record.shard_set(), |_| SetFacetSettings {
                    filterable: filterable.clone(),
                    sortable: sortable.clone(),
                })
                .await?;
        }
        let text = text_settings(settings);
        if text_settings(before) != text {
            self.coordinator
                .on_every_shard(&record.shard_set(), |_| SetTextSettings {
                    settings: Box::new(text.clone()),
                })
                .await?;
        }
        Ok(())
    }

    /// Ids among `ids` stored in the index before the batch.
    async fn existing_ids(
        &self,
        record: &IndexRecord,
        ids: &[String],
    ) -> Result<BTreeSet<String>, ResponseError> {
        let owners = owning_shards(&record.shard_names(), ids).await;
        let shares = shares_by_owner(record.shards, ids, &owners);
        self.stored_ids(record, shares).await
    }

    /// The ids of `shares` (one list per shard, in shard order) that their shard stores.
    async fn stored_ids(
        &self,
        record: &IndexRecord,
        mut shares: Vec<Vec<String>>,
    ) -> Result<BTreeSet<String>, ResponseError> {
        self.collect_ids(record, |shard| ExistingIds {
            ids: std::mem::take(&mut shares[shard as usize]),
        })
        .await
    }

    /// External ids of the stored documents `filter` matches.
    async fn matching_ids(
        &self,
        record: &IndexRecord,
        filter: &Filter,
    ) -> Result<BTreeSet<String>, ResponseError> {
        self.collect_ids(record, |_| MatchingIds {
            filter: filter.clone(),
        })
        .await
    }

    async fn collect_ids<Request: ShardRequest<Answer = Vec<String>>>(
        &self,
        record: &IndexRecord,
        command: impl FnMut(u32) -> Request,
    ) -> Result<BTreeSet<String>, ResponseError> {
        let mut found = BTreeSet::new();
        for answer in self
            .coordinator
            .ask_every_shard(&record.shard_set(), command)
            .await
        {
            found.extend(answer?);
        }
        Ok(found)
    }
}

/// The counters a succeeded task reports.
enum TaskEffect {
    None,
    Indexed(u64),
    Deleted(u64),
}

impl TaskEffect {
    fn fill(&self, details: &mut Details) {
        match (self, details) {
            (
                TaskEffect::Indexed(count),
                Details::DocumentAdditionOrUpdate {
                    indexed_documents, ..
                },
            ) => *indexed_documents = Some(*count),
            (
                TaskEffect::Deleted(count),
                Details::DocumentDeletion {
                    deleted_documents, ..
                }
                | Details::DocumentDeletionByFilter {
                    deleted_documents, ..
                }
                | Details::ClearAll { deleted_documents },
            ) => *deleted_documents = Some(*count),
            _ => {}
        }
    }
}

/// The documents part of a batch being planned: the plan holds where each document is, not
/// the document (see [`super::batch_documents`]).
struct DocumentWork {
    plan: DocumentPlan<DocumentRefs>,
    /// The update files of the batch's additions with their documents' ids, in batch order
    /// (a [`DocumentRef`]'s `payload` indexes this).
    payloads: Vec<PlannedPayload>,
    primary_key: Option<String>,
    new_primary_key: Option<String>,
    /// Ids written by the batch so far (and not deleted since); kept only when the batch
    /// deletes (only deletions and clears read it).
    written: BTreeSet<String>,
    tracks_written: bool,
    /// Ids deleted by the batch so far.
    gone: BTreeSet<String>,
    /// Whether a clear happened in the batch (nothing stored before it counts any more).
    cleared: bool,
    /// Every id the batch writes, in the order the batch first met it.
    order: Vec<String>,
    /// The ids in `order` (membership only), kept only when the batch deletes: a deletion
    /// plans an id it does not write. Otherwise an id is in `order` exactly when the plan
    /// has it, and the plan says so.
    ordered: HashSet<String, IdHasher>,
    touched: bool,
}

impl DocumentWork {
    fn new(record: &IndexRecord, tracks_written: bool) -> DocumentWork {
        DocumentWork {
            plan: DocumentPlan::new(),
            payloads: Vec::new(),
            primary_key: record.primary_key.clone(),
            new_primary_key: None,
            written: BTreeSet::new(),
            tracks_written,
            gone: BTreeSet::new(),
            cleared: false,
            order: Vec::new(),
            ordered: HashSet::default(),
            touched: false,
        }
    }

    fn is_empty(&self) -> bool {
        !self.touched
    }

    /// Makes room for the ids of every addition of `tasks` at once: grown task by task, the
    /// plan's map would move every id planned so far each time it doubles, while the shards
    /// wait for the plan.
    fn reserve_for(&mut self, tasks: &[Task]) {
        let counted: u64 = tasks
            .iter()
            .map(|task| match &task.kind {
                KindWithContent::DocumentAdditionOrUpdate {
                    documents_count, ..
                } => *documents_count,
                _ => 0,
            })
            .sum();
        let ids = usize::try_from(counted.min(PLAN_RESERVED_IDS_MAX)).unwrap_or(0);
        self.plan.reserve(ids);
        self.order.reserve(ids);
        if self.tracks_written {
            self.ordered.reserve(ids);
        }
    }

    /// Marks `id` deleted; answers whether it existed at that point of the batch.
    fn delete(&mut self, id: &str, stored_before: bool) -> bool {
        let existed =
            self.written.remove(id) || (stored_before && !self.cleared && !self.gone.contains(id));
        self.gone.insert(id.to_owned());
        existed
    }

    /// Plans `task`, the batch's task at `position`, whose update file may have been read
    /// ahead (`prefetched`).
    async fn plan_task(
        &mut self,
        work: &BatchWork,
        record: &IndexRecord,
        task: &Task,
        position: usize,
        prefetched: &mut Prefetched,
    ) -> Result<TaskEffect, ResponseError> {
        match &task.kind {
            KindWithContent::DocumentAdditionOrUpdate {
                primary_key,
                method,
                content_file,
                skip_creation,
                ..
            } => {
                let read = match prefetched.take(position).await {
                    Some(read) => read?,
                    None => {
                        self.parse_payload(work, content_file, primary_key.as_deref())
                            .await?
                    }
                };
                let PayloadIds { ids: parsed, spans } = read;
                let count = parsed.len() as u64;
                let policy = if *skip_creation {
                    MissingDocumentPolicy::Skip
                } else {
                    MissingDocumentPolicy::Create
                };
                let payload = u32::try_from(self.payloads.len())
                    .map_err(|_| ResponseError::internal("too many payloads in a batch"))?;
                self.payloads.push(PlannedPayload {
                    content_file: content_file.clone(),
                    ids: parsed.clone(),
                    spans,
                });
                for (position, id) in parsed.into_iter().enumerate() {
                    let document = DocumentRefs::one(DocumentRef {
                        payload,
                        position: position as u32,
                    });
                    if self.tracks_written {
                        self.written.insert(id.clone());
                        if self.ordered.insert(id.clone()) {
                            self.order.push(id.clone());
                        }
                    }
                    let first_met = match method {
                        DocumentMethod::Replace => self.plan.replace(id.clone(), document, policy),
                        DocumentMethod::Update => self.plan.update(id.clone(), document, policy),
                    };
                    if first_met && !self.tracks_written {
                        self.order.push(id);
                    }
                }
                self.touched = true;
                Ok(TaskEffect::Indexed(count))
            }
            KindWithContent::DocumentDeletion { document_ids, .. } => {
                let stored = if self.cleared {
                    BTreeSet::new()
                } else {
                    work.existing_ids(record, document_ids).await?
                };
                let mut deleted = 0;
                for id in document_ids {
                    if self.delete(id, stored.contains(id)) {
                        deleted += 1;
                    }
                    self.plan.delete(id.clone());
                }
                self.touched = true;
                Ok(TaskEffect::Deleted(deleted))
            }
            KindWithContent::DocumentDeletionByFilter { filter, .. } => {
                let filter = parse_deletion_filter(filter, &record.uid)?;
                let matched = match filter {
                    Some(filter) if !self.cleared => work.matching_ids(record, &filter).await?,
                    _ => BTreeSet::new(),
                };
                let mut deleted = 0;
                for id in &matched {
                    if self.delete(id, true) {
                        deleted += 1;
                    }
                }
                self.plan.delete_by_filter(matched, |_| false);
                self.touched = true;
                Ok(TaskEffect::Deleted(deleted))
            }
            KindWithContent::DocumentClear { .. } => {
                let deleted = if self.cleared {
                    self.written.len() as u64
                } else {
                    let stored = work.document_count(record).await?;
                    stored.saturating_sub(self.gone.len() as u64) + self.written.len() as u64
                };
                self.cleared = true;
                self.written.clear();
                self.plan.delete_all();
                self.touched = true;
                Ok(TaskEffect::Deleted(deleted))
            }
            other => Err(super::scheduler::unsupported(other)),
        }
    }

    /// The document ids of an update file, in payload order, with where each document lies
    /// (the file is streamed; the documents are checked and dropped); resolves the batch's
    /// primary key at the first document when the index has none.
    async fn parse_payload(
        &mut self,
        work: &BatchWork,
        content_file: &str,
        requested_primary_key: Option<&str>,
    ) -> Result<PayloadIds, ResponseError> {
        let format = super::update_files::format_of(content_file).ok_or_else(|| {
            ResponseError::internal(format!("unknown update file format: {content_file}"))
        })?;
        let path = work.control.update_files.path(content_file);
        let file = std::fs::File::open(&path).map_err(|error| crate::errors::io_error(&error))?;
        let mut parsed = PayloadIds::new();
        let mut primary_key = self.primary_key.clone().or(self.new_primary_key.clone());
        let mut newly_resolved = None;
        let mut documents = documents_from(file, format).map_err(documents_error)?;
        // The first document is built: the primary key may have to be inferred from it.
        if let Some(first) = documents.next() {
            let first = first.map_err(documents_error)?;
            let resolved =
                resolve_primary_key(primary_key.as_deref(), requested_primary_key, Some(&first))
                    .map_err(documents_error)?;
            if resolved.is_new {
                newly_resolved = Some(resolved.name.clone());
            }
            let id = extract_document_id(&first, &resolved.name).map_err(documents_error)?;
            parsed.push(id, &documents);
            primary_key = Some(resolved.name);
        }
        if let Some(key) = primary_key.as_deref() {
            // The others only give their id (read from the parse, the document is not built).
            read_remaining_ids(&mut documents, key, &mut parsed).await?;
        }
        if parsed.ids.is_empty()
            && let (None, Some(requested)) = (&primary_key, requested_primary_key)
        {
            newly_resolved = Some(requested.to_owned());
        }
        if let Some(name) = newly_resolved {
            self.new_primary_key = Some(name);
        }
        Ok(parsed)
    }
}

/// Sets both counters of an edition's details.
fn fill_edition_counts(details: &mut Details, count: u64) {
    if let Details::DocumentEdition {
        deleted_documents,
        edited_documents,
        ..
    } = details
    {
        *deleted_documents = Some(count);
        *edited_documents = Some(count);
    }
}

/// An edition's filter, parsed and checked against the index's filterable attributes (an
/// empty filter selects every document).
fn edition_filter(value: &Value, record: &IndexRecord) -> Result<Option<Filter>, ResponseError> {
    let Some(filter) = parse_deletion_filter(value, &record.uid)? else {
        return Ok(None);
    };
    let rules =
        FilterableRules::from_setting(&record.settings.setting_view("filterableAttributes"))
            .map_err(ResponseError::internal)?;
    check_filterable(&filter, &rules).map_err(|error| {
        ResponseError::new(
            Code::InvalidDocumentFilter,
            format!("Index `{}`: {}", record.uid, error.message),
        )
    })?;
    Ok(Some(filter))
}

/// Parses a deletion filter, with the messages of `invalid_document_filter`.
fn parse_deletion_filter(filter: &Value, index_uid: &str) -> Result<Option<Filter>, ResponseError> {
    Filter::from_json(filter).map_err(|error| {
        let message = match error.kind {
            shards::filter::FilterErrorKind::Index => {
                format!("Index `{index_uid}`: {}", error.message)
            }
            _ => error.message,
        };
        ResponseError::new(Code::InvalidDocumentFilter, message)
    })
}

/// Applies a settings task to the record's settings.
fn apply_settings(
    record: &mut IndexRecord,
    settings: &serde_json::Map<String, Value>,
    is_deletion: bool,
) -> Result<(), ResponseError> {
    let update = if is_deletion {
        crate::settings::model::Settings::cleared()
    } else {
        crate::settings::decode::decode_settings_body(Value::Object(settings.clone()))?
    };
    record.settings.apply(update)
}

/// Swaps (or renames) indexes in the catalog.
fn swap_indexes(task: Task, changes: &mut Changes) -> Task {
    let KindWithContent::IndexSwap { swaps } = task.kind.clone() else {
        return failed(task, ResponseError::internal("not an index swap"));
    };
    let mut missing = Vec::new();
    for swap in &swaps {
        let (left, right) = &swap.indexes;
        if changes.catalog.get(left).is_none() {
            missing.push(left.clone());
        }
        if !swap.rename && changes.catalog.get(right).is_none() {
            missing.push(right.clone());
        }
    }
    if !missing.is_empty() {
        let error = if missing.len() == 1 {
            ResponseError::index_not_found(&missing[0])
        } else {
            let names: Vec<String> = missing.iter().map(|name| format!("`{name}`")).collect();
            ResponseError::new(
                Code::IndexNotFound,
                format!("Indexes {} not found.", names.join(", ")),
            )
        };
        return failed(task, error);
    }
    for swap in &swaps {
        let right = &swap.indexes.1;
        if swap.rename && changes.catalog.get(right).is_some() {
            return failed(task, ResponseError::index_already_exists(right));
        }
    }
    let now = OffsetDateTime::now_utc();
    for swap in swaps {
        let (left, right) = swap.indexes;
        let left_record = changes.catalog.remove(&left);
        let right_record = changes.catalog.remove(&right);
        if let Some(record) = left_record {
            let mut record = record.as_ref().clone();
            record.uid = right.clone();
            record.updated_at = now;
            changes.put(record);
        }
        if let Some(record) = right_record {
            let mut record = record.as_ref().clone();
            record.uid = left.clone();
            record.updated_at = now;
            changes.put(record);
        }
    }
    changes.changed = true;
    succeeded_with(task, |_| {})
}

/// Removes the shard files of a deleted index (after its deletion was recorded).
pub async fn remove_index_files(coordinator: &Rc<Coordinator>, set: &ShardSet) {
    for answer in coordinator.ask_every_shard(set, |_| Remove).await {
        if let Err(error) = answer {
            tracing::warn!(%error, storage = set.storage, "could not remove a shard file");
        }
    }
    let directory = set.directory(coordinator.data_directory());
    if let Err(error) = std::fs::remove_dir(&directory)
        && error.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(%error, storage = set.storage, "could not remove an index directory");
    }
}

fn fail_all(tasks: Vec<Task>, error: &ResponseError) -> Vec<Task> {
    tasks
        .into_iter()
        .map(|task| failed(task, error.clone()))
        .collect()
}
