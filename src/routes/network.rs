//! `GET /network` and `PATCH /network`: the network of instances, behind the `network`
//! experimental feature. Synchronous: the control core merges, persists and replicates a
//! patch before the answer.
//!
//! Invariants: a patch's body is decoded before the feature is checked (a bad body wins
//! over `feature_not_enabled`, as in Meilisearch); a user's patch may not carry
//! `previousRemotes`, which only instances send one another.

use crate::decode::JsonError;
use crate::errors::{Code, ResponseError};
use crate::http::{Request, Response};
use crate::network::check_network_enabled;
use crate::network::patch::NetworkPatch;
use crate::routes::{Services, body};
use crate::settings::setting::Setting;

/// The action text of the `network` gate on these routes.
const NETWORK_ROUTE_ACTION: &str = "Using the /network route";

/// `GET /network`.
pub fn get(services: &Services) -> Result<Response, ResponseError> {
    check_network_enabled(services.control.features().network, NETWORK_ROUTE_ACTION)?;
    Ok(Response::json(
        200,
        services.control.network().view().to_string(),
    ))
}

/// `PATCH /network`: answers the merged network.
pub async fn patch(services: &Services, request: &Request) -> Result<Response, ResponseError> {
    let patch: NetworkPatch = body::json::<NetworkPatch, JsonError>(request)?;
    check_network_enabled(services.control.features().network, NETWORK_ROUTE_ACTION)?;
    if !patch.previous_remotes.is_not_set() {
        return Err(unexpected_previous_remotes());
    }
    let patch = NetworkPatch {
        previous_shards: Setting::NotSet,
        ..patch
    };
    let network = services.control.patch_network(patch).await?;
    Ok(Response::json(200, network.view().to_string()))
}

/// `previousRemotes` in a user's patch.
fn unexpected_previous_remotes() -> ResponseError {
    ResponseError::new(
        Code::UnexpectedNetworkPreviousRemotes,
        "Unexpected `previousRemotes` in network call.\n  - Note: `previousRemote` is reserved for internal use.",
    )
}
