//! The `networkTopologyChange` task: every instance of a sharded network (the leader and
//! each follower) registers one when the leader changes the network, and runs it in the
//! phases of [`crate::network::topology_change`], as Meilisearch Enterprise 1.41 does and
//! speaking its protocol, so instances of either kind change the network together:
//!
//! 1. the tasks registered before the change run first, as ordinary batches
//!    ([`batching`]);
//! 2. a batch of the change exports: every shard sends its documents to their new owners
//!    as import payloads ([`export`]);
//! 3. the imports the others sent (and the writes registered after the change) run as
//!    ordinary batches, each counted in the change as it finishes
//!    (`TaskQueue::record_processed_imports`); a batch of the change then notes that every
//!    sender is finished;
//! 4. [`driver`] tells every instance that this one finished importing, until every
//!    instance of the new network told this one the same: a batch of the change then
//!    switches searches to the new shards;
//! 5. once every other instance switched too, a last batch deletes the documents this
//!    instance no longer keeps ([`deletion`]) and the task succeeds.
//!
//! Its state is kept in the queue beside the task. As in Meilisearch 1.41, the batches of
//! steps 1 and 3 carry the change task, which is `enqueued` again once they end (no start
//! date, their batch uid); a batch of the change alone that does not finish it is held:
//! it and its task stay `processing` until the next batch starts and takes its uid (see
//! `Scheduler::record_change_batch`). A cancelation cancels the task in either state; a
//! crash puts it back in the queue, where its state says what runs next. The leader holds users' writes from the change's
//! registration until every instance has sent its documents ([`crate::network::write_hold`],
//! lowered by [`driver`]).
//!
//! Invariants: a document is deleted only once every new owner confirmed it imported what
//! it must hold and every instance searches the new shards, so a cancelation or a crash at
//! any phase leaves at most stale copies, never a loss; the task ends only when the
//! documents are where the new network says.

mod batching;
mod deletion;
pub mod driver;
mod export;
mod rules_export;

use std::rc::Rc;

pub use batching::{ChangeStep, carrying_the_change, next_change_step};

use super::control_side::ControlSide;
use super::model::Task;
use super::queue_network_change::ChangeOutcome;
use super::scheduler::{BatchEnd, failed};
use crate::control::ControlPlane;
use crate::coordinator::Coordinator;
use crate::errors::{Code, ResponseError};
use crate::network::Network;
use crate::network::task_network::{Origin, TaskNetwork};
use crate::network::topology_change::{ChangePhase, TopologyChange};

/// The outermost progress step of every batch of a change.
const PROGRESS_PROCESSING: &str = "processing tasks";

/// What running a batch of a change needs.
pub struct NetworkChangeWork {
    pub coordinator: Rc<Coordinator>,
    pub control: Rc<ControlSide>,
    pub control_plane: Rc<ControlPlane>,
    /// The most uncompressed bytes of one payload of documents.
    pub payload_bytes_max: u64,
    pub batch_uid: u32,
}

/// Why a batch of a change stopped before its end.
enum Stop {
    Failed(ResponseError),
    Interrupted,
}

impl From<ResponseError> for Stop {
    fn from(error: ResponseError) -> Self {
        Stop::Failed(error)
    }
}

/// Runs one batch of the change `task`, whose state is `change` (`None`: a change
/// registered before states were kept, which moves nothing and finishes).
pub async fn run_network_change(
    work: &NetworkChangeWork,
    task: Task,
    change: Option<TopologyChange>,
) -> BatchEnd {
    let Some(mut change) = change else {
        let outcome = ChangeOutcome {
            phase: ChangePhase::Finished,
            moved_documents: 0,
        };
        return BatchEnd::NetworkChange {
            task: Box::new(task),
            outcome,
        };
    };
    match work.run_phase(&task, &mut change).await {
        Ok(()) => {
            let outcome = ChangeOutcome {
                phase: change.phase,
                moved_documents: change.moved_documents,
            };
            BatchEnd::NetworkChange {
                task: Box::new(task),
                outcome,
            }
        }
        Err(Stop::Failed(error)) => BatchEnd::Finished {
            tasks: vec![failed(task, error)],
            catalog: None,
            removed_storages: Vec::new(),
        },
        Err(Stop::Interrupted) => BatchEnd::Interrupted,
    }
}

/// Whether `task` is a change this instance registered as the leader.
pub fn is_leaders_change(task: &Task) -> bool {
    matches!(task.network, Some(TaskNetwork::Remotes { .. }))
}

impl NetworkChangeWork {
    /// Does what the change's phase asks and moves it on.
    async fn run_phase(&self, task: &Task, change: &mut TopologyChange) -> Result<(), Stop> {
        self.progress(change.phase, None);
        match change.phase {
            ChangePhase::WaitingForOlderTasks | ChangePhase::ExportingDocuments => {
                if change.phase == ChangePhase::WaitingForOlderTasks {
                    change.advance();
                    self.progress(change.phase, None);
                }
                let origin = change_origin(task, &change.new)?;
                self.export(change, &origin).await?;
                change.advance();
            }
            ChangePhase::ImportingDocuments | ChangePhase::WaitingForOthers => change.advance(),
            ChangePhase::DeletingDocuments => {
                if change.importers_report().all_successful() {
                    change.moved_documents = self.delete_unkept(change).await?;
                }
                change.advance();
            }
            ChangePhase::Finished => {}
        }
        Ok(())
    }

    /// Shows `phase` (and `step`: its name, finished, total) as the batch's progress.
    fn progress(&self, phase: ChangePhase, step: Option<(&str, u32, u32)>) {
        let mut steps = vec![
            (PROGRESS_PROCESSING, 0, 1),
            (
                phase.progress_name(),
                phase as u32,
                ChangePhase::Finished as u32 + 1,
            ),
        ];
        steps.extend(step);
        self.control.set_progress_steps(&steps);
    }

    fn interrupted(&self) -> bool {
        self.control
            .processing
            .borrow()
            .is_some_and(|(_, interrupt)| interrupt)
    }
}

/// The origin every message of the change carries: the leader's name, its task, the new
/// version.
fn change_origin(task: &Task, network: &Network) -> Result<Origin, ResponseError> {
    match &task.network {
        Some(TaskNetwork::Origin { origin }) => Ok(origin.clone()),
        Some(TaskNetwork::Remotes {
            network_version, ..
        }) => Ok(Origin {
            remote_name: network.local.clone().unwrap_or_default(),
            task_uid: task.uid,
            network_version: *network_version,
        }),
        _ => Err(ResponseError::new(
            Code::Internal,
            "a network change without its network bookkeeping",
        )),
    }
}
