//! The `dumpCreation` task: writes everything a Meilisearch user moves between machines and
//! versions — API keys, experimental features, network, webhooks, dynamic search rules, chat
//! workspaces, the
//! task and batch queues (with the documents of enqueued additions), and every index's
//! metadata, settings and documents — as a `.dump` file in Meilisearch's dump format V6 ([`layout`]), named
//! `<dumpUid>.dump` in `--dump-dir`, where the dump uid is the start time
//! (`YYYYMMDD-HHMMSSmmm`).
//!
//! How: the files are written into a staging directory beside the dump ([`reservation`]):
//! the control state first, then the queues from one snapshot of the task queue
//! ([`staging`]), then the indexes one after the other, every shard of an index writing
//! its documents at once on its own core (`crate::host::dump`); the staging directory is
//! then archived into a temporary file which is renamed to the dump's name once synced
//! ([`archive`]), on a background thread of low priority.
//!
//! Consistency: a dump runs alone in its batch, so no batch changes an index or the queue's
//! finished tasks while it runs; every shard reads one snapshot. The dump is the state
//! after the batch before it.
//!
//! Outcome: the task succeeds with its `dumpUid`; a failure fails it with
//! `dump_process_failed` (`Dump process failed: …`), a dump of the same uid being written by
//! another process with `dump_already_processing`; a cancelation interrupts it. In every case
//! but success, nothing is left in the dump directory; a crash leaves only a temporary
//! archive and staging directory, which the next dump removes.

pub mod archive;
pub mod batch_records;
pub mod details_records;
pub mod key_records;
pub mod layout;
pub mod reservation;
pub mod staging;
pub mod task_records;

use std::cell::Cell;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::{Value, json};
use time::OffsetDateTime;

use self::layout::{DumpMetadata, IndexMetadata, dump_uid};
use self::reservation::{Reservation, ReservationError};
use self::staging::{QueueSource, StagingError, TopLevel};
use super::control_side::ControlSide;
use super::model::{Details, TARGET_VERSION, Task};
use super::scheduler::{BatchEnd, failed, succeeded_with};
use crate::control::ControlPlane;
use crate::coordinator::Coordinator;
use crate::coordinator::catalog::IndexRecord;
use crate::errors::{Code, ResponseError};
use crate::host::dump::{DumpDocuments, DumpProgress};

/// How often the control core looks for a cancelation and updates the progress while a
/// dump runs.
pub const DUMP_WATCH_INTERVAL: Duration = Duration::from_millis(50);

/// Meilisearch's message of `dump_already_processing`.
pub const DUMP_ALREADY_PROCESSING_MESSAGE: &str = "A dump is already processing. You must wait until the current process is finished before requesting another dump.";

/// What running a dump needs.
pub struct DumpWork {
    pub coordinator: Rc<Coordinator>,
    pub control: Rc<ControlSide>,
    pub control_plane: Rc<ControlPlane>,
    /// `--dump-dir`.
    pub dump_directory: PathBuf,
    /// The data directory (for the instance uid).
    pub data_directory: PathBuf,
    /// The batch the dump runs in.
    pub batch_uid: u32,
}

/// Why a dump stopped before its end.
enum Stop {
    Failed(String),
    AlreadyProcessing,
    Interrupted,
}

impl From<std::io::Error> for Stop {
    fn from(error: std::io::Error) -> Self {
        Stop::Failed(error.to_string())
    }
}

impl From<StagingError> for Stop {
    fn from(error: StagingError) -> Self {
        match error {
            StagingError::Stopped => Stop::Interrupted,
            StagingError::Failed(message) => Stop::Failed(message),
        }
    }
}

/// Runs the dump `task` (alone in its batch).
pub async fn run_dump(work: &DumpWork, task: Task) -> BatchEnd {
    let started_at = OffsetDateTime::now_utc();
    let progress = Arc::new(DumpProgress::default());
    let done = Cell::new(false);
    let dump = async {
        let outcome = work.dump(&task, started_at, &progress).await;
        done.set(true);
        outcome
    };
    let (outcome, ()) = futures_lite::future::zip(dump, work.watch(&progress, &done)).await;
    let finished = match outcome {
        Ok(uid) => succeeded_with(task, |details| {
            if let Details::Dump { dump_uid } = details {
                *dump_uid = Some(uid);
            }
        }),
        Err(Stop::Interrupted) => return BatchEnd::Interrupted,
        Err(Stop::AlreadyProcessing) => failed(
            task,
            ResponseError::new(Code::DumpAlreadyProcessing, DUMP_ALREADY_PROCESSING_MESSAGE),
        ),
        Err(Stop::Failed(message)) => {
            tracing::error!(%message, "a dump failed");
            failed(
                task,
                ResponseError::new(
                    Code::DumpProcessFailed,
                    format!("Dump process failed: {message}"),
                ),
            )
        }
    };
    BatchEnd::Finished {
        tasks: vec![finished],
        catalog: None,
        removed_storages: Vec::new(),
    }
}

impl DumpWork {
    /// Writes the dump; its uid once it is complete under its final name.
    async fn dump(
        &self,
        task: &Task,
        started_at: OffsetDateTime,
        progress: &Arc<DumpProgress>,
    ) -> Result<String, Stop> {
        let uid = dump_uid(started_at);
        let directory = self.dump_directory.clone();
        let reserved_uid = uid.clone();
        let reservation =
            crate::runtime::blocking::run(move || Reservation::take(&directory, &reserved_uid))
                .await
                .map_err(|error| match error {
                    ReservationError::AlreadyProcessing => Stop::AlreadyProcessing,
                    ReservationError::Io(error) => Stop::from(error),
                })?;
        let outcome = match self.fill(&reservation, task, started_at, progress).await {
            Ok(()) => self.archive(&reservation, progress).await,
            Err(stop) => Err(stop),
        };
        // Dropping the reservation removes the staging directory (and the temporary archive
        // of a dump that did not finish).
        crate::runtime::blocking::run(move || drop(reservation)).await;
        outcome.map(|()| uid)
    }

    /// Archives the staging directory and gives the archive its final name, on a background
    /// thread of low priority.
    async fn archive(
        &self,
        reservation: &Reservation,
        progress: &Arc<DumpProgress>,
    ) -> Result<(), Stop> {
        self.control.set_progress("compressing the dump", 0, 1);
        let (staging, temporary, destination) = (
            reservation.staging.clone(),
            reservation.temporary.clone(),
            reservation.destination.clone(),
        );
        let shared = progress.clone();
        let outcome = crate::runtime::blocking::run_in_background("dump-archive", move || {
            let stopped = || shared.stop.load(Ordering::Relaxed);
            archive::write_archive(&staging, &temporary, &destination, &stopped)
        })
        .await?;
        match outcome {
            Err(_) if progress.stop.load(Ordering::Relaxed) => Err(Stop::Interrupted),
            other => other.map_err(Stop::from),
        }
    }

    /// Writes every file of the dump into the staging directory.
    async fn fill(
        &self,
        reservation: &Reservation,
        task: &Task,
        started_at: OffsetDateTime,
        progress: &Arc<DumpProgress>,
    ) -> Result<(), Stop> {
        let top = self.top_level(started_at);
        let staging = reservation.staging.clone();
        self.control
            .set_progress("dumping the keys and settings", 0, 1);
        let keys = top.keys.clone();
        crate::runtime::blocking::run(move || staging::write_top_level(&staging, &top)).await?;
        self.control.set_progress("dumping the tasks", 0, 1);
        let source = QueueSource {
            queue: self.control.queue.clone(),
            update_files: self.control.update_files.clone(),
            dump_task_uid: task.uid,
            dump_batch_uid: self.batch_uid,
            finished_at: OffsetDateTime::now_utc(),
            keys,
            stop: Arc::new(std::sync::atomic::AtomicBool::new(false)),
        };
        let staging = reservation.staging.clone();
        let stop = source.stop.clone();
        let queues = crate::runtime::blocking::run_in_background("dump-tasks", move || {
            staging::write_queues(&staging, &source)
        });
        let queues = futures_lite::future::or(queues, async {
            while !progress.stop.load(Ordering::Relaxed) {
                crate::runtime::sleep(DUMP_WATCH_INTERVAL).await;
            }
            stop.store(true, Ordering::Relaxed);
            Ok(Err(StagingError::Stopped))
        });
        queues.await??;
        let catalog = self.coordinator.catalog();
        for record in catalog.iter() {
            if progress.stop.load(Ordering::Relaxed) {
                return Err(Stop::Interrupted);
            }
            self.dump_index(reservation, record, progress).await?;
        }
        Ok(())
    }

    /// The top-level records, read from the control state now.
    fn top_level(&self, started_at: OffsetDateTime) -> TopLevel {
        let (major, minor, patch) = TARGET_VERSION;
        let keys = self
            .control_plane
            .keys()
            .keys()
            .map(|key| json!(key_records::key_to_record(key)))
            .collect();
        let webhooks: serde_json::Map<String, Value> = self
            .control_plane
            .webhooks()
            .registered()
            .iter()
            .map(|(uuid, webhook)| (uuid.to_string(), json!(webhook)))
            .collect();
        let instance_uid = std::fs::read_to_string(
            self.data_directory
                .join(crate::data_dir::INSTANCE_UID_FILE_NAME),
        )
        .ok()
        .map(|uid| uid.trim().to_owned());
        TopLevel {
            metadata: DumpMetadata {
                dump_version: "V6".to_owned(),
                db_version: format!("{major}.{minor}.{patch}"),
                dump_date: started_at,
            },
            instance_uid,
            keys,
            features: json!(self.control_plane.persisted_features()),
            network: json!(*self.control_plane.network()),
            webhooks: json!({ "webhooks": webhooks }),
            dynamic_search_rules: self
                .control_plane
                .dynamic_search_rules()
                .values()
                .map(|rule| json!(rule))
                .collect(),
            chat_workspaces: self
                .control_plane
                .chat_workspaces()
                .iter()
                .map(|(uid, settings)| (uid.clone(), json!(settings)))
                .collect(),
        }
    }

    /// Writes one index: its metadata and settings, then every shard's documents at once.
    async fn dump_index(
        &self,
        reservation: &Reservation,
        record: &IndexRecord,
        progress: &Arc<DumpProgress>,
    ) -> Result<(), Stop> {
        let metadata = IndexMetadata {
            uid: record.uid.clone(),
            primary_key: record.primary_key.clone(),
            created_at: record.created_at,
            updated_at: record.updated_at,
        };
        let settings = record.settings.export_view(true, true);
        let staging = reservation.staging.clone();
        let directory = crate::runtime::blocking::run(move || {
            staging::write_index(&staging, &metadata, &settings)
        })
        .await?;
        self.control
            .set_progress(&format!("dumping the index `{}`", record.uid), 0, 0);
        progress.written.store(0, Ordering::Relaxed);
        let answers = self
            .coordinator
            .ask_every_shard(&record.shard_set(), |shard| DumpDocuments {
                path: directory.join(archive::piece_name(layout::INDEX_DOCUMENTS_FILE, shard)),
                order_path: directory
                    .join(archive::order_name(layout::INDEX_DOCUMENTS_FILE, shard)),
                progress: progress.clone(),
            })
            .await;
        let mut stopped = false;
        for answer in answers {
            let dumped = answer.map_err(|error| {
                Stop::Failed(format!("index `{}`: {}", record.uid, error.message))
            })?;
            stopped |= dumped.stopped;
        }
        if stopped {
            return Err(Stop::Interrupted);
        }
        Ok(())
    }

    /// Until `done`, raises the dump's stop flag once a cancelation asks to interrupt the
    /// batch.
    async fn watch(&self, progress: &DumpProgress, done: &Cell<bool>) {
        while !done.get() {
            crate::runtime::sleep(DUMP_WATCH_INTERVAL).await;
            let interrupted = self
                .control
                .processing
                .borrow()
                .is_some_and(|(_, interrupt)| interrupt);
            if interrupted {
                progress.stop.store(true, Ordering::Relaxed);
            }
        }
    }
}
