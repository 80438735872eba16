//! The network of instances (Meilisearch Enterprise's `/network`): the model this instance
//! keeps, the `PATCH /network` body and its merge rules, and the calls made to remotes
//! (remote federated search), the headers instances send one another, forwarding writes, and
//! handing a leader's change to its followers.
//!
//! Layout: [`model`] is the network as stored and shown; [`patch`] decodes a patch;
//! [`merge`] applies one with Meilisearch 1.41's rules; [`remote_call`] sends a request to a
//! remote through the shared outgoing client and maps its failures to the `remote_*` errors;
//! [`task_network`] is a task's place in a sharded network; [`headers`] reads and writes
//! the inter-instance headers; [`forward`] sends a write to a remote; [`propagation`] is
//! the body of a change a leader sends its followers; [`sharding`] says, when the network
//! has a leader, which documents this instance keeps and which shards `_shard` filters name;
//! [`topology_change`] is one instance's state of a network change (with its task's
//! messages in [`topology_change_message`]), [`transfer_plan`] which documents it moves,
//! [`control_message`] what instances tell each other about it (`/network/control`);
//! [`availability`] which remotes answer lately (each remote's `status`).
//!
//! Invariants: the control plane owns the network (it persists and replicates each
//! change); everything here is either pure or runs on the calling core, but
//! [`availability::RemoteAvailability`], one map the process's cores share.

pub mod availability;
pub mod control_message;
pub mod forward;
pub mod headers;
pub mod merge;
pub mod model;
pub mod patch;
pub mod propagation;
pub mod remote_call;
pub mod sharding;
pub mod task_network;
pub mod topology_change;
pub mod topology_change_message;
pub mod transfer_plan;
pub mod write_hold;

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

/// Two changes of the network raced: the later one is refused and may be sent again.
pub fn leader_set_meanwhile() -> ResponseError {
    ResponseError::new(
        Code::InvalidNetworkLeader,
        "The network changed while this change was being checked.\n  - Hint: send the change again.",
    )
}
