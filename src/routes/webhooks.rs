//! `/webhooks`: list, create (201), get, update and delete (204) the webhooks told about
//! every finished batch. Synchronous: the control core applies and persists each change
//! before the answer.
//!
//! Invariants: a body is decoded before the path's uuid is looked at (a bad body wins over
//! a bad uuid, as in Meilisearch); reads mask `Authorization` header values.

use serde_json::{Value, json};
use uuid::Uuid;

use crate::control::webhook_body::parse_webhook_body;
use crate::control::webhooks::{Webhook, WebhookChange, not_found, parse_uuid, webhook_view};
use crate::errors::{Code, ResponseError};
use crate::http::{Request, Response};
use crate::routes::{Services, body};

/// `GET /webhooks`.
pub fn list(services: &Services) -> Response {
    let webhooks = services.control.webhooks();
    let results: Vec<Value> = webhooks
        .all()
        .map(|(uuid, webhook)| webhook_view(uuid, webhook))
        .collect();
    Response::json(200, json!({ "results": results }).to_string())
}

/// `POST /webhooks`.
pub async fn create(services: &Services, request: &Request) -> Result<Response, ResponseError> {
    let patch = parse_webhook_body(&body::json_value(request)?)?;
    let uuid = Uuid::new_v4();
    let changed = services
        .control
        .change_webhooks(WebhookChange::Create { uuid, patch })
        .await?;
    changed_view(201, changed)
}

/// `GET /webhooks/{uuid}`.
pub fn get(services: &Services, uuid: &str) -> Result<Response, ResponseError> {
    let uuid = parse_uuid(uuid)?;
    let webhooks = services.control.webhooks();
    let webhook = webhooks.get(uuid).ok_or_else(|| not_found(uuid))?;
    Ok(Response::json(200, webhook_view(uuid, webhook).to_string()))
}

/// `PATCH /webhooks/{uuid}`.
pub async fn update(
    services: &Services,
    request: &Request,
    uuid: &str,
) -> Result<Response, ResponseError> {
    let patch = parse_webhook_body(&body::json_value(request)?)?;
    let uuid = parse_uuid(uuid)?;
    let changed = services
        .control
        .change_webhooks(WebhookChange::Update { uuid, patch })
        .await?;
    changed_view(200, changed)
}

/// `DELETE /webhooks/{uuid}`.
pub async fn delete(services: &Services, uuid: &str) -> Result<Response, ResponseError> {
    let uuid = parse_uuid(uuid)?;
    services
        .control
        .change_webhooks(WebhookChange::Delete { uuid })
        .await?;
    Ok(Response::empty(204))
}

/// The created or updated webhook, as reads show it.
fn changed_view(status: u16, changed: Option<(Uuid, Webhook)>) -> Result<Response, ResponseError> {
    let (uuid, webhook) = changed
        .ok_or_else(|| ResponseError::new(Code::Internal, "the change answered no webhook"))?;
    Ok(Response::json(
        status,
        webhook_view(uuid, &webhook).to_string(),
    ))
}
