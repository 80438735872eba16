//! Processing one index batch: index creation, update, deletion and swap, document
//! additions, updates and deletions, document editions and settings updates. Each task
//! family has its own file:
//! - [`indexes`]: index creation, update (primary key, rename) and deletion;
//! - [`documents`]: document additions, updates, deletions (by ids or by filter) and clears,
//!   planned here and sent to the shards;
//! - [`edition`]: document editions, run by each shard on its own documents;
//! - [`settings`]: settings updates, and the facet and text settings pushed to the shards;
//! - [`swap`]: index swaps and renames in the catalog;
//! - [`growth`]: an index that would outgrow its shards copied into more, before the
//!   batch's documents are applied.
//!
//! This file holds what they share: the batch ([`IndexBatch`]), what processing needs
//! ([`BatchWork`]), the dispatch over the autobatcher's [`BatchKind`], the catalog being
//! changed ([`Changes`]) and the two phases on the shards: every shard prepares its share
//! ([`BatchWork::prepare_every_shard`]), and only when all are ready does every shard commit
//! ([`BatchWork::commit_or_abort`]). A batch of document and settings tasks is planned here
//! in task order, then its documents are applied, then its settings pushed.
//!
//! Invariants: if any shard cannot prepare, every shard aborts and the batch's document
//! tasks fail with that error, changing nothing; the catalog is only changed in the copy
//! this batch returns; a batch's tasks are all of its index and each ends once (asserted).

mod documents;
mod edition;
mod growth;
mod indexes;
mod settings;
mod swap;

use std::rc::Rc;
use std::sync::Arc;

use time::OffsetDateTime;

use self::documents::{DocumentWork, TaskEffect};
use self::settings::apply_settings;
use super::autobatch::BatchKind;
use super::control_side::ControlSide;
use super::model::{KindWithContent, Task, TaskUid};
use super::scheduler::{BatchEnd, failed, succeeded_with};
use super::shard_growth::ShardGrowth;
use crate::coordinator::Coordinator;
use crate::coordinator::catalog::{Catalog, IndexRecord, ShardSet, storage_name};
use crate::errors::{Code, ResponseError};
use crate::host::batch::{Abort, Commit};
use crate::host::documents::Stats;
use crate::host::protocol::ShardRequest;
use crate::network::sharding::Sharding;

pub use self::indexes::remove_index_files;

/// The progress step while the batch's tasks are read and planned.
const PROGRESS_PLANNING: &str = "processing tasks";
/// The progress step while the shards apply their shares.
const PROGRESS_INDEXING: &str = "indexing documents";
/// The progress step while the shards commit.
const PROGRESS_COMMITTING: &str = "committing shards";

/// What every index batch needs.
pub struct BatchWork {
    pub coordinator: Rc<Coordinator>,
    /// The control core's side of the queue (progress, interruption, update files).
    pub control: Rc<ControlSide>,
    pub batch_uid: u32,
    /// The shards of a new index and how it grows.
    pub shard_growth: ShardGrowth,
    /// No other task waited for the index when the batch was formed: its commit is warmed
    /// even if no search ran lately (see `host::warming`).
    pub settled: bool,
    /// The network the batch's documents are kept under (its sharding and its `_shard`
    /// filters): the one before a network change until this instance exported for it (see
    /// `Scheduler::network_for_writes`).
    pub network: Arc<crate::network::Network>,
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

/// The tasks of a batch of document and settings tasks once planned: the ones that failed
/// alone already, and the ones waiting for the shards, with their effect.
struct PlannedTasks {
    /// One place per task, in task order; `None` while the task waits.
    finished: Vec<Option<Task>>,
    /// Each waiting task with its place in `finished`.
    pending: Vec<(usize, Task, TaskEffect)>,
}

impl PlannedTasks {
    fn with_capacity(capacity: usize) -> PlannedTasks {
        PlannedTasks {
            finished: Vec::with_capacity(capacity),
            pending: Vec::new(),
        }
    }

    /// Records how planning `task` went.
    fn push(&mut self, task: Task, outcome: Result<TaskEffect, ResponseError>) {
        let position = self.finished.len();
        match outcome {
            Ok(effect) => {
                self.finished.push(None);
                self.pending.push((position, task, effect));
            }
            Err(error) => self.finished.push(Some(failed(task, error))),
        }
    }

    /// Every task in task order, the waiting ones ending as the shards applied their
    /// documents (`applied`) or their settings (`settings_applied`).
    fn finish(
        self,
        applied: &Result<(), ResponseError>,
        settings_applied: &Result<(), ResponseError>,
    ) -> Vec<Task> {
        let PlannedTasks {
            mut finished,
            pending,
        } = self;
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
        finished.into_iter().flatten().collect()
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
        let started = self.members(&batch);
        let tasks = self.dispatch(batch, &mut changes).await;
        if self.interrupted() {
            return BatchEnd::Interrupted;
        }
        let mut finished: Vec<TaskUid> = tasks.iter().map(|task| task.uid).collect();
        finished.sort_unstable();
        assert_eq!(
            finished, started,
            "index batch {} ends each of its tasks once",
            self.batch_uid
        );
        BatchEnd::Finished {
            tasks,
            catalog: changes.changed.then_some(changes.catalog),
            removed_storages: changes.removed_storages,
        }
    }

    /// The uids of `batch`'s tasks, sorted, once asserted that each is a task of this batch
    /// for its index (an index batch never mixes indexes).
    fn members(&self, batch: &IndexBatch) -> Vec<TaskUid> {
        for task in &batch.tasks {
            assert!(
                task.batch_uid == Some(self.batch_uid)
                    && task.indexes().contains(&batch.index_uid.as_str()),
                "task {} (batch {:?}, indexes {:?}) is no task of index batch {} of `{}`",
                task.uid,
                task.batch_uid,
                task.indexes(),
                self.batch_uid,
                batch.index_uid
            );
        }
        let mut uids: Vec<TaskUid> = batch.tasks.iter().map(|task| task.uid).collect();
        uids.sort_unstable();
        uids
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
            BatchKind::IndexCreation { .. } => self.create_indexes(&index_uid, tasks, changes),
            BatchKind::IndexUpdate { .. } => self.update_indexes(&index_uid, tasks, changes).await,
            BatchKind::IndexDeletion { .. } => self.delete_index(&index_uid, tasks, changes).await,
            BatchKind::IndexSwap { .. } => swap::swap_every_task(tasks, changes),
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
                let may_create = must_create_index && allow_index_creation;
                self.index_work_in(&index_uid, may_create, tasks, changes)
                    .await
            }
            BatchKind::DocumentClear { .. } | BatchKind::DocumentDeletion { .. } => {
                self.index_work_in(&index_uid, false, tasks, changes).await
            }
            BatchKind::DocumentEdition { .. } => {
                self.edit_every_task(&index_uid, tasks, changes).await
            }
        }
    }

    /// The index of the batch, created when the batch may create it; answers whether this
    /// batch created it.
    fn ensure_index(
        &self,
        index_uid: &str,
        may_create: bool,
        creating_task: u32,
        changes: &mut Changes,
    ) -> Result<(Arc<IndexRecord>, bool), ResponseError> {
        if let Some(record) = changes.catalog.get(index_uid) {
            return Ok((record.clone(), false));
        }
        if !may_create {
            return Err(ResponseError::index_not_found(index_uid));
        }
        changes.put(self.new_index_record(index_uid, storage_name(creating_task), None));
        changes
            .catalog
            .get(index_uid)
            .cloned()
            .map(|record| (record, true))
            .ok_or_else(|| ResponseError::internal("a created index vanished"))
    }

    /// A new, empty index of the shards [`ShardGrowth`] gives it.
    fn new_index_record(
        &self,
        index_uid: &str,
        storage: String,
        primary_key: Option<String>,
    ) -> IndexRecord {
        let (shards, shards_max) = self.shard_growth.new_index_shards();
        let mut record = IndexRecord::new(
            index_uid,
            storage,
            shards,
            primary_key,
            OffsetDateTime::now_utc(),
        );
        record.shards_max = shards_max;
        record
    }

    /// Document and settings tasks of the index `index_uid`, created first when the batch
    /// `may_create` it (by the batch's first task); every task fails when it does not exist.
    async fn index_work_in(
        &self,
        index_uid: &str,
        may_create: bool,
        tasks: Vec<Task>,
        changes: &mut Changes,
    ) -> Vec<Task> {
        let creating_task = tasks.first().map_or(0, |task| task.uid);
        match self.ensure_index(index_uid, may_create, creating_task, changes) {
            Ok((record, false)) => self.index_work(record, false, tasks, changes).await,
            Ok((record, true)) => {
                let shard_set = record.shard_set();
                let finished = self.index_work(record, true, tasks, changes).await;
                if failed_on_storage(&finished) {
                    // Nothing of an index the storage could not hold stays: it is not
                    // listed, and its files go once the catalog without it is recorded.
                    changes.catalog.remove(index_uid);
                    changes.removed_storages.push(shard_set);
                }
                finished
            }
            Err(error) => fail_all(tasks, &error),
        }
    }

    /// Document and settings tasks of one existing index (`created` by this batch, or not),
    /// in task order.
    async fn index_work(
        &self,
        record: Arc<IndexRecord>,
        created: bool,
        tasks: Vec<Task>,
        changes: &mut Changes,
    ) -> Vec<Task> {
        let original = record;
        let mut record = original.as_ref().clone();
        let settings_before = record.settings.clone();
        let (documents, planned) = self.plan_index_tasks(&mut record, tasks).await;
        let grown_from = self
            .grow_ahead(&mut record, created, documents.writes(), &settings_before)
            .await;
        let applied = self
            .apply_documents(&record, documents)
            .await
            .map_err(|error| in_index(error, &record.uid));
        let settings_applied = match &applied {
            Ok(()) => {
                self.apply_shard_settings(&settings_before, &mut record)
                    .await
            }
            Err(error) => Err(error.clone()),
        };
        let finished = planned.finish(&applied, &settings_applied);
        let outcome = (applied.is_ok(), settings_applied.is_ok());
        self.keep_index_work(&original, record, grown_from, outcome, changes);
        finished
    }

    /// What the catalog keeps of a batch's work on `record` (`original` as the catalog had
    /// it, `grown_from` its storage if the index grew ahead of the batch), as its documents
    /// and its settings were applied (`outcome`, in that order).
    fn keep_index_work(
        &self,
        original: &IndexRecord,
        mut record: IndexRecord,
        grown_from: Option<ShardSet>,
        outcome: (bool, bool),
        changes: &mut Changes,
    ) {
        match outcome {
            (true, true) => {
                changes.removed_storages.extend(grown_from);
                record.updated_at = OffsetDateTime::now_utc();
                changes.put(record);
            }
            (true, false) if grown_from.is_some() => {
                // The document tasks succeeded on the new shards: the catalog names them,
                // with the settings it had.
                let mut kept = original.clone();
                kept.storage = record.storage;
                kept.shards = record.shards;
                kept.updated_at = OffsetDateTime::now_utc();
                changes.put(kept);
                changes.removed_storages.extend(grown_from);
            }
            _ if grown_from.is_some() => {
                // Nothing of the batch stays: the catalog keeps the storage it names, and the
                // copy made ahead goes.
                changes.removed_storages.push(record.shard_set());
            }
            _ => {}
        }
    }

    /// Plans `tasks` in task order: settings tasks change `record`'s settings, document
    /// tasks go into the documents' plan (and may resolve `record`'s primary key).
    async fn plan_index_tasks(
        &self,
        record: &mut IndexRecord,
        tasks: Vec<Task>,
    ) -> (DocumentWork, PlannedTasks) {
        let deletes = tasks.iter().any(|task| {
            matches!(
                task.kind,
                KindWithContent::DocumentDeletion { .. }
                    | KindWithContent::DocumentDeletionByFilter { .. }
                    | KindWithContent::DocumentClear { .. }
            )
        });
        let sharding = Sharding::of(&self.network);
        let mut documents = DocumentWork::new(record, deletes, sharding);
        documents.reserve_for(&tasks);
        let mut planned = PlannedTasks::with_capacity(tasks.len());
        let total = tasks.len() as u32;
        let mut prefetched = self.prefetch_payloads(record, &tasks);
        for (step, task) in tasks.into_iter().enumerate() {
            self.progress(PROGRESS_PLANNING, step as u32, total);
            let outcome = match &task.kind {
                KindWithContent::SettingsUpdate {
                    settings,
                    is_deletion,
                    ..
                } => apply_settings(record, settings, *is_deletion).map(|()| TaskEffect::None),
                _ => {
                    documents
                        .plan_task(self, record, &task, step, &mut prefetched)
                        .await
                }
            };
            planned.push(task, outcome);
        }
        if let Some(primary_key) = documents.new_primary_key.take() {
            record.primary_key = Some(primary_key);
        }
        self.progress(PROGRESS_PLANNING, total, total);
        (documents, planned)
    }

    /// The first phase of a batch on an index's shards: every shard prepares its share with
    /// `prepare` (uncommitted). Answers the shards' answers in shard order, or the first
    /// error.
    async fn prepare_every_shard<Request: ShardRequest>(
        &self,
        set: &ShardSet,
        prepare: impl FnMut(u32) -> Request,
    ) -> Result<Vec<Request::Answer>, ResponseError> {
        self.progress(PROGRESS_INDEXING, 0, set.shards);
        let prepared = self.coordinator.ask_every_shard(set, prepare).await;
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
        set: &ShardSet,
        ready: Result<T, ResponseError>,
    ) -> Result<T, ResponseError> {
        let ready = match ready {
            Ok(_) if self.interrupted() => Err(ResponseError::internal("interrupted")),
            other => other,
        };
        let value = match ready {
            Ok(value) => value,
            Err(error) => {
                for answer in self.coordinator.ask_every_shard(set, |_| Abort).await {
                    if let Err(abort_error) = answer {
                        tracing::warn!(%abort_error, "a shard could not abort");
                    }
                }
                return Err(error);
            }
        };
        self.progress(PROGRESS_COMMITTING, 0, set.shards);
        self.coordinator
            .on_every_shard(set, |_| Commit {
                settled: self.settled,
            })
            .await?;
        Ok(value)
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
}

/// A document error of the index's engine, with the ``Index `uid`: `` prefix Meilisearch's
/// engine gives the errors of documents' vectors and `_geo` fields and its internal errors (a
/// field value that does not parse among them).
/// Whether every task of `finished` failed because the storage failed (an I/O error, a full
/// disk, too many open files): a batch that created its index then removes it again.
fn failed_on_storage(finished: &[Task]) -> bool {
    !finished.is_empty()
        && finished.iter().all(|task| {
            task.error.as_ref().is_some_and(|error| {
                matches!(
                    error.0.code,
                    Code::IoError | Code::NoSpaceLeftOnDevice | Code::TooManyOpenFiles
                )
            })
        })
}

fn in_index(error: ResponseError, index_uid: &str) -> ResponseError {
    match error.code {
        Code::InvalidVectorDimensions
        | Code::InvalidVectorsType
        | Code::VectorEmbeddingError
        | Code::InvalidDocumentGeoField
        | Code::Internal => error.prefixed(&format!("Index `{index_uid}`: ")),
        _ => error,
    }
}

/// Every task of `tasks` failed with `error`.
fn fail_all(tasks: Vec<Task>, error: &ResponseError) -> Vec<Task> {
    tasks
        .into_iter()
        .map(|task| failed(task, error.clone()))
        .collect()
}
