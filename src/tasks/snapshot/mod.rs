//! The `snapshotCreation` task: writes the whole instance — the task queue with its batches
//! and the index catalog, the payloads of the enqueued tasks, every shard's page store and
//! vector files, the API keys, experimental features, network, webhooks, dynamic search
//! rules and chat workspaces — as one file,
//! `<db name>.snapshot` in `--snapshot-dir`, named after the data directory as Meilisearch
//! names it (`data.ms.snapshot`), so each snapshot replaces the previous one. The format is
//! coresearch's own ([`archive`] says what it holds); `--import-snapshot` reads it back
//! (`crate::backups::snapshot_import`).
//!
//! How: the files are staged in `<db name>.snapshot.staging/` beside the snapshot (the dump's
//! [`crate::tasks::dump::reservation`]): the queue first, compacted from one read snapshot of
//! its page store and without this batch's tasks ([`super::queue_copy`]); then the update
//! files its enqueued tasks name; then each index, every shard at once on its own core,
//! compacted from a read snapshot of its last commit (`crate::host::snapshot`); then the
//! control state's files. The staging directory is then archived into a temporary file,
//! renamed over the previous snapshot once synced ([`archive::write_archive`]), on a
//! background thread of low priority.
//!
//! Consistency: the snapshot runs in a batch of its own (every enqueued `snapshotCreation`
//! task together, as Meilisearch batches them), so no batch changes an index or a finished
//! task while it runs: the snapshot is the state after the batch before it. Tasks keep
//! being registered and searches keep being answered meanwhile; tasks registered after the
//! queue was read are not in the snapshot (their payloads are not either). Keys, features,
//! network and webhooks are read when their step comes, each file whole (they are written
//! by atomic renames).
//!
//! Outcome: every task of the batch succeeds (a `snapshotCreation` task has no details), or
//! fails with the error that stopped the snapshot (`io_error`, `no_space_left_on_device`,
//! `internal`…). As in Meilisearch, a snapshot being written is not interrupted by a
//! cancelation. In every case the staging directory is removed; a crash leaves only the
//! staging directory and the temporary file, which the next snapshot removes, and the
//! previous snapshot whole.

pub mod archive;
pub mod schedule;

use std::path::{Path, PathBuf};
use std::rc::Rc;

use time::OffsetDateTime;

use self::archive::{SNAPSHOT_EXTENSION, SnapshotHeader};
use super::control_side::ControlSide;
use super::dump::reservation::{Reservation, ReservationError};
use super::model::Task;
use super::scheduler::{BatchEnd, failed, succeeded_with};
use crate::auth::persistence::{AUTH_DIRECTORY_NAME, KEY_FILE_NAME};
use crate::coordinator::Coordinator;
use crate::coordinator::catalog::IndexRecord;
use crate::errors::{ResponseError, io_error};
use crate::host::ShardAddress;
use crate::host::snapshot::SnapshotShard;

/// The name of a data directory whose path has none (`/`, `.`), as Meilisearch falls back.
pub const DATABASE_NAME_DEFAULT: &str = "data.ms";

/// The progress steps, as Meilisearch names them.
const STEP_START: &str = "start the snapshot creation";
const STEP_QUEUE: &str = "snapshot the index scheduler";
const STEP_UPDATE_FILES: &str = "snapshot the update files";
const STEP_INDEXES: &str = "snapshot the indexes";
const STEP_KEYS: &str = "snapshot the api keys";
const STEP_ARCHIVE: &str = "create the tarball";

/// What running a snapshot needs.
pub struct SnapshotWork {
    pub coordinator: Rc<Coordinator>,
    pub control: Rc<ControlSide>,
    /// `--snapshot-dir`.
    pub snapshot_directory: PathBuf,
    /// The data directory.
    pub data_directory: PathBuf,
    /// Whether page stores are compacted (not `--experimental-no-snapshot-compaction`).
    pub compaction: bool,
    /// The batch the snapshot runs in.
    pub batch_uid: u32,
}

/// The snapshot's file name stem: the data directory's name.
pub fn database_name(data_directory: &Path) -> String {
    data_directory
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| DATABASE_NAME_DEFAULT.to_owned())
}

/// Runs the snapshot `tasks` (alone in their batch).
pub async fn run_snapshot(work: &SnapshotWork, tasks: Vec<Task>) -> BatchEnd {
    let outcome = work.snapshot().await;
    let finished = tasks
        .into_iter()
        .map(|task| match &outcome {
            Ok(()) => succeeded_with(task, |_| {}),
            Err(error) => failed(task, error.clone()),
        })
        .collect();
    if let Err(error) = &outcome {
        tracing::error!(message = %error.message, "a snapshot failed");
    }
    BatchEnd::Finished {
        tasks: finished,
        catalog: None,
        removed_storages: Vec::new(),
    }
}

impl SnapshotWork {
    /// Writes the snapshot under its final name.
    async fn snapshot(&self) -> Result<(), ResponseError> {
        self.control.set_progress(STEP_START, 0, 1);
        let (directory, name) = (
            self.snapshot_directory.clone(),
            database_name(&self.data_directory),
        );
        let reservation = crate::runtime::blocking::run(move || {
            Reservation::take_named(&directory, &name, SNAPSHOT_EXTENSION)
        })
        .await
        .map_err(|error| match error {
            ReservationError::AlreadyProcessing => ResponseError::internal(format!(
                "another process is writing a snapshot of the same name into {}",
                self.snapshot_directory.display()
            )),
            ReservationError::Io(error) => io_error(&error),
        })?;
        let outcome = match self.stage(&reservation).await {
            Ok(()) => self.archive(&reservation).await,
            Err(error) => Err(error),
        };
        // Dropping the reservation removes the staging directory (and the temporary file of a
        // snapshot that did not finish).
        crate::runtime::blocking::run(move || drop(reservation)).await;
        outcome
    }

    /// Writes the data directory of the snapshot into the staging directory.
    async fn stage(&self, reservation: &Reservation) -> Result<(), ResponseError> {
        let data = archive::data_folder(&reservation.staging);
        self.control.set_progress(STEP_QUEUE, 0, 1);
        let queue = self.control.queue.clone();
        let queue_file = queue.path().file_name().unwrap_or_default();
        let (destination, batch_uid) = (data.join(queue_file), self.batch_uid);
        let copied = crate::runtime::blocking::run_in_background("snapshot-queue", move || {
            std::fs::create_dir_all(destination.parent().unwrap_or(Path::new(".")))?;
            queue
                .copy_for_snapshot(&destination, batch_uid)
                .map_err(|error| std::io::Error::other(error.to_string()))
        })
        .await
        .and_then(|outcome| outcome)
        .map_err(|error| io_error(&error))?;
        self.copy_update_files(&data, copied.update_files).await?;
        let catalog = self.coordinator.catalog();
        let indexes = u32::try_from(catalog.len()).unwrap_or(u32::MAX);
        for (position, record) in catalog.iter().enumerate() {
            let position = u32::try_from(position).unwrap_or(u32::MAX);
            self.control.set_progress(STEP_INDEXES, position, indexes);
            self.snapshot_index(&data, record).await?;
        }
        self.control.set_progress(STEP_KEYS, 0, 1);
        let (source, destination) = (self.data_directory.clone(), data);
        crate::runtime::blocking::run(move || copy_control_files(&source, &destination))
            .await
            .map_err(|error| io_error(&error))
    }

    /// Copies the update files `names` into the snapshot's data directory `data`.
    async fn copy_update_files(
        &self,
        data: &Path,
        names: std::collections::BTreeSet<String>,
    ) -> Result<(), ResponseError> {
        let total = u32::try_from(names.len()).unwrap_or(u32::MAX);
        self.control.set_progress(STEP_UPDATE_FILES, 0, total);
        let update_files = self.control.update_files.clone();
        let destination = data.join(crate::tasks::update_files::UPDATE_FILES_DIRECTORY);
        crate::runtime::blocking::run_in_background("snapshot-update-files", move || {
            std::fs::create_dir_all(&destination)?;
            for name in names {
                std::fs::copy(update_files.path(&name), destination.join(&name))?;
            }
            Ok(())
        })
        .await
        .and_then(|outcome| outcome)
        .map_err(|error| io_error(&error))
    }

    /// Copies every shard of the index `record` into the snapshot's data directory `data`.
    async fn snapshot_index(&self, data: &Path, record: &IndexRecord) -> Result<(), ResponseError> {
        let set = record.shard_set();
        let directory = set.directory(data);
        crate::runtime::blocking::run(move || std::fs::create_dir_all(directory))
            .await
            .map_err(|error| io_error(&error))?;
        let compaction = self.compaction;
        let answers = self
            .coordinator
            .ask_every_shard(&set, |shard| SnapshotShard {
                destination: ShardAddress {
                    storage: set.storage.clone(),
                    shard,
                }
                .path(data),
                compaction,
            })
            .await;
        for answer in answers {
            answer.map_err(|error| {
                ResponseError::new(
                    error.code,
                    format!("index `{}`: {}", record.uid, error.message),
                )
            })?;
        }
        Ok(())
    }

    /// Archives the staging directory and gives the archive its final name, on a background
    /// thread of low priority.
    async fn archive(&self, reservation: &Reservation) -> Result<(), ResponseError> {
        self.control.set_progress(STEP_ARCHIVE, 0, 1);
        let (data, temporary, destination) = (
            archive::data_folder(&reservation.staging),
            reservation.temporary.clone(),
            reservation.destination.clone(),
        );
        let header = SnapshotHeader::current(OffsetDateTime::now_utc());
        let bytes = crate::runtime::blocking::run_in_background("snapshot-archive", move || {
            archive::write_archive(&data, &header, &temporary, &destination)
        })
        .await
        .and_then(|outcome| outcome)
        .map_err(|error| io_error(&error))?;
        tracing::info!(
            path = %reservation.destination.display(),
            bytes,
            "snapshot written"
        );
        Ok(())
    }
}

/// Copies the data directory's format marker and control-state files (keys, experimental
/// features, network, webhooks, dynamic search rules, chat workspaces) that exist from `source` into
/// `destination`.
fn copy_control_files(source: &Path, destination: &Path) -> std::io::Result<()> {
    let keys = Path::new(AUTH_DIRECTORY_NAME).join(KEY_FILE_NAME);
    let files = [
        PathBuf::from(crate::data_dir::FORMAT_FILE_NAME),
        keys,
        PathBuf::from(crate::control::FEATURES_FILE_NAME),
        PathBuf::from(crate::network::model::NETWORK_FILE_NAME),
        PathBuf::from(crate::control::webhooks::WEBHOOKS_FILE_NAME),
        PathBuf::from(crate::control::dynamic_search_rules::DYNAMIC_SEARCH_RULES_FILE_NAME),
        PathBuf::from(crate::control::chat_workspaces::CHAT_WORKSPACES_FILE_NAME),
    ];
    for file in files {
        let from = source.join(&file);
        if !from.exists() {
            continue;
        }
        let to = destination.join(&file);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::copy(from, to)?;
    }
    Ok(())
}
