//! Index creation, update and deletion: each changes the catalog copy of the batch only.
//! A creation fails when the index exists; an update may set the primary key only while
//! the index holds no document, and may rename the index to a free uid; a deletion reports
//! the documents it removed on its first task. The shard files of a deleted index are
//! removed only after the deletion was recorded ([`remove_index_files`]).

use std::rc::Rc;

use time::OffsetDateTime;

use super::{BatchWork, Changes, fail_all};
use crate::coordinator::Coordinator;
use crate::coordinator::catalog::{IndexRecord, ShardSet, storage_name};
use crate::errors::{Code, ResponseError};
use crate::host::maintenance::Remove;
use crate::tasks::model::{Details, KindWithContent, Task};
use crate::tasks::scheduler::{failed, succeeded_with};

impl BatchWork {
    /// Runs the index creations of `tasks`, in task order.
    pub(super) fn create_indexes(
        &self,
        index_uid: &str,
        tasks: Vec<Task>,
        changes: &mut Changes,
    ) -> Vec<Task> {
        tasks
            .into_iter()
            .map(|task| self.create_index(index_uid, task, changes))
            .collect()
    }

    fn create_index(&self, index_uid: &str, task: Task, changes: &mut Changes) -> Task {
        if changes.catalog.get(index_uid).is_some() {
            return failed(task, ResponseError::index_already_exists(index_uid));
        }
        let primary_key = match &task.kind {
            KindWithContent::IndexCreation { primary_key, .. } => primary_key.clone(),
            _ => None,
        };
        changes.put(self.new_index_record(index_uid, storage_name(task.uid), primary_key));
        succeeded_with(task, |_| {})
    }

    /// Runs the index updates of `tasks`, one after the other.
    pub(super) async fn update_indexes(
        &self,
        index_uid: &str,
        tasks: Vec<Task>,
        changes: &mut Changes,
    ) -> Vec<Task> {
        let mut finished = Vec::new();
        for task in tasks {
            finished.push(self.update_index(index_uid, task, changes).await);
        }
        finished
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
                Ok(_) => return failed(task, primary_key_already_exists(index_uid, &record)),
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

    /// Deletes the index: every task of `tasks` succeeds, the first reporting the
    /// documents the index held.
    pub(super) async fn delete_index(
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
}

/// The error of an update changing the primary key of an index holding documents.
fn primary_key_already_exists(index_uid: &str, record: &IndexRecord) -> ResponseError {
    let current = record.primary_key.clone().unwrap_or_default();
    ResponseError::new(
        Code::IndexPrimaryKeyAlreadyExists,
        format!("Index `{index_uid}`: Index already has a primary key: `{current}`."),
    )
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
