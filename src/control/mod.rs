//! The control plane: read-mostly state owned by the control core (core 0) and replicated
//! to every core, so requests are answered locally without a hop.
//!
//! It holds the experimental features, the API keys, the webhooks, the dynamic search rules,
//! the chat workspaces and the network; the catalog has its own replica (`coordinator::catalog`).
//!
//! Invariants:
//! - only core 0 changes the state: other cores send it a typed request (one type per
//!   change, each naming its answer: [`PatchFeatures`], [`CreateKey`], [`UpdateKey`],
//!   [`DeleteKey`]), and it sends every other core a [`Replicate`];
//! - core 0 persists a change, then replicates it to every other core and waits until each
//!   one has applied it, and only then answers: once a change is acknowledged, no core can
//!   serve a request with the old state (a deleted key is refused everywhere);
//! - changes are applied one at a time (a single-permit semaphore on core 0), so two
//!   concurrent patches never lose one another.

pub mod chat_prompts;
mod chat_workspace_changes;
pub mod chat_workspaces;
mod dynamic_search_rule_changes;
pub mod dynamic_search_rule_patch;
pub mod dynamic_search_rules;
pub mod features;
pub mod legacy_dynamic_search_rules;
pub mod network_changes;
pub mod webhook_body;
mod webhook_changes;
pub mod webhooks;

use std::cell::{Cell, RefCell};
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;

use time::OffsetDateTime;

use crate::auth::{CreateApiKey, KeySet, KeyStore, KeyView, PatchApiKey};
use crate::errors::{Code, ResponseError};
use crate::runtime::{CoreMesh, CoreRequest, Invocation, MeshHandler, invoke_on};
use features::{FeaturesPatch, ForcedFeatures, RuntimeFeatures};

/// The core that owns the control state.
pub const CONTROL_CORE: usize = 0;

/// File (in the data directory) that holds the persisted experimental features.
pub const FEATURES_FILE_NAME: &str = "experimental-features.json";

/// A new version of replicated state.
#[derive(Debug, Clone)]
pub enum ControlBroadcast {
    Features(RuntimeFeatures),
    Keys(Arc<KeySet>),
    Webhooks(Arc<webhooks::Webhooks>),
    DynamicSearchRules(Arc<dynamic_search_rules::DynamicSearchRules>),
    ChatWorkspaces(Arc<chat_workspaces::ChatWorkspaces>),
    Network(Arc<crate::network::Network>),
    NetworkChangeView(Option<Arc<network_changes::NetworkChangeView>>),
}

/// A request to a core's control plane, erased for the mesh.
pub type ControlInvocation = Invocation<ControlPlane>;

/// The mesh carrying control messages.
pub type ControlMesh = CoreMesh<ControlInvocation, (), ControlBroadcast>;

/// One core's view of the control state, and on core 0 its owner.
pub struct ControlPlane {
    mesh: Rc<ControlMesh>,
    features: Cell<RuntimeFeatures>,
    forced: ForcedFeatures,
    data_directory: PathBuf,
    write_permit: crate::runtime::Semaphore,
    /// The key set every request of this core is authenticated against.
    keys: RefCell<Arc<KeySet>>,
    /// The durable key store; only on the control core.
    key_store: RefCell<Option<KeyStore>>,
    /// Every webhook: the command line's and the registered ones.
    webhooks: RefCell<Arc<webhooks::Webhooks>>,
    /// The dynamic search rules, by uid.
    dynamic_search_rules: RefCell<Arc<dynamic_search_rules::DynamicSearchRules>>,
    /// The chat workspaces, by uid.
    chat_workspaces: RefCell<Arc<chat_workspaces::ChatWorkspaces>>,
    /// The network of instances, as `/network` set it.
    network: RefCell<Arc<crate::network::Network>>,
    /// The network before the running topology change, while searches need it.
    network_change_view: RefCell<Option<Arc<network_changes::NetworkChangeView>>>,
}

/// What a core starts its control plane from.
pub struct ControlState {
    pub data_directory: PathBuf,
    pub features: RuntimeFeatures,
    pub forced: ForcedFeatures,
    pub keys: Arc<KeySet>,
    /// The key store, given to the control core only.
    pub key_store: Option<KeyStore>,
    pub webhooks: Arc<webhooks::Webhooks>,
    pub dynamic_search_rules: Arc<dynamic_search_rules::DynamicSearchRules>,
    pub chat_workspaces: Arc<chat_workspaces::ChatWorkspaces>,
    pub network: Arc<crate::network::Network>,
}

impl ControlPlane {
    /// A core's control plane, starting from the persisted state.
    pub fn new(mesh: Rc<ControlMesh>, state: ControlState) -> ControlPlane {
        follow_metrics_feature(state.features.effective(state.forced));
        ControlPlane {
            mesh,
            features: Cell::new(state.features),
            forced: state.forced,
            data_directory: state.data_directory,
            write_permit: crate::runtime::Semaphore::new(1),
            keys: RefCell::new(state.keys),
            key_store: RefCell::new(state.key_store),
            webhooks: RefCell::new(state.webhooks),
            dynamic_search_rules: RefCell::new(state.dynamic_search_rules),
            chat_workspaces: RefCell::new(state.chat_workspaces),
            network: RefCell::new(state.network),
            network_change_view: RefCell::new(None),
        }
    }

    /// The key set requests are authenticated against.
    pub fn keys(&self) -> Arc<KeySet> {
        self.keys.borrow().clone()
    }

    /// `POST /keys`, applied on the control core.
    pub async fn create_key(&self, request: CreateApiKey) -> Result<KeyView, ResponseError> {
        self.ask(CreateKey(request)).await?
    }

    /// `PATCH /keys/{key}`, applied on the control core.
    pub async fn update_key(
        &self,
        uid_or_key: String,
        patch: PatchApiKey,
    ) -> Result<KeyView, ResponseError> {
        self.ask(UpdateKey { uid_or_key, patch }).await?
    }

    /// `DELETE /keys/{key}`, applied on the control core.
    pub async fn delete_key(&self, uid_or_key: String) -> Result<(), ResponseError> {
        self.ask(DeleteKey { uid_or_key }).await?
    }

    /// Runs `request` on the control core (in place when this is the control core) and
    /// answers its answer.
    async fn ask<Request: CoreRequest<ControlPlane>>(
        &self,
        request: Request,
    ) -> Result<Request::Answer, ResponseError> {
        invoke_on(&self.mesh, self, CONTROL_CORE, request)
            .await
            .map_err(|error| {
                ResponseError::new(
                    Code::Internal,
                    format!("the control core did not answer: {error:?}"),
                )
            })
    }

    /// Applies a new version of replicated state on this core.
    fn apply(&self, message: ControlBroadcast) {
        match message {
            ControlBroadcast::Features(features) => {
                self.features.set(features);
                follow_metrics_feature(features.effective(self.forced));
            }
            ControlBroadcast::Keys(keys) => *self.keys.borrow_mut() = keys,
            ControlBroadcast::Webhooks(webhooks) => *self.webhooks.borrow_mut() = webhooks,
            ControlBroadcast::DynamicSearchRules(rules) => {
                *self.dynamic_search_rules.borrow_mut() = rules;
            }
            ControlBroadcast::ChatWorkspaces(workspaces) => {
                *self.chat_workspaces.borrow_mut() = workspaces;
            }
            ControlBroadcast::Network(network) => *self.network.borrow_mut() = network,
            ControlBroadcast::NetworkChangeView(view) => {
                *self.network_change_view.borrow_mut() = view;
            }
        }
    }

    /// Writes `bytes` to the file `file_name` of the data directory, atomically.
    async fn persist(&self, file_name: &str, bytes: Vec<u8>) -> Result<(), ResponseError> {
        let path = self.data_directory.join(file_name);
        crate::runtime::blocking::run(move || crate::data_dir::write_atomically(&path, &bytes))
            .await
            .map_err(|error| match error {
                crate::data_dir::DataDirectoryError::Io { source, .. } => {
                    crate::errors::io_error(&source)
                }
                other => ResponseError::new(Code::Internal, other.to_string()),
            })
    }

    /// Sends `message` to every other core and waits until each has applied it.
    async fn replicate(&self, message: ControlBroadcast) -> Result<(), ResponseError> {
        // One core after the other: changes of control state are rare, and a sequential
        // round keeps the mesh's queues shallow.
        for core in (0..self.mesh.cores()).filter(|core| *core != self.mesh.core()) {
            invoke_on(&self.mesh, self, core, Replicate(message.clone()))
                .await
                .map_err(|error| {
                    ResponseError::new(
                        Code::Internal,
                        format!("a core did not apply the change: {error:?}"),
                    )
                })?;
        }
        Ok(())
    }

    /// Applies `change` to the key store (which persists it), then publishes the new key set
    /// to this core and replicates it to the others (waiting until each applied it) before
    /// answering.
    async fn change_keys<Outcome>(
        &self,
        change: impl FnOnce(
            &mut KeyStore,
            OffsetDateTime,
        ) -> Result<Outcome, crate::auth::KeyStoreError>,
    ) -> Result<Outcome, ResponseError> {
        debug_assert_eq!(
            self.mesh.core(),
            CONTROL_CORE,
            "only core 0 changes the keys"
        );
        let _permit = self
            .write_permit
            .acquire_permit(1)
            .await
            .map_err(|error| ResponseError::new(Code::Internal, error.to_string()))?;
        let (outcome, snapshot) = {
            let mut store = self.key_store.borrow_mut();
            let store = store.as_mut().ok_or_else(|| {
                ResponseError::new(Code::Internal, "the key store lives on the control core")
            })?;
            let outcome = change(store, OffsetDateTime::now_utc())?;
            (outcome, store.snapshot())
        };
        self.apply(ControlBroadcast::Keys(snapshot.clone()));
        self.replicate(ControlBroadcast::Keys(snapshot)).await?;
        Ok(outcome)
    }

    /// The experimental features as requests see them.
    pub fn features(&self) -> RuntimeFeatures {
        self.features.get().effective(self.forced)
    }

    /// The experimental features as persisted (without the ones command-line flags force).
    pub fn persisted_features(&self) -> RuntimeFeatures {
        self.features.get()
    }

    /// Applies `patch` (on the control core) and returns the new persisted toggles.
    pub async fn patch_features(
        &self,
        patch: FeaturesPatch,
    ) -> Result<RuntimeFeatures, ResponseError> {
        self.ask(PatchFeatures(patch)).await?
    }

    async fn apply_features_patch(
        &self,
        patch: FeaturesPatch,
    ) -> Result<RuntimeFeatures, ResponseError> {
        debug_assert_eq!(
            self.mesh.core(),
            CONTROL_CORE,
            "only core 0 changes the features"
        );
        let _permit = self
            .write_permit
            .acquire_permit(1)
            .await
            .map_err(|error| ResponseError::new(Code::Internal, error.to_string()))?;
        let features = self.features.get().patched(&patch);
        self.persist(FEATURES_FILE_NAME, features.to_json().into_bytes())
            .await?;
        self.apply(ControlBroadcast::Features(features));
        self.replicate(ControlBroadcast::Features(features)).await?;
        Ok(features)
    }
}

impl MeshHandler<ControlInvocation, (), ControlBroadcast> for ControlPlane {
    async fn on_request(&self, _from: usize, invocation: ControlInvocation) {
        invocation.run(self).await;
    }

    fn on_broadcast(&self, _from: usize, message: ControlBroadcast) {
        self.apply(message);
    }
}

/// Applies a patch of the experimental features (on the control core).
struct PatchFeatures(FeaturesPatch);

impl CoreRequest<ControlPlane> for PatchFeatures {
    type Answer = Result<RuntimeFeatures, ResponseError>;

    async fn run(self, control: &ControlPlane) -> Self::Answer {
        control.apply_features_patch(self.0).await
    }
}

/// `POST /keys` on the control core.
struct CreateKey(CreateApiKey);

impl CoreRequest<ControlPlane> for CreateKey {
    type Answer = Result<KeyView, ResponseError>;

    async fn run(self, control: &ControlPlane) -> Self::Answer {
        control
            .change_keys(|store, now| store.create(self.0, now))
            .await
    }
}

/// `PATCH /keys/{key}` on the control core.
struct UpdateKey {
    uid_or_key: String,
    patch: PatchApiKey,
}

impl CoreRequest<ControlPlane> for UpdateKey {
    type Answer = Result<KeyView, ResponseError>;

    async fn run(self, control: &ControlPlane) -> Self::Answer {
        let UpdateKey { uid_or_key, patch } = self;
        control
            .change_keys(|store, now| store.update(&uid_or_key, patch, now))
            .await
    }
}

/// `DELETE /keys/{key}` on the control core.
struct DeleteKey {
    uid_or_key: String,
}

impl CoreRequest<ControlPlane> for DeleteKey {
    type Answer = Result<(), ResponseError>;

    async fn run(self, control: &ControlPlane) -> Self::Answer {
        control
            .change_keys(|store, _| store.delete(&self.uid_or_key))
            .await
    }
}

/// A new version of replicated state, applied on the core it is sent to.
struct Replicate(ControlBroadcast);

impl CoreRequest<ControlPlane> for Replicate {
    type Answer = ();

    async fn run(self, control: &ControlPlane) {
        control.apply(self.0);
    }
}

/// Switches this core's recording of mesh round trips to follow the `metrics` feature (the
/// figures of `GET /metrics` are recorded only while it is on).
fn follow_metrics_feature(features: RuntimeFeatures) {
    crate::runtime::mesh_latency::set_recording(features.metrics);
}

/// Reads the persisted experimental features (defaults when none were ever saved).
pub fn load_features(data_directory: &std::path::Path) -> Result<RuntimeFeatures, String> {
    let path = data_directory.join(FEATURES_FILE_NAME);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map_err(|error| format!("{} is damaged: {error}", path.display())),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            Ok(RuntimeFeatures::default())
        }
        Err(error) => Err(format!("could not read {}: {error}", path.display())),
    }
}
