//! The control core's side of the task queue: the queue itself, the batch being processed
//! and its progress, and the requests other cores send it (register a task, read tasks and
//! batches, ask whether an index is being indexed).
//!
//! The control side lives on the control core only, installed once at start
//! ([`ControlSide::install`]) and reached by the requests that run there
//! ([`ControlSide::local`]): each request is a typed [`CoreRequest`] the coordinator carries
//! to [`CONTROL_CORE`], so the coordinator knows nothing of tasks.
//!
//! Invariants: every write to the queue waits for the one permit of
//! [`ControlSide::queue_writes`] (the page store takes one write transaction at a time); a
//! registration wakes the scheduler; a key restricted to some indexes sees a task or batch
//! exactly when the listings would show it.

use std::cell::{OnceCell, RefCell};
use std::rc::Rc;
use std::sync::Arc;

use serde_json::Value;
use time::OffsetDateTime;

use super::model::{Kind, Status, TaskUid};
use super::queue::{QueueError, RegisterOptions, TaskQueue, TaskVisibility};
use super::update_files::UpdateFiles;
use super::{Batch, KindWithContent, Progress, ProgressStep, Task, TaskQuery};
use crate::auth::AuthContext;
use crate::coordinator::{CONTROL_CORE, Coordinator, CoreRequest};
use crate::errors::ResponseError;
use crate::network::task_network::TaskNetwork;
use crate::runtime::Semaphore;

thread_local! {
    /// The control side, on the control core's thread once installed.
    static CONTROL_SIDE: OnceCell<Rc<ControlSide>> = const { OnceCell::new() };
}

/// What only the control core holds.
pub struct ControlSide {
    pub queue: Arc<TaskQueue>,
    /// Wakes the scheduler after a registration.
    pub wake: futures_channel::mpsc::Sender<()>,
    /// The batch being processed, and whether a cancelation asked to interrupt it.
    pub processing: RefCell<Option<(u32, bool)>>,
    /// The index of the batch being processed, if it is an index batch.
    pub processing_index: RefCell<Option<String>>,
    /// Where the batch being processed is (`progress` of its batch view).
    pub progress: RefCell<Option<Progress>>,
    /// The steps the batch being processed went through, with when each began.
    pub trace: RefCell<Vec<(String, std::time::Instant)>>,
    /// One permit: the page store takes one write transaction at a time, so every write to
    /// the queue (registrations from every core, the scheduler's batch records) waits here.
    pub queue_writes: Semaphore,
    /// The payloads of document additions.
    pub update_files: UpdateFiles,
    /// How long each succeeded document write took from its registration to the end of its
    /// batch, when searches see it (`coresearch_write_visibility_seconds`).
    pub write_visibility: RefCell<crate::histogram::Histogram>,
    /// How long a write may wait before its batch stops giving way to searches
    /// (`--write-visibility-target-seconds`, see [`super::visibility_target`]).
    pub write_visibility_target: Option<std::time::Duration>,
}

/// Bucket bounds of [`ControlSide::write_visibility`], in seconds: from a small batch on an
/// idle server to writes that waited minutes behind a search peak.
pub const WRITE_VISIBILITY_BOUNDS: [f64; 12] = [
    0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// The kinds of task that write documents (what a client waits to see in its searches).
const DOCUMENT_WRITES: [Kind; 3] = [
    Kind::DocumentAdditionOrUpdate,
    Kind::DocumentEdition,
    Kind::DocumentDeletion,
];

/// Counts the time to visibility of every succeeded document write of a finished batch
/// into `histogram`.
pub fn observe_write_visibility(histogram: &mut crate::histogram::Histogram, tasks: &[Task]) {
    for task in tasks {
        let Some(finished_at) = task.finished_at else {
            continue;
        };
        if task.status != Status::Succeeded || !DOCUMENT_WRITES.contains(&task.kind()) {
            continue;
        }
        let waited = (finished_at - task.enqueued_at).as_seconds_f64().max(0.0);
        histogram.observe(waited);
    }
}

impl ControlSide {
    /// Runs `work` on the queue off the core, after the writes before it.
    pub async fn write_queue<Output: Send + 'static>(
        &self,
        work: impl FnOnce(&TaskQueue) -> Output + Send + 'static,
    ) -> Result<Output, ResponseError> {
        let _permit = self
            .queue_writes
            .acquire_permit(1)
            .await
            .map_err(|error| ResponseError::internal(error.to_string()))?;
        let queue = self.queue.clone();
        Ok(crate::runtime::blocking::run(move || work(&queue)).await)
    }

    /// Records the step the batch being processed is at: `finished` of `total` done.
    pub fn set_progress(&self, step: &str, finished: u32, total: u32) {
        let percentage = if total == 0 {
            0.0
        } else {
            finished as f32 * 100.0 / total as f32
        };
        let mut trace = self.trace.borrow_mut();
        if trace.last().is_none_or(|(last, _)| last != step) {
            trace.push((step.to_owned(), std::time::Instant::now()));
        }
        *self.progress.borrow_mut() = Some(Progress {
            steps: vec![ProgressStep {
                current_step: step.to_owned(),
                finished,
                total,
            }],
            percentage,
        });
    }

    /// Records nested steps (outermost first, each `(name, finished, total)`): the
    /// percentage counts each step within its parent's, as Meilisearch's does, and the
    /// trace names the innermost step by its path (`outer > inner`).
    pub fn set_progress_steps(&self, steps: &[(&str, u32, u32)]) {
        let mut percentage = 0.0;
        let mut factor = 1.0;
        for (_, finished, total) in steps {
            let total = (*total).max(1) as f32;
            factor *= total;
            percentage += *finished as f32 / factor;
        }
        let path: Vec<&str> = steps.iter().map(|(name, _, _)| *name).collect();
        let path = path.join(" > ");
        let mut trace = self.trace.borrow_mut();
        if trace.last().is_none_or(|(last, _)| *last != path) {
            trace.push((path, std::time::Instant::now()));
        }
        *self.progress.borrow_mut() = Some(Progress {
            steps: steps
                .iter()
                .map(|(name, finished, total)| ProgressStep {
                    current_step: (*name).to_owned(),
                    finished: *finished,
                    total: *total,
                })
                .collect(),
            percentage: percentage * 100.0,
        });
    }

    /// The time each step of the batch took (`stats.progressTrace`), and a fresh trace for
    /// the next batch.
    pub fn take_trace(&self) -> serde_json::Map<String, Value> {
        let trace = std::mem::take(&mut *self.trace.borrow_mut());
        let now = std::time::Instant::now();
        let mut map = serde_json::Map::new();
        for (position, (step, began)) in trace.iter().enumerate() {
            let ended = trace.get(position + 1).map_or(now, |(_, next)| *next);
            map.insert(
                step.clone(),
                Value::String(format!("{:.2?}", ended.duration_since(*began))),
            );
        }
        map
    }

    /// `batch` with the live progress when it is the one being processed.
    fn with_progress(&self, mut batch: Batch) -> Batch {
        let processing = self.processing.borrow().map(|(uid, _)| uid);
        if batch.finished_at.is_none() && processing == Some(batch.uid) {
            batch.progress = self.progress.borrow().clone();
        }
        batch
    }
}

impl ControlSide {
    /// Makes `control` the control side of this core's thread (the control core's, once).
    pub fn install(control: Rc<ControlSide>) -> Result<(), String> {
        CONTROL_SIDE.with(|cell| {
            cell.set(control)
                .map_err(|_| "the control side was installed twice".to_owned())
        })
    }

    /// The control side of this core: present on the control core only.
    pub fn local() -> Result<Rc<ControlSide>, ResponseError> {
        CONTROL_SIDE
            .with(|cell| cell.get().cloned())
            .ok_or_else(|| ResponseError::internal("the task queue lives on the control core"))
    }
}

impl TaskVisibility for AuthContext {
    fn all_indexes_authorized(&self) -> bool {
        AuthContext::all_indexes_authorized(self)
    }

    fn is_index_authorized(&self, index: &str) -> bool {
        AuthContext::is_index_authorized(self, index)
    }
}

/// A queue failure as an API error.
pub fn queue_error(error: QueueError) -> ResponseError {
    ResponseError::from(error)
}

/// Registers a task on the control core; answers the stored task.
pub async fn register(
    coordinator: &Coordinator,
    kind: KindWithContent,
    custom_metadata: Option<String>,
) -> Result<Task, ResponseError> {
    register_with(
        coordinator,
        kind,
        custom_metadata,
        RegisterOptions::default(),
    )
    .await
}

/// Registers a task with its place in a sharded network; answers the stored task.
pub async fn register_in_network(
    coordinator: &Coordinator,
    kind: KindWithContent,
    custom_metadata: Option<String>,
    network: Option<TaskNetwork>,
) -> Result<Task, ResponseError> {
    let options = RegisterOptions {
        network,
        ..RegisterOptions::default()
    };
    register_with(coordinator, kind, custom_metadata, options).await
}

/// Registers a `networkTopologyChange` task with its place in the network and the state
/// it starts from (the change from `old` to `new`); answers the stored task.
pub async fn register_network_change(
    coordinator: &Coordinator,
    network: TaskNetwork,
    old: crate::network::Network,
    new: crate::network::Network,
) -> Result<Task, ResponseError> {
    let options = RegisterOptions {
        network: Some(network),
        network_change: Some(crate::network::topology_change::TopologyChange::new(
            old, new,
        )),
        ..RegisterOptions::default()
    };
    let kind = KindWithContent::NetworkTopologyChange;
    register_with(coordinator, kind, None, options).await
}

/// Registers a task with `options` (replication headers, network); answers the stored task
/// (the task as it would be, unstored, for a dry run).
pub async fn register_with(
    coordinator: &Coordinator,
    kind: KindWithContent,
    custom_metadata: Option<String>,
    options: RegisterOptions,
) -> Result<Task, ResponseError> {
    let request = RegisterTask {
        kind,
        custom_metadata,
        options,
    };
    coordinator.ask(CONTROL_CORE, request).await?
}

/// Registers an import payload of a network change, counted in the active change in the
/// same commit (see [`super::queue_network_change`]); answers the stored task.
pub async fn register_import(
    coordinator: &Coordinator,
    kind: KindWithContent,
    custom_metadata: Option<String>,
    options: RegisterOptions,
    metadata: crate::network::headers::ImportMetadata,
) -> Result<Task, ResponseError> {
    let request = RegisterImport {
        kind,
        custom_metadata,
        options,
        metadata,
    };
    coordinator.ask(CONTROL_CORE, request).await?
}

/// Applies a `/network/control` message to the active network change.
pub async fn receive_network_control(
    coordinator: &Coordinator,
    control: crate::network::control_message::NetworkControl,
) -> Result<(), ResponseError> {
    coordinator
        .ask(CONTROL_CORE, ReceiveNetworkControl(control))
        .await?
}

/// Registers an import payload.
struct RegisterImport {
    kind: KindWithContent,
    custom_metadata: Option<String>,
    options: RegisterOptions,
    metadata: crate::network::headers::ImportMetadata,
}

impl CoreRequest<Coordinator> for RegisterImport {
    type Answer = Result<Task, ResponseError>;

    async fn run(self, _coordinator: &Coordinator) -> Self::Answer {
        let control = ControlSide::local()?;
        let RegisterImport {
            kind,
            custom_metadata,
            options,
            metadata,
        } = self;
        let registered = control
            .write_queue(move |queue| {
                queue.register_import(kind, custom_metadata, options, metadata)
            })
            .await?
            .map_err(queue_error)?;
        // A full channel already holds a wake-up: the scheduler will look at the queue.
        let _ = control.wake.clone().try_send(());
        Ok(registered.task)
    }
}

/// Applies a `/network/control` message.
struct ReceiveNetworkControl(crate::network::control_message::NetworkControl);

impl CoreRequest<Coordinator> for ReceiveNetworkControl {
    type Answer = Result<(), ResponseError>;

    async fn run(self, _coordinator: &Coordinator) -> Self::Answer {
        let control = ControlSide::local()?;
        let message = self.0;
        control
            .write_queue(move |queue| queue.receive_control(&message))
            .await?
            .map_err(queue_error)?;
        let _ = control.wake.clone().try_send(());
        Ok(())
    }
}

/// Sets the `network` of task `uid` on the control core.
pub async fn set_task_network(
    coordinator: &Coordinator,
    uid: TaskUid,
    network: TaskNetwork,
) -> Result<(), ResponseError> {
    coordinator
        .ask(CONTROL_CORE, SetTaskNetwork { uid, network })
        .await?
}

/// Whether the batch being processed works on the index `uid`.
pub async fn is_indexing(coordinator: &Coordinator, uid: &str) -> bool {
    let request = IsIndexing(uid.to_owned());
    matches!(coordinator.ask(CONTROL_CORE, request).await, Ok(true))
}

/// Registers a task.
struct RegisterTask {
    kind: KindWithContent,
    custom_metadata: Option<String>,
    options: RegisterOptions,
}

/// Sets a task's `network`.
struct SetTaskNetwork {
    uid: TaskUid,
    network: TaskNetwork,
}

impl CoreRequest<Coordinator> for SetTaskNetwork {
    type Answer = Result<(), ResponseError>;

    async fn run(self, _coordinator: &Coordinator) -> Self::Answer {
        let control = ControlSide::local()?;
        let SetTaskNetwork { uid, network } = self;
        control
            .write_queue(move |queue| queue.set_task_network(uid, network))
            .await?
            .map_err(queue_error)
    }
}

impl CoreRequest<Coordinator> for RegisterTask {
    type Answer = Result<Task, ResponseError>;

    async fn run(self, _coordinator: &Coordinator) -> Self::Answer {
        let control = ControlSide::local()?;
        let RegisterTask {
            kind,
            custom_metadata,
            options,
        } = self;
        let registered = control
            .write_queue(move |queue| {
                queue.register_with(kind, custom_metadata, OffsetDateTime::now_utc(), options)
            })
            .await?
            .map_err(queue_error)?;
        if let Some(batch_uid) = registered.interrupt_batch {
            let mut processing = control.processing.borrow_mut();
            if let Some((processing_uid, interrupt)) = processing.as_mut()
                && *processing_uid == batch_uid
            {
                *interrupt = true;
            }
        }
        // A full channel already holds a wake-up: the scheduler will look at the queue.
        let _ = control.wake.clone().try_send(());
        Ok(registered.task)
    }
}

/// Whether the batch being processed works on this index.
struct IsIndexing(String);

impl CoreRequest<Coordinator> for IsIndexing {
    type Answer = bool;

    async fn run(self, _coordinator: &Coordinator) -> bool {
        ControlSide::local().is_ok_and(|control| {
            control.processing_index.borrow().as_deref() == Some(self.0.as_str())
        })
    }
}

/// A read of the task queue answered as a JSON object.
#[derive(Debug, Clone)]
pub enum TaskRead {
    ListTasks(TaskQuery),
    Task(u32),
    ListBatches(TaskQuery),
    Batch(u32),
}

/// Reads the task queue on the control core as `visibility` may see it.
pub async fn read_tasks(
    coordinator: &Coordinator,
    read: TaskRead,
    visibility: AuthContext,
) -> Result<Value, ResponseError> {
    let request = ReadTasks { read, visibility };
    coordinator.ask(CONTROL_CORE, request).await?
}

struct ReadTasks {
    read: TaskRead,
    visibility: AuthContext,
}

impl CoreRequest<Coordinator> for ReadTasks {
    type Answer = Result<Value, ResponseError>;

    async fn run(self, _coordinator: &Coordinator) -> Self::Answer {
        let control = ControlSide::local()?;
        let queue = &control.queue;
        let visibility = &self.visibility;
        match self.read {
            TaskRead::ListTasks(query) => queue
                .list_tasks(&query, visibility)
                .map(|page| page.map(|task| super::view::task_view(&task)).to_json())
                .map_err(queue_error),
            TaskRead::ListBatches(query) => queue
                .list_batches(&query, visibility)
                .map(|page| {
                    page.map(|batch| super::view::batch_view(&control.with_progress(batch)))
                        .to_json()
                })
                .map_err(queue_error),
            TaskRead::Task(uid) => match queue.get_task(uid) {
                Ok(Some(task)) if task_visible(&task, visibility) => {
                    Ok(super::view::task_view(&task))
                }
                Ok(_) => Err(ResponseError::task_not_found(uid)),
                Err(error) => Err(queue_error(error)),
            },
            TaskRead::Batch(uid) => match queue.get_visible_batch(uid, visibility) {
                Ok(Some(batch)) => Ok(super::view::batch_view(&control.with_progress(batch))),
                Ok(None) => Err(ResponseError::batch_not_found(uid)),
                Err(error) => Err(queue_error(error)),
            },
        }
    }
}

/// The uids of the tasks a cancelation or deletion query matches, as `visibility` sees them.
pub async fn matching_tasks(
    coordinator: &Coordinator,
    query: TaskQuery,
    visibility: AuthContext,
) -> Result<Vec<u32>, ResponseError> {
    let request = MatchingTasks { query, visibility };
    coordinator.ask(CONTROL_CORE, request).await?
}

struct MatchingTasks {
    query: TaskQuery,
    visibility: AuthContext,
}

impl CoreRequest<Coordinator> for MatchingTasks {
    type Answer = Result<Vec<u32>, ResponseError>;

    async fn run(self, _coordinator: &Coordinator) -> Self::Answer {
        ControlSide::local()?
            .queue
            .matching_task_uids(&self.query, &self.visibility)
            .map_err(queue_error)
    }
}

/// The update file of an enqueued or processing document addition `uid`.
pub async fn task_update_file(
    coordinator: &Coordinator,
    uid: u32,
    visibility: AuthContext,
) -> Result<String, ResponseError> {
    let request = TaskUpdateFile { uid, visibility };
    coordinator.ask(CONTROL_CORE, request).await?
}

struct TaskUpdateFile {
    uid: u32,
    visibility: AuthContext,
}

impl CoreRequest<Coordinator> for TaskUpdateFile {
    type Answer = Result<String, ResponseError>;

    async fn run(self, _coordinator: &Coordinator) -> Self::Answer {
        match ControlSide::local()?.queue.get_task(self.uid) {
            Ok(Some(task)) if task_visible(&task, &self.visibility) => update_file_of(&task),
            Ok(_) => Err(ResponseError::task_not_found(self.uid)),
            Err(error) => Err(queue_error(error)),
        }
    }
}

/// Bytes of the task queue's file that hold no live data.
pub async fn queue_unused_bytes(coordinator: &Coordinator) -> Result<u64, ResponseError> {
    coordinator.ask(CONTROL_CORE, QueueUnusedBytes).await?
}

struct QueueUnusedBytes;

impl CoreRequest<Coordinator> for QueueUnusedBytes {
    type Answer = Result<u64, ResponseError>;

    async fn run(self, _coordinator: &Coordinator) -> Self::Answer {
        Ok(ControlSide::local()?
            .queue
            .database()
            .stats()
            .unused_bytes())
    }
}

/// The update file of `task` while it still has one: a document addition that is
/// enqueued or processing (the file goes once the task is finished).
fn update_file_of(task: &Task) -> Result<String, ResponseError> {
    match &task.kind {
        KindWithContent::DocumentAdditionOrUpdate { content_file, .. }
            if !task.status.is_finished() =>
        {
            Ok(content_file.clone())
        }
        _ => Err(ResponseError::task_file_not_found(task.uid)),
    }
}

/// Whether `GET /tasks/{uid}` shows `task`: as `GET /tasks` would, a key restricted to
/// some indexes sees only the tasks of one of its indexes (never a dump, a swap or a task
/// cancelation, which are about several indexes or none).
fn task_visible(task: &Task, visibility: &AuthContext) -> bool {
    visibility.all_indexes_authorized()
        || (task.kind().related_to_one_index()
            && task
                .indexes()
                .iter()
                .all(|index| visibility.is_index_authorized(index)))
}
