//! An in-memory [`FacetSource`] built from JSON documents: used by tests, and by the server
//! until the persisted facet indexes exist.
//!
//! Invariants: documents are flattened as Meilisearch's facet extraction does — every key path
//! joined with `.` is a field (intermediate objects included), array elements count for the
//! array's own path; numbers are indexed as numbers, strings (normalized, truncated) and
//! booleans (`"true"`, `"false"`) as strings; `null`, `[]`, `{}` and `""` mark a field null or
//! empty only when they are the value of a key, not an element of an array. Every field is
//! indexed whatever the rules: the evaluator enforces `filterableAttributes`.

use std::collections::BTreeMap;
use std::ops::Bound;

use roaring::RoaringBitmap;
use serde_json::{Map, Value};

use super::ast::VectorFilter;
use super::facet_source::{FacetSource, GeoPoint, VectorLookupError};
use super::geo::{haversine_distance_meters, is_in_polygon};
use super::normalize::{normalize_facet, truncate_facet};
use crate::index::keys::ordered_number;
use crate::network_shards::NetworkShards;

/// Where a value sits relative to its key: the key's own value, or an element of an array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Depth {
    OnKey,
    InsideArray,
}

/// The facet values of one field.
#[derive(Debug, Default, Clone)]
struct FieldFacets {
    /// Keyed by [`ordered_number`] so the map sorts numerically.
    numbers: BTreeMap<u64, RoaringBitmap>,
    strings: BTreeMap<String, RoaringBitmap>,
    exists: RoaringBitmap,
    null: RoaringBitmap,
    empty: RoaringBitmap,
}

/// The facet indexes of a set of documents, in memory.
#[derive(Debug, Default, Clone)]
pub struct MemoryFacetSource {
    universe: RoaringBitmap,
    fields: BTreeMap<String, FieldFacets>,
    geo_points: Vec<GeoPoint>,
    geojson_points: Vec<(u32, [f64; 2])>,
    shards: BTreeMap<String, RoaringBitmap>,
}

fn ordered_bound(bound: Bound<f64>) -> Bound<u64> {
    bound.map(ordered_number)
}

/// Whether a range is empty or inverted (a `BTreeMap` range would panic on it).
fn is_unusable_range<T: PartialOrd>(lower: &Bound<T>, upper: &Bound<T>) -> bool {
    match (lower, upper) {
        (Bound::Included(low), Bound::Included(high)) => low > high,
        (Bound::Included(low) | Bound::Excluded(low), Bound::Excluded(high))
        | (Bound::Excluded(low), Bound::Included(high)) => low >= high,
        _ => false,
    }
}

fn union<'a>(bitmaps: impl Iterator<Item = &'a RoaringBitmap>) -> RoaringBitmap {
    let mut result = RoaringBitmap::new();
    for bitmap in bitmaps {
        result |= bitmap;
    }
    result
}

/// A `_geo` coordinate: a number or a string holding one.
fn coordinate(value: Option<&Value>) -> Option<f64> {
    match value? {
        Value::Number(number) => number.as_f64(),
        Value::String(text) => text.trim().parse().ok(),
        _ => None,
    }
    .filter(|number: &f64| number.is_finite())
}

impl MemoryFacetSource {
    pub fn new() -> Self {
        Self::default()
    }

    /// Builds the source from `(internal id, document)` pairs.
    pub fn from_documents<'a>(documents: impl IntoIterator<Item = (u32, &'a Value)>) -> Self {
        let mut source = Self::new();
        for (document, value) in documents {
            source.add_document(document, value);
        }
        source
    }

    /// Indexes one document (an object; other JSON values only join the universe).
    pub fn add_document(&mut self, document: u32, value: &Value) {
        self.universe.insert(document);
        let Value::Object(object) = value else {
            return;
        };
        self.seek_in_object(document, object, "", Depth::OnKey);
        self.index_geo(document, object);
    }

    /// Makes `attribute` known even if none of these documents has it (when this source is one
    /// shard of an index whose other shards have it).
    pub fn add_known_field(&mut self, attribute: &str) {
        self.fields.entry(attribute.to_owned()).or_default();
    }

    /// Records that `document` belongs to the network shard `shard`.
    pub fn assign_shard(&mut self, shard: &str, document: u32) {
        self.shards
            .entry(shard.to_owned())
            .or_default()
            .insert(document);
    }

    fn seek_in_object(
        &mut self,
        document: u32,
        object: &Map<String, Value>,
        base: &str,
        depth: Depth,
    ) {
        if object.is_empty() {
            self.record(document, base, depth, &Value::Object(Map::new()));
        }
        for (key, value) in object {
            let path = if base.is_empty() {
                key.clone()
            } else {
                format!("{base}.{key}")
            };
            self.record(document, &path, Depth::OnKey, value);
            match value {
                Value::Object(inner) => self.seek_in_object(document, inner, &path, Depth::OnKey),
                Value::Array(elements) => {
                    self.seek_in_array(document, elements, &path, Depth::OnKey)
                }
                _ => {}
            }
        }
    }

    fn seek_in_array(&mut self, document: u32, elements: &[Value], base: &str, depth: Depth) {
        if elements.is_empty() {
            self.record(document, base, depth, &Value::Array(Vec::new()));
        }
        for element in elements {
            match element {
                Value::Object(inner) => {
                    self.seek_in_object(document, inner, base, Depth::InsideArray)
                }
                Value::Array(inner) => {
                    self.seek_in_array(document, inner, base, Depth::InsideArray)
                }
                scalar => self.record(document, base, Depth::InsideArray, scalar),
            }
        }
    }

    fn record(&mut self, document: u32, path: &str, depth: Depth, value: &Value) {
        let facets = self.fields.entry(path.to_owned()).or_default();
        facets.exists.insert(document);
        let on_key = depth == Depth::OnKey;
        match value {
            Value::Number(number) => {
                if let Some(number) = number.as_f64().filter(|number| number.is_finite()) {
                    facets
                        .numbers
                        .entry(ordered_number(number))
                        .or_default()
                        .insert(document);
                }
            }
            Value::String(text) if !text.is_empty() => {
                let normalized = normalize_facet(text);
                let key = truncate_facet(&normalized).to_owned();
                facets.strings.entry(key).or_default().insert(document);
            }
            Value::Bool(flag) => {
                let key = if *flag { "true" } else { "false" };
                facets
                    .strings
                    .entry(key.to_owned())
                    .or_default()
                    .insert(document);
            }
            Value::Null if on_key => {
                facets.null.insert(document);
            }
            Value::String(_) if on_key => {
                facets.empty.insert(document);
            }
            Value::Array(elements) if on_key && elements.is_empty() => {
                facets.empty.insert(document);
            }
            Value::Object(object) if on_key && object.is_empty() => {
                facets.empty.insert(document);
            }
            _ => {}
        }
    }

    fn index_geo(&mut self, document: u32, object: &Map<String, Value>) {
        if let Some(Value::Object(geo)) = object.get("_geo") {
            if let (Some(latitude), Some(longitude)) =
                (coordinate(geo.get("lat")), coordinate(geo.get("lng")))
            {
                self.geo_points.push(GeoPoint {
                    document,
                    latitude,
                    longitude,
                });
            }
        }
        if let Some(Value::Object(geojson)) = object.get("_geojson") {
            self.index_geojson(document, geojson);
        }
    }

    /// Only `Point` and `MultiPoint` geometries (bare or in a `Feature`) are understood here.
    fn index_geojson(&mut self, document: u32, geojson: &Map<String, Value>) {
        let geometry = match geojson.get("type").and_then(Value::as_str) {
            Some("Feature") => match geojson.get("geometry") {
                Some(Value::Object(geometry)) => geometry,
                _ => return,
            },
            _ => geojson,
        };
        let position = |value: &Value| -> Option<[f64; 2]> {
            let pair = value.as_array()?;
            // GeoJSON positions are [longitude, latitude].
            Some([coordinate(pair.get(1))?, coordinate(pair.first())?])
        };
        let coordinates = geometry.get("coordinates");
        match (geometry.get("type").and_then(Value::as_str), coordinates) {
            (Some("Point"), Some(value)) => {
                if let Some(point) = position(value) {
                    self.geojson_points.push((document, point));
                }
            }
            (Some("MultiPoint"), Some(Value::Array(values))) => {
                for point in values.iter().filter_map(position) {
                    self.geojson_points.push((document, point));
                }
            }
            _ => {}
        }
    }

    fn field(&self, attribute: &str) -> Option<&FieldFacets> {
        self.fields.get(attribute)
    }
}

impl FacetSource for MemoryFacetSource {
    fn universe(&self) -> RoaringBitmap {
        self.universe.clone()
    }

    fn has_field(&self, attribute: &str) -> bool {
        self.fields.contains_key(attribute)
    }

    fn numbers_in_range(
        &self,
        attribute: &str,
        lower: Bound<f64>,
        upper: Bound<f64>,
    ) -> RoaringBitmap {
        let (lower, upper) = (ordered_bound(lower), ordered_bound(upper));
        match self.field(attribute) {
            Some(facets) if !is_unusable_range(&lower, &upper) => union(
                facets
                    .numbers
                    .range((lower, upper))
                    .map(|(_, documents)| documents),
            ),
            _ => RoaringBitmap::new(),
        }
    }

    fn strings_in_range(
        &self,
        attribute: &str,
        lower: Bound<&str>,
        upper: Bound<&str>,
    ) -> RoaringBitmap {
        match self.field(attribute) {
            Some(facets) if !is_unusable_range(&lower, &upper) => union(
                facets
                    .strings
                    .range::<str, _>((lower, upper))
                    .map(|(_, documents)| documents),
            ),
            _ => RoaringBitmap::new(),
        }
    }

    fn strings_equal(&self, attribute: &str, normalized: &str) -> RoaringBitmap {
        self.field(attribute)
            .and_then(|facets| facets.strings.get(normalized))
            .cloned()
            .unwrap_or_default()
    }

    fn strings_containing(&self, attribute: &str, normalized: &str) -> RoaringBitmap {
        let Some(facets) = self.field(attribute) else {
            return RoaringBitmap::new();
        };
        union(
            facets
                .strings
                .iter()
                .filter(|(value, _)| value.contains(normalized))
                .map(|(_, documents)| documents),
        )
    }

    fn strings_starting_with(&self, attribute: &str, normalized: &str) -> RoaringBitmap {
        let Some(facets) = self.field(attribute) else {
            return RoaringBitmap::new();
        };
        let after = facets
            .strings
            .range::<str, _>((Bound::Included(normalized), Bound::Unbounded));
        union(
            after
                .take_while(|(value, _)| value.starts_with(normalized))
                .map(|(_, documents)| documents),
        )
    }

    fn exists(&self, attribute: &str) -> RoaringBitmap {
        self.field(attribute)
            .map(|facets| facets.exists.clone())
            .unwrap_or_default()
    }

    fn null(&self, attribute: &str) -> RoaringBitmap {
        self.field(attribute)
            .map(|facets| facets.null.clone())
            .unwrap_or_default()
    }

    fn empty(&self, attribute: &str) -> RoaringBitmap {
        self.field(attribute)
            .map(|facets| facets.empty.clone())
            .unwrap_or_default()
    }

    fn for_each_geo_point(&self, visit: &mut dyn FnMut(GeoPoint)) {
        for point in &self.geo_points {
            visit(*point);
        }
    }

    fn geojson_within_radius(
        &self,
        center: [f64; 2],
        radius_meters: f64,
        _resolution: usize,
    ) -> RoaringBitmap {
        self.geojson_points
            .iter()
            .filter(|(_, point)| {
                haversine_distance_meters(center, *point) <= radius_meters + f64::EPSILON
            })
            .map(|(document, _)| *document)
            .collect()
    }

    fn geojson_in_polygon(&self, vertices: &[[f64; 2]]) -> RoaringBitmap {
        self.geojson_points
            .iter()
            .filter(|(_, point)| is_in_polygon(vertices, *point))
            .map(|(document, _)| *document)
            .collect()
    }

    fn shard_documents(&self, shards: &NetworkShards, position: usize) -> RoaringBitmap {
        shards
            .names()
            .get(position)
            .and_then(|name| self.shards.get(name))
            .cloned()
            .unwrap_or_default()
    }

    /// This source has no vector store: it knows no embedder.
    fn vector_documents(
        &self,
        embedder: Option<&str>,
        _filter: &VectorFilter,
    ) -> Result<RoaringBitmap, VectorLookupError> {
        match embedder {
            Some(_) => Err(VectorLookupError::EmbedderDoesNotExist {
                available: Vec::new(),
            }),
            None => Ok(RoaringBitmap::new()),
        }
    }
}
