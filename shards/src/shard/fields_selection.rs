//! The `fields` parameter of document reads: keep only the selected top-level or dotted paths.
//!
//! Invariants (Meilisearch's behaviour): `*` keeps everything; a selector equal to a path, or a
//! prefix of it followed by `.`, keeps the whole value at that path; a path that is a prefix of
//! a selector is descended into (objects, and objects inside arrays) and kept only if something
//! inside is kept; keys keep the document's order; unknown selectors select nothing.

use serde_json::{Map, Value};

/// The wildcard selector that keeps every field.
pub const WILDCARD_SELECTOR: &str = "*";

/// `document` reduced to the fields `selectors` select.
pub fn select_fields(document: &Map<String, Value>, selectors: &[String]) -> Map<String, Value> {
    if selectors
        .iter()
        .any(|selector| selector == WILDCARD_SELECTOR)
    {
        return document.clone();
    }
    select_in_object(document, "", selectors)
}

fn join(base: &str, key: &str) -> String {
    if base.is_empty() {
        key.to_owned()
    } else {
        format!("{base}.{key}")
    }
}

/// Whether `path` is `ancestor` or lies below it.
fn is_within(path: &str, ancestor: &str) -> bool {
    path == ancestor
        || (path.len() > ancestor.len()
            && path.starts_with(ancestor)
            && path.as_bytes()[ancestor.len()] == b'.')
}

fn select_in_object(
    object: &Map<String, Value>,
    base: &str,
    selectors: &[String],
) -> Map<String, Value> {
    let mut selected = Map::new();
    for (key, value) in object {
        let path = join(base, key);
        if selectors.iter().any(|selector| is_within(&path, selector)) {
            selected.insert(key.clone(), value.clone());
            continue;
        }
        if !selectors.iter().any(|selector| is_within(selector, &path)) {
            continue;
        }
        if let Some(inner) = select_in_value(value, &path, selectors) {
            selected.insert(key.clone(), inner);
        }
    }
    selected
}

/// The selected part of a value whose path is an ancestor of some selector.
fn select_in_value(value: &Value, path: &str, selectors: &[String]) -> Option<Value> {
    match value {
        Value::Object(inner) => {
            let selected = select_in_object(inner, path, selectors);
            (!selected.is_empty()).then_some(Value::Object(selected))
        }
        Value::Array(elements) => {
            let selected: Vec<Value> = elements
                .iter()
                .filter_map(|element| select_in_value(element, path, selectors))
                .collect();
            (!selected.is_empty()).then_some(Value::Array(selected))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn select(document: Value, selectors: &[&str]) -> Value {
        let Value::Object(document) = document else {
            panic!("test documents are objects");
        };
        let selectors: Vec<String> = selectors.iter().map(|s| (*s).to_owned()).collect();
        Value::Object(select_fields(&document, &selectors))
    }

    #[test]
    fn selection_keeps_top_level_and_dotted_paths_in_document_order() {
        let document = json!({"id": 1, "title": "t", "doggo": {"name": "x", "age": 2, "toys": [{"kind": "ball", "size": 1}, 3]}});
        assert_eq!(
            select(document.clone(), &["title", "id"]),
            json!({"id": 1, "title": "t"})
        );
        assert_eq!(
            select(document.clone(), &["doggo.age"]),
            json!({"doggo": {"age": 2}})
        );
        assert_eq!(
            select(document.clone(), &["doggo.toys.kind"]),
            json!({"doggo": {"toys": [{"kind": "ball"}]}})
        );
        assert_eq!(select(document.clone(), &["*"]), document);
        assert_eq!(select(document.clone(), &["missing"]), json!({}));
        assert_eq!(
            select(json!({"a.b": 1, "a": {"b": 2}}), &["a.b"]),
            json!({"a.b": 1, "a": {"b": 2}})
        );
    }
}
