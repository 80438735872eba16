//! The text settings of an index as one plain value: what is searchable, how text is cut into
//! words (stop words, separators, dictionary), synonyms, typo tolerance, ranking rules,
//! proximity precision, the distinct attribute and the fields' languages.
//!
//! Invariants: the settings are validated by the settings route before they get here (names,
//! rule syntax, `attribute` not mixed with `attributeRank`/`wordPosition`); the stored form is
//! JSON, versioned by [`TEXT_SETTINGS_FORMAT_VERSION`]. Only [`TextSettings::index_key`]'s parts
//! change what the inverted index holds; the rest are read at query time.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::locales::LocalizedRule;

/// Version of the stored JSON form of [`TextSettings`].
pub const TEXT_SETTINGS_FORMAT_VERSION: u32 = 1;
/// Meilisearch's default `minWordSizeForTypos.oneTypo`.
pub const ONE_TYPO_WORD_CHARACTERS_MIN: u8 = 5;
/// Meilisearch's default `minWordSizeForTypos.twoTypos`.
pub const TWO_TYPOS_WORD_CHARACTERS_MIN: u8 = 9;

/// One ranking rule, in the order given by the `rankingRules` setting.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum RankingRule {
    Words,
    Typo,
    Proximity,
    /// `attribute`: attribute rank then word position, reported as one rule.
    Attribute,
    AttributeRank,
    WordPosition,
    Sort,
    Exactness,
    /// `field:asc` (`true`) or `field:desc`.
    Custom {
        field: String,
        ascending: bool,
    },
}

impl RankingRule {
    /// Parses one `rankingRules` item; `None` when it is not a rule.
    pub fn parse(text: &str) -> Option<RankingRule> {
        Some(match text {
            "words" => RankingRule::Words,
            "typo" => RankingRule::Typo,
            "proximity" => RankingRule::Proximity,
            "attribute" => RankingRule::Attribute,
            "attributeRank" => RankingRule::AttributeRank,
            "wordPosition" => RankingRule::WordPosition,
            "sort" => RankingRule::Sort,
            "exactness" => RankingRule::Exactness,
            other => {
                let (field, direction) = other.rsplit_once(':')?;
                let ascending = match direction {
                    "asc" => true,
                    "desc" => false,
                    _ => return None,
                };
                if field.is_empty() {
                    return None;
                }
                RankingRule::Custom {
                    field: field.to_owned(),
                    ascending,
                }
            }
        })
    }

    /// Meilisearch 1.41's default `rankingRules`.
    pub fn defaults() -> Vec<RankingRule> {
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
}

/// `proximityPrecision`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum ProximityPrecision {
    #[default]
    ByWord,
    ByAttribute,
}

/// `typoTolerance`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TypoTolerance {
    pub enabled: bool,
    /// Characters a query word needs before one typo is allowed.
    pub one_typo_characters_min: u8,
    /// Characters a query word needs before two typos are allowed.
    pub two_typos_characters_min: u8,
    /// Query words (normalized) that never match with typos.
    pub disable_on_words: BTreeSet<String>,
    /// Fields whose words only match exactly (or as prefixes), never with typos.
    pub disable_on_attributes: BTreeSet<String>,
    /// Numbers never match with typos.
    pub disable_on_numbers: bool,
}

impl Default for TypoTolerance {
    fn default() -> Self {
        TypoTolerance {
            enabled: true,
            one_typo_characters_min: ONE_TYPO_WORD_CHARACTERS_MIN,
            two_typos_characters_min: TWO_TYPOS_WORD_CHARACTERS_MIN,
            disable_on_words: BTreeSet::new(),
            disable_on_attributes: BTreeSet::new(),
            disable_on_numbers: false,
        }
    }
}

/// The text settings of an index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TextSettings {
    /// `None` (or a list holding `"*"`) is every field, all with the same weight. Otherwise
    /// the listed fields (and the fields nested under them), weighted by their index in the
    /// list.
    pub searchable_attributes: Option<Vec<String>>,
    pub stop_words: BTreeSet<String>,
    /// Word or words → what they also match (one way: list both directions for mutual ones).
    pub synonyms: BTreeMap<String, Vec<String>>,
    pub separator_tokens: BTreeSet<String>,
    pub non_separator_tokens: BTreeSet<String>,
    pub dictionary: BTreeSet<String>,
    pub typo_tolerance: TypoTolerance,
    pub ranking_rules: Vec<RankingRule>,
    pub proximity_precision: ProximityPrecision,
    pub distinct_attribute: Option<String>,
    /// `prefixSearch`: whether the last query word also matches the words it starts
    /// (`indexingTime`) or only itself (`disabled`).
    #[serde(default = "prefix_search_default")]
    pub prefix_search: bool,
    /// `localizedAttributes`: the languages of the fields they match (see [`super::locales`]).
    #[serde(default)]
    pub localized_attributes: Vec<LocalizedRule>,
}

/// `prefixSearch` when a stored form predates it: `indexingTime`.
fn prefix_search_default() -> bool {
    true
}

impl Default for TextSettings {
    fn default() -> Self {
        TextSettings {
            searchable_attributes: None,
            stop_words: BTreeSet::new(),
            synonyms: BTreeMap::new(),
            separator_tokens: BTreeSet::new(),
            non_separator_tokens: BTreeSet::new(),
            dictionary: BTreeSet::new(),
            typo_tolerance: TypoTolerance::default(),
            ranking_rules: RankingRule::defaults(),
            proximity_precision: ProximityPrecision::default(),
            distinct_attribute: None,
            prefix_search: true,
            localized_attributes: Vec::new(),
        }
    }
}

/// The parts of [`TextSettings`] that decide the contents of the inverted index.
#[derive(Debug, PartialEq, Eq)]
pub struct IndexKey<'a> {
    searchable_attributes: &'a Option<Vec<String>>,
    stop_words: &'a BTreeSet<String>,
    separator_tokens: &'a BTreeSet<String>,
    non_separator_tokens: &'a BTreeSet<String>,
    dictionary: &'a BTreeSet<String>,
    localized_attributes: &'a [LocalizedRule],
}

#[derive(Serialize, Deserialize)]
struct Stored {
    version: u32,
    settings: TextSettings,
}

impl TextSettings {
    /// What the inverted index depends on: when it differs, the index must be rebuilt.
    pub fn index_key(&self) -> IndexKey<'_> {
        IndexKey {
            searchable_attributes: &self.searchable_attributes,
            stop_words: &self.stop_words,
            separator_tokens: &self.separator_tokens,
            non_separator_tokens: &self.non_separator_tokens,
            dictionary: &self.dictionary,
            localized_attributes: &self.localized_attributes,
        }
    }

    /// The listed searchable attributes; `None` for every field (no list, or `"*"` listed).
    fn searchable_list(&self) -> Option<&Vec<String>> {
        self.searchable_attributes
            .as_ref()
            .filter(|list| !list.iter().any(|attribute| attribute == "*"))
    }

    /// The weight of a field path for the attribute rank (0 is best), `None` when the path is
    /// not searchable. A path is searchable when it is listed or nested under a listed field.
    pub fn field_weight(&self, path: &str) -> Option<u16> {
        let Some(list) = self.searchable_list() else {
            return Some(0);
        };
        list.iter()
            .position(|attribute| {
                path == attribute
                    || (path.starts_with(attribute.as_str())
                        && path.as_bytes().get(attribute.len()) == Some(&b'.'))
            })
            .map(|index| u16::try_from(index).unwrap_or(u16::MAX))
    }

    /// Whether any field nested at or below the top-level `key` can be searchable.
    pub fn may_search_under(&self, key: &str) -> bool {
        let Some(list) = self.searchable_list() else {
            return true;
        };
        list.iter().any(|attribute| {
            attribute == key
                || (attribute.starts_with(key)
                    && attribute.as_bytes().get(key.len()) == Some(&b'.'))
                || (key.starts_with(attribute.as_str())
                    && key.as_bytes().get(attribute.len()) == Some(&b'.'))
        })
    }

    /// The largest field weight (the attribute rank's worst cost per query term).
    pub fn weight_max(&self) -> u16 {
        match self.searchable_list() {
            None => 0,
            Some(list) => u16::try_from(list.len().saturating_sub(1)).unwrap_or(u16::MAX),
        }
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let stored = Stored {
            version: TEXT_SETTINGS_FORMAT_VERSION,
            settings: self.clone(),
        };
        serde_json::to_vec(&stored).expect("text settings always serialize")
    }

    /// `None` when the bytes are not a stored form this code reads.
    pub fn from_bytes(bytes: &[u8]) -> Option<TextSettings> {
        let stored: Stored = serde_json::from_slice(bytes).ok()?;
        (stored.version == TEXT_SETTINGS_FORMAT_VERSION).then_some(stored.settings)
    }
}
