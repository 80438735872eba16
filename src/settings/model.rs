//! The settings update body (`PATCH /settings`, and the value of every sub-route) and the
//! value types of each setting, with the per-setting error codes of Meilisearch 1.41.
//!
//! Invariants: field order is the `GET /settings` key order (so serializing a patch gives
//! task `details` in the right order); every field is a three-state [`Setting`]; an error
//! inside a field carries that field's `invalid_settings_*` code.

use std::collections::{BTreeMap, BTreeSet};

use deserr::{DeserializeError, Deserr, ErrorKind, ValuePointerRef};
use serde::{Deserialize, Serialize};

pub use super::locale::Locale;
pub use super::ranking_rule::RankingRule;
pub use super::setting::Setting;
use crate::decode::JsonError;
use crate::errors::codes;

/// Default `typoTolerance.minWordSizeForTypos.oneTypo`.
pub const DEFAULT_MIN_WORD_SIZE_ONE_TYPO: u8 = 5;
/// Default `typoTolerance.minWordSizeForTypos.twoTypos`.
pub const DEFAULT_MIN_WORD_SIZE_TWO_TYPOS: u8 = 9;
/// Default `faceting.maxValuesPerFacet`.
pub const DEFAULT_MAX_VALUES_PER_FACET: usize = 100;
/// Default `pagination.maxTotalHits`.
pub const DEFAULT_MAX_TOTAL_HITS: usize = 1000;
/// Default `chat.documentTemplateMaxBytes` (also embedders').
pub const DEFAULT_DOCUMENT_TEMPLATE_MAX_BYTES: usize = 400;
/// Default document template of `chat` and embedders.
pub const DEFAULT_DOCUMENT_TEMPLATE: &str = "{% for field in fields %}{% if field.is_searchable and field.value != nil %}{{ field.name }}: {{ field.value }}\n{% endif %}{% endfor %}";

/// The body of `PATCH /indexes/{uid}/settings`; also the stored request of a
/// `settingsUpdate` task.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Deserr)]
#[serde(rename_all = "camelCase")]
#[deserr(error = JsonError, rename_all = camelCase, deny_unknown_fields)]
pub struct Settings {
    #[serde(
        default,
        skip_serializing_if = "Setting::is_not_set",
        serialize_with = "wildcard"
    )]
    #[deserr(default, error = JsonError<codes::InvalidSettingsDisplayedAttributes>)]
    pub displayed_attributes: Setting<Vec<String>>,
    #[serde(
        default,
        skip_serializing_if = "Setting::is_not_set",
        serialize_with = "wildcard"
    )]
    #[deserr(default, error = JsonError<codes::InvalidSettingsSearchableAttributes>)]
    pub searchable_attributes: Setting<Vec<String>>,
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    #[deserr(default, error = JsonError<codes::InvalidSettingsFilterableAttributes>)]
    pub filterable_attributes: Setting<Vec<FilterableAttributesRule>>,
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    #[deserr(default, error = JsonError<codes::InvalidSettingsSortableAttributes>)]
    pub sortable_attributes: Setting<BTreeSet<String>>,
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    #[deserr(default, error = JsonError<codes::InvalidSettingsForeignKeys>)]
    pub foreign_keys: Setting<Vec<ForeignKey>>,
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    #[deserr(default, error = JsonError<codes::InvalidSettingsRankingRules>)]
    pub ranking_rules: Setting<Vec<RankingRule>>,
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    #[deserr(default, error = JsonError<codes::InvalidSettingsStopWords>)]
    pub stop_words: Setting<BTreeSet<String>>,
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    #[deserr(default, error = JsonError<codes::InvalidSettingsNonSeparatorTokens>)]
    pub non_separator_tokens: Setting<BTreeSet<String>>,
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    #[deserr(default, error = JsonError<codes::InvalidSettingsSeparatorTokens>)]
    pub separator_tokens: Setting<BTreeSet<String>>,
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    #[deserr(default, error = JsonError<codes::InvalidSettingsDictionary>)]
    pub dictionary: Setting<BTreeSet<String>>,
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    #[deserr(default, error = JsonError<codes::InvalidSettingsSynonyms>)]
    pub synonyms: Setting<BTreeMap<String, Vec<String>>>,
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    #[deserr(default, error = JsonError<codes::InvalidSettingsDistinctAttribute>)]
    pub distinct_attribute: Setting<String>,
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    #[deserr(default, error = JsonError<codes::InvalidSettingsProximityPrecision>)]
    pub proximity_precision: Setting<ProximityPrecision>,
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    #[deserr(default, error = JsonError<codes::InvalidSettingsTypoTolerance>)]
    pub typo_tolerance: Setting<TypoSettings>,
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    #[deserr(default, error = JsonError<codes::InvalidSettingsFaceting>)]
    pub faceting: Setting<FacetingSettings>,
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    #[deserr(default, error = JsonError<codes::InvalidSettingsPagination>)]
    pub pagination: Setting<PaginationSettings>,
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    #[deserr(default, error = JsonError<codes::InvalidSettingsEmbedders>)]
    pub embedders: Setting<BTreeMap<String, Setting<EmbedderSettings>>>,
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    #[deserr(default, error = JsonError<codes::InvalidSettingsSearchCutoffMs>)]
    pub search_cutoff_ms: Setting<u64>,
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    #[deserr(default, error = JsonError<codes::InvalidSettingsLocalizedAttributes>)]
    pub localized_attributes: Setting<Vec<LocalizedAttributesRule>>,
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    #[deserr(default, error = JsonError<codes::InvalidSettingsFacetSearch>)]
    pub facet_search: Setting<bool>,
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    #[deserr(default, error = JsonError<codes::InvalidSettingsPrefixSearch>)]
    pub prefix_search: Setting<PrefixSearch>,
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    #[deserr(default, error = JsonError<codes::InvalidSettingsIndexChat>)]
    pub chat: Setting<ChatSettings>,
}

/// Displayed/searchable attributes: a reset is shown as `["*"]`.
fn wildcard<S: serde::Serializer>(
    setting: &Setting<Vec<String>>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match setting {
        Setting::Set(fields) => fields.serialize(serializer),
        Setting::Reset | Setting::NotSet => [WILDCARD].serialize(serializer),
    }
}

/// The "every attribute" value of displayed and searchable attributes.
pub const WILDCARD: &str = "*";

impl Settings {
    /// The update of `DELETE /settings`: every setting reset.
    pub fn cleared() -> Settings {
        Settings {
            displayed_attributes: Setting::Reset,
            searchable_attributes: Setting::Reset,
            filterable_attributes: Setting::Reset,
            sortable_attributes: Setting::Reset,
            foreign_keys: Setting::Reset,
            ranking_rules: Setting::Reset,
            stop_words: Setting::Reset,
            non_separator_tokens: Setting::Reset,
            separator_tokens: Setting::Reset,
            dictionary: Setting::Reset,
            synonyms: Setting::Reset,
            distinct_attribute: Setting::Reset,
            proximity_precision: Setting::Reset,
            typo_tolerance: Setting::Reset,
            faceting: Setting::Reset,
            pagination: Setting::Reset,
            embedders: Setting::Reset,
            search_cutoff_ms: Setting::Reset,
            localized_attributes: Setting::Reset,
            facet_search: Setting::Reset,
            prefix_search: Setting::Reset,
            chat: Setting::Reset,
        }
    }
}

/// One item of `filterableAttributes`: a plain attribute or a rule with patterns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum FilterableAttributesRule {
    Field(String),
    Pattern(FilterableAttributesPatterns),
}

impl<E: DeserializeError> Deserr<E> for FilterableAttributesRule {
    fn deserialize_from_value<V: deserr::IntoValue>(
        value: deserr::Value<V>,
        location: ValuePointerRef,
    ) -> Result<Self, E> {
        if value.kind() == deserr::ValueKind::Map {
            FilterableAttributesPatterns::deserialize_from_value(value, location)
                .map(FilterableAttributesRule::Pattern)
        } else {
            String::deserialize_from_value(value, location).map(FilterableAttributesRule::Field)
        }
    }
}

/// `{"attributePatterns": [...], "features": {...}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Deserr)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[deserr(rename_all = camelCase, deny_unknown_fields)]
pub struct FilterableAttributesPatterns {
    pub attribute_patterns: Vec<String>,
    #[serde(default)]
    #[deserr(default)]
    pub features: FilterableAttributesFeatures,
}

/// What a filterable rule enables; absent features mean equality filtering only.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, Deserr)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[deserr(rename_all = camelCase, deny_unknown_fields)]
pub struct FilterableAttributesFeatures {
    #[serde(default)]
    #[deserr(default)]
    pub facet_search: bool,
    #[serde(default)]
    #[deserr(default)]
    pub filter: FilterFeatures,
}

/// Which filter operators a rule allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Deserr)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[deserr(rename_all = camelCase, deny_unknown_fields)]
pub struct FilterFeatures {
    #[serde(default = "default_true")]
    #[deserr(default = true)]
    pub equality: bool,
    #[serde(default)]
    #[deserr(default)]
    pub comparison: bool,
}

impl Default for FilterFeatures {
    fn default() -> Self {
        FilterFeatures {
            equality: true,
            comparison: false,
        }
    }
}

fn default_true() -> bool {
    true
}

/// `{"foreignIndexUid", "fieldName"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Deserr)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[deserr(rename_all = camelCase, deny_unknown_fields)]
pub struct ForeignKey {
    pub foreign_index_uid: String,
    pub field_name: String,
}

/// `proximityPrecision`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, Deserr)]
#[serde(rename_all = "camelCase")]
#[deserr(rename_all = camelCase)]
pub enum ProximityPrecision {
    #[default]
    ByWord,
    ByAttribute,
}

/// `prefixSearch`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, Deserr)]
#[serde(rename_all = "camelCase")]
#[deserr(rename_all = camelCase)]
pub enum PrefixSearch {
    #[default]
    IndexingTime,
    Disabled,
}

/// `typoTolerance`; each field is itself three-state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, Deserr)]
#[serde(rename_all = "camelCase")]
#[deserr(rename_all = camelCase, deny_unknown_fields, where_predicate = __Deserr_E: deserr::MergeWithError<JsonError<codes::InvalidSettingsTypoTolerance>>)]
pub struct TypoSettings {
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    #[deserr(default)]
    pub enabled: Setting<bool>,
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    #[deserr(default)]
    pub min_word_size_for_typos: Setting<MinWordSizeTypos>,
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    #[deserr(default)]
    pub disable_on_words: Setting<BTreeSet<String>>,
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    #[deserr(default)]
    pub disable_on_attributes: Setting<BTreeSet<String>>,
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    #[deserr(default)]
    pub disable_on_numbers: Setting<bool>,
}

/// `typoTolerance.minWordSizeForTypos`; both given values must satisfy one ≤ two.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, Deserr)]
#[serde(rename_all = "camelCase")]
#[deserr(rename_all = camelCase, deny_unknown_fields, validate = validate_min_word_sizes -> JsonError<codes::InvalidSettingsTypoTolerance>)]
pub struct MinWordSizeTypos {
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    #[deserr(default)]
    pub one_typo: Setting<u8>,
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    #[deserr(default)]
    pub two_typos: Setting<u8>,
}

/// The message when `oneTypo` > `twoTypos`.
pub fn min_word_sizes_message(one_typo: u8, two_typos: u8) -> String {
    format!(
        "`minWordSizeForTypos` setting is invalid. `oneTypo` and `twoTypos` fields should be between `0` and `255`, and `twoTypos` should be greater or equals to `oneTypo` but found `oneTypo: {one_typo}` and twoTypos: {two_typos}`."
    )
}

fn validate_min_word_sizes<E: DeserializeError>(
    sizes: MinWordSizeTypos,
    location: ValuePointerRef,
) -> Result<MinWordSizeTypos, E> {
    let (&Setting::Set(one), &Setting::Set(two)) = (&sizes.one_typo, &sizes.two_typos) else {
        return Ok(sizes);
    };
    if one > two {
        let kind: ErrorKind<'_, serde_json::Value> = ErrorKind::Unexpected {
            msg: min_word_sizes_message(one, two),
        };
        return Err(deserr::take_cf_content(E::error(None, kind, location)));
    }
    Ok(sizes)
}

/// `faceting`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, Deserr)]
#[serde(rename_all = "camelCase")]
#[deserr(rename_all = camelCase, deny_unknown_fields)]
pub struct FacetingSettings {
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    #[deserr(default)]
    pub max_values_per_facet: Setting<usize>,
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    #[deserr(default)]
    pub sort_facet_values_by: Setting<BTreeMap<String, FacetValuesSort>>,
}

/// How facet values are ordered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, Deserr)]
#[serde(rename_all = "camelCase")]
#[deserr(rename_all = camelCase)]
pub enum FacetValuesSort {
    #[default]
    Alpha,
    Count,
}

/// `pagination`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, Deserr)]
#[serde(rename_all = "camelCase")]
#[deserr(rename_all = camelCase, deny_unknown_fields)]
pub struct PaginationSettings {
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    #[deserr(default)]
    pub max_total_hits: Setting<std::num::NonZeroUsize>,
}

/// One `localizedAttributes` rule (unknown keys are ignored, as in Meilisearch).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Deserr)]
#[serde(rename_all = "camelCase")]
#[deserr(rename_all = camelCase)]
pub struct LocalizedAttributesRule {
    pub attribute_patterns: Vec<String>,
    pub locales: Vec<Locale>,
}

/// The index-level `chat` settings; each field three-state, `searchParameters` merged
/// field by field ([`super::chat_search`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Deserr)]
#[serde(rename_all = "camelCase")]
#[deserr(rename_all = camelCase, deny_unknown_fields)]
pub struct ChatSettings {
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    #[deserr(default)]
    pub description: Setting<String>,
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    #[deserr(default)]
    pub document_template: Setting<String>,
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    #[deserr(default)]
    pub document_template_max_bytes: Setting<usize>,
    #[serde(default, skip_serializing_if = "Setting::is_not_set")]
    #[deserr(default)]
    pub search_parameters: Setting<super::chat_search::ChatSearchParameters>,
}

/// One embedder's settings as given: a JSON object whose fields are kept verbatim (each
/// `null` field is a reset). Decoding checks each field's type; the source-specific checks,
/// the merge and the read view are in [`super::embedders`]. It is written (task content and
/// details) with its fields in Meilisearch's order.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(transparent)]
pub struct EmbedderSettings(pub serde_json::Map<String, serde_json::Value>);

impl Serialize for EmbedderSettings {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        super::embedders::fields::in_wire_order(&self.0).serialize(serializer)
    }
}

impl<E: DeserializeError> Deserr<E> for EmbedderSettings {
    fn deserialize_from_value<V: deserr::IntoValue>(
        value: deserr::Value<V>,
        location: ValuePointerRef,
    ) -> Result<Self, E> {
        super::embedders::decode_embedder(value, location).map(EmbedderSettings)
    }
}
