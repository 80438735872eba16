//! The webhooks' side of the control plane: every core reads its replica, the control core
//! applies a change, persists the registered webhooks, then replicates them.
//!
//! Invariant: a change is acknowledged only once it is on disk and every core applied it;
//! changes are serialized by the control core's write permit.

use std::sync::Arc;

use uuid::Uuid;

use super::webhooks::{WEBHOOKS_FILE_NAME, Webhook, WebhookChange, Webhooks, apply_change};
use super::{CONTROL_CORE, ControlBroadcast, ControlPlane};
use crate::errors::{Code, ResponseError};
use crate::runtime::CoreRequest;

impl ControlPlane {
    /// This core's replica of the webhooks.
    pub fn webhooks(&self) -> Arc<Webhooks> {
        self.webhooks.borrow().clone()
    }

    /// Applies `change` on the control core; answers the webhook it created or updated.
    pub async fn change_webhooks(
        &self,
        change: WebhookChange,
    ) -> Result<Option<(Uuid, Webhook)>, ResponseError> {
        self.ask(ChangeWebhooks(change)).await?
    }

    async fn apply_webhook_change(
        &self,
        change: WebhookChange,
    ) -> Result<Option<(Uuid, Webhook)>, ResponseError> {
        debug_assert_eq!(
            self.mesh.core(),
            CONTROL_CORE,
            "only core 0 changes the webhooks"
        );
        let _permit = self
            .write_permit
            .acquire_permit(1)
            .await
            .map_err(|error| ResponseError::new(Code::Internal, error.to_string()))?;
        let current = self.webhooks();
        let (registered, outcome) = apply_change(&current, change)?;
        let bytes = serde_json::to_vec(&registered)
            .map_err(|error| ResponseError::new(Code::Internal, error.to_string()))?;
        self.persist(WEBHOOKS_FILE_NAME, bytes).await?;
        let webhooks = Arc::new(current.with_registered(registered));
        self.apply(ControlBroadcast::Webhooks(webhooks.clone()));
        self.replicate(ControlBroadcast::Webhooks(webhooks)).await?;
        Ok(outcome)
    }
}

/// A change of the webhooks, run on the control core.
struct ChangeWebhooks(WebhookChange);

impl CoreRequest<ControlPlane> for ChangeWebhooks {
    type Answer = Result<Option<(Uuid, Webhook)>, ResponseError>;

    async fn run(self, control: &ControlPlane) -> Self::Answer {
        control.apply_webhook_change(self.0).await
    }
}
