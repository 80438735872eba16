//! The network's side of the control plane: every core reads its replica, the control core
//! merges a patch, persists the network, then replicates it.
//!
//! While a topology change runs, every core also knows the network before it
//! ([`NetworkChangeView`]): searches keep using its shards until every new owner imported
//! what it must hold (then the change switches them to the new shards), and a search
//! another instance sends under the old network's version is answered with its shards.
//!
//! Invariant: a change is acknowledged only once it is on disk and every core applied it;
//! changes are serialized by the control core's write permit, so two patches never merge
//! into the same old network; a change's view is set on every core before the change is
//! acknowledged, so no search after the acknowledgment uses shards that are still empty.

use std::sync::Arc;

use super::{CONTROL_CORE, ControlBroadcast, ControlPlane};
use crate::errors::{Code, ResponseError};
use crate::network::Network;
use crate::network::merge::merge_network;
use crate::network::model::NETWORK_FILE_NAME;
use crate::network::patch::NetworkPatch;
use crate::runtime::CoreRequest;

/// What searches know of a running topology change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkChangeView {
    /// The network before the change.
    pub previous: Arc<Network>,
    /// Whether searches this instance coordinates still use `previous`'s shards.
    pub searches_use_previous: bool,
}

impl NetworkChangeView {
    /// The view of the change from `previous` to `new`. A follower that was not in the
    /// previous network (or had none) knows it only by the leader's shards: it shards under
    /// the new network's leader.
    pub fn new(previous: &Network, new: &Network, searches_use_previous: bool) -> Self {
        let mut previous = previous.clone();
        if previous.leader.is_none() && !previous.shards.is_empty() {
            previous.leader.clone_from(&new.leader);
        }
        NetworkChangeView {
            previous: Arc::new(previous),
            searches_use_previous,
        }
    }
}

impl ControlPlane {
    /// This core's replica of the network.
    pub fn network(&self) -> Arc<Network> {
        self.network.borrow().clone()
    }

    /// The network whose shards the searches this instance coordinates use: the one before
    /// a running change until the change switches them, the current one otherwise.
    pub fn search_network(&self) -> Arc<Network> {
        match self.network_change_view.borrow().as_deref() {
            Some(view) if view.searches_use_previous => view.previous.clone(),
            _ => self.network(),
        }
    }

    /// The network whose shards a search another instance partitioned before the change
    /// that gave `version` names: the one before that change while this instance runs it,
    /// the current one otherwise (this instance did not register the change yet, so its
    /// current network is that one, or the change is over).
    pub fn network_before_change(&self, version: uuid::Uuid) -> Arc<Network> {
        let current = self.network();
        match self.network_change_view.borrow().as_deref() {
            Some(view) if current.version == version => view.previous.clone(),
            _ => current,
        }
    }

    /// The network before a change this instance stored and has not registered yet (the
    /// leader between storing the network of `PATCH /network` and registering the change,
    /// see `Scheduler::network_for_writes`), else the current one.
    pub fn network_before_registered_change(&self) -> Arc<Network> {
        match self.network_change_view.borrow().as_deref() {
            Some(view) => view.previous.clone(),
            None => self.network(),
        }
    }

    /// The version of the change searches are partitioned before, when they are.
    pub fn searches_before_change(&self) -> Option<uuid::Uuid> {
        match self.network_change_view.borrow().as_deref() {
            Some(view) if view.searches_use_previous => Some(self.network().version),
            _ => None,
        }
    }

    /// Sets (or clears) the view of the running change on every core.
    pub async fn set_network_change_view(
        &self,
        view: Option<NetworkChangeView>,
    ) -> Result<(), ResponseError> {
        let message = ControlBroadcast::NetworkChangeView(view.map(Arc::new));
        self.apply(message.clone());
        self.replicate(message).await
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
    /// Searches keep using `previous` (the network before the change) until the change
    /// switches them: every core knows it before the new network is in force.
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
        let view = NetworkChangeView::new(&store.previous, &store.network, true);
        self.set_network_change_view(Some(view)).await?;
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
