//! The checks of one embedder's fields beyond their types, as Meilisearch runs them twice:
//! on the update at enqueue ([`Stage::Update`]: only the fields given, the source-specific
//! checks only when the update names a source) and on the merged embedder when the
//! `settingsUpdate` task runs ([`Stage::Merged`]: every field, the source always known).
//!
//! Invariants: a present key counts as given even when `null` (a reset of a field the source
//! disallows is refused, a reset of a mandatory field is a missing field); checks run in
//! Meilisearch's order and the first failure is reported.

use serde_json::{Map, Value};

use super::decode::SubEmbedderSettings;
use super::fields::{CHECKED_FIELDS, FieldStatus, Nesting, Source, field_status};
use super::messages;
use super::openai;
use crate::decode::{JsonError, decode_json_value};
use crate::errors::{ResponseError, codes};

/// The placeholder a REST `request` holds for the text to embed.
const TEXT_PLACEHOLDER: &str = "{{text}}";
/// The placeholder a REST `response` holds where the embedding is.
const EMBEDDING_PLACEHOLDER: &str = "{{embedding}}";
/// The placeholder a REST `request` holds for a fragment to embed.
const FRAGMENT_PLACEHOLDER: &str = "{{fragment}}";
/// The note of a `request` without [`FRAGMENT_PLACEHOLDER`] (Meilisearch's spelling).
const FRAGMENT_PLACEHOLDER_NOTE: &str = "\n  - Note: this template is using fragments, and so expects to contain the placeholder \"{{fragment}}\" rathern than \"{{text}}\"";
/// The note of a `request` without [`TEXT_PLACEHOLDER`].
const TEXT_PLACEHOLDER_NOTE: &str = "\n  - Note: this template is using a document template, and so expects to contain the placeholder \"{{text}}\" rather than \"{{fragment}}\"";

/// Which form of an embedder is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// The fields of an update, at enqueue.
    Update,
    /// The embedder after the update was merged onto it, when the task runs.
    Merged,
}

/// Checks an embedder of an update at enqueue.
pub fn check_embedder_update(name: &str, fields: &Map<String, Value>) -> Result<(), ResponseError> {
    check_embedder(name, fields, Stage::Update)
}

/// Checks a merged embedder (its source given or `openAi`) when the settings task runs.
pub fn check_merged_embedder(name: &str, fields: &Map<String, Value>) -> Result<(), ResponseError> {
    check_embedder(name, fields, Stage::Merged)
}

fn check_embedder(
    name: &str,
    fields: &Map<String, Value>,
    stage: Stage,
) -> Result<(), ResponseError> {
    check_template_max_bytes(name, fields)?;
    if fields.get("dimensions").and_then(Value::as_u64) == Some(0) {
        return Err(messages::zero_dimensions(name));
    }
    if let Some(Value::String(url)) = fields.get("url") {
        url::Url::parse(url).map_err(|error| messages::invalid_url(name, url, error))?;
    }
    if let Some(Value::String(template)) = fields.get("documentTemplate") {
        crate::embedders::DocumentTemplate::new(template, usize::MAX)
            .map_err(|error| error.to_settings_error(name))?;
    }
    check_rest_templates(fields, stage)?;
    let source = match fields.get("source") {
        Some(Value::String(source)) => Source::from_name(source),
        _ if stage == Stage::Merged => Some(Source::OpenAi),
        _ => None,
    };
    let Some(source) = source else {
        return Ok(());
    };
    check_fields_for_source(name, source, fields, Nesting::NotNested)?;
    match source {
        Source::OpenAi => openai::check_model_and_dimensions(name, fields),
        Source::Composite => check_composite(name, fields),
        _ => Ok(()),
    }
}

/// A `documentTemplateMaxBytes` of zero is refused beside a `documentTemplate`.
fn check_template_max_bytes(name: &str, fields: &Map<String, Value>) -> Result<(), ResponseError> {
    let has_template = fields.get("documentTemplate").is_some_and(Value::is_string);
    let max_bytes = fields
        .get("documentTemplateMaxBytes")
        .and_then(Value::as_u64);
    if has_template && max_bytes == Some(0) {
        return Err(messages::zero_template_max_bytes(name));
    }
    Ok(())
}

/// The fragments of a REST embedder: both lists given or neither (merged), not beside a
/// `documentTemplate` (update); then its `request` and `response` templates.
fn check_rest_templates(fields: &Map<String, Value>, stage: Stage) -> Result<(), ResponseError> {
    let indexing = fragment_names(fields, "indexingFragments");
    let search = fragment_names(fields, "searchFragments");
    if stage == Stage::Merged && indexing.is_empty() != search.is_empty() {
        return Err(messages::inconsistent_fragments(&indexing, &search));
    }
    let has_fragments = !indexing.is_empty() || !search.is_empty();
    let has_template = fields.get("documentTemplate").is_some_and(Value::is_string);
    if has_fragments && stage == Stage::Update && has_template {
        return Err(messages::template_and_fragments(
            indexing.len(),
            search.len(),
        ));
    }
    let resets_fragments = ["indexingFragments", "searchFragments"]
        .iter()
        .any(|key| fields.get(*key).is_some_and(Value::is_null));
    let placeholders = if has_fragments {
        Placeholders::Fragment
    } else if stage == Stage::Update && !resets_fragments {
        Placeholders::Either
    } else {
        Placeholders::Text
    };
    check_request_and_response(fields, placeholders)
}

/// The names of the (not `null`) fragments of `key`.
fn fragment_names<'a>(fields: &'a Map<String, Value>, key: &str) -> Vec<&'a str> {
    match fields.get(key) {
        Some(Value::Object(fragments)) => fragments
            .iter()
            .filter(|(_, fragment)| !fragment.is_null())
            .map(|(name, _)| name.as_str())
            .collect(),
        _ => Vec::new(),
    }
}

/// Which placeholder a REST `request` must hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Placeholders {
    Text,
    Fragment,
    /// An update that may rely on stored fragments: either.
    Either,
}

fn check_request_and_response(
    fields: &Map<String, Value>,
    placeholders: Placeholders,
) -> Result<(), ResponseError> {
    let Some(request) = fields.get("request").filter(|request| !request.is_null()) else {
        return Ok(());
    };
    if placeholders == Placeholders::Fragment {
        check_fragment_templates(fields, "indexingFragments")?;
    }
    let has_text = contains_text(request, TEXT_PLACEHOLDER);
    let has_fragment = contains_text(request, FRAGMENT_PLACEHOLDER);
    let missing = match placeholders {
        Placeholders::Fragment => {
            (!has_fragment).then_some((FRAGMENT_PLACEHOLDER, FRAGMENT_PLACEHOLDER_NOTE))
        }
        Placeholders::Text => (!has_text).then_some((TEXT_PLACEHOLDER, TEXT_PLACEHOLDER_NOTE)),
        Placeholders::Either => {
            (!has_text && !has_fragment).then_some((TEXT_PLACEHOLDER, TEXT_PLACEHOLDER_NOTE))
        }
    };
    if let Some((placeholder, note)) = missing {
        return Err(messages::missing_placeholder("request", placeholder, note));
    }
    if placeholders == Placeholders::Fragment {
        check_fragment_templates(fields, "searchFragments")?;
    }
    match fields.get("response") {
        Some(response)
            if !response.is_null() && !contains_text(response, EMBEDDING_PLACEHOLDER) =>
        {
            Err(messages::missing_placeholder(
                "response",
                EMBEDDING_PLACEHOLDER,
                "",
            ))
        }
        _ => Ok(()),
    }
}

/// Every string of every fragment of `key` parses as a Liquid template (checked with the
/// `request` they go into, as Meilisearch checks them).
fn check_fragment_templates(fields: &Map<String, Value>, key: &str) -> Result<(), ResponseError> {
    let Some(Value::Object(fragments)) = fields.get(key) else {
        return Ok(());
    };
    for (name, fragment) in fragments {
        let Some(value) = fragment.get("value") else {
            continue;
        };
        crate::embedders::fragment::FragmentTemplate::new(value.clone()).map_err(|error| {
            messages::fragment_template(&error.parsing_message(&format!(".{key}.{name}")))
        })?;
    }
    Ok(())
}

/// Whether a string of `value` (at any depth) is `text`.
fn contains_text(value: &Value, text: &str) -> bool {
    match value {
        Value::String(string) => string == text,
        Value::Array(items) => items.iter().any(|item| contains_text(item, text)),
        Value::Object(map) => map.values().any(|item| contains_text(item, text)),
        _ => false,
    }
}

/// Every field against what `source` allows or requires at `nesting`.
fn check_fields_for_source(
    name: &str,
    source: Source,
    fields: &Map<String, Value>,
    nesting: Nesting,
) -> Result<(), ResponseError> {
    for field in CHECKED_FIELDS {
        let given = fields.contains_key(field);
        let value_set = fields.get(field).is_some_and(|value| !value.is_null());
        match field_status(source, field, nesting) {
            FieldStatus::Disallowed if given => {
                return Err(messages::field_unavailable(name, source, field, nesting));
            }
            FieldStatus::Mandatory if !value_set => {
                return Err(messages::missing_field(name, source, field));
            }
            FieldStatus::Mandatory | FieldStatus::Allowed | FieldStatus::Disallowed => {}
        }
    }
    Ok(())
}

/// A composite's `searchEmbedder`, then its `indexingEmbedder`.
fn check_composite(name: &str, fields: &Map<String, Value>) -> Result<(), ResponseError> {
    if let Some(Value::Object(search)) = fields.get("searchEmbedder") {
        check_nested(name, search, Nesting::Search)?;
    }
    if let Some(Value::Object(indexing)) = fields.get("indexingEmbedder") {
        check_template_max_bytes(name, indexing)?;
        check_nested(name, indexing, Nesting::Indexing)?;
    }
    Ok(())
}

fn check_nested(
    name: &str,
    fields: &Map<String, Value>,
    nesting: Nesting,
) -> Result<(), ResponseError> {
    let Some(source) = fields
        .get("source")
        .and_then(Value::as_str)
        .and_then(Source::from_name)
    else {
        return Err(messages::missing_nested_source(name, nesting));
    };
    for key in ["searchEmbedder", "indexingEmbedder"] {
        if let Some(value) = fields.get(key).filter(|value| !value.is_null()) {
            decode_json_value::<SubEmbedderSettings, JsonError<codes::InvalidSettingsEmbedders>>(
                value.clone(),
            )
            .map_err(|error| messages::nested_decoding(name, nesting, &error.message))?;
        }
    }
    if matches!(source, Source::Composite | Source::UserProvided) {
        return Err(messages::source_not_nestable(name, source, nesting));
    }
    check_fields_for_source(name, source, fields, nesting)
}
