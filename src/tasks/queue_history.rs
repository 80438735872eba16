//! The queue's whole history at once, for dumps: every task and batch read from one
//! snapshot (a dump writes them), and the history replaced by another one in one commit (a
//! dump import writes the dumped tasks and batches in place of the ones that imported it).
//!
//! Invariants: [`TaskQueue::visit_history`] sees one committed state; after
//! [`TaskQueue::replace_history`] the queue holds exactly the given tasks and batches, with
//! every secondary key derived from them, and gives task uids from the given next uid on.

use std::ops::Bound;

use storage_engine::Direction;

use super::batch::Batch;
use super::model::{Status, Task, TaskUid};
use super::queue::{
    ALL_TREES, BATCHES_TREE, BY_STATUS_TREE, META_TREE, NEXT_BATCH_UID_FLOOR_KEY,
    NEXT_TASK_UID_KEY, QueueError, QueueResult, TASKS_TREE, TaskQueue, decode, encode, uid_bytes,
};
use crate::coordinator::catalog::Catalog;

impl TaskQueue {
    /// Calls `on_task` with every task, then `on_batch` with every batch, in uid order, all
    /// read from one snapshot of the queue.
    pub fn visit_history<Error: From<QueueError>>(
        &self,
        mut on_task: impl FnMut(Task) -> Result<(), Error>,
        mut on_batch: impl FnMut(Batch) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let read = self.database().begin_read();
        let tasks = Self::read_tree(&read, TASKS_TREE)?;
        let all = tasks
            .range(Bound::Unbounded, Bound::Unbounded, Direction::Forward)
            .map_err(QueueError::from)?;
        for entry in all {
            let (_, bytes) = entry.map_err(QueueError::from)?;
            on_task(decode(bytes)?)?;
        }
        let batches = Self::read_tree(&read, BATCHES_TREE)?;
        let all = batches
            .range(Bound::Unbounded, Bound::Unbounded, Direction::Forward)
            .map_err(QueueError::from)?;
        for entry in all {
            let (_, bytes) = entry.map_err(QueueError::from)?;
            on_batch(decode(bytes)?)?;
        }
        Ok(())
    }

    /// Whether some task is enqueued or processing.
    pub fn has_unfinished_tasks(&self) -> QueueResult<bool> {
        let read = self.database().begin_read();
        for status in [Status::Enqueued, Status::Processing] {
            if !Self::uids_with_prefix(&read, BY_STATUS_TREE, &[status.byte()])?.is_empty() {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Replaces every task and batch with `tasks` and `batches`, and the catalog `before`
    /// with `catalog`, in one commit; the next task gets uid `next_task_uid` (at least).
    pub fn replace_history(
        &self,
        tasks: &[Task],
        batches: &[Batch],
        next_task_uid: TaskUid,
        catalog: &Catalog,
        before: &Catalog,
    ) -> QueueResult<()> {
        let write = self.database().begin_write()?;
        // The batches the shards applied so far (the import's) keep their uids.
        let batch_floor = Self::next_batch_uid_in(&write)?;
        for name in ALL_TREES {
            write.delete_tree(name)?;
            write.create_tree(name)?;
        }
        for task in tasks {
            Self::write_task(&write, task)?;
        }
        let batch_tree = Self::tree(&write, BATCHES_TREE)?;
        for batch in batches {
            batch_tree.put(&uid_bytes(batch.uid), &encode(batch)?)?;
        }
        let after_last = tasks
            .iter()
            .map(|task| task.uid.saturating_add(1))
            .max()
            .unwrap_or(0);
        let next = next_task_uid.max(after_last);
        let meta = Self::tree(&write, META_TREE)?;
        meta.put(NEXT_TASK_UID_KEY, &uid_bytes(next))?;
        let after_batches = batches
            .iter()
            .map(|batch| batch.uid.saturating_add(1))
            .max()
            .unwrap_or(0);
        meta.put(
            NEXT_BATCH_UID_FLOOR_KEY,
            &uid_bytes(batch_floor.max(after_batches)),
        )?;
        super::catalog_store::store_catalog_changes(catalog, before, &write)?;
        write.commit()?;
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::tasks::model::KindWithContent;
    use time::OffsetDateTime;

    #[test]
    fn a_replaced_history_reads_back_and_uids_continue_after_it() {
        let directory = tempfile::tempdir().unwrap();
        let queue = TaskQueue::open(
            &directory.path().join("queue"),
            storage_engine::Options::default(),
        )
        .unwrap();
        let now = OffsetDateTime::UNIX_EPOCH;
        queue
            .register(KindWithContent::SnapshotCreation, None, now)
            .unwrap();
        let mut imported = Task::new(5, KindWithContent::DumpCreation, now, None);
        imported.status = Status::Succeeded;
        imported.batch_uid = Some(3);
        let mut batch = Batch::new(3, now, "dump".into());
        batch.recompute(std::slice::from_ref(&imported), false);
        let empty = Catalog::default();
        queue
            .replace_history(
                std::slice::from_ref(&imported),
                &[batch.clone()],
                9,
                &empty,
                &empty,
            )
            .unwrap();
        let mut tasks = Vec::new();
        let mut batches = Vec::new();
        queue
            .visit_history::<QueueError>(
                |task| {
                    tasks.push(task);
                    Ok(())
                },
                |batch| {
                    batches.push(batch);
                    Ok(())
                },
            )
            .unwrap();
        assert_eq!(tasks, vec![imported]);
        assert_eq!(batches, vec![batch]);
        assert!(!queue.has_unfinished_tasks().unwrap());
        let next = queue
            .register(KindWithContent::SnapshotCreation, None, now)
            .unwrap();
        assert_eq!(next.task.uid, 9);
        assert!(queue.has_unfinished_tasks().unwrap());
    }
}
