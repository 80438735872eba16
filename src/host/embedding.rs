//! Embedding a chunk of a batch's documents on the shard's core before the shard applies
//! them: for each remote embedder of the index (`rest`, `openAi`, `ollama`, `composite`),
//! every document that brings no embeddings of its own for it is rendered with the
//! embedder's `documentTemplate`, the texts are embedded through the core's outgoing client
//! (asynchronous: the core serves searches while the embedder answers), and the vectors go
//! into the document as `_vectors.<embedder> = {"embeddings": [vector], "regenerate": true}`,
//! which the shard then stores as any given vectors.
//!
//! A document brings its own embeddings when `_vectors.<embedder>` is an array, `null`, or
//! an object with `regenerate: false` or with embeddings.
//!
//! Invariants: a chunk without remote embedders passes through untouched; an embedder or
//! template error fails the chunk (so the batch) with Meilisearch's `vector_embedding_error`
//! or template error, before the shard applies anything of it.

use serde_json::{Map, Value, json};
use shards::documents::simd_document::SimdParser;
use shards::shard::Operation;
use shards::vectors::VECTORS_FIELD;

use crate::embedders::{DocumentTemplate, Embedder, EmbedderSettings};
use crate::errors::{ResponseError, document_value_error};

/// One remote embedder of an index, as the shard host embeds with it.
#[derive(Debug, Clone)]
pub struct RemoteEmbedder {
    pub name: String,
    pub settings: EmbedderSettings,
    /// The searchable attributes (`None`: every attribute), for `field.is_searchable`.
    pub searchable: Option<Vec<String>>,
}

/// Embeds what `chunk` needs with every embedder of `embedders` (see the module
/// documentation); the operations come back in order, the documents built.
pub async fn embed_chunk(
    embedders: &[RemoteEmbedder],
    chunk: Vec<Operation>,
    parser: &mut SimdParser,
) -> Result<Vec<Operation>, ResponseError> {
    if embedders.is_empty() {
        return Ok(chunk);
    }
    let mut operations = built_documents(chunk, parser)?;
    for embedder in embedders {
        embed_with(embedder, &mut operations).await?;
    }
    Ok(operations)
}

/// The operations with every written document built (texts parsed).
fn built_documents(
    chunk: Vec<Operation>,
    parser: &mut SimdParser,
) -> Result<Vec<Operation>, ResponseError> {
    chunk
        .into_iter()
        .map(|operation| match operation {
            Operation::ReplaceText { external_id, text } => {
                let document = parser
                    .parse(&text)
                    .map_err(|error| document_value_error(&error))?;
                Ok(Operation::Replace {
                    external_id,
                    document,
                })
            }
            other => Ok(other),
        })
        .collect()
}

/// Whether `document` brings its own embeddings for embedder `name`.
fn brings_embeddings(document: &Map<String, Value>, name: &str) -> bool {
    let Some(entry) = document
        .get(VECTORS_FIELD)
        .and_then(Value::as_object)
        .and_then(|vectors| vectors.get(name))
    else {
        return false;
    };
    match entry {
        Value::Object(fields) => {
            fields.get("regenerate") == Some(&Value::Bool(false))
                || fields
                    .get("embeddings")
                    .is_some_and(|embeddings| !embeddings.is_null())
        }
        _ => true,
    }
}

/// Embeds, with one embedder, the documents of `operations` that need it.
async fn embed_with(
    embedder: &RemoteEmbedder,
    operations: &mut [Operation],
) -> Result<(), ResponseError> {
    let template = template_of(embedder)?;
    let searchable = |field: &str| {
        embedder
            .searchable
            .as_ref()
            .is_none_or(|fields| fields.iter().any(|searchable| searchable == field))
    };
    let mut positions = Vec::new();
    let mut texts = Vec::new();
    for (position, operation) in operations.iter().enumerate() {
        let Operation::Replace {
            external_id,
            document,
        } = operation
        else {
            continue;
        };
        if brings_embeddings(document, &embedder.name) {
            continue;
        }
        let text = template
            .render(document, &searchable)
            .map_err(|error| error.to_document_error(external_id))?;
        positions.push(position);
        texts.push(text);
    }
    if texts.is_empty() {
        return Ok(());
    }
    let vectors = embedder_of(embedder)?
        .embed(&texts)
        .await
        .map_err(|error| error.to_response_error())?;
    for (position, vector) in positions.into_iter().zip(vectors) {
        if let Some(Operation::Replace { document, .. }) = operations.get_mut(position) {
            insert_generated(document, &embedder.name, vector);
        }
    }
    Ok(())
}

fn template_of(embedder: &RemoteEmbedder) -> Result<DocumentTemplate, ResponseError> {
    let text = embedder
        .settings
        .document_template
        .as_deref()
        .unwrap_or_default();
    DocumentTemplate::new(text, embedder.settings.document_template_max_bytes)
        .map_err(|error| error.to_settings_error(&embedder.name))
}

fn embedder_of(embedder: &RemoteEmbedder) -> Result<Embedder, ResponseError> {
    let client = crate::outgoing::shared::core_client()
        .ok_or_else(|| ResponseError::internal("embedding runs only on a core"))?;
    Embedder::new(&embedder.settings.config, client).map_err(|error| error.to_response_error())
}

/// Puts a generated embedding into `document`'s `_vectors`.
fn insert_generated(document: &mut Map<String, Value>, name: &str, vector: Vec<f32>) {
    let vectors = document
        .entry(VECTORS_FIELD)
        .or_insert_with(|| Value::Object(Map::new()));
    if !vectors.is_object() {
        *vectors = Value::Object(Map::new());
    }
    if let Value::Object(vectors) = vectors {
        let embedding: Vec<Value> = vector
            .into_iter()
            .map(shards::vectors::stored::float_json)
            .collect();
        vectors.insert(
            name.to_owned(),
            json!({"embeddings": [embedding], "regenerate": true}),
        );
    }
}

/// The remote embedders of an index's stored `embedders` (every source but `userProvided`,
/// whose vectors only documents bring).
pub fn remote_embedders(
    embedders: &std::collections::BTreeMap<String, Map<String, Value>>,
    searchable: Option<&Vec<String>>,
) -> Result<Vec<RemoteEmbedder>, ResponseError> {
    let mut remote = Vec::new();
    for (name, fields) in embedders {
        let settings = EmbedderSettings::from_map(fields).map_err(ResponseError::internal)?;
        if matches!(
            settings.config,
            crate::embedders::EmbedderConfig::UserProvided { .. }
        ) {
            continue;
        }
        remote.push(RemoteEmbedder {
            name: name.clone(),
            settings,
            searchable: searchable.cloned(),
        });
    }
    Ok(remote)
}
