//! The dynamic search rules' side of the control plane: every core reads its replica (search
//! applies it, the routes list it), the control core applies a change, persists every rule,
//! then replicates them.
//!
//! Invariant: a change is acknowledged only once it is on disk and every core applied it, so
//! a rule answered `201`/`200` survives a crash and the next search on any core sees it;
//! changes are serialized by the control core's write permit.

use std::sync::Arc;

use super::dynamic_search_rules::{
    DYNAMIC_SEARCH_RULES_FILE_NAME, DynamicSearchRules, RuleChange, RuleOutcome, apply_change,
};
use super::{CONTROL_CORE, ControlBroadcast, ControlPlane};
use crate::errors::{Code, ResponseError};
use crate::runtime::CoreRequest;

impl ControlPlane {
    /// This core's replica of the dynamic search rules.
    pub fn dynamic_search_rules(&self) -> Arc<DynamicSearchRules> {
        self.dynamic_search_rules.borrow().clone()
    }

    /// Applies `change` on the control core; answers what it did.
    pub async fn change_dynamic_search_rules(
        &self,
        change: RuleChange,
    ) -> Result<RuleOutcome, ResponseError> {
        self.ask(ChangeRules(change)).await?
    }

    async fn apply_rule_change(&self, change: RuleChange) -> Result<RuleOutcome, ResponseError> {
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
        let (rules, outcome) = apply_change(&self.dynamic_search_rules(), change)?;
        let bytes = serde_json::to_vec(&rules)
            .map_err(|error| ResponseError::new(Code::Internal, error.to_string()))?;
        self.persist(DYNAMIC_SEARCH_RULES_FILE_NAME, bytes).await?;
        let rules = Arc::new(rules);
        self.apply(ControlBroadcast::DynamicSearchRules(rules.clone()));
        self.replicate(ControlBroadcast::DynamicSearchRules(rules))
            .await?;
        Ok(outcome)
    }
}

/// A change of the dynamic search rules, run on the control core.
struct ChangeRules(RuleChange);

impl CoreRequest<ControlPlane> for ChangeRules {
    type Answer = Result<RuleOutcome, ResponseError>;

    async fn run(self, control: &ControlPlane) -> Self::Answer {
        control.apply_rule_change(self.0).await
    }
}
