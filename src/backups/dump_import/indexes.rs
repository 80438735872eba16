//! The indexes of a dump, brought in through the normal write path: for each index, in uid
//! order, an index creation with its primary key, a settings update with its settings,
//! and, when it has documents, a document addition (replace) whose update file is the
//! dump's `documents.jsonl` itself, moved into the data directory. The scheduler then
//! indexes them as any batch ([`crate::server::run_until_idle`]), shards, embeddings given
//! in `_vectors` and all.
//!
//! Invariant: these tasks are the only ones in the queue while the import runs; once they
//! are finished they are checked ([`check_imported`]) and replaced by the dump's own
//! history.

use std::fs::File;
use std::io::{BufRead, BufReader};

use time::OffsetDateTime;

use super::contents::DumpedIndex;
use crate::tasks::model::{DocumentMethod, KindWithContent, Status, Task, TaskUid};
use crate::tasks::queue::TaskQueue;
use crate::tasks::update_files::UpdateFiles;

/// What the import registered for one index.
pub struct RegisteredIndex {
    pub uid: String,
    pub tasks: Vec<TaskUid>,
}

/// Registers the tasks that import `indexes` into `queue`.
pub fn register_indexes(
    queue: &TaskQueue,
    update_files: &UpdateFiles,
    indexes: &[DumpedIndex],
) -> Result<Vec<RegisteredIndex>, String> {
    let now = OffsetDateTime::now_utc();
    let mut registered = Vec::with_capacity(indexes.len());
    for index in indexes {
        let uid = index.metadata.uid.clone();
        let mut kinds = vec![
            KindWithContent::IndexCreation {
                index_uid: uid.clone(),
                primary_key: index.metadata.primary_key.clone(),
            },
            KindWithContent::SettingsUpdate {
                index_uid: uid.clone(),
                settings: index.settings.clone(),
                is_deletion: false,
                allow_index_creation: true,
            },
        ];
        if let Some(documents) = &index.documents {
            let (documents_count, content_bytes) = count_documents(documents)?;
            if documents_count > 0 {
                let name = format!("{}.ndjson", uuid::Uuid::new_v4());
                std::fs::rename(documents, update_files.path(&name))
                    .map_err(|error| format!("could not move the documents of `{uid}`: {error}"))?;
                kinds.push(KindWithContent::DocumentAdditionOrUpdate {
                    index_uid: uid.clone(),
                    primary_key: index.metadata.primary_key.clone(),
                    method: DocumentMethod::Replace,
                    content_file: name,
                    documents_count,
                    content_bytes,
                    allow_index_creation: true,
                    skip_creation: false,
                });
            }
        }
        let mut tasks = Vec::with_capacity(kinds.len());
        for kind in kinds {
            let task = queue
                .register(kind, None, now)
                .map_err(|error| format!("could not register the import of `{uid}`: {error}"))?;
            tasks.push(task.task.uid);
        }
        registered.push(RegisteredIndex { uid, tasks });
    }
    Ok(registered)
}

/// The documents (non-empty lines) and bytes of a JSON lines file.
fn count_documents(path: &std::path::Path) -> Result<(u64, u64), String> {
    let failure = |error: std::io::Error| format!("{}: {error}", path.display());
    let file = File::open(path).map_err(failure)?;
    let bytes = file.metadata().map_err(failure)?.len();
    let mut documents = 0;
    let mut reader = BufReader::new(file);
    let mut line = Vec::new();
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line).map_err(failure)? == 0 {
            break;
        }
        if line.iter().any(|byte| !byte.is_ascii_whitespace()) {
            documents += 1;
        }
    }
    Ok((documents, bytes))
}

/// Checks that every task the import registered succeeded; the first failure says which
/// index could not be imported, and why.
pub fn check_imported(queue: &TaskQueue, registered: &[RegisteredIndex]) -> Result<(), String> {
    for index in registered {
        for uid in &index.tasks {
            let task: Task = queue
                .get_task(*uid)
                .map_err(|error| error.to_string())?
                .ok_or_else(|| format!("the import task {uid} is gone"))?;
            match task.status {
                Status::Succeeded => {}
                Status::Failed => {
                    let message = task.error.map(|error| error.0.message).unwrap_or_default();
                    return Err(format!(
                        "the index `{}` of the dump could not be imported: {message}",
                        index.uid
                    ));
                }
                status => {
                    return Err(format!(
                        "the import of the index `{}` stopped before its end (a task is {status})",
                        index.uid
                    ));
                }
            }
        }
    }
    Ok(())
}
