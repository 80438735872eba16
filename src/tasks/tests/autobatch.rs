//! The next batch and its strategy text, from Meilisearch's `create_batch.rs` and
//! `autobatcher.rs` rules.

use serde_json::json;

use super::{addition, task};
use crate::tasks::autobatch::{
    AutobatchLimits, BatchKind, BatchPlan, IndexState, NextBatch, next_batch,
};
use crate::tasks::model::{DocumentMethod, KindWithContent, Status, Task};

fn missing(_: &str) -> IndexState {
    IndexState::Missing
}

fn plan(tasks: &[Task]) -> NextBatch {
    plan_with(tasks, missing, AutobatchLimits::default())
}

fn plan_with(
    tasks: &[Task],
    state: impl Fn(&str) -> IndexState,
    limits: AutobatchLimits,
) -> NextBatch {
    let references: Vec<&Task> = tasks.iter().collect();
    next_batch(&references, state, limits).expect("a batch is formed")
}

fn settings(index: &str) -> KindWithContent {
    let mut settings = serde_json::Map::new();
    settings.insert("rankingRules".into(), json!(["words"]));
    KindWithContent::SettingsUpdate {
        index_uid: index.into(),
        settings,
        is_deletion: false,
        allow_index_creation: true,
    }
}

fn with_primary_key(index: &str, primary_key: &str) -> KindWithContent {
    match addition(index, 1) {
        KindWithContent::DocumentAdditionOrUpdate {
            index_uid,
            method,
            content_file,
            documents_count,
            content_bytes,
            allow_index_creation,
            ..
        } => KindWithContent::DocumentAdditionOrUpdate {
            index_uid,
            primary_key: Some(primary_key.into()),
            method,
            content_file,
            documents_count,
            content_bytes,
            allow_index_creation,
            skip_creation: false,
        },
        other => other,
    }
}

#[test]
fn nothing_waiting_forms_no_batch() {
    assert_eq!(next_batch(&[], missing, AutobatchLimits::default()), None);
}

#[test]
fn the_newest_cancelation_runs_first_and_alone() {
    let tasks = [
        task(0, addition("movies", 1)),
        task(
            1,
            KindWithContent::TaskCancelation {
                query: "?uids=0".into(),
                tasks: vec![0],
            },
        ),
        task(
            2,
            KindWithContent::TaskCancelation {
                query: "?uids=0".into(),
                tasks: vec![0],
            },
        ),
        task(
            3,
            KindWithContent::TaskDeletion {
                query: "?uids=0".into(),
                tasks: vec![0],
            },
        ),
    ];
    let batch = plan(&tasks);
    assert_eq!(batch.task_uids, [2]);
    assert_eq!(batch.plan, BatchPlan::Global);
    assert_eq!(
        batch.strategy(),
        "created batch containing only task with id 2 of type `taskCancelation` that cannot be batched with any other task."
    );
}

#[test]
fn global_tasks_follow_the_priority_order() {
    let mut tasks = vec![
        task(0, addition("movies", 1)),
        task(1, KindWithContent::DumpCreation),
        task(2, KindWithContent::SnapshotCreation),
        task(3, KindWithContent::SnapshotCreation),
        task(
            4,
            KindWithContent::Export {
                url: "http://x".into(),
                api_key: None,
                payload_size: None,
                indexes: Default::default(),
            },
        ),
        task(
            5,
            KindWithContent::IndexCompaction {
                index_uid: "movies".into(),
            },
        ),
        task(
            6,
            KindWithContent::TaskDeletion {
                query: "?uids=0".into(),
                tasks: vec![0],
            },
        ),
        task(
            7,
            KindWithContent::TaskDeletion {
                query: "?uids=1".into(),
                tasks: vec![1],
            },
        ),
        task(8, KindWithContent::UpgradeDatabase { from: (1, 12, 0) }),
    ];
    let expected = [
        (
            vec![8],
            "stopped after the last task of type `upgradeDatabase` because they cannot be batched with tasks of any other type.",
        ),
        (
            vec![6, 7],
            "stopped after the last task of type `taskDeletion` because they cannot be batched with tasks of any other type.",
        ),
        (
            vec![5],
            "created batch containing only task with id 5 of type `indexCompaction` that cannot be batched with any other task.",
        ),
        (
            vec![4],
            "created batch containing only task with id 4 of type `export` that cannot be batched with any other task.",
        ),
        (
            vec![2, 3],
            "stopped after the last task of type `snapshotCreation` because they cannot be batched with tasks of any other type.",
        ),
        (
            vec![1],
            "created batch containing only task with id 1 of type `dumpCreation` that cannot be batched with any other task.",
        ),
        (vec![0], "batched all enqueued tasks"),
    ];
    for (uids, strategy) in expected {
        let batch = plan(&tasks);
        assert_eq!(
            (batch.task_uids.clone(), batch.strategy().as_str()),
            (uids.clone(), strategy)
        );
        tasks.retain(|task| !uids.contains(&task.uid));
    }
    assert!(tasks.is_empty());
}

#[test]
fn failed_upgrades_are_retried_in_their_previous_batch() {
    let mut failed = task(0, KindWithContent::UpgradeDatabase { from: (1, 12, 0) });
    failed.status = Status::Failed;
    failed.batch_uid = Some(3);
    let batch = plan(&[failed, task(1, addition("movies", 1))]);
    assert_eq!((batch.task_uids, batch.reuse_batch_uid), (vec![0], Some(3)));
}

#[test]
fn additions_replacements_and_updates_of_one_index_batch_together() {
    let mut update = addition("movies", 3);
    if let KindWithContent::DocumentAdditionOrUpdate { method, .. } = &mut update {
        *method = DocumentMethod::Update;
    }
    let tasks = [
        task(0, addition("movies", 1)),
        task(1, update),
        task(2, addition("books", 1)),
        task(3, addition("movies", 2)),
    ];
    let batch = plan(&tasks);
    assert_eq!(batch.task_uids, [0, 1, 3]);
    assert_eq!(
        batch.strategy(),
        "batched all enqueued tasks for index `movies`"
    );
    match batch.plan {
        BatchPlan::Index {
            index_uid,
            kind: BatchKind::DocumentOperation { operation_ids, .. },
            must_create_index,
        } => {
            assert_eq!(
                (index_uid.as_str(), operation_ids, must_create_index),
                ("movies", vec![0, 1, 3], true)
            );
        }
        other => panic!("unexpected plan {other:?}"),
    }
}

#[test]
fn settings_stop_before_a_document_operation() {
    let tasks = [
        task(0, settings("movies")),
        task(1, settings("movies")),
        task(2, addition("movies", 1)),
    ];
    let batch = plan(&tasks);
    assert_eq!(batch.task_uids, [0, 1]);
    assert_eq!(
        batch.strategy(),
        "stopped before task with id 2 because it is a document operation which cannot be batched with settings changes"
    );
    let tasks = [task(0, addition("movies", 1)), task(1, settings("movies"))];
    assert_eq!(
        plan(&tasks).strategy(),
        "stopped before task with id 1 because it is a settings change which cannot be batched with document operations"
    );
}

#[test]
fn index_creation_is_a_batch_of_its_own() {
    let tasks = [
        task(
            0,
            KindWithContent::IndexCreation {
                index_uid: "movies".into(),
                primary_key: None,
            },
        ),
        task(1, addition("movies", 1)),
    ];
    let batch = plan(&tasks);
    assert_eq!(batch.task_uids, [0]);
    assert_eq!(
        batch.strategy(),
        "created batch containing only task with id 0 of type `indexCreation` that cannot be batched with any other task."
    );
    let tasks = [
        task(0, addition("movies", 1)),
        task(
            1,
            KindWithContent::IndexCreation {
                index_uid: "movies".into(),
                primary_key: None,
            },
        ),
    ];
    assert_eq!(
        plan(&tasks).strategy(),
        "created batch containing only task with id 1 of type `indexCreation` that cannot be batched with any other task."
    );
}

#[test]
fn index_deletion_ends_the_batch_it_joins() {
    let tasks = [
        task(0, addition("movies", 1)),
        task(
            1,
            KindWithContent::IndexDeletion {
                index_uid: "movies".into(),
            },
        ),
        task(2, addition("movies", 1)),
    ];
    let batch = plan(&tasks);
    assert_eq!(batch.task_uids, [0, 1]);
    assert_eq!(
        batch.strategy(),
        "stopped after task with id 1 because it deletes the index"
    );
}

#[test]
fn deletion_by_filter_does_not_batch_with_document_operations() {
    let by_filter = KindWithContent::DocumentDeletionByFilter {
        index_uid: "movies".into(),
        filter: json!("a = 1"),
    };
    let tasks = [task(0, addition("movies", 1)), task(1, by_filter.clone())];
    assert_eq!(
        plan(&tasks).strategy(),
        "stopped before task with id 1 because it is a deletion by filter which cannot be batched with document operations"
    );
    let tasks = [task(0, by_filter), task(1, addition("movies", 1))];
    let exists = |_: &str| IndexState::Exists { primary_key: None };
    assert_eq!(
        plan_with(&tasks, exists, AutobatchLimits::default()).strategy(),
        "stopped before task with id 1 because it is a document operation which cannot be batched with deletions by filter"
    );
}

#[test]
fn deletion_then_addition_that_would_create_the_index_stops() {
    let deletion = KindWithContent::DocumentDeletion {
        index_uid: "movies".into(),
        document_ids: vec!["1".into()],
    };
    let tasks = [task(0, deletion.clone()), task(1, addition("movies", 1))];
    assert_eq!(
        plan(&tasks).strategy(),
        "stopped batching before task with id 1 because its index creation rules differ from the ones from the batch"
    );
    let exists = |_: &str| IndexState::Exists { primary_key: None };
    let batch = plan_with(&tasks, exists, AutobatchLimits::default());
    assert_eq!(
        (batch.task_uids.clone(), batch.strategy()),
        (vec![0, 1], "batched all enqueued tasks".to_owned())
    );
}

#[test]
fn primary_keys_must_agree_with_the_index_and_the_batch() {
    let with_key = |_: &str| IndexState::Exists {
        primary_key: Some("id".into()),
    };
    let tasks = [task(0, with_primary_key("movies", "uid"))];
    assert_eq!(
        plan_with(&tasks, with_key, AutobatchLimits::default()).strategy(),
        "stopped batching before task with id 0 because its primary key `uid` is different from the primary key of the index `id`"
    );
    let tasks = [
        task(0, with_primary_key("movies", "id")),
        task(1, with_primary_key("movies", "uid")),
    ];
    assert_eq!(
        plan(&tasks).strategy(),
        "stopped batching before task with id 1 because its primary key `uid` is different from the primary key of the batch `id`"
    );
    let tasks = [
        task(0, addition("movies", 1)),
        task(1, with_primary_key("movies", "uid")),
    ];
    assert_eq!(
        plan(&tasks).strategy(),
        "stopped batching before task with id 1 because it is setting the `uid` primary key and it would interfere with primary key guessing of the batch"
    );
}

#[test]
fn task_and_size_limits_cut_the_batch() {
    let tasks: Vec<Task> = (0..5).map(|uid| task(uid, addition("movies", 1))).collect();
    let limits = AutobatchLimits {
        max_tasks_per_batch: 2,
        ..AutobatchLimits::default()
    };
    let batch = plan_with(&tasks, missing, limits);
    assert_eq!(
        (batch.task_uids.clone(), batch.strategy()),
        (
            vec![0, 1],
            "batched up to configured batch limit of 2 tasks".to_owned()
        )
    );
    let limits = AutobatchLimits {
        max_payload_bytes: 250,
        ..AutobatchLimits::default()
    };
    let batch = plan_with(&tasks, missing, limits);
    assert_eq!(
        (batch.task_uids.clone(), batch.strategy()),
        (
            vec![0, 1],
            "batched up to configured batch size limit of 250B with a total of 300B".to_owned()
        )
    );
    let limits = AutobatchLimits {
        max_payload_bytes: 10,
        ..AutobatchLimits::default()
    };
    assert_eq!(plan_with(&tasks, missing, limits).task_uids, [0]);
    let limits = AutobatchLimits {
        autobatching_enabled: false,
        ..AutobatchLimits::default()
    };
    assert_eq!(
        plan_with(&tasks, missing, limits).strategy(),
        "batched up to configured batch limit of 1 tasks"
    );
}

#[test]
fn clears_absorb_deletions_and_settings_absorb_clears() {
    let clear = KindWithContent::DocumentClear {
        index_uid: "movies".into(),
    };
    let deletion = KindWithContent::DocumentDeletion {
        index_uid: "movies".into(),
        document_ids: vec!["1".into()],
    };
    let tasks = [
        task(0, clear.clone()),
        task(1, deletion),
        task(2, clear.clone()),
    ];
    assert!(matches!(
        plan(&tasks).plan,
        BatchPlan::Index {
            kind: BatchKind::DocumentClear { .. },
            ..
        }
    ));
    let tasks = [
        task(0, settings("movies")),
        task(1, clear),
        task(2, settings("movies")),
    ];
    let batch = plan(&tasks);
    assert_eq!(batch.task_uids, [0, 1, 2]);
    assert!(matches!(
        batch.plan,
        BatchPlan::Index {
            kind: BatchKind::ClearAndSettings { .. },
            ..
        }
    ));
}
