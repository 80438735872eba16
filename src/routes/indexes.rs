//! `/indexes`, `/swap-indexes` and the stats routes: index listing and views are answered
//! from this core's catalog replica; changes are registered as tasks; statistics sum the
//! shards' own figures.

use std::sync::Arc;

use deserr::{Deserr, ValuePointerRef};
use serde_json::{Map, Value, json};

use crate::auth::AuthContext;
use crate::coordinator::catalog::IndexRecord;
use crate::decode::{JsonError, Param, QueryError};
use crate::errors::{Code, ResponseError, codes};
use crate::http::{Request, Response};
use crate::indexes::stats::{self, database_bytes};
use crate::routes::tasks::json;
pub use crate::routes::write_headers::{WriteHeaders, write_headers};
use crate::routes::{Services, body};
use crate::tasks::KindWithContent;
use crate::tasks::control_side;
use crate::tasks::model::IndexSwap;
use crate::tasks::view::{format_date, summarized_task};

/// Default page size of `GET /indexes`.
pub const INDEXES_LIMIT_DEFAULT: usize = 20;

#[derive(Debug, Deserr)]
#[deserr(error = JsonError, rename_all = camelCase, deny_unknown_fields)]
struct CreateIndexBody {
    #[deserr(error = JsonError<codes::InvalidIndexUid>, missing_field_error = JsonError::<codes::MissingIndexUid>::missing_field)]
    uid: String,
    #[deserr(default, error = JsonError<codes::InvalidIndexPrimaryKey>)]
    primary_key: Option<String>,
}

#[derive(Debug, Deserr)]
#[deserr(error = JsonError, rename_all = camelCase, deny_unknown_fields = unknown_index_field)]
struct UpdateIndexBody {
    #[deserr(default, error = JsonError<codes::InvalidIndexPrimaryKey>)]
    primary_key: Option<String>,
    #[deserr(default, error = JsonError<codes::InvalidIndexUid>)]
    uid: Option<String>,
}

/// An unknown field of `PATCH /indexes/{uid}`: `createdAt` and `updatedAt` are immutable
/// (their own codes), anything else is a bad request; both list only the fields accepted.
fn unknown_index_field(field: &str, accepted: &[&str], location: ValuePointerRef) -> JsonError {
    match field {
        "createdAt" => JsonError::immutable_field(field, accepted, Code::ImmutableIndexCreatedAt),
        "updatedAt" => JsonError::immutable_field(field, accepted, Code::ImmutableIndexUpdatedAt),
        _ => deserr::take_cf_content(<JsonError as deserr::DeserializeError>::error::<
            std::convert::Infallible,
        >(
            None,
            deserr::ErrorKind::UnknownKey {
                key: field,
                accepted,
            },
            location,
        )),
    }
}

#[derive(Debug, Deserr)]
#[deserr(error = JsonError, rename_all = camelCase, deny_unknown_fields)]
struct SwapBody {
    #[deserr(error = JsonError<codes::InvalidSwapIndexes>, missing_field_error = JsonError::<codes::MissingSwapIndexes>::missing_field)]
    indexes: Vec<String>,
    #[deserr(default, error = JsonError<codes::InvalidSwapRename>)]
    rename: bool,
}

#[derive(Debug, Deserr)]
#[deserr(error = QueryError, rename_all = camelCase, deny_unknown_fields)]
struct ListQuery {
    #[deserr(default = Param(0), error = QueryError<codes::InvalidIndexOffset>)]
    offset: Param<usize>,
    #[deserr(default = Param(INDEXES_LIMIT_DEFAULT), error = QueryError<codes::InvalidIndexLimit>)]
    limit: Param<usize>,
}

/// The JSON view of an index.
pub fn index_view(record: &IndexRecord) -> Value {
    json!({
        "uid": record.uid,
        "createdAt": format_date(record.created_at),
        "updatedAt": format_date(record.updated_at),
        "primaryKey": record.primary_key,
    })
}

/// Checks an index uid from a body field.
fn checked_uid(uid: &str, field: &str) -> Result<(), ResponseError> {
    checked_uid_at(uid, Code::InvalidIndexUid, &format!(".{field}"))
}

/// `uid` when it is an index uid, else `code` with the uid error's message at `location`.
fn checked_uid_at(uid: &str, code: Code, location: &str) -> Result<(), ResponseError> {
    if crate::auth::is_valid_index_uid(uid) {
        return Ok(());
    }
    Err(ResponseError::new(
        code,
        format!(
            "Invalid value at `{location}`: {}",
            ResponseError::invalid_index_uid(uid).message
        ),
    ))
}

/// `GET /indexes`.
pub fn list(
    services: &Services,
    request: &Request,
    context: &AuthContext,
) -> Result<Response, ResponseError> {
    let query = crate::decode::decode_query::<ListQuery, QueryError>(
        request.query.as_deref().unwrap_or(""),
    )?;
    let catalog = services.coordinator.catalog();
    let visible: Vec<&Arc<IndexRecord>> = catalog
        .iter()
        .filter(|record| context.is_index_authorized(&record.uid))
        .collect();
    let results: Vec<Value> = visible
        .iter()
        .skip(query.offset.0)
        .take(query.limit.0)
        .map(|record| index_view(record))
        .collect();
    Ok(json(
        200,
        &json!({
            "results": results,
            "offset": query.offset.0,
            "limit": query.limit.0,
            "total": visible.len(),
        }),
    ))
}

/// `GET /indexes/{index_uid}`.
pub fn get(services: &Services, index_uid: &str) -> Result<Response, ResponseError> {
    let record = services.coordinator.index(index_uid)?;
    Ok(json(200, &index_view(&record)))
}

/// `POST /indexes`.
pub async fn create(
    services: &Services,
    request: &Request,
    context: &AuthContext,
) -> Result<Response, ResponseError> {
    let body: CreateIndexBody = body::json::<CreateIndexBody, JsonError>(request)?;
    checked_uid(&body.uid, "uid")?;
    if !context.allow_index_creation(&body.uid) {
        return Err(ResponseError::invalid_api_key());
    }
    let kind = KindWithContent::IndexCreation {
        index_uid: body.uid,
        primary_key: body.primary_key,
    };
    register_write(services, write_headers(services, request)?, kind, None).await
}

/// `PATCH /indexes/{index_uid}`.
pub async fn update(
    services: &Services,
    request: &Request,
    index_uid: &str,
) -> Result<Response, ResponseError> {
    checked_path_uid(index_uid)?;
    let body: UpdateIndexBody = body::json::<UpdateIndexBody, JsonError>(request)?;
    if let Some(uid) = &body.uid
        && !crate::auth::is_valid_index_uid(uid)
    {
        // Unlike a creation's, the new uid's message names no field (as in 1.41).
        return Err(ResponseError::invalid_index_uid(uid));
    }
    let kind = KindWithContent::IndexUpdate {
        index_uid: index_uid.to_owned(),
        primary_key: body.primary_key,
        new_index_uid: body.uid,
    };
    register_write(services, write_headers(services, request)?, kind, None).await
}

/// `DELETE /indexes/{index_uid}`.
pub async fn delete(
    services: &Services,
    request: &Request,
    index_uid: &str,
) -> Result<Response, ResponseError> {
    checked_path_uid(index_uid)?;
    let kind = KindWithContent::IndexDeletion {
        index_uid: index_uid.to_owned(),
    };
    register_write(services, write_headers(services, request)?, kind, None).await
}

/// `POST /indexes/{index_uid}/compact`: enqueues an `indexCompaction` task (a missing index
/// fails in the task, as a deletion does).
pub async fn compact(
    services: &Services,
    request: &Request,
    index_uid: &str,
) -> Result<Response, ResponseError> {
    checked_path_uid(index_uid)?;
    let kind = KindWithContent::IndexCompaction {
        index_uid: index_uid.to_owned(),
    };
    register(services, request, kind, None, 202).await
}

/// `POST /swap-indexes`.
pub async fn swap(
    services: &Services,
    request: &Request,
    context: &AuthContext,
) -> Result<Response, ResponseError> {
    let bodies: Vec<SwapBody> = body::json::<Vec<SwapBody>, JsonError>(request)?;
    let mut swaps = Vec::with_capacity(bodies.len());
    for (position, swap) in bodies.into_iter().enumerate() {
        let [left, right]: [String; 2] = swap.indexes.clone().try_into().map_err(|_| {
            ResponseError::new(
                Code::InvalidSwapIndexes,
                format!(
                    "Two indexes must be given for each swap. The list `{}` contains {} indexes.",
                    Value::from(swap.indexes.clone()),
                    swap.indexes.len()
                ),
            )
        })?;
        for (side, uid) in [&left, &right].into_iter().enumerate() {
            // As Meilisearch 1.50 refuses it: `invalid_swap_indexes` at the uid's place.
            let location = format!("[{position}].indexes[{side}]");
            checked_uid_at(uid, Code::InvalidSwapIndexes, &location)?;
            if !context.is_index_authorized(uid) {
                return Err(ResponseError::invalid_api_key());
            }
        }
        swaps.push(IndexSwap {
            indexes: (left, right),
            rename: swap.rename,
        });
    }
    let kind = KindWithContent::IndexSwap { swaps };
    register_write(services, write_headers(services, request)?, kind, None).await
}

/// `GET /indexes/{index_uid}/stats`.
pub async fn index_stats(
    services: &Services,
    request: &Request,
    index_uid: &str,
) -> Result<Response, ResponseError> {
    let options = stats::StatsOptions::from_query(request.query.as_deref().unwrap_or(""))?;
    let record = services.coordinator.index(index_uid)?;
    let stats = stats::index_stats(&services.coordinator, &record, options).await?;
    Ok(json(200, &stats))
}

/// `GET /stats`.
pub async fn global_stats(
    services: &Services,
    request: &Request,
    context: &AuthContext,
) -> Result<Response, ResponseError> {
    let options = stats::StatsOptions::from_query(request.query.as_deref().unwrap_or(""))?;
    let format = options.size_format.unwrap_or_default();
    let catalog = services.coordinator.catalog();
    let mut indexes = Map::new();
    let bytes = database_bytes(&services.coordinator).await?;
    let mut last_update = None;
    for record in catalog.iter() {
        if !context.is_index_authorized(&record.uid) {
            continue;
        }
        let stats = stats::index_stats(&services.coordinator, record, options).await?;
        indexes.insert(record.uid.clone(), stats);
        last_update = last_update.max(Some(record.updated_at));
    }
    let mut answer = json!({
        "databaseSize": format.size(bytes.total),
        "usedDatabaseSize": format.size(bytes.total.saturating_sub(bytes.unused)),
        "lastUpdate": last_update.map(format_date),
        "indexes": indexes,
    });
    if *options.show_internal_database_sizes {
        let server = stats::server_store_sizes(&services.coordinator, format).await?;
        answer["internalDatabaseSizes"] = server;
    }
    Ok(json(200, &answer))
}

/// Checks the `{index_uid}` of a write route.
pub fn checked_path_uid(index_uid: &str) -> Result<(), ResponseError> {
    if crate::auth::is_valid_index_uid(index_uid) {
        Ok(())
    } else {
        Err(ResponseError::invalid_index_uid(index_uid))
    }
}

/// Registers the write `kind` as the network says (see [`crate::proxy`]: forwarded by the
/// leader, refused on a follower, a copy when the request carries the leader's headers)
/// and answers its summarized task with 202.
pub async fn register_write(
    services: &Services,
    headers: WriteHeaders,
    kind: KindWithContent,
    custom_metadata: Option<String>,
) -> Result<Response, ResponseError> {
    let network = services.control.network();
    let task = crate::proxy::register_write(
        &services.coordinator,
        &network,
        &services.update_files,
        headers.network,
        headers.replication,
        kind,
        custom_metadata,
    )
    .await?;
    Ok(json(202, &summarized_task(&task)))
}

/// Registers `kind` (a task no network forwards) with the request's replication
/// parameters and answers its summarized task with `status`.
pub async fn register(
    services: &Services,
    request: &Request,
    kind: KindWithContent,
    custom_metadata: Option<String>,
    status: u16,
) -> Result<Response, ResponseError> {
    let replication = write_headers(services, request)?.replication;
    let task =
        control_side::register_with(&services.coordinator, kind, custom_metadata, replication)
            .await?;
    Ok(json(status, &summarized_task(&task)))
}
