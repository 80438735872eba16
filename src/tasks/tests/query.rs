//! Query decoding errors (messages from Meilisearch's `tests/tasks/errors.rs`), date
//! parsing, the matcher and the pager.

use time::macros::datetime;

use super::{addition, at, task};
use crate::errors::{Code, ResponseError};
use crate::tasks::model::{Kind, KindWithContent, Status};
use crate::tasks::query::{
    DateBound, TaskAction, TaskQuery, after_from, decode_deletion_or_cancelation_query,
    decode_list_query, matches, paginate, parse_path_uid, parse_task_date,
};

const CANCEL_PARAMETERS: &str = "`uids`, `batchUids`, `canceledBy`, `types`, `statuses`, `indexUids`, `afterEnqueuedAt`, `beforeEnqueuedAt`, `afterStartedAt`, `beforeStartedAt`, `afterFinishedAt`, `beforeFinishedAt`";

fn list_error(query: &str) -> ResponseError {
    decode_list_query(query).expect_err("the query is invalid")
}

fn cancel_error(query: &str) -> ResponseError {
    decode_deletion_or_cancelation_query(query, TaskAction::Cancel)
        .expect_err("the query is invalid")
}

fn assert_error(error: ResponseError, code: Code, message: &str) {
    assert_eq!(error.code, code, "{}", error.message);
    assert_eq!(error.message, message);
}

#[test]
fn list_query_defaults_and_values() {
    let query = decode_list_query("").expect("decode_list_query succeeds");
    assert_eq!(
        query,
        TaskQuery {
            limit: Some(20),
            ..TaskQuery::default()
        }
    );
    let query = decode_list_query("limit=5&from=7&reverse=true&statuses=FAILED,enqueued&types=DocumentAdditionOrUpdate&indexUids=movies,*").expect("decode_list_query succeeds");
    assert_eq!(query.limit, Some(5));
    assert_eq!(query.from, Some(7));
    assert_eq!(query.reverse, Some(true));
    assert_eq!(query.statuses, Some(vec![Status::Failed, Status::Enqueued]));
    assert_eq!(query.types, Some(vec![Kind::DocumentAdditionOrUpdate]));
    assert_eq!(query.index_uids, None);
}

#[test]
fn unknown_parameters_list_the_accepted_ones_in_meilisearch_order() {
    assert_error(
        list_error("doggo=1"),
        Code::BadRequest,
        "Unknown parameter `doggo`: expected one of `limit`, `from`, `reverse`, `batchUids`, `uids`, `canceledBy`, `types`, `statuses`, `indexUids`, `afterEnqueuedAt`, `beforeEnqueuedAt`, `afterStartedAt`, `beforeStartedAt`, `afterFinishedAt`, `beforeFinishedAt`",
    );
    for parameter in ["limit", "from", "reverse"] {
        assert_error(
            cancel_error(&format!("{parameter}=doggo")),
            Code::BadRequest,
            &format!("Unknown parameter `{parameter}`: expected one of {CANCEL_PARAMETERS}"),
        );
    }
}

#[test]
fn invalid_values_have_their_parameter_code_and_message() {
    assert_error(
        list_error("uids=doggo"),
        Code::InvalidTaskUids,
        "Invalid value in parameter `uids`: could not parse `doggo` as a positive integer",
    );
    assert_error(
        cancel_error("uids=1,dogo"),
        Code::InvalidTaskUids,
        "Invalid value in parameter `uids[1]`: could not parse `dogo` as a positive integer",
    );
    assert_error(
        list_error("canceledBy=doggo"),
        Code::InvalidTaskCanceledBy,
        "Invalid value in parameter `canceledBy`: could not parse `doggo` as a positive integer",
    );
    assert_error(
        list_error("batchUids=doggo"),
        Code::InvalidBatchUids,
        "Invalid value in parameter `batchUids`: could not parse `doggo` as a positive integer",
    );
    assert_error(
        cancel_error("types=doggo"),
        Code::InvalidTaskTypes,
        "Invalid value in parameter `types`: `doggo` is not a valid task type. Available types are `documentAdditionOrUpdate`, `documentEdition`, `documentDeletion`, `settingsUpdate`, `indexCreation`, `indexDeletion`, `indexUpdate`, `indexSwap`, `taskCancelation`, `taskDeletion`, `dumpCreation`, `snapshotCreation`, `export`, `upgradeDatabase`, `indexCompaction`, `networkTopologyChange`, `dsrUpdate`, `dsrClear`.",
    );
    assert_error(
        list_error("statuses=doggo"),
        Code::InvalidTaskStatuses,
        "Invalid value in parameter `statuses`: `doggo` is not a valid task status. Available statuses are `enqueued`, `processing`, `succeeded`, `failed`, `canceled`.",
    );
    assert_error(
        cancel_error("indexUids=the%20good%20doggo"),
        Code::InvalidIndexUid,
        "Invalid value in parameter `indexUids`: `the good doggo` is not a valid index uid. Index uid can be an integer or a string containing only alphanumeric characters, hyphens (-) and underscores (_), and can not be more than 512 bytes.",
    );
    assert_error(
        list_error("limit=doggo"),
        Code::InvalidTaskLimit,
        "Invalid value in parameter `limit`: could not parse `doggo` as a positive integer",
    );
    assert_error(
        list_error("from=doggo"),
        Code::InvalidTaskFrom,
        "Invalid value in parameter `from`: could not parse `doggo` as a positive integer",
    );
    assert_error(
        list_error("reverse=*"),
        Code::InvalidTaskReverse,
        "Invalid value in parameter `reverse`: could not parse `*` as a boolean, expected either `true` or `false`",
    );
}

#[test]
fn invalid_dates_have_one_code_per_bound() {
    let cases = [
        ("afterEnqueuedAt", Code::InvalidTaskAfterEnqueuedAt),
        ("beforeEnqueuedAt", Code::InvalidTaskBeforeEnqueuedAt),
        ("afterStartedAt", Code::InvalidTaskAfterStartedAt),
        ("beforeStartedAt", Code::InvalidTaskBeforeStartedAt),
        ("afterFinishedAt", Code::InvalidTaskAfterFinishedAt),
        ("beforeFinishedAt", Code::InvalidTaskBeforeFinishedAt),
    ];
    for (parameter, code) in cases {
        let message = format!(
            "Invalid value in parameter `{parameter}`: `doggo` is an invalid date-time. It should follow the YYYY-MM-DD or RFC 3339 date-time format."
        );
        assert_error(list_error(&format!("{parameter}=doggo")), code, &message);
        assert_error(cancel_error(&format!("{parameter}=doggo")), code, &message);
    }
}

#[test]
fn cancel_and_delete_need_a_filter_and_star_counts_as_one() {
    assert_error(
        cancel_error(""),
        Code::MissingTaskFilters,
        "Query parameters to filter the tasks to cancel are missing. Available query parameters are: `uids`, `indexUids`, `statuses`, `types`, `canceledBy`, `beforeEnqueuedAt`, `afterEnqueuedAt`, `beforeStartedAt`, `afterStartedAt`, `beforeFinishedAt`, `afterFinishedAt`.",
    );
    let error = decode_deletion_or_cancelation_query("", TaskAction::Delete).unwrap_err();
    assert!(
        error
            .message
            .starts_with("Query parameters to filter the tasks to delete are missing.")
    );
    let everything = decode_deletion_or_cancelation_query("statuses=*", TaskAction::Delete)
        .expect("decode_deletion_or_cancelation_query succeeds");
    assert_eq!(everything, TaskQuery::default());
}

#[test]
fn dates_are_rfc_3339_or_days_and_after_days_start_the_next_day() {
    assert_eq!(
        parse_task_date("2024-01-01", DateBound::After).expect("parse_task_date succeeds"),
        datetime!(2024-01-02 00:00:00 UTC)
    );
    assert_eq!(
        parse_task_date("2024-01-01", DateBound::Before).expect("parse_task_date succeeds"),
        datetime!(2024-01-01 00:00:00 UTC)
    );
    assert_eq!(
        parse_task_date("2024-01-01T10:00:00.5+02:00", DateBound::After)
            .expect("parse_task_date succeeds"),
        datetime!(2024-01-01 08:00:00.5 UTC)
    );
    assert!(parse_task_date("2024-13-01", DateBound::Before).is_err());
    let query = decode_list_query("afterEnqueuedAt=2024-01-01&beforeFinishedAt=*")
        .expect("decode_list_query succeeds");
    assert_eq!(
        query.after_enqueued_at,
        Some(datetime!(2024-01-02 00:00:00 UTC))
    );
    assert_eq!(query.before_finished_at, None);
}

#[test]
fn path_uids_must_be_numeric() {
    assert_eq!(
        parse_path_uid("12", Code::InvalidTaskUids).expect("parse_path_uid succeeds"),
        12
    );
    assert_error(
        parse_path_uid("x", Code::InvalidTaskUids).unwrap_err(),
        Code::InvalidTaskUids,
        "Task uid `x` is invalid. It should only contain numeric characters.",
    );
    assert_error(
        parse_path_uid("-1", Code::InvalidBatchUids).unwrap_err(),
        Code::InvalidBatchUids,
        "Batch uid `-1` is invalid. It should only contain numeric characters.",
    );
}

#[test]
fn matcher_applies_every_filter_and_exclusive_date_bounds() {
    let mut finished = task(4, addition("movies", 1));
    finished.status = Status::Succeeded;
    finished.batch_uid = Some(2);
    finished.started_at = Some(at(10));
    finished.finished_at = Some(at(11));
    let everything = TaskQuery::default();
    assert!(matches(&everything, &finished));
    let by = |query: TaskQuery| matches(&query, &finished);
    assert!(by(TaskQuery {
        uids: Some(vec![4]),
        ..TaskQuery::default()
    }));
    assert!(!by(TaskQuery {
        uids: Some(vec![5]),
        ..TaskQuery::default()
    }));
    assert!(by(TaskQuery {
        batch_uids: Some(vec![2]),
        ..TaskQuery::default()
    }));
    assert!(!by(TaskQuery {
        canceled_by: Some(vec![2]),
        ..TaskQuery::default()
    }));
    assert!(by(TaskQuery {
        statuses: Some(vec![Status::Failed, Status::Succeeded]),
        ..TaskQuery::default()
    }));
    assert!(!by(TaskQuery {
        types: Some(vec![Kind::DocumentDeletion]),
        ..TaskQuery::default()
    }));
    assert!(by(TaskQuery {
        index_uids: Some(vec!["movies".into()]),
        ..TaskQuery::default()
    }));
    assert!(!by(TaskQuery {
        after_started_at: Some(at(10)),
        ..TaskQuery::default()
    }));
    assert!(by(TaskQuery {
        after_started_at: Some(at(9)),
        before_finished_at: Some(at(12)),
        ..TaskQuery::default()
    }));
    assert!(!by(TaskQuery {
        before_enqueued_at: Some(at(4)),
        ..TaskQuery::default()
    }));
    let enqueued = task(5, addition("movies", 1));
    assert!(!matches(
        &TaskQuery {
            before_started_at: Some(at(100)),
            ..TaskQuery::default()
        },
        &enqueued
    ));
}

#[test]
fn swaps_and_renames_match_every_index_they_touch() {
    let swap = task(
        1,
        KindWithContent::IndexSwap {
            swaps: vec![crate::tasks::model::IndexSwap {
                indexes: ("a".into(), "b".into()),
                rename: false,
            }],
        },
    );
    let query = |index: &str| TaskQuery {
        index_uids: Some(vec![index.into()]),
        ..TaskQuery::default()
    };
    assert!(matches(&query("b"), &swap));
    let rename = task(
        2,
        KindWithContent::IndexUpdate {
            index_uid: "old".into(),
            primary_key: None,
            new_index_uid: Some("new".into()),
        },
    );
    assert!(matches(&query("new"), &rename));
    assert!(!matches(&query("other"), &rename));
}

#[test]
fn pager_pops_the_extra_item_as_next_and_from_is_the_first_uid() {
    let newest_first: Vec<u32> = (0..10).rev().collect();
    let take = |query: &TaskQuery| -> Vec<u32> {
        newest_first
            .iter()
            .copied()
            .filter(|uid| after_from(query, *uid))
            .take(
                query
                    .limit
                    .expect("`limit` holds a value")
                    .saturating_add(1) as usize,
            )
            .collect()
    };
    let query = TaskQuery {
        limit: Some(3),
        ..TaskQuery::default()
    };
    let page = paginate(take(&query), |uid| *uid, 3, 10);
    assert_eq!(
        (
            page.results.clone(),
            page.from,
            page.next,
            page.total,
            page.limit
        ),
        (vec![9, 8, 7], Some(9), Some(6), 10, 3)
    );
    let query = TaskQuery {
        limit: Some(3),
        from: Some(6),
        ..TaskQuery::default()
    };
    let page = paginate(take(&query), |uid| *uid, 3, 10);
    assert_eq!((page.results.clone(), page.next), (vec![6, 5, 4], Some(3)));
    let query = TaskQuery {
        limit: Some(3),
        from: Some(1),
        ..TaskQuery::default()
    };
    let page = paginate(take(&query), |uid| *uid, 3, 10);
    assert_eq!(
        (page.results.clone(), page.from, page.next),
        (vec![1, 0], Some(1), None)
    );
    let page = paginate(vec![9], |uid| *uid, 0, 10);
    assert_eq!(
        (page.results.len(), page.from, page.next, page.limit),
        (0, None, Some(9), 0)
    );
    let page = paginate(Vec::<u32>::new(), |uid| *uid, u32::MAX, 0);
    assert_eq!(page.limit, u32::MAX - 1);
    let reverse = TaskQuery {
        from: Some(4),
        reverse: Some(true),
        ..TaskQuery::default()
    };
    assert!(after_from(&reverse, 4) && after_from(&reverse, 9) && !after_from(&reverse, 3));
    assert_eq!(
        page.to_json_keys(),
        ["results", "total", "limit", "from", "next"]
    );
}

trait JsonKeys {
    fn to_json_keys(&self) -> Vec<String>;
}

impl JsonKeys for crate::tasks::Page<u32> {
    fn to_json_keys(&self) -> Vec<String> {
        let page = crate::tasks::Page {
            results: self
                .results
                .iter()
                .map(|uid| serde_json::json!(uid))
                .collect(),
            total: self.total,
            limit: self.limit,
            from: self.from,
            next: self.next,
        };
        page.to_json()
            .as_object()
            .expect("as_object finds a value")
            .keys()
            .cloned()
            .collect()
    }
}
