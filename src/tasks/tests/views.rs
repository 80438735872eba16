//! Task, details and batch JSON, dates and durations.

use std::collections::BTreeMap;

use serde_json::json;
use time::Duration;
use time::macros::datetime;

use super::{addition, at, task};
use crate::errors::{Code, ResponseError};
use crate::tasks::batch::Batch;
use crate::tasks::model::{
    Details, ExportIndexSettings, IndexSwap, KindWithContent, Status, Task, TaskError,
};
use crate::tasks::view::{
    DetailsView, batch_view, format_date, format_duration, summarized_task, task_view,
};

fn details_json(kind: KindWithContent) -> String {
    let details = kind.default_details().expect("this kind has details");
    serde_json::to_string(&DetailsView::from_details(&details).to_json())
        .expect("to_string succeeds")
}

#[test]
fn dates_show_fractions_only_when_non_zero_and_trimmed() {
    assert_eq!(
        format_date(datetime!(2050-11-13 00:00:00 UTC)),
        "2050-11-13T00:00:00Z"
    );
    assert_eq!(
        format_date(datetime!(2024-08-08 17:05:55.791772 UTC)),
        "2024-08-08T17:05:55.791772Z"
    );
    assert_eq!(
        format_date(datetime!(2024-08-08 17:05:55.5 UTC)),
        "2024-08-08T17:05:55.5Z"
    );
    assert_eq!(
        format_date(datetime!(2025-01-20 11:48:04.928204160 UTC)),
        "2025-01-20T11:48:04.92820416Z"
    );
    assert_eq!(
        format_date(datetime!(2024-01-01 02:00:00 +2)),
        "2024-01-01T00:00:00Z"
    );
}

#[test]
fn durations_are_iso_8601_with_3_6_or_9_fraction_digits() {
    assert_eq!(format_duration(Duration::ZERO).as_deref(), Some("PT0S"));
    assert_eq!(
        format_duration(Duration::seconds(5)).as_deref(),
        Some("PT5S")
    );
    assert_eq!(
        format_duration(Duration::milliseconds(1500)).as_deref(),
        Some("PT1.500S")
    );
    assert_eq!(
        format_duration(Duration::microseconds(1_000_001)).as_deref(),
        Some("PT1.000001S")
    );
    assert_eq!(
        format_duration(Duration::nanoseconds(481_257)).as_deref(),
        Some("PT0.000481257S")
    );
    assert_eq!(format_duration(Duration::days(1)).as_deref(), Some("P1D"));
    assert_eq!(
        format_duration(Duration::days(2) + Duration::seconds(61)).as_deref(),
        Some("P2DT61S")
    );
    assert_eq!(format_duration(Duration::seconds(-1)), None);
}

#[test]
fn summarized_task_has_custom_metadata_only_when_set() {
    let mut enqueued = task(3, addition("movies", 2));
    assert_eq!(
        summarized_task(&enqueued).to_string(),
        r#"{"taskUid":3,"indexUid":"movies","status":"enqueued","type":"documentAdditionOrUpdate","enqueuedAt":"2024-08-08T17:05:58Z"}"#
    );
    enqueued.custom_metadata = Some("import-42".to_owned());
    assert_eq!(
        summarized_task(&enqueued).to_string(),
        r#"{"taskUid":3,"indexUid":"movies","status":"enqueued","type":"documentAdditionOrUpdate","enqueuedAt":"2024-08-08T17:05:58Z","customMetadata":"import-42"}"#
    );
    let global = task(4, KindWithContent::DumpCreation);
    assert_eq!(
        summarized_task(&global).to_string(),
        r#"{"taskUid":4,"indexUid":null,"status":"enqueued","type":"dumpCreation","enqueuedAt":"2024-08-08T17:05:59Z"}"#
    );
}

#[test]
fn enqueued_task_view_has_every_key_in_order_with_pending_counters() {
    let enqueued = task(0, addition("movies", 2));
    assert_eq!(
        task_view(&enqueued).to_string(),
        r#"{"uid":0,"batchUid":null,"indexUid":"movies","status":"enqueued","type":"documentAdditionOrUpdate","canceledBy":null,"details":{"receivedDocuments":2,"indexedDocuments":null},"error":null,"duration":null,"enqueuedAt":"2024-08-08T17:05:55Z","startedAt":null,"finishedAt":null}"#
    );
}

#[test]
fn failed_task_view_shows_the_error_object_and_the_duration() {
    let mut failed = task(1, addition("movies", 2));
    failed.status = Status::Failed;
    failed.batch_uid = Some(0);
    failed.details = failed.details.as_ref().map(Details::to_failed);
    failed.error = Some(TaskError(ResponseError::index_not_found("movies")));
    failed.started_at = Some(at(2) + Duration::milliseconds(5));
    failed.finished_at = Some(at(2) + Duration::milliseconds(20));
    failed.custom_metadata = Some("meta".to_owned());
    assert_eq!(
        task_view(&failed).to_string(),
        r#"{"uid":1,"batchUid":0,"indexUid":"movies","status":"failed","type":"documentAdditionOrUpdate","canceledBy":null,"details":{"receivedDocuments":2,"indexedDocuments":0},"error":{"message":"Index `movies` not found.","code":"index_not_found","type":"invalid_request","link":"https://docs.meilisearch.com/errors#index_not_found"},"duration":"PT0.015S","enqueuedAt":"2024-08-08T17:05:56Z","startedAt":"2024-08-08T17:05:57.005Z","finishedAt":"2024-08-08T17:05:57.02Z","customMetadata":"meta"}"#
    );
}

#[test]
fn snapshot_tasks_have_no_details_key() {
    let snapshot = task(2, KindWithContent::SnapshotCreation);
    let view = task_view(&snapshot);
    assert!(view.get("details").is_none());
    assert_eq!(view["error"], json!(null));
}

#[test]
fn details_of_every_task_type_before_processing() {
    let index = "movies".to_owned();
    assert_eq!(
        details_json(KindWithContent::DocumentDeletion {
            index_uid: index.clone(),
            document_ids: vec!["1".into(), "2".into()],
        }),
        r#"{"providedIds":2,"deletedDocuments":null,"originalFilter":null}"#
    );
    assert_eq!(
        details_json(KindWithContent::DocumentDeletionByFilter {
            index_uid: index.clone(),
            filter: json!("color = blue"),
        }),
        r#"{"providedIds":0,"deletedDocuments":null,"originalFilter":"\"color = blue\""}"#
    );
    assert_eq!(
        details_json(KindWithContent::DocumentClear {
            index_uid: index.clone()
        }),
        r#"{"deletedDocuments":null}"#
    );
    assert_eq!(
        details_json(KindWithContent::IndexDeletion {
            index_uid: index.clone()
        }),
        r#"{"deletedDocuments":null}"#
    );
    assert_eq!(
        details_json(KindWithContent::DocumentEdition {
            index_uid: index.clone(),
            filter: None,
            context: None,
            function: "doc.x = 1".into(),
        }),
        r#"{"editedDocuments":null,"deletedDocuments":null,"originalFilter":null,"context":null,"function":"doc.x = 1"}"#
    );
    assert_eq!(
        details_json(KindWithContent::IndexCreation {
            index_uid: index.clone(),
            primary_key: Some("id".into()),
        }),
        r#"{"primaryKey":"id"}"#
    );
    assert_eq!(
        details_json(KindWithContent::IndexUpdate {
            index_uid: index.clone(),
            primary_key: None,
            new_index_uid: Some("films".into()),
        }),
        r#"{"primaryKey":null,"oldIndexUid":"movies","newIndexUid":"films"}"#
    );
    assert_eq!(
        details_json(KindWithContent::IndexSwap {
            swaps: vec![IndexSwap {
                indexes: ("a".into(), "b".into()),
                rename: false
            }],
        }),
        r#"{"swaps":[{"indexes":["a","b"],"rename":false}]}"#
    );
    assert_eq!(
        details_json(KindWithContent::TaskCancelation {
            query: "?uids=0,1".into(),
            tasks: vec![0, 1],
        }),
        r#"{"matchedTasks":2,"canceledTasks":null,"originalFilter":"?uids=0,1"}"#
    );
    assert_eq!(
        details_json(KindWithContent::TaskDeletion {
            query: "?statuses=*".into(),
            tasks: vec![]
        }),
        r#"{"matchedTasks":0,"deletedTasks":null,"originalFilter":"?statuses=*"}"#
    );
    assert_eq!(
        details_json(KindWithContent::DumpCreation),
        r#"{"dumpUid":null}"#
    );
    assert_eq!(
        details_json(KindWithContent::UpgradeDatabase { from: (1, 12, 0) }),
        r#"{"upgradeFrom":"v1.12.0","upgradeTo":"v1.41.0"}"#
    );
    assert_eq!(
        details_json(KindWithContent::IndexCompaction {
            index_uid: index.clone()
        }),
        r#"{}"#
    );
    assert_eq!(
        details_json(KindWithContent::NetworkTopologyChange),
        r#"{"movedDocuments":0,"message":"processing tasks for previous network versions"}"#
    );
}

#[test]
fn settings_details_are_flattened_and_export_secrets_are_masked() {
    let mut settings = serde_json::Map::new();
    settings.insert("rankingRules".into(), json!(["words"]));
    settings.insert("stopWords".into(), json!(null));
    assert_eq!(
        details_json(KindWithContent::SettingsUpdate {
            index_uid: "movies".into(),
            settings,
            is_deletion: false,
            allow_index_creation: true,
        }),
        r#"{"rankingRules":["words"],"stopWords":null}"#
    );
    let indexes = BTreeMap::from([(
        "movies*".to_owned(),
        ExportIndexSettings {
            filter: None,
            override_settings: false,
            matched_documents: None,
        },
    )]);
    assert_eq!(
        details_json(KindWithContent::Export {
            url: "http://remote:7700".into(),
            api_key: Some("0123456789abcdef".into()),
            payload_size: None,
            indexes,
        }),
        r#"{"url":"http://remote:7700","apiKey":"01XXXX...","indexes":{"movies*":{"filter":null,"overrideSettings":false}}}"#
    );
}

#[test]
fn failed_details_turn_pending_counters_to_zero() {
    let deletion = Details::TaskDeletion {
        matched_tasks: 3,
        deleted_tasks: None,
        original_filter: "?uids=1".into(),
    };
    assert_eq!(
        deletion.to_failed(),
        Details::TaskDeletion {
            matched_tasks: 3,
            deleted_tasks: Some(0),
            original_filter: "?uids=1".into()
        }
    );
    let network = Details::NetworkTopologyChange {
        moved_documents: 4,
        message: "busy".into(),
    };
    assert_eq!(
        network.to_failed(),
        Details::NetworkTopologyChange {
            moved_documents: 4,
            message: "Failed. Previous status: busy".into()
        }
    );
}

#[test]
fn cancelation_and_deletion_never_match_themselves_or_newer_tasks() {
    let cancel = Task::new(
        5,
        KindWithContent::TaskCancelation {
            query: "?statuses=*".into(),
            tasks: vec![1, 4, 5, 9],
        },
        at(0),
        None,
    );
    assert_eq!(
        cancel.details,
        Some(Details::TaskCancelation {
            matched_tasks: 2,
            canceled_tasks: None,
            original_filter: "?statuses=*".into()
        })
    );
}

#[test]
fn batch_details_accumulate_counters_and_join_filters() {
    let mut first = DetailsView::from_details(&Details::DocumentAdditionOrUpdate {
        received_documents: 2,
        indexed_documents: Some(2),
    });
    first.accumulate(&DetailsView::from_details(
        &Details::DocumentAdditionOrUpdate {
            received_documents: 3,
            indexed_documents: None,
        },
    ));
    first.accumulate(&DetailsView::from_details(&Details::DocumentDeletion {
        provided_ids: 1,
        deleted_documents: Some(1),
    }));
    assert_eq!(
        serde_json::to_string(&first.to_json()).expect("to_string succeeds"),
        r#"{"receivedDocuments":5,"indexedDocuments":2,"providedIds":1,"deletedDocuments":1,"originalFilter":null}"#
    );
    let mut filters = DetailsView::from_details(&Details::TaskCancelation {
        matched_tasks: 1,
        canceled_tasks: Some(1),
        original_filter: "?uids=1".into(),
    });
    filters.accumulate(&DetailsView::from_details(&Details::TaskCancelation {
        matched_tasks: 2,
        canceled_tasks: Some(0),
        original_filter: "?uids=2".into(),
    }));
    assert_eq!(
        serde_json::to_string(&filters.to_json()).expect("to_string succeeds"),
        r#"{"matchedTasks":3,"canceledTasks":1,"originalFilter":"?uids=1&?uids=2"}"#
    );
}

#[test]
fn settings_merged_over_a_batch_keep_settings_key_order() {
    let settings = |key: &str| {
        let mut map = serde_json::Map::new();
        map.insert(key.into(), json!([]));
        Details::SettingsUpdate { settings: map }
    };
    let mut view = DetailsView::from_details(&settings("stopWords"));
    view.accumulate(&DetailsView::from_details(&settings("displayedAttributes")));
    let keys: Vec<String> = view.to_json().keys().cloned().collect();
    assert_eq!(keys, ["displayedAttributes", "stopWords"]);
}

#[test]
fn finished_batch_view_has_stats_duration_and_strategy() {
    let mut first = task(0, addition("movies", 2));
    first.status = Status::Succeeded;
    first.details = Some(Details::DocumentAdditionOrUpdate {
        received_documents: 2,
        indexed_documents: Some(2),
    });
    let mut second = task(1, addition("movies", 1));
    second.status = Status::Failed;
    second.details = second.details.as_ref().map(Details::to_failed);
    second.error = Some(TaskError(ResponseError::new(
        Code::MissingDocumentId,
        "no id",
    )));
    let mut batch = Batch::new(7, at(10), "batched all enqueued tasks".into());
    batch.recompute(&[first.clone(), second.clone()], true);
    assert_eq!(
        batch_view(&batch)["stats"].to_string(),
        r#"{"totalNbTasks":2,"status":{"processing":2},"types":{"documentAdditionOrUpdate":2},"indexUids":{"movies":2}}"#
    );
    batch.finished_at = Some(at(10) + Duration::milliseconds(250));
    batch.recompute(&[first, second], false);
    assert_eq!(
        batch_view(&batch).to_string(),
        r#"{"uid":7,"progress":null,"details":{"receivedDocuments":3,"indexedDocuments":2},"stats":{"totalNbTasks":2,"status":{"succeeded":1,"failed":1},"types":{"documentAdditionOrUpdate":2},"indexUids":{"movies":2}},"duration":"PT0.250S","startedAt":"2024-08-08T17:06:05Z","finishedAt":"2024-08-08T17:06:05.25Z","batchStrategy":"batched all enqueued tasks"}"#
    );
}

#[test]
fn processing_batch_view_shows_progress() {
    let mut batch = Batch::new(1, at(0), "unspecified".into());
    batch.progress = Some(crate::tasks::Progress {
        steps: vec![crate::tasks::ProgressStep {
            current_step: "indexing documents".into(),
            finished: 1,
            total: 4,
        }],
        percentage: 25.0,
    });
    assert_eq!(
        batch_view(&batch)["progress"].to_string(),
        r#"{"steps":[{"currentStep":"indexing documents","finished":1,"total":4}],"percentage":25.0}"#
    );
    assert_eq!(batch_view(&batch)["duration"], json!(null));
}

#[test]
fn embedders_merged_over_a_batch_keep_every_embedder_sorted_by_name() {
    let embedders = |value: serde_json::Value| {
        let mut map = serde_json::Map::new();
        map.insert("embedders".into(), value);
        DetailsView::from_details(&Details::SettingsUpdate { settings: map })
    };
    let mut view = embedders(json!({"zeta": {"source": "userProvided"}}));
    view.accumulate(&embedders(json!({"alpha": {"source": "openAi"}})));
    assert_eq!(
        serde_json::to_string(&view.to_json()).expect("to_string succeeds"),
        r#"{"embedders":{"alpha":{"source":"openAi"},"zeta":{"source":"userProvided"}}}"#
    );
    view.accumulate(&embedders(json!(null)));
    assert_eq!(
        serde_json::to_string(&view.to_json()).expect("to_string succeeds"),
        r#"{"embedders":null}"#
    );
}

#[test]
fn finished_details_without_counts_are_zero_except_clears_and_index_deletions() {
    let finished = |kind: KindWithContent| kind.default_finished_details();
    assert_eq!(
        finished(addition("movies", 4)),
        Some(Details::DocumentAdditionOrUpdate {
            received_documents: 4,
            indexed_documents: Some(0)
        })
    );
    assert_eq!(
        finished(KindWithContent::DocumentClear {
            index_uid: "movies".into()
        }),
        Some(Details::ClearAll {
            deleted_documents: None
        })
    );
    assert_eq!(
        finished(KindWithContent::IndexDeletion {
            index_uid: "movies".into()
        }),
        None
    );
    assert_eq!(
        finished(KindWithContent::DocumentEdition {
            index_uid: "movies".into(),
            filter: None,
            context: None,
            function: "f".into(),
        }),
        Some(Details::DocumentEdition {
            deleted_documents: Some(0),
            edited_documents: Some(0),
            original_filter: None,
            context: None,
            function: "f".into(),
        })
    );
    assert_eq!(
        finished(KindWithContent::TaskDeletion {
            query: "?uids=1".into(),
            tasks: vec![1]
        }),
        Some(Details::TaskDeletion {
            matched_tasks: 1,
            deleted_tasks: Some(0),
            original_filter: "?uids=1".into()
        })
    );
}
