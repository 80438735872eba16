//! The chat workspaces' side of the control plane: every core reads its replica (the chat
//! routes and completions use it), the control core applies a change, persists every
//! workspace, then replicates them.
//!
//! Invariant: a change is acknowledged only once it is on disk and every core applied it, so
//! a workspace answered `200` survives a crash and the next request on any core sees it;
//! changes are serialized by the control core's write permit.

use std::sync::Arc;

use super::chat_workspaces::{
    CHAT_WORKSPACES_FILE_NAME, ChatWorkspaces, WorkspaceChange, WorkspaceOutcome, apply_change,
};
use super::{CONTROL_CORE, ControlBroadcast, ControlPlane};
use crate::errors::{Code, ResponseError};
use crate::runtime::CoreRequest;

impl ControlPlane {
    /// This core's replica of the chat workspaces.
    pub fn chat_workspaces(&self) -> Arc<ChatWorkspaces> {
        self.chat_workspaces.borrow().clone()
    }

    /// Applies `change` on the control core; answers what it did.
    pub async fn change_chat_workspaces(
        &self,
        change: WorkspaceChange,
    ) -> Result<WorkspaceOutcome, ResponseError> {
        self.ask(ChangeWorkspaces(change)).await?
    }

    async fn apply_workspace_change(
        &self,
        change: WorkspaceChange,
    ) -> Result<WorkspaceOutcome, ResponseError> {
        debug_assert_eq!(
            self.mesh.core(),
            CONTROL_CORE,
            "only core 0 changes the chat workspaces"
        );
        let _permit = self
            .write_permit
            .acquire_permit(1)
            .await
            .map_err(|error| ResponseError::new(Code::Internal, error.to_string()))?;
        let (workspaces, outcome) = apply_change(&self.chat_workspaces(), change)?;
        let bytes = serde_json::to_vec(&workspaces)
            .map_err(|error| ResponseError::new(Code::Internal, error.to_string()))?;
        self.persist(CHAT_WORKSPACES_FILE_NAME, bytes).await?;
        let workspaces = Arc::new(workspaces);
        self.apply(ControlBroadcast::ChatWorkspaces(workspaces.clone()));
        self.replicate(ControlBroadcast::ChatWorkspaces(workspaces))
            .await?;
        Ok(outcome)
    }
}

/// A change of the chat workspaces, run on the control core.
struct ChangeWorkspaces(WorkspaceChange);

impl CoreRequest<ControlPlane> for ChangeWorkspaces {
    type Answer = Result<WorkspaceOutcome, ResponseError>;

    async fn run(self, control: &ControlPlane) -> Self::Answer {
        control.apply_workspace_change(self.0).await
    }
}
