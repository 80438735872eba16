//! The queue as a snapshot keeps it ([`TaskQueue::copy_for_snapshot`]): a compacted copy of
//! one committed state of the queue's page store (tasks, batches and the index catalog it
//! shares the file with), without the batch that takes the snapshot.
//!
//! Why that batch goes: in the copy its tasks are `processing`, and a server started on the
//! copy would run an interrupted batch again, taking a snapshot of the restored instance.
//! Meilisearch leaves its snapshot tasks out of the snapshot for the same reason; its
//! processing batch is not stored at all.
//!
//! Invariants: the live queue is only read (registrations go on during the copy, and are
//! not in it); the copy holds every task and batch of that state but the snapshot's batch
//! and its tasks, with secondary keys that match; the update files it names are those of
//! its enqueued tasks, which the snapshot must carry.

use std::collections::BTreeSet;
use std::path::Path;

use storage_engine::{CompactedCopy, Direction, Options};

use super::model::{BatchUid, KindWithContent, Status};
use super::queue::{
    BATCH_TASKS_TREE, BATCHES_TREE, BY_STATUS_TREE, QueueError, QueueResult, TaskQueue,
    trailing_uid, uid_bytes,
};

/// The suffix of the first copy of the queue, beside the final one.
const DRAFT_SUFFIX: &str = ".draft";

/// What a copy of the queue holds besides its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueCopy {
    /// The update files of the copy's enqueued tasks, by name.
    pub update_files: BTreeSet<String>,
    /// The file written.
    pub copy: CompactedCopy,
}

impl TaskQueue {
    /// Writes the queue's last commit, compacted, into the new file `destination`, then
    /// removes the batch `snapshot_batch` and its tasks from the copy.
    pub fn copy_for_snapshot(
        &self,
        destination: &Path,
        snapshot_batch: BatchUid,
    ) -> QueueResult<QueueCopy> {
        // The batch is removed from a first copy, which is then copied again: the removal's
        // commit leaves free pages and a grown tail that the second copy leaves out.
        let mut draft = destination.as_os_str().to_owned();
        draft.push(DRAFT_SUFFIX);
        let draft = std::path::PathBuf::from(draft);
        let outcome = self.copy_through(&draft, destination, snapshot_batch);
        if let Err(error) = std::fs::remove_file(&draft)
            && error.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(%error, path = %draft.display(), "a draft of the queue stays behind");
        }
        outcome
    }

    /// [`TaskQueue::copy_for_snapshot`] through the first copy `draft`.
    fn copy_through(
        &self,
        draft: &Path,
        destination: &Path,
        snapshot_batch: BatchUid,
    ) -> QueueResult<QueueCopy> {
        self.database().begin_read().copy_compacted(draft)?;
        let drafted = TaskQueue::open(draft, Options::default())?;
        drafted.forget_batch(snapshot_batch)?;
        let update_files = drafted.enqueued_update_files()?;
        let copy = drafted
            .database()
            .begin_read()
            .copy_compacted(destination)?;
        Ok(QueueCopy { update_files, copy })
    }

    /// Removes the batch `batch_uid`, its task mapping and its tasks.
    fn forget_batch(&self, batch_uid: BatchUid) -> QueueResult<()> {
        let write = self.database().begin_write()?;
        let mapping = Self::tree(&write, BATCH_TASKS_TREE)?;
        let keys: Vec<Vec<u8>> = mapping
            .prefix(&uid_bytes(batch_uid), Direction::Forward)?
            .map(|entry| entry.map(|(key, _)| key.to_vec()))
            .collect::<Result<_, _>>()?;
        for key in keys {
            let uid = trailing_uid(&key)?;
            let task =
                Self::read_task_for_write(&write, uid)?.ok_or(QueueError::TaskNotFound(uid))?;
            Self::remove_task(&write, &task)?;
            mapping.delete(&key)?;
        }
        Self::tree(&write, BATCHES_TREE)?.delete(&uid_bytes(batch_uid))?;
        write.commit()?;
        Ok(())
    }

    /// The update files of the enqueued tasks.
    fn enqueued_update_files(&self) -> QueueResult<BTreeSet<String>> {
        let read = self.database().begin_read();
        let enqueued = Self::uids_with_prefix(&read, BY_STATUS_TREE, &[Status::Enqueued.byte()])?;
        let mut files = BTreeSet::new();
        for uid in enqueued {
            let task = Self::read_task(&read, uid)?.ok_or(QueueError::TaskNotFound(uid))?;
            if let KindWithContent::DocumentAdditionOrUpdate { content_file, .. } = task.kind {
                files.insert(content_file);
            }
        }
        Ok(files)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use time::OffsetDateTime;

    use super::*;
    use crate::tasks::model::{DocumentMethod, Kind};

    fn addition(file: &str) -> KindWithContent {
        KindWithContent::DocumentAdditionOrUpdate {
            index_uid: "movies".to_owned(),
            primary_key: None,
            method: DocumentMethod::Replace,
            content_file: file.to_owned(),
            documents_count: 1,
            content_bytes: 10,
            allow_index_creation: true,
            skip_creation: false,
        }
    }

    #[test]
    fn the_copy_leaves_out_the_snapshot_batch_and_names_the_waiting_payloads() {
        let directory = tempfile::tempdir().unwrap();
        let queue = TaskQueue::open(&directory.path().join("tasks"), Options::default()).unwrap();
        let now = OffsetDateTime::now_utc();
        let first = queue.register(addition("first"), None, now).unwrap().task;
        let (mut batch, mut tasks) = queue
            .start_batch(&[first.uid], None, String::new(), now)
            .unwrap();
        tasks[0].status = Status::Succeeded;
        queue.finish_batch(&mut batch, &mut tasks, now).unwrap();
        let snapshot = queue
            .register(KindWithContent::SnapshotCreation, None, now)
            .unwrap()
            .task;
        let waiting = queue.register(addition("waiting"), None, now).unwrap().task;
        let (snapshot_batch, _) = queue
            .start_batch(&[snapshot.uid], None, String::new(), now)
            .unwrap();

        let destination = directory.path().join("copy");
        let copied = queue
            .copy_for_snapshot(&destination, snapshot_batch.uid)
            .unwrap();
        assert_eq!(copied.update_files, BTreeSet::from(["waiting".to_owned()]));
        assert_eq!(
            std::fs::metadata(&destination).unwrap().len(),
            copied.copy.file_bytes
        );
        let names: Vec<_> = std::fs::read_dir(directory.path()).unwrap().collect();
        assert_eq!(names.len(), 2, "no draft stays: {names:?}");
        // The live queue still runs its batch.
        assert_eq!(
            queue.get_task(snapshot.uid).unwrap().unwrap().status,
            Status::Processing
        );
        let restored = TaskQueue::open(&destination, Options::default()).unwrap();
        assert!(restored.interrupted_at_open().is_empty());
        assert!(restored.get_task(snapshot.uid).unwrap().is_none());
        assert!(restored.get_batch(snapshot_batch.uid).unwrap().is_none());
        assert_eq!(
            restored.get_task(first.uid).unwrap().unwrap().status,
            Status::Succeeded
        );
        assert!(restored.get_batch(batch.uid).unwrap().is_some());
        let waiting_tasks = restored.waiting_tasks().unwrap();
        assert_eq!(waiting_tasks.len(), 1);
        assert_eq!(waiting_tasks[0].uid, waiting.uid);
        assert_eq!(waiting_tasks[0].kind.kind(), Kind::DocumentAdditionOrUpdate);
        // New tasks continue after every task the copy ever held.
        assert!(restored.next_task_uid().unwrap() > waiting.uid);
    }
}
