//! Embedding a chunk of a batch's documents on the shard's core before the shard applies
//! them: for each remote embedder of the index (`rest`, `openAi`, `ollama`, `huggingFace`,
//! `composite`), every written document is planned (see [`super::embedding_plan`]: what it
//! renders to with the embedder's `documentTemplate` or indexing fragments, what it keeps),
//! the renders are embedded through the core's outgoing client (asynchronous: the core
//! serves searches while the embedder answers), and an [`Operation::SetGenerated`] follows
//! the document's operation with every embedding it has for the embedder afterwards.
//!
//! The same planning embeds the stored documents again after an embedder's settings
//! changed ([`super::reembed`]): then the stored document is both the old and the new
//! version, and the renderers as they were before the change tell what changed.
//!
//! Invariants: a chunk without remote embedders passes through untouched; an embedder or
//! template error fails the chunk (so the batch) with Meilisearch's `vector_embedding_error`
//! or template error, before the shard applies anything of it; operations keep their order.

use std::collections::BTreeMap;

use serde_json::{Map, Value};
use shards::documents::simd_document::SimdParser;
use shards::shard::{Operation, ShardSnapshot, StoredVectors};
use shards::vectors::{GeneratedVector, GeneratedVectors};

use super::embedding_plan::{Given, Input, Plan, Renderers, Subject, given, plan};
use crate::embedders::fragment::FragmentTemplate;
use crate::embedders::{DocumentTemplate, Embedder, EmbedderSettings};
use crate::errors::{ResponseError, document_value_error, shard_error};

/// One remote embedder of an index, as the shard host embeds with it.
#[derive(Debug, Clone)]
pub struct RemoteEmbedder {
    pub name: String,
    pub settings: EmbedderSettings,
    /// The searchable attributes (`None`: every attribute), for `field.is_searchable`.
    pub searchable: Option<Vec<String>>,
    /// For a re-embedding after a settings change: how the embedder rendered before it
    /// (what is stored was computed from those renders), or `None` to compute everything
    /// again. A batch of documents renders as the embedder does now.
    pub previous: Option<Box<EmbedderSettings>>,
    /// A re-embedding that computes everything again (see `previous`).
    pub full: bool,
}

/// One document of a chunk as the embedders see it.
pub struct Target<'a> {
    pub external_id: &'a str,
    pub document: &'a Map<String, Value>,
    /// The stored version and its internal id (`None`: a new document).
    pub stored: Option<(u32, &'a Map<String, Value>)>,
}

/// Embeds what `chunk` needs with every embedder of `embedders` (see the module
/// documentation); the operations come back in order, the documents built, each followed
/// by the embeddings computed for it. `snapshot` holds the stored documents (`None`: the
/// batch deleted them all first).
pub async fn embed_chunk(
    embedders: &[RemoteEmbedder],
    chunk: Vec<Operation>,
    snapshot: Option<&ShardSnapshot>,
    parser: &mut SimdParser,
) -> Result<Vec<Operation>, ResponseError> {
    if embedders.is_empty() {
        return Ok(chunk);
    }
    let operations = built_documents(chunk, parser)?;
    let stored = stored_versions(&operations, snapshot)?;
    let mut positions = Vec::new();
    let mut targets = Vec::new();
    for (position, operation) in operations.iter().enumerate() {
        if let Operation::Replace {
            external_id,
            document,
        } = operation
        {
            positions.push(position);
            targets.push(Target {
                external_id,
                document,
                stored: stored[position].as_ref().map(|(id, map)| (*id, map)),
            });
        }
    }
    let mut generated: BTreeMap<usize, Vec<GeneratedVectors>> = BTreeMap::new();
    for embedder in embedders {
        let computed = generate(embedder, &targets, snapshot).await?;
        for (index, vectors) in computed {
            generated.entry(positions[index]).or_default().push(vectors);
        }
    }
    drop(targets);
    Ok(interleave(operations, generated))
}

/// `operations`, each followed by the embeddings computed for it.
fn interleave(
    operations: Vec<Operation>,
    mut generated: BTreeMap<usize, Vec<GeneratedVectors>>,
) -> Vec<Operation> {
    let mut out = Vec::with_capacity(operations.len() + generated.len());
    for (position, operation) in operations.into_iter().enumerate() {
        let external_id = match &operation {
            Operation::Replace { external_id, .. } => Some(external_id.clone()),
            _ => None,
        };
        out.push(operation);
        if let (Some(external_id), Some(generated)) = (external_id, generated.remove(&position)) {
            out.push(Operation::SetGenerated {
                external_id,
                generated,
            });
        }
    }
    out
}

/// A stored document and its internal id.
type StoredDocument = (u32, Map<String, Value>);

/// The stored version of each written document of `operations` (by position).
fn stored_versions(
    operations: &[Operation],
    snapshot: Option<&ShardSnapshot>,
) -> Result<Vec<Option<StoredDocument>>, ResponseError> {
    operations
        .iter()
        .map(|operation| {
            let (Some(snapshot), Operation::Replace { external_id, .. }) = (snapshot, operation)
            else {
                return Ok(None);
            };
            let Some(id) = snapshot.internal_id(external_id).map_err(shard_error)? else {
                return Ok(None);
            };
            Ok(snapshot
                .document_by_id(id, None)
                .map_err(shard_error)?
                .map(|document| (id, document)))
        })
        .collect()
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

/// The parsed renderers of an embedder: its document template or its indexing fragments.
enum Parsed {
    Template(DocumentTemplate),
    Fragments(Vec<(String, FragmentTemplate)>),
}

/// How `settings` render documents. Fragments were parsed when the embedder was built,
/// so one that does not parse here cannot happen; it renders nothing.
fn parsed(name: &str, settings: &EmbedderSettings) -> Result<Parsed, ResponseError> {
    let fragments = settings.config.indexing_fragments();
    if !fragments.is_empty() {
        let parsed = fragments
            .iter()
            .filter_map(|(name, value)| {
                Some((name.clone(), FragmentTemplate::new(value.clone()).ok()?))
            })
            .collect();
        return Ok(Parsed::Fragments(parsed));
    }
    let text = settings.document_template.as_deref().unwrap_or_default();
    DocumentTemplate::new(text, settings.document_template_max_bytes)
        .map(Parsed::Template)
        .map_err(|error| error.to_settings_error(name))
}

/// Embeds, with one embedder, what `targets` need; answers the computed embeddings by
/// target index.
pub async fn generate(
    embedder: &RemoteEmbedder,
    targets: &[Target<'_>],
    snapshot: Option<&ShardSnapshot>,
) -> Result<Vec<(usize, GeneratedVectors)>, ResponseError> {
    let client = embedder_of(embedder)?;
    let current = parsed(&embedder.name, &embedder.settings)?;
    let previous = match &embedder.previous {
        Some(previous) => Some(parsed(&embedder.name, previous)?),
        None => None,
    };
    let searchable = |field: &str| {
        crate::embedders::template::is_searchable(embedder.searchable.as_deref(), field)
    };
    let renderers = renderers(&current, previous.as_ref(), &searchable);
    let plans = plans(embedder, targets, snapshot, &renderers)?;
    if plans.is_empty() {
        return Ok(Vec::new());
    }
    let embeddings = embed_inputs(&client, &plans).await?;
    Ok(assemble(&embedder.name, plans, embeddings))
}

/// The renderers of `current` beside `previous` (a previous of another kind renders
/// nothing alike: everything changes).
fn renderers<'a>(
    current: &'a Parsed,
    previous: Option<&'a Parsed>,
    searchable: &'a dyn Fn(&str) -> bool,
) -> Renderers<'a> {
    match current {
        Parsed::Template(template) => Renderers::Template {
            current: template,
            previous: match previous {
                Some(Parsed::Template(previous)) => Some(previous),
                _ => None,
            },
            searchable,
        },
        Parsed::Fragments(fragments) => Renderers::Fragments {
            current: fragments,
            previous: match previous {
                Some(Parsed::Fragments(previous)) => previous,
                Some(Parsed::Template(_)) => &[],
                None => fragments,
            },
        },
    }
}

/// The plan of every target that needs one, by target index.
fn plans(
    embedder: &RemoteEmbedder,
    targets: &[Target<'_>],
    snapshot: Option<&ShardSnapshot>,
    renderers: &Renderers<'_>,
) -> Result<Vec<(usize, Plan)>, ResponseError> {
    let mut plans = Vec::new();
    for (index, target) in targets.iter().enumerate() {
        let given = given(target.document, &embedder.name);
        if given == Given::Embeddings {
            continue;
        }
        let vectors: Option<StoredVectors> = match (snapshot, target.stored) {
            (Some(snapshot), Some((id, _))) => snapshot
                .stored_vectors(&embedder.name, id)
                .map_err(shard_error)?,
            _ => None,
        };
        let subject = Subject {
            external_id: target.external_id,
            document: target.document,
            stored: target.stored.map(|(_, document)| document),
            vectors: vectors.as_ref(),
            full: embedder.full,
        };
        if let Some(plan) = plan(&subject, given, renderers)? {
            plans.push((index, plan));
        }
    }
    Ok(plans)
}

/// Embeds every plan's inputs at once; one embedding per input, in order.
async fn embed_inputs(
    embedder: &Embedder,
    plans: &[(usize, Plan)],
) -> Result<Vec<Vec<f32>>, ResponseError> {
    let mut texts = Vec::new();
    let mut fragments = Vec::new();
    for (_, plan) in plans {
        for (_, input) in &plan.inputs {
            match input {
                Input::Text(text) => texts.push(text.clone()),
                Input::Fragment(value) => fragments.push(value.clone()),
            }
        }
    }
    let embedded = if fragments.is_empty() {
        embedder.embed(&texts).await
    } else {
        embedder.embed_fragments(&fragments).await
    };
    embedded.map_err(|error| error.to_response_error())
}

/// Each plan's kept embeddings and its computed ones (taken in order from `embeddings`).
fn assemble(
    name: &str,
    plans: Vec<(usize, Plan)>,
    embeddings: Vec<Vec<f32>>,
) -> Vec<(usize, GeneratedVectors)> {
    let mut embeddings = embeddings.into_iter();
    plans
        .into_iter()
        .map(|(index, plan)| {
            let mut vectors: Vec<GeneratedVector> = plan
                .kept
                .into_iter()
                .map(|(fragment, embedding)| GeneratedVector {
                    fragment,
                    embedding,
                })
                .collect();
            for (fragment, _) in plan.inputs {
                if let Some(embedding) = embeddings.next() {
                    vectors.push(GeneratedVector {
                        fragment,
                        embedding,
                    });
                }
            }
            let generated = GeneratedVectors {
                embedder: name.to_owned(),
                vectors,
            };
            (index, generated)
        })
        .collect()
}

fn embedder_of(embedder: &RemoteEmbedder) -> Result<Embedder, ResponseError> {
    let client = crate::outgoing::shared::core_client()
        .ok_or_else(|| ResponseError::internal("embedding runs only on a core"))?;
    Embedder::new(&embedder.settings.config, client).map_err(|error| error.to_response_error())
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
            previous: None,
            full: false,
        });
    }
    Ok(remote)
}
