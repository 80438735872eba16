//! Merging an embedder update onto the stored embedder, as a `settingsUpdate` task does:
//! fields replace one by one (`null` removes), a changed `source` first drops the fields the
//! new source resets, `binaryQuantized` cannot go from `true` to `false`, a composite's
//! `indexingEmbedder` merges field by field while its `searchEmbedder` is replaced.
//!
//! Invariants: a merged embedder always has a `source` (`openAi` when none was ever given)
//! and an `openAi` one always has a `model`; it holds no `null` field.

use serde_json::{Map, Value};

use super::messages;
use super::openai::DEFAULT_MODEL;

/// The source of an embedder that never named one.
const DEFAULT_SOURCE: &str = "openAi";

/// The fields every source change drops (they are the new source's defaults again).
const RESET_ON_SOURCE_CHANGE: [&str; 10] = [
    "model",
    "revision",
    "pooling",
    "dimensions",
    "url",
    "indexingFragments",
    "searchFragments",
    "request",
    "response",
    "headers",
];

/// The fields also dropped when the new source has no document template.
const TEMPLATE_FIELDS: [&str; 2] = ["documentTemplate", "documentTemplateMaxBytes"];

/// The stored embedder `stored` (none for a new one) with `update` merged onto it.
pub fn merge_embedder(
    name: &str,
    stored: Option<&Map<String, Value>>,
    update: &Map<String, Value>,
) -> Result<Map<String, Value>, crate::errors::ResponseError> {
    let mut merged = stored.cloned().unwrap_or_default();
    let was_quantized = merged.get("binaryQuantized") == Some(&Value::Bool(true));
    if was_quantized && update.get("binaryQuantized") == Some(&Value::Bool(false)) {
        return Err(messages::binary_quantization_disabled(name));
    }
    merge_fields(&mut merged, update, true);
    if !merged.contains_key("source") {
        merged.insert("source".to_owned(), Value::from(DEFAULT_SOURCE));
    }
    if merged.get("source") == Some(&Value::from(DEFAULT_SOURCE)) && !merged.contains_key("model") {
        merged.insert("model".to_owned(), Value::from(DEFAULT_MODEL));
    }
    Ok(merged)
}

/// Merges `update` onto `merged`; `top_level` says whether composite sub-embedders are
/// merged too (they hold no sub-embedders of their own).
fn merge_fields(merged: &mut Map<String, Value>, update: &Map<String, Value>, top_level: bool) {
    if let Some(Value::String(source)) = update.get("source") {
        let changed = merged.get("source").and_then(Value::as_str) != Some(source.as_str());
        if changed {
            drop_reset_fields(merged, source);
        }
    } else if update.get("source") == Some(&Value::Null) && merged.contains_key("source") {
        drop_reset_fields(merged, DEFAULT_SOURCE);
    }
    for (field, value) in update {
        match (field.as_str(), value) {
            ("indexingEmbedder", Value::Null) if top_level => {}
            ("indexingEmbedder", Value::Object(sub_update)) if top_level => {
                let mut sub = match merged.remove(field) {
                    Some(Value::Object(sub)) => sub,
                    _ => Map::new(),
                };
                merge_fields(&mut sub, sub_update, false);
                merged.insert(field.clone(), Value::Object(sub));
            }
            ("indexingFragments" | "searchFragments", Value::Object(fragments)) => {
                merge_fragments(merged, field, fragments);
            }
            (_, Value::Null) => {
                merged.remove(field);
            }
            ("searchEmbedder", value) if top_level => {
                merged.insert(field.clone(), without_nulls(value));
            }
            (_, value) => {
                merged.insert(field.clone(), value.clone());
            }
        }
    }
}

/// Drops the fields a change to `source` resets.
fn drop_reset_fields(merged: &mut Map<String, Value>, source: &str) {
    for field in RESET_ON_SOURCE_CHANGE {
        merged.remove(field);
    }
    if matches!(source, "userProvided" | "composite") {
        for field in TEMPLATE_FIELDS {
            merged.remove(field);
        }
    }
}

/// Fragments merge by name; a `null` fragment is removed.
fn merge_fragments(merged: &mut Map<String, Value>, field: &str, fragments: &Map<String, Value>) {
    let mut stored = match merged.remove(field) {
        Some(Value::Object(stored)) => stored,
        _ => Map::new(),
    };
    for (name, fragment) in fragments {
        if fragment.is_null() {
            stored.remove(name);
        } else {
            stored.insert(name.clone(), fragment.clone());
        }
    }
    merged.insert(field.to_owned(), Value::Object(stored));
}

/// A replaced `searchEmbedder` is stored without its `null` (reset) fields.
fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, value)| !value.is_null())
                .map(|(key, value)| (key.clone(), value.clone()))
                .collect(),
        ),
        other => other.clone(),
    }
}
