//! The `facets` of a search as Meilisearch 1.50 reads them: patterns (`*`, `prefix*`,
//! `*suffix`, `*infix*` or an exact name) checked against `filterableAttributes`, selecting
//! the filterable fields they match and everything nested in those.
//!
//! Invariants:
//! - a pattern is allowed when some filterable rule intersects it (a plain rule `info` and the
//!   pattern `info.*` do: one is nested in the other); the first pattern no rule allows is
//!   refused, and if a rule that does not allow filtering matches it first, the refusal names
//!   that rule;
//! - a field is selected when it is filterable and it, or an object it is nested in, is a
//!   known filterable field that some pattern matches: `info` selects `info.a`, as 1.41 did;
//! - `*` alone selects every filterable field and is always allowed: 1.41 read it so, and the
//!   dashboards and InstantSearch adapters of today send it (1.50 refuses it unless a rule's
//!   pattern is `*`).

use super::rules::{FilterableRule, FilterableRules, PatternMatch, is_nested_in, match_pattern};

/// The pattern asking for every filterable field.
pub const EVERY_FACET: &str = "*";

/// Why a `facets` list is refused: its first pattern that no filterable rule allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FacetRefusal {
    /// No rule allowing filtering intersects the pattern.
    NotFilterable { pattern: String },
    /// Rule `rule_index`, which does not allow filtering, matches the pattern first.
    RuleWithoutFiltering { pattern: String, rule_index: usize },
}

impl FilterableRule {
    /// Whether this rule and the facet `pattern` can select a common field.
    fn intersects(&self, pattern: &str) -> bool {
        match self {
            FilterableRule::Field(field) => {
                is_nested_in(field, pattern) || is_nested_in(pattern, field)
            }
            FilterableRule::Patterns {
                attribute_patterns, ..
            } => attribute_patterns.iter().any(|rule_pattern| {
                match_pattern(pattern, rule_pattern) != PatternMatch::NoMatch
                    || match_pattern(rule_pattern, pattern) != PatternMatch::NoMatch
            }),
        }
    }
}

impl FilterableRules {
    /// Checks every pattern of a `facets` list, in order.
    pub fn check_facet_patterns(&self, patterns: &[String]) -> Result<(), FacetRefusal> {
        if patterns.iter().any(|pattern| pattern == EVERY_FACET) {
            return Ok(());
        }
        patterns
            .iter()
            .try_for_each(|pattern| self.check_facet_pattern(pattern))
    }

    fn check_facet_pattern(&self, pattern: &str) -> Result<(), FacetRefusal> {
        for (rule_index, rule) in self.rules().iter().enumerate() {
            if rule.filter_features().is_filterable() {
                if rule.intersects(pattern) {
                    return Ok(());
                }
            } else if rule.match_attribute(pattern) == PatternMatch::Match {
                return Err(FacetRefusal::RuleWithoutFiltering {
                    pattern: pattern.to_owned(),
                    rule_index,
                });
            }
        }
        Err(FacetRefusal::NotFilterable {
            pattern: pattern.to_owned(),
        })
    }

    /// Whether `patterns` select the field `path`; `known` says whether a path is a field of
    /// the index (objects holding nested fields are fields too).
    pub fn facet_selects(
        &self,
        patterns: &[String],
        path: &str,
        known: impl Fn(&str) -> bool,
    ) -> bool {
        if !self.is_filterable(path) {
            return false;
        }
        if patterns.iter().any(|pattern| pattern == EVERY_FACET) {
            return true;
        }
        enclosing_paths(path).any(|enclosing| {
            (enclosing == path || (known(enclosing) && self.is_filterable(enclosing)))
                && patterns
                    .iter()
                    .any(|pattern| match_pattern(pattern, enclosing) == PatternMatch::Match)
        })
    }
}

/// `path` and every object it is nested in: `a.b.c`, `a.b`, `a`.
fn enclosing_paths(path: &str) -> impl Iterator<Item = &str> {
    std::iter::once(path).chain(
        path.char_indices()
            .rev()
            .filter(|&(_, character)| character == '.')
            .map(move |(position, _)| &path[..position]),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rules(setting: serde_json::Value) -> FilterableRules {
        FilterableRules::from_setting(&setting).expect("the setting is valid")
    }

    fn patterns(list: &[&str]) -> Vec<String> {
        list.iter().map(|pattern| (*pattern).to_owned()).collect()
    }

    const FIELDS: [&str; 7] = [
        "genre", "info", "info.a", "info.b", "info.c", "info.c.d", "other",
    ];

    fn selected(rules: &FilterableRules, list: &[&str]) -> Vec<&'static str> {
        let list = patterns(list);
        FIELDS
            .into_iter()
            .filter(|path| rules.facet_selects(&list, path, |known| FIELDS.contains(&known)))
            .collect()
    }

    #[test]
    fn patterns_select_as_meilisearch_1_50_does() {
        let rules = rules(json!(["genre", "info"]));
        assert_eq!(
            selected(&rules, &["info.*"]),
            ["info.a", "info.b", "info.c", "info.c.d"]
        );
        assert_eq!(
            selected(&rules, &["info"]),
            ["info", "info.a", "info.b", "info.c", "info.c.d"]
        );
        assert_eq!(selected(&rules, &["info.c"]), ["info.c", "info.c.d"]);
        assert_eq!(
            selected(&rules, &["*"]),
            ["genre", "info", "info.a", "info.b", "info.c", "info.c.d"]
        );
        assert_eq!(selected(&rules, &["genre", "info.a"]), ["genre", "info.a"]);
    }

    #[test]
    fn a_nested_field_is_selected_only_when_filterable() {
        let rules = rules(json!([
            {"attributePatterns": ["info.b"], "features": {"filter": {"equality": false}}},
            {"attributePatterns": ["info*"], "features": {}}
        ]));
        assert_eq!(
            selected(&rules, &["info"]),
            ["info", "info.a", "info.c", "info.c.d"]
        );
    }

    #[test]
    fn a_pattern_no_filterable_rule_intersects_is_refused_first_in_order() {
        let rules = rules(json!(["genre", "info"]));
        assert_eq!(
            rules.check_facet_patterns(&patterns(&["info.*", "genre"])),
            Ok(())
        );
        for refused in ["g*", "*r", "*o*", "nope", "nope.*"] {
            assert_eq!(
                rules.check_facet_patterns(&patterns(&["genre", refused, "zzz"])),
                Err(FacetRefusal::NotFilterable {
                    pattern: refused.to_owned()
                }),
                "{refused}"
            );
        }
        assert_eq!(
            rules.check_facet_patterns(&patterns(&["*", "nope"])),
            Ok(())
        );
        // A pattern rule meets a facet pattern that overlaps it.
        let patterned = FilterableRules::from_setting(
            &json!([{"attributePatterns": ["genre*"], "features": {}}]),
        )
        .expect("the setting is valid");
        assert_eq!(patterned.check_facet_patterns(&patterns(&["g*"])), Ok(()));
    }

    #[test]
    fn a_rule_without_filtering_is_named_in_the_refusal() {
        let rules = rules(json!([
            {"attributePatterns": ["price"], "features": {"filter": {"equality": false}}},
            "genre"
        ]));
        assert_eq!(
            rules.check_facet_patterns(&patterns(&["price"])),
            Err(FacetRefusal::RuleWithoutFiltering {
                pattern: "price".to_owned(),
                rule_index: 0
            })
        );
    }

    #[test]
    fn enclosing_paths_go_from_the_field_outwards() {
        assert_eq!(
            enclosing_paths("a.b.c").collect::<Vec<_>>(),
            ["a.b.c", "a.b", "a"]
        );
        assert_eq!(enclosing_paths("a").collect::<Vec<_>>(), ["a"]);
    }
}
