//! Embedding an index's documents again after a remote embedder's settings changed in a way
//! that changes its embeddings (source, model, url, request, response, template,
//! fragments…): on each shard, every document whose embeddings for it may be generated
//! again is planned as [`super::embedding`] plans a document (against the renderers as they
//! were, so only what renders differently is embedded, unless the change computes
//! everything again) inside a prepared batch; a [`super::batch::Commit`] or
//! [`super::batch::Abort`] follows.
//!
//! Invariants: embeddings a user gave (`regenerate: false`) are never replaced; documents
//! are unchanged (only their vectors are written); the batch commits under the shard's last
//! applied batch uid, so replaying the task queue after a crash embeds again and changes
//! nothing else.

use serde_json::{Map, Value};
use shards::shard::{Operation, PreparedBatch, ShardSnapshot};

use super::batch::APPLY_CHUNK_DOCUMENTS;
use super::embedding::{RemoteEmbedder, Target, generate};
use super::protocol::ShardRequest;
use super::{Preparing, ShardAddress, ShardHost};
use crate::errors::{ResponseError, shard_error};

/// Embeds the shard's documents again with `embedders`, uncommitted; answers how many
/// documents were planned.
#[derive(Debug)]
pub struct Reembed {
    pub embedders: Vec<RemoteEmbedder>,
    pub primary_key: String,
}

impl ShardRequest for Reembed {
    type Answer = u64;
    const IS_WRITE: bool = true;

    async fn run(self, host: &ShardHost, address: ShardAddress) -> Result<u64, ResponseError> {
        let shard = host.shard(&address)?;
        host.prepared.borrow_mut().remove(&address);
        let snapshot = shard.read().map_err(shard_error)?;
        let mut batch = shard.prepare_vectors().map_err(shard_error)?;
        let mut embedded = 0;
        for embedder in &self.embedders {
            let (next, count) = reembed_with(&snapshot, batch, embedder, &self.primary_key).await?;
            batch = next;
            embedded += count;
        }
        let preparing = Preparing {
            batch,
            snapshot,
            delete_all: false,
            embedders: Vec::new(),
        };
        host.hold_prepared(address, preparing);
        Ok(embedded)
    }
}

/// Plans, with `embedder`, every document of `snapshot` it may regenerate.
async fn reembed_with(
    snapshot: &ShardSnapshot,
    mut batch: PreparedBatch,
    embedder: &RemoteEmbedder,
    primary_key: &str,
) -> Result<(PreparedBatch, u64), ResponseError> {
    let mut chunk: Vec<(u32, String, Map<String, Value>)> =
        Vec::with_capacity(APPLY_CHUNK_DOCUMENTS);
    let mut count = 0;
    for id in snapshot.document_ids() {
        if !snapshot
            .regenerates(&embedder.name, id)
            .map_err(shard_error)?
        {
            continue;
        }
        let document = snapshot
            .document_by_id(id, None)
            .map_err(shard_error)?
            .ok_or_else(|| ResponseError::internal("a live id without its document"))?;
        let external_id =
            shards::documents::document_id::extract_document_id(&document, primary_key)
                .map_err(crate::errors::documents_error)?;
        chunk.push((id, external_id, document));
        count += 1;
        if chunk.len() >= APPLY_CHUNK_DOCUMENTS {
            let full = std::mem::take(&mut chunk);
            batch = embed_and_apply(batch, snapshot, embedder, &full).await?;
        }
    }
    if !chunk.is_empty() {
        batch = embed_and_apply(batch, snapshot, embedder, &chunk).await?;
    }
    Ok((batch, count))
}

/// Embeds `chunk` with `embedder` and records what changed in `batch`.
async fn embed_and_apply(
    mut batch: PreparedBatch,
    snapshot: &ShardSnapshot,
    embedder: &RemoteEmbedder,
    chunk: &[(u32, String, Map<String, Value>)],
) -> Result<PreparedBatch, ResponseError> {
    let targets: Vec<Target<'_>> = chunk
        .iter()
        .map(|(id, external_id, document)| Target {
            external_id,
            document,
            stored: Some((*id, document)),
        })
        .collect();
    let computed = generate(embedder, &targets, Some(snapshot)).await?;
    let operations: Vec<Operation> = computed
        .into_iter()
        .map(|(index, generated)| Operation::SetGenerated {
            external_id: chunk[index].1.clone(),
            generated: vec![generated],
        })
        .collect();
    if operations.is_empty() {
        return Ok(batch);
    }
    crate::runtime::indexing_thread::run(move || batch.apply_chunk(operations).map(|()| batch))
        .await
        .map_err(shard_error)
}
