//! Document editions: a `documentEdition` task (always alone in its batch) is not planned
//! on the control side: each shard runs the function on its own matching documents while
//! it prepares, in the same two phases as the other document tasks (see
//! [`super::BatchWork::prepare_every_shard`]). Both counters of the task report the
//! documents the function ran on, as Meilisearch does.
//!
//! Invariants: the edition's filter is checked against the index's filterable attributes
//! before any shard is asked; if any shard cannot prepare, every shard aborts, the task
//! fails and nothing changes; an index without a primary key has no document to edit.

use std::sync::Arc;

use time::OffsetDateTime;

use super::documents::{checked_task_filter, filter_error_in_index};
use super::{BatchWork, Changes, fail_all};
use crate::coordinator::catalog::IndexRecord;
use crate::errors::ResponseError;
use crate::host::edit::Edit;
use crate::host::edition::EditionRequest;
use crate::tasks::model::{Details, KindWithContent, Task};
use crate::tasks::scheduler::{failed, succeeded_with};

impl BatchWork {
    /// Runs the document editions of `tasks` on the existing index `index_uid`, one after
    /// the other; every task fails when the index does not exist.
    pub(super) async fn edit_every_task(
        &self,
        index_uid: &str,
        tasks: Vec<Task>,
        changes: &mut Changes,
    ) -> Vec<Task> {
        let record = match self.ensure_index(index_uid, false, 0, changes) {
            Ok((record, _created)) => record,
            Err(error) => return fail_all(tasks, &error),
        };
        let mut finished = Vec::with_capacity(tasks.len());
        for task in tasks {
            finished.push(self.edit_documents(&record, task, changes).await);
        }
        finished
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
            Some(value) => {
                match checked_task_filter(
                    value,
                    record,
                    crate::network::sharding::filter_shards(&self.network),
                ) {
                    Ok(filter) => filter,
                    Err(error) => return failed(task, error),
                }
            }
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
            .prepare_every_shard(&record.shard_set(), |_| Edit {
                batch_uid,
                filter: filter.clone(),
                edition: edition.clone(),
            })
            .await;
        let answers = self.commit_or_abort(&record.shard_set(), prepared).await;
        let candidates: u64 = match answers {
            Ok(answers) => answers.iter().sum(),
            Err(error) => return failed(task, filter_error_in_index(error, &record.uid)),
        };
        if candidates > 0 {
            let mut updated = record.as_ref().clone();
            updated.updated_at = OffsetDateTime::now_utc();
            changes.put(updated);
        }
        succeeded_with(task, |details| fill_edition_counts(details, candidates))
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
