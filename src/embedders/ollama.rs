//! Ollama's embedding endpoints as REST shapes: `/api/embed` takes a batch
//! (`{"model", "input": [texts]}` → `embeddings`), the older `/api/embeddings` one text
//! (`{"model", "prompt"}` → `embedding`).
//!
//! Invariant: any other URL is refused with Meilisearch's `unsupported Ollama URL` error.

use std::collections::BTreeMap;

use serde_json::json;

use super::error::{ConfigurationSource, Fault, NewEmbedderError, NewEmbedderErrorKind};
use super::rest::{REPEAT_PLACEHOLDER, REQUEST_PLACEHOLDER, RESPONSE_PLACEHOLDER, RestShape};

/// The path of Ollama's batch endpoint.
pub const BATCH_PATH: &str = "/api/embed";
/// The path of Ollama's one-text endpoint.
pub const SINGLE_PATH: &str = "/api/embeddings";

/// The REST shape of an Ollama embedder at `url`.
pub fn shape(url: &str, api_key: Option<&str>, model: &str) -> Result<RestShape, NewEmbedderError> {
    let (request, response) = if url.ends_with(SINGLE_PATH) {
        (
            json!({"model": model, "prompt": REQUEST_PLACEHOLDER}),
            json!({"embedding": RESPONSE_PLACEHOLDER}),
        )
    } else if url.ends_with(BATCH_PATH) {
        (
            json!({"model": model, "input": [REQUEST_PLACEHOLDER, REPEAT_PLACEHOLDER]}),
            json!({"embeddings": [RESPONSE_PLACEHOLDER, REPEAT_PLACEHOLDER]}),
        )
    } else {
        return Err(NewEmbedderError {
            kind: NewEmbedderErrorKind::OllamaUnsupportedUrl(url.to_owned()),
            fault: Fault::User,
        });
    };
    RestShape::new(
        url,
        api_key,
        BTreeMap::new(),
        request,
        response,
        ConfigurationSource::Ollama,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embedders::rest::tests::body;

    #[test]
    fn each_endpoint_has_its_shape_and_others_are_refused() {
        let batch = shape("http://localhost:11434/api/embed", None, "nomic").expect("valid");
        let request = batch
            .request(&["a".to_owned(), "b".to_owned()])
            .expect("built");
        assert_eq!(
            body(&request),
            json!({"model": "nomic", "input": ["a", "b"]})
        );
        let single = shape("http://localhost:11434/api/embeddings", None, "nomic").expect("valid");
        assert_eq!(single.batch_size(), 1);
        let request = single.request(&["a".to_owned()]).expect("built");
        assert_eq!(body(&request), json!({"model": "nomic", "prompt": "a"}));
        let error = shape("http://localhost:11434/other", None, "nomic").expect_err("refused");
        assert_eq!(
            error.to_string(),
            "user error: unsupported Ollama URL.\n  - For `ollama` sources, the URL must end with `/api/embed` or `/api/embeddings`\n  - Got `http://localhost:11434/other`"
        );
    }
}
