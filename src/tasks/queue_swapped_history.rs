//! A swap or a rename rewrites the task history, as Meilisearch's does: every task
//! registered before it that names one of the two indexes names the other one instead (its
//! type's index, a rename's new uid, the pairs of an earlier swap and their details), so
//! `GET /tasks?indexUids=` follows the indexes' data rather than their names.
//!
//! Invariants: only tasks with a uid below the swapping task's change; the rewrite is part
//! of the write transaction that records the swapping task's success, so the history and
//! the catalog change together; the secondary trees follow each rewritten task.

use std::collections::BTreeSet;

use storage_engine::{Direction, WriteTransaction};

use super::model::{Details, IndexSwap, KindWithContent, Status, Task, TaskUid};
use super::queue::{BY_INDEX_TREE, QueueResult, TaskQueue, index_prefix, trailing_uid};

impl TaskQueue {
    /// Rewrites the tasks before `before` that name `left` or `right` (see the module
    /// documentation).
    pub(super) fn swap_history(
        write: &WriteTransaction,
        left: &str,
        right: &str,
        before: TaskUid,
    ) -> QueueResult<()> {
        let mut uids = BTreeSet::new();
        let by_index = Self::tree(write, BY_INDEX_TREE)?;
        for index in [left, right] {
            for entry in by_index.prefix(&index_prefix(index), Direction::Forward)? {
                let (key, _) = entry?;
                let uid = trailing_uid(&key)?;
                if uid < before {
                    uids.insert(uid);
                }
            }
        }
        for uid in uids {
            if let Some(mut task) = Self::read_task_for_write(write, uid)? {
                swap_index_uids(&mut task, left, right);
                Self::write_task(write, &task)?;
            }
        }
        Ok(())
    }

    /// The history rewrites `tasks` (finished in one batch) call for: one per pair of a
    /// succeeded swap, and one per succeeded rename by an index update.
    pub(super) fn swap_history_for(write: &WriteTransaction, tasks: &[Task]) -> QueueResult<()> {
        for task in tasks.iter().filter(|task| task.status == Status::Succeeded) {
            match &task.kind {
                KindWithContent::IndexSwap { swaps } => {
                    for swap in swaps {
                        let (left, right) = &swap.indexes;
                        Self::swap_history(write, left, right, task.uid)?;
                    }
                }
                KindWithContent::IndexUpdate {
                    index_uid,
                    new_index_uid: Some(new_uid),
                    ..
                } if new_uid != index_uid => {
                    Self::swap_history(write, index_uid, new_uid, task.uid)?;
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// Every index uid `task` names, `left` swapped with `right`.
pub fn swap_index_uids(task: &mut Task, left: &str, right: &str) {
    let mut names: Vec<&mut String> = Vec::new();
    match &mut task.kind {
        KindWithContent::DocumentAdditionOrUpdate { index_uid, .. }
        | KindWithContent::DocumentDeletion { index_uid, .. }
        | KindWithContent::DocumentDeletionByFilter { index_uid, .. }
        | KindWithContent::DocumentEdition { index_uid, .. }
        | KindWithContent::DocumentClear { index_uid }
        | KindWithContent::SettingsUpdate { index_uid, .. }
        | KindWithContent::IndexDeletion { index_uid }
        | KindWithContent::IndexCreation { index_uid, .. }
        | KindWithContent::IndexCompaction { index_uid } => names.push(index_uid),
        KindWithContent::IndexUpdate {
            index_uid,
            new_index_uid,
            ..
        } => {
            names.push(index_uid);
            names.extend(new_index_uid.as_mut());
        }
        KindWithContent::IndexSwap { swaps } => names.extend(pair_names(swaps)),
        _ => {}
    }
    if let Some(Details::IndexSwap { swaps }) = &mut task.details {
        names.extend(pair_names(swaps));
    }
    for name in names {
        if name == left {
            right.clone_into(name);
        } else if name == right {
            left.clone_into(name);
        }
    }
}

/// Both names of every pair.
fn pair_names(swaps: &mut [IndexSwap]) -> impl Iterator<Item = &mut String> {
    swaps.iter_mut().flat_map(|swap| {
        let (left, right) = &mut swap.indexes;
        [left, right]
    })
}

#[cfg(test)]
mod tests {
    use time::OffsetDateTime;

    use super::*;

    fn task(kind: KindWithContent) -> Task {
        Task::new(1, kind, OffsetDateTime::UNIX_EPOCH, None)
    }

    #[test]
    fn every_name_of_either_index_is_swapped_and_others_are_kept() {
        let mut deletion = task(KindWithContent::IndexDeletion {
            index_uid: "a".into(),
        });
        swap_index_uids(&mut deletion, "a", "b");
        assert_eq!(deletion.kind.indexes(), vec!["b"]);

        let mut rename = task(KindWithContent::IndexUpdate {
            index_uid: "b".into(),
            primary_key: None,
            new_index_uid: Some("c".into()),
        });
        swap_index_uids(&mut rename, "a", "b");
        assert_eq!(rename.kind.indexes(), vec!["a", "c"]);

        let mut swap = task(KindWithContent::IndexSwap {
            swaps: vec![IndexSwap {
                indexes: ("a".into(), "x".into()),
                rename: false,
            }],
        });
        swap_index_uids(&mut swap, "a", "b");
        let Some(Details::IndexSwap { swaps }) = &swap.details else {
            panic!("a swap's details name its pairs: {:?}", swap.details);
        };
        assert_eq!(swaps[0].indexes, ("b".to_string(), "x".to_string()));
        assert_eq!(swap.kind.indexes(), vec!["b", "x"]);
    }
}
