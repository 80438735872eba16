//! Foreign-key hydration (experimental `foreignKeys`): in a hit, the values of a field the
//! index's `foreignKeys` setting names are document ids of another index; each is replaced
//! by that document, reduced to the foreign index's displayed attributes, in the hit and in
//! its `_formatted`.
//!
//! Meilisearch 1.41's two behaviours are kept apart, as it has them:
//! - one search ([`hydrate_hits`], also each query of a non-federated multi-search): every
//!   scalar at or under a foreign-key field is looked up, foreign index by foreign index; an
//!   id that matches no document becomes `{}`; a foreign index that does not exist fails the
//!   search with `index_not_found`;
//! - a federated search ([`hydrate_federated_hits`]): the ids are the values at the field
//!   (each element of an array) of every page hit, fetched at once per foreign index; a value
//!   whose document is missing, or that is no document id, stays as it was.
//!
//! Invariants: a value that is no valid document id (a float, an object, a string with other
//! characters than `a-z A-Z 0-9 - _`, …) is never replaced; hydration reads the foreign
//! index's last committed state and never fails on a missing document; `_vectors` is never
//! part of a hydrated document.

use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use serde_json::{Map, Value};
use shards::documents::document_id::{document_id_from_value, extract_document_id};
use shards::shard::select_fields;

use crate::coordinator::Coordinator;
use crate::coordinator::catalog::IndexRecord;
use crate::documents::listing::{ListingQuery, list_page};
use crate::errors::ResponseError;
use crate::network::remote_call::FEDERATION_FIELD;

/// The key of a hit's formatted copy.
const FORMATTED_FIELD: &str = "_formatted";
/// The reserved field of embeddings, never part of a hydrated document.
const VECTORS_FIELD: &str = "_vectors";
/// The separator of nested field names.
const PATH_SEPARATOR: char = '.';

/// The foreign-key fields of `record`, grouped by foreign index (in setting order).
fn fields_by_foreign_index(record: &IndexRecord) -> Vec<(String, Vec<String>)> {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for key in &record.settings.foreign_keys {
        match groups
            .iter_mut()
            .find(|(uid, _)| *uid == key.foreign_index_uid)
        {
            Some((_, fields)) => fields.push(key.field_name.clone()),
            None => groups.push((key.foreign_index_uid.clone(), vec![key.field_name.clone()])),
        }
    }
    groups
}

/// Hydrates the hits of one search on `record` (see the module documentation).
pub async fn hydrate_hits(
    coordinator: &Rc<Coordinator>,
    record: &IndexRecord,
    hits: &mut [Value],
) -> Result<(), ResponseError> {
    for (foreign_uid, fields) in fields_by_foreign_index(record) {
        let foreign = coordinator.index(&foreign_uid)?;
        let selectors: Vec<&str> = fields.iter().map(String::as_str).collect();
        let mut wanted = Vec::new();
        for hit in hits.iter_mut() {
            for_each_part(hit, |part| {
                for_each_leaf_under(part, &selectors, "", &mut |value| {
                    if let Ok(id) = document_id_from_value(value) {
                        wanted.push(id);
                    }
                });
            });
        }
        let documents = fetch_documents(coordinator, &foreign, wanted).await?;
        for hit in hits.iter_mut() {
            for_each_part(hit, |part| {
                for_each_leaf_under(part, &selectors, "", &mut |value| {
                    if let Ok(id) = document_id_from_value(value) {
                        let document = documents.get(&id).cloned().unwrap_or_default();
                        *value = Value::Object(document);
                    }
                });
            });
        }
    }
    Ok(())
}

/// Hydrates the page of a federated search; `records` are the indexes of its queries.
pub async fn hydrate_federated_hits(
    coordinator: &Rc<Coordinator>,
    records: &[&IndexRecord],
    hits: &mut [Value],
) -> Result<(), ResponseError> {
    let keys_of = |uid: &str| {
        records
            .iter()
            .find(|record| record.uid == uid)
            .map(|record| record.settings.foreign_keys.as_slice())
            .unwrap_or_default()
    };
    let mut wanted: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for hit in hits.iter() {
        for key in keys_of(hit_index(hit)) {
            let Some(document) = hit.as_object() else {
                continue;
            };
            visit_values_at(document, &key.field_name, &mut |value| {
                let ids = wanted.entry(key.foreign_index_uid.clone()).or_default();
                match value {
                    Value::Array(values) => ids.extend(values.iter().filter_map(valid_id)),
                    value => ids.extend(valid_id(value)),
                }
            });
        }
    }
    let mut fetched: HashMap<String, HashMap<String, Map<String, Value>>> = HashMap::new();
    for (foreign_uid, ids) in wanted {
        let foreign = coordinator.index(&foreign_uid)?;
        let documents = fetch_documents(coordinator, &foreign, ids).await?;
        fetched.insert(foreign_uid, documents);
    }
    for hit in hits.iter_mut() {
        let keys = keys_of(hit_index(hit)).to_vec();
        for_each_part(hit, |part| {
            for key in &keys {
                let Some(documents) = fetched.get(&key.foreign_index_uid) else {
                    continue;
                };
                for_each_leaf_under(part, &[key.field_name.as_str()], "", &mut |value| {
                    let found = valid_id(value).and_then(|id| documents.get(&id));
                    if let Some(document) = found {
                        *value = Value::Object(document.clone());
                    }
                });
            }
        });
    }
    Ok(())
}

/// The index a federated hit comes from.
fn hit_index(hit: &Value) -> &str {
    hit.get(FEDERATION_FIELD)
        .and_then(|federation| federation.get("indexUid"))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn valid_id(value: &Value) -> Option<String> {
    document_id_from_value(value).ok()
}

/// Calls `apply` on the hit's document fields and on its `_formatted` copy (foreign-key
/// fields never select the hit's own `_…` keys, so the first call leaves the copy alone).
fn for_each_part(hit: &mut Value, mut apply: impl FnMut(&mut Map<String, Value>)) {
    let Some(document) = hit.as_object_mut() else {
        return;
    };
    apply(document);
    if let Some(Value::Object(formatted)) = document.get_mut(FORMATTED_FIELD) {
        apply(formatted);
    }
}

/// Whether `path` is `ancestor` or lies below it (`a.b` is below `a`).
fn is_within(path: &str, ancestor: &str) -> bool {
    path.strip_prefix(ancestor)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(PATH_SEPARATOR))
}

/// Calls `visit` on every scalar at, under or above-and-on-the-way-to one of `selectors`:
/// an object on the way is walked into, an array's elements are each visited.
fn for_each_leaf_under(
    object: &mut Map<String, Value>,
    selectors: &[&str],
    base: &str,
    visit: &mut impl FnMut(&mut Value),
) {
    for (key, value) in object.iter_mut() {
        let path = if base.is_empty() {
            key.clone()
        } else {
            format!("{base}{PATH_SEPARATOR}{key}")
        };
        let selected = selectors
            .iter()
            .any(|selector| is_within(selector, &path) || is_within(&path, selector));
        if selected {
            walk_value(value, selectors, &path, visit);
        }
    }
}

fn walk_value(
    value: &mut Value,
    selectors: &[&str],
    path: &str,
    visit: &mut impl FnMut(&mut Value),
) {
    match value {
        Value::Object(object) => for_each_leaf_under(object, selectors, path, visit),
        Value::Array(values) => {
            for value in values {
                walk_value(value, selectors, path, visit);
            }
        }
        scalar => visit(scalar),
    }
}

/// Calls `visit` on the value at `path` in `document`, whether the path is a key of its own
/// (`"a.b"`) or nested (`{"a": {"b": …}}`, or through an array of objects).
fn visit_values_at<'a>(
    document: &'a Map<String, Value>,
    path: &str,
    visit: &mut impl FnMut(&'a Value),
) {
    if let Some(value) = document.get(path) {
        visit(value);
    }
    for (separator, _) in path.rmatch_indices(PATH_SEPARATOR) {
        let (root, suffix) = (&path[..separator], &path[separator + 1..]);
        match document.get(root) {
            Some(Value::Object(inner)) => visit_values_at(inner, suffix, visit),
            Some(Value::Array(values)) => {
                for value in values {
                    if let Value::Object(inner) = value {
                        visit_values_at(inner, suffix, visit);
                    }
                }
            }
            _ => {}
        }
    }
}

/// The documents of `foreign` whose ids are in `ids`, by id, reduced to its displayed
/// attributes; ids without a document are absent.
async fn fetch_documents(
    coordinator: &Rc<Coordinator>,
    foreign: &IndexRecord,
    mut ids: Vec<String>,
) -> Result<HashMap<String, Map<String, Value>>, ResponseError> {
    ids.sort_unstable();
    ids.dedup();
    let Some(primary_key) = foreign.primary_key.as_deref() else {
        return Ok(HashMap::new());
    };
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    let query = ListingQuery {
        offset: 0,
        limit: ids.len(),
        fields: None,
        ids: Some(ids),
        filter: None,
        sort: Vec::new(),
        retrieve_vectors: false,
        score_values: false,
    };
    let (documents, _) = list_page(coordinator, foreign, query).await?;
    let displayed = foreign.settings.displayed_attributes.as_deref();
    let mut by_id = HashMap::with_capacity(documents.len());
    for mut document in documents {
        let Ok(id) = extract_document_id(&document, primary_key) else {
            continue;
        };
        document.remove(VECTORS_FIELD);
        let shown = match displayed {
            Some(attributes) => select_fields(&document, attributes),
            None => document,
        };
        by_id.insert(id, shown);
    }
    Ok(by_id)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn leaves(document: Value, selectors: &[&str]) -> Vec<Value> {
        let mut document = document.as_object().unwrap().clone();
        let mut seen = Vec::new();
        for_each_leaf_under(&mut document, selectors, "", &mut |value| {
            seen.push(value.clone());
        });
        seen
    }

    #[test]
    fn the_leaves_under_a_field_are_those_meilisearch_maps() {
        let document = json!({
            "author": "a1",
            "authors": ["a2", ["a3"], {"x": "a4"}],
            "nested": {"author": "a5", "other": "no"},
            "nested.author": "a6",
            "title": "no",
        });
        assert_eq!(leaves(document.clone(), &["author"]), [json!("a1")]);
        assert_eq!(
            leaves(document.clone(), &["authors"]),
            [json!("a2"), json!("a3"), json!("a4")]
        );
        assert_eq!(
            leaves(document, &["nested.author"]),
            [json!("a5"), json!("a6")]
        );
    }

    #[test]
    fn the_values_at_a_field_are_those_meilisearch_collects() {
        let document = json!({
            "a": {"b": 1},
            "a.b": 2,
            "list": [{"b": 3}, {"b": 4}, 5],
        });
        let document = document.as_object().unwrap();
        let mut seen = Vec::new();
        visit_values_at(document, "a.b", &mut |value| seen.push(value.clone()));
        visit_values_at(document, "list.b", &mut |value| seen.push(value.clone()));
        assert_eq!(seen, [json!(2), json!(1), json!(3), json!(4)]);
    }

    #[test]
    fn formatted_copies_are_walked_too_and_kept_in_place() {
        let mut hit = json!({"author": "a1", "_formatted": {"author": "a1"}, "_rankingScore": 1});
        let mut count = 0;
        for_each_part(&mut hit, |part| {
            for_each_leaf_under(part, &["author"], "", &mut |value| {
                *value = json!({"id": "a1"});
                count += 1;
            });
        });
        assert_eq!(count, 2);
        assert_eq!(hit["_formatted"]["author"]["id"], "a1");
        assert_eq!(hit["author"]["id"], "a1");
        let keys: Vec<&String> = hit.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["author", "_formatted", "_rankingScore"]);
    }
}
