//! `GET /network`, `PATCH /network` and `POST /network/control`: the network of instances,
//! behind the `network` experimental feature. Synchronous: the control core merges, persists and replicates a
//! patch before the answer.
//!
//! Invariants: a patch's body is decoded before the feature is checked (a bad body wins
//! over `feature_not_enabled`, as in Meilisearch); a user's patch may not carry
//! `previousRemotes`, which only instances send one another. A change that leaves a leader
//! set goes through [`crate::proxy::topology`]: checked across the network, stored, then a
//! `networkTopologyChange` task on every instance (202).

use crate::decode::JsonError;
use crate::decode::json::decode_serde_json_body;
use crate::errors::{Code, ResponseError};
use crate::http::{Request, Response};
use crate::network::check_network_enabled;
use crate::network::control_message::{ControlMessage, NetworkControl};
use crate::network::headers::{IMPORT_INDEX_COUNT_HEADER, NetworkHeaders};
use crate::network::merge::merge_network;
use crate::network::patch::NetworkPatch;
use crate::network::propagation::follower_networks;
use crate::network::task_network::{Origin, TaskNetwork};
use crate::proxy::topology;
use crate::routes::tasks::json;
use crate::routes::{Services, body};
use crate::settings::setting::Setting;
use crate::tasks::control_side;
use crate::tasks::view::summarized_task;

/// The action text of the `network` gate on these routes.
const NETWORK_ROUTE_ACTION: &str = "Using the /network route";
/// The action text of the `network` gate on `/network/control`.
const CONTROL_ROUTE_ACTION: &str = "Using the /network/control route";

/// `GET /network`.
pub fn get(services: &Services) -> Result<Response, ResponseError> {
    check_network_enabled(services.control.features().network, NETWORK_ROUTE_ACTION)?;
    let network = services.control.network();
    Ok(Response::json(
        200,
        network
            .view_with_status(&services.remote_availability)
            .to_string(),
    ))
}

/// `PATCH /network`: a user's change (answered with the merged network, or with the
/// `networkTopologyChange` task when the network has a leader), or a leader's change
/// handed to this follower (its origin headers).
pub async fn patch(services: &Services, request: &Request) -> Result<Response, ResponseError> {
    let patch: NetworkPatch = body::json::<NetworkPatch, JsonError>(request)?;
    check_network_enabled(services.control.features().network, NETWORK_ROUTE_ACTION)?;
    match NetworkHeaders::read(|name| request.headers.get(name))? {
        NetworkHeaders::None => patch_as_user(services, patch).await,
        NetworkHeaders::Origin(origin) => patch_from_leader(services, patch, origin).await,
        NetworkHeaders::Import {
            origin,
            import,
            metadata,
        } if metadata.index_count == 0 => {
            // "No index for this remote" (Meilisearch's older way of saying it).
            let message = NetworkControl {
                origin,
                message: ControlMessage::ExportNoIndexForRemote {
                    remote: import.remote_name,
                },
            };
            control_side::receive_network_control(&services.coordinator, message).await?;
            Ok(Response::empty(200))
        }
        NetworkHeaders::Import { metadata, .. } => Err(ResponseError::new(
            Code::InvalidHeaderValue,
            format!(
                "Invalid value for header `{IMPORT_INDEX_COUNT_HEADER}`: Expected 0 indexes, got `{}`",
                metadata.index_count
            ),
        )),
    }
}

/// `POST /network/control`: another instance's message about the running topology change
/// (it has no index to send, it finished importing), or a remote's new status.
pub async fn control(services: &Services, request: &Request) -> Result<Response, ResponseError> {
    let message: NetworkControl = match &request.body {
        Ok(bytes) => decode_serde_json_body(request.headers.get("content-type"), bytes)?,
        Err(error) => {
            let failure = crate::routes::body::read_failure(error)?;
            return Err(crate::decode::payload::body_read_error(failure));
        }
    };
    check_network_enabled(services.control.features().network, CONTROL_ROUTE_ACTION)?;
    if let ControlMessage::StatusChangeForRemote { remote, status } = &message.message {
        services.remote_availability.set_status(remote, *status);
        return Ok(Response::empty(200));
    }
    control_side::receive_network_control(&services.coordinator, message).await?;
    Ok(Response::empty(200))
}

async fn patch_as_user(
    services: &Services,
    patch: NetworkPatch,
) -> Result<Response, ResponseError> {
    if !patch.previous_remotes.is_not_set() {
        return Err(unexpected_previous_remotes());
    }
    let patch = NetworkPatch {
        previous_shards: Setting::NotSet,
        ..patch
    };
    let old = services.control.network();
    let merged = merge_network(&old, patch.clone())?;
    if merged.leader.is_none() {
        let network = services.control.patch_network(patch).await?;
        let view = network.view_with_status(&services.remote_availability);
        return Ok(Response::json(200, view.to_string()));
    }
    topology::check_change(&services.coordinator, &old, &merged).await?;
    services
        .control
        .store_network(merged.clone(), old.as_ref().clone(), old.version)
        .await?;
    let task = topology::register_and_propagate(&services.coordinator, &old, &merged).await?;
    Ok(json(202, &summarized_task(&task)))
}

async fn patch_from_leader(
    services: &Services,
    patch: NetworkPatch,
    origin: Origin,
) -> Result<Response, ResponseError> {
    let current = services.control.network();
    let (new, old) = follower_networks(&current, patch, &origin)?;
    services
        .control
        .store_network(new.clone(), old.clone(), current.version)
        .await?;
    let network = TaskNetwork::Origin { origin };
    let task =
        control_side::register_network_change(&services.coordinator, network, old, new).await?;
    Ok(json(202, &summarized_task(&task)))
}

/// `previousRemotes` in a user's patch.
fn unexpected_previous_remotes() -> ResponseError {
    ResponseError::new(
        Code::UnexpectedNetworkPreviousRemotes,
        "Unexpected `previousRemotes` in network call.\n  - Note: `previousRemote` is reserved for internal use.",
    )
}
