//! A document's `_vectors`: the embeddings it gives each embedder of the shard, validated as
//! Meilisearch validates them, and taken out of the document that is stored and indexed.
//!
//! Accepted forms of `_vectors.<embedder>`: `null` (no embedding), an array of numbers (one
//! embedding), an array of arrays of numbers (several; `[]` is none), or an object with a
//! boolean `regenerate` and an optional `embeddings` in one of the forms above. Entries naming
//! no embedder of the shard stay in the stored document as they came.
//!
//! Invariant: after [`take_vectors`], the document holds no entry of a known embedder, and no
//! `_vectors` at all when nothing else was in it.

use serde_json::{Map, Value};

use super::settings::VectorSettings;
use crate::error::{ShardError, VectorsErrorKind};

/// The reserved field holding a document's embeddings.
pub const VECTORS_FIELD: &str = "_vectors";

/// The embeddings a document gives one embedder slot.
#[derive(Debug, Clone, PartialEq)]
pub struct SlotVectors {
    /// The slot number (see `settings::EmbedderSlot`).
    pub slot: u16,
    pub embeddings: Vec<Vec<f32>>,
    /// Whether the embedder may compute the embeddings again (false: the user gave them).
    pub regenerate: bool,
}

/// Removes the entries of `settings`' embedders from `document`'s `_vectors` and returns them,
/// validated; `external_id` names the document in errors.
pub fn take_vectors(
    document: &mut Map<String, Value>,
    settings: &VectorSettings,
    external_id: &str,
) -> Result<Vec<SlotVectors>, ShardError> {
    let Some(vectors) = document.get_mut(VECTORS_FIELD) else {
        return Ok(Vec::new());
    };
    let Value::Object(entries) = vectors else {
        if settings.is_empty() {
            return Ok(Vec::new());
        }
        return Err(type_error(
            external_id,
            format!(
                "`._vectors` must be an object with a key for each embedder, but got {}",
                describe(vectors)
            ),
        ));
    };
    let mut taken = Vec::new();
    for slot in &settings.slots {
        let Some(entry) = entries.remove(&slot.name) else {
            continue;
        };
        let path = format!("._vectors.{}", slot.name);
        let (embeddings, regenerate) = parse_entry(&entry, &path, external_id)?;
        check_dimensions(&embeddings, slot.dimensions, &slot.name, &path, external_id)?;
        taken.push(SlotVectors {
            slot: slot.slot,
            embeddings,
            regenerate,
        });
    }
    if entries.is_empty() {
        document.remove(VECTORS_FIELD);
    }
    Ok(taken)
}

/// `document` without `_vectors` (what the text and facet indexes see).
pub fn without_vectors(document: &Map<String, Value>) -> std::borrow::Cow<'_, Map<String, Value>> {
    if document.contains_key(VECTORS_FIELD) {
        let mut copy = document.clone();
        copy.remove(VECTORS_FIELD);
        std::borrow::Cow::Owned(copy)
    } else {
        std::borrow::Cow::Borrowed(document)
    }
}

fn parse_entry(
    entry: &Value,
    path: &str,
    external_id: &str,
) -> Result<(Vec<Vec<f32>>, bool), ShardError> {
    match entry {
        Value::Null => Ok((Vec::new(), false)),
        Value::Array(_) => Ok((parse_embeddings(entry, path, external_id)?, false)),
        Value::Object(fields) => parse_object(fields, path, external_id),
        other => Err(type_error(
            external_id,
            format!(
                "Expected `{path}` to be an array of floats, an array of arrays of floats, or an object with at least the field `regenerate`, but got {}",
                describe(other)
            ),
        )),
    }
}

fn parse_object(
    fields: &Map<String, Value>,
    path: &str,
    external_id: &str,
) -> Result<(Vec<Vec<f32>>, bool), ShardError> {
    if let Some(unknown) = fields
        .keys()
        .find(|key| *key != "embeddings" && *key != "regenerate")
    {
        return Err(type_error(
            external_id,
            format!("Unknown field `{unknown}` at `{path}`: expected `embeddings` or `regenerate`"),
        ));
    }
    let regenerate = match fields.get("regenerate") {
        Some(Value::Bool(regenerate)) => *regenerate,
        Some(other) => {
            return Err(type_error(
                external_id,
                format!(
                    "Invalid value type at `{path}.regenerate`: expected a boolean, but found {}",
                    describe(other)
                ),
            ));
        }
        None => {
            return Err(type_error(
                external_id,
                format!(
                    "Missing field `{path}.regenerate`\n  - note: `{path}` must be an array of floats, an array of arrays of floats, or an object with field `regenerate`"
                ),
            ));
        }
    };
    let embeddings = match fields.get("embeddings") {
        None | Some(Value::Null) => Vec::new(),
        Some(embeddings) => {
            parse_embeddings(embeddings, &format!("{path}.embeddings"), external_id)?
        }
    };
    Ok((embeddings, regenerate))
}

/// One array of numbers, or an array of such arrays.
fn parse_embeddings(
    value: &Value,
    path: &str,
    external_id: &str,
) -> Result<Vec<Vec<f32>>, ShardError> {
    let Value::Array(items) = value else {
        return Err(type_error(
            external_id,
            format!(
                "Invalid value type at `{path}`: expected an array, but found {}",
                describe(value)
            ),
        ));
    };
    if items.first().is_some_and(Value::is_array) {
        items
            .iter()
            .enumerate()
            .map(|(index, item)| parse_floats(item, &format!("{path}[{index}]"), external_id))
            .collect()
    } else if items.is_empty() {
        Ok(Vec::new())
    } else {
        Ok(vec![parse_floats(value, path, external_id)?])
    }
}

fn parse_floats(value: &Value, path: &str, external_id: &str) -> Result<Vec<f32>, ShardError> {
    let Value::Array(items) = value else {
        return Err(type_error(
            external_id,
            format!(
                "Invalid value type at `{path}`: expected an array of floats, but found {}",
                describe(value)
            ),
        ));
    };
    items
        .iter()
        .enumerate()
        .map(|(index, item)| match item.as_f64() {
            Some(number) => Ok(number as f32),
            None => Err(type_error(
                external_id,
                format!(
                    "Invalid value type at `{path}[{index}]`: expected a number, but found {}",
                    found(item)
                ),
            )),
        })
        .collect()
}

fn check_dimensions(
    embeddings: &[Vec<f32>],
    dimensions: usize,
    embedder: &str,
    path: &str,
    external_id: &str,
) -> Result<(), ShardError> {
    for (index, embedding) in embeddings.iter().enumerate() {
        if embedding.len() != dimensions {
            return Err(ShardError::InvalidDocumentVectors {
                kind: VectorsErrorKind::Dimensions,
                message: format!(
                    "Invalid vector dimensions in document with id `{external_id}` in `{path}`.\n  - note: embedding #{index} has dimensions {}\n  - note: embedder `{embedder}` requires {dimensions}",
                    embedding.len()
                ),
            });
        }
        if embedding.iter().any(|value| !value.is_finite()) {
            return Err(type_error(
                external_id,
                format!(
                    "Invalid value at `{path}`: embedding #{index} holds a number out of the range of a 32-bit float"
                ),
            ));
        }
    }
    Ok(())
}

fn type_error(external_id: &str, detail: String) -> ShardError {
    ShardError::InvalidDocumentVectors {
        kind: VectorsErrorKind::Type,
        message: format!(
            "Bad embedder configuration in the document with id: `{external_id}`. {detail}"
        ),
    }
}

/// A JSON value as Meilisearch's type errors show what they found (`a string: `"a"``).
fn found(value: &Value) -> String {
    match value {
        Value::String(_) => format!("a string: `{value}`"),
        Value::Number(_) => format!("a number: `{value}`"),
        Value::Bool(_) => format!("a boolean: `{value}`"),
        Value::Null => "null".to_owned(),
        Value::Array(_) => format!("a sequence: `{value}`"),
        Value::Object(_) => format!("a map: `{value}`"),
    }
}

/// A JSON value as Meilisearch's messages name it (`the string `abc``, `a number: `1``…).
fn describe(value: &Value) -> String {
    match value {
        Value::String(text) => format!("the string `{text}`"),
        Value::Number(number) => format!("the number `{number}`"),
        Value::Bool(boolean) => format!("the boolean `{boolean}`"),
        Value::Null => "null".to_owned(),
        Value::Array(_) => format!("an array: `{value}`"),
        Value::Object(_) => format!("an object: `{value}`"),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::vectors::settings::EmbedderSpec;
    use serde_json::json;

    fn settings() -> VectorSettings {
        let mut settings = VectorSettings::default();
        settings
            .reconcile(&[EmbedderSpec {
                name: "e".into(),
                dimensions: 3,
                binary_quantized: false,
                requires_vectors: true,
                fragments: Vec::new(),
            }])
            .unwrap();
        settings
    }

    fn take(document: Value) -> Result<(Vec<SlotVectors>, Value), ShardError> {
        let Value::Object(mut document) = document else {
            panic!("an object")
        };
        let taken = take_vectors(&mut document, &settings(), "1")?;
        Ok((taken, Value::Object(document)))
    }

    #[test]
    fn every_accepted_form_is_read_and_unknown_embedders_stay() {
        let (taken, rest) = take(json!({"id": 1, "_vectors": {"e": [1, 2, 3], "x": [1]}})).unwrap();
        assert_eq!(taken[0].embeddings, vec![vec![1.0, 2.0, 3.0]]);
        assert!(!taken[0].regenerate);
        assert_eq!(rest, json!({"id": 1, "_vectors": {"x": [1]}}));
        let (taken, rest) = take(json!({"_vectors": {"e": [[1, 0, 0], [0, 1, 0]]}})).unwrap();
        assert_eq!(taken[0].embeddings.len(), 2);
        assert_eq!(rest, json!({}));
        let (taken, _) = take(json!({"_vectors": {"e": null}})).unwrap();
        assert!(taken[0].embeddings.is_empty());
        let (taken, _) =
            take(json!({"_vectors": {"e": {"embeddings": [0, 0, 1], "regenerate": true}}}))
                .unwrap();
        assert!(taken[0].regenerate);
        let (taken, _) = take(json!({"_vectors": {"e": {"regenerate": false}}})).unwrap();
        assert!(taken[0].embeddings.is_empty());
    }

    #[test]
    fn bad_vectors_get_meilisearch_errors() {
        let message = |document| match take(document) {
            Err(ShardError::InvalidDocumentVectors { message, .. }) => message,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            message(json!({"_vectors": {"e": [1, 2]}})),
            "Invalid vector dimensions in document with id `1` in `._vectors.e`.\n  - note: embedding #0 has dimensions 2\n  - note: embedder `e` requires 3"
        );
        assert_eq!(
            message(json!({"_vectors": {"e": [1, "a", 3]}})),
            "Bad embedder configuration in the document with id: `1`. Invalid value type at `._vectors.e[1]`: expected a number, but found a string: `\"a\"`"
        );
        assert_eq!(
            message(json!({"_vectors": {"e": "abc"}})),
            "Bad embedder configuration in the document with id: `1`. Expected `._vectors.e` to be an array of floats, an array of arrays of floats, or an object with at least the field `regenerate`, but got the string `abc`"
        );
        assert!(
            message(json!({"_vectors": {"e": {"embeddings": [1, 2, 3]}}}))
                .contains("Missing field `._vectors.e.regenerate`")
        );
    }
}
