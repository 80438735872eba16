//! Languages of fields and queries: the `localizedAttributes` rules and the `locales` search
//! parameter, turned into the language lists charabia's detection may choose from.
//!
//! A rule lists attribute patterns and locales; a field takes the locales of the first rule
//! with a pattern matching its whole path (`*` alone, `prefix*`, `*suffix`, `*infix*` or the
//! exact path, as Meilisearch matches them). A field no rule matches is analysed with
//! charabia's own detection. A query is analysed with the `locales` it gives or, without
//! them, with the union of the locales of the fields it searches (Meilisearch's rule).
//!
//! Invariants: the languages of a field depend only on the rules and its path, so indexing and
//! querying agree; codes charabia does not know are dropped when the rules are compiled (the
//! settings route only accepts known codes, so none is dropped in practice).

use charabia::Language;
use serde::{Deserialize, Serialize};

/// One `localizedAttributes` rule, with locales as ISO-639-3 codes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LocalizedRule {
    pub attribute_patterns: Vec<String>,
    pub locales: Vec<String>,
}

/// Whether `pattern` matches the whole field path `path`.
pub fn pattern_matches(pattern: &str, path: &str) -> bool {
    if pattern == "*" {
        return true;
    }
    match (pattern.strip_prefix('*'), pattern.strip_suffix('*')) {
        (Some(_), Some(_)) => path.contains(&pattern[1..pattern.len() - 1]),
        (Some(suffix), None) => path.ends_with(suffix),
        (None, Some(prefix)) => path.starts_with(prefix),
        (None, None) => pattern == path,
    }
}

/// The charabia languages of ISO-639-3 `codes`, sorted and deduplicated.
pub fn languages(codes: &[String]) -> Vec<Language> {
    let mut found: Vec<Language> = codes.iter().filter_map(Language::from_code).collect();
    found.sort_by_key(|language| language.code());
    found.dedup();
    found
}

/// The compiled rules of an index.
#[derive(Debug, Clone, Default)]
pub struct FieldLanguages {
    rules: Vec<(Vec<String>, Vec<Language>)>,
}

impl FieldLanguages {
    pub fn new(rules: &[LocalizedRule]) -> FieldLanguages {
        FieldLanguages {
            rules: rules
                .iter()
                .map(|rule| (rule.attribute_patterns.clone(), languages(&rule.locales)))
                .collect(),
        }
    }

    /// The languages of the field at `path`; `None` lets charabia detect them.
    pub fn of_field(&self, path: &str) -> Option<&[Language]> {
        self.rules
            .iter()
            .find(|(patterns, _)| {
                patterns
                    .iter()
                    .any(|pattern| pattern_matches(pattern, path))
            })
            .map(|(_, languages)| languages.as_slice())
            .filter(|languages| !languages.is_empty())
    }

    /// The languages a query is analysed with: `explicit` (the `locales` parameter) when
    /// given, an empty list meaning charabia's detection; otherwise the union of the
    /// languages of the `searched` field paths (`None` when none of them is localized).
    pub fn of_query<'p>(
        &self,
        explicit: Option<&[String]>,
        searched: impl IntoIterator<Item = &'p str>,
    ) -> Option<Vec<Language>> {
        if let Some(codes) = explicit {
            let found = languages(codes);
            return (!found.is_empty()).then_some(found);
        }
        let mut union: Vec<Language> = searched
            .into_iter()
            .filter_map(|path| self.of_field(path))
            .flatten()
            .copied()
            .collect();
        union.sort_by_key(|language| language.code());
        union.dedup();
        (!union.is_empty()).then_some(union)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(patterns: &[&str], locales: &[&str]) -> LocalizedRule {
        LocalizedRule {
            attribute_patterns: patterns.iter().map(|text| (*text).to_owned()).collect(),
            locales: locales.iter().map(|text| (*text).to_owned()).collect(),
        }
    }

    #[test]
    fn patterns_match_whole_paths_with_wildcards_at_either_end() {
        assert!(pattern_matches("*", "anything.nested"));
        assert!(pattern_matches("title_*", "title_de"));
        assert!(!pattern_matches("title_*", "subtitle_de"));
        assert!(pattern_matches("*_de", "title_de"));
        assert!(!pattern_matches("*_de", "title_den"));
        assert!(pattern_matches("*tit*", "subtitle"));
        assert!(pattern_matches("title", "title"));
        assert!(!pattern_matches("title", "title.de"));
    }

    #[test]
    fn a_field_takes_the_locales_of_the_first_matching_rule() {
        let rules =
            FieldLanguages::new(&[rule(&["*_de"], &["deu"]), rule(&["*"], &["eng", "fra"])]);
        assert_eq!(rules.of_field("title_de"), Some(&[Language::Deu][..]));
        assert_eq!(
            rules.of_field("title"),
            Some(&[Language::Eng, Language::Fra][..])
        );
        assert_eq!(FieldLanguages::default().of_field("title"), None);
    }

    #[test]
    fn a_query_uses_its_locales_or_the_union_of_its_fields_locales() {
        let rules = FieldLanguages::new(&[rule(&["*_de"], &["deu"]), rule(&["*_fr"], &["fra"])]);
        assert_eq!(
            rules.of_query(None, ["title_de", "title_fr", "plain"]),
            Some(vec![Language::Deu, Language::Fra])
        );
        assert_eq!(rules.of_query(None, ["plain"]), None);
        assert_eq!(
            rules.of_query(Some(&["jpn".to_owned()]), ["title_de"]),
            Some(vec![Language::Jpn])
        );
        assert_eq!(rules.of_query(Some(&[]), ["title_de"]), None);
    }
}
