//! The `networkTopologyChange` task: every instance of a sharded network (the leader and
//! each follower) registers one when the leader changes the network, and runs it alone in
//! its batch once every task registered before it is done. It moves the documents the
//! change gives other owners ([`crate::network::transfer_plan`]), in three steps:
//!
//! 0. **Wait for the others to register** their own change (the leader may run its task
//!    while it still hands the change out): anything sent to an instance before its change
//!    would run there under its old network, before its change.
//! 1. **Send**: every shard sends each of its documents to the instances that must now
//!    hold it and did not, as writes carrying the change's origin headers (the receivers
//!    register them as ordinary document additions, processed after their own change
//!    task). Each index is first created on a receiver that lacks it, with its primary key
//!    and settings. The task's message then becomes [`SENT_MESSAGE`] (stored, so a restart
//!    does not send again: a second copy, older than writes made since, must never reach
//!    a receiver after them).
//! 2. **Wait**: until every other instance of the old and the new network has sent its
//!    documents (its change task of the same network version says [`SENT_MESSAGE`] or
//!    succeeded). The leader holds users' writes from the change's registration to the end
//!    of this step ([`crate::network::write_hold`]).
//! 3. **Delete**: the documents this instance no longer keeps are deleted by one
//!    `documentDeletion` task per index, registered here; `movedDocuments` counts them.
//!
//! Invariants: a document is deleted only once every instance has handed over what it had
//! to (the new owners registered it durably), so a cancelation or a crash at any step
//! leaves at most stale copies, never a loss; the new network is already in force when the
//! task runs (stored when the change was registered), so writes after it follow the new
//! shards; a change whose previous network this instance does not know (it was not told,
//! or the record is for another version) moves nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::control_side::{self, ControlSide};
use super::export::target::{IndexOnTarget, prepare_index};
use super::model::{Details, KindWithContent, Task};
use super::scheduler::{BatchEnd, failed, succeeded_with};
use crate::control::ControlPlane;
use crate::coordinator::Coordinator;
use crate::coordinator::catalog::IndexRecord;
use crate::errors::{Code, ResponseError};
use crate::host::export::remote::ExportTarget;
use crate::host::network_transfer::{SendForNetworkChange, TransferProgress};
use crate::http::Method;
use crate::network::Network;
use crate::network::forward::{ForwardedWrite, call_remote};
use crate::network::headers::origin_headers;
use crate::network::model::NetworkChangeRecord;
use crate::network::task_network::{Origin, TaskNetwork};
use crate::network::transfer_plan::TransferPlan;
use crate::network::write_hold;

/// The message while documents are being sent.
pub const SENDING_MESSAGE: &str = "Exporting documents";
/// The message once this instance sent its documents and waits for the others.
pub const SENT_MESSAGE: &str = "Waiting for other remotes to finish exporting their documents";
/// The message of a finished change.
pub const FINISHED_MESSAGE: &str = "Finished";
/// How long to wait before sending an index again to an instance that did not answer.
const SEND_RETRY_INTERVAL: Duration = Duration::from_secs(1);
/// How often a cancelation is looked for while the shards send documents.
const CANCELATION_WATCH_INTERVAL: Duration = Duration::from_millis(50);
/// How often the other instances are asked whether they sent their documents.
const PEER_POLL_INTERVAL: Duration = Duration::from_millis(250);
/// Attempts at one question to another instance (each poll asks again anyway).
const PEER_QUESTION_ATTEMPTS: u32 = 1;
/// Where an instance's latest network change is read.
const LATEST_CHANGE_PATH: &str = "/tasks?types=networkTopologyChange&limit=1";

/// What running a change needs.
pub struct NetworkChangeWork {
    pub coordinator: Rc<Coordinator>,
    pub control: Rc<ControlSide>,
    pub control_plane: Rc<ControlPlane>,
    pub data_directory: std::path::PathBuf,
    /// The most uncompressed bytes of one payload of documents.
    pub payload_bytes_max: u64,
}

/// Why a change stopped before its end.
enum Stop {
    Failed(ResponseError),
    Interrupted,
}

impl From<ResponseError> for Stop {
    fn from(error: ResponseError) -> Self {
        Stop::Failed(error)
    }
}

/// Runs the change `task` (alone in its batch).
pub async fn run_network_change(work: &NetworkChangeWork, task: Task) -> BatchEnd {
    let outcome = work.run(&task).await;
    if is_leaders_change(&task) {
        write_hold::set_held(false);
    }
    let finished = match outcome {
        Ok(moved) => succeeded_with(task, |details| {
            if let Details::NetworkTopologyChange {
                moved_documents,
                message,
            } = details
            {
                *moved_documents = moved;
                FINISHED_MESSAGE.clone_into(message);
            }
        }),
        Err(Stop::Failed(error)) => failed(task, error),
        Err(Stop::Interrupted) => return BatchEnd::Interrupted,
    };
    BatchEnd::Finished {
        tasks: vec![finished],
        catalog: None,
        removed_storages: Vec::new(),
    }
}

/// Whether the change `task` already sent this instance's documents (its stored message).
pub fn has_sent(task: &Task) -> bool {
    matches!(
        &task.details,
        Some(Details::NetworkTopologyChange { message, .. }) if message == SENT_MESSAGE
    )
}

/// Whether `task` is a change this instance registered as the leader.
pub fn is_leaders_change(task: &Task) -> bool {
    matches!(task.network, Some(TaskNetwork::Remotes { .. }))
}

impl NetworkChangeWork {
    /// The three steps; the number of documents this instance gave up.
    async fn run(&self, task: &Task) -> Result<u64, Stop> {
        let new = self.control_plane.network();
        let previous = NetworkChangeRecord::load(&self.data_directory, new.version)
            .map_err(ResponseError::internal)?;
        let Some(previous) = previous else {
            return Ok(0);
        };
        let plan = Arc::new(TransferPlan::new(previous, new.as_ref().clone()));
        let origin = change_origin(task, &new)?;
        let already_sent = has_sent(task);
        if is_leaders_change(task) && !already_sent {
            write_hold::set_held(true);
        }
        let send = !already_sent;
        if send {
            // Every other instance registers its own change before anything is sent to it:
            // what this one sends then runs after that change there, under the new network.
            self.wait_for_peers(&plan, new.version, PeerStep::Registered)
                .await?;
        }
        let dropped = self.send_every_index(&plan, &origin, send).await?;
        if send {
            self.record_message(task, SENT_MESSAGE).await?;
        }
        self.wait_for_peers(&plan, new.version, PeerStep::Sent)
            .await?;
        if is_leaders_change(task) {
            write_hold::set_held(false);
        }
        self.delete_dropped(dropped).await
    }

    /// Step 1 (when `send`), and the documents of every index this instance gives up.
    ///
    /// An instance that cannot be reached is tried again until it answers or the task is
    /// canceled: sending again is harmless (the leader holds newer writes), and giving up
    /// would leave a shard's new owner without its documents.
    async fn send_every_index(
        &self,
        plan: &Arc<TransferPlan>,
        origin: &Origin,
        send: bool,
    ) -> Result<BTreeMap<String, Vec<String>>, Stop> {
        let targets = if send {
            targets(plan.new_network(), origin)
        } else {
            BTreeMap::new()
        };
        let mut dropped = BTreeMap::new();
        for record in self.coordinator.catalog().iter() {
            let ids = loop {
                if self.interrupted() {
                    return Err(Stop::Interrupted);
                }
                match self.send_one_index(plan, record, &targets).await {
                    Ok(ids) => break ids,
                    Err(Stop::Failed(error)) => {
                        tracing::warn!(index = %record.uid, error = %error.message, "a network change sends an index again");
                        crate::runtime::sleep(SEND_RETRY_INTERVAL).await;
                    }
                    Err(stop) => return Err(stop),
                }
            };
            if !ids.is_empty() {
                dropped.insert(record.uid.clone(), ids);
            }
        }
        Ok(dropped)
    }

    /// Prepares `record` on every target, then has its shards send their documents.
    async fn send_one_index(
        &self,
        plan: &Arc<TransferPlan>,
        record: &IndexRecord,
        targets: &BTreeMap<String, ExportTarget>,
    ) -> Result<Vec<String>, Stop> {
        if !targets.is_empty() {
            self.control.set_progress(SENDING_MESSAGE, 0, 0);
        }
        for target in targets.values() {
            let index = index_on_target(record, self.control_plane.features());
            prepare_index(target, index)
                .await
                .map_err(|error| ResponseError::internal(error.to_string()))?;
        }
        self.send_index(plan, record, targets.clone()).await
    }

    /// Has every shard of `record` send its documents to `targets` (stopping them on a
    /// cancelation); the ids it gives up.
    async fn send_index(
        &self,
        plan: &Arc<TransferPlan>,
        record: &IndexRecord,
        targets: BTreeMap<String, ExportTarget>,
    ) -> Result<Vec<String>, Stop> {
        let progress = Arc::new(TransferProgress::default());
        let done = std::cell::Cell::new(false);
        let shards = async {
            let answers = self
                .coordinator
                .ask_every_shard(&record.shard_set(), |_| SendForNetworkChange {
                    plan: plan.clone(),
                    targets: targets.clone(),
                    documents_path: format!("/indexes/{}/documents", record.uid),
                    payload_bytes_max: self.payload_bytes_max,
                    progress: progress.clone(),
                })
                .await;
            done.set(true);
            answers
        };
        let watch = async {
            while !done.get() {
                crate::runtime::sleep(CANCELATION_WATCH_INTERVAL).await;
                if self.interrupted() {
                    progress.stop.store(true, Ordering::Relaxed);
                }
            }
        };
        let (answers, ()) = futures_lite::future::zip(shards, watch).await;
        let mut dropped = Vec::new();
        let mut stopped = false;
        for answer in answers {
            let shard = answer?;
            stopped |= shard.stopped;
            dropped.extend(shard.dropped);
        }
        if stopped && self.interrupted() {
            return Err(Stop::Interrupted);
        }
        if stopped {
            return Err(ResponseError::internal("a shard stopped sending").into());
        }
        Ok(dropped)
    }

    /// Stores `message` in the task's details (the task stays processing).
    async fn record_message(&self, task: &Task, message: &str) -> Result<(), Stop> {
        let mut stored = task.clone();
        if let Some(Details::NetworkTopologyChange { message: text, .. }) = &mut stored.details {
            message.clone_into(text);
        }
        self.control
            .write_queue(move |queue| queue.update_tasks(&[stored]))
            .await?
            .map_err(control_side::queue_error)?;
        Ok(())
    }

    /// Until every other instance reached `step` of the change `version` (step 2 waits for
    /// [`PeerStep::Sent`]).
    async fn wait_for_peers(
        &self,
        plan: &TransferPlan,
        version: uuid::Uuid,
        step: PeerStep,
    ) -> Result<(), Stop> {
        let client = crate::outgoing::shared::core_client()
            .ok_or_else(|| ResponseError::internal("a network change outside of a core"))?;
        let mut waiting: BTreeSet<&str> = plan.peers().keys().copied().collect();
        let peers = plan.peers();
        while !waiting.is_empty() {
            let progress = format!("waiting for {} remotes: {}", waiting.len(), step.name());
            self.control.set_progress(&progress, 0, 0);
            let mut done = Vec::new();
            for name in &waiting {
                let remote = peers[name];
                if peer_reached(&client, remote, version, step).await {
                    done.push(*name);
                }
            }
            for name in done {
                waiting.remove(name);
            }
            if waiting.is_empty() {
                break;
            }
            if self.interrupted() {
                return Err(Stop::Interrupted);
            }
            crate::runtime::sleep(PEER_POLL_INTERVAL).await;
        }
        Ok(())
    }

    /// Step 3: one deletion task per index for what this instance gave up.
    async fn delete_dropped(&self, dropped: BTreeMap<String, Vec<String>>) -> Result<u64, Stop> {
        let mut moved = 0;
        for (index_uid, document_ids) in dropped {
            moved += document_ids.len() as u64;
            let kind = KindWithContent::DocumentDeletion {
                index_uid,
                document_ids,
            };
            control_side::register(&self.coordinator, kind, None).await?;
        }
        Ok(moved)
    }

    fn interrupted(&self) -> bool {
        self.control
            .processing
            .borrow()
            .is_some_and(|(_, interrupt)| interrupt)
    }
}

/// The origin the change's writes carry: the leader's name, its task, the new version.
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

/// Every remote of `network` but this instance, called with its write key and `origin`.
fn targets(network: &Network, origin: &Origin) -> BTreeMap<String, ExportTarget> {
    network
        .remotes
        .iter()
        .filter(|(name, _)| !network.is_local(name))
        .map(|(name, remote)| {
            let target = ExportTarget::new(&remote.url, remote.write_api_key.as_deref())
                .with_headers(origin_headers(origin));
            (name.clone(), target)
        })
        .collect()
}

/// `record` as a receiver creates it; `chat` and `foreignKeys` only when their features are
/// on here (a receiver with them off would refuse them).
fn index_on_target(
    record: &IndexRecord,
    features: crate::control::features::RuntimeFeatures,
) -> IndexOnTarget<'_> {
    IndexOnTarget {
        uid: &record.uid,
        primary_key: record.primary_key.as_deref(),
        settings: record
            .settings
            .export_view(features.chat_completions, features.foreign_keys),
        override_settings: false,
    }
}

/// How far another instance's change must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PeerStep {
    /// Its change is registered.
    Registered,
    /// Its change sent its documents.
    Sent,
}

impl PeerStep {
    fn name(self) -> &'static str {
        match self {
            PeerStep::Registered => "registering the change",
            PeerStep::Sent => "exporting their documents",
        }
    }
}

/// Whether `remote`'s latest network change is the one of `version` and reached `step`
/// (unreachable: not yet).
async fn peer_reached(
    client: &crate::outgoing::OutgoingClient,
    remote: &crate::network::Remote,
    version: uuid::Uuid,
    step: PeerStep,
) -> bool {
    let question = ForwardedWrite {
        method: Method::Get,
        path_and_query: LATEST_CHANGE_PATH.to_owned(),
        content_type: None,
        body: Vec::new(),
    };
    let Ok(answer) = call_remote(client, remote, &question, &[], PEER_QUESTION_ATTEMPTS).await
    else {
        return false;
    };
    let latest = &answer["results"][0];
    let network = &latest["network"];
    let their_version = network["origin"]["networkVersion"]
        .as_str()
        .or_else(|| network["network_version"].as_str());
    if their_version != Some(version.to_string().as_str()) {
        return false;
    }
    match step {
        PeerStep::Registered => true,
        PeerStep::Sent => {
            latest["status"] == "succeeded" || latest["details"]["message"] == SENT_MESSAGE
        }
    }
}
