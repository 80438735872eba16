//! `POST /export`: registers an `export` task that sends this instance's indexes (settings
//! and documents) to another Meilisearch-compatible server (reference §4).
//!
//! The body is decoded as Meilisearch 1.41 decodes it, with its codes and messages: `url`
//! (`invalid_export_url`, not validated here: a bad URL fails the task), `apiKey`
//! (`invalid_export_api_key`), `payloadSize` as bytes or a `byte-unit` string
//! (`invalid_export_payload_size`), `indexes` mapping index uid patterns to `filter` (any
//! JSON value: its syntax is checked while the task runs) and `overrideSettings`
//! (`invalid_export_index_override_settings`); unknown fields and bad patterns are
//! `bad_request`. Meilisearch answers 200 (not 202) with the summarized task.
//!
//! Invariant: a registered export names only valid index uid patterns.

use std::collections::BTreeMap;
use std::str::FromStr;

use deserr::{DeserializeError, Deserr, ErrorKind, IntoValue, Map, ValueKind, ValuePointerRef};
use serde_json::Value;

use super::Services;
use super::body;
use super::indexes::register;
use crate::auth::index_pattern::IndexUidPattern;
use crate::decode::error::JsonError;
use crate::errors::{ResponseError, codes};
use crate::http::{Request, Response};
use crate::tasks::model::{ExportIndexSettings, KindWithContent};

/// The status Meilisearch answers an export with (its code notes 202 is meant for 2.0).
const EXPORT_REGISTERED_STATUS: u16 = 200;

/// The pattern exporting every index, when `indexes` is not given.
const EVERY_INDEX_PATTERN: &str = "*";

/// The key type Meilisearch names when an `indexes` key is no index uid pattern (its map
/// decoder prints the Rust type name of its pattern type).
const PATTERN_KEY_TYPE: &str = "meilisearch_types::index_uid_pattern::IndexUidPattern";

/// `POST /export`.
pub async fn export(services: &Services, request: &Request) -> Result<Response, ResponseError> {
    let body = body::json::<ExportBody, JsonError>(request)?;
    let indexes = match body.indexes {
        Some(ExportPatterns(patterns)) => patterns,
        None => BTreeMap::from([(
            EVERY_INDEX_PATTERN.to_owned(),
            ExportIndexSettings {
                filter: None,
                override_settings: false,
                matched_documents: None,
            },
        )]),
    };
    let kind = KindWithContent::Export {
        url: body.url,
        api_key: body.api_key,
        payload_size: body.payload_size.map(|PayloadSize(bytes)| bytes),
        indexes,
    };
    register(services, request, kind, None, EXPORT_REGISTERED_STATUS).await
}

#[derive(Debug, Deserr)]
#[deserr(error = JsonError, rename_all = camelCase, deny_unknown_fields)]
struct ExportBody {
    #[deserr(default, error = JsonError<codes::InvalidExportUrl>)]
    url: String,
    #[deserr(default, error = JsonError<codes::InvalidExportApiKey>)]
    api_key: Option<String>,
    #[deserr(default, error = JsonError<codes::InvalidExportPayloadSize>)]
    payload_size: Option<PayloadSize>,
    #[deserr(default)]
    indexes: Option<ExportPatterns>,
}

/// What one pattern of `indexes` asks.
#[derive(Debug, Deserr)]
#[deserr(error = JsonError, rename_all = camelCase, deny_unknown_fields)]
struct IndexExportBody {
    /// Any JSON value: Meilisearch checks its syntax only when the task runs.
    #[deserr(default, error = JsonError<codes::InvalidExportIndexFilter>)]
    filter: Option<Value>,
    #[deserr(default, error = JsonError<codes::InvalidExportIndexOverrideSettings>)]
    override_settings: bool,
}

/// `payloadSize`: a number of bytes, or a size with a unit (`"24MiB"`, `"100 MB"`), read as
/// the `byte-unit` crate reads it (a lower-case `b` means bits).
#[derive(Debug)]
struct PayloadSize(u64);

impl<E: DeserializeError> Deserr<E> for PayloadSize {
    fn deserialize_from_value<V: IntoValue>(
        value: deserr::Value<V>,
        location: ValuePointerRef,
    ) -> Result<Self, E> {
        match value {
            deserr::Value::Integer(bytes) => Ok(PayloadSize(bytes)),
            deserr::Value::String(text) => byte_unit::Byte::from_str(&text)
                .map(|size| PayloadSize(size.as_u64()))
                .map_err(|error| {
                    let kind = ErrorKind::Unexpected {
                        msg: error.to_string(),
                    };
                    deserr::take_cf_content(E::error::<V>(None, kind, location))
                }),
            actual => {
                let kind = ErrorKind::IncorrectValueKind {
                    actual,
                    accepted: &[ValueKind::Integer, ValueKind::String],
                };
                Err(deserr::take_cf_content(E::error(None, kind, location)))
            }
        }
    }
}

/// `indexes`: index uid patterns (in pattern order) and what each asks.
#[derive(Debug)]
struct ExportPatterns(BTreeMap<String, ExportIndexSettings>);

impl Deserr<JsonError> for ExportPatterns {
    fn deserialize_from_value<V: IntoValue>(
        value: deserr::Value<V>,
        location: ValuePointerRef,
    ) -> Result<Self, JsonError> {
        let entries = match value {
            deserr::Value::Map(entries) => entries,
            actual => {
                let kind = ErrorKind::IncorrectValueKind {
                    actual,
                    accepted: &[ValueKind::Map],
                };
                return Err(deserr::take_cf_content(JsonError::error(
                    None, kind, location,
                )));
            }
        };
        let mut patterns = BTreeMap::new();
        for (key, value) in entries.into_iter() {
            if IndexUidPattern::parse(&key).is_err() {
                let kind = ErrorKind::Unexpected {
                    msg: format!(
                        "the key \"{key}\" could not be deserialized into the key type `{PATTERN_KEY_TYPE}`"
                    ),
                };
                return Err(deserr::take_cf_content(JsonError::error::<V>(
                    None, kind, location,
                )));
            }
            let settings = IndexExportBody::deserialize_from_value(
                value.into_value(),
                location.push_key(&key),
            )?;
            patterns.insert(
                key,
                ExportIndexSettings {
                    filter: settings.filter,
                    override_settings: settings.override_settings,
                    matched_documents: None,
                },
            );
        }
        Ok(ExportPatterns(patterns))
    }
}
