//! Great-circle distance as Meilisearch computes it for `_geoRadius`: the haversine formula on a
//! sphere of radius [`EARTH_RADIUS_METERS`], rounded to the millimetre.
//!
//! Invariant: a point is inside a radius when its distance is at most the radius plus
//! `f64::EPSILON`.

/// The mean Earth radius used by the haversine distance, in meters.
pub const EARTH_RADIUS_METERS: f64 = 6_371e3;

/// Distances are rounded to this many parts of a meter (millimetres).
const DISTANCE_ROUNDING_PER_METER: f64 = 1000.0;

/// The haversine distance in meters between two `[latitude, longitude]` points in degrees.
pub fn haversine_distance_meters(from: [f64; 2], to: [f64; 2]) -> f64 {
    let haversine = |angle: f64| (1.0 - angle.cos()) / 2.0;
    let from_latitude = from[0].to_radians();
    let to_latitude = to[0].to_radians();
    let latitude_term = haversine(to_latitude - from_latitude);
    let longitude_term = from_latitude.cos()
        * to_latitude.cos()
        * haversine(to[1].to_radians() - from[1].to_radians());
    let distance = 2.0 * EARTH_RADIUS_METERS * (latitude_term + longitude_term).sqrt().asin();
    (distance * DISTANCE_ROUNDING_PER_METER).round() / DISTANCE_ROUNDING_PER_METER
}

/// Whether `point` lies within `radius_meters` of `center`.
pub(crate) fn is_within_radius(center: [f64; 2], point: [f64; 2], radius_meters: f64) -> bool {
    haversine_distance_meters(center, point) <= radius_meters + f64::EPSILON
}

/// Whether `point` (`[latitude, longitude]`) is inside the polygon `vertices` (even-odd rule on
/// longitude/latitude as plane coordinates; points on an edge count as inside).
pub(crate) fn is_in_polygon(vertices: &[[f64; 2]], point: [f64; 2]) -> bool {
    let [y, x] = point;
    let mut inside = false;
    let mut previous = match vertices.last() {
        Some(last) => *last,
        None => return false,
    };
    for &vertex in vertices {
        let ([y1, x1], [y2, x2]) = (previous, vertex);
        if is_on_segment([y1, x1], [y2, x2], point) {
            return true;
        }
        if (y1 > y) != (y2 > y) && x < (x2 - x1) * (y - y1) / (y2 - y1) + x1 {
            inside = !inside;
        }
        previous = vertex;
    }
    inside
}

fn is_on_segment(start: [f64; 2], end: [f64; 2], point: [f64; 2]) -> bool {
    let cross =
        (end[1] - start[1]) * (point[0] - start[0]) - (end[0] - start[0]) * (point[1] - start[1]);
    cross.abs() <= f64::EPSILON
        && point[0] >= start[0].min(end[0])
        && point[0] <= start[0].max(end[0])
        && point[1] >= start[1].min(end[1])
        && point[1] <= start[1].max(end[1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn haversine_matches_reference_distances() {
        // Kathmandu, 56.36 m apart (the geoutils reference example).
        let distance = haversine_distance_meters([27.740068, 85.337576], [27.740286, 85.337059]);
        assert_eq!(distance, 56.36);
        assert_eq!(haversine_distance_meters([0.0, 0.0], [0.0, 0.0]), 0.0);
        // A quarter of the equator.
        let quarter = haversine_distance_meters([0.0, 0.0], [0.0, 90.0]);
        assert!((quarter - std::f64::consts::FRAC_PI_2 * EARTH_RADIUS_METERS).abs() < 0.001);
    }

    #[test]
    fn radius_bound_is_inclusive() {
        let center = [45.0, 5.0];
        let point = [45.01, 5.0];
        let distance = haversine_distance_meters(center, point);
        assert!(is_within_radius(center, point, distance));
        assert!(!is_within_radius(center, point, distance - 0.01));
    }

    #[test]
    fn polygon_contains_inner_points_only() {
        let square = [[0.0, 0.0], [0.0, 10.0], [10.0, 10.0], [10.0, 0.0]];
        assert!(is_in_polygon(&square, [5.0, 5.0]));
        assert!(is_in_polygon(&square, [0.0, 5.0]));
        assert!(!is_in_polygon(&square, [11.0, 5.0]));
        assert!(!is_in_polygon(&[], [0.0, 0.0]));
    }
}
