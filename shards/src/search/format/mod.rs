//! Search-result formatting as Meilisearch 1.41 does it: a hit's `_formatted` object
//! (highlighted and cropped attributes, numbers as strings) and its `_matchesPosition`
//! object (byte offsets and lengths of the matches in the original strings).
//!
//! Use: build one [`QueryMatcher`] per search from the index's [`crate::analysis::TextSettings`], `q`
//! and the words each query term may match (`ShardHits::query_words`, merged over shards), then format
//! every hit with [`QueryMatcher::with_hit_formatter`] (the tokenizer and the attribute plan
//! are built once) or, for one hit, [`format_hit`].
//!
//! Texts are tokenized as Meilisearch's formatter does: charabia with the index's separators
//! and dictionary and no stop words (so a stop-word hole of a phrase never matches, as in
//! Meilisearch). The rules are in [`matcher`] (what matches), `crop` (the window), `render`
//! (tags, markers, byte bounds), `plan` (which attributes) and `document` (the walk and
//! `_formatted`'s selection).
//!
//! Known differences from Meilisearch 1.41:
//! - the words per term come flattened: a multi-word synonym's words are matched one by one
//!   (Meilisearch matches them only in sequence), and a synonym of the last query word is
//!   matched as a prefix like the word's typo derivations;
//! - the last query word matches every word it starts even when no dictionary word starts
//!   with it (Meilisearch highlights the dictionary words it starts, at most 10 000, and only
//!   when the prefix is not in its prefix database);
//! - a crop length set both on a field and on a nested field is resolved shallowest-first
//!   (Meilisearch takes the one of the lower field id);
//! - where Meilisearch would panic or overflow (two adjacent phrases each longer than the crop
//!   window; a long phrase ending the text; scores beyond `i16`), this module keeps going.
//!
//! Invariant: formatting is a pure function of the matcher, the document and the options.

mod crop;
mod document;
pub mod matcher;
mod plan;
mod render;

#[cfg(test)]
mod tests;

use charabia::{Tokenizer, TokenizerBuilder};
use serde_json::{Map, Value};

pub use matcher::{Match, QueryLanguages, QueryMatcher, TermIds};

use document::{Positions, is_selected, retrieved_selectors, select};
use plan::FormatPlan;
use render::Decoration;

/// Meilisearch's default `cropLength` (words).
pub const CROP_LENGTH_DEFAULT: usize = 10;
/// Meilisearch's default `cropMarker`.
pub const CROP_MARKER_DEFAULT: &str = "…";
/// Meilisearch's default `highlightPreTag`.
pub const HIGHLIGHT_PRE_TAG_DEFAULT: &str = "<em>";
/// Meilisearch's default `highlightPostTag`.
pub const HIGHLIGHT_POST_TAG_DEFAULT: &str = "</em>";

/// The formatting parameters of a search request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatOptions {
    /// `attributesToHighlight` as sent; `*` is every displayed attribute.
    pub attributes_to_highlight: Vec<String>,
    /// `attributesToCrop` as sent: `attr` or `attr:N`; `*` allowed.
    pub attributes_to_crop: Vec<String>,
    /// `cropLength` (words); 0 keeps whole texts.
    pub crop_length: usize,
    pub crop_marker: String,
    pub highlight_pre_tag: String,
    pub highlight_post_tag: String,
    /// `showMatchesPosition`.
    pub show_matches_position: bool,
}

impl Default for FormatOptions {
    fn default() -> Self {
        FormatOptions {
            attributes_to_highlight: Vec::new(),
            attributes_to_crop: Vec::new(),
            crop_length: CROP_LENGTH_DEFAULT,
            crop_marker: CROP_MARKER_DEFAULT.to_owned(),
            highlight_pre_tag: HIGHLIGHT_PRE_TAG_DEFAULT.to_owned(),
            highlight_post_tag: HIGHLIGHT_POST_TAG_DEFAULT.to_owned(),
            show_matches_position: false,
        }
    }
}

/// What the index shows and knows of its fields.
pub struct FieldVisibility<'a> {
    /// The `displayedAttributes` setting; `None` (or a list holding `*`) shows every field.
    pub displayed: Option<&'a [String]>,
    /// Whether the index has a field of this name (a top-level field or a dotted nested path):
    /// highlight and crop names of unknown fields are ignored, as in Meilisearch.
    pub is_known: &'a dyn Fn(&str) -> bool,
}

/// The formatted parts of one hit.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FormattedHit {
    /// `_formatted`: `None` when nothing is highlighted or cropped (or nothing selected).
    pub formatted: Option<Map<String, Value>>,
    /// `_matchesPosition`: `Some` (maybe empty) exactly when `showMatchesPosition`.
    pub matches_position: Option<Map<String, Value>>,
}

/// Formats hits of one search: the matcher, the tokenizer and the attribute plan.
pub struct HitFormatter<'a> {
    matcher: &'a QueryMatcher,
    tokenizer: Tokenizer<'a>,
    plan: FormatPlan,
    options: &'a FormatOptions,
}

impl QueryMatcher {
    /// Runs `body` with a [`HitFormatter`] for this search's options and fields.
    pub fn with_hit_formatter<R>(
        &self,
        options: &FormatOptions,
        fields: &FieldVisibility<'_>,
        body: impl FnOnce(&HitFormatter<'_>) -> R,
    ) -> R {
        let separators: Option<Vec<&str>> = self
            .separators
            .as_ref()
            .map(|list| list.iter().map(String::as_str).collect());
        let dictionary: Option<Vec<&str>> = self
            .dictionary
            .as_ref()
            .map(|list| list.iter().map(String::as_str).collect());
        let mut builder = TokenizerBuilder::<Vec<u8>>::new();
        builder.create_char_map(true);
        if let Some(separators) = &separators {
            builder.separators(separators);
        }
        if let Some(dictionary) = &dictionary {
            builder.words_dict(dictionary);
        }
        let formatter = HitFormatter {
            matcher: self,
            tokenizer: builder.build(),
            plan: FormatPlan::new(options, fields),
            options,
        };
        body(&formatter)
    }
}

impl HitFormatter<'_> {
    fn decoration(&self) -> Decoration<'_> {
        Decoration {
            crop_marker: &self.options.crop_marker,
            pre_tag: &self.options.highlight_pre_tag,
            post_tag: &self.options.highlight_post_tag,
        }
    }

    /// `_formatted` and `_matchesPosition` of one hit: `document` is the whole stored
    /// document, `retrieved` the hit's document after `attributesToRetrieve` (its top-level
    /// keys, and nested objects it cut down, say what `_formatted` keeps beyond the
    /// highlighted and cropped attributes).
    pub fn format(
        &self,
        document: &Map<String, Value>,
        retrieved: &Map<String, Value>,
    ) -> FormattedHit {
        let mut selector_names: Vec<String> = Vec::new();
        let mut selectors: Vec<&str> = Vec::new();
        if self.plan.formats() {
            retrieved_selectors(document, retrieved, "", &mut selector_names);
            selectors.extend(selector_names.iter().map(String::as_str));
            selectors.extend(
                self.plan
                    .selected_names(document.keys().map(String::as_str)),
            );
        }
        let mut positions: Option<Positions> =
            self.options.show_matches_position.then(Positions::new);
        let mut formatted_document = Map::new();
        let mut indices = Vec::new();
        for (key, value) in document {
            let build = is_selected(&selectors, key);
            if !build && positions.is_none() {
                continue;
            }
            if let Some(formatted) = self.walk(key, &mut indices, value, build, &mut positions) {
                formatted_document.insert(key.clone(), formatted);
            }
        }
        let formatted = self
            .plan
            .formats()
            .then(|| select(formatted_document, &selectors))
            .filter(|formatted| !formatted.is_empty());
        FormattedHit {
            formatted,
            matches_position: positions.map(|positions| {
                positions
                    .into_iter()
                    .map(|(path, bounds)| (path, Value::Array(bounds)))
                    .collect()
            }),
        }
    }
}

/// `_formatted` and `_matchesPosition` of one hit (see [`HitFormatter::format`]); for many
/// hits prefer [`QueryMatcher::with_hit_formatter`], which builds the tokenizer once.
pub fn format_hit(
    matcher: &QueryMatcher,
    document: &Map<String, Value>,
    retrieved: &Map<String, Value>,
    fields: &FieldVisibility<'_>,
    options: &FormatOptions,
) -> FormattedHit {
    matcher.with_hit_formatter(options, fields, |formatter| {
        formatter.format(document, retrieved)
    })
}
