//! The geo functions: `_geoRadius(lat, lng, meters[, resolution])`,
//! `_geoBoundingBox([lat, lng], [lat, lng])` and `_geoPolygon([lat, lng], [lat, lng], …)`.
//!
//! Invariants: once the function name is read the parser is committed: every later problem is a
//! failure whose position is where reading stopped, with the function's own message. Arguments
//! are decimal literals; their numeric ranges are checked at evaluation, as Meilisearch does.

use super::ast::{Expression, Token};
use super::cursor::{Cursor, Halt, Step};
use super::syntax_error::SyntaxErrorKind;

/// Argument counts accepted by `_geoRadius` (the resolution is optional).
const GEO_RADIUS_ARGUMENTS_MIN: usize = 3;
const GEO_RADIUS_ARGUMENTS_MAX: usize = 4;
/// `_geoBoundingBox` takes exactly two points.
const GEO_BOUNDING_BOX_POINTS: usize = 2;
/// `_geoPolygon` needs at least three points.
const GEO_POLYGON_POINTS_MIN: usize = 3;
/// A point is a latitude and a longitude.
const POINT_COORDINATES: usize = 2;

impl Cursor<'_> {
    /// After optional whitespace, the exact word `name`; a backtrack otherwise.
    fn geo_function_name(&self, at: usize, name: &str) -> Step<()> {
        match self.exact_word(self.skip_multispace(at), name) {
            Some(end) => Ok((end, ())),
            None => self.backtrack(at, SyntaxErrorKind::InvalidPrimary),
        }
    }

    /// Turns any problem inside a committed geo function into a failure of `kind` at its position.
    fn committed<T>(&self, step: Step<T>, kind: SyntaxErrorKind) -> Step<T> {
        step.map_err(|halt| Halt::Fail(self.error_from(halt.into_error().start, kind)))
    }

    pub(crate) fn geo_radius(&self, at: usize) -> Step<Expression> {
        let (after_name, ()) = self.geo_function_name(at, "_geoRadius")?;
        let parsed = self.float_list(after_name, '(', ')');
        let (end, mut arguments) = self.committed(parsed, SyntaxErrorKind::GeoRadius)?;
        let count = arguments.len();
        if !(GEO_RADIUS_ARGUMENTS_MIN..=GEO_RADIUS_ARGUMENTS_MAX).contains(&count) {
            return self.fail(end, SyntaxErrorKind::GeoRadiusArgumentCount(count));
        }
        let resolution = (count == GEO_RADIUS_ARGUMENTS_MAX).then(|| arguments.remove(3));
        let mut arguments = arguments.into_iter();
        let (Some(latitude), Some(longitude), Some(radius)) =
            (arguments.next(), arguments.next(), arguments.next())
        else {
            unreachable!("the argument count was checked above");
        };
        Ok((
            end,
            Expression::GeoRadius {
                latitude,
                longitude,
                radius,
                resolution,
            },
        ))
    }

    pub(crate) fn geo_bounding_box(&self, at: usize) -> Step<Expression> {
        let (after_name, ()) = self.geo_function_name(at, "_geoBoundingBox")?;
        let parsed = self.point_list(after_name, false);
        let (end, points) = self.committed(parsed, SyntaxErrorKind::GeoBoundingBox)?;
        if points.len() != GEO_BOUNDING_BOX_POINTS {
            return self.fail(end, SyntaxErrorKind::GeoBoundingBox);
        }
        let mut pairs = self.coordinate_pairs(points)?.into_iter();
        let (Some(top_right), Some(bottom_left)) = (pairs.next(), pairs.next()) else {
            unreachable!("the point count was checked above");
        };
        Ok((
            end,
            Expression::GeoBoundingBox {
                top_right,
                bottom_left,
            },
        ))
    }

    pub(crate) fn geo_polygon(&self, at: usize) -> Step<Expression> {
        let (after_name, ()) = self.geo_function_name(at, "_geoPolygon")?;
        let parsed = self.point_list(after_name, true);
        let (end, points) = self.committed(parsed, SyntaxErrorKind::GeoPolygon)?;
        if points.len() < GEO_POLYGON_POINTS_MIN {
            let last = points.last().and_then(|point| point.last());
            let (start, stop) =
                last.map_or((end, self.text.len()), |token| (token.start, token.end));
            let kind = SyntaxErrorKind::GeoPolygonNotEnoughPoints(points.len());
            return Err(Halt::Fail(self.error(start, stop, kind)));
        }
        let points = self.coordinate_pairs(points)?;
        Ok((end, Expression::GeoPolygon { points }))
    }

    /// Every point must have exactly two coordinates; the first that does not is the error.
    fn coordinate_pairs(&self, points: Vec<Vec<Token>>) -> Result<Vec<[Token; 2]>, Halt> {
        if let Some(offending) = points.iter().find(|point| point.len() != POINT_COORDINATES) {
            let kind = SyntaxErrorKind::GeoCoordinatesNotPair(offending.len());
            let first = &offending[0];
            return Err(Halt::Fail(self.error(first.start, first.end, kind)));
        }
        Ok(points
            .into_iter()
            .map(|point| {
                let mut coordinates = point.into_iter();
                match (coordinates.next(), coordinates.next()) {
                    (Some(latitude), Some(longitude)) => [latitude, longitude],
                    _ => unreachable!("points were checked to be pairs above"),
                }
            })
            .collect())
    }

    /// `WS* float WS*`.
    fn spaced_float(&self, at: usize) -> Step<Token> {
        let start = self.skip_multispace(at);
        let (end, ()) = self.float(start)?;
        Ok((
            self.skip_multispace(end),
            Token::raw(self.text, self.source, start, end),
        ))
    }

    /// `open float ("," float)* close`. A comma not followed by a number is left unread.
    fn float_list(&self, at: usize, open: char, close: char) -> Step<Vec<Token>> {
        let Some(mut position) = self.tag(at, open.encode_utf8(&mut [0; 4])) else {
            return self.backtrack(at, SyntaxErrorKind::InvalidPrimary);
        };
        let (after_first, first) = self.spaced_float(position)?;
        let mut floats = vec![first];
        position = after_first;
        while let Some(after_comma) = self.tag(position, ",") {
            match self.spaced_float(after_comma) {
                Ok((after, float)) => {
                    floats.push(float);
                    position = after;
                }
                Err(Halt::Backtrack(_)) => break,
                Err(failure) => return Err(failure),
            }
        }
        match self.tag(position, close.encode_utf8(&mut [0; 4])) {
            Some(end) => Ok((end, floats)),
            None => self.backtrack(position, SyntaxErrorKind::InvalidPrimary),
        }
    }

    /// `WS* "[" floats "]" WS*`.
    fn spaced_point(&self, at: usize) -> Step<Vec<Token>> {
        let (end, point) = self.float_list(self.skip_multispace(at), '[', ']')?;
        Ok((self.skip_multispace(end), point))
    }

    /// `"(" point ("," point)* ")"`, with an optional trailing comma when `trailing_comma`.
    fn point_list(&self, at: usize, trailing_comma: bool) -> Step<Vec<Vec<Token>>> {
        let Some(position) = self.tag(at, "(") else {
            return self.backtrack(at, SyntaxErrorKind::InvalidPrimary);
        };
        let (mut position, first) = self.spaced_point(position)?;
        let mut points = vec![first];
        while let Some(after_comma) = self.tag(position, ",") {
            match self.spaced_point(after_comma) {
                Ok((after, point)) => {
                    points.push(point);
                    position = after;
                }
                Err(Halt::Backtrack(_)) => break,
                Err(failure) => return Err(failure),
            }
        }
        if trailing_comma {
            if let Some(after_comma) = self.spaced_tag(position, ",") {
                position = after_comma;
            }
        }
        match self.tag(position, ")") {
            Some(end) => Ok((end, points)),
            None => self.backtrack(position, SyntaxErrorKind::InvalidPrimary),
        }
    }
}
