//! The state of each network topology change, kept in the task queue beside its task
//! (tree `network-changes`: task uid → JSON of [`TopologyChange`]), and the three writes
//! that move it: an import payload registered, a `/network/control` message received, a
//! batch of import payloads processed — plus the change's own batches.
//!
//! The change that imports and control messages belong to is the active one: the
//! `networkTopologyChange` task that is processing, else the oldest enqueued one (as
//! Meilisearch picks it); one of another network version is refused.
//!
//! Invariants: each write reads the stored state and changes it in the same transaction as
//! the task it concerns (an import is counted exactly when its task is stored, processed
//! exactly when its task's final state is), so a crash never leaves a count apart from its
//! task; the state only moves forward, so a batch that ran on an older copy never takes
//! back what was recorded meanwhile; the change task's `details` always tell the stored
//! state.

use storage_engine::{Direction, WriteTransaction};
use time::OffsetDateTime;
use uuid::Uuid;

use super::batch::Batch;
use super::model::{Details, Kind, KindWithContent, Status, Task, TaskUid};
use super::queue::{
    BATCHES_TREE, BY_INDEX_TREE, BY_KIND_TREE, BY_STATUS_TREE, QueueError, QueueResult,
    RegisterOptions, Registered, TaskQueue, decode, encode, trailing_uid, uid_bytes,
};
use crate::errors::{Code, ResponseError};
use crate::network::control_message::{ControlMessage, NetworkControl};
use crate::network::headers::ImportMetadata;
use crate::network::task_network::{Origin, TaskNetwork};
use crate::network::topology_change::{ChangePhase, ReceiveError, ReceivedPayload, TopologyChange};
use crate::network::topology_change_message::details_message;

/// The tree of the changes' states.
pub const NETWORK_CHANGES_TREE: &str = "network-changes";

/// What a change batch did: the phase it reached and the documents it deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChangeOutcome {
    pub phase: ChangePhase,
    pub moved_documents: u64,
}

impl TaskQueue {
    /// Stores `change` as the state of the change task `uid`.
    pub(super) fn put_network_change(
        write: &WriteTransaction,
        uid: TaskUid,
        change: &TopologyChange,
    ) -> QueueResult<()> {
        Self::tree(write, NETWORK_CHANGES_TREE)?.put(&uid_bytes(uid), &encode(change)?)?;
        Ok(())
    }

    /// The stored state of the change task `uid`.
    pub fn network_change(&self, uid: TaskUid) -> QueueResult<Option<TopologyChange>> {
        let read = self.database().begin_read();
        Self::read_tree(&read, NETWORK_CHANGES_TREE)?
            .get(&uid_bytes(uid))?
            .map(decode)
            .transpose()
    }

    fn network_change_in(
        write: &WriteTransaction,
        uid: TaskUid,
    ) -> QueueResult<Option<TopologyChange>> {
        Self::tree(write, NETWORK_CHANGES_TREE)?
            .get(&uid_bytes(uid))?
            .map(|bytes| decode(&bytes))
            .transpose()
    }

    /// The active change task and its state, if any (a change without a stored state, from
    /// an older version, is reported without one).
    pub fn active_network_change(&self) -> QueueResult<Option<(Task, Option<TopologyChange>)>> {
        let read = self.database().begin_read();
        let changes =
            Self::uids_with_prefix(&read, BY_KIND_TREE, &[Kind::NetworkTopologyChange.byte()])?;
        let processing =
            Self::uids_with_prefix(&read, BY_STATUS_TREE, &[Status::Processing.byte()])?;
        let enqueued = Self::uids_with_prefix(&read, BY_STATUS_TREE, &[Status::Enqueued.byte()])?;
        let active = changes
            .intersection(&processing)
            .next()
            .or_else(|| changes.intersection(&enqueued).next())
            .copied();
        let Some(uid) = active else {
            return Ok(None);
        };
        let task = Self::read_task(&read, uid)?.ok_or(QueueError::TaskNotFound(uid))?;
        let state = Self::read_tree(&read, NETWORK_CHANGES_TREE)?
            .get(&uid_bytes(uid))?
            .map(decode)
            .transpose()?;
        Ok(Some((task, state)))
    }

    /// The active change task inside `write`, with its state; `import_task_without_network_task`
    /// when there is none, `network_version_mismatch` when it is not of `origin`'s version.
    fn active_change_for(
        write: &WriteTransaction,
        origin: &Origin,
    ) -> QueueResult<(Task, TopologyChange)> {
        let changes = uids_in(write, BY_KIND_TREE, &[Kind::NetworkTopologyChange.byte()])?;
        let processing = uids_in(write, BY_STATUS_TREE, &[Status::Processing.byte()])?;
        let enqueued = uids_in(write, BY_STATUS_TREE, &[Status::Enqueued.byte()])?;
        let active = changes
            .iter()
            .find(|uid| processing.contains(uid))
            .or_else(|| changes.iter().find(|uid| enqueued.contains(uid)));
        let Some(&uid) = active else {
            return Err(QueueError::Rejected(without_network_task()));
        };
        let task = Self::read_task_for_write(write, uid)?.ok_or(QueueError::TaskNotFound(uid))?;
        let version = task
            .network
            .as_ref()
            .map_or_else(Uuid::nil, TaskNetwork::network_version);
        if version != origin.network_version {
            return Err(QueueError::Rejected(version_mismatch(
                version,
                origin.network_version,
            )));
        }
        let change = Self::network_change_in(write, uid)?
            .ok_or_else(|| QueueError::Rejected(without_network_task()))?;
        Ok((task, change))
    }

    /// Registers the import `kind` (its `options.network` names where it comes from, and
    /// `metadata` the sender's counts), counting it in the active change in the same
    /// commit. An index creation for an index that another sender already created (or
    /// asked to create) is not registered again: the answer is that creation's task.
    pub fn register_import(
        &self,
        kind: KindWithContent,
        custom_metadata: Option<String>,
        options: RegisterOptions,
        metadata: ImportMetadata,
    ) -> QueueResult<Registered> {
        let Some(TaskNetwork::Import {
            import_from,
            network_change,
        }) = options.network.clone()
        else {
            return Err(QueueError::Rejected(ResponseError::internal(
                "an import without its origin",
            )));
        };
        let write = self.database().begin_write()?;
        let (change_task, mut change) = Self::active_change_for(&write, &network_change)?;
        let payload = ReceivedPayload {
            remote: &import_from.remote_name,
            index: import_from.index_name.as_deref(),
            key: metadata.task_key,
            documents: import_from.document_count,
            index_count: metadata.index_count,
            total_index_documents: metadata.total_index_documents,
        };
        change.receive(payload).map_err(import_refused)?;
        Self::put_network_change(&write, change_task.uid, &change)?;
        let existing = match &kind {
            KindWithContent::IndexCreation { index_uid, .. } => {
                Self::live_creation_of(&write, index_uid)?
            }
            _ => None,
        };
        let registered = match existing {
            Some(task) => Registered {
                task,
                interrupt_batch: None,
            },
            None => {
                let enqueued_at = OffsetDateTime::now_utc();
                Self::register_in(&write, kind, custom_metadata, enqueued_at, options)?
            }
        };
        write.commit()?;
        Ok(registered)
    }

    /// The newest creation task of `index_uid` when the index exists or is being created
    /// by it: the newest creation or deletion of the index is a creation that did not
    /// fail and was not canceled.
    fn live_creation_of(write: &WriteTransaction, index_uid: &str) -> QueueResult<Option<Task>> {
        let mut prefix = index_uid.as_bytes().to_vec();
        prefix.push(0);
        let uids = uids_in(write, BY_INDEX_TREE, &prefix)?;
        for uid in uids.iter().rev() {
            let Some(task) = Self::read_task_for_write(write, *uid)? else {
                continue;
            };
            match task.kind {
                KindWithContent::IndexCreation { .. } => {
                    let live = !matches!(task.status, Status::Failed | Status::Canceled);
                    return Ok(live.then_some(task));
                }
                KindWithContent::IndexDeletion { .. } => return Ok(None),
                _ => {}
            }
        }
        Ok(None)
    }

    /// Applies a `/network/control` message to the active change.
    pub fn receive_control(&self, control: &NetworkControl) -> QueueResult<()> {
        let write = self.database().begin_write()?;
        let (mut task, mut change) = Self::active_change_for(&write, &control.origin)?;
        match &control.message {
            ControlMessage::ExportNoIndexForRemote { remote } => {
                let payload = ReceivedPayload {
                    remote,
                    index: None,
                    key: None,
                    documents: 0,
                    index_count: 0,
                    total_index_documents: 0,
                };
                change.receive(payload).map_err(import_refused)?;
            }
            ControlMessage::ImportFinishedForRemote { remote, successful } => {
                change
                    .receive_import_finished(remote, *successful)
                    .map_err(|_| QueueError::Rejected(import_finished_unknown_remote(remote)))?;
            }
            // The route applies a status change itself; it is no part of a change.
            ControlMessage::StatusChangeForRemote { .. } => {
                return Err(QueueError::Rejected(ResponseError::internal(
                    "a remote's status change reached the topology change",
                )));
            }
        }
        Self::put_network_change(&write, task.uid, &change)?;
        set_change_details(&mut task, &change);
        Self::write_task(&write, &task)?;
        write.commit()?;
        Ok(())
    }

    /// Gives the network change `task` the details its stored state tells (another request
    /// may have moved the state since `task` was read).
    pub(super) fn refresh_change_details(
        write: &WriteTransaction,
        task: &mut Task,
    ) -> QueueResult<()> {
        if task.kind() == Kind::NetworkTopologyChange
            && let Some(change) = Self::network_change_in(write, task.uid)?
        {
            set_change_details(task, &change);
        }
        Ok(())
    }

    /// Counts the processed import payloads among `tasks` (a batch's final states) in the
    /// active change, and refreshes its task's details (in `tasks` too when the batch
    /// carries it).
    pub(super) fn record_processed_imports(
        write: &WriteTransaction,
        tasks: &mut [Task],
    ) -> QueueResult<()> {
        let mut by_change: Option<(Task, TopologyChange)> = None;
        for task in tasks.iter().filter(|task| task.status.is_finished()) {
            let Some(TaskNetwork::Import {
                import_from,
                network_change,
            }) = &task.network
            else {
                continue;
            };
            let Some(index) = &import_from.index_name else {
                continue;
            };
            if by_change.is_none() {
                by_change = Self::active_change_for(write, network_change).ok();
            }
            if let Some((_, change)) = by_change.as_mut() {
                change.process(&import_from.remote_name, index, import_from.document_count);
            }
        }
        if let Some((mut task, change)) = by_change {
            Self::put_network_change(write, task.uid, &change)?;
            set_change_details(&mut task, &change);
            Self::write_task(write, &task)?;
            for carried in tasks.iter_mut().filter(|carried| carried.uid == task.uid) {
                carried.details = task.details.clone();
            }
        }
        Ok(())
    }

    /// Records the batch of the change `task`: its progress (`outcome`) joins the stored
    /// state. Once the change is finished, the task succeeds and the batch is finished;
    /// otherwise both stay `processing` (Meilisearch keeps such a batch in memory until its
    /// next one, which takes its uid).
    pub fn finish_change_batch(
        &self,
        batch: &mut Batch,
        mut task: Task,
        outcome: ChangeOutcome,
        finished_at: OffsetDateTime,
    ) -> QueueResult<Task> {
        let write = self.database().begin_write()?;
        let stored = Self::network_change_in(&write, task.uid)?;
        let phase = match stored {
            Some(mut change) => {
                change.phase = change.phase.max(outcome.phase);
                change.moved_documents = change.moved_documents.max(outcome.moved_documents);
                Self::put_network_change(&write, task.uid, &change)?;
                set_change_details(&mut task, &change);
                change.phase
            }
            None => outcome.phase,
        };
        if phase == ChangePhase::Finished {
            task.status = Status::Succeeded;
            let mut tasks = [task];
            Self::finish_batch_in(&write, batch, &mut tasks, finished_at)?;
            write.commit()?;
            let [task] = tasks;
            return Ok(task);
        }
        Self::write_task(&write, &task)?;
        batch.progress = None;
        batch.recompute(std::slice::from_ref(&task), true);
        Self::tree(&write, BATCHES_TREE)?.put(&uid_bytes(batch.uid), &encode(&*batch)?)?;
        write.commit()?;
        Ok(task)
    }
}

/// The change task's `details` as `change` tells them.
fn set_change_details(task: &mut Task, change: &TopologyChange) {
    task.details = Some(Details::NetworkTopologyChange {
        moved_documents: change.moved_documents,
        message: details_message(change),
    });
}

/// The uids of the keys of `tree` under `prefix`, read inside `write`.
fn uids_in(
    write: &WriteTransaction,
    tree: &str,
    prefix: &[u8],
) -> QueueResult<std::collections::BTreeSet<TaskUid>> {
    let mut uids = std::collections::BTreeSet::new();
    for entry in TaskQueue::tree(write, tree)?.prefix(prefix, Direction::Forward)? {
        let (key, _) = entry?;
        uids.insert(trailing_uid(&key)?);
    }
    Ok(uids)
}

fn without_network_task() -> ResponseError {
    ResponseError::new(
        Code::ImportTaskWithoutNetworkTask,
        "No network topology change task is currently enqueued or processing",
    )
}

fn version_mismatch(change: Uuid, import: Uuid) -> ResponseError {
    ResponseError::new(
        Code::NetworkVersionMismatch,
        format!(
            "The network task version (`{change}`) does not match the import task version (`{import}`)"
        ),
    )
}

fn import_refused(error: ReceiveError) -> QueueError {
    QueueError::Rejected(match error {
        ReceiveError::UnknownRemote(remote) => ResponseError::new(
            Code::ImportTaskUnknownRemote,
            format!("The import task emanates from an unknown remote `{remote}`"),
        ),
        ReceiveError::AlreadyReceived(key) => ResponseError::new(
            Code::ImportTaskAlreadyReceived,
            format!("The import task with key `{key}` was already received"),
        ),
    })
}

fn import_finished_unknown_remote(remote: &str) -> ResponseError {
    ResponseError::new(
        Code::ReceiveImportFinishedUnknownRemote,
        format!("The finished import notification emanates from an unknown remote `{remote}`"),
    )
}
