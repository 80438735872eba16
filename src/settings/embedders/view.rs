//! The read view of a stored embedder (`GET /settings`, `GET /settings/embedders`): the
//! fields Meilisearch shows for its source, in Meilisearch's order, with the defaults it
//! fills in (OpenAI and Hugging Face models, the document template and its byte limit, the
//! Hugging Face revision and pooling, REST headers), the top-level `apiKey` masked (revealed
//! only in what an export sends).
//!
//! Invariants: a field the source disallows is never shown; a composite shows its
//! sub-embedders with their own defaults, the search one without a document template.

use serde_json::{Map, Value, json};

use super::fields::{
    EMBEDDER_FIELDS, FieldStatus, Nesting, SUB_EMBEDDER_FIELDS, Source, field_status,
};
use super::openai::DEFAULT_MODEL;
use crate::auth::masked_secret::masked_secret;
use crate::settings::model::{DEFAULT_DOCUMENT_TEMPLATE, DEFAULT_DOCUMENT_TEMPLATE_MAX_BYTES};

/// The model of a `huggingFace` embedder that names none.
const HUGGING_FACE_DEFAULT_MODEL: &str = "BAAI/bge-base-en-v1.5";
/// The revision of [`HUGGING_FACE_DEFAULT_MODEL`] used when neither model nor revision is
/// given.
const HUGGING_FACE_DEFAULT_REVISION: &str = "617ca489d9e86b49b8167676d8220688b99db36e";
/// The pooling of a `huggingFace` embedder that names none.
const DEFAULT_POOLING: &str = "useModel";

/// The fields a sub-embedder's view never shows.
const NOT_SHOWN_IN_SUB_EMBEDDERS: [&str; 4] = [
    "distribution",
    "binaryQuantized",
    "searchEmbedder",
    "indexingEmbedder",
];

/// The view of one stored embedder.
pub fn embedder_view(fields: &Map<String, Value>) -> Value {
    let mut view = view_at(fields, Nesting::NotNested);
    if let Some(Value::String(key)) = view.get_mut("apiKey") {
        *key = masked_secret(key);
    }
    Value::Object(view)
}

/// The view of one stored embedder with its `apiKey` as stored: what an export sends to
/// another server, which needs the key to embed.
pub fn embedder_view_revealing_api_key(fields: &Map<String, Value>) -> Value {
    Value::Object(view_at(fields, Nesting::NotNested))
}

fn view_at(fields: &Map<String, Value>, nesting: Nesting) -> Map<String, Value> {
    let source = fields
        .get("source")
        .and_then(Value::as_str)
        .and_then(Source::from_name)
        .unwrap_or(Source::OpenAi);
    let order: &[&str] = match nesting {
        Nesting::NotNested => &EMBEDDER_FIELDS,
        Nesting::Search | Nesting::Indexing => &SUB_EMBEDDER_FIELDS,
    };
    let mut view = Map::new();
    for field in order {
        let hidden = nesting != Nesting::NotNested && NOT_SHOWN_IN_SUB_EMBEDDERS.contains(field);
        if hidden || field_status(source, field, nesting) == FieldStatus::Disallowed {
            continue;
        }
        if let Some(value) = shown(source, field, fields) {
            view.insert((*field).to_owned(), value);
        }
    }
    view
}

/// The value shown for an allowed `field` of a `source` embedder, if any.
fn shown(source: Source, field: &str, fields: &Map<String, Value>) -> Option<Value> {
    let given = fields.get(field).filter(|value| !value.is_null()).cloned();
    let has_fragments = ["indexingFragments", "searchFragments"].iter().any(|key| {
        fields
            .get(*key)
            .and_then(Value::as_object)
            .is_some_and(|map| !map.is_empty())
    });
    match field {
        "source" => Some(json!(source.name())),
        "model" => match source {
            Source::OpenAi => given.or_else(|| Some(json!(DEFAULT_MODEL))),
            Source::HuggingFace => given.or_else(|| Some(json!(HUGGING_FACE_DEFAULT_MODEL))),
            _ => given,
        },
        "revision" if !fields.contains_key("model") => {
            given.or_else(|| Some(json!(HUGGING_FACE_DEFAULT_REVISION)))
        }
        "pooling" => given.or_else(|| Some(json!(DEFAULT_POOLING))),
        "documentTemplate" | "documentTemplateMaxBytes" if has_fragments => None,
        "documentTemplate" => given.or_else(|| Some(json!(DEFAULT_DOCUMENT_TEMPLATE))),
        "documentTemplateMaxBytes" => given
            .filter(|bytes| bytes.as_u64() != Some(0))
            .or_else(|| Some(json!(DEFAULT_DOCUMENT_TEMPLATE_MAX_BYTES))),
        "headers" => given.or_else(|| Some(json!({}))),
        "indexingFragments" | "searchFragments" => {
            given.filter(|fragments| fragments.as_object().is_some_and(|map| !map.is_empty()))
        }
        "searchEmbedder" => sub_view(fields, field, Nesting::Search),
        "indexingEmbedder" => sub_view(fields, field, Nesting::Indexing),
        _ => given,
    }
}

fn sub_view(fields: &Map<String, Value>, field: &str, nesting: Nesting) -> Option<Value> {
    match fields.get(field) {
        Some(Value::Object(sub)) => Some(Value::Object(view_at(sub, nesting))),
        _ => None,
    }
}
