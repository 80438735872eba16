//! What a network change does between its batches, on the control core, every
//! [`DRIVER_INTERVAL`] while a change is active:
//!
//! - the leader lowers its hold on users' writes ([`crate::network::write_hold`]) once it
//!   has sent its own documents and every other instance reports it sent its own (its
//!   change task's message is past Meilisearch's export messages): a write registered
//!   after that reaches every new owner after the documents it could overwrite;
//! - once this instance imported everything, it tells every instance of the old and the
//!   new network so (`importFinishedForRemote`), again each time until each one took it;
//! - once every importer reported and searches here use the new shards, it waits until
//!   every other instance reports the same (its message says it deletes, or its change is
//!   over), then [`SEARCH_SWITCH_GRACE`] for the searches that started before, and only
//!   then allows the deletion of what this instance no longer keeps.
//!
//! Invariants: everything it learns comes from the other instances' own answers (their
//! `GET /tasks` and `/network/control`), so instances of Meilisearch and of coresearch are
//! read alike; an instance that does not answer holds the change where it is (it may be
//! canceled), it never lets it skip a step.

use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;
use std::rc::Rc;
use std::time::Duration;

use serde_json::Value;
use uuid::Uuid;

use super::{change_origin, is_leaders_change};
use crate::http::Method;
use crate::network::control_message::{ControlMessage, NETWORK_CONTROL_PATH, NetworkControl};
use crate::network::forward::{ForwardedWrite, call_remote};
use crate::network::topology_change::{ChangePhase, TopologyChange};
use crate::network::topology_change_message::{
    DELETING_MESSAGE, EXPORTING_MESSAGE, FINISHED_MESSAGE, WAITING_FOR_OLDER_TASKS_MESSAGE,
};
use crate::network::{Remote, write_hold};
use crate::outgoing::OutgoingClient;
use crate::tasks::control_side::ControlSide;
use crate::tasks::model::{NETWORK_CHANGE_DEFAULT_MESSAGE, Task, TaskUid};

/// How often the driver looks at the active change.
pub const DRIVER_INTERVAL: Duration = Duration::from_millis(200);
/// How long after every instance switched its searches to the new shards the documents
/// this instance no longer keeps stay: a search another instance started just before its
/// switch still asks this one for them.
pub const SEARCH_SWITCH_GRACE: Duration = Duration::from_secs(1);
/// Attempts at one question to another instance (the next look asks again anyway).
const PEER_QUESTION_ATTEMPTS: u32 = 1;
/// Where an instance's latest network change is read.
const LATEST_CHANGE_PATH: &str = "/tasks?types=networkTopologyChange&limit=1";

thread_local! {
    /// The change whose deletion every instance allowed (see the module doc).
    static DELETION_ALLOWED: Cell<Option<TaskUid>> = const { Cell::new(None) };
    /// The change and the instances that took its `importFinishedForRemote`.
    static NOTIFIED: RefCell<(Option<TaskUid>, BTreeSet<String>)> =
        const { RefCell::new((None, BTreeSet::new())) };
}

/// Whether the change `uid` may delete what this instance no longer keeps.
pub fn deletion_allowed(uid: TaskUid) -> bool {
    DELETION_ALLOWED.with(Cell::get) == Some(uid)
}

/// Drives the active change, until the core stops.
pub async fn drive(control: Rc<ControlSide>) {
    loop {
        crate::runtime::sleep(DRIVER_INTERVAL).await;
        let queue = control.queue.clone();
        let active = crate::runtime::blocking::run(move || queue.active_network_change()).await;
        let Ok(Some((task, Some(change)))) = active else {
            continue;
        };
        let Some(client) = crate::outgoing::shared::core_client() else {
            continue;
        };
        if let Err(error) = drive_once(&control, &client, &task, &change).await {
            tracing::warn!(%error, "a network change could not be driven");
        }
    }
}

/// One look at the active change `task`, in state `change`.
async fn drive_once(
    control: &ControlSide,
    client: &OutgoingClient,
    task: &Task,
    change: &TopologyChange,
) -> Result<(), crate::errors::ResponseError> {
    let version = change.new.version;
    if is_leaders_change(task)
        && write_hold::is_held()
        && change.phase >= ChangePhase::ImportingDocuments
        && every_peer(client, change, version, PeerState::is_past_exporting).await
    {
        write_hold::set_held(false);
    }
    let waiting_for_others = matches!(
        change.phase,
        ChangePhase::WaitingForOthers | ChangePhase::DeletingDocuments
    );
    if waiting_for_others && !deletion_allowed(task.uid) {
        let origin = change_origin(task, &change.new)?;
        notify_import_finished(client, task.uid, change, origin).await;
    }
    if change.phase == ChangePhase::DeletingDocuments
        && !deletion_allowed(task.uid)
        && every_peer(client, change, version, PeerState::is_switched).await
    {
        if !change.peers().is_empty() {
            crate::runtime::sleep(SEARCH_SWITCH_GRACE).await;
        }
        DELETION_ALLOWED.with(|allowed| allowed.set(Some(task.uid)));
        // A full channel already holds a wake-up.
        let _ = control.wake.clone().try_send(());
    }
    Ok(())
}

/// Tells every instance that has not taken it yet that this one finished importing.
async fn notify_import_finished(
    client: &OutgoingClient,
    uid: TaskUid,
    change: &TopologyChange,
    origin: crate::network::task_network::Origin,
) {
    let Some(name) = change.import_name() else {
        return;
    };
    let body = NetworkControl {
        origin,
        message: ControlMessage::ImportFinishedForRemote {
            remote: name.to_owned(),
            successful: true,
        },
    };
    let Ok(body) = serde_json::to_vec(&body) else {
        return;
    };
    let call = ForwardedWrite {
        method: Method::Post,
        path_and_query: NETWORK_CONTROL_PATH.to_owned(),
        content_type: Some("application/json".to_owned()),
        body,
    };
    NOTIFIED.with(|notified| {
        let mut notified = notified.borrow_mut();
        if notified.0 != Some(uid) {
            *notified = (Some(uid), BTreeSet::new());
        }
    });
    for (recipient, remote) in change.import_finished_recipients() {
        let done = NOTIFIED.with(|notified| notified.borrow().1.contains(recipient));
        if done {
            continue;
        }
        if call_remote(client, remote, &call, &[], PEER_QUESTION_ATTEMPTS)
            .await
            .is_ok()
        {
            NOTIFIED.with(|notified| notified.borrow_mut().1.insert(recipient.to_owned()));
        }
    }
}

/// Whether every other instance's change of `version` is in a state `reached` accepts.
async fn every_peer(
    client: &OutgoingClient,
    change: &TopologyChange,
    version: Uuid,
    reached: fn(&PeerState) -> bool,
) -> bool {
    for remote in change.peers().values() {
        let state = peer_state(client, remote, version).await;
        if !reached(&state) {
            return false;
        }
    }
    true
}

/// Where another instance is in a change, as its latest change task tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PeerState {
    /// Not registered yet, not past its export, or not reachable.
    Exporting,
    /// Past its export, its searches still on the old shards.
    Exported,
    /// Its searches on the new shards (or its change over).
    Switched,
}

impl PeerState {
    fn is_past_exporting(&self) -> bool {
        *self != PeerState::Exporting
    }

    fn is_switched(&self) -> bool {
        *self == PeerState::Switched
    }
}

/// `remote`'s state in the change of `version`.
async fn peer_state(client: &OutgoingClient, remote: &Remote, version: Uuid) -> PeerState {
    let question = ForwardedWrite {
        method: Method::Get,
        path_and_query: LATEST_CHANGE_PATH.to_owned(),
        content_type: None,
        body: Vec::new(),
    };
    match call_remote(client, remote, &question, &[], PEER_QUESTION_ATTEMPTS).await {
        Ok(answer) => state_of(&answer["results"][0], version),
        Err(_) => PeerState::Exporting,
    }
}

/// The state a change task (as `GET /tasks` shows it) tells of the change of `version`.
fn state_of(latest: &Value, version: Uuid) -> PeerState {
    let network = &latest["network"];
    let their_version = network["origin"]["networkVersion"]
        .as_str()
        .or_else(|| network["network_version"].as_str())
        .and_then(|text| text.parse::<Uuid>().ok());
    match their_version {
        Some(theirs) if theirs > version => return PeerState::Switched,
        Some(theirs) if theirs == version => {}
        _ => return PeerState::Exporting,
    }
    if matches!(
        latest["status"].as_str(),
        Some("succeeded" | "failed" | "canceled")
    ) {
        return PeerState::Switched;
    }
    match latest["details"]["message"].as_str() {
        Some(DELETING_MESSAGE | FINISHED_MESSAGE) => PeerState::Switched,
        Some(
            NETWORK_CHANGE_DEFAULT_MESSAGE | WAITING_FOR_OLDER_TASKS_MESSAGE | EXPORTING_MESSAGE,
        )
        | None => PeerState::Exporting,
        Some(_) => PeerState::Exported,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_peer_is_read_from_its_latest_change() {
        let version = Uuid::now_v7();
        let task = |status: &str, message: &str| {
            json!({"status": status, "details": {"message": message},
                   "network": {"origin": {"networkVersion": version.to_string()}}})
        };
        assert_eq!(
            state_of(&task("processing", EXPORTING_MESSAGE), version),
            PeerState::Exporting
        );
        let importing = "Importing documents from 2 remotes, 0 remotes finished processing";
        assert_eq!(
            state_of(&task("processing", importing), version),
            PeerState::Exported
        );
        assert_eq!(
            state_of(&task("processing", DELETING_MESSAGE), version),
            PeerState::Switched
        );
        assert_eq!(
            state_of(&task("succeeded", FINISHED_MESSAGE), version),
            PeerState::Switched
        );
        assert_eq!(
            state_of(&task("processing", DELETING_MESSAGE), Uuid::now_v7()),
            PeerState::Exporting,
            "an older change of the peer is not this one"
        );
        assert_eq!(state_of(&Value::Null, version), PeerState::Exporting);
    }
}
