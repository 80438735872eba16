//! Facet search inside one shard: the string values of one facet field that match a facet
//! query, with the number of given documents holding each.
//!
//! Matching follows Meilisearch's facet search: the query is normalized like facet values;
//! without a query every value matches; with typo tolerance on (and the field and the query
//! word not exempted) a value matches when one of its prefixes is within 0, 1 or 2 typos of
//! the query, by the query's byte length against `minWordSizeForTypos`; otherwise a value
//! matches when it starts with the query (a query word exempted from typos must equal the
//! value).
//!
//! Invariants: values are visited in normalized order and only values held by at least one
//! of the documents are returned; every matching value is returned (the caller merges shards
//! and cuts), so counts are exact.

use levenshtein_automata::{DFA, Distance, LevenshteinAutomatonBuilder};
use roaring::RoaringBitmap;

use crate::analysis::TypoTolerance;
use crate::filter::normalize_facet;
use crate::shard::{ShardResult, ShardSnapshot};

use super::facet_counts::string_values;

/// One facet value of a shard: normalized, original spelling, documents holding it.
pub type FacetValueCount = (String, String, u64);

/// How a facet query matches values.
enum Matcher {
    Everything,
    Prefix(String),
    Exact(String),
    Typos(DFA),
}

impl Matcher {
    fn new(query: Option<&str>, typos: &TypoTolerance, field: &str) -> Matcher {
        let Some(query) = query else {
            return Matcher::Everything;
        };
        let query = normalize_facet(query);
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

    fn matches(&self, value: &str) -> bool {
        match self {
            Matcher::Everything => true,
            Matcher::Prefix(query) => value.starts_with(query.as_str()),
            Matcher::Exact(query) => value == query,
            Matcher::Typos(dfa) => matches!(dfa.eval(value), Distance::Exact(_)),
        }
    }
}

impl ShardSnapshot {
    /// The string values of `field` matching `query` among `documents`, in normalized order.
    pub fn facet_values(
        &self,
        field: &str,
        query: Option<&str>,
        documents: &RoaringBitmap,
    ) -> ShardResult<Vec<FacetValueCount>> {
        let typos = &self.text_settings().typo_tolerance;
        let matcher = Matcher::new(query, typos, field);
        let Some(field_id) = self.fields_map()?.get(field).copied() else {
            return Ok(Vec::new());
        };
        let mut values = string_values(self.read_transaction(), field_id, documents)?;
        values.retain(|(normalized, _, _)| matcher.matches(normalized));
        Ok(values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typos() -> TypoTolerance {
        TypoTolerance::default()
    }

    #[test]
    fn a_short_query_matches_prefixes_only() {
        let matcher = Matcher::new(Some("Dra"), &typos(), "genre");
        assert!(matcher.matches("drama"));
        assert!(!matcher.matches("dream"));
    }

    #[test]
    fn a_query_of_five_bytes_allows_one_typo_in_a_prefix() {
        let matcher = Matcher::new(Some("comdy"), &typos(), "genre");
        assert!(matcher.matches("comedy"));
        assert!(!matcher.matches("tragedy"));
    }

    #[test]
    fn disabled_typos_keep_plain_prefixes() {
        let mut settings = typos();
        settings.enabled = false;
        let matcher = Matcher::new(Some("comdy"), &settings, "genre");
        assert!(!matcher.matches("comedy"));
        assert!(Matcher::new(Some("come"), &settings, "genre").matches("comedy"));
    }

    #[test]
    fn an_attribute_without_typos_keeps_plain_prefixes() {
        let mut settings = typos();
        settings.disable_on_attributes.insert("genre".to_owned());
        assert!(!Matcher::new(Some("comdy"), &settings, "genre").matches("comedy"));
    }

    #[test]
    fn a_word_without_typos_must_equal_the_value() {
        let mut settings = typos();
        settings.disable_on_words.insert("comedy".to_owned());
        let matcher = Matcher::new(Some("Comedy"), &settings, "genre");
        assert!(matcher.matches("comedy"));
        assert!(!matcher.matches("comedy drama"));
    }
}
