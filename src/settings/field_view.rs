//! What the settings make of one field of an index, as `POST /indexes/{uid}/fields` lists it
//! (Meilisearch 1.41 §1.2): displayed, searchable, sortable, distinct, custom ranking rule,
//! filterable features with the facet values' sort, and localized languages.
//!
//! Invariants (Meilisearch's field metadata rules):
//! - a field is displayed when `displayedAttributes` is `*` or lists it exactly; distinct
//!   when it is exactly the distinct attribute; a ranking rule when an `asc`/`desc` rule
//!   names it exactly;
//! - it is searchable or sortable when it is, or is nested in, a listed attribute
//!   (`searchableAttributes: *` makes every field searchable);
//! - its filterable features and locales come from the first rule that matches it;
//! - `_vectors` (and what it nests) is only ever displayed; `_geo` and `_geojson` (and what
//!   they nest) may be sortable and filterable but nothing else.

use serde_json::{Map, Value, json};
use shards::analysis::{languages, pattern_matches};
use shards::filter::FilterableRules;

use super::apply::StoredSettings;
use super::model::FacetValuesSort;
use super::ranking_rule::RankingRule;
use crate::errors::ResponseError;

/// The reserved field of user-provided embeddings.
const VECTORS_FIELD: &str = "_vectors";
/// The reserved geo fields.
const GEO_FIELDS: [&str; 2] = ["_geo", "_geojson"];
/// The `sortFacetValuesBy` key that applies to every facet.
const EVERY_FACET: &str = "*";

/// The capabilities of one field under an index's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldView {
    pub name: String,
    pub displayed: bool,
    pub searchable: bool,
    pub sortable: bool,
    pub distinct: bool,
    /// `Some("asc")` or `Some("desc")` when a custom ranking rule names the field.
    pub ranking_order: Option<&'static str>,
    pub facet_search: bool,
    pub equality: bool,
    pub comparison: bool,
    pub sort_by: FacetValuesSort,
    /// charabia language names (`Eng`, `Fra`, ...) of the first matching localized rule.
    pub locales: Vec<Value>,
}

impl FieldView {
    /// Filterable in any way (filter operators or facet search).
    pub fn is_filterable(&self) -> bool {
        self.equality || self.comparison || self.facet_search
    }

    /// The JSON object of the route, in Meilisearch's key order.
    pub fn to_json(&self) -> Value {
        let mut ranking_rule = Map::new();
        ranking_rule.insert("enabled".into(), json!(self.ranking_order.is_some()));
        if let Some(order) = self.ranking_order {
            ranking_rule.insert("order".into(), json!(order));
        }
        json!({
            "name": self.name,
            "displayed": {"enabled": self.displayed},
            "searchable": {"enabled": self.searchable},
            "sortable": {"enabled": self.sortable},
            "distinct": {"enabled": self.distinct},
            "rankingRule": ranking_rule,
            "filterable": {
                "enabled": self.is_filterable(),
                "sortBy": self.sort_by,
                "facetSearch": self.facet_search,
                "equality": self.equality,
                "comparison": self.comparison,
            },
            "localized": {"locales": self.locales},
        })
    }
}

/// The settings compiled once for describing many fields.
pub struct FieldDescriber<'settings> {
    settings: &'settings StoredSettings,
    filterable: FilterableRules,
}

impl<'settings> FieldDescriber<'settings> {
    pub fn new(settings: &'settings StoredSettings) -> Result<Self, ResponseError> {
        let filterable =
            FilterableRules::from_setting(&settings.setting_view("filterableAttributes"))
                .map_err(ResponseError::internal)?;
        Ok(FieldDescriber {
            settings,
            filterable,
        })
    }

    /// What the settings make of the field at path `name`.
    pub fn describe(&self, name: &str) -> FieldView {
        let settings = self.settings;
        let displayed = settings
            .displayed_attributes
            .as_ref()
            .is_none_or(|attributes| attributes.iter().any(|attribute| attribute == name));
        let sort_by = settings
            .sort_facet_values_by
            .get(name)
            .or_else(|| settings.sort_facet_values_by.get(EVERY_FACET))
            .copied()
            .unwrap_or_default();
        let mut view = FieldView {
            name: name.to_owned(),
            displayed,
            searchable: false,
            sortable: false,
            distinct: false,
            ranking_order: None,
            facet_search: false,
            equality: false,
            comparison: false,
            sort_by,
            locales: Vec::new(),
        };
        if is_nested_in(name, VECTORS_FIELD) {
            view.sort_by = FacetValuesSort::default();
            return view;
        }
        view.sortable = settings
            .sortable_attributes
            .iter()
            .any(|attribute| is_nested_in(name, attribute));
        self.set_filterable(&mut view);
        if GEO_FIELDS.iter().any(|geo| is_nested_in(name, geo)) {
            return view;
        }
        view.searchable = settings
            .searchable_attributes
            .as_ref()
            .is_none_or(|attributes| {
                attributes
                    .iter()
                    .any(|attribute| is_nested_in(name, attribute))
            });
        view.distinct = settings.distinct_attribute.as_deref() == Some(name);
        view.ranking_order = self.ranking_order(name);
        view.locales = self.locales(name);
        view
    }

    fn set_filterable(&self, view: &mut FieldView) {
        if let Some((_, rule)) = self.filterable.matching_rule(&view.name) {
            let features = rule.filter_features();
            view.facet_search = rule.facet_search();
            view.equality = features.equality;
            view.comparison = features.comparison;
        }
    }

    /// The order of the last `asc`/`desc` rule naming the field exactly.
    fn ranking_order(&self, name: &str) -> Option<&'static str> {
        self.settings
            .ranking_rules
            .iter()
            .rev()
            .filter_map(|rule| match rule {
                RankingRule::Asc(field) if field == name => Some("asc"),
                RankingRule::Desc(field) if field == name => Some("desc"),
                _ => None,
            })
            .next()
    }

    fn locales(&self, name: &str) -> Vec<Value> {
        let Some(rule) = self
            .settings
            .localized_attributes
            .iter()
            .flatten()
            .find(|rule| {
                rule.attribute_patterns
                    .iter()
                    .any(|pattern| pattern_matches(pattern, name))
            })
        else {
            return Vec::new();
        };
        rule.locales
            .iter()
            .flat_map(|locale| languages(&[locale.canonical().to_owned()]))
            .filter_map(|language| serde_json::to_value(language).ok())
            .collect()
    }
}

/// `field` is `attribute` or nested in it (`a.b` is nested in `a`).
fn is_nested_in(field: &str, attribute: &str) -> bool {
    field
        .strip_prefix(attribute)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
}

/// The `filter` of a fields listing: every criterion given must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldsFilter {
    pub attribute_patterns: Option<Vec<String>>,
    pub displayed: Option<bool>,
    pub searchable: Option<bool>,
    pub sortable: Option<bool>,
    pub distinct: Option<bool>,
    pub ranking_rule: Option<bool>,
    pub filterable: Option<bool>,
}

impl FieldsFilter {
    /// Whether `field` passes: a name one of the patterns matches as a whole (a field that
    /// only contains a match does not pass), and every capability asked for as asked.
    pub fn accepts(&self, field: &FieldView) -> bool {
        let pattern_matches_name = self.attribute_patterns.as_ref().is_none_or(|patterns| {
            patterns
                .iter()
                .any(|pattern| pattern_matches(pattern, &field.name))
        });
        let wanted =
            |criterion: Option<bool>, actual: bool| criterion.is_none_or(|want| want == actual);
        pattern_matches_name
            && wanted(self.displayed, field.displayed)
            && wanted(self.searchable, field.searchable)
            && wanted(self.sortable, field.sortable)
            && wanted(self.distinct, field.distinct)
            && wanted(self.ranking_rule, field.ranking_order.is_some())
            && wanted(self.filterable, field.is_filterable())
    }
}
