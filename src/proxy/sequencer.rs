//! The leader's write sequencer, on the control core: registers a write, sends it to every
//! other remote of the network, and stores what each answered in the task — one write at a
//! time, so the remotes register the leader's writes in the leader's order.
//!
//! Invariants:
//! - the forward permit is held from the local registration until every remote answered,
//!   so two writes reach every remote in task-uid order;
//! - a remote whose last forward failed gets a single attempt until one succeeds again
//!   (its failures are recorded in the tasks' `remote_tasks`, never retried later: as in
//!   Meilisearch, a remote that missed writes must be brought back by a network change);
//! - the answer is the task as registered (Meilisearch does not re-read it either);
//! - while a network change sends documents, writes wait ([`write_hold`]); raising the hold
//!   waits for the write being forwarded, so every remote registers it before the change,
//!   and a write that waited is forwarded under the network the change gave.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::sync::Arc;

use crate::coordinator::{CONTROL_CORE, Coordinator, CoreRequest};
use crate::errors::ResponseError;
use crate::network::forward::{FORWARD_ATTEMPTS_MAX, ForwardedWrite, forward_write};
use crate::network::task_network::{Origin, RemoteTask, TaskNetwork};
use crate::network::{Network, write_hold};
use crate::runtime::Semaphore;
use crate::tasks::control_side;
use crate::tasks::model::{KindWithContent, Task};
use crate::tasks::queue::RegisterOptions;

thread_local! {
    /// One forward at a time (the control core's).
    static FORWARD_PERMIT: Rc<Semaphore> = Rc::new(Semaphore::new(1));
    /// The remotes whose last forward failed.
    static UNREACHABLE: RefCell<BTreeSet<String>> = const { RefCell::new(BTreeSet::new()) };
}

/// Registers a write on the leader and forwards it (when its kind is forwarded).
pub async fn register_and_forward(
    coordinator: &Coordinator,
    write: LeaderWrite,
) -> Result<Task, ResponseError> {
    coordinator.ask(CONTROL_CORE, write).await?
}

/// A write registered and forwarded by the leader.
pub struct LeaderWrite {
    pub network: Arc<Network>,
    pub kind: KindWithContent,
    pub custom_metadata: Option<String>,
    /// The request's `TaskId` and `DryRun` (a dry run comes without `write`).
    pub replication: RegisterOptions,
    /// The request each remote receives, `None` for a kind that stays here.
    pub write: Option<ForwardedWrite>,
}

impl CoreRequest<Coordinator> for LeaderWrite {
    type Answer = Result<Task, ResponseError>;

    async fn run(self, coordinator: &Coordinator) -> Self::Answer {
        // The permit is the control core's: on another core, writes would lose their order.
        assert_eq!(
            coordinator.core(),
            CONTROL_CORE,
            "the leader's writes are sequenced on the control core"
        );
        let permit = FORWARD_PERMIT.with(Rc::clone);
        let _held = permit
            .acquire_permit(1)
            .await
            .map_err(|error| ResponseError::internal(error.to_string()))?;
        // A network change is sending documents: this write waits (holding the permit, so
        // the writes after it wait behind it in order).
        write_hold::wait_until_released().await;
        let LeaderWrite {
            mut network,
            kind,
            custom_metadata,
            replication,
            write,
        } = self;
        // A change stored meanwhile (the write may have waited for it) gave a new network:
        // the write goes to its remotes, under its version.
        if coordinator.network().version != network.version {
            network = coordinator.network();
        }
        let options = RegisterOptions {
            network: Some(TaskNetwork::Remotes {
                remote_tasks: BTreeMap::new(),
                network_version: network.version,
            }),
            ..replication
        };
        let task = control_side::register_with(coordinator, kind, custom_metadata, options).await?;
        let Some(write) = write else {
            return Ok(task);
        };
        let remote_tasks = forward_to_every_remote(&network, task.uid, write).await?;
        let recorded = TaskNetwork::Remotes {
            remote_tasks,
            network_version: network.version,
        };
        control_side::set_task_network(coordinator, task.uid, recorded).await?;
        Ok(task)
    }
}

/// Sends `write` to every remote but this instance, all at once; answers each one's outcome.
async fn forward_to_every_remote(
    network: &Network,
    task_uid: u32,
    write: ForwardedWrite,
) -> Result<BTreeMap<String, RemoteTask>, ResponseError> {
    let client = crate::outgoing::shared::core_client()
        .ok_or_else(|| ResponseError::internal("forwarding outside of a core"))?;
    let local = network.local.clone().unwrap_or_default();
    let origin = Origin {
        remote_name: local.clone(),
        task_uid,
        network_version: network.version,
    };
    let write = Rc::new(write);
    let mut in_flight = Vec::new();
    for (name, remote) in network.remotes.iter().filter(|(name, _)| **name != local) {
        let attempts = if UNREACHABLE.with(|set| set.borrow().contains(name)) {
            1
        } else {
            FORWARD_ATTEMPTS_MAX
        };
        let (client, remote, origin, write) = (
            client.clone(),
            remote.clone(),
            origin.clone(),
            write.clone(),
        );
        let sent = crate::runtime::spawn(async move {
            forward_write(&client, &remote, &origin, &write, attempts).await
        });
        in_flight.push((name.clone(), sent));
    }
    let mut remote_tasks = BTreeMap::new();
    for (name, sent) in in_flight {
        let outcome = sent.await;
        UNREACHABLE.with(|set| {
            let mut set = set.borrow_mut();
            if is_unreachable(&outcome) {
                set.insert(name.clone());
            } else {
                set.remove(&name);
            }
        });
        remote_tasks.insert(name, outcome);
    }
    Ok(remote_tasks)
}

/// Whether a forward failed for want of an answer (not because the remote refused it).
fn is_unreachable(outcome: &RemoteTask) -> bool {
    let code = outcome
        .error
        .as_ref()
        .and_then(|error| error.get("code"))
        .and_then(|code| code.as_str());
    matches!(
        code,
        Some("remote_could_not_send_request" | "remote_timeout" | "remote_remote_error")
    )
}

/// Raises the leader's hold on writes (on the control core), for a network change it is
/// registering.
pub async fn hold_writes(coordinator: &Coordinator) -> Result<(), ResponseError> {
    coordinator.ask(CONTROL_CORE, HoldWrites(true)).await
}

/// Lowers the hold on writes (a change that could not be registered).
pub async fn release_writes(coordinator: &Coordinator) -> Result<(), ResponseError> {
    coordinator.ask(CONTROL_CORE, HoldWrites(false)).await
}

/// Raises (`true`) or lowers the hold on writes.
struct HoldWrites(bool);

impl CoreRequest<Coordinator> for HoldWrites {
    type Answer = ();

    async fn run(self, _coordinator: &Coordinator) -> Self::Answer {
        if self.0 {
            // A write being forwarded finishes first: every remote registers it before the
            // change, under the network it was forwarded with.
            let permit = FORWARD_PERMIT.with(Rc::clone);
            let _forwarded = permit.acquire_permit(1).await;
        }
        write_hold::set_held(self.0);
    }
}
