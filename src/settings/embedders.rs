//! The checks an embedder's settings get at enqueue time without any embedder running:
//! the object shape, known field names and the `source` value.
//!
//! Not done yet (later, with the vector store): per-source allowed/mandatory fields,
//! fragments, composite sub-embedders, template checks, and the computed defaults that a
//! read adds.

use deserr::{DeserializeError, Deserr, ErrorKind, ValueKind, ValuePointerRef};

/// Fields of an embedder object, in Meilisearch's order.
pub const EMBEDDER_FIELDS: [&str; 18] = [
    "source",
    "model",
    "revision",
    "pooling",
    "apiKey",
    "dimensions",
    "binaryQuantized",
    "documentTemplate",
    "documentTemplateMaxBytes",
    "url",
    "indexingFragments",
    "searchFragments",
    "request",
    "response",
    "headers",
    "searchEmbedder",
    "indexingEmbedder",
    "distribution",
];

/// Accepted values of `source`.
pub const EMBEDDER_SOURCES: [&str; 6] = [
    "openAi",
    "huggingFace",
    "ollama",
    "userProvided",
    "rest",
    "composite",
];

/// Decodes one embedder object, refusing unknown fields and unknown sources.
pub fn decode_embedder<V: deserr::IntoValue, E: DeserializeError>(
    value: deserr::Value<V>,
    location: ValuePointerRef,
) -> Result<serde_json::Map<String, serde_json::Value>, E> {
    let checked = value_with_kind_check::<V, E>(value, location)?;
    let serde_json::Value::Object(object) =
        <serde_json::Value as Deserr<E>>::deserialize_from_value(checked, location)?
    else {
        // value_with_kind_check only lets maps through.
        return Ok(serde_json::Map::new());
    };
    for (key, field) in &object {
        if !EMBEDDER_FIELDS.contains(&key.as_str()) {
            let kind: ErrorKind<'_, serde_json::Value> = ErrorKind::UnknownKey {
                key,
                accepted: &EMBEDDER_FIELDS,
            };
            return Err(deserr::take_cf_content(E::error(None, kind, location)));
        }
        if key == "source" {
            check_source::<E>(field, location.push_key("source"))?;
        }
    }
    Ok(object)
}

fn value_with_kind_check<V: deserr::IntoValue, E: DeserializeError>(
    value: deserr::Value<V>,
    location: ValuePointerRef,
) -> Result<deserr::Value<V>, E> {
    if value.kind() == ValueKind::Map {
        Ok(value)
    } else {
        let kind = ErrorKind::IncorrectValueKind {
            actual: value,
            accepted: &[ValueKind::Map],
        };
        Err(deserr::take_cf_content(E::error(None, kind, location)))
    }
}

fn check_source<E: DeserializeError>(
    source: &serde_json::Value,
    location: ValuePointerRef,
) -> Result<(), E> {
    match source {
        serde_json::Value::Null => Ok(()),
        serde_json::Value::String(name) if EMBEDDER_SOURCES.contains(&name.as_str()) => Ok(()),
        serde_json::Value::String(name) => {
            let kind: ErrorKind<'_, serde_json::Value> = ErrorKind::UnknownValue {
                value: name,
                accepted: &EMBEDDER_SOURCES,
            };
            Err(deserr::take_cf_content(E::error(None, kind, location)))
        }
        other => {
            let kind = ErrorKind::IncorrectValueKind {
                actual: deserr::IntoValue::into_value(other.clone()),
                accepted: &[ValueKind::String],
            };
            Err(deserr::take_cf_content(E::error(None, kind, location)))
        }
    }
}
