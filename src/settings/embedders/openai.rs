//! The OpenAI models Meilisearch knows: their names, native dimensions, whether the
//! dimensions can be lowered, and the check of an `openAi` embedder's `model`/`dimensions`.
//!
//! Invariants: [`DEFAULT_MODEL`] is one of [`MODELS`]; a model that cannot change its
//! dimensions only accepts its native ones; no model accepts more than its native ones.

use serde_json::{Map, Value};

use super::messages;
use crate::errors::ResponseError;

/// One OpenAI embedding model.
#[derive(Debug, Clone, Copy)]
struct Model {
    name: &'static str,
    native_dimensions: u64,
    dimensions_can_change: bool,
}

/// The model an `openAi` embedder uses when none is given.
pub const DEFAULT_MODEL: &str = "text-embedding-3-small";

const MODELS: [Model; 3] = [
    Model {
        name: "text-embedding-ada-002",
        native_dimensions: 1536,
        dimensions_can_change: false,
    },
    Model {
        name: "text-embedding-3-small",
        native_dimensions: 1536,
        dimensions_can_change: true,
    },
    Model {
        name: "text-embedding-3-large",
        native_dimensions: 3072,
        dimensions_can_change: true,
    },
];

/// The names of the supported models, in Meilisearch's order.
const MODEL_NAMES: [&str; 3] = [MODELS[0].name, MODELS[1].name, MODELS[2].name];

/// Checks `model` (given, or the stored/default one at task time) and `dimensions`.
pub fn check_model_and_dimensions(
    name: &str,
    fields: &Map<String, Value>,
) -> Result<(), ResponseError> {
    let Some(Value::String(model_name)) = fields.get("model") else {
        return Ok(());
    };
    let Some(model) = MODELS.iter().find(|model| model.name == model_name) else {
        return Err(messages::unknown_openai_model(
            name,
            model_name,
            &MODEL_NAMES,
        ));
    };
    let Some(dimensions) = fields.get("dimensions").and_then(Value::as_u64) else {
        return Ok(());
    };
    if !model.dimensions_can_change && dimensions != model.native_dimensions {
        return Err(messages::fixed_openai_dimensions(
            name,
            model.name,
            dimensions,
            model.native_dimensions,
        ));
    }
    if dimensions > model.native_dimensions {
        return Err(messages::too_many_openai_dimensions(
            name,
            model.name,
            dimensions,
            model.native_dimensions,
        ));
    }
    Ok(())
}
