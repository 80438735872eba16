//! `PATCH /network` in a sharded network: the leader's side (checks, store, register the
//! `networkTopologyChange` task, hand the change to every instance) and the follower's
//! side (replace its view with the leader's, register its own task).
//!
//! The leader, in Meilisearch Enterprise's order:
//! 1. refuses while a network change of its own is enqueued or processing
//!    (`unprocessed_network_task`);
//! 2. asks every instance of the old and the new network (with its write key) whether the
//!    `network` feature is on and whether a network change is pending there; an instance
//!    the change removes may be unreachable, any other failure aborts the change;
//! 3. stores the new network, registers its task (`network.remote_tasks`), sends every
//!    other instance of the new network its body ([`crate::network::propagation`]), then
//!    tells the instances the change removes, and answers 202 with its task.
//!
//! Each instance's task then moves the documents the change gives other owners
//! ([`crate::tasks::network_change`]); the leader holds users' writes meanwhile
//! ([`crate::network::write_hold`], raised here when its task is registered).
//!
//! Invariants: nothing is stored before every check passed; the leader itself is checked
//! in process (not over HTTP).

use std::collections::BTreeMap;
use std::rc::Rc;

use serde_json::Value;

use crate::coordinator::Coordinator;
use crate::errors::{Code, ResponseError};
use crate::http::Method;
use crate::network::forward::{FORWARD_ATTEMPTS_MAX, ForwardedWrite, call_remote};
use crate::network::headers::origin_headers;
use crate::network::propagation::follower_body;
use crate::network::task_network::{Origin, RemoteTask, TaskNetwork};
use crate::network::{Network, Remote};
use crate::outgoing::OutgoingClient;
use crate::tasks::TaskQuery;
use crate::tasks::control_side;
use crate::tasks::model::{Kind, Status, Task};

/// Where the remotes' pending network changes are asked for.
const PENDING_CHANGE_PATH: &str =
    "/tasks?types=networkTopologyChange&statuses=enqueued,processing&limit=1";

/// The leader's checks of a change from `old` to `new` (steps 1 and 2).
pub async fn check_change(
    coordinator: &Rc<Coordinator>,
    old: &Network,
    new: &Network,
) -> Result<(), ResponseError> {
    if let Some(uid) = pending_local_change(coordinator).await? {
        return Err(unprocessed_network_task(None, uid));
    }
    let client = client()?;
    let local = new.local.as_deref();
    let mut in_flight = Vec::new();
    for (name, remote, removed) in involved_remotes(old, new) {
        if Some(name.as_str()) == local {
            continue;
        }
        let client = client.clone();
        let check =
            crate::runtime::spawn(
                async move { check_remote(&client, &name, &remote, removed).await },
            );
        in_flight.push(check);
    }
    for check in in_flight {
        check.await?;
    }
    Ok(())
}

/// The leader's steps 3: registers the change and hands it to every instance.
pub async fn register_and_propagate(
    coordinator: &Coordinator,
    old: &Network,
    new: &Network,
) -> Result<Task, ResponseError> {
    let empty = TaskNetwork::Remotes {
        remote_tasks: BTreeMap::new(),
        network_version: new.version,
    };
    super::sequencer::hold_writes(coordinator).await?;
    let registered =
        control_side::register_network_change(coordinator, empty, old.clone(), new.clone()).await;
    let task = match registered {
        Ok(task) => task,
        Err(error) => {
            super::sequencer::release_writes(coordinator).await?;
            return Err(error);
        }
    };
    let local = new.local.clone().unwrap_or_default();
    let origin = Origin {
        remote_name: local.clone(),
        task_uid: task.uid,
        network_version: new.version,
    };
    let client = client()?;
    let mut sends = Vec::new();
    for (name, remote) in new.remotes.iter().filter(|(name, _)| **name != local) {
        let body = follower_body(new, old, Some(name), true);
        sends.push((name.clone(), remote.clone(), body));
    }
    if old.leader.is_some() {
        for (name, remote) in old.remotes.iter() {
            if !new.remotes.contains_key(name) && *name != local {
                sends.push((
                    name.clone(),
                    remote.clone(),
                    follower_body(new, old, None, false),
                ));
            }
        }
    }
    let remote_tasks = send_all(&client, &origin, sends).await;
    let recorded = TaskNetwork::Remotes {
        remote_tasks,
        network_version: new.version,
    };
    control_side::set_task_network(coordinator, task.uid, recorded).await?;
    Ok(task)
}

/// Sends every `(name, remote, body)` its `PATCH /network`, all at once.
async fn send_all(
    client: &Rc<OutgoingClient>,
    origin: &Origin,
    sends: Vec<(String, Remote, Value)>,
) -> BTreeMap<String, RemoteTask> {
    let headers = origin_headers(origin);
    let mut in_flight = Vec::new();
    for (name, remote, body) in sends {
        let (client, headers) = (client.clone(), headers.clone());
        let sent = crate::runtime::spawn(async move {
            let write = ForwardedWrite {
                method: Method::Patch,
                path_and_query: "/network".to_owned(),
                content_type: Some("application/json".to_owned()),
                body: serde_json::to_vec(&body).unwrap_or_default(),
            };
            call_remote(&client, &remote, &write, &headers, FORWARD_ATTEMPTS_MAX).await
        });
        in_flight.push((name, sent));
    }
    let mut remote_tasks = BTreeMap::new();
    for (name, sent) in in_flight {
        let outcome = match sent.await {
            Ok(answer) => match answer.get("taskUid").and_then(Value::as_u64) {
                Some(uid) => RemoteTask::registered(uid as u32),
                None => RemoteTask::failed(Value::Null),
            },
            Err(error) => RemoteTask::failed(error_object(&error)),
        };
        remote_tasks.insert(name, outcome);
    }
    remote_tasks
}

/// One instance's checks: the `network` feature and no pending change.
async fn check_remote(
    client: &OutgoingClient,
    name: &str,
    remote: &Remote,
    removed: bool,
) -> Result<(), ResponseError> {
    let features = match get(client, remote, "/experimental-features").await {
        Err(error) if removed && is_unreachable(&error) => return Ok(()),
        other => other?,
    };
    if features.get("network").and_then(Value::as_bool) != Some(true) {
        let error = ResponseError::feature_not_enabled(
            "receiving a proxied network task",
            "network",
            crate::network::NETWORK_DISCUSSION,
        );
        return Err(ResponseError::new(
            error.code,
            format!("Remote `{name}` encountered an error: {}", error.message),
        ));
    }
    let pending = get(client, remote, PENDING_CHANGE_PATH).await?;
    let first = pending
        .get("results")
        .and_then(Value::as_array)
        .and_then(|results| results.first())
        .and_then(|task| task.get("uid"))
        .and_then(Value::as_u64);
    if let Some(uid) = first {
        return Err(unprocessed_network_task(Some(name), uid as u32));
    }
    Ok(())
}

async fn get(client: &OutgoingClient, remote: &Remote, path: &str) -> Result<Value, ResponseError> {
    let write = ForwardedWrite {
        method: Method::Get,
        path_and_query: path.to_owned(),
        content_type: None,
        body: Vec::new(),
    };
    call_remote(client, remote, &write, &[], FORWARD_ATTEMPTS_MAX).await
}

/// Every remote of `old` and `new` once, with whether the change removes it.
fn involved_remotes(old: &Network, new: &Network) -> Vec<(String, Remote, bool)> {
    let mut involved: Vec<(String, Remote, bool)> = new
        .remotes
        .iter()
        .map(|(name, remote)| (name.clone(), remote.clone(), false))
        .collect();
    for (name, remote) in &old.remotes {
        if !new.remotes.contains_key(name) {
            involved.push((name.clone(), remote.clone(), true));
        }
    }
    involved
}

/// The uid of this instance's enqueued or processing network change, if any.
async fn pending_local_change(coordinator: &Coordinator) -> Result<Option<u32>, ResponseError> {
    let query = TaskQuery {
        statuses: Some(vec![Status::Enqueued, Status::Processing]),
        types: Some(vec![Kind::NetworkTopologyChange]),
        ..TaskQuery::default()
    };
    let uids =
        control_side::matching_tasks(coordinator, query, crate::auth::AuthContext::full_access())
            .await?;
    Ok(uids.into_iter().min())
}

fn client() -> Result<Rc<OutgoingClient>, ResponseError> {
    crate::outgoing::shared::core_client()
        .ok_or_else(|| ResponseError::internal("a network change outside of a core"))
}

fn is_unreachable(error: &ResponseError) -> bool {
    matches!(
        error.code,
        Code::RemoteTimeout | Code::RemoteCouldNotSendRequest
    )
}

fn error_object(error: &ResponseError) -> Value {
    serde_json::from_str(&error.to_json()).unwrap_or_default()
}

/// `unprocessed_network_task`, for this instance (`None`) or a remote.
fn unprocessed_network_task(remote: Option<&str>, task_uid: u32) -> ResponseError {
    let prefix = remote
        .map(|remote| format!("Remote `{remote}` encountered an error: "))
        .unwrap_or_default();
    ResponseError::new(
        Code::UnprocessedNetworkTask,
        format!(
            "{prefix}Already has a pending network task with uid {task_uid}.\n  - Note: No network task can be registered while any previous network task is not done processing.\n  - Hint: Wait for task {task_uid} to complete or cancel it."
        ),
    )
}
