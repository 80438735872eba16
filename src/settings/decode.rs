//! Decoding of settings requests: the `PATCH /settings` body, every sub-route body (the
//! bare value, `null` = reset, errors located at the root and carrying the setting's code),
//! the sub-route table, and the enqueue-time checks (feature gates, ranking-rule mixing).

use deserr::Deserr;

use super::embedders::check_embedder_update;
use super::model::{
    ChatSettings, EmbedderSettings, FacetingSettings, FilterableAttributesRule, ForeignKey,
    LocalizedAttributesRule, PaginationSettings, PrefixSearch, ProximityPrecision, RankingRule,
    Setting, Settings, TypoSettings,
};
use super::ranking_rule::{MIXED_ATTRIBUTE_RULES_MESSAGE, mixes_attribute_rules};
use crate::decode::{JsonError, decode_json_value};
use crate::errors::{Code, ResponseError, codes};

/// The HTTP verb that updates a sub-route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateVerb {
    Put,
    Patch,
}

/// One settings sub-route: `/indexes/{uid}/settings/<segment>`; GET, DELETE and `verb`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubRoute {
    pub segment: &'static str,
    pub setting: &'static str,
    pub verb: UpdateVerb,
}

/// Every sub-route in Meilisearch's registration order.
pub const SUB_ROUTES: [SubRoute; 22] = [
    sub(
        "filterable-attributes",
        "filterableAttributes",
        UpdateVerb::Put,
    ),
    sub("sortable-attributes", "sortableAttributes", UpdateVerb::Put),
    sub(
        "displayed-attributes",
        "displayedAttributes",
        UpdateVerb::Put,
    ),
    sub("typo-tolerance", "typoTolerance", UpdateVerb::Patch),
    sub(
        "searchable-attributes",
        "searchableAttributes",
        UpdateVerb::Put,
    ),
    sub("stop-words", "stopWords", UpdateVerb::Put),
    sub(
        "non-separator-tokens",
        "nonSeparatorTokens",
        UpdateVerb::Put,
    ),
    sub("separator-tokens", "separatorTokens", UpdateVerb::Put),
    sub("dictionary", "dictionary", UpdateVerb::Put),
    sub("synonyms", "synonyms", UpdateVerb::Put),
    sub("distinct-attribute", "distinctAttribute", UpdateVerb::Put),
    sub("proximity-precision", "proximityPrecision", UpdateVerb::Put),
    sub(
        "localized-attributes",
        "localizedAttributes",
        UpdateVerb::Put,
    ),
    sub("ranking-rules", "rankingRules", UpdateVerb::Put),
    sub("faceting", "faceting", UpdateVerb::Patch),
    sub("pagination", "pagination", UpdateVerb::Patch),
    sub("embedders", "embedders", UpdateVerb::Patch),
    sub("search-cutoff-ms", "searchCutoffMs", UpdateVerb::Put),
    sub("facet-search", "facetSearch", UpdateVerb::Put),
    sub("prefix-search", "prefixSearch", UpdateVerb::Put),
    sub("chat", "chat", UpdateVerb::Patch),
    sub("foreign-keys", "foreignKeys", UpdateVerb::Put),
];

const fn sub(segment: &'static str, setting: &'static str, verb: UpdateVerb) -> SubRoute {
    SubRoute {
        segment,
        setting,
        verb,
    }
}

/// The sub-route of a path segment.
pub fn sub_route(segment: &str) -> Option<&'static SubRoute> {
    SUB_ROUTES.iter().find(|route| route.segment == segment)
}

/// Decodes a parsed `PATCH /settings` body.
pub fn decode_settings_body(body: serde_json::Value) -> Result<Settings, ResponseError> {
    decode_json_value::<Settings, JsonError>(body)
}

/// A sub-route body (`null` = reset) decoded with the setting's error code `C`.
fn sub_value<T, C>(body: serde_json::Value) -> Result<Setting<T>, ResponseError>
where
    T: Deserr<JsonError<C>>,
    C: crate::errors::CodeMarker,
{
    decode_json_value::<Option<T>, JsonError<C>>(body).map(Setting::from)
}

/// Decodes the body of an update to `segment` into a settings update that changes only
/// that setting; `None` when the segment is not a settings sub-route.
pub fn decode_sub_route_body(
    segment: &str,
    body: serde_json::Value,
) -> Option<Result<Settings, ResponseError>> {
    let mut settings = Settings::default();
    let result = match segment {
        "filterable-attributes" => sub_value::<
            Vec<FilterableAttributesRule>,
            codes::InvalidSettingsFilterableAttributes,
        >(body)
        .map(|value| settings.filterable_attributes = value),
        "sortable-attributes" => sub_value::<_, codes::InvalidSettingsSortableAttributes>(body)
            .map(|value| settings.sortable_attributes = value),
        "displayed-attributes" => sub_value::<_, codes::InvalidSettingsDisplayedAttributes>(body)
            .map(|value| settings.displayed_attributes = value),
        "typo-tolerance" => sub_value::<TypoSettings, codes::InvalidSettingsTypoTolerance>(body)
            .map(|value| settings.typo_tolerance = value),
        "searchable-attributes" => sub_value::<_, codes::InvalidSettingsSearchableAttributes>(body)
            .map(|value| settings.searchable_attributes = value),
        "stop-words" => sub_value::<_, codes::InvalidSettingsStopWords>(body)
            .map(|value| settings.stop_words = value),
        "non-separator-tokens" => sub_value::<_, codes::InvalidSettingsNonSeparatorTokens>(body)
            .map(|value| settings.non_separator_tokens = value),
        "separator-tokens" => sub_value::<_, codes::InvalidSettingsSeparatorTokens>(body)
            .map(|value| settings.separator_tokens = value),
        "dictionary" => sub_value::<_, codes::InvalidSettingsDictionary>(body)
            .map(|value| settings.dictionary = value),
        "synonyms" => sub_value::<_, codes::InvalidSettingsSynonyms>(body)
            .map(|value| settings.synonyms = value),
        "distinct-attribute" => sub_value::<_, codes::InvalidSettingsDistinctAttribute>(body)
            .map(|value| settings.distinct_attribute = value),
        "proximity-precision" => {
            sub_value::<ProximityPrecision, codes::InvalidSettingsProximityPrecision>(body)
                .map(|value| settings.proximity_precision = value)
        }
        "localized-attributes" => sub_value::<
            Vec<LocalizedAttributesRule>,
            codes::InvalidSettingsLocalizedAttributes,
        >(body)
        .map(|value| settings.localized_attributes = value),
        "ranking-rules" => sub_value::<Vec<RankingRule>, codes::InvalidSettingsRankingRules>(body)
            .map(|value| settings.ranking_rules = value),
        "faceting" => sub_value::<FacetingSettings, codes::InvalidSettingsFaceting>(body)
            .map(|value| settings.faceting = value),
        "pagination" => sub_value::<PaginationSettings, codes::InvalidSettingsPagination>(body)
            .map(|value| settings.pagination = value),
        "embedders" => sub_value::<
            std::collections::BTreeMap<String, Setting<EmbedderSettings>>,
            codes::InvalidSettingsEmbedders,
        >(body)
        .map(|value| settings.embedders = value),
        "search-cutoff-ms" => sub_value::<u64, codes::InvalidSettingsSearchCutoffMs>(body)
            .map(|value| settings.search_cutoff_ms = value),
        "facet-search" => sub_value::<bool, codes::InvalidSettingsFacetSearch>(body)
            .map(|value| settings.facet_search = value),
        "prefix-search" => sub_value::<PrefixSearch, codes::InvalidSettingsPrefixSearch>(body)
            .map(|value| settings.prefix_search = value),
        "chat" => sub_value::<ChatSettings, codes::InvalidSettingsIndexChat>(body)
            .map(|value| settings.chat = value),
        "foreign-keys" => sub_value::<Vec<ForeignKey>, codes::InvalidSettingsForeignKeys>(body)
            .map(|value| settings.foreign_keys = value),
        _ => return None,
    };
    Some(result.map(|()| settings))
}

/// The update of `DELETE /settings/<segment>`: that setting reset.
pub fn reset_sub_route(segment: &str) -> Option<Settings> {
    let mut settings = Settings::default();
    match segment {
        "filterable-attributes" => settings.filterable_attributes = Setting::Reset,
        "sortable-attributes" => settings.sortable_attributes = Setting::Reset,
        "displayed-attributes" => settings.displayed_attributes = Setting::Reset,
        "typo-tolerance" => settings.typo_tolerance = Setting::Reset,
        "searchable-attributes" => settings.searchable_attributes = Setting::Reset,
        "stop-words" => settings.stop_words = Setting::Reset,
        "non-separator-tokens" => settings.non_separator_tokens = Setting::Reset,
        "separator-tokens" => settings.separator_tokens = Setting::Reset,
        "dictionary" => settings.dictionary = Setting::Reset,
        "synonyms" => settings.synonyms = Setting::Reset,
        "distinct-attribute" => settings.distinct_attribute = Setting::Reset,
        "proximity-precision" => settings.proximity_precision = Setting::Reset,
        "localized-attributes" => settings.localized_attributes = Setting::Reset,
        "ranking-rules" => settings.ranking_rules = Setting::Reset,
        "faceting" => settings.faceting = Setting::Reset,
        "pagination" => settings.pagination = Setting::Reset,
        "embedders" => settings.embedders = Setting::Reset,
        "search-cutoff-ms" => settings.search_cutoff_ms = Setting::Reset,
        "facet-search" => settings.facet_search = Setting::Reset,
        "prefix-search" => settings.prefix_search = Setting::Reset,
        "chat" => settings.chat = Setting::Reset,
        "foreign-keys" => settings.foreign_keys = Setting::Reset,
        _ => return None,
    }
    Some(settings)
}

/// The experimental features the settings checks depend on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SettingsFeatures {
    pub chat_completions: bool,
    pub foreign_keys: bool,
    pub composite_embedders: bool,
    pub multimodal: bool,
}

const CHAT_COMPLETIONS_LINK: &str = "https://github.com/orgs/meilisearch/discussions/835";
const FOREIGN_KEYS_LINK: &str = "https://github.com/orgs/meilisearch/discussions/873";
const COMPOSITE_EMBEDDERS_LINK: &str = "https://github.com/orgs/meilisearch/discussions/816";
const MULTIMODAL_LINK: &str = "https://github.com/orgs/meilisearch/discussions/846";

/// The enqueue-time checks of an update, in Meilisearch's order: embedder feature gates,
/// chat, foreign keys, ranking-rule mixing, then each embedder's fields.
pub fn validate_update(
    settings: &Settings,
    features: SettingsFeatures,
) -> Result<(), ResponseError> {
    check_embedder_features(settings, features)?;
    if matches!(settings.chat, Setting::Set(_)) && !features.chat_completions {
        return Err(ResponseError::feature_not_enabled(
            "setting `chat` in the index settings",
            "chat completions",
            CHAT_COMPLETIONS_LINK,
        ));
    }
    if matches!(settings.foreign_keys, Setting::Set(_)) && !features.foreign_keys {
        return Err(ResponseError::feature_not_enabled(
            "setting `foreignKeys` in the index settings",
            "foreign_keys",
            FOREIGN_KEYS_LINK,
        ));
    }
    let mixed = match &settings.ranking_rules {
        Setting::Set(rules) => mixes_attribute_rules(rules),
        Setting::Reset | Setting::NotSet => false,
    };
    if mixed {
        return Err(ResponseError::new(
            Code::InvalidSettingsRankingRules,
            MIXED_ATTRIBUTE_RULES_MESSAGE,
        ));
    }
    check_embedders_update(settings)
}

/// Every embedder of an update through the enqueue-time embedder checks.
fn check_embedders_update(settings: &Settings) -> Result<(), ResponseError> {
    let Setting::Set(embedders) = &settings.embedders else {
        return Ok(());
    };
    for (name, embedder) in embedders {
        if let Setting::Set(EmbedderSettings(fields)) = embedder {
            check_embedder_update(name, fields)?;
        }
    }
    Ok(())
}

fn check_embedder_features(
    settings: &Settings,
    features: SettingsFeatures,
) -> Result<(), ResponseError> {
    let Setting::Set(embedders) = &settings.embedders else {
        return Ok(());
    };
    for embedder in embedders.values() {
        let Setting::Set(EmbedderSettings(fields)) = embedder else {
            continue;
        };
        let is_set = |name: &str| fields.get(name).is_some_and(|value| !value.is_null());
        let composite_checks = [
            (
                fields.get("source").and_then(|value| value.as_str()) == Some("composite"),
                "using `\"composite\"` as source",
            ),
            (is_set("searchEmbedder"), "setting `searchEmbedder`"),
            (is_set("indexingEmbedder"), "setting `indexingEmbedder`"),
        ];
        for (used, action) in composite_checks {
            if used && !features.composite_embedders {
                return Err(ResponseError::feature_not_enabled(
                    action,
                    "composite embedders",
                    COMPOSITE_EMBEDDERS_LINK,
                ));
            }
        }
        for (name, action) in [
            ("indexingFragments", "setting `indexingFragments`"),
            ("searchFragments", "setting `searchFragments`"),
        ] {
            if is_set(name) && !features.multimodal {
                return Err(ResponseError::feature_not_enabled(
                    action,
                    "multimodal",
                    MULTIMODAL_LINK,
                ));
            }
        }
    }
    Ok(())
}
