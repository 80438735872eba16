//! The interface between the filter evaluator and the facet indexes of a shard.
//!
//! Invariants: strings handed to and stored behind a [`FacetSource`] are normalized with
//! [`super::normalize_facet`] (stored ones also truncated); numbers are finite; the evaluator
//! never asks for an empty or inverted range.

use std::ops::Bound::{self, Included};

use roaring::RoaringBitmap;

use super::ast::VectorFilter;
use crate::network_shards::NetworkShards;

/// A document's `_geo` point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GeoPoint {
    pub document: u32,
    pub latitude: f64,
    pub longitude: f64,
}

/// Why a vector filter names something the index does not have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VectorLookupError {
    /// `available`: the configured embedders.
    EmbedderDoesNotExist { available: Vec<String> },
    /// `available`: the fragments configured on the embedder.
    FragmentDoesNotExist { available: Vec<String> },
}

/// What evaluation needs to know about the documents of one shard.
pub trait FacetSource {
    /// Every document id.
    fn universe(&self) -> RoaringBitmap;
    /// Whether the index knows this (flattened) attribute: a condition on an unknown attribute
    /// selects nothing, even `!=` or `NOT`. With several shards this must answer for the whole
    /// index (its fields map), not for this shard alone, or sharding would change results.
    fn has_field(&self, attribute: &str) -> bool;
    fn numbers_in_range(
        &self,
        attribute: &str,
        lower: Bound<f64>,
        upper: Bound<f64>,
    ) -> RoaringBitmap;
    fn strings_in_range(
        &self,
        attribute: &str,
        lower: Bound<&str>,
        upper: Bound<&str>,
    ) -> RoaringBitmap;
    fn strings_equal(&self, attribute: &str, normalized: &str) -> RoaringBitmap {
        self.strings_in_range(attribute, Included(normalized), Included(normalized))
    }
    fn numbers_equal(&self, attribute: &str, number: f64) -> RoaringBitmap {
        self.numbers_in_range(attribute, Included(number), Included(number))
    }
    fn strings_containing(&self, attribute: &str, normalized: &str) -> RoaringBitmap;
    fn strings_starting_with(&self, attribute: &str, normalized: &str) -> RoaringBitmap;
    fn exists(&self, attribute: &str) -> RoaringBitmap;
    fn null(&self, attribute: &str) -> RoaringBitmap;
    fn empty(&self, attribute: &str) -> RoaringBitmap;
    /// Calls `visit` for every document with a valid `_geo` point.
    fn for_each_geo_point(&self, visit: &mut dyn FnMut(GeoPoint));
    /// Documents whose `_geojson` shape meets the circle (`[latitude, longitude]`, meters).
    fn geojson_within_radius(
        &self,
        center: [f64; 2],
        radius_meters: f64,
        resolution: usize,
    ) -> RoaringBitmap {
        let _ = (center, radius_meters, resolution);
        RoaringBitmap::new()
    }
    /// Documents whose `_geojson` shape meets the polygon (`[latitude, longitude]` vertices).
    fn geojson_in_polygon(&self, vertices: &[[f64; 2]]) -> RoaringBitmap {
        let _ = vertices;
        RoaringBitmap::new()
    }
    /// The documents that belong to the network shard at `position` of `shards` (by
    /// rendezvous of their external ids over the names); the evaluator has checked that the
    /// shard exists.
    fn shard_documents(&self, shards: &NetworkShards, position: usize) -> RoaringBitmap {
        let _ = (shards, position);
        RoaringBitmap::new()
    }
    /// Documents with vectors for `embedder` (all embedders when `None`) matching `filter`.
    fn vector_documents(
        &self,
        embedder: Option<&str>,
        filter: &VectorFilter,
    ) -> Result<RoaringBitmap, VectorLookupError>;
}
