//! Evaluation of `_geoRadius`, `_geoBoundingBox` and `_geoPolygon`.
//!
//! Invariants, Meilisearch's: arguments are checked in reading order (finite numbers, then
//! latitude and longitude ranges, radius, resolution, box orientation) before anything is
//! looked up; `_geo` answers radius and box when listed as a plain filterable string, `_geojson`
//! answers all three; with neither, the filter is refused as not filterable.

use roaring::RoaringBitmap;

use super::FilterError;
use super::ast::Token;
use super::evaluate::Evaluator;
use super::facet_source::{FacetSource, GeoPoint};
use super::geo::is_within_radius;
use super::validate::not_filterable_message;

/// Default number of segments used to approximate a `_geoRadius` circle on GeoJSON shapes.
const GEO_RESOLUTION_DEFAULT: usize = 125;
/// The accepted range of the optional `_geoRadius` resolution.
const GEO_RESOLUTION_MIN: usize = 3;
const GEO_RESOLUTION_MAX: usize = 1000;
/// Latitudes and longitudes are degrees within these bounds.
const LATITUDE_MAX_DEGREES: f64 = 90.0;
const LONGITUDE_MAX_DEGREES: f64 = 180.0;

impl<S: FacetSource> Evaluator<'_, S> {
    /// A coordinate or distance operand as a finite number.
    fn finite(&self, token: &Token) -> Result<f64, FilterError> {
        match token.value.parse::<f64>() {
            Ok(number) if number.is_finite() => Ok(number),
            Ok(_) => Err(self.located(token, "Non finite floats are not supported")),
            Err(error) => Err(self.located(token, &error.to_string())),
        }
    }

    fn check_latitude(&self, token: &Token, latitude: f64) -> Result<(), FilterError> {
        if (-LATITUDE_MAX_DEGREES..=LATITUDE_MAX_DEGREES).contains(&latitude) {
            return Ok(());
        }
        let message = format!(
            "Bad latitude `{latitude}`. Latitude must be contained between -90 and 90 degrees."
        );
        Err(self.located(token, &message))
    }

    fn check_longitude(&self, token: &Token, longitude: f64) -> Result<(), FilterError> {
        if (-LONGITUDE_MAX_DEGREES..=LONGITUDE_MAX_DEGREES).contains(&longitude) {
            return Ok(());
        }
        let normalized = (longitude + 180.0).rem_euclid(360.0) - 180.0;
        let message = format!(
            "Bad longitude `{longitude}`. Longitude must be contained between -180 and 180 degrees. Hint: try using `{normalized}` instead."
        );
        Err(self.located(token, &message))
    }

    fn geo_not_filterable(&self, token: &Token, attribute: &str) -> FilterError {
        self.located(token, &not_filterable_message(attribute, self.rules))
    }

    pub(crate) fn geo_radius(
        &self,
        latitude: &Token,
        longitude: &Token,
        radius: &Token,
        resolution: Option<&Token>,
    ) -> Result<RoaringBitmap, FilterError> {
        let center = [self.finite(latitude)?, self.finite(longitude)?];
        self.check_latitude(latitude, center[0])?;
        self.check_longitude(longitude, center[1])?;
        let radius_meters = self.finite(radius)?;
        let mut segments = GEO_RESOLUTION_DEFAULT;
        if let Some(token) = resolution {
            // Saturating conversion, as Meilisearch's `as usize`.
            segments = self.finite(token)? as usize;
            if !(GEO_RESOLUTION_MIN..=GEO_RESOLUTION_MAX).contains(&segments) {
                let message = format!(
                    "Invalid resolution `{segments}`. Resolution must be between 3 and 1000."
                );
                return Err(self.located(token, &message));
            }
        }
        let (geo, geojson) = (self.rules.geo_enabled(), self.rules.geojson_enabled());
        if !geo && !geojson {
            return Err(self.geo_not_filterable(latitude, "_geo/_geojson"));
        }
        let mut selected = RoaringBitmap::new();
        if geo {
            self.source.for_each_geo_point(&mut |point| {
                if is_within_radius(center, [point.latitude, point.longitude], radius_meters) {
                    selected.insert(point.document);
                }
            });
        }
        if geojson {
            selected |= self
                .source
                .geojson_within_radius(center, radius_meters, segments);
        }
        Ok(selected)
    }

    pub(crate) fn geo_bounding_box(
        &self,
        top_right: &[Token; 2],
        bottom_left: &[Token; 2],
    ) -> Result<RoaringBitmap, FilterError> {
        let top = [self.finite(&top_right[0])?, self.finite(&top_right[1])?];
        let bottom = [self.finite(&bottom_left[0])?, self.finite(&bottom_left[1])?];
        self.check_latitude(&top_right[0], top[0])?;
        self.check_longitude(&top_right[1], top[1])?;
        self.check_latitude(&bottom_left[0], bottom[0])?;
        self.check_longitude(&bottom_left[1], bottom[1])?;
        if top[0] < bottom[0] {
            let message = format!(
                "The top latitude `{}` is below the bottom latitude `{}`.",
                top[0], bottom[0]
            );
            return Err(self.located(&bottom_left[1], &message));
        }
        let (geo, geojson) = (self.rules.geo_enabled(), self.rules.geojson_enabled());
        if !geo && !geojson {
            return Err(self.geo_not_filterable(&top_right[0], "_geo/_geojson"));
        }
        let mut selected = RoaringBitmap::new();
        if geo {
            self.source.for_each_geo_point(&mut |point| {
                if is_in_bounding_box(top, bottom, point) {
                    selected.insert(point.document);
                }
            });
        }
        if geojson {
            let rectangle = [
                [top[0], top[1]],
                [top[0], bottom[1]],
                [bottom[0], bottom[1]],
                [bottom[0], top[1]],
            ];
            selected |= self.source.geojson_in_polygon(&rectangle);
        }
        Ok(selected)
    }

    pub(crate) fn geo_polygon(&self, points: &[[Token; 2]]) -> Result<RoaringBitmap, FilterError> {
        if !self.rules.geojson_enabled() {
            let first = points.first().map(|point| &point[0]);
            return match first {
                Some(token) => Err(self.geo_not_filterable(token, "_geojson")),
                None => Ok(RoaringBitmap::new()),
            };
        }
        let mut vertices = Vec::with_capacity(points.len());
        for [latitude, longitude] in points {
            let vertex = [self.finite(latitude)?, self.finite(longitude)?];
            self.check_latitude(latitude, vertex[0])?;
            self.check_longitude(longitude, vertex[1])?;
            vertices.push(vertex);
        }
        Ok(self.source.geojson_in_polygon(&vertices))
    }
}

/// Inside the box, inclusive; a box whose right edge is west of its left edge wraps the
/// antimeridian.
fn is_in_bounding_box(top_right: [f64; 2], bottom_left: [f64; 2], point: GeoPoint) -> bool {
    let latitude_inside = point.latitude >= bottom_left[0] && point.latitude <= top_right[0];
    let longitude_inside = if top_right[1] < bottom_left[1] {
        point.longitude >= bottom_left[1] || point.longitude <= top_right[1]
    } else {
        point.longitude >= bottom_left[1] && point.longitude <= top_right[1]
    };
    latitude_inside && longitude_inside
}
