//! What the scheduler runs next while a network change is active, by the change's phase
//! (Meilisearch Enterprise 1.41's rules, with uid order standing for its version order):
//!
//! - waiting for older tasks: the index tasks and rule changes registered before the
//!   change, as ordinary batches (rule changes first); once there are none, the change
//!   itself (it exports);
//! - exporting: the change;
//! - importing: the change once every sender is finished; until then the index tasks and
//!   rule changes registered after the change (the imports, the leader's rules among them,
//!   and the writes made since), as ordinary batches; nothing when none waits;
//! - waiting for the others: the change once every importer reported; nothing before;
//! - deleting: the change once every instance switched its searches (`deletion_allowed`);
//! - finished: the change (it is recorded as succeeded).
//!
//! Every other task (dumps, snapshots, task deletions, exports) waits for the end of the
//! change; cancelations and upgrades come first, as always (the caller's rule).
//!
//! An index batch of the change carries the change task ([`carrying_the_change`]), as
//! Meilisearch 1.41's batches of a change do: the task is `processing` with the batch's
//! tasks and `enqueued` again once they are finished.
//!
//! Invariant: pure — a function of the waiting tasks, the change and the deletion gate.

use crate::network::topology_change::{ChangePhase, TopologyChange};
use crate::tasks::autobatch::{NextBatch, StopReason};
use crate::tasks::model::{Kind, Task, TaskUid};

/// What to run next.
#[derive(Debug, PartialEq)]
pub enum ChangeStep<'task> {
    /// An ordinary index batch formed among these tasks.
    Index(Vec<&'task Task>),
    /// The batch of these rule changes (`dsrUpdate`, `dsrClear`), as outside a change.
    Rules(Vec<TaskUid>),
    /// A batch of the change.
    Change,
    /// Nothing until something arrives.
    Wait,
}

/// The next step while the change `change_task` (in state `change`) is active, among the
/// enqueued tasks `waiting`.
pub fn next_change_step<'task>(
    change_task: &Task,
    change: &TopologyChange,
    waiting: &[&'task Task],
    deletion_allowed: bool,
) -> ChangeStep<'task> {
    let registered = |older: bool| {
        waiting.iter().copied().filter(move |task| {
            (task.uid < change_task.uid) == older && task.uid != change_task.uid
        })
    };
    // The rule changes first: they touch no index, so their order against index tasks
    // changes nothing, and a sender's rules are counted like an index.
    let step_among = |older: bool| -> Option<ChangeStep<'task>> {
        let rules: Vec<TaskUid> = registered(older)
            .filter(|task| matches!(task.kind(), Kind::DsrUpdate | Kind::DsrClear))
            .map(|task| task.uid)
            .collect();
        if !rules.is_empty() {
            return Some(ChangeStep::Rules(rules));
        }
        let index: Vec<&'task Task> = registered(older)
            .filter(|task| task.kind().related_to_one_index() || task.kind() == Kind::IndexSwap)
            .collect();
        (!index.is_empty()).then_some(ChangeStep::Index(index))
    };
    match change.phase {
        ChangePhase::WaitingForOlderTasks => step_among(true).unwrap_or(ChangeStep::Change),
        ChangePhase::ExportingDocuments | ChangePhase::Finished => ChangeStep::Change,
        ChangePhase::ImportingDocuments if change.is_import_finished() => ChangeStep::Change,
        ChangePhase::ImportingDocuments => step_among(false).unwrap_or(ChangeStep::Wait),
        ChangePhase::WaitingForOthers if change.importers_report().all_finished() => {
            ChangeStep::Change
        }
        ChangePhase::DeletingDocuments if deletion_allowed => ChangeStep::Change,
        ChangePhase::WaitingForOthers | ChangePhase::DeletingDocuments => ChangeStep::Wait,
    }
}

/// The index batch `next` of the change `change_task` in `phase`, carrying the change task:
/// its `batchStrategy` says which tasks it batched with the change (Meilisearch's words).
pub fn carrying_the_change(
    mut next: NextBatch,
    change_task: TaskUid,
    phase: ChangePhase,
) -> NextBatch {
    let inner = Box::new(std::mem::take(&mut next.stop_reason));
    next.stop_reason = match phase {
        ChangePhase::WaitingForOlderTasks => StopReason::NetworkTaskOlderTasks {
            id: change_task,
            inner,
        },
        _ => StopReason::NetworkTaskImportTasks {
            id: change_task,
            inner,
        },
    };
    next.network_change = Some(change_task);
    next
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::BTreeSet;

    use time::OffsetDateTime;

    use super::*;
    use crate::network::{Network, Remote, Shard};
    use crate::tasks::model::KindWithContent;

    fn network(names: &[&str]) -> Network {
        let mut network = Network {
            local: Some("ms0".to_owned()),
            leader: Some("ms0".to_owned()),
            ..Network::default()
        };
        for name in names {
            network
                .remotes
                .insert((*name).to_owned(), Remote::default());
            let remotes = BTreeSet::from([(*name).to_owned()]);
            network.shards.insert((*name).to_owned(), Shard { remotes });
        }
        network
    }

    fn task(uid: u32, kind: KindWithContent) -> Task {
        Task::new(uid, kind, OffsetDateTime::UNIX_EPOCH, None)
    }

    fn clear(uid: u32) -> Task {
        let kind = KindWithContent::DocumentClear {
            index_uid: "books".to_owned(),
        };
        task(uid, kind)
    }

    #[test]
    fn older_tasks_run_first_and_newer_ones_while_importing() {
        let change_task = task(5, KindWithContent::NetworkTopologyChange);
        let mut change = TopologyChange::new(network(&["ms0"]), network(&["ms0", "ms1"]));
        let (older, newer, dump) = (clear(3), clear(8), task(9, KindWithContent::DumpCreation));
        let waiting = vec![&older, &change_task, &newer, &dump];
        assert_eq!(
            next_change_step(&change_task, &change, &waiting, false),
            ChangeStep::Index(vec![&older])
        );
        let without_older = vec![&change_task, &newer, &dump];
        assert_eq!(
            next_change_step(&change_task, &change, &without_older, false),
            ChangeStep::Change
        );
        change.advance();
        change.advance();
        assert_eq!(change.phase, ChangePhase::ImportingDocuments);
        assert_eq!(
            next_change_step(&change_task, &change, &without_older, false),
            ChangeStep::Index(vec![&newer])
        );
        assert_eq!(
            next_change_step(&change_task, &change, &[&change_task, &dump], false),
            ChangeStep::Wait
        );
    }

    #[test]
    fn rule_changes_run_as_their_own_batch_on_their_side_of_the_change() {
        let change_task = task(5, KindWithContent::NetworkTopologyChange);
        let mut change = TopologyChange::new(network(&["ms0"]), network(&["ms0", "ms1"]));
        let (older_rules, older) = (task(2, KindWithContent::DsrClear), clear(3));
        let newer = clear(7);
        let newer_rule = task(
            8,
            KindWithContent::DsrUpdate {
                rule_uid: "r".to_owned(),
                update: None,
            },
        );
        let waiting = vec![&older_rules, &older, &change_task, &newer, &newer_rule];
        assert_eq!(
            next_change_step(&change_task, &change, &waiting, false),
            ChangeStep::Rules(vec![2])
        );
        let waiting = vec![&older, &change_task, &newer, &newer_rule];
        assert_eq!(
            next_change_step(&change_task, &change, &waiting, false),
            ChangeStep::Index(vec![&older])
        );
        change.advance();
        change.advance();
        let waiting = vec![&change_task, &newer, &newer_rule];
        assert_eq!(
            next_change_step(&change_task, &change, &waiting, false),
            ChangeStep::Rules(vec![8])
        );
        let waiting = vec![&change_task, &newer];
        assert_eq!(
            next_change_step(&change_task, &change, &waiting, false),
            ChangeStep::Index(vec![&newer])
        );
    }

    #[test]
    fn a_batch_of_the_change_carries_it_and_says_so() {
        let inner = StopReason::ExhaustedEnqueuedTasksForIndex {
            index: "books".to_owned(),
        };
        let older = carrying_the_change(
            NextBatch::global(vec![3], inner.clone()),
            5,
            ChangePhase::WaitingForOlderTasks,
        );
        assert_eq!(older.network_change, Some(5));
        assert_eq!(
            older.strategy(),
            format!(
                "stopped after batching network task with id 5 and a batch of older tasks: {inner}"
            )
        );
        let imports = carrying_the_change(
            NextBatch::global(vec![8], inner.clone()),
            5,
            ChangePhase::ImportingDocuments,
        );
        assert_eq!(
            imports.strategy(),
            format!(
                "stopped after batching network task with id 5 and a batch of import tasks: {inner}"
            )
        );
    }

    #[test]
    fn deleting_waits_for_the_gate() {
        let change_task = task(1, KindWithContent::NetworkTopologyChange);
        let mut change = TopologyChange::new(network(&["ms0"]), network(&["ms0"]));
        change.phase = ChangePhase::DeletingDocuments;
        assert_eq!(
            next_change_step(&change_task, &change, &[], false),
            ChangeStep::Wait
        );
        assert_eq!(
            next_change_step(&change_task, &change, &[], true),
            ChangeStep::Change
        );
    }
}
