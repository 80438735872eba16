//! Stored settings of an index: merging an update onto them (the task's work), the
//! `GET /settings` view, a sub-route's view, and the content and `details` of a
//! `settingsUpdate` task (the content keeps embedder API keys, the details mask them).
//!
//! Invariants: a [`StoredSettings`] always satisfies `oneTypo ≤ twoTypos`; it holds no
//! `*` in displayed/searchable attributes (a `*` anywhere means "every attribute", `None`);
//! its serde form carries [`STORED_SETTINGS_VERSION`].

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::embedders::apply_embedders_update;
use super::embedders::view::{embedder_view, embedder_view_revealing_api_key};
use super::model::{
    ChatSettings, DEFAULT_DOCUMENT_TEMPLATE, DEFAULT_DOCUMENT_TEMPLATE_MAX_BYTES,
    DEFAULT_MAX_TOTAL_HITS, DEFAULT_MAX_VALUES_PER_FACET, DEFAULT_MIN_WORD_SIZE_ONE_TYPO,
    DEFAULT_MIN_WORD_SIZE_TWO_TYPOS, FacetValuesSort, FilterableAttributesRule, ForeignKey,
    LocalizedAttributesRule, PrefixSearch, ProximityPrecision, RankingRule, Setting, Settings,
    WILDCARD, min_word_sizes_message,
};
use super::ranking_rule::default_ranking_rules;
use crate::auth::masked_secret::masked_secret;
use crate::errors::{Code, ResponseError};

/// Version of the persisted form of [`StoredSettings`].
pub const STORED_SETTINGS_VERSION: u32 = 1;

/// The facet sort key that applies to every facet.
const EVERY_FACET: &str = "*";

/// The settings of one index, defaults included.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredSettings {
    pub version: u32,
    pub displayed_attributes: Option<Vec<String>>,
    pub searchable_attributes: Option<Vec<String>>,
    pub filterable_attributes: Vec<FilterableAttributesRule>,
    pub sortable_attributes: BTreeSet<String>,
    pub foreign_keys: Vec<ForeignKey>,
    pub ranking_rules: Vec<RankingRule>,
    pub stop_words: BTreeSet<String>,
    pub non_separator_tokens: BTreeSet<String>,
    pub separator_tokens: BTreeSet<String>,
    pub dictionary: BTreeSet<String>,
    pub synonyms: BTreeMap<String, Vec<String>>,
    pub distinct_attribute: Option<String>,
    pub proximity_precision: ProximityPrecision,
    pub typo_enabled: bool,
    pub min_word_size_one_typo: u8,
    pub min_word_size_two_typos: u8,
    pub disable_on_words: BTreeSet<String>,
    pub disable_on_attributes: BTreeSet<String>,
    pub disable_on_numbers: bool,
    pub max_values_per_facet: usize,
    pub sort_facet_values_by: BTreeMap<String, FacetValuesSort>,
    pub max_total_hits: usize,
    pub embedders: BTreeMap<String, Map<String, Value>>,
    pub search_cutoff_ms: Option<u64>,
    pub localized_attributes: Option<Vec<LocalizedAttributesRule>>,
    pub facet_search: bool,
    pub prefix_search: PrefixSearch,
    pub chat_description: String,
    pub chat_document_template: String,
    pub chat_document_template_max_bytes: usize,
    pub chat_search_parameters: Value,
    /// The dimensions of the embedders that do not state them, found by embedding a test
    /// text when their settings changed (never shown: Meilisearch shows none either).
    #[serde(default)]
    pub inferred_dimensions: BTreeMap<String, usize>,
}

impl Default for StoredSettings {
    fn default() -> Self {
        StoredSettings {
            version: STORED_SETTINGS_VERSION,
            displayed_attributes: None,
            searchable_attributes: None,
            filterable_attributes: Vec::new(),
            sortable_attributes: BTreeSet::new(),
            foreign_keys: Vec::new(),
            ranking_rules: default_ranking_rules(),
            stop_words: BTreeSet::new(),
            non_separator_tokens: BTreeSet::new(),
            separator_tokens: BTreeSet::new(),
            dictionary: BTreeSet::new(),
            synonyms: BTreeMap::new(),
            distinct_attribute: None,
            proximity_precision: ProximityPrecision::ByWord,
            typo_enabled: true,
            min_word_size_one_typo: DEFAULT_MIN_WORD_SIZE_ONE_TYPO,
            min_word_size_two_typos: DEFAULT_MIN_WORD_SIZE_TWO_TYPOS,
            disable_on_words: BTreeSet::new(),
            disable_on_attributes: BTreeSet::new(),
            disable_on_numbers: false,
            max_values_per_facet: DEFAULT_MAX_VALUES_PER_FACET,
            sort_facet_values_by: default_facet_sort(),
            max_total_hits: DEFAULT_MAX_TOTAL_HITS,
            embedders: BTreeMap::new(),
            search_cutoff_ms: None,
            localized_attributes: None,
            facet_search: true,
            prefix_search: PrefixSearch::IndexingTime,
            chat_description: String::new(),
            chat_document_template: DEFAULT_DOCUMENT_TEMPLATE.to_owned(),
            chat_document_template_max_bytes: DEFAULT_DOCUMENT_TEMPLATE_MAX_BYTES,
            chat_search_parameters: Value::Object(Map::new()),
            inferred_dimensions: BTreeMap::new(),
        }
    }
}

fn default_facet_sort() -> BTreeMap<String, FacetValuesSort> {
    BTreeMap::from([(EVERY_FACET.to_owned(), FacetValuesSort::Alpha)])
}

/// `Set` with a `*` anywhere means every attribute.
fn wildcard_attributes(setting: Setting<Vec<String>>, current: &mut Option<Vec<String>>) {
    match setting {
        Setting::Set(fields) if !fields.iter().any(|field| field == WILDCARD) => {
            *current = Some(fields)
        }
        Setting::Set(_) | Setting::Reset => *current = None,
        Setting::NotSet => {}
    }
}

impl StoredSettings {
    /// Persisted form (JSON with a version field).
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("stored settings always serialize")
    }

    /// Reads a persisted form; refuses unknown versions.
    pub fn from_bytes(bytes: &[u8]) -> Result<StoredSettings, ResponseError> {
        let stored: StoredSettings =
            serde_json::from_slice(bytes).map_err(ResponseError::internal)?;
        if stored.version != STORED_SETTINGS_VERSION {
            return Err(ResponseError::internal(format!(
                "unsupported stored settings version {}",
                stored.version
            )));
        }
        Ok(stored)
    }

    /// Applies an update (the work of a `settingsUpdate` task). Fails, leaving `self`
    /// unchanged, when the result would be invalid (an embedder refused by the merged-embedder
    /// checks, typo word sizes out of order).
    pub fn apply(&mut self, mut update: Settings) -> Result<(), ResponseError> {
        let embedders = std::mem::replace(&mut update.embedders, Setting::NotSet);
        let mut next = self.clone();
        next.embedders = apply_embedders_update(&self.embedders, embedders)?;
        next.apply_unchecked(update);
        if next.min_word_size_one_typo > next.min_word_size_two_typos {
            return Err(ResponseError::new(
                Code::InvalidSettingsTypoTolerance,
                min_word_sizes_message(next.min_word_size_one_typo, next.min_word_size_two_typos),
            ));
        }
        *self = next;
        Ok(())
    }

    fn apply_unchecked(&mut self, update: Settings) {
        let defaults = StoredSettings::default();
        wildcard_attributes(update.displayed_attributes, &mut self.displayed_attributes);
        wildcard_attributes(
            update.searchable_attributes,
            &mut self.searchable_attributes,
        );
        update
            .filterable_attributes
            .apply_to(&mut self.filterable_attributes, Vec::new);
        update
            .sortable_attributes
            .apply_to(&mut self.sortable_attributes, BTreeSet::new);
        update
            .foreign_keys
            .apply_to(&mut self.foreign_keys, Vec::new);
        update
            .ranking_rules
            .apply_to(&mut self.ranking_rules, default_ranking_rules);
        update
            .stop_words
            .apply_to(&mut self.stop_words, BTreeSet::new);
        update
            .non_separator_tokens
            .apply_to(&mut self.non_separator_tokens, BTreeSet::new);
        update
            .separator_tokens
            .apply_to(&mut self.separator_tokens, BTreeSet::new);
        update
            .dictionary
            .apply_to(&mut self.dictionary, BTreeSet::new);
        update.synonyms.apply_to(&mut self.synonyms, BTreeMap::new);
        optional(update.distinct_attribute, &mut self.distinct_attribute);
        update
            .proximity_precision
            .apply_to(&mut self.proximity_precision, Default::default);
        self.apply_typo(update.typo_tolerance, &defaults);
        self.apply_faceting(update.faceting);
        match update.pagination {
            Setting::Set(pagination) => pagination
                .max_total_hits
                .map_or_default(&mut self.max_total_hits, DEFAULT_MAX_TOTAL_HITS),
            Setting::Reset => self.max_total_hits = DEFAULT_MAX_TOTAL_HITS,
            Setting::NotSet => {}
        }
        optional(update.search_cutoff_ms, &mut self.search_cutoff_ms);
        optional(update.localized_attributes, &mut self.localized_attributes);
        update
            .facet_search
            .apply_to(&mut self.facet_search, || true);
        update
            .prefix_search
            .apply_to(&mut self.prefix_search, Default::default);
        self.apply_chat(update.chat, &defaults);
    }

    fn apply_typo(
        &mut self,
        update: Setting<super::model::TypoSettings>,
        defaults: &StoredSettings,
    ) {
        let typo = match update {
            Setting::Set(typo) => typo,
            Setting::Reset => {
                self.typo_enabled = defaults.typo_enabled;
                self.min_word_size_one_typo = defaults.min_word_size_one_typo;
                self.min_word_size_two_typos = defaults.min_word_size_two_typos;
                self.disable_on_words.clear();
                self.disable_on_attributes.clear();
                self.disable_on_numbers = false;
                return;
            }
            Setting::NotSet => return,
        };
        typo.enabled.apply_to(&mut self.typo_enabled, || true);
        match typo.min_word_size_for_typos {
            Setting::Set(sizes) => {
                sizes
                    .one_typo
                    .apply_to(&mut self.min_word_size_one_typo, || {
                        DEFAULT_MIN_WORD_SIZE_ONE_TYPO
                    });
                sizes
                    .two_typos
                    .apply_to(&mut self.min_word_size_two_typos, || {
                        DEFAULT_MIN_WORD_SIZE_TWO_TYPOS
                    });
            }
            Setting::Reset => {
                self.min_word_size_one_typo = DEFAULT_MIN_WORD_SIZE_ONE_TYPO;
                self.min_word_size_two_typos = DEFAULT_MIN_WORD_SIZE_TWO_TYPOS;
            }
            Setting::NotSet => {}
        }
        typo.disable_on_words
            .apply_to(&mut self.disable_on_words, BTreeSet::new);
        typo.disable_on_attributes
            .apply_to(&mut self.disable_on_attributes, BTreeSet::new);
        typo.disable_on_numbers
            .apply_to(&mut self.disable_on_numbers, || false);
    }

    fn apply_faceting(&mut self, update: Setting<super::model::FacetingSettings>) {
        match update {
            Setting::Set(faceting) => {
                faceting
                    .max_values_per_facet
                    .apply_to(&mut self.max_values_per_facet, || {
                        DEFAULT_MAX_VALUES_PER_FACET
                    });
                faceting
                    .sort_facet_values_by
                    .apply_to(&mut self.sort_facet_values_by, default_facet_sort);
            }
            Setting::Reset => {
                self.max_values_per_facet = DEFAULT_MAX_VALUES_PER_FACET;
                self.sort_facet_values_by = default_facet_sort();
            }
            Setting::NotSet => {}
        }
    }

    fn apply_chat(&mut self, update: Setting<ChatSettings>, defaults: &StoredSettings) {
        let chat = match update {
            Setting::Set(chat) => chat,
            Setting::Reset => {
                self.chat_description = defaults.chat_description.clone();
                self.chat_document_template = defaults.chat_document_template.clone();
                self.chat_document_template_max_bytes = defaults.chat_document_template_max_bytes;
                self.chat_search_parameters = defaults.chat_search_parameters.clone();
                return;
            }
            Setting::NotSet => return,
        };
        chat.description
            .apply_to(&mut self.chat_description, String::new);
        chat.document_template
            .apply_to(&mut self.chat_document_template, || {
                DEFAULT_DOCUMENT_TEMPLATE.to_owned()
            });
        chat.document_template_max_bytes
            .apply_to(&mut self.chat_document_template_max_bytes, || {
                DEFAULT_DOCUMENT_TEMPLATE_MAX_BYTES
            });
        match chat.search_parameters {
            Setting::Set(parameters) => parameters.merge_into(&mut self.chat_search_parameters),
            Setting::Reset => self.chat_search_parameters = Value::Object(Map::new()),
            Setting::NotSet => {}
        }
    }

    /// The `GET /settings` object; `chat`/`foreignKeys` only when their feature is on.
    pub fn view(&self, show_chat: bool, show_foreign_keys: bool) -> Value {
        let mut object = Map::new();
        for key in SETTING_KEYS {
            let hidden =
                (key == "chat" && !show_chat) || (key == "foreignKeys" && !show_foreign_keys);
            if !hidden {
                object.insert(key.to_owned(), self.setting_view(key));
            }
        }
        Value::Object(object)
    }

    /// The settings an export sends to another server: [`StoredSettings::view`] with the
    /// embedders' API keys revealed.
    pub fn export_view(&self, show_chat: bool, show_foreign_keys: bool) -> Value {
        let mut view = self.view(show_chat, show_foreign_keys);
        if let Value::Object(object) = &mut view {
            let embedders = self
                .embedders
                .iter()
                .map(|(name, fields)| (name.clone(), embedder_view_revealing_api_key(fields)))
                .collect();
            object.insert("embedders".to_owned(), Value::Object(embedders));
        }
        view
    }

    /// The value of one setting (camelCase name) as `GET` shows it.
    pub fn setting_view(&self, key: &str) -> Value {
        match key {
            "displayedAttributes" => wildcard_view(&self.displayed_attributes),
            "searchableAttributes" => wildcard_view(&self.searchable_attributes),
            "filterableAttributes" => json!(self.filterable_attributes),
            "sortableAttributes" => json!(self.sortable_attributes),
            "foreignKeys" => json!(self.foreign_keys),
            "rankingRules" => json!(self.ranking_rules),
            "stopWords" => json!(self.stop_words),
            "nonSeparatorTokens" => json!(self.non_separator_tokens),
            "separatorTokens" => json!(self.separator_tokens),
            "dictionary" => json!(self.dictionary),
            "synonyms" => json!(self.synonyms),
            "distinctAttribute" => json!(self.distinct_attribute),
            "proximityPrecision" => json!(self.proximity_precision),
            "typoTolerance" => json!({
                "enabled": self.typo_enabled,
                "minWordSizeForTypos": {
                    "oneTypo": self.min_word_size_one_typo,
                    "twoTypos": self.min_word_size_two_typos,
                },
                "disableOnWords": self.disable_on_words,
                "disableOnAttributes": self.disable_on_attributes,
                "disableOnNumbers": self.disable_on_numbers,
            }),
            "faceting" => {
                let mut sort = self.sort_facet_values_by.clone();
                sort.entry(EVERY_FACET.to_owned())
                    .or_insert(FacetValuesSort::Alpha);
                json!({ "maxValuesPerFacet": self.max_values_per_facet, "sortFacetValuesBy": sort })
            }
            "pagination" => json!({ "maxTotalHits": self.max_total_hits }),
            "embedders" => embedders_view(&self.embedders),
            "searchCutoffMs" => json!(self.search_cutoff_ms),
            "localizedAttributes" => localized_view(self.localized_attributes.as_deref()),
            "facetSearch" => json!(self.facet_search),
            "prefixSearch" => json!(self.prefix_search),
            "chat" => json!({
                "description": self.chat_description,
                "documentTemplate": self.chat_document_template,
                "documentTemplateMaxBytes": self.chat_document_template_max_bytes,
                "searchParameters": self.chat_search_parameters,
            }),
            _ => Value::Null,
        }
    }
}

/// Every setting key in `GET /settings` order.
pub const SETTING_KEYS: [&str; 22] = [
    "displayedAttributes",
    "searchableAttributes",
    "filterableAttributes",
    "sortableAttributes",
    "foreignKeys",
    "rankingRules",
    "stopWords",
    "nonSeparatorTokens",
    "separatorTokens",
    "dictionary",
    "synonyms",
    "distinctAttribute",
    "proximityPrecision",
    "typoTolerance",
    "faceting",
    "pagination",
    "embedders",
    "searchCutoffMs",
    "localizedAttributes",
    "facetSearch",
    "prefixSearch",
    "chat",
];

fn optional<T>(setting: Setting<T>, current: &mut Option<T>) {
    match setting {
        Setting::Set(value) => *current = Some(value),
        Setting::Reset => *current = None,
        Setting::NotSet => {}
    }
}

trait NonZeroApply {
    fn map_or_default(self, current: &mut usize, default: usize);
}

impl NonZeroApply for Setting<std::num::NonZeroUsize> {
    fn map_or_default(self, current: &mut usize, default: usize) {
        match self {
            Setting::Set(value) => *current = value.get(),
            Setting::Reset => *current = default,
            Setting::NotSet => {}
        }
    }
}

fn wildcard_view(fields: &Option<Vec<String>>) -> Value {
    match fields {
        Some(fields) => json!(fields),
        None => json!([WILDCARD]),
    }
}

fn localized_view(rules: Option<&[LocalizedAttributesRule]>) -> Value {
    let Some(rules) = rules else {
        return Value::Null;
    };
    Value::Array(
        rules
            .iter()
            .map(|rule| {
                let locales: Vec<&str> = rule
                    .locales
                    .iter()
                    .map(|locale| locale.canonical())
                    .collect();
                json!({ "attributePatterns": rule.attribute_patterns, "locales": locales })
            })
            .collect(),
    )
}

fn embedders_view(embedders: &BTreeMap<String, Map<String, Value>>) -> Value {
    Value::Object(
        embedders
            .iter()
            .map(|(name, fields)| (name.clone(), embedder_view(fields)))
            .collect(),
    )
}

fn mask_api_key(fields: &mut Map<String, Value>) {
    if let Some(Value::String(key)) = fields.get_mut("apiKey") {
        *key = masked_secret(key);
    }
}

/// The content of a `settingsUpdate` task: the update as given, in key order, resets as
/// `null` (displayed/searchable resets as `["*"]`), secrets kept so the task applies them.
pub fn task_settings(update: &Settings) -> Value {
    serde_json::to_value(update).expect("settings updates always serialize")
}

/// The `details` of a `settingsUpdate` task: [`task_settings`] with embedder API keys masked.
pub fn task_details(update: &Settings) -> Value {
    let mut value = task_settings(update);
    if let Value::Object(settings) = &mut value {
        mask_embedder_api_keys(settings);
    }
    value
}

/// Masks the `apiKey` of every embedder in a task's settings, as `details` shows them.
pub fn mask_embedder_api_keys(settings: &mut Map<String, Value>) {
    if let Some(Value::Object(embedders)) = settings.get_mut("embedders") {
        for embedder in embedders.values_mut() {
            if let Value::Object(fields) = embedder {
                mask_api_key(fields);
            }
        }
    }
}
