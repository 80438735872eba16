//! The dynamic search rules' side of the control plane: every core reads its replica (search
//! applies it, the routes list it), the control core applies a change, persists every rule,
//! then replicates them.
//!
//! Invariant: the changes of a batch of `dsrUpdate`/`dsrClear` tasks are done only once they
//! are on disk and every core applied them, so a task that succeeded survives a crash and the
//! next search on any core sees it; changes are serialized by the control core's write permit.

use std::sync::Arc;

use super::dynamic_search_rule_patch::{ChangeOutcome, RuleChange, apply_changes};
use super::dynamic_search_rules::{DYNAMIC_SEARCH_RULES_FILE_NAME, DynamicSearchRules};
use super::{CONTROL_CORE, ControlBroadcast, ControlPlane};
use crate::errors::{Code, ResponseError};
use crate::runtime::CoreRequest;

impl ControlPlane {
    /// This core's replica of the dynamic search rules.
    pub fn dynamic_search_rules(&self) -> Arc<DynamicSearchRules> {
        self.dynamic_search_rules.borrow().clone()
    }

    /// Applies `changes`, in order, on the control core; answers what each did.
    pub async fn change_dynamic_search_rules(
        &self,
        changes: Vec<RuleChange>,
    ) -> Result<Vec<ChangeOutcome>, ResponseError> {
        self.ask(ChangeRules(changes)).await?
    }

    async fn apply_rule_changes(
        &self,
        changes: Vec<RuleChange>,
    ) -> Result<Vec<ChangeOutcome>, ResponseError> {
        debug_assert_eq!(
            self.mesh.core(),
            CONTROL_CORE,
            "only core 0 changes the dynamic search rules"
        );
        let _permit = self
            .write_permit
            .acquire_permit(1)
            .await
            .map_err(|error| ResponseError::new(Code::Internal, error.to_string()))?;
        let (rules, outcomes) = apply_changes(&self.dynamic_search_rules(), changes);
        let bytes = serde_json::to_vec(&rules)
            .map_err(|error| ResponseError::new(Code::Internal, error.to_string()))?;
        self.persist(DYNAMIC_SEARCH_RULES_FILE_NAME, bytes).await?;
        let rules = Arc::new(rules);
        self.apply(ControlBroadcast::DynamicSearchRules(rules.clone()));
        self.replicate(ControlBroadcast::DynamicSearchRules(rules))
            .await?;
        Ok(outcomes)
    }
}

/// Changes of the dynamic search rules, run on the control core.
struct ChangeRules(Vec<RuleChange>);

impl CoreRequest<ControlPlane> for ChangeRules {
    type Answer = Result<Vec<ChangeOutcome>, ResponseError>;

    async fn run(self, control: &ControlPlane) -> Self::Answer {
        control.apply_rule_changes(self.0).await
    }
}
