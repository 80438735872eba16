//! `/indexes/{index_uid}/settings` and its sub-routes: reads come from this core's catalog
//! replica; updates and resets are validated here and registered as `settingsUpdate` tasks,
//! which create the index when the key may create it.

use serde_json::Value;

use crate::auth::AuthContext;
use crate::errors::ResponseError;
use crate::http::{Method, Request, Response};
use crate::routes::indexes::{checked_path_uid, register_write, write_headers};
use crate::routes::tasks::json;
use crate::routes::{Services, body};
use crate::settings::apply::task_settings;
use crate::settings::decode::{
    SettingsFeatures, UpdateVerb, decode_settings_body, decode_sub_route_body, reset_sub_route,
    sub_route, validate_update,
};
use crate::settings::model::Settings;
use crate::tasks::KindWithContent;

fn features(services: &Services) -> SettingsFeatures {
    let features = services.control.features();
    SettingsFeatures {
        chat_completions: features.chat_completions,
        foreign_keys: features.foreign_keys,
        composite_embedders: features.composite_embedders,
        multimodal: features.multimodal,
    }
}

/// `GET /indexes/{index_uid}/settings`.
pub fn get_all(services: &Services, index_uid: &str) -> Result<Response, ResponseError> {
    let record = services.coordinator.index(index_uid)?;
    let features = features(services);
    Ok(json(
        200,
        &record
            .settings
            .view(features.chat_completions, features.foreign_keys),
    ))
}

/// `PATCH /indexes/{index_uid}/settings`.
pub async fn update_all(
    services: &Services,
    request: &Request,
    index_uid: &str,
    context: &AuthContext,
) -> Result<Response, ResponseError> {
    checked_path_uid(index_uid)?;
    let update = decode_settings_body(body::json_value(request)?)?;
    let headers = write_headers(services, request)?;
    enqueue(services, headers, index_uid, context, update, false).await
}

/// `DELETE /indexes/{index_uid}/settings`.
pub async fn reset_all(
    services: &Services,
    request: &Request,
    index_uid: &str,
    context: &AuthContext,
) -> Result<Response, ResponseError> {
    checked_path_uid(index_uid)?;
    let headers = write_headers(services, request)?;
    enqueue(
        services,
        headers,
        index_uid,
        context,
        Settings::cleared(),
        true,
    )
    .await
}

/// `GET`, `PUT`, `PATCH` and `DELETE /indexes/{index_uid}/settings/{setting}`.
pub async fn sub_route_request(
    services: &Services,
    request: &Request,
    index_uid: &str,
    segment: &str,
    context: &AuthContext,
) -> Result<Response, ResponseError> {
    let Some(route) = sub_route(segment) else {
        return Ok(Response::empty(404));
    };
    match request.method {
        Method::Get => {
            checked_path_uid(index_uid)?;
            let record = services.coordinator.index(index_uid)?;
            Ok(json(200, &record.settings.setting_view(route.setting)))
        }
        Method::Delete => {
            checked_path_uid(index_uid)?;
            let update = reset_sub_route(segment)
                .ok_or_else(|| ResponseError::internal("a sub-route without reset"))?;
            let headers = write_headers(services, request)?;
            enqueue(services, headers, index_uid, context, update, false).await
        }
        Method::Put | Method::Patch => {
            let expected = match route.verb {
                UpdateVerb::Put => Method::Put,
                UpdateVerb::Patch => Method::Patch,
            };
            if request.method != expected {
                return Ok(Response::empty(405));
            }
            checked_path_uid(index_uid)?;
            let value: Value = body::json_value(request)?;
            let update = decode_sub_route_body(segment, value)
                .ok_or_else(|| ResponseError::internal("a sub-route without decoder"))??;
            let headers = write_headers(services, request)?;
            enqueue(services, headers, index_uid, context, update, false).await
        }
        _ => Ok(Response::empty(405)),
    }
}

async fn enqueue(
    services: &Services,
    headers: crate::routes::indexes::WriteHeaders,
    index_uid: &str,
    context: &AuthContext,
    update: Settings,
    is_deletion: bool,
) -> Result<Response, ResponseError> {
    validate_update(&update, features(services))?;
    let Value::Object(settings) = task_settings(&update) else {
        return Err(ResponseError::internal("settings details are an object"));
    };
    let kind = KindWithContent::SettingsUpdate {
        index_uid: index_uid.to_owned(),
        settings,
        is_deletion,
        allow_index_creation: context.allow_index_creation(index_uid),
    };
    register_write(services, headers, kind, None).await
}
