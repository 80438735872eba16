//! `POST` and `GET /indexes/{index_uid}/search`, `POST /multi-search` and
//! `POST /indexes/{index_uid}/facet-search`.
//!
//! Each search, facet search and multi-search runs under a permit of the core's
//! [`crate::search::queue::SearchQueue`] (503 `too_many_search_requests` when it is full).
//! Both forms decode into one [`SearchBody`]; a tenant token's filter for the index is AND-ed
//! with the query's filter before the search is checked and run (see [`crate::search`]).

use std::time::Instant;

use serde_json::Value;

use crate::auth::AuthContext;
use crate::decode::{JsonError, QueryError};
use crate::errors::ResponseError;
use crate::http::{Request, Response};
use crate::routes::tasks::json;
use crate::routes::{Services, body};
use crate::search::execute::execute;
use crate::search::facet_search::{FacetSearchBody, facet_search};
use crate::search::multi::{decode_body, multi_search};
use crate::search::parameters::{SearchBody, SearchQueryString};
use crate::search::prepare::{fuse_filters, prepare};
use crate::search::response::search_result;
use crate::search::stages::StageTimer;

/// `POST /indexes/{index_uid}/search`.
pub async fn search_post(
    services: &Services,
    request: &Request,
    index_uid: &str,
    context: &AuthContext,
) -> Result<Response, ResponseError> {
    let body: SearchBody = body::json::<SearchBody, JsonError>(request)?;
    search(services, index_uid, body, context).await
}

/// `GET /indexes/{index_uid}/search`.
pub async fn search_get(
    services: &Services,
    request: &Request,
    index_uid: &str,
    context: &AuthContext,
) -> Result<Response, ResponseError> {
    let query = crate::decode::decode_query::<SearchQueryString, QueryError>(
        request.query.as_deref().unwrap_or(""),
    )?;
    search(services, index_uid, query.into_body()?, context).await
}

async fn search(
    services: &Services,
    index_uid: &str,
    body: SearchBody,
    context: &AuthContext,
) -> Result<Response, ResponseError> {
    let _permit = services.search_queue.permit().await?;
    let result = search_index(services, index_uid, body, context).await?;
    Ok(json(200, &Value::Object(result)))
}

/// Runs one search on one index and returns its result object (with `performanceDetails`,
/// the duration of each stage, under `showPerformanceDetails`).
pub async fn search_index(
    services: &Services,
    index_uid: &str,
    mut body: SearchBody,
    context: &AuthContext,
) -> Result<serde_json::Map<String, Value>, ResponseError> {
    let started = Instant::now();
    let record = services.coordinator.index(index_uid)?;
    if let Some(rules) = context.index_search_rules(index_uid) {
        body.filter = fuse_filters(rules.filter, body.filter.take());
    }
    let show_performance_details = body.show_performance_details;
    let mut stages = StageTimer::new();
    let prepared = prepare(&record, body)?;
    stages.finish("search > prepare");
    let outcome = execute(&services.coordinator, &record, &prepared).await?;
    stages.finish("search > keyword search");
    let request_uid = uuid::Uuid::now_v7().to_string();
    let mut result = search_result(
        &record,
        &prepared,
        outcome,
        started.elapsed().as_millis(),
        &request_uid,
    );
    stages.finish("search > format");
    if show_performance_details {
        result.insert(
            "performanceDetails".to_owned(),
            Value::Object(stages.into_details()),
        );
    }
    Ok(result)
}

/// `POST /multi-search`.
pub async fn multi_search_post(
    services: &Services,
    request: &Request,
    context: &AuthContext,
) -> Result<Response, ResponseError> {
    let body = decode_body(body::json_value(request)?)?;
    // One permit for the whole multi-search, as Meilisearch takes.
    let _permit = services.search_queue.permit().await?;
    let result = multi_search(services, body, context).await?;
    Ok(json(200, &Value::Object(result)))
}

/// `POST /indexes/{index_uid}/facet-search`.
pub async fn facet_search_post(
    services: &Services,
    request: &Request,
    index_uid: &str,
    context: &AuthContext,
) -> Result<Response, ResponseError> {
    let body = body::json::<FacetSearchBody, JsonError>(request)?;
    let record = services.coordinator.index(index_uid)?;
    let _permit = services.search_queue.permit().await?;
    let tenant_filter = context
        .index_search_rules(index_uid)
        .and_then(|rules| rules.filter);
    let result = facet_search(&services.coordinator, &record, body, tenant_filter).await?;
    Ok(json(200, &Value::Object(result)))
}
