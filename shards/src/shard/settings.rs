//! The settings that decide which fields get facet indexes: `filterableAttributes` and
//! `sortableAttributes`, stored in the shard's `meta` tree.
//!
//! Invariant: a path is faceted (numbers, strings, presence bitmaps) exactly when the filterable
//! rules make it filterable or it is listed as sortable; `_geo` points are kept exactly when
//! `_geo` is filterable or sortable. The facet indexes always match the stored settings.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::filter::FilterableRules;

use crate::error::{ShardError, ShardResult};

/// The facet-relevant settings of a shard.
#[derive(Debug, Clone, PartialEq)]
pub struct FacetSettings {
    filterable_setting: Value,
    filterable: FilterableRules,
    sortable: BTreeSet<String>,
}

impl Default for FacetSettings {
    fn default() -> Self {
        FacetSettings {
            filterable_setting: Value::Array(Vec::new()),
            filterable: FilterableRules::default(),
            sortable: BTreeSet::new(),
        }
    }
}

impl FacetSettings {
    /// Builds the settings from the `filterableAttributes` JSON and sortable attribute names.
    pub fn new(filterable_setting: &Value, sortable: &[String]) -> Result<Self, String> {
        Ok(FacetSettings {
            filterable_setting: filterable_setting.clone(),
            filterable: FilterableRules::from_setting(filterable_setting)?,
            sortable: sortable.iter().cloned().collect(),
        })
    }

    pub fn filterable_rules(&self) -> &FilterableRules {
        &self.filterable
    }

    pub fn filterable_setting(&self) -> &Value {
        &self.filterable_setting
    }

    pub fn sortable(&self) -> &BTreeSet<String> {
        &self.sortable
    }

    pub fn is_faceted(&self, path: &str) -> bool {
        self.sortable.contains(path) || self.filterable.is_filterable(path)
    }

    pub fn keeps_geo(&self) -> bool {
        self.sortable.contains("_geo") || self.filterable.geo_enabled()
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let value = json!({
            "filterable": self.filterable_setting,
            "sortable": self.sortable,
        });
        serde_json::to_vec(&value).expect("a JSON value always serializes")
    }

    pub fn from_bytes(bytes: &[u8]) -> ShardResult<Self> {
        let corrupted = || ShardError::corrupted("facet settings");
        let value: Value = serde_json::from_slice(bytes).map_err(|_| corrupted())?;
        let sortable: Vec<String> = value
            .get("sortable")
            .and_then(Value::as_array)
            .ok_or_else(corrupted)?
            .iter()
            .map(|name| name.as_str().map(str::to_owned).ok_or_else(corrupted))
            .collect::<ShardResult<_>>()?;
        let filterable = value.get("filterable").ok_or_else(corrupted)?;
        FacetSettings::new(filterable, &sortable).map_err(|_| corrupted())
    }
}
