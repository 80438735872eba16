//! What one document contributes to the shard's indexes: its flattened field paths, and for
//! faceted paths their numbers, strings, and null/empty/exists marks, and its `_geo` point.
//!
//! Invariants: flattening follows Meilisearch's facet extraction exactly as
//! [`crate::filter::MemoryFacetSource`] does — every key path joined with `.` is a field
//! (intermediate objects included), array elements count for the array's own path, booleans are
//! the strings `"true"`/`"false"`, strings are normalized and truncated, `null`/`[]`/`{}`/`""`
//! mark null or empty only as the value of a key. Extraction is a pure function of the document
//! and of which paths are faceted.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::filter::{normalize_facet, truncate_facet};

use crate::index::keys::Presence;

/// The facet values of one path of one document.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct PathFacets {
    /// Ordered-number encodings of the finite numbers, deduplicated.
    pub numbers: BTreeSet<u64>,
    /// Normalized, truncated string → the first original spelling in the document.
    pub strings: BTreeMap<String, String>,
    pub presence: BTreeSet<Presence>,
}

/// Everything one document contributes.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Extracted {
    /// Every flattened path of the document.
    pub paths: BTreeSet<String>,
    /// Facet values of the faceted paths only.
    pub facets: BTreeMap<String, PathFacets>,
    /// `[latitude, longitude]` of a valid `_geo` point, when geo is faceted.
    pub geo: Option<[f64; 2]>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Depth {
    OnKey,
    InsideArray,
}

/// Walks `document`; `is_faceted(path)` says which paths get facet values; `geo` whether the
/// `_geo` point is kept.
pub fn extract(
    document: &Map<String, Value>,
    is_faceted: &dyn Fn(&str) -> bool,
    geo: bool,
) -> Extracted {
    let mut walker = Walker {
        is_faceted,
        extracted: Extracted::default(),
    };
    walker.object(document, "", Depth::OnKey);
    if geo {
        walker.extracted.geo = geo_point(document);
    }
    walker.extracted
}

/// A `_geo` coordinate: a number or a string holding one, finite.
fn coordinate(value: Option<&Value>) -> Option<f64> {
    match value? {
        Value::Number(number) => number.as_f64(),
        Value::String(text) => text.trim().parse().ok(),
        _ => None,
    }
    .filter(|number: &f64| number.is_finite())
}

fn geo_point(document: &Map<String, Value>) -> Option<[f64; 2]> {
    let Some(Value::Object(geo)) = document.get("_geo") else {
        return None;
    };
    Some([coordinate(geo.get("lat"))?, coordinate(geo.get("lng"))?])
}

struct Walker<'a> {
    is_faceted: &'a dyn Fn(&str) -> bool,
    extracted: Extracted,
}

impl Walker<'_> {
    fn object(&mut self, object: &Map<String, Value>, base: &str, depth: Depth) {
        if object.is_empty() && !base.is_empty() {
            self.record(base, depth, &Value::Object(Map::new()));
        }
        for (key, value) in object {
            let path = if base.is_empty() {
                key.clone()
            } else {
                format!("{base}.{key}")
            };
            self.record(&path, Depth::OnKey, value);
            match value {
                Value::Object(inner) => self.object(inner, &path, Depth::OnKey),
                Value::Array(elements) => self.array(elements, &path, Depth::OnKey),
                _ => {}
            }
        }
    }

    fn array(&mut self, elements: &[Value], base: &str, depth: Depth) {
        if elements.is_empty() {
            self.record(base, depth, &Value::Array(Vec::new()));
        }
        for element in elements {
            match element {
                Value::Object(inner) => self.object(inner, base, Depth::InsideArray),
                Value::Array(inner) => self.array(inner, base, Depth::InsideArray),
                scalar => self.record(base, Depth::InsideArray, scalar),
            }
        }
    }

    fn record(&mut self, path: &str, depth: Depth, value: &Value) {
        if !self.extracted.paths.contains(path) {
            self.extracted.paths.insert(path.to_owned());
        }
        if !(self.is_faceted)(path) {
            return;
        }
        let facets = self.extracted.facets.entry(path.to_owned()).or_default();
        facets.presence.insert(Presence::Exists);
        let on_key = depth == Depth::OnKey;
        match value {
            Value::Number(number) => {
                if let Some(number) = number.as_f64().filter(|number| number.is_finite()) {
                    facets
                        .numbers
                        .insert(crate::index::keys::ordered_number(number));
                }
            }
            Value::String(text) if !text.is_empty() => {
                let normalized = normalize_facet(text);
                let key = truncate_facet(&normalized).to_owned();
                facets.strings.entry(key).or_insert_with(|| text.clone());
            }
            Value::Bool(flag) => {
                let key = if *flag { "true" } else { "false" };
                facets
                    .strings
                    .entry(key.to_owned())
                    .or_insert_with(|| key.to_owned());
            }
            Value::Null if on_key => {
                facets.presence.insert(Presence::Null);
            }
            Value::String(_) if on_key => {
                facets.presence.insert(Presence::Empty);
            }
            Value::Array(elements) if on_key && elements.is_empty() => {
                facets.presence.insert(Presence::Empty);
            }
            Value::Object(object) if on_key && object.is_empty() => {
                facets.presence.insert(Presence::Empty);
            }
            _ => {}
        }
    }
}
