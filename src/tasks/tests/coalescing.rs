//! When a batch waits for more payloads under search load (`tasks::coalescing`): only small
//! document batches with nothing else waiting, only while searches run, never past the window.

use std::time::Duration;

use super::{addition, at, task};
use crate::tasks::autobatch::{AutobatchLimits, IndexState, NextBatch, next_batch};
use crate::tasks::coalescing::{COALESCING_DOCUMENTS, COALESCING_WINDOW, pause};
use crate::tasks::model::{KindWithContent, Task};

fn plan(tasks: &[Task]) -> NextBatch {
    let references: Vec<&Task> = tasks.iter().collect();
    next_batch(
        &references,
        |_| IndexState::Missing,
        AutobatchLimits::default(),
    )
    .expect("a batch is formed")
}

fn settings(index: &str) -> KindWithContent {
    let mut settings = serde_json::Map::new();
    settings.insert("rankingRules".into(), serde_json::json!(["words"]));
    KindWithContent::SettingsUpdate {
        index_uid: index.to_owned(),
        settings,
        is_deletion: false,
        allow_index_creation: true,
    }
}

/// Milliseconds after `at(seconds)`.
fn after(seconds: i64, milliseconds: i64) -> time::OffsetDateTime {
    at(seconds) + time::Duration::milliseconds(milliseconds)
}

#[test]
fn a_small_document_batch_waits_out_the_rest_of_the_window_while_searches_run() {
    let waiting = vec![task(1, addition("a", 2_500)), task(2, addition("a", 2_500))];
    let next = plan(&waiting);
    // Task 1 was enqueued at `at(1)`: 300 ms later, 700 ms of the window are left.
    assert_eq!(
        pause(&next, &waiting, true, after(1, 300)),
        Some(COALESCING_WINDOW - Duration::from_millis(300))
    );
    assert_eq!(
        pause(&next, &waiting, false, after(1, 300)),
        None,
        "no search runs"
    );
    assert_eq!(
        pause(&next, &waiting, true, after(1, 1_000)),
        None,
        "the window is over"
    );
}

#[test]
fn big_batches_other_kinds_and_tasks_waiting_behind_start_at_once() {
    let big = vec![task(1, addition("a", COALESCING_DOCUMENTS))];
    assert_eq!(pause(&plan(&big), &big, true, after(1, 10)), None);
    let settings_only = vec![task(1, settings("a"))];
    assert_eq!(
        pause(&plan(&settings_only), &settings_only, true, after(1, 10)),
        None
    );
    // Another index's task waits behind the batch: it would wait too.
    let two_indexes = vec![task(1, addition("a", 10)), task(2, addition("b", 10))];
    let next = plan(&two_indexes);
    assert_eq!(next.task_uids, vec![1]);
    assert_eq!(pause(&next, &two_indexes, true, after(1, 10)), None);
    // A settings change after the additions closes the batch: it cannot grow.
    let closed = vec![task(1, addition("a", 10)), task(2, settings("a"))];
    let next = plan(&closed);
    assert_eq!(next.task_uids, vec![1]);
    assert_eq!(pause(&next, &closed, true, after(1, 10)), None);
}
