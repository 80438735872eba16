//! The decoding checks of an embedder object (a deserialization error, located in the body):
//! the object shape, known field names, each field's type (`null` is always accepted: it
//! resets the field), the `source` value, the `pooling` value, the `distribution` ranges and
//! the shape of a composite's `searchEmbedder`/`indexingEmbedder`.
//!
//! Invariants: a decoded embedder is the JSON object as given; fields are checked in the
//! order they appear, the first failing one is reported.

use std::collections::BTreeMap;

use deserr::{DeserializeError, Deserr, ErrorKind, IntoValue, ValueKind, ValuePointerRef};
use serde_json::{Map, Value};

use super::fields::{EMBEDDER_FIELDS, EMBEDDER_SOURCES, SUB_EMBEDDER_FIELDS};

/// The bounds of a `distribution`'s mean (inclusive) and sigma (exclusive below).
const DISTRIBUTION_LOW: f32 = 0.0;
const DISTRIBUTION_HIGH: f32 = 1.0;

/// Accepted values of `pooling`.
#[derive(Debug, Deserr)]
#[deserr(rename_all = camelCase)]
enum Pooling {
    UseModel,
    ForceCls,
    ForceMean,
}

/// A `distribution` as decoded, before its range checks.
#[derive(Debug, Deserr)]
#[deserr(deny_unknown_fields)]
struct Distribution {
    mean: f32,
    sigma: f32,
}

/// One fragment of `indexingFragments`/`searchFragments`.
#[derive(Debug, Deserr)]
struct Fragment {
    #[allow(dead_code)]
    value: Value,
}

/// Which object is decoded: an embedder or a composite's sub-embedder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    Embedder,
    SubEmbedder,
}

/// A composite's `searchEmbedder`/`indexingEmbedder` as given, decoded alone (its own nested
/// embedders are checked later, when its source is known).
#[derive(Debug, Clone, PartialEq)]
pub struct SubEmbedderSettings(pub Map<String, Value>);

impl<E: DeserializeError> Deserr<E> for SubEmbedderSettings {
    fn deserialize_from_value<V: IntoValue>(
        value: deserr::Value<V>,
        location: ValuePointerRef,
    ) -> Result<Self, E> {
        decode_object::<V, E>(value, location, Level::SubEmbedder).map(SubEmbedderSettings)
    }
}

/// Decodes one embedder object.
pub fn decode_embedder<V: IntoValue, E: DeserializeError>(
    value: deserr::Value<V>,
    location: ValuePointerRef,
) -> Result<Map<String, Value>, E> {
    decode_object::<V, E>(value, location, Level::Embedder)
}

fn decode_object<V: IntoValue, E: DeserializeError>(
    value: deserr::Value<V>,
    location: ValuePointerRef,
    level: Level,
) -> Result<Map<String, Value>, E> {
    let checked = value_with_kind_check::<V, E>(value, location)?;
    let Value::Object(object) = <Value as Deserr<E>>::deserialize_from_value(checked, location)?
    else {
        // value_with_kind_check only lets maps through.
        return Ok(Map::new());
    };
    let accepted: &[&str] = match level {
        Level::Embedder => &EMBEDDER_FIELDS,
        Level::SubEmbedder => &SUB_EMBEDDER_FIELDS,
    };
    for (key, field) in &object {
        if !accepted.contains(&key.as_str()) {
            let kind: ErrorKind<'_, Value> = ErrorKind::UnknownKey { key, accepted };
            return Err(deserr::take_cf_content(E::error(None, kind, location)));
        }
        if !field.is_null() {
            check_field::<E>(key, field, location.push_key(key), level)?;
        }
    }
    Ok(object)
}

fn check_field<E: DeserializeError>(
    key: &str,
    field: &Value,
    location: ValuePointerRef,
    level: Level,
) -> Result<(), E> {
    match key {
        "source" => check_source::<E>(field, location),
        "model" | "revision" | "apiKey" | "documentTemplate" | "url" => {
            typed::<String, E>(field, location)
        }
        "pooling" => typed::<Pooling, E>(field, location),
        "dimensions" | "documentTemplateMaxBytes" => typed::<usize, E>(field, location),
        "binaryQuantized" => typed::<bool, E>(field, location),
        "distribution" => check_distribution::<E>(field, location),
        "headers" => typed::<BTreeMap<String, String>, E>(field, location),
        "indexingFragments" | "searchFragments" => {
            typed::<BTreeMap<String, Option<Fragment>>, E>(field, location)
        }
        "searchEmbedder" | "indexingEmbedder" if level == Level::Embedder => {
            typed::<SubEmbedderSettings, E>(field, location)
        }
        _ => Ok(()),
    }
}

fn typed<T: Deserr<E>, E: DeserializeError>(
    field: &Value,
    location: ValuePointerRef,
) -> Result<(), E> {
    T::deserialize_from_value(field.clone().into_value(), location).map(drop)
}

fn check_distribution<E: DeserializeError>(
    field: &Value,
    location: ValuePointerRef,
) -> Result<(), E> {
    let distribution = Distribution::deserialize_from_value(field.clone().into_value(), location)?;
    let message = if !(DISTRIBUTION_LOW..=DISTRIBUTION_HIGH).contains(&distribution.mean) {
        format!(
            "the distribution mean must be in the range [0, 1], got {}",
            distribution.mean
        )
    } else if distribution.sigma <= DISTRIBUTION_LOW || distribution.sigma > DISTRIBUTION_HIGH {
        format!(
            "the distribution sigma must be in the range ]0, 1], got {}",
            distribution.sigma
        )
    } else {
        return Ok(());
    };
    let kind: ErrorKind<'_, Value> = ErrorKind::Unexpected { msg: message };
    Err(deserr::take_cf_content(E::error(None, kind, location)))
}

fn value_with_kind_check<V: IntoValue, E: DeserializeError>(
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

fn check_source<E: DeserializeError>(source: &Value, location: ValuePointerRef) -> Result<(), E> {
    match source {
        Value::String(name) if EMBEDDER_SOURCES.contains(&name.as_str()) => Ok(()),
        Value::String(name) => {
            let kind: ErrorKind<'_, Value> = ErrorKind::UnknownValue {
                value: name,
                accepted: &EMBEDDER_SOURCES,
            };
            Err(deserr::take_cf_content(E::error(None, kind, location)))
        }
        other => {
            let kind = ErrorKind::IncorrectValueKind {
                actual: other.clone().into_value(),
                accepted: &[ValueKind::String],
            };
            Err(deserr::take_cf_content(E::error(None, kind, location)))
        }
    }
}
