//! What a search `sort` rule sorts by: a field, or `_geoPoint(latitude, longitude)`, with
//! Meilisearch's messages for the reserved geo names and for bad points.
//!
//! The reserved names are the ranking rules' ([`crate::settings::ranking_rule::is_reserved`]):
//! anything else, `_geoRadiusX` or an unclosed `_geoPoint(1, 2` included, is a field name.
//!
//! Invariants: a geo point's latitude is within [-90, 90] and its longitude within
//! [-180, 180] degrees; every refusal carries `invalid_search_sort`.

use crate::errors::{Code, ResponseError};
use crate::settings::ranking_rule::is_reserved;

/// Geo functions whose name stands for the whole expression in messages.
const GEO_FUNCTIONS: [&str; 2] = ["_geoRadius", "_geoBoundingBox"];

/// What one sort rule sorts by.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SortMember<'a> {
    Field(&'a str),
    /// `[latitude, longitude]` in degrees.
    GeoPoint([f64; 2]),
}

fn refused(message: String) -> ResponseError {
    ResponseError::new(Code::InvalidSearchSort, message)
}

fn geo_point_usage(member: &str) -> ResponseError {
    refused(format!(
        "Invalid syntax for the geo parameter: expected expression formated like `_geoPoint(latitude, longitude)` and ending by `:asc` or `:desc`, found `{member}`."
    ))
}

fn reserved_for_geo(name: &str) -> ResponseError {
    refused(format!(
        "`{name}` is a reserved keyword and thus can't be used as a sort expression. Use the _geoPoint(latitude, longitude) built-in rule to sort on _geo field coordinates."
    ))
}

/// Parses the part of a sort rule before `:asc` / `:desc`.
pub fn parse_sort_member(member: &str) -> Result<SortMember<'_>, ResponseError> {
    if let Some(point) = member
        .strip_prefix("_geoPoint(")
        .and_then(|rest| rest.strip_suffix(')'))
    {
        return parse_point(member, point).map(SortMember::GeoPoint);
    }
    if !is_reserved(member) {
        return Ok(SortMember::Field(member));
    }
    if member.starts_with("_geoPoint") {
        return Err(geo_point_usage(member));
    }
    if member == "_geo" {
        return Err(reserved_for_geo(member));
    }
    if let Some(function) = GEO_FUNCTIONS
        .iter()
        .find(|function| member.starts_with(*function))
    {
        return Err(reserved_for_geo(function));
    }
    Err(refused(format!(
        "`{member}` is a reserved keyword and thus can't be used as a sort expression."
    )))
}

/// `latitude, longitude` inside `_geoPoint(…)`.
fn parse_point(member: &str, point: &str) -> Result<[f64; 2], ResponseError> {
    let (latitude, longitude) = point
        .split_once(',')
        .and_then(|(latitude, longitude)| {
            let latitude: f64 = latitude.trim().parse().ok()?;
            let longitude: f64 = longitude.trim().parse().ok()?;
            Some((latitude, longitude))
        })
        .ok_or_else(|| geo_point_usage(member))?;
    if !(-90.0..=90.0).contains(&latitude) {
        return Err(refused(format!(
            "Bad latitude `{latitude}`. Latitude must be contained between -90 and 90 degrees."
        )));
    }
    if !(-180.0..=180.0).contains(&longitude) {
        let normalized = (longitude + 180.0).rem_euclid(360.0) - 180.0;
        return Err(refused(format!(
            "Bad longitude `{longitude}`. Longitude must be contained between -180 and 180 degrees. Hint: try using `{normalized}` instead."
        )));
    }
    Ok([latitude, longitude])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(member: &str) -> String {
        parse_sort_member(member)
            .expect_err("the member is refused")
            .message
    }

    #[test]
    fn geo_points_parse_with_spaces_and_bounds() {
        assert_eq!(
            parse_sort_member("_geoPoint(42.459, 59)").expect("a valid point parses"),
            SortMember::GeoPoint([42.459, 59.0])
        );
        assert_eq!(
            parse_sort_member("_geoPoint( -90 , -180.000 )").expect("bounds are allowed"),
            SortMember::GeoPoint([-90.0, -180.0])
        );
        assert_eq!(
            parse_sort_member("year").expect("a field parses"),
            SortMember::Field("year")
        );
        // Names that only look like geo functions are plain fields, as in Meilisearch.
        assert_eq!(
            parse_sort_member("_geoRadiusX").expect("a lookalike parses"),
            SortMember::Field("_geoRadiusX")
        );
    }

    #[test]
    fn bad_points_and_reserved_names_get_meilisearch_messages() {
        assert_eq!(
            message("_geoPoint(91, 0)"),
            "Bad latitude `91`. Latitude must be contained between -90 and 90 degrees."
        );
        assert_eq!(
            message("_geoPoint(0, 190)"),
            "Bad longitude `190`. Longitude must be contained between -180 and 180 degrees. Hint: try using `-170` instead."
        );
        assert!(message("_geoPoint(42,12 , 59,598)").starts_with(
            "Invalid syntax for the geo parameter: expected expression formated like `_geoPoint(latitude, longitude)`"
        ));
        assert!(message("_geoPoint").ends_with("found `_geoPoint`."));
        assert!(message("_geo").starts_with("`_geo` is a reserved keyword"));
        assert!(message("_geoRadius(1, 2, 3)").starts_with("`_geoRadius` is a reserved keyword"));
        assert_eq!(
            message("_geoDistance"),
            "`_geoDistance` is a reserved keyword and thus can't be used as a sort expression."
        );
    }
}
