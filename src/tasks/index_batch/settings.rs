//! Settings updates: a settings task changes the index record's settings while the batch is
//! planned, in task order with the batch's document tasks; once the documents are applied,
//! the settings the shards index by (the facet settings — filterable attributes, and the
//! sortable, distinct and custom ranking rule fields —, the text settings and the embedders)
//! are pushed to every shard when they changed.
//!
//! Invariants: an invalid settings task fails alone and changes nothing (embedder errors
//! carry the `` Index `uid`: `` prefix); the settings tasks
//! of a batch whose documents could not be applied fail with the documents' error; the
//! record (and so the catalog) changes only when the documents and the shard settings were
//! both applied.

use serde_json::Value;

use super::BatchWork;
use crate::coordinator::catalog::IndexRecord;
use crate::embedders::{Embedder, EmbedderConfig, EmbedderSettings};
use crate::errors::{Code, ResponseError};
use crate::host::embedding::{RemoteEmbedder, remote_embedders};
use crate::host::reembed::Reembed;
use crate::host::settings::{SetEmbedders, SetFacetSettings, SetTextSettings};
use crate::outgoing::shared::core_client;
use crate::settings::apply::StoredSettings;
use crate::settings::embedder_specs::{embedder_specs, stated_dimensions};
use crate::settings::ranking_rule::RankingRule;
use crate::settings::text_settings::text_settings;

/// Applies a settings task to the record's settings.
pub(super) fn apply_settings(
    record: &mut IndexRecord,
    settings: &serde_json::Map<String, Value>,
    is_deletion: bool,
) -> Result<(), ResponseError> {
    let update = if is_deletion {
        crate::settings::model::Settings::cleared()
    } else {
        crate::settings::decode::decode_settings_body(Value::Object(settings.clone()))?
    };
    let index_uid = record.uid.clone();
    record
        .settings
        .apply(update)
        .map_err(|error| index_scoped(error, &index_uid))
}

/// A settings error the task reports as Meilisearch does: embedder errors name the index
/// (`` Index `uid`: ``), the others as they are.
fn index_scoped(error: ResponseError, index_uid: &str) -> ResponseError {
    match error.code {
        Code::InvalidSettingsEmbedders | Code::VectorEmbeddingError => {
            error.prefixed(&format!("Index `{index_uid}`: "))
        }
        _ => error,
    }
}

impl BatchWork {
    /// Tells every shard the settings it indexes by, when they changed from `before`: the
    /// facet settings (filterable and sortable attributes) and the text settings.
    pub(super) async fn apply_shard_settings(
        &self,
        before: &StoredSettings,
        record: &mut IndexRecord,
    ) -> Result<(), ResponseError> {
        infer_dimensions(before, &mut record.settings)
            .await
            .map_err(|error| error.prefixed(&format!("Index `{}`: ", record.uid)))?;
        let settings = &record.settings;
        let sortable = faceted_for_ranking(settings);
        if before.filterable_attributes != settings.filterable_attributes
            || faceted_for_ranking(before) != sortable
        {
            let filterable = settings.setting_view("filterableAttributes");
            self.coordinator
                .on_every_shard(&record.shard_set(), |_| SetFacetSettings {
                    filterable: filterable.clone(),
                    sortable: sortable.clone(),
                })
                .await?;
        }
        let text = text_settings(settings);
        if text_settings(before) != text {
            self.coordinator
                .on_every_shard(&record.shard_set(), |_| SetTextSettings {
                    settings: Box::new(text.clone()),
                })
                .await?;
        }
        let specs = embedder_specs(settings);
        if embedder_specs(before) != specs {
            self.coordinator
                .on_every_shard(&record.shard_set(), |_| SetEmbedders {
                    specs: specs.clone(),
                })
                .await?;
        }
        self.reembed_changed(before, record).await
    }
}

/// The fields the shards facet besides the filterable ones, as Meilisearch's engine facets
/// them: the sortable attributes, the distinct attribute and the fields of custom
/// `field:asc|desc` ranking rules (sorted, each once).
pub(super) fn faceted_for_ranking(settings: &StoredSettings) -> Vec<String> {
    let mut fields: Vec<String> = settings.sortable_attributes.iter().cloned().collect();
    fields.extend(settings.distinct_attribute.iter().cloned());
    fields.extend(settings.ranking_rules.iter().filter_map(|rule| match rule {
        RankingRule::Asc(field) | RankingRule::Desc(field) => Some(field.clone()),
        _ => None,
    }));
    fields.sort();
    fields.dedup();
    fields
}

/// Finds, by embedding a test text, the dimensions of every embedder that states none and
/// whose embeddings the change since `before` changes (the others keep what was found before); the
/// dimensions of removed embedders are forgotten.
async fn infer_dimensions(
    before: &StoredSettings,
    settings: &mut StoredSettings,
) -> Result<(), ResponseError> {
    let embedders = settings.embedders.clone();
    settings
        .inferred_dimensions
        .retain(|name, _| embedders.contains_key(name));
    for (name, fields) in &embedders {
        let embedder_settings =
            EmbedderSettings::from_map(fields).map_err(ResponseError::internal)?;
        if before.embedders.get(name) != Some(fields) {
            // Built as Meilisearch builds it when its settings change: its templates and
            // fragments parse, or the task fails.
            let client = core_client()
                .ok_or_else(|| ResponseError::internal("settings apply only on a core"))?;
            Embedder::new(&embedder_settings.config, client)
                .map_err(|error| error.to_response_error())?;
        }
        let unchanged = embeddings_change(before, settings, name).is_none()
            && settings.inferred_dimensions.contains_key(name);
        if stated_dimensions(fields).is_some() || unchanged {
            continue;
        }
        settings.inferred_dimensions.remove(name);
        if matches!(
            embedder_settings.config,
            EmbedderConfig::UserProvided { .. }
        ) {
            continue;
        }
        let client = core_client()
            .ok_or_else(|| ResponseError::internal("settings apply only on a core"))?;
        let embedder = Embedder::new(&embedder_settings.config, client)
            .map_err(|error| error.to_response_error())?;
        let dimensions = match embedder.dimensions() {
            Some(dimensions) => dimensions,
            None => embedder
                .infer_dimensions()
                .await
                .map_err(|error| error.to_response_error())?,
        };
        settings
            .inferred_dimensions
            .insert(name.clone(), dimensions);
    }
    Ok(())
}

/// Fields of an embedder whose change leaves its embeddings as they are (search fragments
/// only shape query embeddings).
const FIELDS_KEEPING_EMBEDDINGS: [&str; 5] = [
    "distribution",
    "binaryQuantized",
    "apiKey",
    "headers",
    "searchFragments",
];

/// Fields whose change re-embeds only the documents that render differently.
const FIELDS_RENDERING_DOCUMENTS: [&str; 3] = [
    "documentTemplate",
    "documentTemplateMaxBytes",
    "indexingFragments",
];

/// How embedder `name`'s embeddings change with the settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EmbeddingsChange {
    /// Every document that may be regenerated is embedded again.
    Full,
    /// Only the documents whose rendering changed are (a template or fragment change).
    Renders,
}

/// Whether embedder `name`'s embeddings must be computed again: it is new, or a field
/// that shapes its embeddings changed (see [`EmbeddingsChange`]).
fn embeddings_change(
    before: &StoredSettings,
    after: &StoredSettings,
    name: &str,
) -> Option<EmbeddingsChange> {
    let (old, new) = match (before.embedders.get(name), after.embedders.get(name)) {
        (Some(old), Some(new)) => (old, new),
        (None, Some(_)) => return Some(EmbeddingsChange::Full),
        _ => return None,
    };
    let shaping = |fields: &serde_json::Map<String, Value>| -> serde_json::Map<String, Value> {
        fields
            .iter()
            .filter(|(field, _)| {
                !FIELDS_KEEPING_EMBEDDINGS.contains(&field.as_str())
                    && !FIELDS_RENDERING_DOCUMENTS.contains(&field.as_str())
            })
            .map(|(field, value)| (field.clone(), value.clone()))
            .collect()
    };
    let has_fragments = |fields: &serde_json::Map<String, Value>| {
        fields
            .get("indexingFragments")
            .and_then(Value::as_object)
            .is_some_and(|fragments| !fragments.is_empty())
    };
    if shaping(old) != shaping(new) || has_fragments(old) != has_fragments(new) {
        return Some(EmbeddingsChange::Full);
    }
    let max_bytes = |fields: &serde_json::Map<String, Value>| {
        fields
            .get("documentTemplateMaxBytes")
            .and_then(Value::as_u64)
            .unwrap_or(crate::embedders::config::DEFAULT_DOCUMENT_TEMPLATE_MAX_BYTES as u64)
    };
    // A smaller limit only saves work: the longer renders embedded before stay.
    let renders_change = old.get("documentTemplate") != new.get("documentTemplate")
        || old.get("indexingFragments") != new.get("indexingFragments")
        || max_bytes(new) > max_bytes(old);
    renders_change.then_some(EmbeddingsChange::Renders)
}

impl BatchWork {
    /// Embeds the index's documents again with every remote embedder whose embeddings the
    /// settings change changed, in two phases over every shard (see
    /// [`crate::host::reembed`]).
    async fn reembed_changed(
        &self,
        before: &StoredSettings,
        record: &IndexRecord,
    ) -> Result<(), ResponseError> {
        let Some(primary_key) = record.primary_key.clone() else {
            return Ok(());
        };
        let mut embedders: Vec<RemoteEmbedder> = Vec::new();
        let remote = remote_embedders(
            &record.settings.embedders,
            record.settings.searchable_attributes.as_ref(),
        )?;
        for mut embedder in remote {
            match embeddings_change(before, &record.settings, &embedder.name) {
                None => continue,
                Some(EmbeddingsChange::Full) => embedder.full = true,
                Some(EmbeddingsChange::Renders) => {
                    let fields = &before.embedders[&embedder.name];
                    let previous =
                        EmbedderSettings::from_map(fields).map_err(ResponseError::internal)?;
                    embedder.previous = Some(Box::new(previous));
                }
            }
            embedders.push(embedder);
        }
        if embedders.is_empty() {
            return Ok(());
        }
        let prepared = self
            .prepare_every_shard(&record.shard_set(), |_| Reembed {
                embedders: embedders.clone(),
                primary_key: primary_key.clone(),
            })
            .await;
        self.commit_or_abort(&record.shard_set(), prepared)
            .await
            .map(drop)
    }
}
