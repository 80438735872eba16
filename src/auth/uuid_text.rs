//! Parsing a key uid from text with the error messages Meilisearch 1.50 answers, which are
//! those of the `uuid` crate version it ships (1.23); other `uuid` releases word them
//! differently, so the wording is reproduced here rather than taken from whichever `uuid` is
//! linked.
//!
//! Accepted forms are the `uuid` crate's: simple (32 hex digits), hyphenated, braced
//! (`{...}`) and URN (`urn:uuid:...`), either case.
//!
//! Invariant: [`parse_uid`] accepts exactly what `Uuid::try_parse` accepts; only the
//! failure message is ours. Character positions in messages are 0-based byte offsets into
//! the input, a URN prefix included, a brace not (as Meilisearch 1.50 answers them). (`uuid` 1.23 panics on a URN prefix followed by fewer
//! than nine characters, which Meilisearch then answers with a dropped connection; here
//! such a text is refused like any other.)

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use uuid::Uuid;

/// Where the hyphenated groups start (0-based), after the prefix.
const GROUP_STARTS: [usize; 5] = [0, 9, 14, 19, 24];

/// The length of each hyphenated group.
const GROUP_LENGTHS: [usize; 5] = [8, 4, 4, 4, 12];

/// The longest text `uuid` 1.23 looks into before answering with its length.
const DIAGNOSED_LENGTH_MAX: usize = 45;

/// The URN prefix.
const URN_PREFIX: &str = "urn:uuid:";

/// Why a text is not a uuid, worded as `uuid` 1.23 words it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UuidTextError {
    Character { character: char, position: usize },
    Length { length: usize },
    GroupCount { count: usize },
    GroupLength { group: usize, length: usize },
}

impl fmt::Display for UuidTextError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UuidTextError::Character {
                character,
                position,
            } => write!(
                formatter,
                "invalid character: found `{character}` at {position}"
            ),
            UuidTextError::Length { length } => {
                write!(formatter, "invalid length: found {length}")
            }
            UuidTextError::GroupCount { count } => {
                write!(formatter, "invalid group count: expected 5, found {count}")
            }
            UuidTextError::GroupLength { group, length } => write!(
                formatter,
                "invalid group length in group {group}: expected {}, found {length}",
                GROUP_LENGTHS[*group]
            ),
        }
    }
}

impl std::error::Error for UuidTextError {}

/// Parses a uid in any form the `uuid` crate accepts.
pub fn parse_uid(text: &str) -> Result<Uuid, UuidTextError> {
    Uuid::try_parse(text).map_err(|_| diagnose(text))
}

/// Explains why `text` is not a uuid, as `uuid` 1.23 explains it.
fn diagnose(text: &str) -> UuidTextError {
    if text.is_empty() || text.len() > DIAGNOSED_LENGTH_MAX {
        return UuidTextError::Length { length: text.len() };
    }
    // `shown_from`: what `uuid` 1.23 adds to a character's index within the scanned part
    // (inside braces it counts from the first character after `{`, as observed on 1.50).
    let (start, end, shown_from, hyphenated) =
        if text.len() >= 2 && text.starts_with('{') && text.ends_with('}') {
            (1, text.len() - 1, 0, true)
        } else if text.starts_with(URN_PREFIX) {
            (URN_PREFIX.len(), text.len(), URN_PREFIX.len(), true)
        } else {
            (0, text.len(), 0, false)
        };
    let mut hyphenated = hyphenated;
    let mut hyphen_count = 0;
    let mut hyphen_positions = [0usize; 4];
    for (index, character) in text[start..end].char_indices() {
        if character == '-' {
            hyphenated = true;
            if let Some(slot) = hyphen_positions.get_mut(hyphen_count) {
                *slot = index;
            }
            hyphen_count += 1;
        } else if !character.is_ascii_hexdigit() {
            return UuidTextError::Character {
                character,
                position: index + shown_from,
            };
        }
    }
    if !hyphenated {
        return UuidTextError::Length { length: text.len() };
    }
    if hyphen_count != 4 {
        return UuidTextError::GroupCount {
            count: hyphen_count + 1,
        };
    }
    for group in 0..4 {
        if hyphen_positions[group] != GROUP_STARTS[group + 1] - 1 {
            return UuidTextError::GroupLength {
                group,
                length: hyphen_positions[group].saturating_sub(GROUP_STARTS[group]),
            };
        }
    }
    // As `uuid` 1.23 counts it: the whole text's length, prefix included.
    UuidTextError::GroupLength {
        group: 4,
        length: text.len().saturating_sub(GROUP_STARTS[4]),
    }
}

/// Deserializes a uid from a JSON string as `uuid` 1.19's serde support does (tenant token
/// claims): a non-string is "invalid type: ..., expected a UUID string", a bad string is
/// "UUID parsing failed: <reason>".
pub fn deserialize_uid<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Uuid, D::Error> {
    struct UidVisitor;

    impl Visitor<'_> for UidVisitor {
        type Value = Uuid;

        fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
            formatter.write_str("a UUID string")
        }

        fn visit_str<E: de::Error>(self, text: &str) -> Result<Uuid, E> {
            parse_uid(text).map_err(|error| E::custom(format_args!("UUID parsing failed: {error}")))
        }
    }

    deserializer.deserialize_str(UidVisitor)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn message(text: &str) -> String {
        parse_uid(text).unwrap_err().to_string()
    }

    #[test]
    fn every_uuid_form_parses() {
        let hyphenated = "01b4bc42-eb33-4041-b481-254d00cce834";
        let expected = Uuid::try_parse(hyphenated).expect("try_parse succeeds");
        for text in [
            hyphenated,
            "01B4BC42-EB33-4041-B481-254D00CCE834",
            "01b4bc42eb334041b481254d00cce834",
            "{01b4bc42-eb33-4041-b481-254d00cce834}",
            "urn:uuid:01b4bc42-eb33-4041-b481-254d00cce834",
        ] {
            assert_eq!(
                parse_uid(text).expect("parse_uid succeeds"),
                expected,
                "{text}"
            );
        }
    }

    #[test]
    fn messages_match_the_uuid_version_meilisearch_ships() {
        assert_eq!(message("doggo"), "invalid character: found `o` at 1");
        assert_eq!(message("0123456789abc"), "invalid length: found 13");
        assert_eq!(
            message("0123-4567"),
            "invalid group count: expected 5, found 2"
        );
        assert_eq!(
            message("01b4bc4-2eb33-4041-b481-254d00cce834"),
            "invalid group length in group 0: expected 8, found 7"
        );
        assert_eq!(
            message("01b4bc42-eb33-4041-b481-254d00cce8345"),
            "invalid group length in group 4: expected 12, found 13"
        );
        // Read from Meilisearch 1.50's answers on this machine.
        assert_eq!(
            message("{01b4bc42-eb33-4041-b481-254d00cce83x}"),
            "invalid character: found `x` at 35"
        );
        assert_eq!(
            message("{0123}"),
            "invalid group count: expected 5, found 1"
        );
        assert_eq!(message("urn:uuid:0g"), "invalid character: found `g` at 10");
        assert_eq!(message(""), "invalid length: found 0");
    }

    #[test]
    fn json_claims_use_the_serde_wording() {
        #[derive(serde::Deserialize, Debug)]
        struct Claim {
            #[serde(deserialize_with = "deserialize_uid")]
            #[allow(dead_code)]
            uid: Uuid,
        }
        let bad = serde_json::from_str::<Claim>(r#"{"uid":"doggo"}"#).unwrap_err();
        assert_eq!(
            bad.to_string(),
            "UUID parsing failed: invalid character: found `o` at 1 at line 1 column 14"
        );
        let wrong_type = serde_json::from_str::<Claim>(r#"{"uid":1}"#).unwrap_err();
        assert_eq!(
            wrong_type.to_string(),
            "invalid type: integer `1`, expected a UUID string at line 1 column 8"
        );
    }
}
