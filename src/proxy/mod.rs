//! Writes in a sharded network (Meilisearch Enterprise's write proxy): which instance may
//! register a write, and how the leader hands every write to every remote.
//!
//! - No leader: a write is registered as usual.
//! - A user's write on the leader: registered with `network.remote_tasks` empty, then sent
//!   to every other remote with the origin headers; what each answered (its task uid or
//!   its error) is stored in the leader's task before the answer. Each remote keeps only the
//!   documents of the shards it owns, so broadcasting every write is how documents reach
//!   their shards and their replicas.
//! - A user's write on a follower: refused with `not_leader`.
//! - A forwarded write (origin headers): registered with `network.origin`, never forwarded
//!   again; refused with `network_version_too_old` when it was forwarded under a network
//!   older than this instance's.
//! - A document import of a network change (import headers, Meilisearch's import
//!   protocol): registered and counted in the active network change, never forwarded
//!   (see `crate::tasks::queue_network_change` for its refusals); a second creation of
//!   an index by another sender answers the first one's task.
//!
//! Ordering (an improvement on Meilisearch 1.41, which forwards concurrent writes in any
//! order): the leader registers and forwards one write at a time, on the control core, so
//! every remote registers the leader's writes in the leader's task order and a document
//! written twice ends the same everywhere. A remote that did not answer the last forward is
//! given one attempt (not the ~3.5 s of retries) until it answers again, so a dead remote
//! does not hold every write back.

pub mod forwarded_request;
pub mod sequencer;
pub mod topology;

use uuid::Uuid;

use crate::coordinator::Coordinator;
use crate::errors::{Code, ResponseError};
use crate::network::Network;
use crate::network::headers::NetworkHeaders;
use crate::network::merge::not_leader;
use crate::network::task_network::TaskNetwork;
use crate::tasks::control_side;
use crate::tasks::model::{KindWithContent, Task};
use crate::tasks::queue::RegisterOptions;
use crate::tasks::update_files::UpdateFiles;

/// Registers the write `kind` as the network and the request's `headers` say, with the
/// request's replication parameters (`TaskId`, `DryRun`; a dry run is never forwarded).
pub async fn register_write(
    coordinator: &Coordinator,
    network: &Network,
    update_files: &UpdateFiles,
    headers: NetworkHeaders,
    replication: RegisterOptions,
    kind: KindWithContent,
    custom_metadata: Option<String>,
) -> Result<Task, ResponseError> {
    match headers {
        NetworkHeaders::None => match (&network.leader, &network.local) {
            (None, _) => {
                control_side::register_with(coordinator, kind, custom_metadata, replication).await
            }
            (Some(leader), Some(local)) if leader == local => {
                let write = if replication.dry_run {
                    None
                } else {
                    forwarded_request::forwarded_write(
                        &kind,
                        custom_metadata.as_deref(),
                        update_files,
                    )
                    .await?
                };
                let write = sequencer::LeaderWrite {
                    network: std::sync::Arc::new(network.clone()),
                    kind,
                    custom_metadata,
                    replication,
                    write,
                };
                sequencer::register_and_forward(coordinator, write).await
            }
            (Some(leader), _) => Err(not_leader(leader)),
        },
        NetworkHeaders::Origin(origin) => {
            check_version(origin.network_version, network.version)?;
            let options = RegisterOptions {
                network: Some(TaskNetwork::Origin { origin }),
                ..replication
            };
            control_side::register_with(coordinator, kind, custom_metadata, options).await
        }
        NetworkHeaders::Import {
            origin,
            import,
            metadata,
        } => {
            check_version(origin.network_version, network.version)?;
            let options = RegisterOptions {
                network: Some(TaskNetwork::Import {
                    import_from: import,
                    network_change: origin,
                }),
                ..replication
            };
            control_side::register_import(coordinator, kind, custom_metadata, options, metadata)
                .await
        }
    }
}

/// A forwarded write must carry this instance's network version or a newer one.
fn check_version(received: Uuid, local: Uuid) -> Result<(), ResponseError> {
    if received < local {
        return Err(ResponseError::new(
            Code::NetworkVersionTooOld,
            format!(
                "The network version in request is too old.\n  - Received: {received}\n  - Expected at least: {local}"
            ),
        ));
    }
    Ok(())
}
