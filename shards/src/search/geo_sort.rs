//! Sorting by distance to a point (`_geoPoint(lat, lng):asc|desc`): the documents' `_geo`
//! points read from the shard's geo tree, compared by their haversine distance to the target,
//! as Meilisearch orders them.
//!
//! Invariants: a document without a geo point ranks after every document with one, in both
//! directions; distances closer than `f64::EPSILON` are equal; the distance is the one
//! [`crate::filter::haversine_distance_meters`] gives (what `_geoRadius` and
//! `_geoDistance` use).

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::ops::Bound;

use roaring::RoaringBitmap;
use storage_engine::{Direction, ReadTransaction};

use crate::error::ShardResult;
use crate::filter::haversine_distance_meters;
use crate::index::keys::{decode_geo_point, document_from_key, document_key};
use crate::index::trees::GEO_TREE;

/// Above this many documents, their points are read by one scan of the geo tree rather than
/// one lookup each.
pub const GEO_LOOKUPS_MAX: u64 = 2_048;

/// A geo sort rule of a search.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GeoSort {
    /// `[latitude, longitude]` in degrees.
    pub point: [f64; 2],
    pub ascending: bool,
}

/// Document → its `[latitude, longitude]`.
pub type GeoPoints = BTreeMap<u32, [f64; 2]>;

/// The geo points of the documents of `documents` that have one.
pub fn geo_points(read: &ReadTransaction, documents: &RoaringBitmap) -> ShardResult<GeoPoints> {
    let mut points = GeoPoints::new();
    let Some(tree) = read.open_tree(GEO_TREE)? else {
        return Ok(points);
    };
    if documents.len() > GEO_LOOKUPS_MAX {
        for entry in tree.range(Bound::Unbounded, Bound::Unbounded, Direction::Forward)? {
            let (key, value) = entry?;
            let document = document_from_key(key)?;
            if documents.contains(document) {
                points.insert(document, decode_geo_point(value)?);
            }
        }
    } else {
        for document in documents {
            if let Some(value) = tree.get(&document_key(document))? {
                points.insert(document, decode_geo_point(value)?);
            }
        }
    }
    Ok(points)
}

/// The distance in meters from `target` to `value`, `None` without a point.
pub fn distance(target: [f64; 2], value: Option<[f64; 2]>) -> Option<f64> {
    value.map(|value| haversine_distance_meters(target, value))
}

/// The order of two documents' points under a geo sort rule (`Less`: the left one first).
pub fn compare_points(rule: GeoSort, left: Option<[f64; 2]>, right: Option<[f64; 2]>) -> Ordering {
    match (distance(rule.point, left), distance(rule.point, right)) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Greater,
        (Some(_), None) => Ordering::Less,
        (Some(left), Some(right)) if (left - right).abs() <= f64::EPSILON => Ordering::Equal,
        (Some(left), Some(right)) => {
            let nearer_first = left.total_cmp(&right);
            if rule.ascending {
                nearer_first
            } else {
                nearer_first.reverse()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARIS: [f64; 2] = [48.8566, 2.3522];
    const LYON: [f64; 2] = [45.764, 4.8357];
    const BERLIN: [f64; 2] = [52.52, 13.405];

    #[test]
    fn nearer_points_come_first_ascending_and_last_descending() {
        let ascending = GeoSort {
            point: PARIS,
            ascending: true,
        };
        let descending = GeoSort {
            ascending: false,
            ..ascending
        };
        assert_eq!(
            compare_points(ascending, Some(LYON), Some(BERLIN)),
            Ordering::Less
        );
        assert_eq!(
            compare_points(descending, Some(LYON), Some(BERLIN)),
            Ordering::Greater
        );
        assert_eq!(
            compare_points(ascending, Some(LYON), Some(LYON)),
            Ordering::Equal
        );
    }

    #[test]
    fn documents_without_a_point_come_last_in_both_directions() {
        for ascending in [true, false] {
            let rule = GeoSort {
                point: PARIS,
                ascending,
            };
            assert_eq!(compare_points(rule, None, Some(BERLIN)), Ordering::Greater);
            assert_eq!(compare_points(rule, Some(BERLIN), None), Ordering::Less);
            assert_eq!(compare_points(rule, None, None), Ordering::Equal);
        }
    }

    #[test]
    fn points_round_trip_through_their_encoding() {
        let mut bytes = LYON[0].to_be_bytes().to_vec();
        bytes.extend_from_slice(&LYON[1].to_be_bytes());
        assert_eq!(
            decode_geo_point(&bytes).expect("a whole point decodes"),
            LYON
        );
        assert!(decode_geo_point(&bytes[..12]).is_err());
    }
}
