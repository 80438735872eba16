//! The index settings of the benchmark, the same on both servers (the primary key is
//! `search_compare`'s, `crate::compare::side::PRIMARY_KEY`).
//!
//! Invariant: the settings are applied before the first payload, so no server reindexes on a
//! settings change during the ladder. They differ from `search_compare`'s
//! (`crate::compare::setup::comparison_settings`) only in also making `stars` (which no
//! document holds) filterable.

use serde_json::{Value, json};

/// The searchable attributes, in ranking order.
pub const SEARCHABLE_ATTRIBUTES: [&str; 2] = ["name", "summary"];
/// The filterable attributes, also sortable.
pub const FILTERABLE_ATTRIBUTES: [&str; 3] = ["year", "rank", "stars"];

/// The index settings of the benchmark.
pub fn scale_settings() -> Value {
    json!({
        "searchableAttributes": SEARCHABLE_ATTRIBUTES,
        "filterableAttributes": FILTERABLE_ATTRIBUTES,
        "sortableAttributes": FILTERABLE_ATTRIBUTES,
    })
}
