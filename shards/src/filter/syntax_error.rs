//! Syntax errors of the filter language and their exact Meilisearch wording.
//!
//! A message is a diagnostic line, a newline, then the position marker
//! `{column}:{column + length} {whole filter}` where `column` is the 1-based character column of
//! the start of the offending text on its line and `length` its length in characters. The
//! offending text is printed with Rust's `escape_debug`, so that a message stays two lines.

use std::fmt::Write as _;

/// The list of operations printed when no condition could be recognised.
const OPERATIONS_LIST: &str = "`=`, `!=`, `>=`, `>`, `<=`, `<`, `IN`, `NOT IN`, `TO`, `EXISTS`, `NOT EXISTS`, `IS NULL`, `IS NOT NULL`, `IS EMPTY`, `IS NOT EMPTY`, `CONTAINS`, `NOT CONTAINS`, `STARTS WITH`, `NOT STARTS WITH`, `_geoRadius`, `_geoBoundingBox` or `_geoPolygon`";

/// The keywords a vector filter accepts after the embedder name.
pub(crate) const VECTOR_SUFFIXES: [&str; 4] = [
    "fragments",
    "userProvided",
    "documentTemplate",
    "regenerate",
];

/// What went wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SyntaxErrorKind {
    ReservedGeo(&'static str),
    GeoRadius,
    GeoRadiusArgumentCount(usize),
    GeoBoundingBox,
    GeoPolygon,
    GeoPolygonNotEnoughPoints(usize),
    GeoCoordinatesNotPair(usize),
    MisusedGeoRadius,
    MisusedGeoBoundingBox,
    VectorFilterLeftover,
    VectorFilterInvalidQuotes,
    VectorFilterMissingEmbedder,
    VectorFilterInvalidEmbedder,
    VectorFilterMissingFragment,
    VectorFilterInvalidFragment,
    VectorFilterUnknownSuffix {
        previous: Option<&'static str>,
        found: String,
    },
    VectorFilterOperation,
    InvalidPrimary,
    InvalidEscapedNumber,
    ExpectedEof,
    /// `reserved_keyword`: the text found was a keyword such as `AND`.
    ExpectedValue {
        reserved_keyword: bool,
    },
    MalformedValue,
    InOpeningBracket,
    InClosingBracket,
    InExpectedValue,
    MissingClosingDelimiter(char),
    DepthLimitReached,
}

/// A syntax error located in one source string of a filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    /// Byte offset of the start of the offending text.
    pub start: usize,
    /// Byte offset of its end.
    pub end: usize,
    pub kind: SyntaxErrorKind,
}

/// The position marker `column:column+length source` of `source[start..end]`.
pub fn position_marker(source: &str, start: usize, end: usize) -> String {
    let line_start = source[..start].rfind('\n').map_or(0, |newline| newline + 1);
    let column = source[line_start..start].chars().count() + 1;
    let length = source[start..end].chars().count();
    format!("{column}:{} {source}", column + length)
}

impl SyntaxError {
    /// The full Meilisearch message for this error in `source`.
    pub fn render(&self, source: &str) -> String {
        let mut message = self.diagnostic(&source[self.start..self.end]);
        message.push('\n');
        message.push_str(&position_marker(source, self.start, self.end));
        message
    }

    fn diagnostic(&self, offending: &str) -> String {
        let escaped = offending.escape_debug().to_string();
        let nothing = offending.trim().is_empty();
        match &self.kind {
            SyntaxErrorKind::ExpectedValue { reserved_keyword } => {
                expected_value_message(*reserved_keyword, nothing, &escaped)
            }
            SyntaxErrorKind::MalformedValue => format!("Malformed value: `{escaped}`."),
            SyntaxErrorKind::MissingClosingDelimiter(delimiter) => format!(
                "Expression `{escaped}` is missing the following closing delimiter: `{delimiter}`."
            ),
            SyntaxErrorKind::InvalidPrimary => invalid_primary_message(nothing, &escaped),
            SyntaxErrorKind::InvalidEscapedNumber => {
                format!("Found an invalid escaped sequence number: `{escaped}`.")
            }
            SyntaxErrorKind::ExpectedEof => format!(
                "Found unexpected characters at the end of the filter: `{escaped}`. You probably forgot an `OR` or an `AND` rule."
            ),
            SyntaxErrorKind::GeoRadius => "The `_geoRadius` filter must be in the form: `_geoRadius(latitude, longitude, radius, optionalResolution)`.".to_owned(),
            SyntaxErrorKind::GeoRadiusArgumentCount(count) => {
                format!("Was expecting 3 or 4 arguments for `_geoRadius`, but instead found {count}.")
            }
            SyntaxErrorKind::GeoBoundingBox => "The `_geoBoundingBox` filter expects two pairs of arguments: `_geoBoundingBox([latitude, longitude], [latitude, longitude])`.".to_owned(),
            SyntaxErrorKind::GeoPolygon => "The `_geoPolygon` filter doesn't match the expected format: `_geoPolygon([latitude, longitude], [latitude, longitude])`.".to_owned(),
            SyntaxErrorKind::GeoPolygonNotEnoughPoints(count) => {
                format!("The `_geoPolygon` filter expects at least 3 points but only {count} were specified")
            }
            SyntaxErrorKind::GeoCoordinatesNotPair(count) => {
                format!("Was expecting 2 coordinates but instead found {count}.")
            }
            SyntaxErrorKind::ReservedGeo(name) => format!(
                "`{name}` is a reserved keyword and thus can't be used as a filter expression. Use the `_geoRadius(latitude, longitude, distance)` or `_geoBoundingBox([latitude, longitude], [latitude, longitude])` built-in rules to filter on `_geo` coordinates."
            ),
            SyntaxErrorKind::MisusedGeoRadius => {
                "The `_geoRadius` filter is an operation and can't be used as a value.".to_owned()
            }
            SyntaxErrorKind::MisusedGeoBoundingBox => {
                "The `_geoBoundingBox` filter is an operation and can't be used as a value."
                    .to_owned()
            }
            SyntaxErrorKind::VectorFilterLeftover => "The vector filter has leftover tokens.".to_owned(),
            SyntaxErrorKind::VectorFilterUnknownSuffix { previous, found } => {
                vector_suffix_message(*previous, found)
            }
            SyntaxErrorKind::VectorFilterInvalidFragment => {
                "The vector filter's fragment name is invalid.".to_owned()
            }
            SyntaxErrorKind::VectorFilterMissingFragment => {
                "The vector filter is missing a fragment name.".to_owned()
            }
            SyntaxErrorKind::VectorFilterMissingEmbedder => {
                "Was expecting embedder name but found nothing.".to_owned()
            }
            SyntaxErrorKind::VectorFilterInvalidEmbedder => {
                "The vector filter's embedder name is invalid.".to_owned()
            }
            SyntaxErrorKind::VectorFilterOperation => "Was expecting an operation like `EXISTS` or `NOT EXISTS` after the vector filter.".to_owned(),
            SyntaxErrorKind::VectorFilterInvalidQuotes => {
                "The quotes in one of the values are inconsistent.".to_owned()
            }
            SyntaxErrorKind::InOpeningBracket => "Expected `[` after `IN` keyword.".to_owned(),
            SyntaxErrorKind::InClosingBracket => {
                "Expected matching `]` after the list of field names given to `IN[`".to_owned()
            }
            SyntaxErrorKind::InExpectedValue => format!(
                "Expected only comma-separated field names inside `IN[..]` but instead found `{escaped}`."
            ),
            SyntaxErrorKind::DepthLimitReached => "The filter exceeded the maximum depth limit. Try rewriting the filter so that it contains fewer nested conditions.".to_owned(),
        }
    }
}

/// The message of [`SyntaxErrorKind::ExpectedValue`] at `escaped` (`nothing`: only
/// whitespace).
fn expected_value_message(reserved_keyword: bool, nothing: bool, escaped: &str) -> String {
    if nothing {
        "Was expecting a value but instead got nothing.".to_owned()
    } else if reserved_keyword {
        format!(
            "Was expecting a value but instead got `{escaped}`, which is a reserved keyword. To use `{escaped}` as a field name or a value, surround it by quotes."
        )
    } else {
        format!("Was expecting a value but instead got `{escaped}`.")
    }
}

/// The message of [`SyntaxErrorKind::InvalidPrimary`] at `escaped` (`nothing`: only
/// whitespace).
fn invalid_primary_message(nothing: bool, escaped: &str) -> String {
    if nothing {
        format!("Was expecting an operation {OPERATIONS_LIST} but instead got nothing.")
    } else {
        format!("Was expecting an operation {OPERATIONS_LIST} at `{escaped}`.")
    }
}

/// The message of [`SyntaxErrorKind::VectorFilterUnknownSuffix`]: `found` after the
/// embedder (or after the suffix `previous`).
fn vector_suffix_message(previous: Option<&str>, found: &str) -> String {
    match previous {
        _ if found == "." => "Was expecting one of `.fragments`, `.userProvided`, `.documentTemplate`, `.regenerate` or nothing, but instead found a point without a valid value.".to_owned(),
        None if VECTOR_SUFFIXES.contains(&found) => {
            "Was expecting this part to be unquoted.".to_owned()
        }
        None => {
            let mut message = format!("Was expecting one of `fragments`, `userProvided`, `documentTemplate`, `regenerate` or nothing, but instead found `{found}`.");
            if let Some(suggestion) = suggest_vector_suffix(found) {
                let _ = write!(message, " Did you mean `{suggestion}`?");
            }
            message
        }
        Some(previous) => format!(
            "Vector filter can only accept one of `fragments`, `userProvided`, `documentTemplate` or `regenerate`, but found both `{previous}` and `{found}`."
        ),
    }
}

/// The largest edit distance (with transpositions) at which a vector suffix is suggested.
const SUGGESTION_DISTANCE_MAX: usize = 2;

/// The first vector suffix within [`SUGGESTION_DISTANCE_MAX`] edits of `found`.
fn suggest_vector_suffix(found: &str) -> Option<&'static str> {
    closest_within_two_edits(found, VECTOR_SUFFIXES)
}

/// The first of `candidates` within [`SUGGESTION_DISTANCE_MAX`] edits of `found` (a "did you
/// mean" suggestion).
pub(crate) fn closest_within_two_edits<'candidate>(
    found: &str,
    candidates: impl IntoIterator<Item = &'candidate str>,
) -> Option<&'candidate str> {
    candidates
        .into_iter()
        .find(|candidate| edit_distance(found, candidate) <= SUGGESTION_DISTANCE_MAX)
}

/// Optimal-string-alignment distance over characters: insertions, deletions, substitutions and
/// transpositions of adjacent characters each cost one.
fn edit_distance(left: &str, right: &str) -> usize {
    let left: Vec<char> = left.chars().collect();
    let right: Vec<char> = right.chars().collect();
    let width = right.len() + 1;
    let mut table = vec![0usize; (left.len() + 1) * width];
    for (row, cell) in table.iter_mut().step_by(width).enumerate() {
        *cell = row;
    }
    for (column, cell) in table.iter_mut().take(width).enumerate() {
        *cell = column;
    }
    for row in 1..=left.len() {
        for column in 1..=right.len() {
            let substitution = usize::from(left[row - 1] != right[column - 1]);
            let mut best = (table[(row - 1) * width + column] + 1)
                .min(table[row * width + column - 1] + 1)
                .min(table[(row - 1) * width + column - 1] + substitution);
            if row > 1
                && column > 1
                && left[row - 1] == right[column - 2]
                && left[row - 2] == right[column - 1]
            {
                best = best.min(table[(row - 2) * width + column - 2] + 1);
            }
            table[row * width + column] = best;
        }
    }
    table[left.len() * width + right.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_counts_transpositions_as_one() {
        assert_eq!(edit_distance("fargments", "fragments"), 1);
        assert_eq!(edit_distance("fragments", "fragments"), 0);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn position_marker_counts_characters_not_bytes() {
        assert_eq!(
            position_marker("channel = 🐻", 10, 14),
            "11:12 channel = 🐻"
        );
        assert_eq!(position_marker("a\nbc = d", 2, 4), "1:3 a\nbc = d");
    }
}
