//! The JSON body of `POST /webhooks` and `PATCH /webhooks/{uuid}`, decoded into a
//! [`WebhookPatch`] with Meilisearch's codes and messages.
//!
//! Invariants: the body is an object (else `bad_request`); `url` is a string or `null`
//! (`invalid_webhook_url`); `headers` is an object of strings or `null`s, or `null`
//! (`invalid_webhook_headers`); `uuid` and `isEditable` are refused as immutable, any other
//! field as unknown (`bad_request`).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::webhooks::WebhookPatch;
use crate::auth::json_messages as messages;
use crate::errors::{Code, ResponseError};
use crate::settings::setting::Setting;

/// The fields a webhook body accepts, in the order messages list them.
const WEBHOOK_FIELDS: &[&str] = &["url", "headers"];

/// Decodes a webhook body.
pub fn parse_webhook_body(body: &Value) -> Result<WebhookPatch, ResponseError> {
    let Value::Object(object) = body else {
        return Err(ResponseError::new(
            Code::BadRequest,
            messages::invalid_type("", "an object", body),
        ));
    };
    let mut patch = WebhookPatch::default();
    for (field, value) in object {
        match field.as_str() {
            "url" => patch.url = url_field(value)?,
            "headers" => patch.headers = headers_field(value)?,
            other => return Err(refused_field(other)),
        }
    }
    Ok(patch)
}

fn url_field(value: &Value) -> Result<Setting<String>, ResponseError> {
    match value {
        Value::Null => Ok(Setting::Reset),
        Value::String(url) => Ok(Setting::Set(url.clone())),
        other => Err(ResponseError::new(
            Code::InvalidWebhookUrl,
            messages::invalid_type(".url", "a string", other),
        )),
    }
}

fn headers_field(
    value: &Value,
) -> Result<Setting<BTreeMap<String, Setting<String>>>, ResponseError> {
    match value {
        Value::Null => Ok(Setting::Reset),
        Value::Object(headers) => header_values(headers).map(Setting::Set),
        other => Err(ResponseError::new(
            Code::InvalidWebhookHeaders,
            messages::invalid_type(".headers", "an object", other),
        )),
    }
}

fn header_values(
    headers: &Map<String, Value>,
) -> Result<BTreeMap<String, Setting<String>>, ResponseError> {
    headers
        .iter()
        .map(|(name, value)| match value {
            Value::Null => Ok((name.clone(), Setting::Reset)),
            Value::String(text) => Ok((name.clone(), Setting::Set(text.clone()))),
            other => Err(ResponseError::new(
                Code::InvalidWebhookHeaders,
                messages::invalid_type(&format!(".headers.{name}"), "a string", other),
            )),
        })
        .collect()
}

/// `uuid` and `isEditable` exist on a webhook but are not to be set; anything else is
/// unknown.
fn refused_field(field: &str) -> ResponseError {
    let immutable = match field {
        "uuid" => Some(Code::ImmutableWebhookUuid),
        "isEditable" => Some(Code::ImmutableWebhookIsEditable),
        _ => None,
    };
    match immutable {
        Some(code) => ResponseError::new(code, messages::immutable_field(field, WEBHOOK_FIELDS)),
        None => ResponseError::new(
            Code::BadRequest,
            messages::unknown_field(field, WEBHOOK_FIELDS),
        ),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn header_null_removes_and_headers_null_clears() {
        let patch = parse_webhook_body(&json!({"headers": {"a": null, "b": "x"}})).unwrap();
        let Setting::Set(headers) = patch.headers else {
            panic!("headers were given");
        };
        assert_eq!(headers["a"], Setting::Reset);
        assert_eq!(headers["b"], Setting::Set("x".to_string()));
        let cleared = parse_webhook_body(&json!({"headers": null})).unwrap();
        assert_eq!(cleared.headers, Setting::Reset);
    }

    #[test]
    fn immutable_and_unknown_fields_are_refused_with_their_codes() {
        let error = parse_webhook_body(&json!({"uuid": "x"})).unwrap_err();
        assert_eq!(error.code, Code::ImmutableWebhookUuid);
        let error = parse_webhook_body(&json!({"foo": 1})).unwrap_err();
        assert_eq!(error.code, Code::BadRequest);
    }
}
