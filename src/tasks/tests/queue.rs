//! The durable queue on the page store: persistence across reopen, crash recovery,
//! filtered lists, cancelation and deletion.

use std::path::Path;

use storage_engine::{Options, SyncMode};

use super::{addition, at};
use crate::tasks::model::{Details, Kind, KindWithContent, Status, Task};
use crate::tasks::query::TaskQuery;
use crate::tasks::queue::{AllIndexes, TaskQueue, TaskVisibility};

fn options() -> Options {
    Options {
        sync_mode: SyncMode::None,
        initial_size_bytes: 1 << 16,
        ..Options::default()
    }
}

fn open(path: &Path) -> TaskQueue {
    TaskQueue::open(path, options()).expect("open succeeds")
}

fn uids(tasks: &[Task]) -> Vec<u32> {
    tasks.iter().map(|task| task.uid).collect()
}

/// Runs the batch of `task_uids` to success.
fn run(queue: &TaskQueue, task_uids: &[u32], seconds: i64) {
    let (mut batch, mut tasks) = queue
        .start_batch(
            task_uids,
            None,
            "batched all enqueued tasks".into(),
            at(seconds),
        )
        .expect("start_batch succeeds");
    for task in &mut tasks {
        task.status = Status::Succeeded;
        if let Some(Details::DocumentAdditionOrUpdate {
            received_documents,
            indexed_documents,
        }) = &mut task.details
        {
            *indexed_documents = Some(*received_documents);
        }
    }
    queue
        .finish_batch(&mut batch, &mut tasks, at(seconds + 1))
        .expect("finish_batch succeeds");
}

#[test]
fn registered_tasks_survive_reopen_and_uids_continue() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let path = directory.path().join("tasks.pages");
    {
        let queue = open(&path);
        for (expected, index) in ["movies", "books", "movies"].into_iter().enumerate() {
            let registered = queue
                .register(addition(index, 1), None, at(0))
                .expect("register succeeds");
            assert_eq!(registered.task.uid, expected as u32);
            assert_eq!(registered.task.status, Status::Enqueued);
        }
        run(&queue, &[0, 2], 5);
    }
    let queue = open(&path);
    assert!(queue.interrupted_at_open().is_empty());
    assert_eq!(queue.next_task_uid().expect("next_task_uid succeeds"), 3);
    let task = queue
        .get_task(2)
        .expect("get_task succeeds")
        .expect("the value exists");
    assert_eq!(
        (task.status, task.batch_uid, task.finished_at),
        (Status::Succeeded, Some(0), Some(at(6)))
    );
    let batch = queue
        .get_batch(0)
        .expect("get_batch succeeds")
        .expect("the value exists");
    assert_eq!(batch.stats.total_nb_tasks, 2);
    assert_eq!(batch.finished_at, Some(at(6)));
    let registered = queue
        .register(KindWithContent::DumpCreation, Some("m".into()), at(9))
        .expect("register succeeds");
    assert_eq!(registered.task.uid, 3);
    assert_eq!(registered.task.custom_metadata.as_deref(), Some("m"));
}

#[test]
fn tasks_processing_at_open_are_reported_and_requeued() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let path = directory.path().join("tasks.pages");
    {
        let queue = open(&path);
        queue
            .register(addition("movies", 1), None, at(0))
            .expect("register succeeds");
        queue
            .register(addition("movies", 1), None, at(1))
            .expect("register succeeds");
        queue
            .start_batch(&[0, 1], None, "batched all enqueued tasks".into(), at(2))
            .expect("start_batch succeeds");
        // The process dies here: the batch never finishes.
    }
    let mut queue = open(&path);
    assert_eq!(queue.interrupted_at_open(), [0, 1]);
    assert_eq!(
        queue
            .requeue_interrupted()
            .expect("requeue_interrupted succeeds"),
        [0, 1]
    );
    let task = queue
        .get_task(0)
        .expect("get_task succeeds")
        .expect("the value exists");
    assert_eq!(
        (task.status, task.batch_uid, task.started_at),
        (Status::Enqueued, None, None)
    );
    assert_eq!(queue.get_batch(0).expect("get_batch succeeds"), None);
    assert_eq!(
        uids(&queue.waiting_tasks().expect("waiting_tasks succeeds")),
        [0, 1]
    );
    drop(queue);
    assert!(open(&path).interrupted_at_open().is_empty());
}

#[test]
fn lists_filter_through_secondary_trees_newest_first() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let queue = open(&directory.path().join("tasks.pages"));
    for index in ["movies", "books", "movies", "books", "movies"] {
        queue
            .register(addition(index, 1), None, at(0))
            .expect("register succeeds");
    }
    queue
        .register(KindWithContent::DumpCreation, None, at(0))
        .expect("register succeeds");
    run(&queue, &[0, 2], 10);
    let list = |query: TaskQuery| {
        queue
            .list_tasks(&query, &AllIndexes)
            .expect("list_tasks succeeds")
    };

    let page = list(TaskQuery {
        limit: Some(20),
        ..TaskQuery::default()
    });
    assert_eq!(
        (uids(&page.results), page.total, page.from, page.next),
        (vec![5, 4, 3, 2, 1, 0], 6, Some(5), None)
    );
    let page = list(TaskQuery {
        limit: Some(2),
        statuses: Some(vec![Status::Enqueued]),
        ..TaskQuery::default()
    });
    assert_eq!(
        (uids(&page.results), page.total, page.next),
        (vec![5, 4], 4, Some(3))
    );
    let page = list(TaskQuery {
        limit: Some(2),
        reverse: Some(true),
        from: Some(1),
        ..TaskQuery::default()
    });
    assert_eq!((uids(&page.results), page.next), (vec![1, 2], Some(3)));
    let page = list(TaskQuery {
        limit: Some(20),
        index_uids: Some(vec!["movies".into()]),
        statuses: Some(vec![Status::Enqueued]),
        ..TaskQuery::default()
    });
    assert_eq!((uids(&page.results), page.total), (vec![4], 1));
    let page = list(TaskQuery {
        limit: Some(20),
        batch_uids: Some(vec![0]),
        ..TaskQuery::default()
    });
    assert_eq!(uids(&page.results), [2, 0]);
    let page = list(TaskQuery {
        limit: Some(20),
        types: Some(vec![Kind::DumpCreation]),
        ..TaskQuery::default()
    });
    assert_eq!(uids(&page.results), [5]);
    let page = list(TaskQuery {
        limit: Some(20),
        after_finished_at: Some(at(10)),
        ..TaskQuery::default()
    });
    assert_eq!(uids(&page.results), [2, 0]);
}

struct OnlyMovies;

impl TaskVisibility for OnlyMovies {
    fn all_indexes_authorized(&self) -> bool {
        false
    }

    fn is_index_authorized(&self, index: &str) -> bool {
        index == "movies"
    }
}

#[test]
fn index_filters_and_restricted_keys_hide_global_tasks_but_total_counts_them() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let queue = open(&directory.path().join("tasks.pages"));
    queue
        .register(addition("movies", 1), None, at(0))
        .expect("register succeeds");
    queue
        .register(addition("books", 1), None, at(0))
        .expect("register succeeds");
    queue
        .register(KindWithContent::DumpCreation, None, at(0))
        .expect("register succeeds");
    let page = queue
        .list_tasks(
            &TaskQuery {
                limit: Some(20),
                ..TaskQuery::default()
            },
            &OnlyMovies,
        )
        .expect("list_tasks succeeds");
    assert_eq!((uids(&page.results), page.total), (vec![0], 3));
    let matched = queue
        .matching_task_uids(&TaskQuery::default(), &OnlyMovies)
        .expect("matching_task_uids succeeds");
    assert_eq!(matched, [0]);
}

#[test]
fn cancelation_cancels_enqueued_tasks_and_names_the_batch_to_interrupt() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let queue = open(&directory.path().join("tasks.pages"));
    queue
        .register(addition("movies", 2), None, at(0))
        .expect("register succeeds");
    queue
        .register(addition("books", 1), None, at(1))
        .expect("register succeeds");
    queue
        .register(addition("books", 1), None, at(2))
        .expect("register succeeds");
    run(&queue, &[2], 3);
    queue
        .start_batch(
            &[0],
            None,
            "batched all enqueued tasks for index `movies`".into(),
            at(5),
        )
        .expect("start_batch succeeds");

    let matched = queue
        .matching_task_uids(&TaskQuery::default(), &AllIndexes)
        .expect("matching_task_uids succeeds");
    assert_eq!(matched, [0, 1, 2]);
    let kind = KindWithContent::TaskCancelation {
        query: "?statuses=*".into(),
        tasks: matched.clone(),
    };
    let registered = queue
        .register(kind, None, at(6))
        .expect("register succeeds");
    assert_eq!(registered.interrupt_batch, Some(1));
    assert_eq!(queue.abort_batch(1).expect("abort_batch succeeds"), [0]);
    assert_eq!(queue.get_batch(1).expect("get_batch succeeds"), None);

    let canceled = queue
        .cancel_matched(3, &matched)
        .expect("cancel_matched succeeds");
    assert_eq!(uids(&canceled), [0, 1]);
    assert!(
        canceled
            .iter()
            .all(|task| task.status == Status::Canceled && task.canceled_by == Some(3))
    );
    assert_eq!(
        canceled[0].details,
        Some(Details::DocumentAdditionOrUpdate {
            received_documents: 2,
            indexed_documents: Some(0)
        })
    );
    let (mut batch, mut tasks) = queue
        .start_batch(&[3], None, "cancel".into(), at(7))
        .expect("start_batch succeeds");
    assert_eq!(batch.uid, 1);
    tasks[0].status = Status::Succeeded;
    tasks[0].details = Some(Details::TaskCancelation {
        matched_tasks: 3,
        canceled_tasks: Some(2),
        original_filter: "?statuses=*".into(),
    });
    tasks.extend(canceled);
    queue
        .finish_batch(&mut batch, &mut tasks, at(8))
        .expect("finish_batch succeeds");

    let stored = queue
        .get_task(0)
        .expect("get_task succeeds")
        .expect("the value exists");
    assert_eq!(
        (
            stored.status,
            stored.batch_uid,
            stored.started_at,
            stored.finished_at
        ),
        (Status::Canceled, Some(1), Some(at(7)), Some(at(8)))
    );
    let batch = queue
        .get_batch(1)
        .expect("get_batch succeeds")
        .expect("the value exists");
    assert_eq!(batch.stats.total_nb_tasks, 3);
    let page = queue
        .list_tasks(
            &TaskQuery {
                limit: Some(20),
                canceled_by: Some(vec![3]),
                ..TaskQuery::default()
            },
            &AllIndexes,
        )
        .expect("list_tasks succeeds");
    assert_eq!(uids(&page.results), [1, 0]);
    let batches = queue
        .list_batches(
            &TaskQuery {
                limit: Some(20),
                canceled_by: Some(vec![3]),
                ..TaskQuery::default()
            },
            &AllIndexes,
        )
        .expect("list_batches succeeds");
    assert_eq!(
        batches
            .results
            .iter()
            .map(|batch| batch.uid)
            .collect::<Vec<_>>(),
        [1]
    );
    assert!(
        queue
            .waiting_tasks()
            .expect("waiting_tasks succeeds")
            .is_empty()
    );
}

#[test]
fn deletion_removes_only_finished_tasks_and_empty_batches() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let path = directory.path().join("tasks.pages");
    let queue = open(&path);
    queue
        .register(addition("movies", 1), None, at(0))
        .expect("register succeeds");
    queue
        .register(addition("movies", 1), None, at(1))
        .expect("register succeeds");
    queue
        .register(addition("books", 1), None, at(2))
        .expect("register succeeds");
    run(&queue, &[0], 3);
    queue
        .start_batch(&[1], None, "x".into(), at(4))
        .expect("start_batch succeeds");
    let deleted = queue
        .delete_matched(&[0, 1, 2])
        .expect("delete_matched succeeds");
    assert_eq!(deleted, [0]);
    assert_eq!(queue.get_task(0).expect("get_task succeeds"), None);
    assert_eq!(queue.get_batch(0).expect("get_batch succeeds"), None);
    assert_eq!(
        queue
            .get_task(1)
            .expect("get_task succeeds")
            .expect("the value exists")
            .status,
        Status::Processing
    );
    assert_eq!(
        queue
            .get_task(2)
            .expect("get_task succeeds")
            .expect("the value exists")
            .status,
        Status::Enqueued
    );
    let page = queue
        .list_tasks(
            &TaskQuery {
                limit: Some(20),
                index_uids: Some(vec!["movies".into()]),
                ..TaskQuery::default()
            },
            &AllIndexes,
        )
        .expect("list_tasks succeeds");
    assert_eq!(uids(&page.results), [1]);
    drop(queue);
    let queue = open(&path);
    assert_eq!(queue.next_task_uid().expect("next_task_uid succeeds"), 3);
}

#[test]
fn batches_list_by_status_type_and_index() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let queue = open(&directory.path().join("tasks.pages"));
    queue
        .register(addition("movies", 1), None, at(0))
        .expect("register succeeds");
    queue
        .register(addition("books", 1), None, at(1))
        .expect("register succeeds");
    queue
        .register(KindWithContent::DumpCreation, None, at(2))
        .expect("register succeeds");
    run(&queue, &[0], 3);
    run(&queue, &[1], 5);
    queue
        .start_batch(&[2], None, "dump".into(), at(7))
        .expect("start_batch succeeds");
    let list = |query: TaskQuery| -> Vec<u32> {
        queue
            .list_batches(
                &TaskQuery {
                    limit: Some(20),
                    ..query
                },
                &AllIndexes,
            )
            .expect("list_batches succeeds")
            .results
            .iter()
            .map(|batch| batch.uid)
            .collect()
    };
    assert_eq!(list(TaskQuery::default()), [2, 1, 0]);
    assert_eq!(
        list(TaskQuery {
            statuses: Some(vec![Status::Processing]),
            ..TaskQuery::default()
        }),
        [2]
    );
    assert_eq!(
        list(TaskQuery {
            statuses: Some(vec![Status::Enqueued]),
            ..TaskQuery::default()
        }),
        Vec::<u32>::new()
    );
    assert_eq!(
        list(TaskQuery {
            types: Some(vec![Kind::DumpCreation]),
            ..TaskQuery::default()
        }),
        [2]
    );
    assert_eq!(
        list(TaskQuery {
            index_uids: Some(vec!["books".into()]),
            ..TaskQuery::default()
        }),
        [1]
    );
    assert_eq!(
        list(TaskQuery {
            uids: Some(vec![0]),
            ..TaskQuery::default()
        }),
        [0]
    );
    assert_eq!(
        list(TaskQuery {
            reverse: Some(true),
            from: Some(1),
            ..TaskQuery::default()
        }),
        [1, 2]
    );
    assert_eq!(
        list(TaskQuery {
            after_finished_at: Some(at(0)),
            ..TaskQuery::default()
        }),
        [1, 0]
    );
}

#[test]
fn requested_uids_below_the_next_are_refused_and_dry_runs_store_nothing() {
    use crate::tasks::queue::RegisterOptions;
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let queue = open(&directory.path().join("tasks.pages"));
    let requested = RegisterOptions {
        requested_uid: Some(10),
        dry_run: false,
        network: None,
        network_change: None,
    };
    assert_eq!(
        queue
            .register_with(addition("movies", 1), None, at(0), requested)
            .expect("register_with succeeds")
            .task
            .uid,
        10
    );
    let error = queue
        .register_with(
            addition("movies", 1),
            None,
            at(0),
            RegisterOptions {
                requested_uid: Some(3),
                dry_run: false,
                network: None,
                network_change: None,
            },
        )
        .unwrap_err();
    let response: crate::errors::ResponseError = error.into();
    assert_eq!(response.code, crate::errors::Code::BadRequest);
    assert_eq!(
        response.message,
        "Received bad task id: 3 should be >= to 11."
    );
    let dry = queue
        .register_with(
            addition("movies", 1),
            None,
            at(0),
            RegisterOptions {
                requested_uid: None,
                dry_run: true,
                network: None,
                network_change: None,
            },
        )
        .expect("register_with succeeds");
    assert_eq!(dry.task.uid, 11);
    assert_eq!(queue.get_task(11).expect("get_task succeeds"), None);
    assert_eq!(queue.next_task_uid().expect("next_task_uid succeeds"), 11);
}

#[test]
fn a_full_queue_registers_the_deletion_of_its_oldest_finished_tasks() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let queue = open(&directory.path().join("tasks.pages"));
    for second in 0..4 {
        queue
            .register(addition("movies", 1), None, at(second))
            .expect("register succeeds");
    }
    assert_eq!(
        queue
            .register_cleanup_if_needed(5, at(9))
            .expect("register_cleanup_if_needed succeeds"),
        None
    );
    assert_eq!(
        queue
            .register_cleanup_if_needed(4, at(9))
            .expect("register_cleanup_if_needed succeeds"),
        None,
        "nothing finished yet"
    );
    run(&queue, &[0, 1, 2], 5);
    let registered = queue
        .register_cleanup_if_needed(4, at(9))
        .expect("register_cleanup_if_needed succeeds")
        .expect("the value exists");
    assert_eq!(
        registered.task.kind,
        KindWithContent::TaskDeletion {
            query: "?beforeEnqueuedAt=2024-08-08T17:05:57.000000001Z&statuses=succeeded,failed,canceled".into(),
            tasks: vec![0, 1, 2],
        }
    );
    assert!(!queue.is_full());
}

struct Only(&'static [&'static str]);

impl TaskVisibility for Only {
    fn all_indexes_authorized(&self) -> bool {
        false
    }

    fn is_index_authorized(&self, index: &str) -> bool {
        self.0.contains(&index)
    }
}

#[test]
fn swaps_are_hidden_by_index_filters_and_by_keys_missing_one_side() {
    use crate::tasks::model::IndexSwap;
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let queue = open(&directory.path().join("tasks.pages"));
    let creation = |index: &str| KindWithContent::IndexCreation {
        index_uid: index.into(),
        primary_key: None,
    };
    let swap = |left: &str, right: &str| KindWithContent::IndexSwap {
        swaps: vec![IndexSwap {
            indexes: (left.into(), right.into()),
            rename: false,
        }],
    };
    queue
        .register(creation("catto"), None, at(0))
        .expect("register succeeds");
    queue
        .register(creation("doggo"), None, at(1))
        .expect("register succeeds");
    queue
        .register(swap("catto", "doggo"), None, at(2))
        .expect("register succeeds");
    queue
        .register(swap("catto", "whalo"), None, at(3))
        .expect("register succeeds");
    let catto = TaskQuery {
        index_uids: Some(vec!["catto".into()]),
        ..TaskQuery::default()
    };
    let everything = TaskQuery::default();
    assert_eq!(
        queue
            .matching_task_uids(&catto, &AllIndexes)
            .expect("matching_task_uids succeeds"),
        [0]
    );
    assert_eq!(
        queue
            .matching_task_uids(&catto, &Only(&["doggo"]))
            .expect("matching_task_uids succeeds"),
        Vec::<u32>::new()
    );
    assert_eq!(
        queue
            .matching_task_uids(&everything, &Only(&["doggo"]))
            .expect("matching_task_uids succeeds"),
        [1]
    );
    assert_eq!(
        queue
            .matching_task_uids(&everything, &Only(&["catto", "doggo"]))
            .expect("matching_task_uids succeeds"),
        [0, 1]
    );
    assert_eq!(
        queue
            .matching_task_uids(&everything, &AllIndexes)
            .expect("matching_task_uids succeeds"),
        [0, 1, 2, 3]
    );
}

#[test]
fn indexed_pages_agree_with_checking_every_task() {
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let queue = open(&directory.path().join("tasks.pages"));
    for uid in 0..12u32 {
        let index = ["movies", "books", "games"][uid as usize % 3];
        queue
            .register(addition(index, 1), None, at(i64::from(uid)))
            .expect("register succeeds");
    }
    queue
        .register(KindWithContent::DumpCreation, None, at(20))
        .expect("register succeeds");
    run(&queue, &[0, 3, 6], 30);
    run(&queue, &[1, 4], 32);
    let queries = [
        TaskQuery::default(),
        TaskQuery {
            from: Some(7),
            ..TaskQuery::default()
        },
        TaskQuery {
            from: Some(7),
            reverse: Some(true),
            ..TaskQuery::default()
        },
        TaskQuery {
            uids: Some(vec![1, 5, 99]),
            ..TaskQuery::default()
        },
        TaskQuery {
            statuses: Some(vec![Status::Succeeded]),
            from: Some(3),
            ..TaskQuery::default()
        },
        TaskQuery {
            index_uids: Some(vec!["movies".into(), "games".into()]),
            ..TaskQuery::default()
        },
        TaskQuery {
            batch_uids: Some(vec![1]),
            types: Some(vec![Kind::DocumentAdditionOrUpdate]),
            ..TaskQuery::default()
        },
    ];
    for query in queries {
        for limit in [0, 2, 20] {
            let indexed = TaskQuery {
                limit: Some(limit),
                ..query.clone()
            };
            // A bound every task passes forces the path that checks each task.
            let checked = TaskQuery {
                after_enqueued_at: Some(at(-1000)),
                ..indexed.clone()
            };
            let left = queue
                .list_tasks(&indexed, &AllIndexes)
                .expect("list_tasks succeeds");
            let right = queue
                .list_tasks(&checked, &AllIndexes)
                .expect("list_tasks succeeds");
            assert_eq!(
                (uids(&left.results), left.total, left.from, left.next),
                (uids(&right.results), right.total, right.from, right.next),
                "{indexed:?}"
            );
        }
    }
    let page = queue
        .list_tasks(
            &TaskQuery {
                limit: Some(20),
                uids: Some(vec![1, 99]),
                ..TaskQuery::default()
            },
            &AllIndexes,
        )
        .expect("list_tasks succeeds");
    assert_eq!((uids(&page.results), page.total), (vec![1], 1));
}

#[test]
fn swaps_naming_an_index_twice_are_refused_at_registration() {
    use crate::tasks::model::IndexSwap;
    let directory = tempfile::tempdir().expect("tempdir succeeds");
    let queue = open(&directory.path().join("tasks.pages"));
    let swap = |pairs: &[(&str, &str)]| KindWithContent::IndexSwap {
        swaps: pairs
            .iter()
            .map(|(left, right)| IndexSwap {
                indexes: ((*left).into(), (*right).into()),
                rename: false,
            })
            .collect(),
    };
    let refused = |kind| -> crate::errors::ResponseError {
        queue.register(kind, None, at(0)).unwrap_err().into()
    };
    let error = refused(swap(&[("a", "b"), ("b", "c")]));
    assert_eq!(
        error.code,
        crate::errors::Code::InvalidSwapDuplicateIndexFound
    );
    assert_eq!(
        error.message,
        "Indexes must be declared only once during a swap. `b` was specified several times."
    );
    let error = refused(swap(&[("a", "b"), ("b", "a")]));
    assert_eq!(
        error.message,
        "Indexes must be declared only once during a swap. `a`, `b` were specified several times."
    );
    assert_eq!(queue.next_task_uid().expect("next_task_uid succeeds"), 0);
    assert_eq!(
        queue
            .register(swap(&[("a", "b")]), None, at(0))
            .expect("register succeeds")
            .task
            .uid,
        0
    );
}
