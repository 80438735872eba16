//! The `searchParameters` of an index's `chat` setting: the search parameters a chat's
//! search tool uses on this index (`hybrid`, `limit`, `sort`, `distinct`,
//! `matchingStrategy`, `attributesToSearchOn`, `rankingScoreThreshold`), as Meilisearch 1.41
//! decodes, merges and shows them.
//!
//! Invariants:
//! - decoding refuses unknown fields, `hybrid` without `embedder`, and a `semanticRatio` or
//!   `rankingScoreThreshold` outside `0.0..=1.0`, with Meilisearch's messages;
//! - an update merges field by field: a value replaces the stored one, `null` removes it,
//!   an absent field keeps it; the stored object lists its fields in [`FIELD_ORDER`];
//! - a given `hybrid` always carries its `semanticRatio` (0.5 when absent), in the stored
//!   object as in task details.

use std::convert::Infallible;

use deserr::{DeserializeError, Deserr, ErrorKind, ValuePointerRef};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::setting::Setting;

/// `hybrid.semanticRatio` when absent.
pub const SEMANTIC_RATIO_DEFAULT: f32 = 0.5;

/// The order of the fields in the stored and shown object (Meilisearch's).
pub const FIELD_ORDER: [&str; 7] = [
    "hybrid",
    "limit",
    "sort",
    "distinct",
    "matchingStrategy",
    "attributesToSearchOn",
    "rankingScoreThreshold",
];

/// `chat.searchParameters` of a settings update; each field three-state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Deserr)]
#[serde(rename_all = "camelCase")]
#[deserr(rename_all = camelCase, deny_unknown_fields)]
pub struct ChatSearchParameters {
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    #[deserr(default)]
    pub hybrid: Setting<ChatHybrid>,
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    #[deserr(default)]
    pub limit: Setting<usize>,
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    #[deserr(default)]
    pub sort: Setting<Vec<String>>,
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    #[deserr(default)]
    pub distinct: Setting<String>,
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    #[deserr(default)]
    pub matching_strategy: Setting<ChatMatchingStrategy>,
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    #[deserr(default)]
    pub attributes_to_search_on: Setting<Vec<String>>,
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    #[deserr(default)]
    pub ranking_score_threshold: Setting<UnitRatio<RankingScoreThresholdName>>,
}

/// `hybrid`: the embedder, and the share of the semantic ranking.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Deserr)]
#[serde(rename_all = "camelCase")]
#[deserr(rename_all = camelCase, deny_unknown_fields)]
pub struct ChatHybrid {
    #[serde(default = "default_semantic_ratio")]
    #[deserr(default = default_semantic_ratio())]
    pub semantic_ratio: UnitRatio<SemanticRatioName>,
    pub embedder: String,
}

fn default_semantic_ratio() -> UnitRatio<SemanticRatioName> {
    UnitRatio::new_unchecked(f64::from(SEMANTIC_RATIO_DEFAULT))
}

/// `matchingStrategy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Deserr)]
#[serde(rename_all = "camelCase")]
#[deserr(rename_all = camelCase)]
pub enum ChatMatchingStrategy {
    Last,
    All,
    Frequency,
}

/// The name a [`UnitRatio`] is refused under.
pub trait RatioName {
    const NAME: &'static str;
}

/// Names `semanticRatio`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SemanticRatioName;

impl RatioName for SemanticRatioName {
    const NAME: &'static str = "semanticRatio";
}

/// Names `rankingScoreThreshold`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RankingScoreThresholdName;

impl RatioName for RankingScoreThresholdName {
    const NAME: &'static str = "rankingScoreThreshold";
}

/// A number within `0.0..=1.0`, refused with Meilisearch's message otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct UnitRatio<Name> {
    value: f64,
    #[serde(skip)]
    name: std::marker::PhantomData<Name>,
}

impl<Name> UnitRatio<Name> {
    fn new_unchecked(value: f64) -> Self {
        UnitRatio {
            value,
            name: std::marker::PhantomData,
        }
    }

    /// The number.
    pub fn value(&self) -> f64 {
        self.value
    }
}

impl<Name: RatioName, E: DeserializeError> Deserr<E> for UnitRatio<Name> {
    fn deserialize_from_value<V: deserr::IntoValue>(
        value: deserr::Value<V>,
        location: ValuePointerRef,
    ) -> Result<Self, E> {
        let number = f64::deserialize_from_value(value, location)?;
        if (0.0..=1.0).contains(&number) {
            return Ok(UnitRatio::new_unchecked(number));
        }
        let msg = format!(
            "the value of `{}` is invalid, expected a float between `0.0` and `1.0`.",
            Name::NAME
        );
        Err(deserr::take_cf_content(E::error::<Infallible>(
            None,
            ErrorKind::Unexpected { msg },
            location,
        )))
    }
}

impl ChatSearchParameters {
    /// Merges this update into the stored object `stored` (an object, empty by default).
    pub fn merge_into(self, stored: &mut Value) {
        let mut fields = match std::mem::take(stored) {
            Value::Object(fields) => fields,
            _ => Map::new(),
        };
        let updates = [
            ("hybrid", to_json(self.hybrid)),
            ("limit", to_json(self.limit)),
            ("sort", to_json(self.sort)),
            ("distinct", to_json(self.distinct)),
            ("matchingStrategy", to_json(self.matching_strategy)),
            (
                "attributesToSearchOn",
                to_json(self.attributes_to_search_on),
            ),
            (
                "rankingScoreThreshold",
                to_json(self.ranking_score_threshold),
            ),
        ];
        for (name, update) in updates {
            match update {
                Setting::Set(value) => {
                    fields.insert(name.to_owned(), value);
                }
                Setting::Reset => {
                    fields.remove(name);
                }
                Setting::NotSet => {}
            }
        }
        let ordered = FIELD_ORDER
            .iter()
            .filter_map(|name| Some(((*name).to_owned(), fields.remove(*name)?)))
            .collect();
        *stored = Value::Object(ordered);
    }
}

fn to_json<T: Serialize>(setting: Setting<T>) -> Setting<Value> {
    match setting {
        Setting::Set(value) => Setting::Set(serde_json::to_value(value).unwrap_or(Value::Null)),
        Setting::Reset => Setting::Reset,
        Setting::NotSet => Setting::NotSet,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::decode::JsonError;
    use crate::errors::codes;

    fn decode(value: Value) -> Result<ChatSearchParameters, String> {
        deserr::deserialize::<_, _, JsonError<codes::InvalidSettingsIndexChat>>(value)
            .map_err(|error| crate::errors::ResponseError::from(error).message)
    }

    #[test]
    fn an_update_merges_field_by_field_in_meilisearch_order() {
        let mut stored = json!({});
        decode(json!({"limit": 5, "sort": ["title:asc"]}))
            .expect("valid")
            .merge_into(&mut stored);
        decode(json!({"distinct": "genre", "hybrid": {"embedder": "x"}}))
            .expect("valid")
            .merge_into(&mut stored);
        assert_eq!(
            serde_json::to_string(&stored).expect("json"),
            r#"{"hybrid":{"semanticRatio":0.5,"embedder":"x"},"limit":5,"sort":["title:asc"],"distinct":"genre"}"#
        );
        decode(json!({"limit": null}))
            .expect("valid")
            .merge_into(&mut stored);
        assert_eq!(stored.get("limit"), None);
        assert_eq!(stored["distinct"], "genre");
    }

    #[test]
    fn bad_values_are_refused_with_meilisearch_messages() {
        assert_eq!(
            decode(json!({"foo": 1})).expect_err("unknown"),
            "Unknown field `foo`: expected one of `hybrid`, `limit`, `sort`, `distinct`, `matchingStrategy`, `attributesToSearchOn`, `rankingScoreThreshold`"
        );
        assert_eq!(
            decode(json!({"hybrid": {"semanticRatio": 3, "embedder": "a"}})).expect_err("ratio"),
            "Invalid value at `.hybrid.semanticRatio`: the value of `semanticRatio` is invalid, expected a float between `0.0` and `1.0`."
        );
        assert_eq!(
            decode(json!({"hybrid": {"semanticRatio": 0.3}})).expect_err("embedder"),
            "Missing field `embedder` inside `.hybrid`"
        );
        assert_eq!(
            decode(json!({"rankingScoreThreshold": 3})).expect_err("threshold"),
            "Invalid value at `.rankingScoreThreshold`: the value of `rankingScoreThreshold` is invalid, expected a float between `0.0` and `1.0`."
        );
        assert_eq!(
            decode(json!({"matchingStrategy": "bogus"})).expect_err("strategy"),
            "Unknown value `bogus` at `.matchingStrategy`: expected one of `last`, `all`, `frequency`"
        );
    }
}
