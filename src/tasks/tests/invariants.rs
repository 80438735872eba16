//! The queue's asserted invariants fire on the bad states they guard: an illegal status
//! change, a batch that starts a task not waiting for one or leaves one processing, waiting
//! tasks out of uid order, a document owner outside the index's shards, a webhook delivery of
//! a task still processing.

use std::sync::Arc;

use storage_engine::{Options, SyncMode};

use super::{addition, at, task};
use crate::control::webhooks::Webhooks;
use crate::tasks::autobatch::{AutobatchLimits, IndexState, next_batch};
use crate::tasks::model::{Kind, Status, Task};
use crate::tasks::owners::share_out;
use crate::tasks::queue::TaskQueue;

/// A queue in a fresh directory (kept alive by the returned guard) with `count` additions
/// to `movies` registered.
fn queue_with(count: u32) -> (tempfile::TempDir, TaskQueue) {
    let directory = tempfile::tempdir().expect("a temporary directory");
    let options = Options {
        sync_mode: SyncMode::None,
        initial_size_bytes: 1 << 16,
        ..Options::default()
    };
    let queue =
        TaskQueue::open(&directory.path().join("tasks.store"), options).expect("the queue opens");
    for uid in 0..count {
        queue
            .register(addition("movies", 1), None, at(i64::from(uid)))
            .expect("the task is registered");
    }
    (directory, queue)
}

#[test]
fn the_status_moves_forward_only() {
    use Status::{Canceled, Enqueued, Failed, Processing, Succeeded};
    let addition = Kind::DocumentAdditionOrUpdate;
    for (from, to, allowed) in [
        (Enqueued, Processing, true),
        (Enqueued, Canceled, true),
        (Enqueued, Succeeded, false),
        (Enqueued, Failed, false),
        (Processing, Succeeded, true),
        (Processing, Failed, true),
        (Processing, Canceled, true),
        (Processing, Enqueued, true),
        (Succeeded, Succeeded, true),
        (Succeeded, Enqueued, false),
        (Succeeded, Processing, false),
        (Failed, Processing, false),
        (Canceled, Enqueued, false),
    ] {
        assert_eq!(from.may_become(to, addition), allowed, "{from} → {to}");
    }
    assert!(Failed.may_become(Processing, Kind::UpgradeDatabase));
    assert!(Failed.may_become(Canceled, Kind::UpgradeDatabase));
    assert!(!Failed.may_become(Enqueued, Kind::UpgradeDatabase));
}

#[test]
#[should_panic(expected = "cannot go from succeeded to enqueued")]
fn a_finished_task_never_goes_back_to_the_queue() {
    let (_directory, queue) = queue_with(1);
    let (mut batch, mut tasks) = queue
        .start_batch(&[0], None, String::new(), at(1))
        .expect("the batch starts");
    tasks[0].status = Status::Succeeded;
    queue
        .finish_batch(&mut batch, &mut tasks, at(2))
        .expect("the batch finishes");
    let mut finished = queue
        .get_task(0)
        .expect("the queue reads")
        .expect("task 0 exists");
    finished.status = Status::Enqueued;
    let _ = queue.update_tasks(&[finished]);
}

#[test]
#[should_panic(expected = "cannot join batch 1: it does not wait for one")]
fn a_batch_never_starts_a_finished_task_again() {
    let (_directory, queue) = queue_with(1);
    let (mut batch, mut tasks) = queue
        .start_batch(&[0], None, String::new(), at(1))
        .expect("the batch starts");
    tasks[0].status = Status::Succeeded;
    queue
        .finish_batch(&mut batch, &mut tasks, at(2))
        .expect("the batch finishes");
    let _ = queue.start_batch(&[0], None, String::new(), at(3));
}

#[test]
#[should_panic(expected = "in uid order, each once")]
fn a_batch_starts_each_task_once() {
    let (_directory, queue) = queue_with(2);
    let _ = queue.start_batch(&[1, 0, 1], None, String::new(), at(1));
}

#[test]
#[should_panic(expected = "batch 0 finishes with its tasks [1] still processing")]
fn a_batch_never_ends_with_a_task_processing() {
    let (_directory, queue) = queue_with(2);
    let (mut batch, tasks) = queue
        .start_batch(&[0, 1], None, String::new(), at(1))
        .expect("the batch starts");
    let mut first = vec![tasks[0].clone()];
    first[0].status = Status::Succeeded;
    let _ = queue.finish_batch(&mut batch, &mut first, at(2));
}

#[test]
#[should_panic(expected = "batch 0 is finished: its uid cannot start the batch")]
fn a_finished_batch_uid_is_never_given_again() {
    let (_directory, queue) = queue_with(2);
    let (mut batch, mut tasks) = queue
        .start_batch(&[0], None, String::new(), at(1))
        .expect("the batch starts");
    tasks[0].status = Status::Succeeded;
    queue
        .finish_batch(&mut batch, &mut tasks, at(2))
        .expect("the batch finishes");
    let _ = queue.start_batch(&[1], Some(0), String::new(), at(3));
}

#[test]
#[should_panic(expected = "the waiting tasks come in uid order")]
fn the_autobatcher_takes_the_waiting_tasks_in_uid_order() {
    let tasks = [
        task(1, addition("movies", 1)),
        task(0, addition("movies", 1)),
    ];
    let references: Vec<&Task> = tasks.iter().collect();
    let _ = next_batch(
        &references,
        |_: &str| IndexState::Missing,
        AutobatchLimits::default(),
    );
}

#[test]
#[should_panic(expected = "owner Some(2) of a document of an index of 2 shards")]
fn a_document_goes_only_to_a_shard_of_its_index() {
    let _ = share_out(2, [(Some(0), "a"), (Some(2), "b")]);
}

#[test]
#[should_panic(expected = "the webhooks hear of the recorded tasks of one batch")]
fn the_webhooks_hear_only_of_recorded_tasks() {
    let mut processing = task(0, addition("movies", 1));
    processing.status = Status::Processing;
    processing.batch_uid = Some(0);
    crate::tasks::webhook_delivery::notify(Arc::new(Webhooks::default()), &[processing]);
}
