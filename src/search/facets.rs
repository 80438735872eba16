//! `facetDistribution` and `facetStats` from the facet counts of every shard.
//!
//! The shards' counts are added value by value, then each field's values are ordered and cut
//! as Meilisearch orders them: numbers first, then strings, at most
//! `faceting.maxValuesPerFacet` values in all. With `sortFacetValuesBy: alpha` and at most
//! [`FEW_CANDIDATES_MAX`] matching documents, Meilisearch reads values document by document
//! and orders numbers by their text ("10" before "9"); with more it walks its facet levels and
//! orders numbers numerically. Strings are always in normalized order. With `count`, values are
//! ordered by decreasing count, ties in decreasing value order.
//!
//! Invariants: a count is the exact number of matching documents holding the value (the
//! shards hold disjoint documents); `facetStats` holds the fields with at least one number.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};
use shards::search::FieldFacetCounts;
use shards::shard::ordered_number;

use crate::settings::apply::StoredSettings;
use crate::settings::model::FacetValuesSort;

/// Matching documents up to which Meilisearch orders numbers as text under `alpha`.
pub const FEW_CANDIDATES_MAX: u64 = 3000;

/// The sum of every shard's counts, per field.
#[derive(Debug, Default)]
pub struct MergedFacets {
    fields: BTreeMap<String, MergedField>,
}

#[derive(Debug, Default)]
struct MergedField {
    /// Ordered-number key → (number, count).
    numbers: BTreeMap<u64, (f64, u64)>,
    /// Normalized → (original spelling, count).
    strings: BTreeMap<String, (String, u64)>,
}

impl MergedFacets {
    /// Adds one shard's counts.
    pub fn add(&mut self, shard: BTreeMap<String, FieldFacetCounts>) {
        for (field, counts) in shard {
            let merged = self.fields.entry(field).or_default();
            for (number, count) in counts.numbers {
                let entry = merged
                    .numbers
                    .entry(ordered_number(number))
                    .or_insert((number, 0));
                entry.1 += count;
            }
            for (normalized, original, count) in counts.strings {
                let entry = merged.strings.entry(normalized).or_insert((original, 0));
                entry.1 += count;
            }
        }
    }

    /// `facetDistribution`, for `candidates` matching documents.
    pub fn distribution(&self, settings: &StoredSettings, candidates: u64) -> Map<String, Value> {
        let mut distribution = Map::new();
        for (field, merged) in &self.fields {
            let order = settings
                .sort_facet_values_by
                .get(field)
                .or_else(|| settings.sort_facet_values_by.get("*"))
                .copied()
                .unwrap_or_default();
            let values = merged.ordered(order, candidates, settings.max_values_per_facet);
            let values: Map<String, Value> = values
                .into_iter()
                .map(|(value, count)| (value, json!(count)))
                .collect();
            distribution.insert(field.clone(), Value::Object(values));
        }
        distribution
    }

    /// The values of `field` by decreasing count (numbers first, as `count` orders them), at
    /// most `max`: what a chat's search tool lists of a facet.
    pub fn values_by_count(&self, field: &str, candidates: u64, max: usize) -> Vec<String> {
        self.fields.get(field).map_or_else(Vec::new, |merged| {
            merged
                .ordered(FacetValuesSort::Count, candidates, max)
                .into_iter()
                .map(|(value, _)| value)
                .collect()
        })
    }

    /// `facetStats`: the smallest and largest number of each field holding numbers.
    pub fn stats(&self) -> Map<String, Value> {
        let mut stats = Map::new();
        for (field, merged) in &self.fields {
            let first = merged.numbers.values().next();
            let last = merged.numbers.values().next_back();
            if let (Some((min, _)), Some((max, _))) = (first, last) {
                stats.insert(field.clone(), json!({"min": min, "max": max}));
            }
        }
        stats
    }
}

impl MergedField {
    /// At most `max` values as `(text, count)`, in Meilisearch's order.
    fn ordered(&self, order: FacetValuesSort, candidates: u64, max: usize) -> Vec<(String, u64)> {
        let mut numbers: Vec<(String, u64)> = self
            .numbers
            .values()
            .map(|(number, count)| (number_text(*number), *count))
            .collect();
        let mut strings: Vec<(String, u64)> = self
            .strings
            .values()
            .map(|(original, count)| (original.clone(), *count))
            .collect();
        match order {
            FacetValuesSort::Alpha if candidates <= FEW_CANDIDATES_MAX => {
                numbers.sort_by(|left, right| left.0.cmp(&right.0));
            }
            FacetValuesSort::Alpha => {}
            FacetValuesSort::Count => {
                // Meilisearch pops its facet values from a max-heap keyed by count, then by
                // value: equal counts come in decreasing value order.
                numbers.reverse();
                strings.reverse();
                numbers.sort_by_key(|(_, count)| std::cmp::Reverse(*count));
                strings.sort_by_key(|(_, count)| std::cmp::Reverse(*count));
            }
        }
        numbers.truncate(max);
        let room = max.saturating_sub(numbers.len());
        numbers.extend(strings.into_iter().take(room));
        numbers
    }
}

/// A number as Meilisearch writes facet values: the shortest text that reads back the same,
/// without a fractional part for integers (`2020`, `1.5`).
fn number_text(number: f64) -> String {
    number.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(numbers: &[(f64, u64)], strings: &[(&str, &str, u64)]) -> FieldFacetCounts {
        FieldFacetCounts {
            numbers: numbers.to_vec(),
            strings: strings
                .iter()
                .map(|(normalized, original, count)| {
                    ((*normalized).to_owned(), (*original).to_owned(), *count)
                })
                .collect(),
        }
    }

    fn merged(shards: Vec<FieldFacetCounts>) -> MergedFacets {
        let mut facets = MergedFacets::default();
        for shard in shards {
            facets.add(BTreeMap::from([("genre".to_owned(), shard)]));
        }
        facets
    }

    #[test]
    fn counts_of_every_shard_are_added_value_by_value() {
        let facets = merged(vec![
            counts(&[(2.0, 1)], &[("drama", "Drama", 2), ("sf", "SF", 1)]),
            counts(&[(2.0, 3), (10.0, 1)], &[("drama", "drama", 1)]),
        ]);
        let distribution = facets.distribution(&StoredSettings::default(), 10);
        assert_eq!(
            Value::Object(distribution),
            json!({"genre": {"10": 1, "2": 4, "Drama": 3, "SF": 1}})
        );
    }

    #[test]
    fn many_candidates_order_numbers_numerically() {
        let facets = merged(vec![counts(&[(2.0, 1), (10.0, 1)], &[])]);
        let distribution = facets.distribution(&StoredSettings::default(), FEW_CANDIDATES_MAX + 1);
        let keys: Vec<&String> = distribution["genre"]
            .as_object()
            .expect("an object")
            .keys()
            .collect();
        assert_eq!(keys, ["2", "10"]);
    }

    #[test]
    fn count_order_puts_the_most_frequent_first_and_cuts_at_the_maximum() {
        let mut settings = StoredSettings::default();
        settings
            .sort_facet_values_by
            .insert("*".to_owned(), FacetValuesSort::Count);
        settings.max_values_per_facet = 2;
        let facets = merged(vec![counts(
            &[],
            &[("a", "a", 1), ("b", "b", 5), ("c", "c", 3)],
        )]);
        let distribution = facets.distribution(&settings, 9);
        assert_eq!(
            Value::Object(distribution),
            json!({"genre": {"b": 5, "c": 3}})
        );
        settings.max_values_per_facet = 10;
        let ties = merged(vec![counts(
            &[(1.0, 1), (2.0, 1), (3.0, 2)],
            &[
                ("apple", "apple", 1),
                ("cherry", "cherry", 2),
                ("date", "date", 1),
            ],
        )]);
        let keys: Vec<String> = ties.distribution(&settings, 9)["genre"]
            .as_object()
            .expect("an object")
            .keys()
            .cloned()
            .collect();
        assert_eq!(keys, ["3", "2", "1", "cherry", "date", "apple"]);
    }

    #[test]
    fn stats_hold_the_extreme_numbers_of_fields_with_numbers() {
        let mut facets = merged(vec![counts(&[(-1.5, 1), (7.0, 2)], &[])]);
        facets.add(BTreeMap::from([(
            "name".to_owned(),
            counts(&[], &[("x", "x", 1)]),
        )]));
        assert_eq!(
            Value::Object(facets.stats()),
            json!({"genre": {"min": -1.5, "max": 7.0}})
        );
    }
}
