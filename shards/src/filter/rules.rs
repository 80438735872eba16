//! The `filterableAttributes` setting as rules: which attributes may be filtered, and with which
//! operators.
//!
//! Invariants: the first rule that matches an attribute decides (its index is reported in
//! messages); a plain string rule is "legacy": it matches the attribute and everything nested in
//! it and allows every operator plus facet search; an object rule matches its patterns (`*`,
//! `prefix*`, `*suffix`, `*infix*` or exact) with the features it lists (equality on and
//! comparison off by default). `_geo` / `_geojson` enable geo filtering only as plain strings.

use std::collections::BTreeSet;

use serde_json::Value;

/// How a pattern relates to an attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatternMatch {
    /// The pattern selects the attribute.
    Match,
    /// The attribute is an object containing what the pattern selects.
    Parent,
    NoMatch,
}

/// The `features.filter` object of a rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FilterFeatures {
    /// `=`, `!=`, `IN`.
    pub equality: bool,
    /// `<`, `>`, `<=`, `>=`, `TO`.
    pub comparison: bool,
}

impl Default for FilterFeatures {
    fn default() -> Self {
        Self {
            equality: true,
            comparison: false,
        }
    }
}

impl FilterFeatures {
    /// What a plain string rule allows.
    pub const LEGACY: FilterFeatures = FilterFeatures {
        equality: true,
        comparison: true,
    };

    /// Filterable at all (then `IS EMPTY`, `IS NULL` and `EXISTS` are allowed too).
    pub fn is_filterable(&self) -> bool {
        self.equality || self.comparison
    }

    /// The operators allowed, in Meilisearch's order, for error messages.
    pub fn allowed_operators(&self) -> Vec<&'static str> {
        if !self.is_filterable() {
            return Vec::new();
        }
        let mut operators = vec!["OR", "AND", "NOT"];
        if self.equality {
            operators.extend(["=", "!=", "IN"]);
        }
        if self.comparison {
            operators.extend(["<", ">", "<=", ">=", "TO"]);
        }
        operators.extend(["IS EMPTY", "IS NULL", "EXISTS"]);
        operators
    }
}

/// One item of `filterableAttributes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FilterableRule {
    /// A plain attribute name (legacy form).
    Field(String),
    /// `{"attributePatterns": [...], "features": {...}}`.
    Patterns {
        attribute_patterns: Vec<String>,
        facet_search: bool,
        filter: FilterFeatures,
    },
}

impl FilterableRule {
    pub fn match_attribute(&self, attribute: &str) -> PatternMatch {
        match self {
            FilterableRule::Field(field) => match_field_legacy(field, attribute),
            FilterableRule::Patterns {
                attribute_patterns, ..
            } => {
                let mut result = PatternMatch::NoMatch;
                for pattern in attribute_patterns {
                    match match_pattern(pattern, attribute) {
                        PatternMatch::Match => return PatternMatch::Match,
                        PatternMatch::Parent => result = PatternMatch::Parent,
                        PatternMatch::NoMatch => {}
                    }
                }
                result
            }
        }
    }

    pub fn filter_features(&self) -> FilterFeatures {
        match self {
            FilterableRule::Field(_) => FilterFeatures::LEGACY,
            FilterableRule::Patterns { filter, .. } => *filter,
        }
    }

    pub fn facet_search(&self) -> bool {
        match self {
            FilterableRule::Field(_) => true,
            FilterableRule::Patterns { facet_search, .. } => *facet_search,
        }
    }
}

/// `attribute` is `prefix` or nested inside it (`a.b` is nested in `a`).
pub(crate) fn is_nested_in(attribute: &str, prefix: &str) -> bool {
    attribute
        .strip_prefix(prefix)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
}

fn match_field_legacy(field: &str, attribute: &str) -> PatternMatch {
    if is_nested_in(attribute, field) {
        PatternMatch::Match
    } else if is_nested_in(field, attribute) {
        PatternMatch::Parent
    } else {
        PatternMatch::NoMatch
    }
}

pub(crate) fn match_pattern(pattern: &str, attribute: &str) -> PatternMatch {
    let matched = if pattern == "*" {
        true
    } else if pattern.len() >= 2 && pattern.starts_with('*') && pattern.ends_with('*') {
        attribute.contains(&pattern[1..pattern.len() - 1])
    } else if let Some(suffix) = pattern.strip_prefix('*') {
        attribute.ends_with(suffix)
    } else if let Some(prefix) = pattern.strip_suffix('*') {
        attribute.starts_with(prefix)
    } else {
        pattern == attribute
    };
    if matched {
        PatternMatch::Match
    } else if is_nested_in(pattern, attribute) {
        PatternMatch::Parent
    } else {
        PatternMatch::NoMatch
    }
}

/// The whole `filterableAttributes` setting.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FilterableRules {
    rules: Vec<FilterableRule>,
}

impl FilterableRules {
    pub fn new(rules: Vec<FilterableRule>) -> Self {
        Self { rules }
    }

    /// Reads the setting's JSON value (an array of strings and rule objects). The message of an
    /// error is short; the settings route produces Meilisearch's own deserialization messages.
    pub fn from_setting(value: &Value) -> Result<Self, String> {
        let Value::Array(items) = value else {
            return Err("filterableAttributes must be an array".to_owned());
        };
        items
            .iter()
            .map(rule_from_json)
            .collect::<Result<_, _>>()
            .map(Self::new)
    }

    pub fn rules(&self) -> &[FilterableRule] {
        &self.rules
    }

    /// The first rule matching `attribute`, with its index.
    pub fn matching_rule(&self, attribute: &str) -> Option<(usize, &FilterableRule)> {
        self.rules
            .iter()
            .enumerate()
            .find(|(_, rule)| rule.match_attribute(attribute) == PatternMatch::Match)
    }

    /// Whether `attribute` may be used in a filter at all.
    pub fn is_filterable(&self, attribute: &str) -> bool {
        self.matching_rule(attribute)
            .is_some_and(|(_, rule)| rule.filter_features().is_filterable())
    }

    /// The patterns of every rule that allows filtering, sorted and deduplicated.
    pub fn filterable_patterns(&self) -> BTreeSet<&str> {
        let mut patterns = BTreeSet::new();
        for rule in self
            .rules
            .iter()
            .filter(|rule| rule.filter_features().is_filterable())
        {
            match rule {
                FilterableRule::Field(field) => {
                    patterns.insert(field.as_str());
                }
                FilterableRule::Patterns {
                    attribute_patterns, ..
                } => {
                    patterns.extend(attribute_patterns.iter().map(String::as_str));
                }
            }
        }
        patterns
    }

    /// `_geo` is listed as a plain string: `_geoRadius` and `_geoBoundingBox` work on `_geo`.
    pub fn geo_enabled(&self) -> bool {
        self.rules
            .iter()
            .any(|rule| matches!(rule, FilterableRule::Field(field) if field == "_geo"))
    }

    /// `_geojson` is listed as a plain string: geo filters work on `_geojson` shapes.
    pub fn geojson_enabled(&self) -> bool {
        self.rules
            .iter()
            .any(|rule| matches!(rule, FilterableRule::Field(field) if field == "_geojson"))
    }
}

fn rule_from_json(item: &Value) -> Result<FilterableRule, String> {
    match item {
        Value::String(field) => Ok(FilterableRule::Field(field.clone())),
        Value::Object(object) => {
            let mut attribute_patterns = None;
            let mut facet_search = false;
            let mut filter = FilterFeatures::default();
            for (key, value) in object {
                match key.as_str() {
                    "attributePatterns" => attribute_patterns = Some(string_list(value)?),
                    "features" => (facet_search, filter) = features_from_json(value)?,
                    other => return Err(format!("unknown field `{other}`")),
                }
            }
            let attribute_patterns =
                attribute_patterns.ok_or_else(|| "missing field `attributePatterns`".to_owned())?;
            Ok(FilterableRule::Patterns {
                attribute_patterns,
                facet_search,
                filter,
            })
        }
        _ => Err("a filterable attribute must be a string or an object".to_owned()),
    }
}

fn string_list(value: &Value) -> Result<Vec<String>, String> {
    let Value::Array(items) = value else {
        return Err("attributePatterns must be an array of strings".to_owned());
    };
    items
        .iter()
        .map(|item| {
            item.as_str()
                .map(str::to_owned)
                .ok_or_else(|| "patterns must be strings".to_owned())
        })
        .collect()
}

fn boolean(value: &Value, name: &str) -> Result<bool, String> {
    value
        .as_bool()
        .ok_or_else(|| format!("`{name}` must be a boolean"))
}

fn features_from_json(value: &Value) -> Result<(bool, FilterFeatures), String> {
    let Value::Object(object) = value else {
        return Err("features must be an object".to_owned());
    };
    let mut facet_search = false;
    let mut filter = FilterFeatures::default();
    for (key, value) in object {
        match key.as_str() {
            "facetSearch" => facet_search = boolean(value, key)?,
            "filter" => {
                let Value::Object(filter_object) = value else {
                    return Err("features.filter must be an object".to_owned());
                };
                for (name, flag) in filter_object {
                    match name.as_str() {
                        "equality" => filter.equality = boolean(flag, name)?,
                        "comparison" => filter.comparison = boolean(flag, name)?,
                        other => return Err(format!("unknown field `{other}`")),
                    }
                }
            }
            other => return Err(format!("unknown field `{other}`")),
        }
    }
    Ok((facet_search, filter))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn patterns_match_like_meilisearch() {
        assert_eq!(match_pattern("*", "test"), PatternMatch::Match);
        assert_eq!(match_pattern("test*", "testa"), PatternMatch::Match);
        assert_eq!(match_pattern("*test", "atest"), PatternMatch::Match);
        assert_eq!(match_pattern("*test*", "atesta"), PatternMatch::Match);
        assert_eq!(match_pattern("test*test", "test"), PatternMatch::NoMatch);
        assert_eq!(match_pattern("*test", "testa"), PatternMatch::NoMatch);
        assert_eq!(match_pattern("a.b", "a"), PatternMatch::Parent);
        assert_eq!(match_pattern("a", "a.b"), PatternMatch::NoMatch);
        assert_eq!(match_field_legacy("a", "a.b"), PatternMatch::Match);
        assert_eq!(match_field_legacy("a.b", "a"), PatternMatch::Parent);
        assert_eq!(match_field_legacy("ab", "a"), PatternMatch::NoMatch);
    }

    #[test]
    fn first_matching_rule_decides() {
        let rules = FilterableRules::from_setting(&json!([
            {"attributePatterns": ["price"], "features": {"filter": {"equality": false, "comparison": false}}},
            "price",
            {"attributePatterns": ["genre*"]},
            "_geo"
        ]))
        .expect("the value is present");
        let (index, rule) = rules
            .matching_rule("price")
            .expect("matching_rule succeeds");
        assert_eq!(index, 0);
        assert!(!rule.filter_features().is_filterable());
        assert!(!rules.is_filterable("price"));
        assert!(rules.is_filterable("genres"));
        assert_eq!(
            rules
                .matching_rule("genres")
                .expect("matching_rule succeeds")
                .1
                .filter_features(),
            FilterFeatures::default()
        );
        assert!(rules.geo_enabled());
        assert!(!rules.geojson_enabled());
        assert_eq!(
            rules.filterable_patterns().into_iter().collect::<Vec<_>>(),
            ["_geo", "genre*", "price"]
        );
    }

    #[test]
    fn allowed_operators_follow_features() {
        assert_eq!(
            FilterFeatures {
                equality: false,
                comparison: true
            }
            .allowed_operators(),
            [
                "OR", "AND", "NOT", "<", ">", "<=", ">=", "TO", "IS EMPTY", "IS NULL", "EXISTS"
            ]
        );
        assert!(
            FilterFeatures {
                equality: false,
                comparison: false
            }
            .allowed_operators()
            .is_empty()
        );
    }

    #[test]
    fn malformed_settings_are_refused() {
        assert!(
            FilterableRules::from_setting(&json!([{"attributePatterns": ["a"], "extra": 1}]))
                .is_err()
        );
        assert!(FilterableRules::from_setting(&json!([1])).is_err());
        assert!(FilterableRules::from_setting(&json!([{"features": {}}])).is_err());
    }
}
