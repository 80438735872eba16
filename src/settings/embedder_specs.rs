//! What the shards need of an index's embedders: each one's name, dimensions, quantization,
//! whether documents must bring its vectors (`userProvided`), and its indexing fragments.
//!
//! An embedder whose dimensions are not known yet (a remote embedder whose dimensions are
//! found by embedding a test text) has no spec: the shards keep no vectors for it.

use serde_json::{Map, Value};
use shards::vectors::EmbedderSpec;

use super::apply::StoredSettings;

/// The `source` of a `userProvided` embedder.
pub const USER_PROVIDED_SOURCE: &str = "userProvided";

/// The specs of `settings`' embedders whose dimensions are known, by name.
pub fn embedder_specs(settings: &StoredSettings) -> Vec<EmbedderSpec> {
    settings
        .embedders
        .keys()
        .filter_map(|name| embedder_spec(settings, name))
        .collect()
}

/// The spec of embedder `name` of `settings`, if it exists and its dimensions are known
/// (stated, or inferred when its settings changed).
pub fn embedder_spec(settings: &StoredSettings, name: &str) -> Option<EmbedderSpec> {
    let fields = settings.embedders.get(name)?;
    let dimensions = match stated_dimensions(fields) {
        Some(dimensions) => dimensions,
        None => *settings.inferred_dimensions.get(name)?,
    };
    Some(EmbedderSpec {
        name: name.to_owned(),
        dimensions,
        binary_quantized: fields
            .get("binaryQuantized")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        requires_vectors: embedder_source(fields) == USER_PROVIDED_SOURCE,
        fragments: indexing_fragment_names(fields),
    })
}

/// The names of an embedder's indexing fragments (a `rest` embedder's, or a composite's
/// indexing side's), sorted.
pub fn indexing_fragment_names(fields: &Map<String, Value>) -> Vec<String> {
    let owner = match fields.get("indexingEmbedder") {
        Some(Value::Object(indexing)) if embedder_source(fields) == "composite" => indexing,
        _ => fields,
    };
    let mut names: Vec<String> = match owner.get("indexingFragments") {
        Some(Value::Object(fragments)) => fragments.keys().cloned().collect(),
        _ => Vec::new(),
    };
    names.sort();
    names
}

/// The `dimensions` an embedder's settings state.
pub fn stated_dimensions(fields: &Map<String, Value>) -> Option<usize> {
    usize::try_from(fields.get("dimensions").and_then(Value::as_u64)?).ok()
}

/// An embedder's `source` (Meilisearch's default is `openAi`).
pub fn embedder_source(fields: &Map<String, Value>) -> &str {
    fields
        .get("source")
        .and_then(Value::as_str)
        .unwrap_or("openAi")
}

/// An embedder's `distribution` shift `(mean, sigma)`, when set.
pub fn embedder_distribution(fields: &Map<String, Value>) -> Option<(f64, f64)> {
    let distribution = fields.get("distribution")?;
    Some((
        distribution.get("mean")?.as_f64()?,
        distribution.get("sigma")?.as_f64()?,
    ))
}
