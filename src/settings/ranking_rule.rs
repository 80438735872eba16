//! Ranking rules: the built-in names and the custom `<field>:asc` / `<field>:desc` rules,
//! parsed and refused with Meilisearch's messages.
//!
//! Invariants: a parsed rule displays back to the exact string that names it; reserved
//! names (`_geo`, `_geoPoint(..)`, ...) are never accepted as custom fields.

use std::fmt;
use std::str::FromStr;

use deserr::Deserr;
use serde::{Deserialize, Serialize};

/// Field names that cannot be used in a custom ranking rule or a sort rule.
pub(crate) const RESERVED_KEYWORDS: [&str; 7] = [
    "_geo",
    "_geojson",
    "_geoDistance",
    "_geoPoint",
    "_geoRadius",
    "_geoBoundingBox",
    "_geoPolygon",
];

/// Prefixes of geo functions that cannot be used as a custom ranking or sort field.
pub(crate) const RESERVED_FUNCTION_PREFIXES: [&str; 4] =
    ["_geoRadius(", "_geoBoundingBox(", "_geo(", "_geoDistance("];

/// One ranking rule.
#[derive(Debug, Clone, PartialEq, Eq, Deserr)]
#[deserr(try_from(&String) = FromStr::from_str -> RankingRuleError)]
pub enum RankingRule {
    Words,
    Typo,
    Proximity,
    Attribute,
    AttributeRank,
    WordPosition,
    Sort,
    Exactness,
    Asc(String),
    Desc(String),
}

/// The default rules of a fresh index, in order.
pub fn default_ranking_rules() -> Vec<RankingRule> {
    vec![
        RankingRule::Words,
        RankingRule::Typo,
        RankingRule::Proximity,
        RankingRule::AttributeRank,
        RankingRule::Sort,
        RankingRule::WordPosition,
        RankingRule::Exactness,
    ]
}

/// Why a string is not a ranking rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RankingRuleError {
    InvalidName(String),
    ReservedName(String),
    ReservedNameForSort(String),
    ReservedNameForFilter(String),
}

impl fmt::Display for RankingRuleError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RankingRuleError::InvalidName(name) => write!(
                formatter,
                "`{name}` ranking rule is invalid. Valid ranking rules are words, typo, sort, proximity, attribute, exactness and custom ranking rules."
            ),
            RankingRuleError::ReservedName(name) => write!(
                formatter,
                "`{name}` is a reserved keyword and thus can't be used as a ranking rule"
            ),
            RankingRuleError::ReservedNameForSort(name) => write!(
                formatter,
                "`{name}` is a reserved keyword and thus can't be used as a ranking rule. `{name}` can only be used for sorting at search time"
            ),
            RankingRuleError::ReservedNameForFilter(name) => write!(
                formatter,
                "`{name}` is a reserved keyword and thus can't be used as a ranking rule. `{name}` can only be used for filtering at search time"
            ),
        }
    }
}

impl std::error::Error for RankingRuleError {}

impl FromStr for RankingRule {
    type Err = RankingRuleError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Ok(match text {
            "words" => RankingRule::Words,
            "typo" => RankingRule::Typo,
            "proximity" => RankingRule::Proximity,
            "attribute" => RankingRule::Attribute,
            "attributeRank" => RankingRule::AttributeRank,
            "wordPosition" => RankingRule::WordPosition,
            "sort" => RankingRule::Sort,
            "exactness" => RankingRule::Exactness,
            custom => parse_custom(custom)?,
        })
    }
}

/// `<field>:asc` or `<field>:desc`, split on the last colon.
fn parse_custom(text: &str) -> Result<RankingRule, RankingRuleError> {
    let (field, ascending) = match text.rsplit_once(':') {
        Some((field, "asc")) => (field, true),
        Some((field, "desc")) => (field, false),
        _ => return Err(RankingRuleError::InvalidName(text.to_owned())),
    };
    check_custom_field(field)?;
    Ok(if ascending {
        RankingRule::Asc(field.to_owned())
    } else {
        RankingRule::Desc(field.to_owned())
    })
}

/// Whether `field` is a reserved geo name or starts a geo function (never a field to rank or
/// sort by).
pub(crate) fn is_reserved(field: &str) -> bool {
    RESERVED_KEYWORDS.contains(&field)
        || RESERVED_FUNCTION_PREFIXES
            .iter()
            .any(|prefix| field.starts_with(prefix))
}

fn check_custom_field(field: &str) -> Result<(), RankingRuleError> {
    if field.starts_with("_geoPoint(") && field.ends_with(')') {
        // Valid or not, a geo point is only usable at search time.
        return Err(RankingRuleError::ReservedNameForSort(
            "_geoPoint".to_owned(),
        ));
    }
    if !is_reserved(field) {
        return Ok(());
    }
    Err(if field.starts_with("_geoPoint") {
        RankingRuleError::ReservedNameForSort("_geoPoint".to_owned())
    } else if field.starts_with("_geoRadius") {
        RankingRuleError::ReservedNameForFilter("_geoRadius".to_owned())
    } else if field.starts_with("_geoBoundingBox") {
        RankingRuleError::ReservedNameForFilter("_geoBoundingBox".to_owned())
    } else {
        RankingRuleError::ReservedName(field.to_owned())
    })
}

impl fmt::Display for RankingRule {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RankingRule::Words => formatter.write_str("words"),
            RankingRule::Typo => formatter.write_str("typo"),
            RankingRule::Proximity => formatter.write_str("proximity"),
            RankingRule::Attribute => formatter.write_str("attribute"),
            RankingRule::AttributeRank => formatter.write_str("attributeRank"),
            RankingRule::WordPosition => formatter.write_str("wordPosition"),
            RankingRule::Sort => formatter.write_str("sort"),
            RankingRule::Exactness => formatter.write_str("exactness"),
            RankingRule::Asc(field) => write!(formatter, "{field}:asc"),
            RankingRule::Desc(field) => write!(formatter, "{field}:desc"),
        }
    }
}

impl Serialize for RankingRule {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for RankingRule {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// The message of mixing `attribute` with `attributeRank`/`wordPosition`.
pub const MIXED_ATTRIBUTE_RULES_MESSAGE: &str = "Mixed usage of the attribute, attributeRank, and wordPosition ranking rules. You must either use the attribute ranking rule alone or the attributeRank and wordPosition ranking rules.";

/// Whether `rules` use `attribute` together with `attributeRank` or `wordPosition`.
pub fn mixes_attribute_rules(rules: &[RankingRule]) -> bool {
    let attribute = rules.contains(&RankingRule::Attribute);
    let split = rules
        .iter()
        .any(|rule| matches!(rule, RankingRule::AttributeRank | RankingRule::WordPosition));
    attribute && split
}
