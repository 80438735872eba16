//! Index swaps: each task swaps (or renames) pairs of indexes in the catalog copy of the
//! batch; no shard is involved, the indexes' storages follow their records. A task fails,
//! changing nothing, when an index it names is missing, or when a rename's new uid is
//! taken.

use time::OffsetDateTime;

use super::Changes;
use crate::errors::{Code, ResponseError};
use crate::tasks::model::{KindWithContent, Task};
use crate::tasks::scheduler::{failed, succeeded_with};

/// Runs the swaps of `tasks`, in task order.
pub(super) fn swap_every_task(tasks: Vec<Task>, changes: &mut Changes) -> Vec<Task> {
    tasks
        .into_iter()
        .map(|task| swap_indexes(task, changes))
        .collect()
}

/// Swaps (or renames) indexes in the catalog.
fn swap_indexes(task: Task, changes: &mut Changes) -> Task {
    let KindWithContent::IndexSwap { swaps } = task.kind.clone() else {
        return failed(task, ResponseError::internal("not an index swap"));
    };
    let mut missing = Vec::new();
    for swap in &swaps {
        let (left, right) = &swap.indexes;
        if changes.catalog.get(left).is_none() {
            missing.push(left.clone());
        }
        if !swap.rename && changes.catalog.get(right).is_none() {
            missing.push(right.clone());
        }
    }
    if !missing.is_empty() {
        return failed(task, indexes_not_found(&missing));
    }
    for swap in &swaps {
        let right = &swap.indexes.1;
        if swap.rename && changes.catalog.get(right).is_some() {
            return failed(task, ResponseError::index_already_exists(right));
        }
    }
    let now = OffsetDateTime::now_utc();
    for swap in swaps {
        let (left, right) = swap.indexes;
        let left_record = changes.catalog.remove(&left);
        let right_record = changes.catalog.remove(&right);
        if let Some(record) = left_record {
            let mut record = record.as_ref().clone();
            record.uid = right.clone();
            record.updated_at = now;
            changes.put(record);
        }
        if let Some(record) = right_record {
            let mut record = record.as_ref().clone();
            record.uid = left.clone();
            record.updated_at = now;
            changes.put(record);
        }
    }
    changes.changed = true;
    succeeded_with(task, |_| {})
}

/// The error naming the `missing` indexes of a swap (at least one).
fn indexes_not_found(missing: &[String]) -> ResponseError {
    if let [name] = missing {
        return ResponseError::index_not_found(name);
    }
    let names: Vec<String> = missing.iter().map(|name| format!("`{name}`")).collect();
    ResponseError::new(
        Code::IndexNotFound,
        format!("Indexes {} not found.", names.join(", ")),
    )
}
