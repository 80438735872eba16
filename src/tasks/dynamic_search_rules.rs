//! The batch of `dsrUpdate` and `dsrClear` tasks: their changes applied to the dynamic
//! search rules in task order, persisted and replicated to every core at once (see
//! `crate::control::dynamic_search_rule_changes`), and each task's details filled.
//!
//! Invariants: the tasks of one batch succeed together once the rules are on disk and on
//! every core, or fail together with the error that stopped the change (the rules are then
//! as they were); a deletion counts one updated rule whether or not the rule existed, as
//! Meilisearch 1.50 counts it; a clear counts the rules it deleted.

use crate::control::ControlPlane;
use crate::control::dynamic_search_rule_patch::RuleChange;
use crate::tasks::model::{Details, KindWithContent, Task};
use crate::tasks::scheduler::{BatchEnd, failed, succeeded_with};

/// Applies the rule changes of `tasks` (every one a `dsrUpdate` or `dsrClear`).
pub async fn process_rule_changes(control_plane: &ControlPlane, tasks: Vec<Task>) -> BatchEnd {
    let changes: Vec<RuleChange> = tasks.iter().map(|task| change_of(&task.kind)).collect();
    let finished = match control_plane.change_dynamic_search_rules(changes).await {
        Ok(outcomes) => tasks
            .into_iter()
            .zip(outcomes)
            .map(|(task, outcome)| {
                succeeded_with(task, |details| {
                    if let Details::ClearAll { deleted_documents } = details {
                        *deleted_documents = Some(outcome.affected_rules);
                    }
                })
            })
            .collect(),
        Err(error) => tasks
            .into_iter()
            .map(|task| failed(task, error.clone()))
            .collect(),
    };
    BatchEnd::Finished {
        tasks: finished,
        catalog: None,
        removed_storages: Vec::new(),
    }
}

/// The change a rule task carries.
fn change_of(kind: &KindWithContent) -> RuleChange {
    match kind {
        KindWithContent::DsrUpdate {
            rule_uid,
            update: Some(patch),
        } => RuleChange::Upsert {
            uid: rule_uid.clone(),
            patch: patch.clone(),
        },
        KindWithContent::DsrUpdate {
            rule_uid,
            update: None,
        } => RuleChange::Delete {
            uid: rule_uid.clone(),
        },
        other => {
            debug_assert!(
                matches!(other, KindWithContent::DsrClear),
                "only rule tasks reach the rule batch"
            );
            RuleChange::Clear
        }
    }
}
