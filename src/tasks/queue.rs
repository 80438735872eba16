//! The durable task queue on the page store: tasks, batches, and secondary trees by status,
//! type, index, canceler and batch, so filtered lists read only the tasks they need.
//!
//! Trees (keys big-endian so byte order is uid order):
//! - `tasks`: task uid → record; `batches`: batch uid → record;
//! - `tasks-by-status`: status byte ‖ task uid; `tasks-by-kind`: kind byte ‖ task uid;
//! - `tasks-by-index`: index uid ‖ 0x00 ‖ task uid (an index uid never contains 0x00);
//! - `tasks-by-canceler`: canceling task uid ‖ task uid;
//! - `batch-tasks`: batch uid ‖ task uid; `meta`: `next-task-uid`.
//!
//! A record is [`RECORD_FORMAT_VERSION`] followed by JSON; a record of another version or
//! that does not decode is reported as corruption, never trusted.
//!
//! Invariants:
//! - every change is one write transaction, committed before the call returns: a caller
//!   acknowledges a task only after `register` returned it;
//! - the secondary trees hold exactly the keys derived from the stored tasks;
//! - task uids only grow (`next-task-uid` is stored, so deleting the newest task never
//!   gives its uid again); batch uids continue after the last stored batch, as Meilisearch;
//! - deletion removes only finished tasks; enqueued and processing tasks are never removed;
//! - a stored task's status changes only as [`Status::may_become`] allows; a batch starts
//!   only tasks that wait for one, in uid order, and ends with none of its tasks processing
//!   (these are asserted: a breach panics rather than commit a queue that lies);
//! - tasks found `processing` at open were interrupted by a crash: they are reported, and
//!   [`TaskQueue::requeue_interrupted`] puts them back in the queue.

use std::collections::BTreeSet;
use std::fmt;
use std::ops::Bound;
use std::path::Path;

use storage_engine::{Database, Direction, Options, ReadTransaction, WriteTransaction};
use time::OffsetDateTime;

use super::batch::Batch;
use super::model::{BatchUid, Kind, KindWithContent, Status, Task, TaskUid};
use super::query::{Page, TaskQuery, after_from, matches, paginate};
use crate::errors::{Code, ResponseError};

/// The task queue's page store, in the data directory.
pub const QUEUE_FILE_NAME: &str = "tasks.store";

/// Registrations (other than cancel and delete) are refused past this share of the
/// queue file's maximum size, as Meilisearch does for its task database.
pub const QUEUE_FULL_PERCENT: u64 = 40;

/// Tasks in the queue from which an automatic deletion of old finished tasks is registered.
pub const MAX_NUMBER_OF_TASKS_DEFAULT: u64 = 1_000_000;

/// The most finished tasks one automatic deletion removes.
pub const AUTO_CLEANUP_TASKS_MAX: usize = 100_000;

/// The format version of task and batch records.
pub const RECORD_FORMAT_VERSION: u8 = 1;

pub(super) const TASKS_TREE: &str = "tasks";
pub(super) const BATCHES_TREE: &str = "batches";
pub(super) const BY_STATUS_TREE: &str = "tasks-by-status";
pub(super) const BY_KIND_TREE: &str = "tasks-by-kind";
pub(super) const BY_INDEX_TREE: &str = "tasks-by-index";
pub(super) const BY_CANCELER_TREE: &str = "tasks-by-canceler";
pub(super) const BATCH_TASKS_TREE: &str = "batch-tasks";
pub(super) const META_TREE: &str = "meta";
pub(super) const NEXT_TASK_UID_KEY: &[u8] = b"next-task-uid";
/// The least uid the next batch may get (set when a history replaces the queue's: the shards
/// remember the last batch uid they applied and skip a batch whose uid is not above it, so a
/// batch uid must never be given twice, even when the stored batches start over).
pub(super) const NEXT_BATCH_UID_FLOOR_KEY: &[u8] = b"next-batch-uid-floor";
pub(super) const ALL_TREES: [&str; 9] = [
    TASKS_TREE,
    BATCHES_TREE,
    BY_STATUS_TREE,
    BY_KIND_TREE,
    BY_INDEX_TREE,
    BY_CANCELER_TREE,
    BATCH_TASKS_TREE,
    META_TREE,
    super::queue_network_change::NETWORK_CHANGES_TREE,
];

/// What can go wrong in the queue.
#[derive(Debug)]
pub enum QueueError {
    /// The page store failed.
    Storage(storage_engine::Error),
    /// A stored record or key is not what the queue wrote.
    Corrupted(String),
    /// Every task uid is used.
    TaskUidsExhausted,
    /// A task the call names does not exist.
    TaskNotFound(TaskUid),
    /// A requested task uid is below the next one.
    BadTaskUid {
        received: TaskUid,
        expected: TaskUid,
    },
    /// The queue file is fuller than [`QUEUE_FULL_PERCENT`]: only cancel and delete pass.
    QueueFull,
    /// The task itself is invalid (e.g. a swap naming an index twice).
    Rejected(ResponseError),
}

impl fmt::Display for QueueError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QueueError::Storage(error) => write!(formatter, "task queue storage: {error}"),
            QueueError::Corrupted(what) => write!(formatter, "corrupted task queue: {what}"),
            QueueError::TaskUidsExhausted => formatter.write_str("every task uid is used"),
            QueueError::TaskNotFound(uid) => write!(formatter, "task {uid} is not in the queue"),
            QueueError::BadTaskUid { received, expected } => write!(
                formatter,
                "Received bad task id: {received} should be >= to {expected}."
            ),
            QueueError::Rejected(error) => formatter.write_str(&error.message),
            QueueError::QueueFull => formatter.write_str(
                "Meilisearch cannot receive write operations because the limit of the task database has been reached. Please delete tasks to continue performing write operations.",
            ),
        }
    }
}

impl std::error::Error for QueueError {}

impl From<storage_engine::Error> for QueueError {
    fn from(error: storage_engine::Error) -> Self {
        QueueError::Storage(error)
    }
}

impl From<QueueError> for ResponseError {
    fn from(error: QueueError) -> Self {
        match error {
            QueueError::Storage(storage_engine::Error::NoSpace) => {
                ResponseError::new(Code::NoSpaceLeftOnDevice, error.to_string())
            }
            QueueError::TaskNotFound(uid) => ResponseError::task_not_found(uid),
            QueueError::BadTaskUid { .. } => {
                ResponseError::new(Code::BadRequest, error.to_string())
            }
            QueueError::QueueFull => {
                ResponseError::new(Code::NoSpaceLeftOnDevice, error.to_string())
            }
            QueueError::Rejected(error) => error,
            other => ResponseError::internal(other),
        }
    }
}

/// Result alias of the queue.
pub type QueueResult<T> = Result<T, QueueError>;

/// Which indexes the caller's key can see (tasks of other indexes are hidden).
pub trait TaskVisibility {
    /// The key sees every index.
    fn all_indexes_authorized(&self) -> bool;
    /// The key sees `index`.
    fn is_index_authorized(&self, index: &str) -> bool;
}

/// A key that sees every index.
#[derive(Debug, Clone, Copy, Default)]
pub struct AllIndexes;

impl TaskVisibility for AllIndexes {
    fn all_indexes_authorized(&self) -> bool {
        true
    }

    fn is_index_authorized(&self, _index: &str) -> bool {
        true
    }
}

/// Replication parameters of a registration (`TaskId` and `DryRun` headers).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RegisterOptions {
    /// The uid the task must get (refused when below the next uid).
    pub requested_uid: Option<TaskUid>,
    /// Build the task without storing it.
    pub dry_run: bool,
    /// The task's place in a sharded network.
    pub network: Option<crate::network::task_network::TaskNetwork>,
    /// The state a `networkTopologyChange` task starts from, stored with it.
    pub network_change: Option<crate::network::topology_change::TopologyChange>,
}

/// Whether a write of a task record replaces its stored `network`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NetworkWrite {
    KeepStored,
    Replace,
}

/// A registered task, and for a cancelation the processing batch it must interrupt.
#[derive(Debug, Clone, PartialEq)]
pub struct Registered {
    pub task: Task,
    pub interrupt_batch: Option<BatchUid>,
}

pub(super) fn uid_bytes(uid: u32) -> [u8; 4] {
    uid.to_be_bytes()
}

pub(super) fn uid_from(bytes: &[u8]) -> QueueResult<u32> {
    let array: [u8; 4] = bytes
        .try_into()
        .map_err(|_| QueueError::Corrupted(format!("a uid of {} bytes", bytes.len())))?;
    Ok(u32::from_be_bytes(array))
}

/// The uid at the end of a secondary key.
pub(super) fn trailing_uid(key: &[u8]) -> QueueResult<u32> {
    let start = key
        .len()
        .checked_sub(4)
        .ok_or_else(|| QueueError::Corrupted("a secondary key shorter than a uid".into()))?;
    uid_from(&key[start..])
}

fn prefixed(prefix: &[u8], uid: u32) -> Vec<u8> {
    let mut key = prefix.to_vec();
    key.extend_from_slice(&uid_bytes(uid));
    key
}

pub(super) fn index_prefix(index: &str) -> Vec<u8> {
    let mut prefix = index.as_bytes().to_vec();
    prefix.push(0);
    prefix
}

pub(super) fn encode<T: serde::Serialize>(value: &T) -> QueueResult<Vec<u8>> {
    let mut bytes = vec![RECORD_FORMAT_VERSION];
    serde_json::to_writer(&mut bytes, value)
        .map_err(|error| QueueError::Corrupted(format!("cannot encode a record: {error}")))?;
    Ok(bytes)
}

pub(super) fn decode<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> QueueResult<T> {
    match bytes.split_first() {
        Some((&RECORD_FORMAT_VERSION, json)) => serde_json::from_slice(json)
            .map_err(|error| QueueError::Corrupted(format!("undecodable record: {error}"))),
        Some((version, _)) => Err(QueueError::Corrupted(format!(
            "record format version {version}"
        ))),
        None => Err(QueueError::Corrupted("empty record".into())),
    }
}

/// The secondary keys of a task, per tree.
fn secondary_keys(task: &Task) -> Vec<(&'static str, Vec<u8>)> {
    let mut keys = vec![
        (BY_STATUS_TREE, prefixed(&[task.status.byte()], task.uid)),
        (BY_KIND_TREE, prefixed(&[task.kind().byte()], task.uid)),
    ];
    for index in task.indexes() {
        keys.push((BY_INDEX_TREE, prefixed(&index_prefix(index), task.uid)));
    }
    if let Some(canceler) = task.canceled_by {
        keys.push((BY_CANCELER_TREE, prefixed(&uid_bytes(canceler), task.uid)));
    }
    if let Some(batch_uid) = task.batch_uid {
        keys.push((BATCH_TASKS_TREE, prefixed(&uid_bytes(batch_uid), task.uid)));
    }
    keys
}

/// The durable queue.
pub struct TaskQueue {
    database: Database,
    /// The queue's file.
    path: std::path::PathBuf,
    interrupted_at_open: Vec<TaskUid>,
    /// The size the fullness check compares with (the file's maximum size).
    maximum_size_bytes: u64,
}

impl TaskQueue {
    /// Opens (or creates) the queue file and finds the tasks a crash left `processing`.
    pub fn open(path: &Path, options: Options) -> QueueResult<TaskQueue> {
        let maximum_size_bytes = options.maximum_size_bytes;
        let database = Database::open(path, options)?;
        let write = database.begin_write()?;
        for name in ALL_TREES {
            write.create_tree(name)?;
        }
        write.commit()?;
        let mut queue = TaskQueue {
            database,
            path: path.to_path_buf(),
            interrupted_at_open: Vec::new(),
            maximum_size_bytes,
        };
        let read = queue.database.begin_read();
        let processing =
            Self::uids_with_prefix(&read, BY_STATUS_TREE, &[Status::Processing.byte()])?;
        let mut interrupted = Vec::new();
        for uid in processing {
            if !Self::is_between_batches(&read, uid)? {
                interrupted.push(uid);
            }
        }
        drop(read);
        queue.interrupted_at_open = interrupted;
        Ok(queue)
    }

    /// The page store underneath (the catalog shares it).
    pub fn database(&self) -> &Database {
        &self.database
    }

    /// The queue's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The size the queue file may reach, in bytes (the fullness check's reference).
    pub fn maximum_size_bytes(&self) -> u64 {
        self.maximum_size_bytes
    }

    /// The tasks that were `processing` when the queue was opened (a crash interrupted
    /// them), in uid order.
    pub fn interrupted_at_open(&self) -> &[TaskUid] {
        &self.interrupted_at_open
    }

    /// Puts the interrupted tasks back in the queue (enqueued, no batch, no start date) and
    /// drops their unfinished batches, so the scheduler runs them again.
    pub fn requeue_interrupted(&mut self) -> QueueResult<Vec<TaskUid>> {
        let uids = std::mem::take(&mut self.interrupted_at_open);
        let write = self.database.begin_write()?;
        let mut batches = BTreeSet::new();
        for uid in &uids {
            let mut task =
                Self::read_task_for_write(&write, *uid)?.ok_or(QueueError::TaskNotFound(*uid))?;
            if task.status != Status::Processing {
                continue;
            }
            batches.extend(task.batch_uid);
            task.status = Status::Enqueued;
            task.batch_uid = None;
            task.started_at = None;
            Self::write_task(&write, &task)?;
        }
        for batch_uid in batches {
            Self::remove_batch_if_unfinished(&write, batch_uid)?;
        }
        write.commit()?;
        Ok(uids)
    }

    /// Whether the processing task `uid` sits between two of its batches: its last batch
    /// finished (a network change of an older version stayed `processing` between its
    /// batches), so no crash interrupted it.
    fn is_between_batches(read: &ReadTransaction, uid: TaskUid) -> QueueResult<bool> {
        let Some(task) = Self::read_task(read, uid)? else {
            return Ok(false);
        };
        let Some(batch_uid) = task.batch_uid else {
            return Ok(false);
        };
        let batch: Option<Batch> = Self::read_tree(read, BATCHES_TREE)?
            .get(&uid_bytes(batch_uid))?
            .map(decode)
            .transpose()?;
        Ok(batch.is_some_and(|batch| batch.finished_at.is_some()))
    }

    fn remove_batch_if_unfinished(
        write: &WriteTransaction,
        batch_uid: BatchUid,
    ) -> QueueResult<()> {
        let batches = Self::tree(write, BATCHES_TREE)?;
        let Some(bytes) = batches.get(&uid_bytes(batch_uid))? else {
            return Ok(());
        };
        let batch: Batch = decode(&bytes)?;
        if batch.finished_at.is_none() {
            batches.delete(&uid_bytes(batch_uid))?;
            let mapping = Self::tree(write, BATCH_TASKS_TREE)?;
            let keys: Vec<Vec<u8>> = mapping
                .prefix(&uid_bytes(batch_uid), Direction::Forward)?
                .map(|entry| entry.map(|(key, _)| key.to_vec()))
                .collect::<Result<_, _>>()?;
            for key in keys {
                mapping.delete(&key)?;
            }
        }
        Ok(())
    }

    pub(super) fn tree<'t>(
        write: &'t WriteTransaction,
        name: &str,
    ) -> QueueResult<storage_engine::WriteTree<'t>> {
        write
            .open_tree(name)?
            .ok_or_else(|| QueueError::Corrupted(format!("missing tree `{name}`")))
    }

    pub(super) fn read_tree<'t>(
        read: &'t ReadTransaction,
        name: &str,
    ) -> QueueResult<storage_engine::ReadTree<'t>> {
        read.open_tree(name)?
            .ok_or_else(|| QueueError::Corrupted(format!("missing tree `{name}`")))
    }

    pub(super) fn uids_with_prefix(
        read: &ReadTransaction,
        tree: &str,
        prefix: &[u8],
    ) -> QueueResult<BTreeSet<u32>> {
        let tree = Self::read_tree(read, tree)?;
        let mut uids = BTreeSet::new();
        for entry in tree.prefix(prefix, Direction::Forward)? {
            let (key, _) = entry?;
            uids.insert(trailing_uid(key)?);
        }
        Ok(uids)
    }

    pub(super) fn read_task_for_write(
        write: &WriteTransaction,
        uid: TaskUid,
    ) -> QueueResult<Option<Task>> {
        Self::tree(write, TASKS_TREE)?
            .get(&uid_bytes(uid))?
            .map(|bytes| decode(&bytes))
            .transpose()
    }

    /// Stores `task` and moves its secondary keys from its previous state.
    ///
    /// A stored task keeps its stored `network`: only [`TaskQueue::set_task_network`]
    /// changes it, while the scheduler may hold an older copy of the task.
    pub(super) fn write_task(write: &WriteTransaction, task: &Task) -> QueueResult<()> {
        Self::write_task_record(write, task, NetworkWrite::KeepStored)
    }

    fn write_task_record(
        write: &WriteTransaction,
        task: &Task,
        network_write: NetworkWrite,
    ) -> QueueResult<()> {
        let mut kept_network = None;
        if let Some(previous) = Self::read_task_for_write(write, task.uid)? {
            assert!(
                previous.status.may_become(task.status, task.kind()),
                "task {} ({}) cannot go from {} to {}",
                task.uid,
                task.kind(),
                previous.status,
                task.status
            );
            for (tree, key) in secondary_keys(&previous) {
                Self::tree(write, tree)?.delete(&key)?;
            }
            if network_write == NetworkWrite::KeepStored && previous.network != task.network {
                kept_network = Some(previous.network);
            }
        }
        let record = match kept_network {
            Some(network) => encode(&Task {
                network,
                ..task.clone()
            })?,
            None => encode(task)?,
        };
        Self::tree(write, TASKS_TREE)?.put(&uid_bytes(task.uid), &record)?;
        for (tree, key) in secondary_keys(task) {
            Self::tree(write, tree)?.put(&key, &[])?;
        }
        Ok(())
    }

    pub(super) fn remove_task(write: &WriteTransaction, task: &Task) -> QueueResult<()> {
        for (tree, key) in secondary_keys(task) {
            Self::tree(write, tree)?.delete(&key)?;
        }
        Self::tree(write, TASKS_TREE)?.delete(&uid_bytes(task.uid))?;
        Ok(())
    }

    fn next_task_uid_in(write: &WriteTransaction) -> QueueResult<TaskUid> {
        let stored = match Self::tree(write, META_TREE)?.get(NEXT_TASK_UID_KEY)? {
            Some(bytes) => uid_from(&bytes)?,
            None => 0,
        };
        let after_last = match Self::tree(write, TASKS_TREE)?.last()? {
            Some((key, _)) => uid_from(&key)?
                .checked_add(1)
                .ok_or(QueueError::TaskUidsExhausted)?,
            None => 0,
        };
        Ok(stored.max(after_last))
    }

    /// The uid the next registered task gets.
    pub fn next_task_uid(&self) -> QueueResult<TaskUid> {
        let read = self.database.begin_read();
        let stored = match Self::read_tree(&read, META_TREE)?.get(NEXT_TASK_UID_KEY)? {
            Some(bytes) => uid_from(bytes)?,
            None => 0,
        };
        let after_last = match Self::read_tree(&read, TASKS_TREE)?.last()? {
            Some((key, _)) => uid_from(key)?
                .checked_add(1)
                .ok_or(QueueError::TaskUidsExhausted)?,
            None => 0,
        };
        Ok(stored.max(after_last))
    }

    /// Registers a task: gives it the next uid, stores it enqueued and commits. For a
    /// cancelation, also names the processing batch that holds one of its matched tasks
    /// (the caller interrupts it).
    pub fn register(
        &self,
        kind: KindWithContent,
        custom_metadata: Option<String>,
        enqueued_at: OffsetDateTime,
    ) -> QueueResult<Registered> {
        self.register_with(
            kind,
            custom_metadata,
            enqueued_at,
            RegisterOptions::default(),
        )
    }

    /// Whether the queue file is too full to take tasks other than cancel and delete.
    pub fn is_full(&self) -> bool {
        let stats = self.database.stats();
        let used_bytes = stats.used_pages.saturating_mul(stats.page_bytes);
        let limit = self.maximum_size_bytes.max(1);
        used_bytes.saturating_mul(100) / limit > QUEUE_FULL_PERCENT
    }

    /// [`TaskQueue::register`] with the replication parameters.
    pub fn register_with(
        &self,
        kind: KindWithContent,
        custom_metadata: Option<String>,
        enqueued_at: OffsetDateTime,
        options: RegisterOptions,
    ) -> QueueResult<Registered> {
        let frees_space = matches!(
            &kind,
            KindWithContent::TaskCancelation { tasks, .. } | KindWithContent::TaskDeletion { tasks, .. }
                if !tasks.is_empty()
        );
        if !frees_space && self.is_full() {
            return Err(QueueError::QueueFull);
        }
        let write = self.database.begin_write()?;
        let dry_run = options.dry_run;
        let registered = Self::register_in(&write, kind, custom_metadata, enqueued_at, options)?;
        if dry_run {
            write.abort();
        } else {
            write.commit()?;
        }
        Ok(registered)
    }

    /// Registers a task inside `write` (not committed; a dry run stores nothing).
    pub(super) fn register_in(
        write: &WriteTransaction,
        kind: KindWithContent,
        custom_metadata: Option<String>,
        enqueued_at: OffsetDateTime,
        options: RegisterOptions,
    ) -> QueueResult<Registered> {
        let next_uid = Self::next_task_uid_in(write)?;
        let uid = match options.requested_uid {
            Some(requested) if requested < next_uid => {
                return Err(QueueError::BadTaskUid {
                    received: requested,
                    expected: next_uid,
                });
            }
            Some(requested) => requested,
            None => next_uid,
        };
        let next = uid.checked_add(1).ok_or(QueueError::TaskUidsExhausted)?;
        let mut task = Task::new(uid, kind, enqueued_at, custom_metadata);
        task.network = options.network;
        if let KindWithContent::IndexSwap { swaps } = &task.kind {
            super::model::check_index_swaps(swaps).map_err(QueueError::Rejected)?;
        }
        let mut interrupt_batch = None;
        if let KindWithContent::TaskCancelation { tasks, .. } = &task.kind {
            for matched in tasks {
                let found = Self::read_task_for_write(write, *matched)?;
                if let Some(found) = found.filter(|found| found.status == Status::Processing) {
                    interrupt_batch = found.batch_uid;
                    break;
                }
            }
        }
        if options.dry_run {
            return Ok(Registered {
                task,
                interrupt_batch: None,
            });
        }
        Self::write_task(write, &task)?;
        Self::tree(write, META_TREE)?.put(NEXT_TASK_UID_KEY, &uid_bytes(next))?;
        if let Some(change) = &options.network_change {
            Self::put_network_change(write, task.uid, change)?;
        }
        Ok(Registered {
            task,
            interrupt_batch,
        })
    }

    /// When the queue holds at least `max_number_of_tasks` tasks, registers the automatic
    /// deletion of its oldest finished tasks (at most [`AUTO_CLEANUP_TASKS_MAX`], at least
    /// two), as Meilisearch does before each batch.
    pub fn register_cleanup_if_needed(
        &self,
        max_number_of_tasks: u64,
        now: OffsetDateTime,
    ) -> QueueResult<Option<Registered>> {
        const SMALLEST_USEFUL_CLEANUP: usize = 2;
        let read = self.database.begin_read();
        if Self::read_tree(&read, TASKS_TREE)?.len() < max_number_of_tasks {
            return Ok(None);
        }
        let mut finished = BTreeSet::new();
        for status in [Status::Succeeded, Status::Failed, Status::Canceled] {
            finished.extend(Self::uids_with_prefix(
                &read,
                BY_STATUS_TREE,
                &[status.byte()],
            )?);
        }
        let to_delete: Vec<TaskUid> = finished.into_iter().take(AUTO_CLEANUP_TASKS_MAX).collect();
        let Some(newest) = to_delete
            .last()
            .copied()
            .filter(|_| to_delete.len() >= SMALLEST_USEFUL_CLEANUP)
        else {
            return Ok(None);
        };
        let newest = Self::read_task(&read, newest)?.ok_or(QueueError::TaskNotFound(newest))?;
        drop(read);
        let before = newest.enqueued_at + time::Duration::nanoseconds(1);
        let query = format!(
            "?beforeEnqueuedAt={}&statuses=succeeded,failed,canceled",
            super::view::format_date(before)
        );
        let kind = KindWithContent::TaskDeletion {
            query,
            tasks: to_delete,
        };
        self.register(kind, None, now).map(Some)
    }

    /// The task with `uid`.
    pub fn get_task(&self, uid: TaskUid) -> QueueResult<Option<Task>> {
        let read = self.database.begin_read();
        Self::read_task(&read, uid)
    }

    pub(super) fn read_task(read: &ReadTransaction, uid: TaskUid) -> QueueResult<Option<Task>> {
        Self::read_tree(read, TASKS_TREE)?
            .get(&uid_bytes(uid))?
            .map(decode)
            .transpose()
    }

    /// The batch with `uid`.
    pub fn get_batch(&self, uid: BatchUid) -> QueueResult<Option<Batch>> {
        let read = self.database.begin_read();
        Self::read_tree(&read, BATCHES_TREE)?
            .get(&uid_bytes(uid))?
            .map(decode)
            .transpose()
    }

    /// The batch `uid` as `GET /batches/{uid}` shows it to `visibility`: hidden exactly when
    /// `GET /batches` would leave it out of its listing.
    pub fn get_visible_batch(
        &self,
        uid: BatchUid,
        visibility: &dyn TaskVisibility,
    ) -> QueueResult<Option<Batch>> {
        if visibility.all_indexes_authorized() {
            return self.get_batch(uid);
        }
        let query = TaskQuery {
            batch_uids: Some(vec![uid]),
            ..TaskQuery::default()
        };
        let page = self.list_batches(&query, visibility)?;
        Ok(page.results.into_iter().find(|batch| batch.uid == uid))
    }

    /// Sets the `network` of task `uid` (the leader records what each remote answered once
    /// the forwarding is over), keeping every other field as stored: the task may have been
    /// processed meanwhile. A task deleted meanwhile is left deleted.
    pub fn set_task_network(
        &self,
        uid: TaskUid,
        network: crate::network::task_network::TaskNetwork,
    ) -> QueueResult<()> {
        let write = self.database.begin_write()?;
        let Some(mut task) = Self::read_task_for_write(&write, uid)? else {
            write.abort();
            return Ok(());
        };
        task.network = Some(network);
        Self::write_task_record(&write, &task, NetworkWrite::Replace)?;
        write.commit()?;
        Ok(())
    }

    /// Stores changed tasks (status, details, batch, dates) in one commit.
    pub fn update_tasks(&self, tasks: &[Task]) -> QueueResult<()> {
        let write = self.database.begin_write()?;
        for task in tasks {
            if Self::read_task_for_write(&write, task.uid)?.is_none() {
                return Err(QueueError::TaskNotFound(task.uid));
            }
            Self::write_task(&write, task)?;
        }
        write.commit()?;
        Ok(())
    }

    /// The tasks waiting to be batched, in uid order: every enqueued task, and failed
    /// `upgradeDatabase` tasks (retried first).
    pub fn waiting_tasks(&self) -> QueueResult<Vec<Task>> {
        let read = self.database.begin_read();
        let mut uids = Self::uids_with_prefix(&read, BY_STATUS_TREE, &[Status::Enqueued.byte()])?;
        let failed = Self::uids_with_prefix(&read, BY_STATUS_TREE, &[Status::Failed.byte()])?;
        let upgrades =
            Self::uids_with_prefix(&read, BY_KIND_TREE, &[Kind::UpgradeDatabase.byte()])?;
        uids.extend(failed.intersection(&upgrades));
        uids.into_iter()
            .map(|uid| Self::read_task(&read, uid)?.ok_or(QueueError::TaskNotFound(uid)))
            .collect()
    }

    /// Whether an enqueued cancelation matched one of `task_uids`: one registered while the
    /// batch of `task_uids` was being formed and started, before the scheduler could be
    /// told to stop it.
    pub fn cancelation_waits_for(&self, task_uids: &[TaskUid]) -> QueueResult<bool> {
        let read = self.database.begin_read();
        let enqueued = Self::uids_with_prefix(&read, BY_STATUS_TREE, &[Status::Enqueued.byte()])?;
        let cancelations =
            Self::uids_with_prefix(&read, BY_KIND_TREE, &[Kind::TaskCancelation.byte()])?;
        for uid in enqueued.intersection(&cancelations) {
            let task = Self::read_task(&read, *uid)?.ok_or(QueueError::TaskNotFound(*uid))?;
            if let KindWithContent::TaskCancelation { tasks, .. } = &task.kind
                && tasks.iter().any(|matched| task_uids.contains(matched))
            {
                return Ok(true);
            }
        }
        Ok(false)
    }

    pub(super) fn next_batch_uid_in(write: &WriteTransaction) -> QueueResult<BatchUid> {
        let after_last = match Self::tree(write, BATCHES_TREE)?.last()? {
            Some((key, _)) => uid_from(&key)?
                .checked_add(1)
                .ok_or(QueueError::TaskUidsExhausted)?,
            None => 0,
        };
        let floor = match Self::tree(write, META_TREE)?.get(NEXT_BATCH_UID_FLOOR_KEY)? {
            Some(bytes) => uid_from(&bytes)?,
            None => 0,
        };
        Ok(after_last.max(floor))
    }

    /// Starts a batch of `task_uids`: the tasks become `processing` in a new batch (or in
    /// `reuse_batch_uid`), which is stored with its processing statistics.
    pub fn start_batch(
        &self,
        task_uids: &[TaskUid],
        reuse_batch_uid: Option<BatchUid>,
        stop_reason: String,
        started_at: OffsetDateTime,
    ) -> QueueResult<(Batch, Vec<Task>)> {
        assert!(
            task_uids.windows(2).all(|pair| pair[0] < pair[1]),
            "a batch starts its tasks in uid order, each once: {task_uids:?}"
        );
        let write = self.database.begin_write()?;
        let uid = match reuse_batch_uid {
            Some(uid) => uid,
            None => Self::next_batch_uid_in(&write)?,
        };
        let replaced: Option<Batch> = Self::tree(&write, BATCHES_TREE)?
            .get(&uid_bytes(uid))?
            .map(|bytes| decode(&bytes))
            .transpose()?;
        let mut batch = Batch::new(uid, started_at, stop_reason);
        let mut tasks = Vec::with_capacity(task_uids.len());
        for task_uid in task_uids {
            let mut task = Self::read_task_for_write(&write, *task_uid)?
                .ok_or(QueueError::TaskNotFound(*task_uid))?;
            assert!(
                is_waiting(&task),
                "task {task_uid} ({}, {}) cannot join batch {uid}: it does not wait for one",
                task.kind(),
                task.status
            );
            // A network change runs over several batches: it shows the start of the one
            // it is in, as Meilisearch's does.
            task.started_at = Some(started_at);
            task.status = Status::Processing;
            task.batch_uid = Some(uid);
            Self::write_task(&write, &task)?;
            tasks.push(task);
        }
        // The shards skip a batch whose uid they applied: a finished batch's uid is given
        // again only to the upgrade that retries it (no shard applies an upgrade).
        assert!(
            replaced.is_none_or(|replaced| replaced.finished_at.is_none())
                || tasks
                    .iter()
                    .all(|task| task.kind() == Kind::UpgradeDatabase),
            "batch {uid} is finished: its uid cannot start the batch of {task_uids:?}"
        );
        batch.recompute(&tasks, true);
        Self::tree(&write, BATCHES_TREE)?.put(&uid_bytes(uid), &encode(&batch)?)?;
        write.commit()?;
        Ok((batch, tasks))
    }

    /// Finishes a batch: stores the tasks' final states (each gets the batch uid, its start
    /// date and `finished_at`), recomputes the batch's statistics and details from them.
    pub fn finish_batch(
        &self,
        batch: &mut Batch,
        tasks: &mut [Task],
        finished_at: OffsetDateTime,
    ) -> QueueResult<()> {
        self.finish_batch_with(batch, tasks, finished_at, |_| Ok(()))
    }

    /// [`TaskQueue::finish_batch`], writing `also` (the catalog changes the batch made) in
    /// the same transaction, so the batch's effects and its tasks' final states are durable
    /// together.
    pub fn finish_batch_with(
        &self,
        batch: &mut Batch,
        tasks: &mut [Task],
        finished_at: OffsetDateTime,
        also: impl FnOnce(&WriteTransaction) -> QueueResult<()>,
    ) -> QueueResult<()> {
        let write = self.database.begin_write()?;
        also(&write)?;
        Self::finish_batch_in(&write, batch, tasks, finished_at)?;
        write.commit()?;
        Ok(())
    }

    /// Stores the batch's tasks and the finished batch inside `write`. A network change the
    /// batch carried goes back to `enqueued` (no start, no finish date, the batch's uid) with
    /// the processed imports of the batch counted in it.
    pub(super) fn finish_batch_in(
        write: &WriteTransaction,
        batch: &mut Batch,
        tasks: &mut [Task],
        finished_at: OffsetDateTime,
    ) -> QueueResult<()> {
        assert!(
            batch.finished_at.is_none(),
            "batch {} is finished only once",
            batch.uid
        );
        Self::swap_history_for(write, tasks)?;
        for task in tasks.iter_mut() {
            check_finished_in_batch(task, batch.uid);
            task.batch_uid = Some(batch.uid);
            task.started_at = match task.status {
                Status::Enqueued => None,
                _ => task.started_at.or(Some(batch.started_at)),
            };
            task.finished_at = task.status.is_finished().then_some(finished_at);
            // Wall-clock dates may step back in production: checked in debug builds only.
            debug_assert!(
                task.started_at.is_none_or(|started| started <= finished_at),
                "task {}: startedAt {:?} <= finishedAt {finished_at}",
                task.uid,
                task.started_at
            );
            Self::refresh_change_details(write, task)?;
            Self::write_task(write, task)?;
        }
        let left = Self::processing_in_batch(write, batch.uid)?;
        assert!(
            left.is_empty(),
            "batch {} finishes with its tasks {left:?} still processing",
            batch.uid
        );
        Self::record_processed_imports(write, tasks)?;
        batch.finished_at = Some(finished_at);
        batch.progress = None;
        batch.recompute(tasks, false);
        Self::tree(write, BATCHES_TREE)?.put(&uid_bytes(batch.uid), &encode(batch)?)?;
        Ok(())
    }

    /// The tasks of batch `batch_uid` still processing, but a network change the batch
    /// holds between two of its batches (see `Scheduler::record_change_batch`).
    fn processing_in_batch(
        write: &WriteTransaction,
        batch_uid: BatchUid,
    ) -> QueueResult<Vec<TaskUid>> {
        let mut processing = Vec::new();
        for entry in Self::tree(write, BY_STATUS_TREE)?
            .prefix(&[Status::Processing.byte()], Direction::Forward)?
        {
            let (key, _) = entry?;
            processing.push(trailing_uid(&key)?);
        }
        let mapping = Self::tree(write, BATCH_TASKS_TREE)?;
        let mut left = Vec::new();
        for uid in processing {
            if mapping
                .get(&prefixed(&uid_bytes(batch_uid), uid))?
                .is_none()
            {
                continue;
            }
            let task =
                Self::read_task_for_write(write, uid)?.ok_or(QueueError::TaskNotFound(uid))?;
            if task.kind() != Kind::NetworkTopologyChange {
                left.push(uid);
            }
        }
        Ok(left)
    }

    /// Interrupts a processing batch: its processing tasks go back to `enqueued` and the
    /// batch is dropped (its uid is given to the next batch, as Meilisearch).
    pub fn abort_batch(&self, batch_uid: BatchUid) -> QueueResult<Vec<TaskUid>> {
        let write = self.database.begin_write()?;
        let keys: Vec<Vec<u8>> = Self::tree(&write, BATCH_TASKS_TREE)?
            .prefix(&uid_bytes(batch_uid), Direction::Forward)?
            .map(|entry| entry.map(|(key, _)| key.to_vec()))
            .collect::<Result<_, _>>()?;
        let mut requeued = Vec::new();
        for key in keys {
            let uid = trailing_uid(&key)?;
            let Some(mut task) = Self::read_task_for_write(&write, uid)? else {
                continue;
            };
            assert_eq!(
                task.batch_uid,
                Some(batch_uid),
                "the batch-tasks tree puts task {uid} in batch {batch_uid}, the task says otherwise"
            );
            if task.status == Status::Processing {
                task.status = Status::Enqueued;
                task.batch_uid = None;
                task.started_at = None;
                Self::write_task(&write, &task)?;
                requeued.push(uid);
            }
        }
        Self::remove_batch_if_unfinished(&write, batch_uid)?;
        write.commit()?;
        Ok(requeued)
    }

    /// The tasks a cancelation task cancels, in their canceled state (not stored: the
    /// caller finishes them with the cancelation's batch). Only enqueued tasks are canceled;
    /// canceling an upgrade cancels every enqueued or failed upgrade.
    pub fn cancel_matched(
        &self,
        cancel_uid: TaskUid,
        matched: &[TaskUid],
    ) -> QueueResult<Vec<Task>> {
        let read = self.database.begin_read();
        let mut to_cancel: BTreeSet<TaskUid> = BTreeSet::new();
        let upgrades =
            Self::uids_with_prefix(&read, BY_KIND_TREE, &[Kind::UpgradeDatabase.byte()])?;
        let enqueued = Self::uids_with_prefix(&read, BY_STATUS_TREE, &[Status::Enqueued.byte()])?;
        if matched.iter().any(|uid| upgrades.contains(uid)) {
            let failed = Self::uids_with_prefix(&read, BY_STATUS_TREE, &[Status::Failed.byte()])?;
            to_cancel.extend(
                upgrades
                    .iter()
                    .filter(|uid| enqueued.contains(uid) || failed.contains(uid)),
            );
        }
        to_cancel.extend(matched.iter().filter(|uid| enqueued.contains(uid)));
        // A network change whose batch is held (see `Scheduler::record_change_batch`) is
        // processing while no batch runs.
        let processing =
            Self::uids_with_prefix(&read, BY_STATUS_TREE, &[Status::Processing.byte()])?;
        let changes =
            Self::uids_with_prefix(&read, BY_KIND_TREE, &[Kind::NetworkTopologyChange.byte()])?;
        to_cancel.extend(
            matched
                .iter()
                .filter(|uid| processing.contains(uid) && changes.contains(uid)),
        );
        let mut canceled = Vec::with_capacity(to_cancel.len());
        for uid in to_cancel {
            let mut task = Self::read_task(&read, uid)?.ok_or(QueueError::TaskNotFound(uid))?;
            task.status = Status::Canceled;
            task.canceled_by = Some(cancel_uid);
            task.details = task.details.as_ref().map(super::model::Details::to_failed);
            canceled.push(task);
        }
        Ok(canceled)
    }

    /// Deletes the finished tasks among `matched` (enqueued and processing ones stay), and
    /// the batches left without tasks. Returns the deleted uids.
    pub fn delete_matched(&self, matched: &[TaskUid]) -> QueueResult<Vec<TaskUid>> {
        let write = self.database.begin_write()?;
        let mut deleted = Vec::new();
        let mut touched_batches = BTreeSet::new();
        for uid in matched {
            let Some(task) = Self::read_task_for_write(&write, *uid)? else {
                continue;
            };
            if !task.status.is_finished() {
                continue;
            }
            touched_batches.extend(task.batch_uid);
            Self::remove_task(&write, &task)?;
            deleted.push(*uid);
        }
        for batch_uid in touched_batches {
            let mut remaining = Self::tree(&write, BATCH_TASKS_TREE)?
                .prefix(&uid_bytes(batch_uid), Direction::Forward)?;
            if remaining.next().transpose()?.is_none() {
                drop(remaining);
                Self::tree(&write, BATCHES_TREE)?.delete(&uid_bytes(batch_uid))?;
            }
        }
        write.commit()?;
        Ok(deleted)
    }

    /// The uids the indexed filters of `query` allow, or `None` when none is given.
    fn candidates(
        read: &ReadTransaction,
        query: &TaskQuery,
    ) -> QueueResult<Option<BTreeSet<TaskUid>>> {
        let mut sets: Vec<BTreeSet<TaskUid>> = Vec::new();
        if let Some(uids) = &query.uids {
            let tasks = Self::read_tree(read, TASKS_TREE)?;
            let mut existing = BTreeSet::new();
            for uid in uids {
                if tasks.get(&uid_bytes(*uid))?.is_some() {
                    existing.insert(*uid);
                }
            }
            sets.push(existing);
        }
        let union = |tree: &str, prefixes: Vec<Vec<u8>>| -> QueueResult<BTreeSet<TaskUid>> {
            let mut set = BTreeSet::new();
            for prefix in prefixes {
                set.extend(Self::uids_with_prefix(read, tree, &prefix)?);
            }
            Ok(set)
        };
        if let Some(statuses) = &query.statuses {
            sets.push(union(
                BY_STATUS_TREE,
                statuses.iter().map(|status| vec![status.byte()]).collect(),
            )?);
        }
        if let Some(types) = &query.types {
            sets.push(union(
                BY_KIND_TREE,
                types.iter().map(|kind| vec![kind.byte()]).collect(),
            )?);
        }
        if let Some(indexes) = &query.index_uids {
            sets.push(union(
                BY_INDEX_TREE,
                indexes.iter().map(|index| index_prefix(index)).collect(),
            )?);
        }
        if let Some(cancelers) = &query.canceled_by {
            sets.push(union(
                BY_CANCELER_TREE,
                cancelers
                    .iter()
                    .map(|uid| uid_bytes(*uid).to_vec())
                    .collect(),
            )?);
        }
        if let Some(batches) = &query.batch_uids {
            sets.push(union(
                BATCH_TASKS_TREE,
                batches.iter().map(|uid| uid_bytes(*uid).to_vec()).collect(),
            )?);
        }
        Ok(sets
            .into_iter()
            .reduce(|left, right| left.intersection(&right).copied().collect()))
    }

    /// Every task matching the filters of `query` (limits ignored), newest first unless
    /// `reverse`. Reads only the candidates of the indexed filters.
    fn matching_tasks(read: &ReadTransaction, query: &TaskQuery) -> QueueResult<Vec<Task>> {
        let reverse = query.reverse.unwrap_or(false);
        let mut tasks = Vec::new();
        match Self::candidates(read, query)? {
            Some(candidates) => {
                let ordered: Box<dyn Iterator<Item = &TaskUid>> = if reverse {
                    Box::new(candidates.iter())
                } else {
                    Box::new(candidates.iter().rev())
                };
                for uid in ordered {
                    let task = Self::read_task(read, *uid)?;
                    tasks.extend(task.filter(|task| matches(query, task)));
                }
            }
            None => {
                let direction = if reverse {
                    Direction::Forward
                } else {
                    Direction::Backward
                };
                let tree = Self::read_tree(read, TASKS_TREE)?;
                for entry in tree.range(Bound::Unbounded, Bound::Unbounded, direction)? {
                    let (_, bytes) = entry?;
                    let task: Task = decode(bytes)?;
                    if matches(query, &task) {
                        tasks.push(task);
                    }
                }
            }
        }
        Ok(tasks)
    }

    /// Every matching task visible to the key, ignoring `limit` and `from` (what cancel and
    /// delete match).
    pub fn matching_task_uids(
        &self,
        query: &TaskQuery,
        visibility: &dyn TaskVisibility,
    ) -> QueueResult<Vec<TaskUid>> {
        let read = self.database.begin_read();
        let unlimited = query.without_limits();
        let mut tasks = Self::matching_tasks(&read, &unlimited)?;
        hide_tasks(&mut tasks, query, visibility);
        let mut uids: Vec<TaskUid> = tasks.iter().map(|task| task.uid).collect();
        uids.sort_unstable();
        Ok(uids)
    }

    /// A page of `GET /tasks`: `total` counts every matching task before the key's index
    /// restrictions apply; the page is cut before they apply too (Meilisearch's order).
    pub fn list_tasks(
        &self,
        query: &TaskQuery,
        visibility: &dyn TaskVisibility,
    ) -> QueueResult<Page<Task>> {
        let read = self.database.begin_read();
        let limit = query.limit.unwrap_or(u32::MAX);
        let fetched = limit.saturating_add(1) as usize;
        let (mut page, total) = if has_date_bounds(query) {
            let all = Self::matching_tasks(&read, &query.without_limits())?;
            let total = all.len() as u64;
            let page = all
                .into_iter()
                .filter(|task| after_from(query, task.uid))
                .take(fetched)
                .collect();
            (page, total)
        } else {
            // The secondary trees answer every filter exactly: count uids, read one page.
            Self::page_without_dates(&read, query, fetched)?
        };
        hide_tasks(&mut page, query, visibility);
        Ok(paginate(page, |task| task.uid, limit, total))
    }

    /// A page (at most `fetched` tasks) and the total, for a query without date bounds.
    fn page_without_dates(
        read: &ReadTransaction,
        query: &TaskQuery,
        fetched: usize,
    ) -> QueueResult<(Vec<Task>, u64)> {
        let reverse = query.reverse.unwrap_or(false);
        let (uids, total): (Vec<TaskUid>, u64) = match Self::candidates(read, query)? {
            Some(candidates) => {
                let total = candidates.len() as u64;
                let ordered: Box<dyn Iterator<Item = &TaskUid>> = if reverse {
                    Box::new(candidates.iter())
                } else {
                    Box::new(candidates.iter().rev())
                };
                let uids = ordered
                    .copied()
                    .filter(|uid| after_from(query, *uid))
                    .take(fetched)
                    .collect();
                (uids, total)
            }
            None => {
                let tree = Self::read_tree(read, TASKS_TREE)?;
                let from = query.from.map(uid_bytes);
                let (start, end, direction) = match (&from, reverse) {
                    (Some(from), true) => (
                        Bound::Included(&from[..]),
                        Bound::Unbounded,
                        Direction::Forward,
                    ),
                    (Some(from), false) => (
                        Bound::Unbounded,
                        Bound::Included(&from[..]),
                        Direction::Backward,
                    ),
                    (None, true) => (Bound::Unbounded, Bound::Unbounded, Direction::Forward),
                    (None, false) => (Bound::Unbounded, Bound::Unbounded, Direction::Backward),
                };
                let mut uids = Vec::new();
                for entry in tree.range(start, end, direction)?.take(fetched) {
                    let (key, _) = entry?;
                    uids.push(uid_from(key)?);
                }
                (uids, tree.len())
            }
        };
        let tasks = uids
            .into_iter()
            .map(|uid| Self::read_task(read, uid)?.ok_or(QueueError::TaskNotFound(uid)))
            .collect::<QueueResult<Vec<Task>>>()?;
        Ok((tasks, total))
    }

    /// Every stored batch, in uid order.
    fn all_batches(read: &ReadTransaction) -> QueueResult<Vec<Batch>> {
        let tree = Self::read_tree(read, BATCHES_TREE)?;
        let mut batches = Vec::new();
        for entry in tree.range(Bound::Unbounded, Bound::Unbounded, Direction::Forward)? {
            let (_, bytes) = entry?;
            batches.push(decode(bytes)?);
        }
        Ok(batches)
    }

    /// A page of `GET /batches`, with Meilisearch's batch filter semantics.
    pub fn list_batches(
        &self,
        query: &TaskQuery,
        visibility: &dyn TaskVisibility,
    ) -> QueueResult<Page<Batch>> {
        let read = self.database.begin_read();
        let by_task_uids = match &query.uids {
            Some(uids) => Some(Self::batches_of_tasks(&read, uids, |_| true)?),
            None => None,
        };
        let by_cancelers = match &query.canceled_by {
            Some(uids) => Some(Self::batches_of_tasks(&read, uids, |task| {
                task.kind() == Kind::TaskCancelation && task.status == Status::Succeeded
            })?),
            None => None,
        };
        let mut matching: Vec<Batch> = Self::all_batches(&read)?
            .into_iter()
            .filter(|batch| {
                batch_matches(query, batch)
                    && by_task_uids
                        .as_ref()
                        .is_none_or(|set| set.contains(&batch.uid))
                    && by_cancelers
                        .as_ref()
                        .is_none_or(|set| set.contains(&batch.uid))
            })
            .collect();
        if !query.reverse.unwrap_or(false) {
            matching.reverse();
        }
        let total = matching.len() as u64;
        let limit = query.limit.unwrap_or(u32::MAX);
        let mut page: Vec<Batch> = matching
            .into_iter()
            .filter(|batch| after_from(query, batch.uid))
            .take(limit.saturating_add(1) as usize)
            .collect();
        if query.index_uids.is_some() || !visibility.all_indexes_authorized() {
            // Meilisearch removes the batch uids equal to the *task* uids of global kinds
            // (it subtracts the task bitmap from the batch bitmap); reproduced as is.
            let global = Self::global_task_uids(&read)?;
            page.retain(|batch| {
                let processing_global = batch.finished_at.is_none()
                    && batch.kinds.iter().any(|kind| !kind.related_to_one_index());
                !(global.contains(&batch.uid) || processing_global)
            });
        }
        if !visibility.all_indexes_authorized() {
            page.retain(|batch| {
                let any_forbidden = batch
                    .indexes
                    .iter()
                    .any(|index| !visibility.is_index_authorized(index));
                let any_allowed = batch
                    .indexes
                    .iter()
                    .any(|index| visibility.is_index_authorized(index));
                !any_forbidden || any_allowed
            });
        }
        Ok(paginate(page, |batch| batch.uid, limit, total))
    }

    fn global_task_uids(read: &ReadTransaction) -> QueueResult<BTreeSet<TaskUid>> {
        let mut uids = BTreeSet::new();
        for kind in Kind::ALL
            .into_iter()
            .filter(|kind| !kind.related_to_one_index())
        {
            uids.extend(Self::uids_with_prefix(read, BY_KIND_TREE, &[kind.byte()])?);
        }
        Ok(uids)
    }

    fn batches_of_tasks(
        read: &ReadTransaction,
        uids: &[TaskUid],
        keep: impl Fn(&Task) -> bool,
    ) -> QueueResult<BTreeSet<BatchUid>> {
        let mut batches = BTreeSet::new();
        for uid in uids {
            let task = Self::read_task(read, *uid)?;
            batches.extend(
                task.filter(|task| keep(task))
                    .and_then(|task| task.batch_uid),
            );
        }
        Ok(batches)
    }
}

/// Whether `task` waits for a batch: enqueued, a failed `upgradeDatabase` (retried), or a
/// network change processing between two of its batches.
fn is_waiting(task: &Task) -> bool {
    match task.status {
        Status::Enqueued => true,
        Status::Failed => task.kind() == Kind::UpgradeDatabase,
        Status::Processing => task.kind() == Kind::NetworkTopologyChange,
        Status::Succeeded | Status::Canceled => false,
    }
}

/// Asserts that batch `batch_uid` may record `task` as it ends: a task of the batch, or one
/// it canceled; finished, or a network change it carried going back to the queue.
fn check_finished_in_batch(task: &Task, batch_uid: BatchUid) {
    assert!(
        task.batch_uid.is_none_or(|uid| uid == batch_uid) || task.status == Status::Canceled,
        "batch {batch_uid} cannot finish task {}, which is in batch {:?}",
        task.uid,
        task.batch_uid
    );
    assert!(
        task.status.is_finished()
            || (task.status == Status::Enqueued && task.kind() == Kind::NetworkTopologyChange),
        "batch {batch_uid} ends with task {} ({}) {}: only a network change it carried goes \
         back to the queue",
        task.uid,
        task.kind(),
        task.status
    );
}

/// Whether the query bounds a date (those filters are checked on each task).
fn has_date_bounds(query: &TaskQuery) -> bool {
    [
        query.before_enqueued_at,
        query.after_enqueued_at,
        query.before_started_at,
        query.after_started_at,
        query.before_finished_at,
        query.after_finished_at,
    ]
    .iter()
    .any(Option::is_some)
}

/// Removes the tasks the query or the key hides: global tasks when indexes are named or
/// the key is restricted, and tasks touching an index the key cannot see.
fn hide_tasks(tasks: &mut Vec<Task>, query: &TaskQuery, visibility: &dyn TaskVisibility) {
    if query.index_uids.is_some() || !visibility.all_indexes_authorized() {
        tasks.retain(|task| task.kind().related_to_one_index());
    }
    if !visibility.all_indexes_authorized() {
        tasks.retain(|task| {
            task.indexes()
                .iter()
                .all(|index| visibility.is_index_authorized(index))
        });
    }
}

/// The filters of a batch that do not need other records.
fn batch_matches(query: &TaskQuery, batch: &Batch) -> bool {
    let within = |date: Option<OffsetDateTime>,
                  after: Option<OffsetDateTime>,
                  before: Option<OffsetDateTime>| {
        if after.is_none() && before.is_none() {
            return true;
        }
        date.is_some_and(|date| {
            after.is_none_or(|after| date > after) && before.is_none_or(|before| date < before)
        })
    };
    let enqueued_dates = batch
        .enqueued_at
        .map(|dates| [dates.earliest, dates.oldest]);
    query
        .batch_uids
        .as_ref()
        .is_none_or(|uids| uids.contains(&batch.uid))
        && query.statuses.as_ref().is_none_or(|statuses| {
            statuses
                .iter()
                .any(|status| *status != Status::Enqueued && batch.statuses.contains(status))
        })
        && query
            .types
            .as_ref()
            .is_none_or(|types| types.iter().any(|kind| batch.kinds.contains(kind)))
        && query
            .index_uids
            .as_ref()
            .is_none_or(|indexes| indexes.iter().any(|index| batch.indexes.contains(index)))
        && within(
            Some(batch.started_at),
            query.after_started_at,
            query.before_started_at,
        )
        && within(
            batch.finished_at,
            query.after_finished_at,
            query.before_finished_at,
        )
        && (query.after_enqueued_at.is_none() && query.before_enqueued_at.is_none()
            || enqueued_dates.is_some_and(|dates| {
                dates.iter().any(|date| {
                    within(
                        Some(*date),
                        query.after_enqueued_at,
                        query.before_enqueued_at,
                    )
                })
            }))
}
