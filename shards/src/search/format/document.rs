//! One hit's `_formatted` and `_matchesPosition`: a walk over the document's displayed leaves
//! (each string or number tokenized once) and the selection of `_formatted`'s fields, as
//! Meilisearch's `format_fields` and `permissive_json_pointer::select_values`.
//!
//! Rules: in `_formatted` every displayed number becomes a string (formatted or not), booleans
//! and nulls stay; values that are not displayed are kept as they are. `_matchesPosition` is
//! keyed by dotted path (array indices left out, given as `indices`), sorted by key; an array
//! keeps, as Meilisearch does, the matches of its last element that has any. `_formatted`
//! keeps the document's key order.
//!
//! Invariant: the document is only read; the output holds only values derived from it.

use std::collections::BTreeMap;

use charabia::Token;
use serde_json::{Map, Value};

use super::HitFormatter;
use super::plan::is_under;
use super::render::{TextFormat, match_bounds, render};

/// Separator of nested field names.
const PATH_SEPARATOR: &str = ".";

/// The positions found so far, per dotted path.
pub type Positions = BTreeMap<String, Vec<Value>>;

impl HitFormatter<'_> {
    /// Walks one value at `path`: records its matches in `positions` and, when `build`,
    /// returns its `_formatted` form.
    pub(super) fn walk(
        &self,
        path: &str,
        indices: &mut Vec<usize>,
        value: &Value,
        build: bool,
        positions: &mut Option<Positions>,
    ) -> Option<Value> {
        if !self.plan.is_displayed(path) {
            return build.then(|| value.clone());
        }
        match value {
            Value::Object(object) => {
                let mut out = Map::new();
                for (key, child) in object {
                    let child_path = [path, key].join(PATH_SEPARATOR);
                    if let Some(formatted) =
                        self.walk(&child_path, indices, child, build, positions)
                    {
                        out.insert(key.clone(), formatted);
                    }
                }
                build.then_some(Value::Object(out))
            }
            Value::Array(values) => {
                let mut out = Vec::with_capacity(if build { values.len() } else { 0 });
                for (index, child) in values.iter().enumerate() {
                    indices.push(index);
                    let formatted = self.walk(path, indices, child, build, positions);
                    indices.pop();
                    out.extend(formatted);
                }
                build.then_some(Value::Array(out))
            }
            Value::String(text) => self.leaf(path, indices, text, build, positions),
            Value::Number(number) => {
                let text = number.to_string();
                self.leaf(path, indices, &text, build, positions)
            }
            Value::Bool(_) | Value::Null => build.then(|| value.clone()),
        }
    }

    /// One displayed string (or number's text).
    fn leaf(
        &self,
        path: &str,
        indices: &[usize],
        text: &str,
        build: bool,
        positions: &mut Option<Positions>,
    ) -> Option<Value> {
        let format = if build {
            self.plan.leaf_format(path)
        } else {
            TextFormat::default()
        };
        let wants_matches =
            !self.matcher.is_empty() && (positions.is_some() || format.needs_tokens());
        let tokens: Vec<Token<'_>> = if wants_matches || format.needs_tokens() {
            let languages = self.matcher.text_languages(path);
            self.tokenizer
                .tokenize_with_allow_list(text, languages)
                .collect()
        } else {
            Vec::new()
        };
        let matches = if wants_matches {
            self.matcher.find_matches(&tokens)
        } else {
            Vec::new()
        };
        if let Some(positions) = positions.as_mut() {
            if !matches.is_empty() {
                let bounds = matches
                    .iter()
                    .map(|found| {
                        let (start, length) = match_bounds(&tokens, found);
                        let mut bound = Map::new();
                        bound.insert("start".to_owned(), start.into());
                        bound.insert("length".to_owned(), length.into());
                        if !indices.is_empty() {
                            bound.insert("indices".to_owned(), indices.to_vec().into());
                        }
                        Value::Object(bound)
                    })
                    .collect();
                positions.insert(path.to_owned(), bounds);
            }
        }
        build.then(|| Value::String(render(text, &tokens, &matches, format, self.decoration())))
    }
}

/// The selectors naming what `retrieved` holds of `document`: a key whose object was cut down
/// by `attributesToRetrieve` gives the paths of what was kept.
pub fn retrieved_selectors(
    document: &Map<String, Value>,
    retrieved: &Map<String, Value>,
    prefix: &str,
    out: &mut Vec<String>,
) {
    for (key, value) in retrieved {
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            [prefix, key].join(PATH_SEPARATOR)
        };
        match (value, document.get(key)) {
            (Value::Object(kept), Some(Value::Object(whole))) if kept.len() < whole.len() => {
                retrieved_selectors(whole, kept, &path, out);
            }
            _ => out.push(path),
        }
    }
}

/// Whether `key` (a top-level field) holds something a selector names.
pub fn is_selected(selectors: &[&str], key: &str) -> bool {
    selectors.iter().any(|selector| is_under(selector, key))
}

/// The parts of `document` the selectors name (Meilisearch's `select_values`).
pub fn select(document: Map<String, Value>, selectors: &[&str]) -> Map<String, Value> {
    let mut out = Map::new();
    for (key, value) in document {
        let whole = selectors.contains(&key.as_str());
        if whole && !key.contains(PATH_SEPARATOR) {
            out.insert(key, value);
            continue;
        }
        let nested: Vec<&str> = selectors
            .iter()
            .filter(|selector| is_under(selector, &key))
            .filter_map(|selector| selector.get(key.len() + PATH_SEPARATOR.len()..))
            .collect();
        if !nested.is_empty() {
            match value {
                Value::Array(values) => {
                    out.insert(key, Value::Array(select_array(values, &nested)));
                }
                Value::Object(object) => {
                    out.insert(key, Value::Object(select(object, &nested)));
                }
                _ => {}
            }
        } else if whole {
            out.insert(key, value);
        }
    }
    out
}

fn select_array(values: Vec<Value>, selectors: &[&str]) -> Vec<Value> {
    let mut out = Vec::new();
    for value in values {
        match value {
            Value::Array(inner) => out.push(Value::Array(select_array(inner, selectors))),
            Value::Object(object) => {
                let object = select(object, selectors);
                if !object.is_empty() {
                    out.push(Value::Object(object));
                }
            }
            _ => {}
        }
    }
    out
}
