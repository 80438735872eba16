//! Parsing a key uid from text with the error messages Meilisearch 1.41 answers, which are
//! those of the `uuid` crate version it ships (1.19); later `uuid` releases reworded them,
//! so the wording is reproduced here rather than taken from whichever `uuid` is linked.
//!
//! Accepted forms are the `uuid` crate's: simple (32 hex digits), hyphenated, braced
//! (`{...}`) and URN (`urn:uuid:...`), either case.
//!
//! Invariant: [`parse_uid`] accepts exactly what `Uuid::try_parse` accepts; only the
//! failure message is ours. Character positions in messages are 1-based byte offsets into
//! the whole input, prefix included.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use uuid::Uuid;

/// The hyphen positions (0-based) that start groups 1 to 4, plus the start of group 0.
const GROUP_STARTS: [usize; 5] = [0, 9, 14, 19, 24];

/// The length of each hyphenated group.
const GROUP_LENGTHS: [usize; 5] = [8, 4, 4, 4, 12];

/// Why a text is not a uuid, worded as `uuid` 1.19 words it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UuidTextError {
    Character { character: char, position: usize },
    SimpleLength { length: usize },
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
                "invalid character: expected an optional prefix of `urn:uuid:` followed by \
                 [0-9a-fA-F-], found `{character}` at {position}"
            ),
            UuidTextError::SimpleLength { length } => write!(
                formatter,
                "invalid length: expected length 32 for simple format, found {length}"
            ),
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

/// Explains why `text` is not a uuid.
fn diagnose(text: &str) -> UuidTextError {
    let (body, offset, simple) = if let Some(inner) = text
        .strip_prefix('{')
        .and_then(|rest| rest.strip_suffix('}'))
    {
        (inner, 1, false)
    } else if let Some(inner) = text.strip_prefix("urn:uuid:") {
        (inner, "urn:uuid:".len(), false)
    } else {
        (text, 0, true)
    };
    let mut hyphen_count = 0;
    let mut hyphen_positions = [0usize; 4];
    for (index, character) in body.char_indices() {
        if character == '-' {
            if let Some(slot) = hyphen_positions.get_mut(hyphen_count) {
                *slot = index;
            }
            hyphen_count += 1;
        } else if !character.is_ascii_hexdigit() {
            return UuidTextError::Character {
                character,
                position: index + offset + 1,
            };
        }
    }
    if hyphen_count == 0 && simple {
        return UuidTextError::SimpleLength { length: text.len() };
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
    // Every hyphen is in place, so the last group is off; `uuid` 1.19 measures it against
    // the whole input, prefix included.
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
        assert_eq!(
            message("doggo"),
            "invalid character: expected an optional prefix of `urn:uuid:` followed by \
             [0-9a-fA-F-], found `o` at 2"
        );
        assert_eq!(
            message("0123456789abc"),
            "invalid length: expected length 32 for simple format, found 13"
        );
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
        assert_eq!(
            message("{0123}"),
            "invalid group count: expected 5, found 1"
        );
        assert_eq!(
            message("urn:uuid:0g"),
            "invalid character: expected an optional prefix of `urn:uuid:` followed by \
             [0-9a-fA-F-], found `g` at 11"
        );
        assert_eq!(
            message(""),
            "invalid length: expected length 32 for simple format, found 0"
        );
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
            "UUID parsing failed: invalid character: expected an optional prefix of `urn:uuid:` \
             followed by [0-9a-fA-F-], found `o` at 2 at line 1 column 14"
        );
        let wrong_type = serde_json::from_str::<Claim>(r#"{"uid":1}"#).unwrap_err();
        assert_eq!(
            wrong_type.to_string(),
            "invalid type: integer `1`, expected a UUID string at line 1 column 8"
        );
    }
}
