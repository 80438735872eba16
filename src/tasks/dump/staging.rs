//! The files of a dump written into its staging directory, before it is archived: the
//! top-level records (metadata, instance uid, keys, features, network, webhooks), the task
//! and batch queues with the documents of the enqueued document additions, and each index's
//! metadata and settings. Blocking file I/O: the dump task runs these on helper threads.
//!
//! Invariants: every file is complete when its function returns; the dump task itself is
//! written as succeeded, with its batch finished, so that an import does not run it again
//! (as Meilisearch writes itself into its dumps).

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;
use serde_json::Value;
use time::OffsetDateTime;

use super::batch_records::batch_to_record;
use super::layout::{self, DumpMetadata, IndexMetadata};
use super::task_records::task_to_record;
use crate::tasks::batch::Batch;
use crate::tasks::model::{KindWithContent, Status, Task};
use crate::tasks::queue::{QueueError, TaskQueue};
use crate::tasks::update_files::{UpdateFiles, format_of};

/// Why writing the staging directory stopped.
#[derive(Debug)]
pub enum StagingError {
    /// The dump was asked to stop (a cancelation).
    Stopped,
    /// Something failed; the message says what.
    Failed(String),
}

impl From<io::Error> for StagingError {
    fn from(error: io::Error) -> Self {
        StagingError::Failed(error.to_string())
    }
}

impl From<QueueError> for StagingError {
    fn from(error: QueueError) -> Self {
        StagingError::Failed(error.to_string())
    }
}

/// The top-level records of a dump, read from the control state when the dump started.
pub struct TopLevel {
    pub metadata: DumpMetadata,
    pub instance_uid: Option<String>,
    /// One key record per key, in creation order.
    pub keys: Vec<Value>,
    pub features: Value,
    pub network: Value,
    pub webhooks: Value,
    /// The dynamic search rules, by uid.
    pub dynamic_search_rules: Vec<Value>,
    /// The chat workspaces' settings (API keys in clear), by uid.
    pub chat_workspaces: Vec<(String, Value)>,
}

/// Writes the top-level files into `staging`.
pub fn write_top_level(staging: &Path, top: &TopLevel) -> io::Result<()> {
    fs::create_dir_all(staging.join(layout::INDEXES_DIRECTORY))?;
    write_json(&staging.join(layout::METADATA_FILE), &top.metadata)?;
    if let Some(uid) = &top.instance_uid {
        fs::write(staging.join(layout::INSTANCE_UID_FILE), uid)?;
    }
    write_lines(&staging.join(layout::KEYS_FILE), &top.keys)?;
    write_json(&staging.join(layout::FEATURES_FILE), &top.features)?;
    write_json(&staging.join(layout::NETWORK_FILE), &top.network)?;
    write_json(&staging.join(layout::WEBHOOKS_FILE), &top.webhooks)?;
    let rules = staging.join(layout::DYNAMIC_SEARCH_RULES_DIRECTORY);
    fs::create_dir_all(&rules)?;
    for (number, rule) in top.dynamic_search_rules.iter().enumerate() {
        write_json(
            &rules.join(layout::dynamic_search_rule_file_name(number)),
            rule,
        )?;
    }
    let workspaces = staging.join(layout::CHAT_WORKSPACES_DIRECTORY);
    fs::create_dir_all(&workspaces)?;
    for (uid, settings) in &top.chat_workspaces {
        write_json(
            &workspaces.join(layout::chat_workspace_file_name(uid)),
            settings,
        )?;
    }
    Ok(())
}

/// What the queue part of a dump needs.
pub struct QueueSource {
    pub queue: Arc<TaskQueue>,
    pub update_files: UpdateFiles,
    /// The dump task and its batch, written as finished at `finished_at`.
    pub dump_task_uid: u32,
    pub dump_batch_uid: u32,
    pub finished_at: OffsetDateTime,
    /// The key records a dump task carries.
    pub keys: Vec<Value>,
    pub stop: Arc<AtomicBool>,
}

/// Writes `tasks/queue.jsonl` with the enqueued tasks' documents, and
/// `batches/queue.jsonl`, from one snapshot of the queue.
pub fn write_queues(staging: &Path, source: &QueueSource) -> Result<(), StagingError> {
    let tasks_directory = staging.join(layout::TASKS_DIRECTORY);
    let update_directory = tasks_directory.join(layout::UPDATE_FILES_DIRECTORY);
    fs::create_dir_all(&update_directory)?;
    let batches_directory = staging.join(layout::BATCHES_DIRECTORY);
    fs::create_dir_all(&batches_directory)?;
    let mut tasks = BufWriter::new(File::create(tasks_directory.join(layout::QUEUE_FILE))?);
    let mut batches = BufWriter::new(File::create(batches_directory.join(layout::QUEUE_FILE))?);
    source.queue.visit_history(
        |task| {
            if source.stop.load(Ordering::Relaxed) {
                return Err(StagingError::Stopped);
            }
            write_task(&mut tasks, &update_directory, source, task)
        },
        |batch| write_batch(&mut batches, source, batch),
    )?;
    tasks.into_inner().map_err(|error| error.into_error())?;
    batches.into_inner().map_err(|error| error.into_error())?;
    Ok(())
}

fn write_task(
    lines: &mut impl Write,
    update_directory: &Path,
    source: &QueueSource,
    mut task: Task,
) -> Result<(), StagingError> {
    if task.uid == source.dump_task_uid {
        task.status = Status::Succeeded;
        task.finished_at = Some(source.finished_at);
    }
    serde_json::to_writer(&mut *lines, &task_to_record(&task, &source.keys))
        .map_err(|error| StagingError::Failed(error.to_string()))?;
    lines.write_all(b"\n")?;
    if let (Status::Enqueued, KindWithContent::DocumentAdditionOrUpdate { content_file, .. }) =
        (task.status, &task.kind)
    {
        let destination = update_directory.join(layout::update_file_name(task.uid));
        write_update_file(&source.update_files, content_file, &destination)?;
    }
    Ok(())
}

/// Writes the documents of the update file `name` as JSON lines at `destination`.
fn write_update_file(
    files: &UpdateFiles,
    name: &str,
    destination: &Path,
) -> Result<(), StagingError> {
    let format = format_of(name)
        .ok_or_else(|| StagingError::Failed(format!("the update file `{name}` has no format")))?;
    let source = File::open(files.path(name))?;
    let documents = shards::documents::payload::documents_from(source, format)
        .map_err(|error| StagingError::Failed(error.to_string()))?;
    let mut output = BufWriter::new(File::create(destination)?);
    for document in documents {
        let document = document.map_err(|error| StagingError::Failed(error.to_string()))?;
        serde_json::to_writer(&mut output, &document)
            .map_err(|error| StagingError::Failed(error.to_string()))?;
        output.write_all(b"\n")?;
    }
    output.into_inner().map_err(|error| error.into_error())?;
    Ok(())
}

fn write_batch(
    lines: &mut impl Write,
    source: &QueueSource,
    mut batch: Batch,
) -> Result<(), StagingError> {
    if batch.uid == source.dump_batch_uid {
        let total = batch.stats.total_nb_tasks;
        batch.stats.status = [(Status::Succeeded, total)].into_iter().collect();
        batch.finished_at = Some(source.finished_at);
    }
    serde_json::to_writer(&mut *lines, &batch_to_record(&batch))
        .map_err(|error| StagingError::Failed(error.to_string()))?;
    lines.write_all(b"\n")?;
    Ok(())
}

/// Creates `indexes/<uid>/` with its metadata and settings; answers the folder, where the
/// shards then write the documents' pieces.
pub fn write_index(
    staging: &Path,
    metadata: &IndexMetadata,
    settings: &Value,
) -> io::Result<PathBuf> {
    let directory = staging.join(layout::INDEXES_DIRECTORY).join(&metadata.uid);
    fs::create_dir_all(&directory)?;
    write_json(&directory.join(layout::INDEX_METADATA_FILE), metadata)?;
    write_json(&directory.join(layout::INDEX_SETTINGS_FILE), settings)?;
    Ok(directory)
}

fn write_json(path: &Path, value: &impl Serialize) -> io::Result<()> {
    let bytes = serde_json::to_vec(value).map_err(io::Error::other)?;
    fs::write(path, bytes)
}

fn write_lines(path: &Path, values: &[Value]) -> io::Result<()> {
    let mut output = BufWriter::new(File::create(path)?);
    for value in values {
        serde_json::to_writer(&mut output, value).map_err(io::Error::other)?;
        output.write_all(b"\n")?;
    }
    output.into_inner().map_err(|error| error.into_error())?;
    Ok(())
}
