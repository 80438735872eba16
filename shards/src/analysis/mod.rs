//! Text analysis as Meilisearch 1.41 does it, with the `charabia` tokenizer: normalization,
//! segmentation, stop words, custom separators and dictionary words, word positions, and the
//! words of a document per searchable field.
//!
//! Languages: charabia is built with Chinese (jieba segmentation and normalization), Hebrew,
//! Thai, Greek, Khmer, Vietnamese, Turkish, German compound segmentation, Swedish
//! recomposition and Japanese transliteration. Left out, because their build scripts download
//! dictionaries from the internet, which cannot build offline: Japanese segmentation (lindera
//! UniDic) and Korean segmentation (lindera ko-dic); Japanese and Korean text is still cut by
//! charabia's generic CJK rules.
//!
//! Printable ASCII text under the default separators skips charabia's machinery through
//! [`ascii_tokenizer`], which yields charabia's own tokens for it (checked against charabia on
//! drawn texts in its tests, and tree for tree on full ingests of both datasets).
//!
//! Invariant: analysis is a pure function of the [`TextSettings`] and the text, so indexing
//! and querying agree, and re-analysing a stored document gives back what it contributed.

mod analyzer;
mod ascii_tokenizer;
mod document;
mod facet_search_form;
mod locales;
mod settings;

pub use analyzer::{
    Analyzer, FIELD_POSITIONS_MAX, HARD_SEPARATOR_DISTANCE, PositionedWord, WORD_BYTES_MAX,
    positioned_words,
};
pub use document::{DocumentWords, Occurrence, document_words, each_document_word};
pub use facet_search_form::facet_search_form;
pub use locales::{FieldLanguages, LocalizedRule, languages, pattern_matches};
pub use settings::{
    IndexKey, ONE_TYPO_WORD_CHARACTERS_MIN, ProximityPrecision, RankingRule,
    TEXT_SETTINGS_FORMAT_VERSION, TWO_TYPOS_WORD_CHARACTERS_MIN, TextSettings, TypoTolerance,
};
