//! Webhooks: the URLs told about every finished batch, as `/webhooks` manages them.
//!
//! Invariants:
//! - at most [`MAX_WEBHOOKS`] webhooks are registered through the API, each with at most
//!   [`MAX_WEBHOOK_HEADERS`] headers, a non-empty parsable URL and valid header names and
//!   values;
//! - the webhook of the command line (`--task-webhook-url`) has the nil uuid, is never
//!   persisted and can be neither changed nor deleted through the API;
//! - reads mask the values of `Authorization` headers (any case), keeping a `Bearer `
//!   prefix; deliveries send them as they are.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::errors::{Code, ResponseError};
use crate::settings::setting::Setting;

/// How many webhooks the API may register.
pub const MAX_WEBHOOKS: usize = 20;

/// How many headers one webhook may have.
pub const MAX_WEBHOOK_HEADERS: usize = 200;

/// File (in the data directory) that holds the webhooks registered through the API.
pub const WEBHOOKS_FILE_NAME: &str = "webhooks.json";

/// The header whose values reads mask.
const AUTHORIZATION_HEADER: &str = "authorization";

/// The scheme prefix a masked `Authorization` value keeps.
const BEARER_PREFIX: &str = "Bearer ";

/// The webhooks registered through the API, by uuid.
pub type Registered = BTreeMap<Uuid, Webhook>;

/// The webhook a change created or updated (none for a deletion).
pub type Changed = Option<(Uuid, Webhook)>;

/// One webhook: where to POST, and the headers sent along.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Webhook {
    pub url: String,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
}

/// The body of `POST /webhooks` and `PATCH /webhooks/{uuid}`: each field absent, `null`
/// (reset) or set; a header `null` removes that header.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WebhookPatch {
    pub url: Setting<String>,
    pub headers: Setting<BTreeMap<String, Setting<String>>>,
}

/// Every webhook of the instance: the command line's one (nil uuid) and the API's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Webhooks {
    command_line: Option<Webhook>,
    registered: BTreeMap<Uuid, Webhook>,
}

/// A change of the registered webhooks, applied on the control core.
#[derive(Debug, Clone)]
pub enum WebhookChange {
    Create { uuid: Uuid, patch: WebhookPatch },
    Update { uuid: Uuid, patch: WebhookPatch },
    Delete { uuid: Uuid },
}

impl Webhooks {
    /// The command line's webhook (if any) beside the registered ones.
    pub fn new(command_line: Option<Webhook>, registered: BTreeMap<Uuid, Webhook>) -> Webhooks {
        Webhooks {
            command_line,
            registered,
        }
    }

    /// The webhooks registered through the API (what is persisted).
    pub fn registered(&self) -> &BTreeMap<Uuid, Webhook> {
        &self.registered
    }

    /// The same command-line webhook with `registered` instead.
    pub fn with_registered(&self, registered: BTreeMap<Uuid, Webhook>) -> Webhooks {
        Webhooks {
            command_line: self.command_line.clone(),
            registered,
        }
    }

    /// Every webhook by uuid, the command line's (nil uuid) first.
    pub fn all(&self) -> impl Iterator<Item = (Uuid, &Webhook)> {
        self.command_line
            .iter()
            .map(|webhook| (Uuid::nil(), webhook))
            .chain(
                self.registered
                    .iter()
                    .map(|(uuid, webhook)| (*uuid, webhook)),
            )
    }

    /// The webhook `uuid`, if there is one.
    pub fn get(&self, uuid: Uuid) -> Option<&Webhook> {
        self.all()
            .find(|(candidate, _)| *candidate == uuid)
            .map(|(_, webhook)| webhook)
    }

    /// Whether no webhook is to be called.
    pub fn is_empty(&self) -> bool {
        self.command_line.is_none() && self.registered.is_empty()
    }
}

/// The command line's webhook: its URL, and its `Authorization` header when given.
pub fn command_line_webhook(
    url: Option<&url::Url>,
    authorization: Option<&str>,
) -> Option<Webhook> {
    let url = url?;
    let headers = authorization
        .map(|value| ("Authorization".to_string(), value.to_string()))
        .into_iter()
        .collect();
    Some(Webhook {
        url: url.to_string(),
        headers,
    })
}

/// The webhook as reads show it: `uuid`, `isEditable`, `url`, `headers` (masked).
pub fn webhook_view(uuid: Uuid, webhook: &Webhook) -> Value {
    let headers: serde_json::Map<String, Value> = webhook
        .headers
        .iter()
        .map(|(name, value)| {
            let shown = if name.eq_ignore_ascii_case(AUTHORIZATION_HEADER) {
                masked_authorization(value)
            } else {
                value.clone()
            };
            (name.clone(), Value::String(shown))
        })
        .collect();
    json!({
        "uuid": uuid.to_string(),
        "isEditable": !uuid.is_nil(),
        "url": webhook.url,
        "headers": headers,
    })
}

/// An `Authorization` value masked as Meilisearch masks secrets, a `Bearer ` prefix kept.
pub fn masked_authorization(value: &str) -> String {
    match value.strip_prefix(BEARER_PREFIX) {
        Some(token) => format!(
            "{BEARER_PREFIX}{}",
            crate::auth::masked_secret::masked_secret(token)
        ),
        None => crate::auth::masked_secret::masked_secret(value),
    }
}

/// The registered webhooks after `change`, and the webhook it created or updated.
pub fn apply_change(
    webhooks: &Webhooks,
    change: WebhookChange,
) -> Result<(Registered, Changed), ResponseError> {
    let mut registered = webhooks.registered.clone();
    match change {
        WebhookChange::Create { uuid, patch } => {
            let webhook = created(&registered, uuid, patch)?;
            registered.insert(uuid, webhook.clone());
            Ok((registered, Some((uuid, webhook))))
        }
        WebhookChange::Update { uuid, patch } => {
            refuse_command_line(uuid)?;
            let old = registered.remove(&uuid).ok_or_else(|| not_found(uuid))?;
            let webhook = patched(uuid, old, patch)?;
            check(uuid, &webhook)?;
            registered.insert(uuid, webhook.clone());
            Ok((registered, Some((uuid, webhook))))
        }
        WebhookChange::Delete { uuid } => {
            refuse_command_line(uuid)?;
            registered.remove(&uuid).ok_or_else(|| not_found(uuid))?;
            Ok((registered, None))
        }
    }
}

/// A new webhook from a `POST` body, checked against the limits.
fn created(
    registered: &BTreeMap<Uuid, Webhook>,
    uuid: Uuid,
    patch: WebhookPatch,
) -> Result<Webhook, ResponseError> {
    if let Setting::Set(headers) = &patch.headers
        && headers.len() > MAX_WEBHOOK_HEADERS
    {
        return Err(too_many_headers(uuid));
    }
    if registered.len() >= MAX_WEBHOOKS {
        return Err(ResponseError::new(
            Code::InvalidWebhooks,
            format!(
                "Defining too many webhooks would crush the server. Please limit the number of \
                 webhooks to {MAX_WEBHOOKS}. You may use a third-party proxy server to dispatch \
                 events to more than {MAX_WEBHOOKS} endpoints."
            ),
        ));
    }
    let url = patch.url.set().ok_or_else(|| missing_url(uuid))?;
    let headers = match patch.headers {
        Setting::Set(headers) => headers
            .into_iter()
            .map(|(name, value)| (name, value.set().unwrap_or_default()))
            .collect(),
        Setting::Reset | Setting::NotSet => BTreeMap::new(),
    };
    let webhook = Webhook { url, headers };
    check(uuid, &webhook)?;
    Ok(webhook)
}

/// `old` with a `PATCH` body applied: headers merged, a `null` header removed.
fn patched(uuid: Uuid, old: Webhook, patch: WebhookPatch) -> Result<Webhook, ResponseError> {
    let Webhook { url, mut headers } = old;
    let url = match patch.url {
        Setting::Set(url) => url,
        Setting::NotSet => url,
        Setting::Reset => return Err(missing_url(uuid)),
    };
    match patch.headers {
        Setting::Set(changes) => {
            for (name, value) in changes {
                match value {
                    Setting::Set(value) => {
                        headers.insert(name, value);
                    }
                    Setting::Reset => {
                        headers.remove(&name);
                    }
                    Setting::NotSet => {}
                }
            }
        }
        Setting::Reset => headers.clear(),
        Setting::NotSet => {}
    }
    Ok(Webhook { url, headers })
}

/// The checks every created or changed webhook passes, in Meilisearch's order.
fn check(uuid: Uuid, webhook: &Webhook) -> Result<(), ResponseError> {
    if webhook.url.is_empty() {
        return Err(missing_url(uuid));
    }
    if webhook.headers.len() > MAX_WEBHOOK_HEADERS {
        return Err(too_many_headers(uuid));
    }
    for (name, value) in &webhook.headers {
        if !is_header_name(name) {
            return Err(ResponseError::new(
                Code::InvalidWebhookHeaders,
                format!("Invalid header name `{name}`: invalid HTTP header name"),
            ));
        }
        if !is_header_value(value) {
            return Err(ResponseError::new(
                Code::InvalidWebhookHeaders,
                format!("Invalid header value `{name}`: failed to parse header value"),
            ));
        }
    }
    url::Url::parse(&webhook.url).map(|_| ()).map_err(|error| {
        ResponseError::new(
            Code::InvalidWebhookUrl,
            format!("Invalid URL `{}`: {error}", webhook.url),
        )
    })
}

/// An HTTP token: one or more of the letters, digits and ``!#$%&'*+-.^_`|~``.
fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte))
}

/// A header value: no control character but the tab.
fn is_header_value(value: &str) -> bool {
    value
        .bytes()
        .all(|byte| (byte >= b' ' && byte != 0x7f) || byte == b'\t')
}

/// The nil uuid names the command line's webhook, which the API does not change.
fn refuse_command_line(uuid: Uuid) -> Result<(), ResponseError> {
    if uuid.is_nil() {
        return Err(ResponseError::new(
            Code::ImmutableWebhook,
            format!(
                "Webhook `{uuid}` is immutable. The webhook defined from the command line \
                 cannot be modified using the API."
            ),
        ));
    }
    Ok(())
}

/// `webhook_not_found`.
pub fn not_found(uuid: Uuid) -> ResponseError {
    ResponseError::new(
        Code::WebhookNotFound,
        format!("Webhook `{uuid}` not found."),
    )
}

fn missing_url(uuid: Uuid) -> ResponseError {
    ResponseError::new(
        Code::InvalidWebhookUrl,
        format!("The URL for the webhook `{uuid}` is missing."),
    )
}

fn too_many_headers(uuid: Uuid) -> ResponseError {
    ResponseError::new(
        Code::InvalidWebhookHeaders,
        format!(
            "Too many headers for the webhook `{uuid}`. Please limit the number of headers to \
             {MAX_WEBHOOK_HEADERS}. Hint: To remove an already defined header set its value to \
             `null`"
        ),
    )
}

/// The uuid of a path, or `invalid_webhook_uuid`.
pub fn parse_uuid(text: &str) -> Result<Uuid, ResponseError> {
    Uuid::parse_str(text).map_err(|error| {
        ResponseError::new(Code::InvalidWebhookUuid, format!("Invalid UUID: {error}"))
    })
}

/// Reads the persisted registered webhooks (none when none were ever saved).
pub fn load_registered(
    data_directory: &std::path::Path,
) -> Result<BTreeMap<Uuid, Webhook>, String> {
    let path = data_directory.join(WEBHOOKS_FILE_NAME);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map_err(|error| format!("{} is damaged: {error}", path.display())),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
        Err(error) => Err(format!("could not read {}: {error}", path.display())),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn patch(url: Option<&str>, headers: &[(&str, Option<&str>)]) -> WebhookPatch {
        WebhookPatch {
            url: url.map_or(Setting::NotSet, |url| Setting::Set(url.to_string())),
            headers: Setting::Set(
                headers
                    .iter()
                    .map(|(name, value)| {
                        let value =
                            value.map_or(Setting::Reset, |value| Setting::Set(value.into()));
                        (name.to_string(), value)
                    })
                    .collect(),
            ),
        }
    }

    #[test]
    fn authorization_values_are_masked_by_length_keeping_bearer() {
        assert_eq!(masked_authorization("Bearer short"), "Bearer XXX...");
        assert_eq!(
            masked_authorization("Bearer abcdefghijklmnop"),
            "Bearer abXXXX..."
        );
        assert_eq!(
            masked_authorization("0123456789012345678901"),
            "012XXXXX..."
        );
        let view = webhook_view(
            Uuid::nil(),
            &Webhook {
                url: "http://a.b".into(),
                headers: [(
                    "AUTHORIZATION".to_string(),
                    "Bearer abcdefghijklmnop".to_string(),
                )]
                .into(),
            },
        );
        assert_eq!(view["headers"]["AUTHORIZATION"], "Bearer abXXXX...");
        assert_eq!(view["isEditable"], false);
    }

    #[test]
    fn update_merges_headers_and_removes_null_ones() {
        let uuid = Uuid::new_v4();
        let webhooks = Webhooks::default();
        let create = WebhookChange::Create {
            uuid,
            patch: patch(Some("http://a.b"), &[("a", Some("1")), ("b", Some("2"))]),
        };
        let (registered, _) = apply_change(&webhooks, create).unwrap();
        let webhooks = webhooks.with_registered(registered);
        let update = WebhookChange::Update {
            uuid,
            patch: patch(None, &[("a", None), ("c", Some("3"))]),
        };
        let (_, changed) = apply_change(&webhooks, update).unwrap();
        let (_, webhook) = changed.unwrap();
        assert_eq!(webhook.url, "http://a.b");
        assert_eq!(
            webhook.headers,
            [
                ("b".to_string(), "2".to_string()),
                ("c".to_string(), "3".to_string())
            ]
            .into()
        );
    }

    #[test]
    fn the_command_line_webhook_is_immutable_and_the_limit_counts_registered_ones() {
        let command_line =
            command_line_webhook(Some(&url::Url::parse("http://a.b").unwrap()), None);
        let registered: Registered = (0..MAX_WEBHOOKS)
            .map(|_| (Uuid::new_v4(), Webhook::default()))
            .collect();
        let webhooks = Webhooks::new(command_line, registered);
        let delete = WebhookChange::Delete { uuid: Uuid::nil() };
        assert_eq!(
            apply_change(&webhooks, delete).unwrap_err().code,
            Code::ImmutableWebhook
        );
        let create = WebhookChange::Create {
            uuid: Uuid::new_v4(),
            patch: patch(Some("http://a.b"), &[]),
        };
        assert_eq!(
            apply_change(&webhooks, create).unwrap_err().code,
            Code::InvalidWebhooks
        );
    }
}
