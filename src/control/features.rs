//! Experimental features: the fifteen runtime toggles of `/experimental-features`.
//!
//! Invariants:
//! - `legacySearch` is always `true`: coresearch runs one search pipeline, Meilisearch 1.41's,
//!   which 1.50 calls legacy; a patch turning it off is refused ([`FeaturesPatch::check`]);
//! - `disableDocumentsFetchQueue` decides whether document listings wait in the search queue
//!   as searches do (they do by default, as in Meilisearch 1.50);
//! - the persisted value is the toggles as last patched; flags given on the command line
//!   (`--experimental-enable-metrics`, `--experimental-enable-logs-route`,
//!   `--experimental-contains-filter`) force their toggle on in what requests see, without
//!   being persisted;
//! - the JSON form always has all fifteen fields, in Meilisearch 1.50's order.

use serde::{Deserialize, Serialize};

/// The fifteen toggles, in wire order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RuntimeFeatures {
    pub metrics: bool,
    pub logs_route: bool,
    pub edit_documents_by_function: bool,
    pub contains_filter: bool,
    pub dynamic_search_rules: bool,
    pub network: bool,
    pub get_task_documents_route: bool,
    pub task_queue_compaction_route: bool,
    pub composite_embedders: bool,
    pub chat_completions: bool,
    pub multimodal: bool,
    pub foreign_keys: bool,
    /// Document listings (`GET /documents`, `POST /documents/fetch`) skip the search queue.
    pub disable_documents_fetch_queue: bool,
    /// Always `true` (see the module's invariants): read as `true` whatever a file or a
    /// dump says.
    #[serde(skip_deserializing, default = "legacy_search_is_on")]
    pub legacy_search: bool,
    /// The `POST /render-template` route.
    pub render_route: bool,
}

fn legacy_search_is_on() -> bool {
    true
}

impl Default for RuntimeFeatures {
    fn default() -> Self {
        RuntimeFeatures {
            metrics: false,
            logs_route: false,
            edit_documents_by_function: false,
            contains_filter: false,
            dynamic_search_rules: false,
            network: false,
            get_task_documents_route: false,
            task_queue_compaction_route: false,
            composite_embedders: false,
            chat_completions: false,
            multimodal: false,
            foreign_keys: false,
            disable_documents_fetch_queue: false,
            legacy_search: legacy_search_is_on(),
            render_route: false,
        }
    }
}

/// A partial update: each toggle either set or left as it is (absent or `null`). Decoded
/// from the `PATCH /experimental-features` body; unknown fields and wrong types are
/// `bad_request`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, deserr::Deserr)]
#[deserr(error = crate::decode::JsonError, rename_all = camelCase, deny_unknown_fields)]
pub struct FeaturesPatch {
    #[deserr(default)]
    pub metrics: Option<bool>,
    #[deserr(default)]
    pub logs_route: Option<bool>,
    #[deserr(default)]
    pub edit_documents_by_function: Option<bool>,
    #[deserr(default)]
    pub contains_filter: Option<bool>,
    #[deserr(default)]
    pub dynamic_search_rules: Option<bool>,
    #[deserr(default)]
    pub network: Option<bool>,
    #[deserr(default)]
    pub get_task_documents_route: Option<bool>,
    #[deserr(default)]
    pub task_queue_compaction_route: Option<bool>,
    #[deserr(default)]
    pub composite_embedders: Option<bool>,
    #[deserr(default)]
    pub chat_completions: Option<bool>,
    #[deserr(default)]
    pub multimodal: Option<bool>,
    #[deserr(default)]
    pub foreign_keys: Option<bool>,
    #[deserr(default)]
    pub disable_documents_fetch_queue: Option<bool>,
    #[deserr(default)]
    pub legacy_search: Option<bool>,
    #[deserr(default)]
    pub render_route: Option<bool>,
}

/// What refuses `legacySearch: false`.
pub const LEGACY_SEARCH_REFUSAL: &str = "Invalid value at `.legacySearch`: coresearch runs only the search pipeline of Meilisearch 1.41, which Meilisearch 1.50 calls legacy, so `legacySearch` cannot be `false`.";

impl FeaturesPatch {
    /// The patch's refusal, if any: turning `legacySearch` off.
    pub fn check(&self) -> Result<(), &'static str> {
        match self.legacy_search {
            Some(false) => Err(LEGACY_SEARCH_REFUSAL),
            _ => Ok(()),
        }
    }
}

/// The toggles that command-line flags force on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ForcedFeatures {
    pub metrics: bool,
    pub logs_route: bool,
    pub contains_filter: bool,
}

impl RuntimeFeatures {
    /// The toggles after `patch`.
    pub fn patched(self, patch: &FeaturesPatch) -> RuntimeFeatures {
        RuntimeFeatures {
            metrics: patch.metrics.unwrap_or(self.metrics),
            logs_route: patch.logs_route.unwrap_or(self.logs_route),
            edit_documents_by_function: patch
                .edit_documents_by_function
                .unwrap_or(self.edit_documents_by_function),
            contains_filter: patch.contains_filter.unwrap_or(self.contains_filter),
            dynamic_search_rules: patch
                .dynamic_search_rules
                .unwrap_or(self.dynamic_search_rules),
            network: patch.network.unwrap_or(self.network),
            get_task_documents_route: patch
                .get_task_documents_route
                .unwrap_or(self.get_task_documents_route),
            task_queue_compaction_route: patch
                .task_queue_compaction_route
                .unwrap_or(self.task_queue_compaction_route),
            composite_embedders: patch
                .composite_embedders
                .unwrap_or(self.composite_embedders),
            chat_completions: patch.chat_completions.unwrap_or(self.chat_completions),
            multimodal: patch.multimodal.unwrap_or(self.multimodal),
            foreign_keys: patch.foreign_keys.unwrap_or(self.foreign_keys),
            disable_documents_fetch_queue: patch
                .disable_documents_fetch_queue
                .unwrap_or(self.disable_documents_fetch_queue),
            legacy_search: true,
            render_route: patch.render_route.unwrap_or(self.render_route),
        }
    }

    /// The toggles as requests see them: persisted ones, with the forced ones switched on.
    pub fn effective(self, forced: ForcedFeatures) -> RuntimeFeatures {
        RuntimeFeatures {
            metrics: self.metrics || forced.metrics,
            logs_route: self.logs_route || forced.logs_route,
            contains_filter: self.contains_filter || forced.contains_filter,
            ..self
        }
    }

    /// The toggles that gate parts of the filter language (`CONTAINS`, `_shard`, vector
    /// filters).
    pub fn filter_features(self) -> shards::filter::EnabledFeatures {
        shards::filter::EnabledFeatures {
            contains_filter: self.contains_filter,
            network: self.network,
            multimodal: self.multimodal,
        }
    }

    /// The wire JSON, all fifteen fields in order.
    pub fn to_json(self) -> String {
        assert!(self.legacy_search, "coresearch has only the legacy search");
        serde_json::to_string(&self).expect("fifteen booleans always serialize")
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn json_has_all_fifteen_fields_in_wire_order() {
        let json = RuntimeFeatures::default().to_json();
        assert_eq!(
            json,
            "{\"metrics\":false,\"logsRoute\":false,\"editDocumentsByFunction\":false,\
             \"containsFilter\":false,\"dynamicSearchRules\":false,\"network\":false,\
             \"getTaskDocumentsRoute\":false,\"taskQueueCompactionRoute\":false,\
             \"compositeEmbedders\":false,\"chatCompletions\":false,\"multimodal\":false,\
             \"foreignKeys\":false,\"disableDocumentsFetchQueue\":false,\
             \"legacySearch\":true,\"renderRoute\":false}"
        );
    }

    #[test]
    fn patch_changes_only_the_given_toggles() {
        let before = RuntimeFeatures {
            network: true,
            ..RuntimeFeatures::default()
        };
        let patch = FeaturesPatch {
            metrics: Some(true),
            network: None,
            multimodal: Some(false),
            ..FeaturesPatch::default()
        };
        let after = before.patched(&patch);
        assert!(after.metrics);
        assert!(after.network);
        assert!(!after.multimodal);
        assert!(!after.foreign_keys);
        assert!(!after.render_route);
        let after = after.patched(&FeaturesPatch {
            render_route: Some(true),
            ..FeaturesPatch::default()
        });
        assert!(after.render_route && after.metrics && after.network);
        let after = after.patched(&FeaturesPatch {
            disable_documents_fetch_queue: Some(true),
            legacy_search: Some(true),
            ..FeaturesPatch::default()
        });
        assert!(after.disable_documents_fetch_queue && after.legacy_search);
    }

    #[test]
    fn legacy_search_cannot_be_turned_off() {
        let off = FeaturesPatch {
            legacy_search: Some(false),
            ..FeaturesPatch::default()
        };
        assert_eq!(off.check(), Err(LEGACY_SEARCH_REFUSAL));
        for kept in [None, Some(true)] {
            let patch = FeaturesPatch {
                legacy_search: kept,
                ..FeaturesPatch::default()
            };
            assert_eq!(patch.check(), Ok(()));
        }
        for file in [
            r#"{"metrics":true}"#,
            r#"{"metrics":true,"legacySearch":false}"#,
        ] {
            let persisted: RuntimeFeatures =
                serde_json::from_str(file).expect("an older file or a dump decodes");
            assert!(persisted.legacy_search && persisted.metrics, "{file}");
        }
    }

    #[test]
    fn forced_toggles_show_on_without_changing_the_persisted_value() {
        let persisted = RuntimeFeatures::default();
        let forced = ForcedFeatures {
            metrics: true,
            logs_route: false,
            contains_filter: true,
        };
        let effective = persisted.effective(forced);
        assert!(effective.metrics && effective.contains_filter && !effective.logs_route);
        assert!(!persisted.metrics);
    }
}
