//! Field paths of nested documents (Meilisearch's `flatten-serde-json` rules) and the index's
//! field distribution.
//!
//! Documents are stored as sent; flattening only names the fields that settings, filters, sorts
//! and facets talk about. Invariants of [`flatten`]:
//! - object keys are joined with `.`: `{"a":{"b":1}}` has `a.b` = `1`;
//! - an array of objects is flattened into the same prefix, leaves reached twice collected into
//!   an array: `{"a":[{"b":1},{"b":2}]}` has `a.b` = `[1,2]` (but `{"a":[{"b":1}]}` has
//!   `a.b` = `1`); nested arrays are flattened into the same prefix;
//! - a scalar coming from an array is always inside an array (`{"a":[1]}` has `a` = `[1]`);
//! - a path reached twice (a literal `"a.b"` key and a nested `a.b`) collects both values into an
//!   array;
//! - every intermediate value is also kept under its own path (`a`, the whole object) when that
//!   path was not produced as a leaf;
//! - order: leaves in traversal order, then the intermediate values in traversal order.
//!
//! The field distribution counts, per top-level field, how many documents have it; `_vectors`
//! is not counted (Meilisearch v1.41); fields whose count falls to zero disappear.

use std::collections::BTreeMap;

use serde_json::Value;

use super::Document;

/// The reserved top-level field holding user-provided embeddings, not counted in the field
/// distribution.
pub const VECTORS_FIELD: &str = "_vectors";

/// The separator of field path components.
pub const FIELD_PATH_SEPARATOR: char = '.';

/// Per top-level field name, the number of documents that have it.
pub type FieldDistribution = BTreeMap<String, u64>;

/// The flattened form of `document`: every field path with its value.
pub fn flatten(document: &Document) -> Document {
    let mut flattened = Document::new();
    let mut intermediates = Vec::new();
    flatten_object(&mut flattened, None, document, &mut intermediates);
    for (path, value) in intermediates {
        flattened.entry(path).or_insert_with(|| value.clone());
    }
    flattened
}

/// The (field path, value) pairs of `document`, in the order of [`flatten`].
pub fn field_paths(document: &Document) -> Vec<(String, Value)> {
    flatten(document).into_iter().collect()
}

fn join_path(prefix: Option<&str>, key: &str) -> String {
    match prefix {
        Some(prefix) => format!("{prefix}{FIELD_PATH_SEPARATOR}{key}"),
        None => key.to_string(),
    }
}

fn flatten_object<'document>(
    flattened: &mut Document,
    prefix: Option<&str>,
    object: &'document Document,
    intermediates: &mut Vec<(String, &'document Value)>,
) {
    for (key, value) in object {
        let path = join_path(prefix, key);
        intermediates.push((path.clone(), value));
        match value {
            Value::Array(array) => flatten_array(flattened, &path, array, intermediates),
            Value::Object(inner) => flatten_object(flattened, Some(&path), inner, intermediates),
            scalar => insert_leaf(flattened, &path, scalar.clone(), false),
        }
    }
}

fn flatten_array<'document>(
    flattened: &mut Document,
    path: &str,
    array: &'document [Value],
    intermediates: &mut Vec<(String, &'document Value)>,
) {
    for value in array {
        match value {
            Value::Object(inner) => flatten_object(flattened, Some(path), inner, intermediates),
            Value::Array(inner) => flatten_array(flattened, path, inner, intermediates),
            scalar => insert_leaf(flattened, path, scalar.clone(), true),
        }
    }
}

fn insert_leaf(flattened: &mut Document, path: &str, leaf: Value, from_array: bool) {
    match flattened.get_mut(path) {
        Some(Value::Array(values)) => values.push(leaf),
        Some(existing) => {
            let previous = std::mem::take(existing);
            *existing = Value::Array(vec![previous, leaf]);
        }
        None if from_array => {
            flattened.insert(path.to_string(), Value::Array(vec![leaf]));
        }
        None => {
            flattened.insert(path.to_string(), leaf);
        }
    }
}

/// The top-level fields of `document` that the field distribution counts.
pub fn distribution_fields(document: &Document) -> impl Iterator<Item = &str> {
    document
        .keys()
        .map(String::as_str)
        .filter(|name| *name != VECTORS_FIELD)
}

/// Counts `document` in `distribution` (a document was added).
pub fn count_document(distribution: &mut FieldDistribution, document: &Document) {
    for field in distribution_fields(document) {
        *distribution.entry(field.to_string()).or_default() += 1;
    }
}

/// Removes `document` from `distribution` (a document was deleted or replaced); fields that no
/// document has any more are removed.
pub fn uncount_document(distribution: &mut FieldDistribution, document: &Document) {
    for field in distribution_fields(document) {
        if let Some(count) = distribution.get_mut(field) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                distribution.remove(field);
            }
        }
    }
}
