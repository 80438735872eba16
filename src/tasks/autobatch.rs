//! The auto-batching rule as a pure function: from the tasks waiting in the queue, the next
//! batch Meilisearch v1.41 would form (index-scheduler `create_batch.rs` and
//! `autobatcher.rs`), with the `batchStrategy` text it reports.
//!
//! Priority: the newest enqueued `taskCancelation` alone → every enqueued or failed
//! `upgradeDatabase` → the index tasks registered before the first `networkTopologyChange`
//! (auto-batched among themselves) → that `networkTopologyChange` → every enqueued `taskDeletion` →
//! every enqueued `dsrUpdate` and `dsrClear` (applied in uid order) → the oldest `indexCompaction` → the oldest `export` → every `snapshotCreation` → the oldest
//! `dumpCreation` → the tasks of the index of the oldest remaining task, auto-batched.
//!
//! Invariants: the input is in uid order; the output's uids are a subsequence of it; an
//! index batch never mixes indexes and always contains the oldest task of its index.

use std::fmt;

use super::model::{BatchUid, Kind, KindWithContent, Status, Task, TaskUid};

/// Limits of an index batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AutobatchLimits {
    /// Off: one task per index batch.
    pub autobatching_enabled: bool,
    /// `--experimental-max-number-of-batched-tasks`.
    pub max_tasks_per_batch: usize,
    /// `--experimental-limit-batched-tasks-total-size`: total payload bytes of a batch.
    pub max_payload_bytes: u64,
}

impl Default for AutobatchLimits {
    fn default() -> Self {
        AutobatchLimits {
            autobatching_enabled: true,
            max_tasks_per_batch: usize::MAX,
            max_payload_bytes: u64::MAX,
        }
    }
}

/// What the scheduler knows of an index when it forms a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IndexState {
    Missing,
    Exists { primary_key: Option<String> },
}

/// Why a primary key stopped a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrimaryKeyMismatch {
    DifferFromIndex { task: String, index: String },
    DifferFromBatch { task: String, batch: String },
    WouldInterfereWithGuessing { task: String },
}

impl PrimaryKeyMismatch {
    /// The `batchStrategy` text of a batch this mismatch stopped before task `id`.
    fn write_stop(&self, id: TaskUid, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PrimaryKeyMismatch::DifferFromIndex { task, index } => write!(
                formatter,
                "stopped batching before task with id {id} because its primary key `{task}` is different from the primary key of the index `{index}`"
            ),
            PrimaryKeyMismatch::DifferFromBatch { task, batch } => write!(
                formatter,
                "stopped batching before task with id {id} because its primary key `{task}` is different from the primary key of the batch `{batch}`"
            ),
            PrimaryKeyMismatch::WouldInterfereWithGuessing { task } => write!(
                formatter,
                "stopped batching before task with id {id} because it is setting the `{task}` primary key and it would interfere with primary key guessing of the batch"
            ),
        }
    }
}

/// Why a batch stopped where it did; its `Display` is the `batchStrategy` text.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum StopReason {
    #[default]
    Unspecified,
    TaskCannotBeBatched {
        kind: Kind,
        id: TaskUid,
    },
    TaskKindCannotBeBatched {
        kind: Kind,
    },
    ExhaustedEnqueuedTasks,
    ExhaustedEnqueuedTasksForIndex {
        index: String,
    },
    ReachedTaskLimit {
        task_limit: usize,
    },
    ReachedSizeLimit {
        size_limit: u64,
        size: u64,
    },
    PrimaryKeyIndexMismatch {
        id: TaskUid,
        in_index: String,
        in_task: String,
    },
    IndexCreationMismatch {
        id: TaskUid,
    },
    PrimaryKeyMismatch {
        id: TaskUid,
        reason: PrimaryKeyMismatch,
    },
    IndexDeletion {
        id: TaskUid,
    },
    DocumentOperationWithSettings {
        id: TaskUid,
    },
    DocumentOperationWithDeletionByFilter {
        id: TaskUid,
    },
    DeletionByFilterWithDocumentOperation {
        id: TaskUid,
    },
    SettingsWithDocumentOperation {
        id: TaskUid,
    },
    NetworkTask {
        id: TaskUid,
    },
    /// A batch of the tasks registered before the network change `id`, carrying it.
    NetworkTaskOlderTasks {
        id: TaskUid,
        inner: Box<StopReason>,
    },
    /// A batch of imports (and writes) of the network change `id`, carrying it.
    NetworkTaskImportTasks {
        id: TaskUid,
        inner: Box<StopReason>,
    },
}

impl fmt::Display for StopReason {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StopReason::Unspecified => formatter.write_str("unspecified"),
            StopReason::TaskKindCannotBeBatched { kind } => write!(
                formatter,
                "stopped after the last task of type `{kind}` because they cannot be batched with tasks of any other type."
            ),
            StopReason::TaskCannotBeBatched { kind, id } => write!(
                formatter,
                "created batch containing only task with id {id} of type `{kind}` that cannot be batched with any other task."
            ),
            StopReason::ExhaustedEnqueuedTasks => formatter.write_str("batched all enqueued tasks"),
            StopReason::ExhaustedEnqueuedTasksForIndex { index } => {
                write!(formatter, "batched all enqueued tasks for index `{index}`")
            }
            StopReason::ReachedTaskLimit { task_limit } => {
                write!(
                    formatter,
                    "batched up to configured batch limit of {task_limit} tasks"
                )
            }
            StopReason::ReachedSizeLimit { size_limit, size } => write!(
                formatter,
                "batched up to configured batch size limit of {size_limit}B with a total of {size}B"
            ),
            StopReason::PrimaryKeyIndexMismatch {
                id,
                in_index,
                in_task,
            } => write!(
                formatter,
                "stopped batching before task with id {id} because its primary key `{in_task}` is different from the primary key of the index `{in_index}`"
            ),
            StopReason::IndexCreationMismatch { id } => write!(
                formatter,
                "stopped batching before task with id {id} because its index creation rules differ from the ones from the batch"
            ),
            StopReason::PrimaryKeyMismatch { id, reason } => reason.write_stop(*id, formatter),
            StopReason::IndexDeletion { id } => write!(
                formatter,
                "stopped after task with id {id} because it deletes the index"
            ),
            StopReason::DocumentOperationWithSettings { id } => write!(
                formatter,
                "stopped before task with id {id} because it is a settings change which cannot be batched with document operations"
            ),
            StopReason::DocumentOperationWithDeletionByFilter { id } => write!(
                formatter,
                "stopped before task with id {id} because it is a deletion by filter which cannot be batched with document operations"
            ),
            StopReason::DeletionByFilterWithDocumentOperation { id } => write!(
                formatter,
                "stopped before task with id {id} because it is a document operation which cannot be batched with deletions by filter"
            ),
            StopReason::SettingsWithDocumentOperation { id } => write!(
                formatter,
                "stopped before task with id {id} because it is a document operation which cannot be batched with settings changes"
            ),
            StopReason::NetworkTask { id } => write!(
                formatter,
                "stopped after task with id {id} because it is a network topology change task"
            ),
            StopReason::NetworkTaskOlderTasks { id, inner } => write!(
                formatter,
                "stopped after batching network task with id {id} and a batch of older tasks: {inner}"
            ),
            StopReason::NetworkTaskImportTasks { id, inner } => write!(
                formatter,
                "stopped after batching network task with id {id} and a batch of import tasks: {inner}"
            ),
        }
    }
}

/// The operation an index batch performs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchKind {
    DocumentClear {
        ids: Vec<TaskUid>,
    },
    DocumentOperation {
        allow_index_creation: bool,
        primary_key: Option<String>,
        operation_ids: Vec<TaskUid>,
    },
    DocumentEdition {
        id: TaskUid,
    },
    DocumentDeletion {
        deletion_ids: Vec<TaskUid>,
        includes_by_filter: bool,
    },
    ClearAndSettings {
        other: Vec<TaskUid>,
        allow_index_creation: bool,
        settings_ids: Vec<TaskUid>,
    },
    Settings {
        allow_index_creation: bool,
        settings_ids: Vec<TaskUid>,
    },
    IndexDeletion {
        ids: Vec<TaskUid>,
    },
    IndexCreation {
        id: TaskUid,
    },
    IndexUpdate {
        id: TaskUid,
    },
    IndexSwap {
        id: TaskUid,
    },
}

/// What the next batch is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchPlan {
    /// A batch of tasks that are not about one index (or a lone task that cannot batch).
    Global,
    /// An index batch formed by the autobatcher.
    Index {
        index_uid: String,
        kind: BatchKind,
        /// The batch may create the index.
        must_create_index: bool,
    },
}

/// The next batch: its tasks in uid order, what it does and its `batchStrategy`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NextBatch {
    pub task_uids: Vec<TaskUid>,
    pub plan: BatchPlan,
    pub stop_reason: StopReason,
    /// An upgrade batch takes back the uid of the batch that tried it before.
    pub reuse_batch_uid: Option<BatchUid>,
    /// The network change an index batch carries while the change is active (Meilisearch's
    /// batches of a change): it is processing with the batch's tasks, and enqueued again
    /// once they are finished.
    pub network_change: Option<TaskUid>,
}

impl NextBatch {
    pub fn global(task_uids: Vec<TaskUid>, stop_reason: StopReason) -> NextBatch {
        NextBatch {
            task_uids,
            plan: BatchPlan::Global,
            stop_reason,
            reuse_batch_uid: None,
            network_change: None,
        }
    }

    /// The `batchStrategy` text.
    pub fn strategy(&self) -> String {
        self.stop_reason.to_string()
    }
}

/// The next batch to process, from the queue's waiting tasks in uid order (enqueued tasks,
/// plus failed `upgradeDatabase` tasks which are retried), or `None` when nothing waits.
pub fn next_batch(
    tasks: &[&Task],
    index_state: impl Fn(&str) -> IndexState,
    limits: AutobatchLimits,
) -> Option<NextBatch> {
    assert_in_uid_order(tasks);
    if let Some(first) = next_priority_batch(tasks) {
        return Some(first);
    }
    let enqueued: Vec<&Task> = tasks
        .iter()
        .copied()
        .filter(|task| task.status == Status::Enqueued)
        .collect();
    let older = index_tasks_before_network_change(&enqueued);
    if !older.is_empty() {
        return next_index_batch(&older, index_state, limits);
    }
    next_global_batch(&enqueued).or_else(|| next_index_batch(&enqueued, index_state, limits))
}

/// The batch that comes before anything else: the newest enqueued cancelation, else every
/// enqueued or failed upgrade.
pub fn next_priority_batch(tasks: &[&Task]) -> Option<NextBatch> {
    let enqueued: Vec<&Task> = tasks
        .iter()
        .copied()
        .filter(|task| task.status == Status::Enqueued)
        .collect();
    next_cancelation(&enqueued).or_else(|| next_upgrade_batch(tasks))
}

/// The index tasks registered before the first enqueued network change: they run before
/// it, with the network they were registered under in mind (the change sends documents
/// as they are once these are applied).
fn index_tasks_before_network_change<'task>(enqueued: &[&'task Task]) -> Vec<&'task Task> {
    let Some(&change) = uids_of(enqueued, Kind::NetworkTopologyChange).first() else {
        return Vec::new();
    };
    enqueued
        .iter()
        .copied()
        .filter(|task| task.uid < change)
        .filter(|task| task.kind().related_to_one_index() || task.kind() == Kind::IndexSwap)
        .collect()
}

/// The uids of the enqueued tasks of `kind`.
fn uids_of(enqueued: &[&Task], kind: Kind) -> Vec<TaskUid> {
    enqueued
        .iter()
        .filter(|task| task.kind() == kind)
        .map(|task| task.uid)
        .collect()
}

/// Step 0: the newest enqueued cancelation, alone.
fn next_cancelation(enqueued: &[&Task]) -> Option<NextBatch> {
    let uid = *uids_of(enqueued, Kind::TaskCancelation).last()?;
    let reason = StopReason::TaskCannotBeBatched {
        kind: Kind::TaskCancelation,
        id: uid,
    };
    Some(NextBatch::global(vec![uid], reason))
}

/// Step 1: every enqueued or failed upgrade, in the batch of the last one's earlier try.
fn next_upgrade_batch(tasks: &[&Task]) -> Option<NextBatch> {
    let upgrades: Vec<&Task> = tasks
        .iter()
        .copied()
        .filter(|task| {
            task.kind() == Kind::UpgradeDatabase
                && matches!(task.status, Status::Enqueued | Status::Failed)
        })
        .collect();
    let last = upgrades.last()?;
    let reason = StopReason::TaskKindCannotBeBatched {
        kind: Kind::UpgradeDatabase,
    };
    let mut batch = NextBatch::global(upgrades.iter().map(|task| task.uid).collect(), reason);
    batch.reuse_batch_uid = last.batch_uid;
    Some(batch)
}

/// Steps 2 to 7: network change, deletions, rule changes, compaction, export, snapshots,
/// dump.
fn next_global_batch(enqueued: &[&Task]) -> Option<NextBatch> {
    let alone = |kind: Kind, uid: TaskUid| {
        NextBatch::global(vec![uid], StopReason::TaskCannotBeBatched { kind, id: uid })
    };
    let all = |kind: Kind, uids: Vec<TaskUid>| {
        NextBatch::global(uids, StopReason::TaskKindCannotBeBatched { kind })
    };
    if let Some(&uid) = uids_of(enqueued, Kind::NetworkTopologyChange).first() {
        return Some(NextBatch::global(
            vec![uid],
            StopReason::NetworkTask { id: uid },
        ));
    }
    let deletions = uids_of(enqueued, Kind::TaskDeletion);
    if !deletions.is_empty() {
        return Some(all(Kind::TaskDeletion, deletions));
    }
    let rule_changes: Vec<TaskUid> = enqueued
        .iter()
        .filter(|task| matches!(task.kind(), Kind::DsrUpdate | Kind::DsrClear))
        .map(|task| task.uid)
        .collect();
    if !rule_changes.is_empty() {
        return Some(NextBatch::global(
            rule_changes,
            StopReason::ExhaustedEnqueuedTasks,
        ));
    }
    for kind in [Kind::IndexCompaction, Kind::Export] {
        if let Some(&uid) = uids_of(enqueued, kind).first() {
            return Some(alone(kind, uid));
        }
    }
    let snapshots = uids_of(enqueued, Kind::SnapshotCreation);
    if !snapshots.is_empty() {
        return Some(all(Kind::SnapshotCreation, snapshots));
    }
    let dump = *uids_of(enqueued, Kind::DumpCreation).first()?;
    Some(alone(Kind::DumpCreation, dump))
}

/// Step 8: the batch of the index of the oldest enqueued task.
pub fn next_index_batch(
    enqueued: &[&Task],
    index_state: impl Fn(&str) -> IndexState,
    limits: AutobatchLimits,
) -> Option<NextBatch> {
    assert_in_uid_order(enqueued);
    let first = enqueued.first()?;
    let indexes = first.indexes();
    let Some(index_uid) = indexes.first().map(|index| (*index).to_owned()) else {
        // Only an index swap without swaps has no index.
        let reason = StopReason::TaskCannotBeBatched {
            kind: first.kind(),
            id: first.uid,
        };
        return Some(NextBatch::global(vec![first.uid], reason));
    };
    let (existing, primary_key) = match index_state(&index_uid) {
        IndexState::Missing => (false, None),
        IndexState::Exists { primary_key } => (true, primary_key),
    };
    let task_limit = if limits.autobatching_enabled {
        limits.max_tasks_per_batch
    } else {
        1
    };

    let mut stop_reason = StopReason::Unspecified;
    let mut chosen: Vec<&Task> = Vec::new();
    let mut total_size: u64 = 0;
    for task in enqueued
        .iter()
        .copied()
        .filter(|task| task.indexes().contains(&index_uid.as_str()))
    {
        if chosen.len() >= task_limit {
            stop_reason = StopReason::ReachedTaskLimit { task_limit };
            break;
        }
        if let KindWithContent::DocumentAdditionOrUpdate { content_bytes, .. } = &task.kind {
            total_size = total_size.saturating_add(*content_bytes);
        }
        if total_size > limits.max_payload_bytes && !chosen.is_empty() {
            stop_reason = StopReason::ReachedSizeLimit {
                size_limit: limits.max_payload_bytes,
                size: total_size,
            };
            break;
        }
        chosen.push(task);
    }
    if stop_reason == StopReason::Unspecified {
        stop_reason = if chosen.len() == enqueued.len() {
            StopReason::ExhaustedEnqueuedTasks
        } else {
            StopReason::ExhaustedEnqueuedTasksForIndex {
                index: index_uid.clone(),
            }
        };
    }
    let (kind, must_create_index, autobatch_reason) =
        autobatch(&chosen, existing, primary_key.as_deref())?;
    let task_uids = kind_task_uids(&kind);
    check_index_batch(&task_uids, &chosen, &index_uid, limits);
    Some(NextBatch {
        task_uids,
        plan: BatchPlan::Index {
            index_uid,
            kind,
            must_create_index,
        },
        stop_reason: autobatch_reason.unwrap_or(stop_reason),
        reuse_batch_uid: None,
        network_change: None,
    })
}

/// Asserts that the waiting tasks come in uid order, each once: the batches run each
/// index's tasks in that order.
fn assert_in_uid_order(tasks: &[&Task]) {
    assert!(
        tasks.windows(2).all(|pair| pair[0].uid < pair[1].uid),
        "the waiting tasks come in uid order, each once"
    );
}

/// Asserts what an index batch of `task_uids` formed from `chosen` (the index's waiting
/// tasks, oldest first) must be: the oldest tasks of index `index_uid`, none skipped (so the
/// index's tasks run in uid order and never mix with another index's), within the limits.
fn check_index_batch(
    task_uids: &[TaskUid],
    chosen: &[&Task],
    index_uid: &str,
    limits: AutobatchLimits,
) {
    let oldest: Vec<TaskUid> = chosen
        .iter()
        .take(task_uids.len())
        .map(|task| task.uid)
        .collect();
    assert_eq!(
        task_uids, oldest,
        "a batch of index `{index_uid}` holds its oldest waiting tasks, none skipped"
    );
    debug_assert!(
        task_uids.len() <= limits.max_tasks_per_batch.max(1)
            && (limits.autobatching_enabled || task_uids.len() == 1),
        "a batch of {} tasks is over the task limit",
        task_uids.len()
    );
    let payload_bytes: u64 = chosen[..task_uids.len()]
        .iter()
        .map(|task| match &task.kind {
            KindWithContent::DocumentAdditionOrUpdate { content_bytes, .. } => *content_bytes,
            _ => 0,
        })
        .fold(0, u64::saturating_add);
    debug_assert!(
        task_uids.len() == 1 || payload_bytes <= limits.max_payload_bytes,
        "a batch of {} tasks and {payload_bytes} payload bytes is over the size limit",
        task_uids.len()
    );
}

/// The uids of a batch kind, sorted.
fn kind_task_uids(kind: &BatchKind) -> Vec<TaskUid> {
    let mut uids = match kind {
        BatchKind::DocumentClear { ids } | BatchKind::IndexDeletion { ids } => ids.clone(),
        BatchKind::DocumentOperation { operation_ids, .. } => operation_ids.clone(),
        BatchKind::DocumentDeletion { deletion_ids, .. } => deletion_ids.clone(),
        BatchKind::Settings { settings_ids, .. } => settings_ids.clone(),
        BatchKind::ClearAndSettings {
            other,
            settings_ids,
            ..
        } => other.iter().chain(settings_ids).copied().collect(),
        BatchKind::DocumentEdition { id }
        | BatchKind::IndexCreation { id }
        | BatchKind::IndexUpdate { id }
        | BatchKind::IndexSwap { id } => vec![*id],
    };
    uids.sort_unstable();
    uids
}

/// A task's role in auto-batching.
enum AutobatchKind {
    DocumentImport {
        allow_index_creation: bool,
        primary_key: Option<String>,
    },
    DocumentEdition,
    DocumentDeletion {
        by_filter: bool,
    },
    DocumentClear,
    Settings {
        allow_index_creation: bool,
    },
    IndexCreation,
    IndexDeletion,
    IndexUpdate,
    IndexSwap,
}

impl AutobatchKind {
    fn of(kind: &KindWithContent) -> Option<AutobatchKind> {
        Some(match kind {
            // Replacements and updates batch together (the method does not matter).
            KindWithContent::DocumentAdditionOrUpdate {
                allow_index_creation,
                primary_key,
                ..
            } => AutobatchKind::DocumentImport {
                allow_index_creation: *allow_index_creation,
                primary_key: primary_key.clone(),
            },
            KindWithContent::DocumentEdition { .. } => AutobatchKind::DocumentEdition,
            KindWithContent::DocumentDeletion { .. } => {
                AutobatchKind::DocumentDeletion { by_filter: false }
            }
            KindWithContent::DocumentDeletionByFilter { .. } => {
                AutobatchKind::DocumentDeletion { by_filter: true }
            }
            KindWithContent::DocumentClear { .. } => AutobatchKind::DocumentClear,
            KindWithContent::SettingsUpdate {
                allow_index_creation,
                is_deletion,
                ..
            } => AutobatchKind::Settings {
                allow_index_creation: *allow_index_creation && !*is_deletion,
            },
            KindWithContent::IndexCreation { .. } => AutobatchKind::IndexCreation,
            KindWithContent::IndexDeletion { .. } => AutobatchKind::IndexDeletion,
            KindWithContent::IndexUpdate { .. } => AutobatchKind::IndexUpdate,
            KindWithContent::IndexSwap { .. } => AutobatchKind::IndexSwap,
            _ => return None,
        })
    }

    fn allow_index_creation(&self) -> Option<bool> {
        match self {
            AutobatchKind::DocumentImport {
                allow_index_creation,
                ..
            }
            | AutobatchKind::Settings {
                allow_index_creation,
            } => Some(*allow_index_creation),
            _ => None,
        }
    }

    fn primary_key(&self) -> Option<Option<&str>> {
        match self {
            AutobatchKind::DocumentImport { primary_key, .. } => Some(primary_key.as_deref()),
            _ => None,
        }
    }
}

impl BatchKind {
    fn allow_index_creation(&self) -> Option<bool> {
        match self {
            BatchKind::DocumentOperation {
                allow_index_creation,
                ..
            }
            | BatchKind::ClearAndSettings {
                allow_index_creation,
                ..
            }
            | BatchKind::Settings {
                allow_index_creation,
                ..
            } => Some(*allow_index_creation),
            _ => None,
        }
    }

    fn primary_key(&self) -> Option<Option<&str>> {
        match self {
            BatchKind::DocumentOperation { primary_key, .. } => Some(primary_key.as_deref()),
            _ => None,
        }
    }
}

/// Either the batch goes on with the next task, or it stops (with the reason).
enum Step {
    Continue(BatchKind),
    Break(BatchKind, StopReason),
}

/// Starts a batch with its first task; the boolean says whether it may create the index.
fn start(
    id: TaskUid,
    task_kind: Kind,
    kind: AutobatchKind,
    index_primary_key: Option<&str>,
) -> (Step, bool) {
    use AutobatchKind as K;
    let alone = |batch| {
        Step::Break(
            batch,
            StopReason::TaskCannotBeBatched {
                kind: task_kind,
                id,
            },
        )
    };
    match kind {
        K::IndexCreation => (alone(BatchKind::IndexCreation { id }), true),
        K::IndexDeletion => (
            Step::Break(
                BatchKind::IndexDeletion { ids: vec![id] },
                StopReason::IndexDeletion { id },
            ),
            false,
        ),
        K::IndexUpdate => (alone(BatchKind::IndexUpdate { id }), false),
        K::IndexSwap => (alone(BatchKind::IndexSwap { id }), false),
        K::DocumentEdition => (alone(BatchKind::DocumentEdition { id }), false),
        K::DocumentClear => (
            Step::Continue(BatchKind::DocumentClear { ids: vec![id] }),
            false,
        ),
        K::DocumentImport {
            allow_index_creation,
            primary_key,
        } => {
            let operation = BatchKind::DocumentOperation {
                allow_index_creation,
                primary_key: primary_key.clone(),
                operation_ids: vec![id],
            };
            match (index_primary_key, primary_key) {
                (Some(in_index), Some(in_task)) if in_index != in_task => (
                    Step::Break(
                        operation,
                        StopReason::PrimaryKeyIndexMismatch {
                            id,
                            in_index: in_index.to_owned(),
                            in_task,
                        },
                    ),
                    allow_index_creation,
                ),
                _ => (Step::Continue(operation), allow_index_creation),
            }
        }
        K::DocumentDeletion { by_filter } => (
            Step::Continue(BatchKind::DocumentDeletion {
                deletion_ids: vec![id],
                includes_by_filter: by_filter,
            }),
            false,
        ),
        K::Settings {
            allow_index_creation,
        } => (
            Step::Continue(BatchKind::Settings {
                allow_index_creation,
                settings_ids: vec![id],
            }),
            allow_index_creation,
        ),
    }
}

/// The primary key the batch continues with, or why the task cannot join.
fn accumulated_primary_key(
    batch: &BatchKind,
    task: &AutobatchKind,
    id: TaskUid,
    index_primary_key: Option<&str>,
) -> Result<Option<String>, StopReason> {
    let mismatch = |reason| Err(StopReason::PrimaryKeyMismatch { id, reason });
    match (batch.primary_key(), task.primary_key(), index_primary_key) {
        (batch_key, None | Some(None), _) => Ok(batch_key.flatten().map(str::to_owned)),
        (_, Some(Some(task_key)), Some(index_key)) => {
            if task_key == index_key {
                Ok(Some(task_key.to_owned()))
            } else {
                mismatch(PrimaryKeyMismatch::DifferFromIndex {
                    task: task_key.to_owned(),
                    index: index_key.to_owned(),
                })
            }
        }
        (Some(None), Some(Some(task_key)), None) => {
            mismatch(PrimaryKeyMismatch::WouldInterfereWithGuessing {
                task: task_key.to_owned(),
            })
        }
        (Some(Some(batch_key)), Some(Some(task_key)), None) => {
            if task_key == batch_key {
                Ok(Some(task_key.to_owned()))
            } else {
                mismatch(PrimaryKeyMismatch::DifferFromBatch {
                    task: task_key.to_owned(),
                    batch: batch_key.to_owned(),
                })
            }
        }
        (None, Some(Some(task_key)), None) => Ok(Some(task_key.to_owned())),
    }
}

/// Adds one more task of the index to the batch, or stops before (or after) it.
fn accumulate(
    batch: BatchKind,
    id: TaskUid,
    task_kind: Kind,
    kind: AutobatchKind,
    index_exists: bool,
    index_primary_key: Option<&str>,
) -> Step {
    use AutobatchKind as K;
    use BatchKind as B;
    let primary_key = match accumulated_primary_key(&batch, &kind, id, index_primary_key) {
        Ok(primary_key) => primary_key,
        Err(reason) => return Step::Break(batch, reason),
    };
    if matches!(
        kind,
        K::IndexCreation | K::IndexUpdate | K::IndexSwap | K::DocumentEdition
    ) {
        return Step::Break(
            batch,
            StopReason::TaskCannotBeBatched {
                kind: task_kind,
                id,
            },
        );
    }
    if !index_exists
        && batch.allow_index_creation() == Some(false)
        && kind.allow_index_creation() == Some(true)
    {
        return Step::Break(batch, StopReason::IndexCreationMismatch { id });
    }
    if matches!(kind, K::IndexDeletion) {
        return delete_index(batch, id);
    }
    match batch {
        B::DocumentClear { ids } => onto_clear(ids, id, kind),
        B::DocumentOperation {
            allow_index_creation,
            operation_ids,
            ..
        } => onto_operation(allow_index_creation, operation_ids, primary_key, id, kind),
        B::DocumentDeletion {
            deletion_ids,
            includes_by_filter,
        } => onto_deletion(deletion_ids, includes_by_filter, id, kind, index_exists),
        B::Settings {
            allow_index_creation,
            settings_ids,
        } => onto_settings(allow_index_creation, settings_ids, id, kind),
        B::ClearAndSettings {
            other,
            allow_index_creation,
            settings_ids,
        } => onto_clear_and_settings(other, allow_index_creation, settings_ids, id, kind),
        // Batches of one lone task stopped at their first task; they never accumulate.
        batch @ (B::IndexCreation { .. }
        | B::IndexDeletion { .. }
        | B::IndexUpdate { .. }
        | B::IndexSwap { .. }
        | B::DocumentEdition { .. }) => Step::Break(batch, StopReason::Unspecified),
    }
}

/// An index deletion joins any open batch and ends it.
fn delete_index(batch: BatchKind, id: TaskUid) -> Step {
    use BatchKind as B;
    let ids = match batch {
        B::DocumentClear { mut ids }
        | B::DocumentDeletion {
            deletion_ids: mut ids,
            ..
        }
        | B::DocumentOperation {
            operation_ids: mut ids,
            ..
        }
        | B::Settings {
            settings_ids: mut ids,
            ..
        } => {
            ids.push(id);
            ids
        }
        // Meilisearch lists the settings, then the deletion, then the clears.
        B::ClearAndSettings {
            mut settings_ids,
            mut other,
            ..
        } => {
            settings_ids.push(id);
            settings_ids.append(&mut other);
            settings_ids
        }
        batch => return Step::Break(batch, StopReason::Unspecified),
    };
    Step::Break(
        BatchKind::IndexDeletion { ids },
        StopReason::IndexDeletion { id },
    )
}

fn onto_clear(mut ids: Vec<TaskUid>, id: TaskUid, kind: AutobatchKind) -> Step {
    use AutobatchKind as K;
    match kind {
        K::DocumentClear | K::DocumentDeletion { .. } => {
            ids.push(id);
            Step::Continue(BatchKind::DocumentClear { ids })
        }
        _ => Step::Break(
            BatchKind::DocumentClear { ids },
            StopReason::DocumentOperationWithSettings { id },
        ),
    }
}

fn onto_operation(
    allow_index_creation: bool,
    mut operation_ids: Vec<TaskUid>,
    primary_key: Option<String>,
    id: TaskUid,
    kind: AutobatchKind,
) -> Step {
    use AutobatchKind as K;
    let reason = match kind {
        K::DocumentClear => {
            operation_ids.push(id);
            return Step::Continue(BatchKind::DocumentClear { ids: operation_ids });
        }
        K::DocumentImport { .. } | K::DocumentDeletion { by_filter: false } => {
            operation_ids.push(id);
            return Step::Continue(BatchKind::DocumentOperation {
                allow_index_creation,
                primary_key,
                operation_ids,
            });
        }
        K::DocumentDeletion { by_filter: true } => {
            StopReason::DocumentOperationWithDeletionByFilter { id }
        }
        _ => StopReason::DocumentOperationWithSettings { id },
    };
    // Only kinds without a primary key stop here, so `primary_key` is still the batch's.
    Step::Break(
        BatchKind::DocumentOperation {
            allow_index_creation,
            primary_key,
            operation_ids,
        },
        reason,
    )
}

fn onto_deletion(
    mut deletion_ids: Vec<TaskUid>,
    includes_by_filter: bool,
    id: TaskUid,
    kind: AutobatchKind,
    index_exists: bool,
) -> Step {
    use AutobatchKind as K;
    let stop = |deletion_ids, reason| {
        Step::Break(
            BatchKind::DocumentDeletion {
                deletion_ids,
                includes_by_filter,
            },
            reason,
        )
    };
    match kind {
        K::DocumentClear => {
            deletion_ids.push(id);
            Step::Continue(BatchKind::DocumentClear { ids: deletion_ids })
        }
        K::DocumentImport { .. } if includes_by_filter => stop(
            deletion_ids,
            StopReason::DeletionByFilterWithDocumentOperation { id },
        ),
        K::DocumentImport {
            allow_index_creation,
            primary_key,
        } if index_exists || !allow_index_creation => {
            deletion_ids.push(id);
            Step::Continue(BatchKind::DocumentOperation {
                allow_index_creation,
                primary_key,
                operation_ids: deletion_ids,
            })
        }
        K::DocumentImport { .. } => stop(deletion_ids, StopReason::IndexCreationMismatch { id }),
        K::DocumentDeletion { by_filter } => {
            deletion_ids.push(id);
            Step::Continue(BatchKind::DocumentDeletion {
                deletion_ids,
                includes_by_filter: includes_by_filter | by_filter,
            })
        }
        _ => stop(
            deletion_ids,
            StopReason::DocumentOperationWithSettings { id },
        ),
    }
}

fn onto_settings(
    allow_index_creation: bool,
    mut settings_ids: Vec<TaskUid>,
    id: TaskUid,
    kind: AutobatchKind,
) -> Step {
    use AutobatchKind as K;
    match kind {
        K::DocumentClear => Step::Continue(BatchKind::ClearAndSettings {
            settings_ids,
            allow_index_creation,
            other: vec![id],
        }),
        K::Settings { .. } => {
            settings_ids.push(id);
            Step::Continue(BatchKind::Settings {
                allow_index_creation,
                settings_ids,
            })
        }
        _ => Step::Break(
            BatchKind::Settings {
                allow_index_creation,
                settings_ids,
            },
            StopReason::SettingsWithDocumentOperation { id },
        ),
    }
}

fn onto_clear_and_settings(
    mut other: Vec<TaskUid>,
    allow_index_creation: bool,
    mut settings_ids: Vec<TaskUid>,
    id: TaskUid,
    kind: AutobatchKind,
) -> Step {
    use AutobatchKind as K;
    match kind {
        K::DocumentClear | K::DocumentDeletion { .. } => other.push(id),
        K::Settings { .. } => settings_ids.push(id),
        _ => {
            return Step::Break(
                BatchKind::ClearAndSettings {
                    other,
                    allow_index_creation,
                    settings_ids,
                },
                StopReason::SettingsWithDocumentOperation { id },
            );
        }
    }
    Step::Continue(BatchKind::ClearAndSettings {
        other,
        allow_index_creation,
        settings_ids,
    })
}

/// The autobatcher: folds the index's tasks (uid order) into one batch kind. Returns the
/// kind, whether the batch may create the index, and the reason it stopped early, if any.
pub fn autobatch(
    tasks: &[&Task],
    index_exists: bool,
    index_primary_key: Option<&str>,
) -> Option<(BatchKind, bool, Option<StopReason>)> {
    let (first, rest) = tasks.split_first()?;
    let first_kind = AutobatchKind::of(&first.kind)?;
    let (step, must_create_index) = start(first.uid, first.kind(), first_kind, index_primary_key);
    let mut batch = match step {
        Step::Continue(batch) => batch,
        Step::Break(batch, reason) => return Some((batch, must_create_index, Some(reason))),
    };
    let index_exists = index_exists || must_create_index;
    for task in rest {
        let Some(kind) = AutobatchKind::of(&task.kind) else {
            return Some((
                batch,
                must_create_index,
                Some(StopReason::TaskCannotBeBatched {
                    kind: task.kind(),
                    id: task.uid,
                }),
            ));
        };
        batch = match accumulate(
            batch,
            task.uid,
            task.kind(),
            kind,
            index_exists,
            index_primary_key,
        ) {
            Step::Continue(batch) => batch,
            Step::Break(batch, reason) => return Some((batch, must_create_index, Some(reason))),
        };
    }
    Some((batch, must_create_index, None))
}
