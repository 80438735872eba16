//! OpenAI's embeddings API as a REST shape: `{"model", "input": [texts], "dimensions"}`
//! with `Authorization: Bearer`, answered with `data[i].embedding`.
//!
//! Invariants: the model is one of OpenAI's three embedding models (an unknown name
//! falls back to the default one, as Meilisearch does); `dimensions` is sent only to a
//! model that can shorten its embeddings, and the dimensions are always known without a
//! test request.

use std::collections::BTreeMap;

use serde_json::json;

use super::config::OPENAI_DEFAULT_MODEL;
use super::error::{ConfigurationSource, NewEmbedderError};
use super::rest::{REPEAT_PLACEHOLDER, REQUEST_PLACEHOLDER, RESPONSE_PLACEHOLDER, RestShape};

/// OpenAI's embedding models: name, native dimensions, and whether `dimensions` may
/// shorten them.
const MODELS: [(&str, usize, bool); 3] = [
    ("text-embedding-ada-002", 1536, false),
    ("text-embedding-3-small", 1536, true),
    ("text-embedding-3-large", 3072, true),
];
/// The entry of [`OPENAI_DEFAULT_MODEL`] in [`MODELS`].
const DEFAULT_MODEL_INDEX: usize = 1;

/// The model used for `name`: its name, native dimensions and whether it can shorten.
fn model(name: &str) -> (&'static str, usize, bool) {
    debug_assert_eq!(MODELS[DEFAULT_MODEL_INDEX].0, OPENAI_DEFAULT_MODEL);
    MODELS
        .iter()
        .copied()
        .find(|(known, _, _)| *known == name)
        .unwrap_or(MODELS[DEFAULT_MODEL_INDEX])
}

/// The dimensions of `model`'s embeddings with `dimensions` asked for.
pub fn dimensions(model_name: &str, dimensions: Option<usize>) -> usize {
    let (_, native, shortens) = model(model_name);
    match dimensions {
        Some(asked) if shortens => asked,
        _ => native,
    }
}

/// The REST shape of an OpenAI embedder.
pub fn shape(
    url: &str,
    api_key: Option<&str>,
    model_name: &str,
    dimensions: Option<usize>,
) -> Result<RestShape, NewEmbedderError> {
    let (name, _, shortens) = model(model_name);
    let mut request = json!({
        "model": name,
        "input": [REQUEST_PLACEHOLDER, REPEAT_PLACEHOLDER],
    });
    if let (true, Some(dimensions)) = (shortens, dimensions) {
        request["dimensions"] = dimensions.into();
    }
    let response = json!({"data": [{"embedding": RESPONSE_PLACEHOLDER}, REPEAT_PLACEHOLDER]});
    RestShape::new(
        url,
        api_key.filter(|key| !key.is_empty()),
        BTreeMap::new(),
        request,
        response,
        ConfigurationSource::OpenAi,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embedders::rest::tests::body;

    #[test]
    fn the_request_names_the_model_and_the_shortened_dimensions() {
        let shape = shape(
            "https://api.openai.com/v1/embeddings",
            Some("sk"),
            "text-embedding-3-large",
            Some(256),
        )
        .expect("valid");
        let request = shape.request(&["hello".to_owned()]).expect("built");
        assert_eq!(
            body(&request),
            json!({"model": "text-embedding-3-large", "input": ["hello"], "dimensions": 256})
        );
        assert_eq!(dimensions("text-embedding-3-large", Some(256)), 256);
        assert_eq!(dimensions("text-embedding-ada-002", Some(256)), 1536);
        assert_eq!(dimensions("unknown", None), 1536);
        let ada =
            super::shape("http://x/", None, "text-embedding-ada-002", Some(3)).expect("valid");
        let request = ada.request(&["a".to_owned()]).expect("built");
        assert_eq!(
            body(&request),
            json!({"model": "text-embedding-ada-002", "input": ["a"]})
        );
    }
}
