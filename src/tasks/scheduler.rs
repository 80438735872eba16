//! The scheduler of the control core: forms the next batch from the waiting tasks with the
//! auto-batching rules, processes it (fanning index work out to the shards' owner cores
//! through the [`Coordinator`]), and finishes it — the tasks' final states and the catalog
//! changes in one commit of the queue's page store.
//!
//! Recovery: a batch a crash interrupted is run again first, with exactly the same tasks and
//! the same batch uid, so that shards which had already committed it skip it (their applied
//! batch uid says so) and the others apply it; the result is the same as one uninterrupted
//! run. A network change it held goes back to the queue, where its state says what runs
//! next.
//!
//! An export runs alone in its batch ([`super::export`]), and so does a dump
//! ([`super::dump`]); like an index batch, a cancelation interrupts them. The snapshot tasks
//! run together in a batch of their own ([`super::snapshot`]), which a cancelation does not
//! interrupt (as in Meilisearch).
//!
//! Invariants: one batch at a time; a task is `succeeded` only after every shard committed
//! its share and every core holds the new catalog; update files are removed only after the
//! batch that used them is finished; a finished batch's tasks go to the webhooks only
//! once recorded, in a detached delivery the next batch does not wait for.

use std::collections::BTreeSet;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures_lite::StreamExt;
use shards::shard::{IDLE_RELEASE_PAGES_MIN, Repack};
use time::OffsetDateTime;

use super::autobatch::{self, AutobatchLimits, BatchPlan, IndexState, NextBatch};
use super::control_side::{ControlSide, queue_error};
use super::dump::{DumpWork, run_dump};
use super::export::{ExportWork, run_export};
use super::index_batch::{BatchWork, IndexBatch};
use super::model::{Details, Kind, KindWithContent, Status, Task, TaskError};
use super::network_change::{
    ChangeStep, NetworkChangeWork, carrying_the_change, next_change_step, run_network_change,
};
use super::queue::TaskQueue;
use super::queue_network_change::ChangeOutcome;
use super::snapshot::{SnapshotWork, run_snapshot};
use super::visibility_target::OverdueWatch;
use crate::coordinator::Coordinator;
use crate::coordinator::catalog::Catalog;
use crate::errors::{Code, ResponseError};
use crate::host::maintenance::{FileSizes, ReleaseFreeSpace};

/// How long the queue stays empty before the idle maintenance (repacking sparse trees,
/// giving free pages back) starts: longer than the gap between two requests of a client
/// sending its documents in many payloads, short enough that disk space comes back soon.
pub const IDLE_MAINTENANCE_DELAY: std::time::Duration = std::time::Duration::from_secs(2);

/// Pause after a batch the queue itself failed to record, before trying again.
pub const FAILED_BATCH_RETRY_DELAY: std::time::Duration = std::time::Duration::from_secs(1);

/// The first progress step of every batch.
const PROGRESS_STARTING: &str = "processing tasks > starting the batch";

/// The scheduler's settings from the configuration.
#[derive(Debug, Clone)]
pub struct SchedulerOptions {
    pub limits: AutobatchLimits,
    /// `--experimental-max-number-of-tasks` equivalent: auto-deletion threshold.
    pub max_number_of_tasks: u64,
    /// The shards of a new index and how it grows.
    pub shard_growth: super::shard_growth::ShardGrowth,
    /// The payload size of an export that gives none: Meilisearch's
    /// max(`--http-payload-size-limit` − 1 MiB, 20 MiB).
    pub export_payload_bytes_default: u64,
    /// `--dump-dir`.
    pub dump_directory: std::path::PathBuf,
    /// `--snapshot-dir`.
    pub snapshot_directory: std::path::PathBuf,
    /// Whether snapshots compact the page stores (not `--experimental-no-snapshot-compaction`).
    pub snapshot_compaction: bool,
    /// The data directory.
    pub data_directory: std::path::PathBuf,
}

/// The scheduler loop of the control core.
pub struct Scheduler {
    coordinator: Rc<Coordinator>,
    /// The control core's side of the queue, which the scheduler drives.
    control: Rc<ControlSide>,
    /// The control plane of the control core, whose webhooks hear of every finished batch.
    control_plane: Rc<crate::control::ControlPlane>,
    queue: Arc<TaskQueue>,
    wake: futures_channel::mpsc::Receiver<()>,
    options: SchedulerOptions,
    /// Indexes a batch wrote since the queue was last empty: their shard files give their
    /// free pages' disk blocks back when it is (see [`Scheduler::release_free_space`]).
    written: BTreeSet<String>,
    /// The batch of a network change that did not finish it, shown `processing` until the
    /// next batch starts and takes its uid (see [`Scheduler::record_change_batch`]).
    held_batch: Option<u32>,
}

/// How a processed batch ends.
pub enum BatchEnd {
    /// Store these final task states and this catalog.
    Finished {
        tasks: Vec<Task>,
        catalog: Option<Catalog>,
        /// Index storages whose shard files go once the batch is recorded.
        removed_storages: Vec<crate::coordinator::catalog::ShardSet>,
    },
    /// A batch of a network change ended: its task and how far the change went.
    NetworkChange {
        task: Box<Task>,
        outcome: ChangeOutcome,
    },
    /// A cancelation interrupted the batch: its tasks go back to the queue.
    Interrupted,
}

impl Scheduler {
    pub fn new(
        coordinator: Rc<Coordinator>,
        control: Rc<ControlSide>,
        control_plane: Rc<crate::control::ControlPlane>,
        wake: futures_channel::mpsc::Receiver<()>,
        options: SchedulerOptions,
    ) -> Scheduler {
        let queue = control.queue.clone();
        Scheduler {
            coordinator,
            control,
            control_plane,
            queue,
            wake,
            options,
            written: Default::default(),
            held_batch: None,
        }
    }

    /// Runs until the wake channel closes (shutdown).
    pub async fn run(mut self, interrupted: Vec<Task>) {
        self.resume_network_change().await;
        // Runs beside the scheduler, in its latency class, until the core stops.
        crate::runtime::latency::spawn_detached(
            crate::runtime::latency::LatencyClass::Indexing,
            super::network_change::driver::drive(self.control.clone()),
        );
        if !interrupted.is_empty()
            && let Err(error) = self.rerun_interrupted(interrupted).await
        {
            tracing::error!(%error, "could not run the interrupted batch again");
        }
        loop {
            loop {
                match self.run_next_batch(None).await {
                    Ok(true) => {}
                    Ok(false) => break,
                    Err(error) => {
                        tracing::error!(%error, "a batch could not be recorded");
                        crate::runtime::sleep(FAILED_BATCH_RETRY_DELAY).await;
                    }
                }
            }
            match self.release_free_space().await {
                IdleEnd::Finished => {}
                IdleEnd::Woken => continue,
                IdleEnd::Closed => return,
            }
            if self.wake.next().await.is_none() {
                return;
            }
        }
    }

    /// After a restart with a network change active: a leader holds users' writes from the
    /// start (the change's driver lowers the hold once every instance sent its documents,
    /// see [`crate::network::write_hold`]), and searches use the network the change says.
    async fn resume_network_change(&self) {
        let active = match self.queue.active_network_change() {
            Ok(active) => active,
            Err(error) => {
                tracing::error!(%error, "could not read the active network change");
                return;
            }
        };
        let Some((task, state)) = active else {
            return;
        };
        if super::network_change::is_leaders_change(&task) {
            crate::network::write_hold::set_held(true);
        }
        if let Some(state) = state {
            self.show_change_to_searches(Some(&state)).await;
        }
    }

    /// The network an index batch's documents are kept under: the one before the running
    /// network change until this instance exported for it, the current one otherwise.
    ///
    /// Why: the writes registered before a change run before its export, and the export
    /// sends each document this instance holds under the old network to its new owners. A
    /// write planned under the new network instead dropped the documents whose shard moved
    /// away from this instance, which the export then could not send (found by the
    /// fault-injection suite: a write the leader registered between storing the new network
    /// and registering the change was kept by the leader under the new network and by the
    /// followers under the old). Writes after the export (the imports, the writes held
    /// until then) run under the new network.
    async fn network_for_writes(&self) -> Arc<crate::network::Network> {
        let queue = self.queue.clone();
        let active = crate::runtime::blocking::run(move || queue.active_network_change()).await;
        match active {
            Ok(Some((_, Some(change))))
                if change.phase
                    < crate::network::topology_change::ChangePhase::ImportingDocuments =>
            {
                Arc::new(change.old)
            }
            Ok(Some((_, Some(_)))) | Err(_) => self.control_plane.network(),
            // Stored and not registered yet, or registered and not started: before its export.
            Ok(None | Some((_, None))) => self.control_plane.network_before_registered_change(),
        }
    }

    /// Tells every core which network searches use while `change` runs (`None`: no change).
    async fn show_change_to_searches(
        &self,
        change: Option<&crate::network::topology_change::TopologyChange>,
    ) {
        let view = change.map(|change| {
            crate::control::network_changes::NetworkChangeView::new(
                &change.old,
                &change.new,
                !change.searches_use_new_shards(),
            )
        });
        if let Err(error) = self.control_plane.set_network_change_view(view).await {
            tracing::warn!(%error, "could not tell every core which network searches use");
        }
    }

    /// Once the queue has been empty for [`IDLE_MAINTENANCE_DELAY`], rewrites the sparse trees of the indexes written since with
    /// leaves 90 % full ([`Repack::Sparse`]) and gives the disk blocks of their free pages
    /// back to the file system: after a batch, copy-on-write leaves the pages it replaced
    /// free, often a third of a shard file, and the split leaves of the word trees settle
    /// two-thirds full. A task arriving meanwhile interrupts the work (the indexes it did not
    /// finish wait for the next idle moment). A failure only costs disk space, so it is
    /// logged and the scheduler goes on.
    async fn release_free_space(&mut self) -> IdleEnd {
        if self.written.is_empty() {
            return IdleEnd::Finished;
        }
        // A client sending its documents in many requests leaves the queue empty between
        // two of them: wait a little before starting work that the next one would interrupt.
        let quiet = futures_lite::future::or(
            async {
                crate::runtime::sleep(IDLE_MAINTENANCE_DELAY).await;
                None
            },
            async { Some(self.wake.next().await) },
        )
        .await;
        match quiet {
            None => {}
            Some(Some(())) => return IdleEnd::Woken,
            Some(None) => return IdleEnd::Closed,
        }
        let uids = std::mem::take(&mut self.written);
        let interrupt = Arc::new(AtomicBool::new(false));
        let mut release = std::pin::pin!(release_indexes(&self.coordinator, &uids, &interrupt));
        let woken = futures_lite::future::or(
            async {
                (&mut release).await;
                None
            },
            async { Some(self.wake.next().await) },
        )
        .await;
        let Some(message) = woken else {
            return IdleEnd::Finished;
        };
        interrupt.store(true, Ordering::Relaxed);
        release.await;
        self.written.extend(uids.iter().cloned());
        match message {
            Some(()) => IdleEnd::Woken,
            None => IdleEnd::Closed,
        }
    }

    /// Runs a write on the queue after the writes before it (see
    /// [`ControlSide::write_queue`]).
    async fn write<Output: Send + 'static>(
        &self,
        work: impl FnOnce(&TaskQueue) -> super::queue::QueueResult<Output> + Send + 'static,
    ) -> Result<Output, ResponseError> {
        self.control.write_queue(work).await?.map_err(queue_error)
    }

    /// Runs the batch a crash interrupted again, with the same tasks (see the module doc).
    async fn rerun_interrupted(&mut self, interrupted: Vec<Task>) -> Result<(), ResponseError> {
        // A network change goes back to the queue: its stored state says what it does next
        // (a batch that ran it again blindly could skip a step it must wait for).
        let interrupted: Vec<Task> = interrupted
            .into_iter()
            .filter(|task| task.kind() != Kind::NetworkTopologyChange)
            .collect();
        if interrupted.is_empty() {
            return Ok(());
        }
        let uids: Vec<u32> = interrupted.iter().map(|task| task.uid).collect();
        tracing::info!(tasks = ?uids, "running the batch a crash interrupted again");
        let mut tasks = interrupted;
        for task in &mut tasks {
            task.status = Status::Enqueued;
        }
        self.run_next_batch(Some(tasks)).await.map(|_| ())
    }

    /// Forms, processes and records the next batch; false when nothing waits.
    async fn run_next_batch(&mut self, only: Option<Vec<Task>>) -> Result<bool, ResponseError> {
        let max_tasks = self.options.max_number_of_tasks;
        self.write(move |queue| {
            queue.register_cleanup_if_needed(max_tasks, OffsetDateTime::now_utc())
        })
        .await?;
        let only_interrupted = only.is_some();
        let waiting = match only {
            Some(tasks) => tasks,
            None => {
                let queue = self.queue.clone();
                crate::runtime::blocking::run(move || queue.waiting_tasks())
                    .await
                    .map_err(queue_error)?
            }
        };
        let catalog = self.coordinator.catalog();
        let references: Vec<&Task> = waiting.iter().collect();
        let index_state = |uid: &str| match catalog.get(uid) {
            Some(record) => IndexState::Exists {
                primary_key: record.primary_key.clone(),
            },
            None => IndexState::Missing,
        };
        let in_change = match only_interrupted {
            true => Planned::Autobatch,
            false => {
                self.next_in_network_change(&references, &index_state)
                    .await?
            }
        };
        let next = match in_change {
            Planned::Batch(next) => Some(next),
            Planned::Wait => None,
            Planned::Autobatch => {
                autobatch::next_batch(&references, index_state, self.options.limits)
            }
        };
        let Some(next) = next else {
            return Ok(false);
        };
        let settled = leaves_nothing_waiting(&next, &waiting);
        // Each batch is the root of a trace: its shard commands, embedder calls, forwarded
        // writes and webhook deliveries are its descendants.
        let mut span = crate::traces::Span::root("task batch");
        if span.is_recording() {
            span.set_attribute("coresearch.batch.tasks", next.task_uids.len() as i64);
        }
        let context = span.context();
        // Boxed: the batch's future is large, and wrapping it by value deepens the core's stack.
        let outcome = crate::traces::within(context, Box::pin(self.run_batch(next, settled))).await;
        if outcome.is_err() {
            span.set_error();
        }
        outcome?;
        Ok(true)
    }

    /// What runs next while a network change is active (see
    /// [`super::network_change::next_change_step`]); cancelations and upgrades first.
    async fn next_in_network_change(
        &self,
        waiting: &[&Task],
        index_state: &impl Fn(&str) -> IndexState,
    ) -> Result<Planned, ResponseError> {
        if let Some(first) = autobatch::next_priority_batch(waiting) {
            return Ok(Planned::Batch(first));
        }
        let queue = self.queue.clone();
        let active = crate::runtime::blocking::run(move || queue.active_network_change())
            .await
            .map_err(queue_error)?;
        let Some((change_task, state)) = active else {
            return Ok(Planned::Autobatch);
        };
        let change_batch = || {
            let reason = autobatch::StopReason::NetworkTask {
                id: change_task.uid,
            };
            Planned::Batch(NextBatch::global(vec![change_task.uid], reason))
        };
        let Some(state) = state else {
            return Ok(change_batch());
        };
        let allowed = super::network_change::driver::deletion_allowed(change_task.uid);
        Ok(
            match next_change_step(&change_task, &state, waiting, allowed) {
                ChangeStep::Change => change_batch(),
                ChangeStep::Wait => Planned::Wait,
                ChangeStep::Rules(uids) => {
                    let next =
                        NextBatch::global(uids, autobatch::StopReason::ExhaustedEnqueuedTasks);
                    Planned::Batch(carrying_the_change(next, change_task.uid, state.phase))
                }
                ChangeStep::Index(candidates) => {
                    match autobatch::next_index_batch(&candidates, index_state, self.options.limits)
                    {
                        Some(next) => {
                            Planned::Batch(carrying_the_change(next, change_task.uid, state.phase))
                        }
                        None => Planned::Wait,
                    }
                }
            },
        )
    }

    /// Processes `next`; `settled` when no other task waited for its index as it was formed.
    async fn run_batch(&mut self, next: NextBatch, settled: bool) -> Result<(), ResponseError> {
        let mut task_uids = next.task_uids.clone();
        task_uids.extend(next.network_change);
        task_uids.sort_unstable();
        let strategy = next.strategy();
        // The held batch of a network change was never finished: the next one takes its uid.
        let reuse = next.reuse_batch_uid.or(self.held_batch.take());
        let started_uids = task_uids.clone();
        let (mut batch, tasks) = self
            .write(move |queue| {
                queue.start_batch(&started_uids, reuse, strategy, OffsetDateTime::now_utc())
            })
            .await?;
        let (carried, tasks): (Vec<Task>, Vec<Task>) = tasks
            .into_iter()
            .partition(|task| Some(task.uid) == next.network_change);
        let control = self.control.clone();
        *control.processing.borrow_mut() = Some((batch.uid, false));
        *control.processing_index.borrow_mut() = match &next.plan {
            BatchPlan::Index { index_uid, .. } => {
                self.written.insert(index_uid.clone());
                Some(index_uid.clone())
            }
            BatchPlan::Global => None,
        };
        tracing::info!(batch = batch.uid, tasks = ?task_uids, "batch started");
        control.set_progress(PROGRESS_STARTING, 0, 1);
        // A cancelation registered while this batch was being formed could not interrupt it
        // yet: it is in the queue, and the batch stops before doing any work.
        let interruptible = matches!(next.plan, BatchPlan::Index { .. })
            || tasks.iter().any(|task| {
                matches!(
                    task.kind.kind(),
                    Kind::Export | Kind::DumpCreation | Kind::NetworkTopologyChange
                )
            });
        let canceled_at_start = interruptible && self.cancelation_waits_for(&task_uids).await;
        // Until the batch ends: an index batch past the visibility target stops pacing.
        let overdue_watch = matches!(next.plan, BatchPlan::Index { .. })
            .then(|| OverdueWatch::for_batch(control.write_visibility_target, &tasks))
            .flatten();
        let end = if canceled_at_start {
            BatchEnd::Interrupted
        } else {
            self.process(&next, batch.uid, tasks, settled).await
        };
        drop(overdue_watch);
        batch.stats.progress_trace = control.take_trace();
        let progress = control.progress.borrow_mut().take();
        *control.processing.borrow_mut() = None;
        *control.processing_index.borrow_mut() = None;
        self.record_end(batch, end, carried, progress).await
    }

    /// Records how the batch `batch` ended; `carried` is the network change it carried
    /// (enqueued again with the batch's final states), `progress` where it was last.
    async fn record_end(
        &mut self,
        batch: super::batch::Batch,
        end: BatchEnd,
        carried: Vec<Task>,
        progress: Option<super::batch::Progress>,
    ) -> Result<(), ResponseError> {
        match end {
            BatchEnd::Interrupted => {
                let uid = batch.uid;
                self.write(move |queue| queue.abort_batch(uid)).await?;
                tracing::info!(batch = uid, "batch interrupted by a cancelation");
                Ok(())
            }
            BatchEnd::Finished {
                mut tasks,
                catalog,
                removed_storages,
            } => {
                tasks.extend(carried.into_iter().map(|mut change| {
                    change.status = Status::Enqueued;
                    change
                }));
                self.record_finished(batch, tasks, catalog, removed_storages)
                    .await
            }
            BatchEnd::NetworkChange { task, outcome } => {
                self.record_change_batch(batch, *task, outcome, progress)
                    .await
            }
        }
    }

    /// Records a batch of a network change (its progress joins the stored state), and
    /// tells every core which network searches now use. A batch that did not finish the
    /// change is held: it and its task stay `processing` (with `progress`, where it was
    /// last) until the next batch starts, as Meilisearch 1.41 holds such a batch in memory.
    async fn record_change_batch(
        &mut self,
        mut batch: super::batch::Batch,
        task: Task,
        outcome: ChangeOutcome,
        progress: Option<super::batch::Progress>,
    ) -> Result<(), ResponseError> {
        let finished_at = OffsetDateTime::now_utc();
        let (batch, task) = self
            .write(move |queue| {
                queue
                    .finish_change_batch(&mut batch, task, outcome, finished_at)
                    .map(|task| (batch, task))
            })
            .await?;
        tracing::info!(batch = batch.uid, phase = ?outcome.phase, "network change batch finished");
        if task.status.is_finished() {
            let tasks = [task];
            self.forget_ended_changes(&tasks).await;
            super::webhook_delivery::notify(self.control_plane.webhooks(), &tasks);
            return Ok(());
        }
        self.held_batch = Some(batch.uid);
        *self.control.processing.borrow_mut() = Some((batch.uid, false));
        *self.control.progress.borrow_mut() = progress;
        let queue = self.queue.clone();
        let uid = task.uid;
        let state = crate::runtime::blocking::run(move || queue.network_change(uid))
            .await
            .map_err(queue_error)?;
        if let Some(state) = state {
            self.show_change_to_searches(Some(&state)).await;
        }
        Ok(())
    }

    /// Publishes the batch's catalog, records the batch and its tasks' final states, tells
    /// the webhooks (detached) and removes the files the batch no longer needs.
    async fn record_finished(
        &mut self,
        mut batch: super::batch::Batch,
        mut tasks: Vec<Task>,
        catalog: Option<Catalog>,
        removed_storages: Vec<crate::coordinator::catalog::ShardSet>,
    ) -> Result<(), ResponseError> {
        let before = self.coordinator.catalog();
        if let Some(catalog) = &catalog {
            self.coordinator
                .publish_catalog(Arc::new(catalog.clone()))
                .await?;
        }
        let finished_at = OffsetDateTime::now_utc();
        let (batch, tasks) = self
            .write(move |queue| {
                let outcome =
                    queue.finish_batch_with(&mut batch, &mut tasks, finished_at, |write| {
                        match &catalog {
                            Some(catalog) => {
                                super::catalog_store::store_catalog_changes(catalog, &before, write)
                            }
                            None => Ok(()),
                        }
                    });
                outcome.map(|()| (batch, tasks))
            })
            .await?;
        tracing::info!(batch = batch.uid, "batch finished");
        super::control_side::observe_write_visibility(
            &mut self.control.write_visibility.borrow_mut(),
            &tasks,
        );
        super::webhook_delivery::notify(self.control_plane.webhooks(), &tasks);
        self.forget_ended_changes(&tasks).await;
        self.clean_up(&tasks, removed_storages).await;
        Ok(())
    }

    /// After a network change ended (succeeded, failed or canceled): the leader's hold on
    /// writes is lowered and searches use the current network, which nothing else would do.
    async fn forget_ended_changes(&self, tasks: &[Task]) {
        let mut ended = false;
        for task in tasks
            .iter()
            .filter(|task| task.kind() == Kind::NetworkTopologyChange && task.status.is_finished())
        {
            ended = true;
            if super::network_change::is_leaders_change(task) {
                crate::network::write_hold::set_held(false);
            }
        }
        if ended {
            self.show_change_to_searches(None).await;
        }
    }

    /// Whether an enqueued cancelation matched one of `task_uids` (a read error counts as
    /// no: the batch then runs, and a cancelation still takes effect after it).
    async fn cancelation_waits_for(&self, task_uids: &[u32]) -> bool {
        let queue = self.queue.clone();
        let task_uids = task_uids.to_vec();
        match crate::runtime::blocking::run(move || queue.cancelation_waits_for(&task_uids)).await {
            Ok(waits) => waits,
            Err(error) => {
                tracing::warn!(%error, "could not look for a cancelation of the new batch");
                false
            }
        }
    }

    /// Removes the update files of finished tasks and the shard files of deleted indexes.
    async fn clean_up(
        &self,
        tasks: &[Task],
        removed_storages: Vec<crate::coordinator::catalog::ShardSet>,
    ) {
        let files = self.control.update_files.clone();
        let names: Vec<String> = tasks
            .iter()
            .filter_map(|task| match &task.kind {
                KindWithContent::DocumentAdditionOrUpdate { content_file, .. } => {
                    assert!(
                        task.status.is_finished(),
                        "the update file of task {} goes only once the task is finished",
                        task.uid
                    );
                    Some(content_file.clone())
                }
                _ => None,
            })
            .collect();
        crate::runtime::blocking::run(move || {
            for name in names {
                if let Err(error) = files.remove(&name) {
                    tracing::warn!(%error, name, "could not remove an update file");
                }
            }
        })
        .await;
        for set in removed_storages {
            super::index_batch::remove_index_files(&self.coordinator, &set).await;
        }
    }

    async fn process(
        &mut self,
        next: &NextBatch,
        batch_uid: u32,
        tasks: Vec<Task>,
        settled: bool,
    ) -> BatchEnd {
        match &next.plan {
            BatchPlan::Global
                if tasks
                    .iter()
                    .all(|task| task.kind.kind() == Kind::SnapshotCreation) =>
            {
                self.process_snapshot(tasks, batch_uid).await
            }
            BatchPlan::Global
                if tasks
                    .iter()
                    .all(|task| matches!(task.kind.kind(), Kind::DsrUpdate | Kind::DsrClear)) =>
            {
                super::dynamic_search_rules::process_rule_changes(&self.control_plane, tasks).await
            }
            BatchPlan::Global => match alone_in_batch(tasks) {
                Ok(task) if task.kind.kind() == Kind::Export => self.process_export(task).await,
                Ok(task) if task.kind.kind() == Kind::DumpCreation => {
                    self.process_dump(task, batch_uid).await
                }
                Ok(task) if task.kind.kind() == Kind::NetworkTopologyChange => {
                    self.process_network_change(task, batch_uid).await
                }
                Ok(task) => self.process_global(vec![task]).await,
                Err(tasks) => self.process_global(tasks).await,
            },
            BatchPlan::Index {
                index_uid,
                kind,
                must_create_index,
            } => {
                let network = self.network_for_writes().await;
                let work = BatchWork {
                    coordinator: self.coordinator.clone(),
                    control: self.control.clone(),
                    batch_uid,
                    shard_growth: self.options.shard_growth,
                    settled,
                    network,
                };
                let batch = IndexBatch {
                    index_uid: index_uid.clone(),
                    kind: kind.clone(),
                    must_create_index: *must_create_index,
                    tasks,
                };
                work.run(batch).await
            }
        }
    }

    async fn process_global(&mut self, tasks: Vec<Task>) -> BatchEnd {
        let mut finished = Vec::with_capacity(tasks.len());
        for task in tasks {
            match &task.kind {
                KindWithContent::TaskCancelation { tasks: matched, .. } => {
                    let outcome = self.cancel(task.uid, matched.clone()).await;
                    match outcome {
                        Ok(canceled) => {
                            let count = canceled.len() as u64;
                            finished.extend(canceled);
                            finished.push(succeeded_with(task, |details| {
                                if let Details::TaskCancelation { canceled_tasks, .. } = details {
                                    *canceled_tasks = Some(count);
                                }
                            }));
                        }
                        Err(error) => finished.push(failed(task, error)),
                    }
                }
                KindWithContent::TaskDeletion { tasks: matched, .. } => {
                    let matched = matched.clone();
                    finished.push(self.delete_tasks(task, matched).await);
                }
                KindWithContent::IndexCompaction { index_uid } => {
                    let index_uid = index_uid.clone();
                    finished.push(self.compact_index(task, &index_uid).await);
                }
                // A swap of no index names no index, so it runs here: it swaps nothing and
                // succeeds, as Meilisearch's does.
                KindWithContent::IndexSwap { swaps } if swaps.is_empty() => {
                    finished.push(succeeded_with(task, |_| {}));
                }
                other => {
                    let error = unsupported(other);
                    finished.push(failed(task, error));
                }
            }
        }
        BatchEnd::Finished {
            tasks: finished,
            catalog: None,
            removed_storages: Vec::new(),
        }
    }

    /// Runs an export (alone in its batch, see [`super::export`]).
    async fn process_export(&mut self, task: Task) -> BatchEnd {
        let features = self.control_plane.features();
        let work = ExportWork {
            coordinator: self.coordinator.clone(),
            control: self.control.clone(),
            show_chat: features.chat_completions,
            show_foreign_keys: features.foreign_keys,
            default_payload_bytes: self.options.export_payload_bytes_default,
        };
        run_export(&work, task).await
    }

    /// Runs a batch of a network change (alone in its batch, see
    /// [`super::network_change`]).
    async fn process_network_change(&mut self, task: Task, batch_uid: u32) -> BatchEnd {
        let work = NetworkChangeWork {
            coordinator: self.coordinator.clone(),
            control: self.control.clone(),
            control_plane: self.control_plane.clone(),
            payload_bytes_max: self.options.export_payload_bytes_default,
            batch_uid,
        };
        let queue = self.queue.clone();
        let uid = task.uid;
        match crate::runtime::blocking::run(move || queue.network_change(uid)).await {
            Ok(state) => run_network_change(&work, task, state).await,
            Err(error) => BatchEnd::Finished {
                tasks: vec![failed(task, queue_error(error))],
                catalog: None,
                removed_storages: Vec::new(),
            },
        }
    }

    /// Runs a dump (alone in its batch, see [`super::dump`]).
    async fn process_dump(&mut self, task: Task, batch_uid: u32) -> BatchEnd {
        let work = DumpWork {
            coordinator: self.coordinator.clone(),
            control: self.control.clone(),
            control_plane: self.control_plane.clone(),
            dump_directory: self.options.dump_directory.clone(),
            data_directory: self.options.data_directory.clone(),
            batch_uid,
        };
        run_dump(&work, task).await
    }

    /// Runs the snapshot tasks of a batch (see [`super::snapshot`]).
    async fn process_snapshot(&mut self, tasks: Vec<Task>, batch_uid: u32) -> BatchEnd {
        let work = SnapshotWork {
            coordinator: self.coordinator.clone(),
            control: self.control.clone(),
            snapshot_directory: self.options.snapshot_directory.clone(),
            data_directory: self.options.data_directory.clone(),
            compaction: self.options.snapshot_compaction,
            batch_uid,
        };
        run_snapshot(&work, tasks).await
    }

    /// Runs a task deletion: deletes the tasks it matched and counts them in its details.
    async fn delete_tasks(&self, task: Task, matched: Vec<u32>) -> Task {
        let outcome = self
            .write(move |queue| queue.delete_matched(&matched))
            .await;
        match outcome {
            Ok(deleted) => {
                let count = deleted.len() as u64;
                succeeded_with(task, |details| {
                    if let Details::TaskDeletion { deleted_tasks, .. } = details {
                        *deleted_tasks = Some(count);
                    }
                })
            }
            Err(error) => failed(task, error),
        }
    }

    /// Runs an index compaction: rewrites every tree in full pages, then gives back the
    /// blocks of every free page, however few (pages a running search still reads go back
    /// at a later release); the details get the sizes before and after.
    async fn compact_index(&self, task: Task, index_uid: &str) -> Task {
        let never = Arc::new(AtomicBool::new(false));
        match release_index_space(&self.coordinator, index_uid, 0, Repack::Everything, &never).await
        {
            Ok((before, after)) => succeeded_with(task, |details| {
                if let Details::IndexCompaction {
                    pre_compaction_size,
                    post_compaction_size,
                } = details
                {
                    *pre_compaction_size = Some(before);
                    *post_compaction_size = Some(after);
                }
            }),
            Err(error) => failed(task, error),
        }
    }

    async fn cancel(&self, cancel_uid: u32, matched: Vec<u32>) -> Result<Vec<Task>, ResponseError> {
        let queue = self.queue.clone();
        let canceled =
            crate::runtime::blocking::run(move || queue.cancel_matched(cancel_uid, &matched))
                .await
                .map_err(queue_error)?;
        // A canceled change is forgotten when the cancelation's batch is recorded.
        Ok(canceled)
    }
}

/// The task of a batch holding only one (the autobatcher puts an export or a dump alone in
/// its batch); the tasks back otherwise.
/// Whether no task of `waiting` outside `next` is for `next`'s index: the batch's commit is
/// then the one searches will read for a while, worth warming even if none ran lately (see
/// `host::warming`).
fn leaves_nothing_waiting(next: &NextBatch, waiting: &[Task]) -> bool {
    let BatchPlan::Index { index_uid, .. } = &next.plan else {
        return false;
    };
    !waiting.iter().any(|task| {
        task.index_uid() == Some(index_uid.as_str()) && !next.task_uids.contains(&task.uid)
    })
}

fn alone_in_batch(mut tasks: Vec<Task>) -> Result<Task, Vec<Task>> {
    let alone = tasks.len() == 1;
    match tasks.pop() {
        Some(task) if alone => Ok(task),
        Some(task) => {
            tasks.push(task);
            Err(tasks)
        }
        None => Err(tasks),
    }
}

/// The error of a task whose type coresearch does not process yet.
pub fn unsupported(kind: &KindWithContent) -> ResponseError {
    ResponseError::new(
        Code::Internal,
        format!(
            "coresearch cannot process `{}` tasks yet.",
            kind.kind().name()
        ),
    )
}

/// `task` succeeded; `change` fills its counters.
pub fn succeeded_with(mut task: Task, change: impl FnOnce(&mut Details)) -> Task {
    task.status = Status::Succeeded;
    task.error = None;
    if let Some(details) = task.details.as_mut() {
        change(details);
    }
    task
}

/// `task` failed with `error`; its counters become 0.
pub fn failed(mut task: Task, error: ResponseError) -> Task {
    task.status = Status::Failed;
    task.details = task.details.as_ref().map(Details::to_failed);
    task.error = Some(TaskError(error));
    task
}

/// Gives back the disk blocks of the free pages of every shard file of index
/// `index_uid`, after rewriting the trees `repack` selects in full pages (see
/// [`ReleaseFreeSpace`]); answers the bytes of blocks the files held before
/// and after.
async fn release_index_space(
    coordinator: &Rc<Coordinator>,
    index_uid: &str,
    minimum_pages: u64,
    repack: Repack,
    interrupt: &Arc<AtomicBool>,
) -> Result<(u64, u64), ResponseError> {
    let catalog = coordinator.catalog();
    let record = catalog
        .get(index_uid)
        .ok_or_else(|| ResponseError::index_not_found(index_uid))?;
    let mut sizes = (0, 0);
    for answer in coordinator
        .ask_every_shard(&record.shard_set(), |_| ReleaseFreeSpace {
            minimum_pages,
            repack,
            interrupt: Arc::clone(interrupt),
        })
        .await
    {
        let FileSizes { before, after } = answer?;
        sizes.0 += before;
        sizes.1 += after;
    }
    Ok(sizes)
}

/// What the scheduler runs next while a network change may be active.
enum Planned {
    Batch(NextBatch),
    /// Nothing until something arrives.
    Wait,
    /// No change is active: the auto-batcher decides.
    Autobatch,
}

/// How the idle work after the queue emptied ended.
enum IdleEnd {
    /// It finished: wait for the next task.
    Finished,
    /// A task arrived (and interrupted it): run the queue.
    Woken,
    /// The wake channel closed: shut down.
    Closed,
}

/// The idle work over the indexes `uids`: their sparse trees repacked, their free pages'
/// blocks given back, until `interrupt` is set. Failures are logged.
async fn release_indexes(
    coordinator: &Rc<Coordinator>,
    uids: &BTreeSet<String>,
    interrupt: &Arc<AtomicBool>,
) {
    for uid in uids {
        if interrupt.load(Ordering::Relaxed) {
            return;
        }
        match release_index_space(
            coordinator,
            uid,
            IDLE_RELEASE_PAGES_MIN,
            Repack::Sparse,
            interrupt,
        )
        .await
        {
            Ok((before, after)) if before > after => tracing::debug!(
                index = uid,
                released = before - after,
                "free pages given back to the file system"
            ),
            Ok(_) => {}
            // Deleted since it was written: its files are gone.
            Err(error) if error.code == Code::IndexNotFound => {}
            Err(error) => tracing::warn!(index = uid, %error, "could not release free pages"),
        }
    }
}
