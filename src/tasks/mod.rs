//! The task queue of the control core: the task and batch model, their JSON views, the
//! task filters of the API, the durable queue on the page store and the auto-batching rule
//! (reference §1.6 and §2). Synchronous: the control core drives it.
//!
//! Invariants: a task is acknowledged only after the commit that stores it; task uids and
//! batch uids only grow; finished tasks never change except by deletion.

pub mod autobatch;
pub mod batch;
pub mod model;
pub mod query;
pub mod queue;
pub mod view;

#[cfg(test)]
mod tests;

pub use batch::{Batch, BatchStats, Progress, ProgressStep};
pub use model::{
    BatchUid, Details, DocumentMethod, Kind, KindWithContent, Status, Task, TaskError, TaskUid,
};
pub use query::{Page, TaskQuery};
