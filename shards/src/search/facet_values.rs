//! Facet search inside one shard: the string values of one facet field that match a facet
//! query, with the number of given documents holding each.
//!
//! Matching follows Meilisearch's facet search. Values and query are compared in their facet
//! search form (charabia's lossy normalization, see [`facet_search_form`]): a value is formed
//! with the locales of its field's `localizedAttributes` rule, the query with those locales
//! narrowed to the request's `locales` (a field no rule localizes ignores the request's
//! locales). Without a query every value matches; with typo tolerance on (and the field and the
//! query word not exempted) a value matches when one of its prefixes is within 0, 1 or 2 typos
//! of the query, by the query's byte length against `minWordSizeForTypos`; otherwise a value
//! matches when it starts with the query (a query word exempted from typos must equal the
//! value).
//!
//! Invariants: only values held by at least one of the documents are returned, each with the
//! key the caller orders by (its form with a query, its normalized value without, as
//! Meilisearch walks its facet search dictionary or its facet values); every matching value is
//! returned (the caller merges shards and cuts), so counts are exact.

use charabia::Language;
use levenshtein_automata::{DFA, Distance, LevenshteinAutomatonBuilder};
use roaring::RoaringBitmap;

use crate::analysis::{TypoTolerance, facet_search_form, languages};
use crate::error::ShardResult;
use crate::index::keys::string_of_key;
use crate::index::trees::FACET_STRINGS_TREE;
use crate::shard::ShardSnapshot;

use super::facet_counts::{for_each_field_entry, string_values};
use super::facet_forms::FieldForms;

/// One facet value of a shard that a facet search matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FacetValueCount {
    /// What values are ordered by: the facet search form with a query, else `normalized`.
    pub order: String,
    /// The normalized value (the facet index's key): what shards add counts by.
    pub normalized: String,
    /// One original spelling of the value.
    pub original: String,
    /// The given documents holding the value.
    pub count: u64,
}

/// How a facet query matches values' forms.
enum Matcher {
    Prefix(String),
    Exact(String),
    Typos(DFA),
}

impl Matcher {
    /// `query` is already in its facet search form.
    fn new(query: String, typos: &TypoTolerance, field: &str) -> Matcher {
        let field_allows_typos = !typos.disable_on_attributes.contains(field);
        if !typos.enabled || !field_allows_typos {
            return Matcher::Prefix(query);
        }
        if typos.disable_on_words.contains(&query) {
            return Matcher::Exact(query);
        }
        let allowed = if query.len() < usize::from(typos.one_typo_characters_min) {
            0
        } else if query.len() < usize::from(typos.two_typos_characters_min) {
            1
        } else {
            2
        };
        if allowed == 0 {
            return Matcher::Prefix(query);
        }
        let dfa = LevenshteinAutomatonBuilder::new(allowed, true).build_prefix_dfa(&query);
        Matcher::Typos(dfa)
    }

    fn matches(&self, form: &str) -> bool {
        match self {
            Matcher::Prefix(query) => form.starts_with(query.as_str()),
            Matcher::Exact(query) => form == query,
            Matcher::Typos(dfa) => matches!(dfa.eval(form), Distance::Exact(_)),
        }
    }
}

impl ShardSnapshot {
    /// The string values of `field` matching `query` among `documents`; `locales` are the
    /// request's (ISO-639-3 codes).
    pub fn facet_values(
        &self,
        field: &str,
        query: Option<&str>,
        locales: Option<&[String]>,
        documents: &RoaringBitmap,
    ) -> ShardResult<Vec<FacetValueCount>> {
        let Some(field_id) = self.fields_map()?.get(field).copied() else {
            return Ok(Vec::new());
        };
        let values = string_values(self.read_transaction(), field_id, documents)?;
        let Some(query) = query else {
            let unordered = values.into_iter();
            return Ok(unordered
                .map(|(normalized, original, count)| FacetValueCount {
                    order: normalized.clone(),
                    normalized,
                    original,
                    count,
                })
                .collect());
        };
        let field_locales = self.analyzer().field_languages().of_field(field);
        let query_locales = narrowed_locales(field_locales, locales);
        let query_form = facet_search_form(query, query_locales.as_deref());
        let matcher = Matcher::new(query_form, &self.text_settings().typo_tolerance, field);
        let forms = self.facet_forms().of_field(field_id, field_locales, || {
            field_forms(self, field_id, field_locales)
        })?;
        let mut matched = Vec::new();
        for (normalized, original, count) in values {
            let form = match forms.get(&normalized) {
                Some(form) => form.clone(),
                None => facet_search_form(&normalized, field_locales),
            };
            if matcher.matches(&form) {
                matched.push(FacetValueCount {
                    order: form,
                    normalized,
                    original,
                    count,
                });
            }
        }
        Ok(matched)
    }
}

/// The locales a facet query is formed with: the field's, kept only where the request's
/// `locales` name them too; a field without locales ignores the request's.
fn narrowed_locales(
    field: Option<&[Language]>,
    requested: Option<&[String]>,
) -> Option<Vec<Language>> {
    let field = field?;
    let Some(requested) = requested else {
        return Some(field.to_vec());
    };
    let requested = languages(requested);
    Some(
        field
            .iter()
            .filter(|language| requested.contains(language))
            .copied()
            .collect(),
    )
}

/// The form of every string value of `field` in `snapshot`.
fn field_forms(
    snapshot: &ShardSnapshot,
    field: u16,
    locales: Option<&[Language]>,
) -> ShardResult<FieldForms> {
    let mut forms = FieldForms::new();
    let read = snapshot.read_transaction();
    for_each_field_entry(read, FACET_STRINGS_TREE, field, &mut |key, _| {
        let normalized = string_of_key(key)?;
        forms.insert(
            normalized.to_owned(),
            facet_search_form(normalized, locales),
        );
        Ok(())
    })?;
    Ok(forms)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typos() -> TypoTolerance {
        TypoTolerance::default()
    }

    fn matcher(query: &str, settings: &TypoTolerance) -> Matcher {
        Matcher::new(facet_search_form(query, None), settings, "genre")
    }

    #[test]
    fn a_short_query_matches_prefixes_only() {
        let matcher = matcher("Dra", &typos());
        assert!(matcher.matches("drama"));
        assert!(!matcher.matches("dream"));
    }

    #[test]
    fn a_query_of_five_bytes_allows_one_typo_in_a_prefix() {
        let matcher = matcher("comdy", &typos());
        assert!(matcher.matches("comedy"));
        assert!(!matcher.matches("tragedy"));
    }

    #[test]
    fn a_query_without_diacritics_finds_a_value_with_them() {
        let mut settings = typos();
        settings.enabled = false;
        let value = facet_search_form("Écoles", None);
        assert!(matcher("eco", &settings).matches(&value));
        assert!(matcher("ÉCO", &settings).matches(&value));
    }

    #[test]
    fn disabled_typos_keep_plain_prefixes() {
        let mut settings = typos();
        settings.enabled = false;
        assert!(!matcher("comdy", &settings).matches("comedy"));
        assert!(matcher("come", &settings).matches("comedy"));
    }

    #[test]
    fn an_attribute_without_typos_keeps_plain_prefixes() {
        let mut settings = typos();
        settings.disable_on_attributes.insert("genre".to_owned());
        assert!(!matcher("comdy", &settings).matches("comedy"));
    }

    #[test]
    fn a_word_without_typos_must_equal_the_value() {
        let mut settings = typos();
        settings.disable_on_words.insert("comedy".to_owned());
        let matcher = matcher("Comedy", &settings);
        assert!(matcher.matches("comedy"));
        assert!(!matcher.matches("comedy drama"));
    }

    #[test]
    fn the_request_narrows_a_localized_field_and_cannot_localize_another() {
        let field = [Language::Jpn, Language::Cmn];
        let japanese = ["jpn".to_owned()];
        assert_eq!(
            narrowed_locales(Some(&field), Some(&japanese)),
            Some(vec![Language::Jpn])
        );
        assert_eq!(narrowed_locales(Some(&field), None), Some(field.to_vec()));
        assert_eq!(narrowed_locales(None, Some(&japanese)), None);
        let french = ["fra".to_owned()];
        assert_eq!(
            narrowed_locales(Some(&field), Some(&french)),
            Some(Vec::new())
        );
    }
}
