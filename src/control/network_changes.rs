//! The network's side of the control plane: every core reads its replica, the control core
//! merges a patch, persists the network, then replicates it.
//!
//! Invariant: a change is acknowledged only once it is on disk and every core applied it;
//! changes are serialized by the control core's write permit, so two patches never merge
//! into the same old network.

use std::sync::Arc;

use super::{CONTROL_CORE, ControlBroadcast, ControlPlane};
use crate::errors::{Code, ResponseError};
use crate::network::Network;
use crate::network::merge::merge_network;
use crate::network::model::{NETWORK_CHANGE_FILE_NAME, NETWORK_FILE_NAME, NetworkChangeRecord};
use crate::network::patch::NetworkPatch;
use crate::runtime::CoreRequest;

impl ControlPlane {
    /// This core's replica of the network.
    pub fn network(&self) -> Arc<Network> {
        self.network.borrow().clone()
    }

    /// Merges `patch` into the network on the control core; answers the new network.
    pub async fn patch_network(&self, patch: NetworkPatch) -> Result<Arc<Network>, ResponseError> {
        self.ask(PatchNetwork(patch)).await?
    }

    async fn apply_network_patch(
        &self,
        patch: NetworkPatch,
    ) -> Result<Arc<Network>, ResponseError> {
        debug_assert_eq!(
            self.mesh.core(),
            CONTROL_CORE,
            "only core 0 changes the network"
        );
        let _permit = self
            .write_permit
            .acquire_permit(1)
            .await
            .map_err(|error| ResponseError::new(Code::Internal, error.to_string()))?;
        let merged = merge_network(&self.network(), patch)?;
        if merged.leader.is_some() {
            // A network with a leader is changed through `crate::proxy::topology` (checks,
            // the change's task); a patch raced with one that set a leader.
            return Err(crate::network::leader_set_meanwhile());
        }
        self.store_network_now(Arc::new(merged)).await
    }

    /// Stores `network` as it is (a leader's checked change, or a follower's copy of its
    /// leader's), when the network is still at `expected_version`: another change stored
    /// meanwhile makes this one fail, so no check is ever skipped.
    ///
    /// `previous` (the network before the change, as this instance's change task must see
    /// it) is persisted first, so a change task always finds it after a crash.
    pub async fn store_network(
        &self,
        network: Network,
        previous: Network,
        expected_version: uuid::Uuid,
    ) -> Result<Arc<Network>, ResponseError> {
        self.ask(StoreNetwork {
            network,
            previous,
            expected_version,
        })
        .await?
    }

    async fn apply_network_store(
        &self,
        store: StoreNetwork,
    ) -> Result<Arc<Network>, ResponseError> {
        let _permit = self
            .write_permit
            .acquire_permit(1)
            .await
            .map_err(|error| ResponseError::new(Code::Internal, error.to_string()))?;
        if self.network().version != store.expected_version {
            return Err(crate::network::leader_set_meanwhile());
        }
        let record = NetworkChangeRecord {
            version: store.network.version,
            previous: store.previous,
        };
        let bytes = serde_json::to_vec(&record).map_err(ResponseError::internal)?;
        self.persist(NETWORK_CHANGE_FILE_NAME, bytes).await?;
        self.store_network_now(Arc::new(store.network)).await
    }

    /// Persists, applies and replicates `merged` (the write permit is held).
    async fn store_network_now(&self, merged: Arc<Network>) -> Result<Arc<Network>, ResponseError> {
        let bytes = serde_json::to_vec(merged.as_ref()).map_err(ResponseError::internal)?;
        self.persist(NETWORK_FILE_NAME, bytes).await?;
        self.apply(ControlBroadcast::Network(merged.clone()));
        self.replicate(ControlBroadcast::Network(merged.clone()))
            .await?;
        Ok(merged)
    }
}

/// A network stored as it is, run on the control core.
struct StoreNetwork {
    network: Network,
    previous: Network,
    expected_version: uuid::Uuid,
}

impl CoreRequest<ControlPlane> for StoreNetwork {
    type Answer = Result<Arc<Network>, ResponseError>;

    async fn run(self, control: &ControlPlane) -> Self::Answer {
        control.apply_network_store(self).await
    }
}

/// A patch of the network, run on the control core.
struct PatchNetwork(NetworkPatch);

impl CoreRequest<ControlPlane> for PatchNetwork {
    type Answer = Result<Arc<Network>, ResponseError>;

    async fn run(self, control: &ControlPlane) -> Self::Answer {
        control.apply_network_patch(self.0).await
    }
}
