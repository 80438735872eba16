//! The write path of a batch on one shard: [`Prepare`] opens the batch's write transaction,
//! [`Apply`] and [`ApplyRead`] bring chunks of its planned documents, [`Commit`] makes it
//! durable and [`Abort`] drops it.
//!
//! Invariants: a chunk applies inside the batch prepared on its shard (none prepared is an
//! internal error, never a silent no-op); the analysis a chunk needs runs on the core's
//! indexing thread, [`APPLY_CHUNK_DOCUMENTS`] documents per hand-off.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Map, Value};
use shards::documents::operation::{Outcome, PlannedDocument, merge_top_level};
use shards::documents::payload_document::PayloadDocument;
use shards::documents::simd_document::SimdParser;
use shards::shard::{Operation, PreparedBatch, ShardSnapshot};

use super::embedding::{RemoteEmbedder, embed_chunk};
use super::protocol::ShardRequest;
use super::read_documents::{ReadDocument, read_documents};
use super::{Preparing, ShardAddress, ShardHost};
use crate::errors::{ResponseError, document_value_error, shard_error};

/// Documents one hand-off to the indexing thread applies.
pub const APPLY_CHUNK_DOCUMENTS: usize = 1_000;

/// Opens a batch's write transaction (uncommitted until [`Commit`]).
#[derive(Debug)]
pub struct Prepare {
    pub batch_uid: u64,
    pub delete_all: bool,
    /// Index-wide internal ids for the documents the batch creates.
    pub assigned: Vec<(String, u32)>,
    /// The index's remote embedders (see [`super::embedding`]).
    pub embedders: Vec<RemoteEmbedder>,
}

impl ShardRequest for Prepare {
    type Answer = ();
    const IS_WRITE: bool = true;

    async fn run(self, host: &ShardHost, address: ShardAddress) -> Result<(), ResponseError> {
        let shard = host.shard(&address)?;
        host.prepared.borrow_mut().remove(&address);
        let snapshot = shard.read().map_err(shard_error)?;
        let mut batch = shard.prepare(self.batch_uid).map_err(shard_error)?;
        batch.assign_ids(self.assigned);
        if let Some(runner) = crate::runtime::analysis_thread::runner() {
            batch.analyze_ahead_with(runner);
        }
        if self.delete_all {
            batch
                .apply_chunk(vec![Operation::DeleteAll])
                .map_err(shard_error)?;
        }
        let preparing = Preparing {
            batch,
            snapshot,
            delete_all: self.delete_all,
            embedders: self.embedders,
        };
        host.hold_prepared(address, preparing);
        Ok(())
    }
}

/// Applies a chunk of the prepared batch's share.
#[derive(Debug)]
pub struct Apply {
    pub documents: Vec<(String, PlannedDocument<PayloadDocument>)>,
}

impl ShardRequest for Apply {
    type Answer = ();
    const IS_WRITE: bool = true;

    async fn run(self, host: &ShardHost, address: ShardAddress) -> Result<(), ResponseError> {
        apply(host, &address, self.documents).await
    }
}

/// Applies a chunk of the prepared batch's share that the shard reads from the batch's
/// update `files` itself (see [`super::read_documents`]).
#[derive(Debug)]
pub struct ApplyRead {
    pub files: Arc<[PathBuf]>,
    pub documents: Vec<ReadDocument>,
}

impl ShardRequest for ApplyRead {
    type Answer = ();
    const IS_WRITE: bool = true;

    async fn run(self, host: &ShardHost, address: ShardAddress) -> Result<(), ResponseError> {
        let documents = read_documents(&self.files, self.documents)?;
        apply(host, &address, documents).await
    }
}

/// Makes the prepared batch durable (on the core's indexing thread, the sync included), and
/// visible once the shard's recent searches warmed its commit (see [`super::warming`]).
#[derive(Debug)]
pub struct Commit {
    /// No other task waits for the index: warm the commit even if no search ran lately (its
    /// dictionary at least), since it is the one searches will read next.
    pub settled: bool,
}

impl ShardRequest for Commit {
    type Answer = ();
    const IS_WRITE: bool = true;

    async fn run(self, host: &ShardHost, address: ShardAddress) -> Result<(), ResponseError> {
        let Preparing {
            batch, snapshot, ..
        } = host.take_prepared(&address, "a commit")?;
        drop(snapshot);
        let shard = host.shard(&address)?;
        let searches = host
            .registry
            .searches_to_replay(&address)
            .or_else(|| self.settled.then(Vec::new));
        crate::runtime::indexing_thread::run(move || {
            let warm = searches.map(|searches| {
                move |snapshot: &ShardSnapshot| super::warming::warm(snapshot, &searches)
            });
            shard.commit_warmed(batch, warm)
        })
        .await
        .map(|_| ())
        .map_err(shard_error)
    }
}

/// Drops the prepared batch, if any.
#[derive(Debug)]
pub struct Abort;

impl ShardRequest for Abort {
    type Answer = ();
    const IS_WRITE: bool = true;

    async fn run(self, host: &ShardHost, address: ShardAddress) -> Result<(), ResponseError> {
        host.prepared.borrow_mut().remove(&address);
        Ok(())
    }
}

/// Applies `documents` to the batch prepared on `address`.
async fn apply(
    host: &ShardHost,
    address: &ShardAddress,
    documents: Vec<(String, PlannedDocument<PayloadDocument>)>,
) -> Result<(), ResponseError> {
    let mut preparing = host.take_prepared(address, "documents")?;
    let mut chunk = Vec::with_capacity(APPLY_CHUNK_DOCUMENTS.min(documents.len()));
    let mut parser = SimdParser::new();
    for (external_id, planned) in documents {
        // The shard looks the id up again when it applies the operation; reading the
        // stored document here only serves outcomes that depend on it.
        let stored = if preparing.delete_all || !planned.depends_on_stored() {
            None
        } else {
            preparing
                .snapshot
                .document(&external_id, None)
                .map_err(shard_error)?
        };
        if let Some(operation) = resolve(external_id, planned, stored, &mut parser)? {
            chunk.push(operation);
        }
        if chunk.len() >= APPLY_CHUNK_DOCUMENTS {
            let stored = (!preparing.delete_all).then_some(&preparing.snapshot);
            let full = embed_chunk(
                &preparing.embedders,
                std::mem::take(&mut chunk),
                stored,
                &mut parser,
            )
            .await?;
            preparing.batch = apply_off_core(preparing.batch, full).await?;
        }
    }
    if !chunk.is_empty() {
        let stored = (!preparing.delete_all).then_some(&preparing.snapshot);
        let chunk = embed_chunk(&preparing.embedders, chunk, stored, &mut parser).await?;
        preparing.batch = apply_off_core(preparing.batch, chunk).await?;
    }
    host.hold_prepared(address.clone(), preparing);
    Ok(())
}

/// Applies `chunk` to `batch` on the core's indexing thread and hands the batch back: the
/// analysis and the posting flushes it runs take up to a second of CPU per flush, which on
/// the core would stall its searches and the coordinator feeding the other shards (and which
/// the indexing thread's lower priority keeps behind them, see
/// [`crate::runtime::indexing_thread`]).
pub(super) async fn apply_off_core(
    mut batch: PreparedBatch,
    chunk: Vec<Operation>,
) -> Result<PreparedBatch, ResponseError> {
    crate::runtime::indexing_thread::run(move || batch.apply_chunk(chunk).map(|()| batch))
        .await
        .map_err(shard_error)
}

/// The operation that gives `planned`'s effect on a document `stored` (or absent). A document
/// written over nothing goes on as it came (as text, the shard builds it on its indexing
/// thread); one written over the stored document is built here with `parser` and merged.
fn resolve(
    external_id: String,
    planned: PlannedDocument<PayloadDocument>,
    stored: Option<Map<String, Value>>,
    parser: &mut SimdParser,
) -> Result<Option<Operation>, ResponseError> {
    Ok(match planned.into_outcome(stored.is_some()) {
        Outcome::Untouched => None,
        Outcome::Deleted => Some(Operation::Delete { external_id }),
        Outcome::Written {
            onto_stored,
            document,
        } => Some(match (stored, document) {
            (Some(mut stored), document) if onto_stored => {
                let update = document
                    .into_document(parser)
                    .map_err(|error| document_value_error(&error))?;
                merge_top_level(&mut stored, update);
                Operation::Replace {
                    external_id,
                    document: stored,
                }
            }
            (_, PayloadDocument::Text(text)) => Operation::ReplaceText { external_id, text },
            (_, PayloadDocument::Built(document)) => Operation::Replace {
                external_id,
                document,
            },
        }),
    })
}
