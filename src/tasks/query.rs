//! Task and batch filters: the query strings of `GET /tasks`, `GET /batches`
//! ([`TasksFilterQuery`]) and of `POST /tasks/cancel`, `DELETE /tasks`
//! ([`TaskDeletionOrCancelationQuery`]), decoded with Meilisearch's codes and messages
//! (reference §2.4), the resulting [`TaskQuery`], the per-task matcher and the pager.
//!
//! Invariants:
//! - field declaration order is Meilisearch's, so unknown-parameter messages list the
//!   parameters in the same order;
//! - date bounds are exclusive; a date-only `after*` value means the next midnight, a
//!   date-only `before*` value means that midnight;
//! - a task without the date a bound filters on never matches that bound.

use std::fmt;

use deserr::Deserr;
use serde_json::{Value, json};
use time::format_description::well_known::Rfc3339;
use time::macros::format_description;
use time::{Date, Duration, OffsetDateTime, Time};

use super::model::{BatchUid, Kind, Status, Task, TaskUid};
use crate::decode::{FromQueryParameter, OptionStarOr, OptionStarOrList, Param, QueryError};
use crate::errors::{Code, ResponseError, codes};

/// Default `limit` of the task and batch lists.
pub const TASKS_LIMIT_DEFAULT: u32 = 20;

/// The filters every task route understands, resolved (`*` and absence both mean "no
/// filter"), with the list-only `limit`, `from` and `reverse`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskQuery {
    pub limit: Option<u32>,
    pub from: Option<u32>,
    pub reverse: Option<bool>,
    pub uids: Option<Vec<TaskUid>>,
    pub batch_uids: Option<Vec<BatchUid>>,
    pub statuses: Option<Vec<Status>>,
    pub types: Option<Vec<Kind>>,
    pub index_uids: Option<Vec<String>>,
    pub canceled_by: Option<Vec<TaskUid>>,
    pub before_enqueued_at: Option<OffsetDateTime>,
    pub after_enqueued_at: Option<OffsetDateTime>,
    pub before_started_at: Option<OffsetDateTime>,
    pub after_started_at: Option<OffsetDateTime>,
    pub before_finished_at: Option<OffsetDateTime>,
    pub after_finished_at: Option<OffsetDateTime>,
}

impl TaskQuery {
    /// The same filters without `limit` and `from` (what `total` counts).
    pub fn without_limits(&self) -> TaskQuery {
        TaskQuery {
            limit: None,
            from: None,
            ..self.clone()
        }
    }
}

/// A date parameter that is neither `YYYY-MM-DD` nor RFC 3339.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidTaskDateError(pub String);

impl fmt::Display for InvalidTaskDateError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "`{}` is an invalid date-time. It should follow the YYYY-MM-DD or RFC 3339 date-time format.",
            self.0
        )
    }
}

impl std::error::Error for InvalidTaskDateError {}

/// Which side of a range a date parameter bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DateBound {
    Before,
    After,
}

/// Parses a date parameter: RFC 3339 as is, `YYYY-MM-DD` as midnight UTC (the next
/// midnight for an `after*` bound).
pub fn parse_task_date(
    text: &str,
    bound: DateBound,
) -> Result<OffsetDateTime, InvalidTaskDateError> {
    if let Ok(date_time) = OffsetDateTime::parse(text, &Rfc3339) {
        return Ok(date_time);
    }
    let day_format =
        format_description!("[year repr:full base:calendar]-[month repr:numerical]-[day]");
    let date = Date::parse(text, day_format).map_err(|_| InvalidTaskDateError(text.to_owned()))?;
    let midnight = date.with_time(Time::MIDNIGHT).assume_utc();
    Ok(match bound {
        DateBound::Before => midnight,
        DateBound::After => midnight.checked_add(Duration::days(1)).unwrap_or(midnight),
    })
}

/// A date given as the lower bound of a range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AfterDate(pub OffsetDateTime);

/// A date given as the upper bound of a range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BeforeDate(pub OffsetDateTime);

impl FromQueryParameter for AfterDate {
    type Err = InvalidTaskDateError;

    fn from_query_parameter(text: &str) -> Result<Self, InvalidTaskDateError> {
        parse_task_date(text, DateBound::After).map(AfterDate)
    }
}

impl FromQueryParameter for BeforeDate {
    type Err = InvalidTaskDateError;

    fn from_query_parameter(text: &str) -> Result<Self, InvalidTaskDateError> {
        parse_task_date(text, DateBound::Before).map(BeforeDate)
    }
}

/// An index uid parameter: `[A-Za-z0-9_-]`, 1 to 400 bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexUidParameter(pub String);

/// The longest index uid accepted.
pub const INDEX_UID_BYTES_MAX: usize = 400;

/// An `indexUids` value that is not an index uid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexUidFormatError(pub String);

impl fmt::Display for IndexUidFormatError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&ResponseError::invalid_index_uid(&self.0).message)
    }
}

impl std::error::Error for IndexUidFormatError {}

impl FromQueryParameter for IndexUidParameter {
    type Err = IndexUidFormatError;

    fn from_query_parameter(text: &str) -> Result<Self, IndexUidFormatError> {
        let valid = !text.is_empty()
            && text.len() <= INDEX_UID_BYTES_MAX
            && text.chars().all(|character| {
                character.is_ascii_alphanumeric() || character == '-' || character == '_'
            });
        if valid {
            Ok(IndexUidParameter(text.to_owned()))
        } else {
            Err(IndexUidFormatError(text.to_owned()))
        }
    }
}

/// The query of `GET /tasks` and `GET /batches`.
#[derive(Debug, Deserr)]
#[deserr(error = QueryError, rename_all = camelCase, deny_unknown_fields)]
pub struct TasksFilterQuery {
    #[deserr(default = Param(TASKS_LIMIT_DEFAULT), error = QueryError<codes::InvalidTaskLimit>)]
    pub limit: Param<u32>,
    #[deserr(default, error = QueryError<codes::InvalidTaskFrom>)]
    pub from: Option<Param<TaskUid>>,
    #[deserr(default, error = QueryError<codes::InvalidTaskReverse>)]
    pub reverse: Option<Param<bool>>,
    #[deserr(default, error = QueryError<codes::InvalidBatchUids>)]
    pub batch_uids: OptionStarOrList<BatchUid>,
    #[deserr(default, error = QueryError<codes::InvalidTaskUids>)]
    pub uids: OptionStarOrList<TaskUid>,
    #[deserr(default, error = QueryError<codes::InvalidTaskCanceledBy>)]
    pub canceled_by: OptionStarOrList<TaskUid>,
    #[deserr(default, error = QueryError<codes::InvalidTaskTypes>)]
    pub types: OptionStarOrList<Kind>,
    #[deserr(default, error = QueryError<codes::InvalidTaskStatuses>)]
    pub statuses: OptionStarOrList<Status>,
    #[deserr(default, error = QueryError<codes::InvalidIndexUid>)]
    pub index_uids: OptionStarOrList<IndexUidParameter>,
    #[deserr(default, error = QueryError<codes::InvalidTaskAfterEnqueuedAt>)]
    pub after_enqueued_at: OptionStarOr<AfterDate>,
    #[deserr(default, error = QueryError<codes::InvalidTaskBeforeEnqueuedAt>)]
    pub before_enqueued_at: OptionStarOr<BeforeDate>,
    #[deserr(default, error = QueryError<codes::InvalidTaskAfterStartedAt>)]
    pub after_started_at: OptionStarOr<AfterDate>,
    #[deserr(default, error = QueryError<codes::InvalidTaskBeforeStartedAt>)]
    pub before_started_at: OptionStarOr<BeforeDate>,
    #[deserr(default, error = QueryError<codes::InvalidTaskAfterFinishedAt>)]
    pub after_finished_at: OptionStarOr<AfterDate>,
    #[deserr(default, error = QueryError<codes::InvalidTaskBeforeFinishedAt>)]
    pub before_finished_at: OptionStarOr<BeforeDate>,
}

/// The query of `POST /tasks/cancel` and `DELETE /tasks`.
#[derive(Debug, Deserr)]
#[deserr(error = QueryError, rename_all = camelCase, deny_unknown_fields)]
pub struct TaskDeletionOrCancelationQuery {
    #[deserr(default, error = QueryError<codes::InvalidTaskUids>)]
    pub uids: OptionStarOrList<TaskUid>,
    #[deserr(default, error = QueryError<codes::InvalidBatchUids>)]
    pub batch_uids: OptionStarOrList<BatchUid>,
    #[deserr(default, error = QueryError<codes::InvalidTaskCanceledBy>)]
    pub canceled_by: OptionStarOrList<TaskUid>,
    #[deserr(default, error = QueryError<codes::InvalidTaskTypes>)]
    pub types: OptionStarOrList<Kind>,
    #[deserr(default, error = QueryError<codes::InvalidTaskStatuses>)]
    pub statuses: OptionStarOrList<Status>,
    #[deserr(default, error = QueryError<codes::InvalidIndexUid>)]
    pub index_uids: OptionStarOrList<IndexUidParameter>,
    #[deserr(default, error = QueryError<codes::InvalidTaskAfterEnqueuedAt>)]
    pub after_enqueued_at: OptionStarOr<AfterDate>,
    #[deserr(default, error = QueryError<codes::InvalidTaskBeforeEnqueuedAt>)]
    pub before_enqueued_at: OptionStarOr<BeforeDate>,
    #[deserr(default, error = QueryError<codes::InvalidTaskAfterStartedAt>)]
    pub after_started_at: OptionStarOr<AfterDate>,
    #[deserr(default, error = QueryError<codes::InvalidTaskBeforeStartedAt>)]
    pub before_started_at: OptionStarOr<BeforeDate>,
    #[deserr(default, error = QueryError<codes::InvalidTaskAfterFinishedAt>)]
    pub after_finished_at: OptionStarOr<AfterDate>,
    #[deserr(default, error = QueryError<codes::InvalidTaskBeforeFinishedAt>)]
    pub before_finished_at: OptionStarOr<BeforeDate>,
}

/// What a cancel or delete request asks for (it names the action in the error message).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskAction {
    Cancel,
    Delete,
}

fn index_names(list: OptionStarOrList<IndexUidParameter>) -> Option<Vec<String>> {
    list.merge_star_and_none()
        .map(|uids| uids.into_iter().map(|uid| uid.0).collect())
}

impl TasksFilterQuery {
    /// The resolved query.
    pub fn into_query(self) -> TaskQuery {
        TaskQuery {
            limit: Some(self.limit.0),
            from: self.from.map(Param::into_inner),
            reverse: self.reverse.map(Param::into_inner),
            uids: self.uids.merge_star_and_none(),
            batch_uids: self.batch_uids.merge_star_and_none(),
            statuses: self.statuses.merge_star_and_none(),
            types: self.types.merge_star_and_none(),
            index_uids: index_names(self.index_uids),
            canceled_by: self.canceled_by.merge_star_and_none(),
            before_enqueued_at: self
                .before_enqueued_at
                .merge_star_and_none()
                .map(|date| date.0),
            after_enqueued_at: self
                .after_enqueued_at
                .merge_star_and_none()
                .map(|date| date.0),
            before_started_at: self
                .before_started_at
                .merge_star_and_none()
                .map(|date| date.0),
            after_started_at: self
                .after_started_at
                .merge_star_and_none()
                .map(|date| date.0),
            before_finished_at: self
                .before_finished_at
                .merge_star_and_none()
                .map(|date| date.0),
            after_finished_at: self
                .after_finished_at
                .merge_star_and_none()
                .map(|date| date.0),
        }
    }
}

impl TaskDeletionOrCancelationQuery {
    /// Whether no parameter at all was given (`*` counts as given).
    pub fn is_empty(&self) -> bool {
        matches!(self.uids, OptionStarOrList::None)
            && matches!(self.batch_uids, OptionStarOrList::None)
            && matches!(self.canceled_by, OptionStarOrList::None)
            && matches!(self.types, OptionStarOrList::None)
            && matches!(self.statuses, OptionStarOrList::None)
            && matches!(self.index_uids, OptionStarOrList::None)
            && matches!(self.after_enqueued_at, OptionStarOr::None)
            && matches!(self.before_enqueued_at, OptionStarOr::None)
            && matches!(self.after_started_at, OptionStarOr::None)
            && matches!(self.before_started_at, OptionStarOr::None)
            && matches!(self.after_finished_at, OptionStarOr::None)
            && matches!(self.before_finished_at, OptionStarOr::None)
    }

    /// The resolved query (no limit, no `from`, no `reverse`).
    pub fn into_query(self) -> TaskQuery {
        TaskQuery {
            limit: None,
            from: None,
            reverse: None,
            uids: self.uids.merge_star_and_none(),
            batch_uids: self.batch_uids.merge_star_and_none(),
            statuses: self.statuses.merge_star_and_none(),
            types: self.types.merge_star_and_none(),
            index_uids: index_names(self.index_uids),
            canceled_by: self.canceled_by.merge_star_and_none(),
            before_enqueued_at: self
                .before_enqueued_at
                .merge_star_and_none()
                .map(|date| date.0),
            after_enqueued_at: self
                .after_enqueued_at
                .merge_star_and_none()
                .map(|date| date.0),
            before_started_at: self
                .before_started_at
                .merge_star_and_none()
                .map(|date| date.0),
            after_started_at: self
                .after_started_at
                .merge_star_and_none()
                .map(|date| date.0),
            before_finished_at: self
                .before_finished_at
                .merge_star_and_none()
                .map(|date| date.0),
            after_finished_at: self
                .after_finished_at
                .merge_star_and_none()
                .map(|date| date.0),
        }
    }
}

/// Decodes the query string of `GET /tasks` or `GET /batches`.
pub fn decode_list_query(raw_query: &str) -> Result<TaskQuery, ResponseError> {
    crate::decode::decode_query::<TasksFilterQuery, QueryError>(raw_query)
        .map(TasksFilterQuery::into_query)
}

/// Decodes the query string of `POST /tasks/cancel` or `DELETE /tasks`; at least one
/// filter is required.
pub fn decode_deletion_or_cancelation_query(
    raw_query: &str,
    action: TaskAction,
) -> Result<TaskQuery, ResponseError> {
    let query =
        crate::decode::decode_query::<TaskDeletionOrCancelationQuery, QueryError>(raw_query)?;
    if query.is_empty() {
        return Err(ResponseError::missing_task_filters(match action {
            TaskAction::Cancel => "cancel",
            TaskAction::Delete => "delete",
        }));
    }
    Ok(query.into_query())
}

/// Parses the `{task_id}` / `{batch_id}` path segment.
pub fn parse_path_uid(text: &str, code: Code) -> Result<u32, ResponseError> {
    text.parse().map_err(|_| {
        let what = if code == Code::InvalidBatchUids {
            "Batch"
        } else {
            "Task"
        };
        ResponseError::new(
            code,
            format!("{what} uid `{text}` is invalid. It should only contain numeric characters."),
        )
    })
}

/// Whether `date` is strictly inside the optional bounds (a missing date matches only when
/// neither bound is set).
fn within(
    date: Option<OffsetDateTime>,
    after: Option<OffsetDateTime>,
    before: Option<OffsetDateTime>,
) -> bool {
    if after.is_none() && before.is_none() {
        return true;
    }
    let Some(date) = date else {
        return false;
    };
    after.is_none_or(|after| date > after) && before.is_none_or(|before| date < before)
}

/// Whether `task` passes every filter of `query` (`limit`, `from` and `reverse` aside).
pub fn matches(query: &TaskQuery, task: &Task) -> bool {
    let in_list = |list: &Option<Vec<u32>>, value: Option<u32>| {
        list.as_ref()
            .is_none_or(|list| value.is_some_and(|value| list.contains(&value)))
    };
    in_list(&query.uids, Some(task.uid))
        && in_list(&query.batch_uids, task.batch_uid)
        && in_list(&query.canceled_by, task.canceled_by)
        && query
            .statuses
            .as_ref()
            .is_none_or(|statuses| statuses.contains(&task.status))
        && query
            .types
            .as_ref()
            .is_none_or(|types| types.contains(&task.kind()))
        && query.index_uids.as_ref().is_none_or(|index_uids| {
            task.indexes()
                .iter()
                .any(|index| index_uids.iter().any(|uid| uid == index))
        })
        && within(
            Some(task.enqueued_at),
            query.after_enqueued_at,
            query.before_enqueued_at,
        )
        && within(
            task.started_at,
            query.after_started_at,
            query.before_started_at,
        )
        && within(
            task.finished_at,
            query.after_finished_at,
            query.before_finished_at,
        )
}

/// Whether `uid` is on the requested side of `from` (newest first: `uid <= from`;
/// `reverse`: `uid >= from`).
pub fn after_from(query: &TaskQuery, uid: u32) -> bool {
    match query.from {
        None => true,
        Some(from) if query.reverse.unwrap_or(false) => uid >= from,
        Some(from) => uid <= from,
    }
}

/// One page of a list: what `GET /tasks` and `GET /batches` answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    pub results: Vec<T>,
    pub total: u64,
    pub limit: u32,
    pub from: Option<u32>,
    pub next: Option<u32>,
}

/// Cuts a page from `items` already filtered, ordered and cut at `limit + 1` items, as
/// Meilisearch: the extra item, if present, is removed and gives `next`; `from` is the uid
/// of the first item. `limit` is the requested limit.
pub fn paginate<T>(
    mut items: Vec<T>,
    uid_of: impl Fn(&T) -> u32,
    limit: u32,
    total: u64,
) -> Page<T> {
    let fetched = limit.saturating_add(1);
    debug_assert!(
        items.len() <= fetched as usize,
        "the caller cuts the items at `limit + 1`"
    );
    let next = if items.len() == fetched as usize {
        items.pop().map(|item| uid_of(&item))
    } else {
        None
    };
    let from = items.first().map(&uid_of);
    Page {
        results: items,
        total,
        limit: fetched.saturating_sub(1),
        from,
        next,
    }
}

impl<T> Page<T> {
    /// The same page with every result mapped through `view`.
    pub fn map<U>(self, view: impl FnMut(T) -> U) -> Page<U> {
        Page {
            results: self.results.into_iter().map(view).collect(),
            total: self.total,
            limit: self.limit,
            from: self.from,
            next: self.next,
        }
    }
}

impl Page<Value> {
    /// `{"results", "total", "limit", "from", "next"}`.
    pub fn to_json(&self) -> Value {
        let mut object = serde_json::Map::new();
        object.insert("results".into(), Value::Array(self.results.clone()));
        object.insert("total".into(), json!(self.total));
        object.insert("limit".into(), json!(self.limit));
        object.insert("from".into(), json!(self.from));
        object.insert("next".into(), json!(self.next));
        Value::Object(object)
    }
}
