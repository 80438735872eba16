//! The errors of embedder settings checks, with Meilisearch's exact messages. Every one is an
//! `invalid_settings_embedders` error except the REST template ones
//! (`vector_embedding_error`).

use super::fields::{FieldStatus, Nesting, Source, field_status, fields_allowed, sources_allowing};
use crate::errors::{Code, ResponseError};

fn embedders_error(message: String) -> ResponseError {
    ResponseError::new(Code::InvalidSettingsEmbedders, message)
}

fn backquoted(names: impl Iterator<Item = &'static str>) -> String {
    names
        .map(|name| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `field` given for a source (at a nesting) that does not allow it.
pub fn field_unavailable(
    name: &str,
    source: Source,
    field: &str,
    nesting: Nesting,
) -> ResponseError {
    let context = nesting.in_context();
    let source_name = source.name();
    let mut message = format!(
        "`.embedders.{}`: Field `{field}` unavailable for source `{source_name}`{context}.",
        nesting.located_name(name)
    );
    let sources = sources_allowing(field, nesting);
    if !sources.is_empty() {
        message.push_str(&format!(
            "\n  - note: `{field}` is available for sources: {}",
            backquoted(sources.into_iter().map(Source::name))
        ));
    }
    message.push_str(&format!(
        "\n  - note: available fields for source `{source_name}`{context}: {}",
        backquoted(fields_allowed(source, nesting).into_iter())
    ));
    if field_status(source, field, Nesting::NotNested) != FieldStatus::Disallowed {
        message.push_str(&format!(
            "\n  - note: `{field}` is available when source `{source_name}` is not{context}"
        ));
    }
    embedders_error(message)
}

/// A field the source requires is missing.
pub fn missing_field(name: &str, source: Source, field: &str) -> ResponseError {
    embedders_error(format!(
        "`.embedders.{name}`: Missing field `{field}` (note: this field is mandatory for source `{}`)",
        source.name()
    ))
}

/// A nested embedder uses a source nested embedders cannot use.
pub fn source_not_nestable(name: &str, source: Source, nesting: Nesting) -> ResponseError {
    embedders_error(format!(
        "`.embedders.{}.source`: Source `{}` is not available in a nested embedder",
        nesting.located_name(name),
        source.name()
    ))
}

/// A nested embedder without `source`.
pub fn missing_nested_source(name: &str, nesting: Nesting) -> ResponseError {
    embedders_error(format!(
        "`.embedders.{}`: Missing field `source`.\n  - note: this field is mandatory for nested embedders",
        nesting.located_name(name)
    ))
}

/// A nested embedder's own `searchEmbedder`/`indexingEmbedder` that does not decode.
pub fn nested_decoding(name: &str, nesting: Nesting, message: &str) -> ResponseError {
    embedders_error(format!(
        "`.embedders.{}`: {message}{}",
        nesting.located_name(name),
        nesting.nesting_note()
    ))
}

/// `dimensions: 0`.
pub fn zero_dimensions(name: &str) -> ResponseError {
    embedders_error(format!(
        "`.embedders.{name}.dimensions`: `dimensions` cannot be zero"
    ))
}

/// `documentTemplateMaxBytes: 0` beside a `documentTemplate`.
pub fn zero_template_max_bytes(name: &str) -> ResponseError {
    embedders_error(format!(
        "`.embedders.{name}.documentTemplateMaxBytes`: `documentTemplateMaxBytes` cannot be zero"
    ))
}

/// A `url` that does not parse.
pub fn invalid_url(name: &str, url: &str, error: url::ParseError) -> ResponseError {
    embedders_error(format!(
        "`.embedders.{name}.url`: could not parse `{url}`: {error}"
    ))
}

/// An OpenAI model Meilisearch does not know.
pub fn unknown_openai_model(name: &str, model: &str, supported: &[&str]) -> ResponseError {
    embedders_error(format!(
        "`.embedders.{name}.model`: Invalid model `{model}` for OpenAI. Supported models: {supported:?}"
    ))
}

/// Dimensions other than the native ones of a model that cannot change them.
pub fn fixed_openai_dimensions(
    name: &str,
    model: &str,
    dimensions: u64,
    native: u64,
) -> ResponseError {
    embedders_error(format!(
        "`.embedders.{name}.dimensions`: Model `{model}` does not support overriding its native dimensions of {native}. Found {dimensions}"
    ))
}

/// Dimensions above a model's own.
pub fn too_many_openai_dimensions(
    name: &str,
    model: &str,
    dimensions: u64,
    maximum: u64,
) -> ResponseError {
    embedders_error(format!(
        "`.embedders.{name}.dimensions`: Model `{model}` does not support overriding its dimensions to a value higher than {maximum}. Found {dimensions}"
    ))
}

/// `binaryQuantized` going from `true` to `false`.
pub fn binary_quantization_disabled(name: &str) -> ResponseError {
    embedders_error(format!(
        "`.embedders.{name}.binaryQuantized`: Cannot disable the binary quantization.\n - Note: Binary quantization is a lossy operation that cannot be reverted.\n - Hint: Add a new embedder that is non-quantized and regenerate the vectors."
    ))
}

/// More embedders than an index may hold.
pub fn too_many_embedders(count: usize, maximum: usize) -> ResponseError {
    embedders_error(format!(
        "Too many embedders in the configuration. Found {count}, but limited to {maximum}."
    ))
}

/// A REST `request` or `response` template without its placeholder.
pub fn missing_placeholder(template: &str, placeholder: &str, note: &str) -> ResponseError {
    embedding_error(&format!(
        "in `{template}`: \"{placeholder}\" not found{note}"
    ))
}

/// The most fragment names an inconsistent-fragments message lists.
const LISTED_FRAGMENTS: usize = 3;

/// Fragments declared on one side only.
pub fn inconsistent_fragments(indexing: &[&str], search: &[&str]) -> ResponseError {
    let listed = |names: &[&str]| {
        let more = if names.len() > LISTED_FRAGMENTS {
            ", ..."
        } else {
            ""
        };
        let shown: Vec<&str> = names.iter().take(LISTED_FRAGMENTS).copied().collect();
        format!("{} fragments: {}{more}", names.len(), shown.join(", "))
    };
    let message = if indexing.is_empty() {
        format!(
            "`indexingFragments` is empty, but `searchFragments` declares {}\n  - Hint: declare at least one fragment in `indexingFragments` or remove fragments from `searchFragments` by setting them to `null`",
            listed(search)
        )
    } else {
        format!(
            "`searchFragments` is empty, but `indexingFragments` declares {}\n - Hint: declare at least one fragment in `searchFragments` or remove fragments from `indexingFragments` by setting them to `null`",
            listed(indexing)
        )
    };
    embedding_error(&format!("inconsistent fragments: {message}"))
}

/// Fragments beside a `documentTemplate`.
pub fn template_and_fragments(indexing: usize, search: usize) -> ResponseError {
    embedding_error(&format!(
        "cannot pass both fragments and a document template.\n  - Note: {indexing} fragments declared in `indexingFragments` and {search} fragments declared in `search_fragments_len`.\n  - Hint: remove the declared fragments or remove the `documentTemplate`"
    ))
}

/// A fragment whose template does not parse (`message` names it and says why).
pub fn fragment_template(message: &str) -> ResponseError {
    embedding_error(message)
}

fn embedding_error(message: &str) -> ResponseError {
    ResponseError::new(
        Code::VectorEmbeddingError,
        format!("Error while generating embeddings: user error: {message}"),
    )
}
