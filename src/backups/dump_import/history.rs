//! The last step of a dump import, once the indexes are indexed: the dump's own task and
//! batch history in place of the import's tasks, the catalog's dates and storage names, and
//! the control state (keys, features, network, webhooks, dynamic search rules, chat
//! workspaces, instance uid) written into the new data directory.
//!
//! Invariants: the history is replaced in one commit of the queue (with the catalog
//! changes); an enqueued document addition of the dump gets its documents as an update file
//! and runs once the server starts, as in Meilisearch; imported indexes live under storage
//! names of their own (`dump-<n>`), which no task uid can give, so an index created later
//! never meets an imported one's files.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use super::contents::{DumpContents, DumpedTask};
use crate::auth::{JsonFileKeyPersistence, KeyPersistence};
use crate::coordinator::catalog::Catalog;
use crate::host::INDEXES_DIRECTORY;
use crate::tasks::batch::Batch;
use crate::tasks::dump::batch_records::batch_from_record;
use crate::tasks::model::{KindWithContent, Task};
use crate::tasks::queue::TaskQueue;
use crate::tasks::update_files::UpdateFiles;

/// The storage name of the `position`-th imported index.
fn imported_storage_name(position: usize) -> String {
    format!("dump-{position}")
}

/// Replaces the import's tasks with the dump's history and gives the imported indexes their
/// dates and storage names.
pub fn write_history(
    data_directory: &Path,
    queue: &TaskQueue,
    contents: &mut DumpContents,
) -> Result<(), String> {
    let before = crate::tasks::catalog_store::load_catalog(&queue.database().begin_read())
        .map_err(|error| format!("could not read the index catalog: {error}"))?;
    let catalog = imported_catalog(data_directory, &before, contents)?;
    let update_files = UpdateFiles::open(data_directory)
        .map_err(|error| format!("could not open the update files: {error}"))?;
    let tasks: Vec<Task> = std::mem::take(&mut contents.tasks)
        .into_iter()
        .map(|dumped| with_documents(&update_files, dumped))
        .collect::<Result<_, _>>()?;
    let batches = imported_batches(contents, &tasks);
    let next_uid = tasks
        .iter()
        .map(|task| task.uid.saturating_add(1))
        .max()
        .unwrap_or(0);
    queue
        .replace_history(&tasks, &batches, next_uid, &catalog, &before)
        .map_err(|error| format!("could not write the task history: {error}"))
}

/// The catalog the import built, each index with the dump's dates and its own storage.
fn imported_catalog(
    data_directory: &Path,
    before: &Catalog,
    contents: &DumpContents,
) -> Result<Catalog, String> {
    let mut catalog = before.clone();
    for (position, index) in contents.indexes.iter().enumerate() {
        let uid = &index.metadata.uid;
        let mut record = before
            .get(uid)
            .ok_or_else(|| format!("the imported index `{uid}` is not in the catalog"))?
            .as_ref()
            .clone();
        record.created_at = index.metadata.created_at;
        record.updated_at = index.metadata.updated_at;
        let storage = imported_storage_name(position);
        let indexes = data_directory.join(INDEXES_DIRECTORY);
        let from = indexes.join(&record.storage);
        if from.exists() {
            fs::rename(&from, indexes.join(&storage))
                .map_err(|error| format!("could not rename the files of `{uid}`: {error}"))?;
        }
        record.storage = storage;
        catalog.insert(record);
    }
    Ok(catalog)
}

/// The task of `dumped`; an enqueued document addition gets its documents (or an empty
/// payload) as an update file.
fn with_documents(update_files: &UpdateFiles, dumped: DumpedTask) -> Result<Task, String> {
    let DumpedTask {
        mut task,
        update_file,
    } = dumped;
    let waits = task.status == crate::tasks::Status::Enqueued;
    if let KindWithContent::DocumentAdditionOrUpdate {
        content_file,
        content_bytes,
        ..
    } = &mut task.kind
        && waits
    {
        let name = format!("{}.ndjson", uuid::Uuid::new_v4());
        let destination = update_files.path(&name);
        let moved = match &update_file {
            Some(source) => fs::rename(source, &destination),
            None => fs::write(&destination, b""),
        };
        moved.map_err(|error| format!("task {}: {error}", task.uid))?;
        *content_bytes = fs::metadata(&destination)
            .map_err(|error| format!("task {}: {error}", task.uid))?
            .len();
        *content_file = name;
    }
    Ok(task)
}

/// The dump's batches, each with the imported tasks that name it.
fn imported_batches(contents: &mut DumpContents, tasks: &[Task]) -> Vec<Batch> {
    let mut by_batch: BTreeMap<u32, Vec<&Task>> = BTreeMap::new();
    for task in tasks {
        if let Some(batch_uid) = task.batch_uid {
            by_batch.entry(batch_uid).or_default().push(task);
        }
    }
    std::mem::take(&mut contents.batches)
        .into_iter()
        .map(|record| {
            let members = by_batch.get(&record.uid).cloned().unwrap_or_default();
            batch_from_record(record, &members)
        })
        .collect()
}

/// Writes the dump's keys, features, network, webhooks, dynamic search rules, chat workspaces
/// and instance uid into the data directory, as the control core persists them.
pub fn write_control_state(data_directory: &Path, contents: &DumpContents) -> Result<(), String> {
    let keys: Vec<&crate::auth::Key> = contents.keys.iter().collect();
    JsonFileKeyPersistence::new(data_directory)
        .store(&keys)
        .map_err(|error| format!("could not write the API keys: {error}"))?;
    let files = [
        (
            crate::control::FEATURES_FILE_NAME,
            serde_json::to_vec(&contents.features),
        ),
        (
            crate::network::model::NETWORK_FILE_NAME,
            serde_json::to_vec(&contents.network),
        ),
        (
            crate::control::webhooks::WEBHOOKS_FILE_NAME,
            serde_json::to_vec(&contents.webhooks),
        ),
        (
            crate::control::dynamic_search_rules::DYNAMIC_SEARCH_RULES_FILE_NAME,
            serde_json::to_vec(&contents.dynamic_search_rules),
        ),
        (
            crate::control::chat_workspaces::CHAT_WORKSPACES_FILE_NAME,
            serde_json::to_vec(&contents.chat_workspaces),
        ),
    ];
    for (name, bytes) in files {
        let bytes = bytes.map_err(|error| format!("could not encode {name}: {error}"))?;
        crate::data_dir::write_atomically(&data_directory.join(name), &bytes)
            .map_err(|error| error.to_string())?;
    }
    if let Some(uid) = contents.instance_uid {
        let path = data_directory.join(crate::data_dir::INSTANCE_UID_FILE_NAME);
        crate::data_dir::write_atomically(&path, uid.hyphenated().to_string().as_bytes())
            .map_err(|error| error.to_string())?;
    }
    Ok(())
}
