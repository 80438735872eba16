//! `/keys`: create (201), list, get, update and delete (204) API keys. Changes are applied
//! by the control core, which persists them before answering.

use serde_json::Value;
use time::OffsetDateTime;

use crate::auth::{parse_create_api_key, parse_key_list_query, parse_patch_api_key};
use crate::errors::ResponseError;
use crate::http::{Request, Response};
use crate::routes::{Services, body};

/// `POST /keys`.
pub async fn create(services: &Services, request: &Request) -> Result<Response, ResponseError> {
    let json = body::json_value(request)?;
    let key = parse_create_api_key(&json, OffsetDateTime::now_utc())?;
    let view = services.control.create_key(key).await?;
    Ok(Response::json(201, view_json(&view)))
}

/// `GET /keys`: newest first, with `offset` and `limit`.
pub fn list(services: &Services, request: &Request) -> Result<Response, ResponseError> {
    let parameters = query_parameters(request)?;
    let query = parse_key_list_query(
        parameters
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str())),
    )?;
    let page = services.control.keys().list(query.offset, query.limit);
    Ok(Response::json(
        200,
        serde_json::to_string(&page).expect("a key page always serializes"),
    ))
}

/// `GET /keys/{key}`: by uid or by key string.
pub fn get(services: &Services, uid_or_key: &str) -> Result<Response, ResponseError> {
    let view = services.control.keys().get_view(uid_or_key)?;
    Ok(Response::json(200, view_json(&view)))
}

/// `PATCH /keys/{key}`: only `name` and `description` may change.
pub async fn update(
    services: &Services,
    request: &Request,
    uid_or_key: String,
) -> Result<Response, ResponseError> {
    let json = body::json_value(request)?;
    let patch = parse_patch_api_key(&json)?;
    let view = services.control.update_key(uid_or_key, patch).await?;
    Ok(Response::json(200, view_json(&view)))
}

/// `DELETE /keys/{key}`.
pub async fn delete(services: &Services, uid_or_key: String) -> Result<Response, ResponseError> {
    services.control.delete_key(uid_or_key).await?;
    Ok(Response::empty(204))
}

fn view_json(view: &crate::auth::KeyView) -> String {
    serde_json::to_string(view).expect("a key object always serializes")
}

/// The query string as ordered (name, value) pairs.
fn query_parameters(request: &Request) -> Result<Vec<(String, String)>, ResponseError> {
    let Some(query) = request.query.as_deref() else {
        return Ok(Vec::new());
    };
    let Value::Object(map) = crate::decode::query::parse_query_string(query)? else {
        return Ok(Vec::new());
    };
    Ok(map
        .into_iter()
        .map(|(name, value)| {
            let value = match value {
                Value::String(text) => text,
                other => other.to_string(),
            };
            (name, value)
        })
        .collect())
}
