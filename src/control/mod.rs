//! The control plane: read-mostly state owned by the control core (core 0) and replicated
//! to every core, so requests are answered locally without a hop.
//!
//! Today it holds the experimental features; the catalog, API keys and network state join
//! it as they land.
//!
//! Invariants:
//! - only core 0 changes the state: other cores send it a [`ControlRequest`];
//! - core 0 persists a change before it broadcasts it, and broadcasts it before it replies,
//!   so the requesting core already sees its own change when the reply arrives (both travel
//!   on the same ordered channel);
//! - changes are applied one at a time (a single-permit semaphore on core 0), so two
//!   concurrent patches never lose one another.

pub mod durable_file;
pub mod features;

use std::cell::Cell;
use std::path::PathBuf;
use std::rc::Rc;

use crate::errors::{Code, ResponseError};
use crate::runtime::{CoreMesh, MeshHandler};
use features::{FeaturesPatch, ForcedFeatures, RuntimeFeatures};

/// The core that owns the control state.
pub const CONTROL_CORE: usize = 0;

/// File (in the data directory) that holds the persisted experimental features.
pub const FEATURES_FILE_NAME: &str = "experimental-features.json";

/// A change asked of the control core.
#[derive(Debug, Clone)]
pub enum ControlRequest {
    PatchFeatures(FeaturesPatch),
}

/// The control core's answer.
#[derive(Debug, Clone)]
pub enum ControlReply {
    Features(Result<RuntimeFeatures, ResponseError>),
}

/// A new version of replicated state.
#[derive(Debug, Clone)]
pub enum ControlBroadcast {
    Features(RuntimeFeatures),
}

/// The mesh carrying control messages.
pub type ControlMesh = CoreMesh<ControlRequest, ControlReply, ControlBroadcast>;

/// One core's view of the control state, and on core 0 its owner.
pub struct ControlPlane {
    mesh: Rc<ControlMesh>,
    features: Cell<RuntimeFeatures>,
    forced: ForcedFeatures,
    data_directory: PathBuf,
    write_permit: glommio::sync::Semaphore,
}

impl ControlPlane {
    /// A core's control plane, starting from the persisted `features`.
    pub fn new(
        mesh: Rc<ControlMesh>,
        data_directory: PathBuf,
        features: RuntimeFeatures,
        forced: ForcedFeatures,
    ) -> ControlPlane {
        ControlPlane {
            mesh,
            features: Cell::new(features),
            forced,
            data_directory,
            write_permit: glommio::sync::Semaphore::new(1),
        }
    }

    /// The experimental features as requests see them.
    pub fn features(&self) -> RuntimeFeatures {
        self.features.get().effective(self.forced)
    }

    /// Applies `patch` (on the control core) and returns the new persisted toggles.
    pub async fn patch_features(
        &self,
        patch: FeaturesPatch,
    ) -> Result<RuntimeFeatures, ResponseError> {
        if self.mesh.core() == CONTROL_CORE {
            return self.apply_features_patch(patch).await;
        }
        match self
            .mesh
            .request(CONTROL_CORE, ControlRequest::PatchFeatures(patch))
            .await
        {
            Ok(ControlReply::Features(outcome)) => outcome,
            Err(error) => Err(ResponseError::new(
                Code::Internal,
                format!("the control core did not answer: {error:?}"),
            )),
        }
    }

    async fn apply_features_patch(
        &self,
        patch: FeaturesPatch,
    ) -> Result<RuntimeFeatures, ResponseError> {
        let _permit = self
            .write_permit
            .acquire_permit(1)
            .await
            .map_err(|error| ResponseError::new(Code::Internal, error.to_string()))?;
        let features = self.features.get().patched(&patch);
        let path = self.data_directory.join(FEATURES_FILE_NAME);
        let bytes = features.to_json().into_bytes();
        crate::runtime::blocking::run(move || durable_file::write(&path, &bytes))
            .await
            .map_err(|error| crate::errors::io_error(&error))?;
        self.features.set(features);
        self.mesh
            .broadcast(ControlBroadcast::Features(features))
            .await;
        Ok(features)
    }
}

impl MeshHandler<ControlRequest, ControlReply, ControlBroadcast> for ControlPlane {
    async fn on_request(&self, _from: usize, request: ControlRequest) -> ControlReply {
        match request {
            ControlRequest::PatchFeatures(patch) => {
                ControlReply::Features(self.apply_features_patch(patch).await)
            }
        }
    }

    fn on_broadcast(&self, _from: usize, message: ControlBroadcast) {
        match message {
            ControlBroadcast::Features(features) => self.features.set(features),
        }
    }
}

/// Reads the persisted experimental features (defaults when none were ever saved).
pub fn load_features(data_directory: &std::path::Path) -> Result<RuntimeFeatures, String> {
    let path = data_directory.join(FEATURES_FILE_NAME);
    match durable_file::read(&path) {
        Ok(None) => Ok(RuntimeFeatures::default()),
        Ok(Some(bytes)) => serde_json::from_slice(&bytes)
            .map_err(|error| format!("{} is damaged: {error}", path.display())),
        Err(error) => Err(format!("could not read {}: {error}", path.display())),
    }
}
