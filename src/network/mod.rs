//! The network of instances (Meilisearch Enterprise's `/network`): the model this instance
//! keeps, the `PATCH /network` body and its merge rules, and the calls made to remotes
//! (remote federated search).
//!
//! Layout: [`model`] is the network as stored and shown; [`patch`] decodes a patch;
//! [`merge`] applies one with Meilisearch 1.41's rules; [`remote_call`] sends a request to a
//! remote through the shared outgoing client and maps its failures to the `remote_*` errors;
//! [`sharding`] says, when the network has a leader, which documents this instance keeps and
//! which shards `_shard` filters name.
//!
//! Invariants: the control plane owns the network (it persists and replicates each
//! change); everything here is either pure or runs on the calling core.

pub mod merge;
pub mod model;
pub mod patch;
pub mod remote_call;
pub mod sharding;

pub use model::{Network, Remote, Shard};

use crate::errors::{Code, ResponseError};

/// The discussion `feature_not_enabled` points to for everything the `network` toggle gates.
pub const NETWORK_DISCUSSION: &str = "https://github.com/orgs/meilisearch/discussions/805";

/// Checks that the `network` toggle is on for `action`.
pub fn check_network_enabled(enabled: bool, action: &str) -> Result<(), ResponseError> {
    if enabled {
        Ok(())
    } else {
        Err(ResponseError::feature_not_enabled(
            action,
            "network",
            NETWORK_DISCUSSION,
        ))
    }
}

/// Why a patch that leaves a leader set is refused: a leader switches on Meilisearch
/// Enterprise's sharded writes and `networkTopologyChange` tasks, which this version does
/// not run yet. Refused before anything is stored, so the network stays as it was.
pub fn sharding_not_supported(leader: &str) -> ResponseError {
    ResponseError::new(
        Code::InvalidNetworkLeader,
        format!(
            "Setting `network.leader` (`{leader}`) is not supported by this version of coresearch: sharded networks (writes forwarded by a leader, `networkTopologyChange` tasks) are not available yet.\n  - Hint: remove `leader` (or set it to `null`) to use the network for remote federated search."
        ),
    )
}
