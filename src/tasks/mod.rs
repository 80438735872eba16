//! The task queue of the control core: the task and batch model, their JSON views, the
//! task filters of the API, the durable queue on the page store and the auto-batching rule
//! (reference §1.6 and §2). Synchronous: the control core drives it.
//!
//! How the control core drives it:
//! - a route decodes its query with [`query::decode_list_query`] or
//!   [`query::decode_deletion_or_cancelation_query`], registers with
//!   [`queue::TaskQueue::register`] (committed on return) and answers
//!   [`view::summarized_task`]; a cancelation's [`queue::Registered::interrupt_batch`] names
//!   the processing batch to stop, whose tasks [`queue::TaskQueue::abort_batch`] requeues;
//! - the scheduler loops: [`queue::TaskQueue::waiting_tasks`] →
//!   [`autobatch::next_batch`] → [`queue::TaskQueue::start_batch`] → process →
//!   [`queue::TaskQueue::finish_batch`] with the tasks' final states (a cancelation adds
//!   [`queue::TaskQueue::cancel_matched`]'s tasks; a deletion first calls
//!   [`queue::TaskQueue::delete_matched`]);
//! - at start, [`queue::TaskQueue::interrupted_at_open`] lists what a crash interrupted and
//!   [`queue::TaskQueue::requeue_interrupted`] puts it back in the queue;
//! - `GET /tasks` and `GET /batches` answer [`queue::TaskQueue::list_tasks`] /
//!   [`queue::TaskQueue::list_batches`] pages mapped through [`view::task_view`] /
//!   [`view::batch_view`] and [`query::Page::to_json`].
//!
//! An index batch is processed by [`index_batch`], one file per task family (index
//! creation/update/deletion, documents, document edition, settings, swap) around the shared
//! dispatch and two-phase commit of `index_batch/mod.rs`. A new task kind (dump, snapshot,
//! export, network topology change, …) goes in its own file under `src/tasks/index_batch/`
//! when it acts on one index, or in its own file under `src/tasks/` otherwise, with a `//!`
//! doc saying what it does and its invariants; `mod.rs` only dispatches to it. The `export`
//! task is [`export`] (its shard side is `crate::host::export`); the `dumpCreation` task is
//! [`dump`] and the `snapshotCreation` task [`snapshot`] (with its `--schedule-snapshot`
//! loop).
//!
//! Invariants: a task is acknowledged only after the commit that stores it; task uids only
//! grow; a batch uid is given again only after its batch was aborted (as Meilisearch);
//! finished tasks never change except by deletion.

pub mod autobatch;
pub mod batch;
pub mod batch_documents;
pub mod catalog_store;
pub mod control_side;
pub mod dump;
pub mod dynamic_search_rules;
pub mod export;
pub mod index_batch;
pub mod model;
pub mod network_change;
pub mod owners;
pub mod payload_ids;
pub mod query;
pub mod queue;
pub mod queue_compaction;
pub mod queue_copy;
pub mod queue_figures;
pub mod queue_history;
pub mod queue_network_change;
pub mod queue_swapped_history;
pub mod scheduler;
pub mod shard_growth;
pub mod snapshot;
pub mod storage_sweep;
pub mod task_documents;
pub mod update_file_sink;
pub mod update_files;
pub mod view;
pub mod visibility_target;
pub mod webhook_delivery;

#[cfg(test)]
#[allow(clippy::too_many_lines)] // scenario tests; the length rule is for product code
mod tests;

pub use batch::{Batch, BatchStats, Progress, ProgressStep};
pub use model::{
    BatchUid, Details, DocumentMethod, Kind, KindWithContent, Status, Task, TaskError, TaskUid,
};
pub use query::{Page, TaskAction, TaskQuery};
