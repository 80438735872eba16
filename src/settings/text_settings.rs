//! The text settings a shard's inverted index and ranking need, from an index's stored
//! settings. Invariant: two stored settings that search the same way give equal
//! [`TextSettings`], so comparing them tells whether the shards must be told (and maybe
//! rebuild their inverted index).

use shards::analysis::{
    LocalizedRule, ProximityPrecision, RankingRule, TextSettings, TypoTolerance,
};

use crate::settings::apply::StoredSettings;
use crate::settings::model::{PrefixSearch, ProximityPrecision as StoredProximityPrecision};
use crate::settings::ranking_rule::RankingRule as StoredRankingRule;

/// The shard's view of `settings`.
pub fn text_settings(settings: &StoredSettings) -> TextSettings {
    TextSettings {
        searchable_attributes: settings.searchable_attributes.clone(),
        stop_words: settings.stop_words.clone(),
        synonyms: settings.synonyms.clone(),
        separator_tokens: settings.separator_tokens.clone(),
        non_separator_tokens: settings.non_separator_tokens.clone(),
        dictionary: settings.dictionary.clone(),
        typo_tolerance: TypoTolerance {
            enabled: settings.typo_enabled,
            one_typo_characters_min: settings.min_word_size_one_typo,
            two_typos_characters_min: settings.min_word_size_two_typos,
            disable_on_words: settings.disable_on_words.clone(),
            disable_on_attributes: settings.disable_on_attributes.clone(),
            disable_on_numbers: settings.disable_on_numbers,
        },
        ranking_rules: settings.ranking_rules.iter().map(ranking_rule).collect(),
        proximity_precision: match settings.proximity_precision {
            StoredProximityPrecision::ByWord => ProximityPrecision::ByWord,
            StoredProximityPrecision::ByAttribute => ProximityPrecision::ByAttribute,
        },
        distinct_attribute: settings.distinct_attribute.clone(),
        prefix_search: settings.prefix_search != PrefixSearch::Disabled,
        localized_attributes: settings
            .localized_attributes
            .iter()
            .flatten()
            .map(|rule| LocalizedRule {
                attribute_patterns: rule.attribute_patterns.clone(),
                locales: rule
                    .locales
                    .iter()
                    .map(|locale| locale.canonical().to_owned())
                    .collect(),
            })
            .collect(),
    }
}

fn ranking_rule(rule: &StoredRankingRule) -> RankingRule {
    match rule {
        StoredRankingRule::Words => RankingRule::Words,
        StoredRankingRule::Typo => RankingRule::Typo,
        StoredRankingRule::Proximity => RankingRule::Proximity,
        StoredRankingRule::Attribute => RankingRule::Attribute,
        StoredRankingRule::AttributeRank => RankingRule::AttributeRank,
        StoredRankingRule::WordPosition => RankingRule::WordPosition,
        StoredRankingRule::Sort => RankingRule::Sort,
        StoredRankingRule::Exactness => RankingRule::Exactness,
        StoredRankingRule::Asc(field) => RankingRule::Custom {
            field: field.clone(),
            ascending: true,
        },
        StoredRankingRule::Desc(field) => RankingRule::Custom {
            field: field.clone(),
            ascending: false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_stored_settings_give_the_shards_default_text_settings() {
        assert_eq!(
            text_settings(&StoredSettings::default()),
            TextSettings::default()
        );
    }
}
