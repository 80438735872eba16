//! `/tasks` and `/batches`: list with filters, get one, cancel (200), delete (200) and
//! compact the queue (`POST /tasks/compact`, experimental `taskQueueCompactionRoute`). The
//! queue lives on the control core; these routes ask it through the coordinator.

use serde_json::Value;

use crate::auth::AuthContext;
use crate::errors::{Code, ResponseError};
use crate::http::{Request, Response};
use crate::routes::Services;
use crate::tasks::KindWithContent;
use crate::tasks::control_side::{self, TaskRead};
use crate::tasks::query::{
    TaskAction, decode_deletion_or_cancelation_query, decode_list_query, parse_path_uid,
};
use crate::tasks::queue_compaction;
use crate::tasks::task_documents::update_file_as_ndjson;
use crate::tasks::update_files::format_of;
use crate::tasks::view::summarized_task;

/// `GET /tasks`.
pub async fn list_tasks(
    services: &Services,
    request: &Request,
    context: AuthContext,
) -> Result<Response, ResponseError> {
    let query = decode_list_query(request.query.as_deref().unwrap_or(""))?;
    read(services, TaskRead::ListTasks(query), context).await
}

/// `GET /batches`.
pub async fn list_batches(
    services: &Services,
    request: &Request,
    context: AuthContext,
) -> Result<Response, ResponseError> {
    let query = decode_list_query(request.query.as_deref().unwrap_or(""))?;
    read(services, TaskRead::ListBatches(query), context).await
}

/// `GET /tasks/{task_id}`.
pub async fn get_task(
    services: &Services,
    uid: &str,
    context: AuthContext,
) -> Result<Response, ResponseError> {
    let uid = parse_path_uid(uid, Code::InvalidTaskUids)?;
    read(services, TaskRead::Task(uid), context).await
}

/// The discussion `feature_not_enabled` points to for `GET /tasks/{task_id}/documents`.
const GET_TASK_DOCUMENTS_LINK: &str = "https://github.com/orgs/meilisearch/discussions/808";

/// `GET /tasks/{task_id}/documents` (experimental `getTaskDocumentsRoute`): the documents
/// of an enqueued or processing document addition, as NDJSON.
pub async fn get_task_documents(
    services: &Services,
    uid: &str,
    context: AuthContext,
) -> Result<Response, ResponseError> {
    if !services.control.features().get_task_documents_route {
        return Err(ResponseError::feature_not_enabled(
            "Getting the documents of an enqueued task",
            "get task documents route",
            GET_TASK_DOCUMENTS_LINK,
        ));
    }
    let uid = parse_path_uid(uid, Code::InvalidTaskUids)?;
    let name = control_side::task_update_file(&services.coordinator, uid, context).await?;
    let format = format_of(&name)
        .ok_or_else(|| ResponseError::internal(format!("unknown update file format: {name}")))?;
    let path = services.update_files.path(&name);
    let read = crate::runtime::blocking::run(move || match std::fs::read(&path) {
        Ok(payload) => Ok(Some(update_file_as_ndjson(payload, format))),
        // The task finished (and its file went) since the queue was asked.
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(error),
    })
    .await
    .map_err(|error| crate::errors::io_error(&error))?;
    match read {
        Some(converted) => Ok(Response {
            status: 200,
            headers: vec![(
                std::borrow::Cow::Borrowed("content-type"),
                NDJSON_CONTENT_TYPE.to_owned(),
            )],
            body: converted.map_err(ResponseError::internal)?,
            stream: None,
        }),
        None => Err(ResponseError::task_file_not_found(uid)),
    }
}

/// The discussion `feature_not_enabled` points to for `POST /tasks/compact`.
const TASK_QUEUE_COMPACTION_LINK: &str = "https://github.com/orgs/meilisearch/discussions/883";

/// `POST /tasks/compact` (experimental `taskQueueCompactionRoute`): compacts the queue's
/// file now and answers its sizes before and after (see `crate::tasks::queue_compaction`).
pub async fn compact_task_queue(services: &Services) -> Result<Response, ResponseError> {
    if !services.control.features().task_queue_compaction_route {
        return Err(ResponseError::feature_not_enabled(
            "Using the /tasks/compact route",
            "task queue compaction route",
            TASK_QUEUE_COMPACTION_LINK,
        ));
    }
    let outcome = queue_compaction::compact_task_queue(&services.coordinator).await?;
    let (status, body) = queue_compaction::summary(&outcome);
    Ok(json(status, &body))
}

/// The content type of NDJSON bodies.
const NDJSON_CONTENT_TYPE: &str = "application/x-ndjson";

/// `GET /batches/{batch_id}`.
pub async fn get_batch(
    services: &Services,
    uid: &str,
    context: AuthContext,
) -> Result<Response, ResponseError> {
    let uid = parse_path_uid(uid, Code::InvalidBatchUids)?;
    read(services, TaskRead::Batch(uid), context).await
}

/// `POST /tasks/cancel` and `DELETE /tasks`: register the task over the matched uids.
pub async fn cancel_or_delete(
    services: &Services,
    request: &Request,
    context: AuthContext,
    action: TaskAction,
) -> Result<Response, ResponseError> {
    let raw_query = request.query.as_deref().unwrap_or("");
    let query = decode_deletion_or_cancelation_query(raw_query, action)?;
    let matched = control_side::matching_tasks(&services.coordinator, query, context).await?;
    let original = format!("?{raw_query}");
    let kind = match action {
        TaskAction::Cancel => KindWithContent::TaskCancelation {
            query: original,
            tasks: matched,
        },
        TaskAction::Delete => KindWithContent::TaskDeletion {
            query: original,
            tasks: matched,
        },
    };
    let replication = crate::routes::write_headers::write_headers(services, request)?.replication;
    let task = control_side::register_with(&services.coordinator, kind, None, replication).await?;
    Ok(Response::json(200, summarized_task(&task).to_string()))
}

async fn read(
    services: &Services,
    read: TaskRead,
    context: AuthContext,
) -> Result<Response, ResponseError> {
    let answer = control_side::read_tasks(&services.coordinator, read, context).await?;
    Ok(json(200, &answer))
}

/// A JSON response from a value.
pub fn json(status: u16, value: &Value) -> Response {
    Response::json(status, value.to_string())
}
