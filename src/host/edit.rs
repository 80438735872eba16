//! A document edition's share on one shard: [`Edit`] runs the edition's function on the
//! shard's documents its filter selects (all without one) inside a prepared batch, like
//! [`super::batch::Prepare`], and answers how many documents the function ran on; a
//! [`super::batch::Commit`] or [`super::batch::Abort`] follows.
//!
//! Invariants: the function runs on the core's indexing thread in steps of at most
//! [`EDITION_STEP_BUDGET`] (plus one document); a script error drops the batch (nothing
//! changes); a batch the shard already applied runs nothing and answers 0.

use std::sync::Arc;

use serde_json::{Map, Value};
use shards::filter::Filter;
use shards::shard::{Operation, PreparedBatch, ShardSnapshot};

use super::batch::APPLY_CHUNK_DOCUMENTS;
use super::edition::{Edited, Edition, EditionRequest};
use super::protocol::ShardRequest;
use super::{Preparing, ShardAddress, ShardHost, filter_ids};
use crate::errors::{Code, ResponseError, shard_error};

/// Documents an edition reads before handing them to the indexing thread.
pub const EDITION_STEP_DOCUMENTS: usize = 256;

/// How long one step of an edition's scripts may keep the core's indexing thread: long
/// enough to amortise the hand-off (tens of microseconds), short enough that a file sync
/// queued behind it barely waits.
pub const EDITION_STEP_BUDGET: std::time::Duration = std::time::Duration::from_millis(1);

/// Runs a document edition on the shard's documents `filter` selects (all without a
/// filter), uncommitted; answers the number of documents the function ran on (0 when the
/// shard had already applied the batch).
#[derive(Debug)]
pub struct Edit {
    pub batch_uid: u64,
    pub filter: Option<Filter>,
    pub edition: Box<EditionRequest>,
}

impl ShardRequest for Edit {
    type Answer = u64;
    const IS_WRITE: bool = true;

    async fn run(self, host: &ShardHost, address: ShardAddress) -> Result<u64, ResponseError> {
        let shard = host.shard(&address)?;
        host.prepared.borrow_mut().remove(&address);
        let snapshot = shard.read().map_err(shard_error)?;
        let mut prepared = shard.prepare(self.batch_uid).map_err(shard_error)?;
        let edited = if prepared.is_already_applied() {
            0
        } else {
            run_edition(
                &snapshot,
                &mut prepared,
                self.filter.as_ref(),
                &self.edition,
            )
            .await?
        };
        let preparing = Preparing {
            batch: prepared,
            snapshot,
            delete_all: false,
            // An edited document keeps the embeddings it has (its `_vectors` entries are not
            // given again): an edition re-embeds nothing.
            embedders: Vec::new(),
        };
        host.hold_prepared(address, preparing);
        Ok(edited)
    }
}

async fn run_edition(
    snapshot: &ShardSnapshot,
    prepared: &mut PreparedBatch,
    filter: Option<&Filter>,
    request: &EditionRequest,
) -> Result<u64, ResponseError> {
    let candidates = match filter {
        Some(filter) => filter_ids(snapshot, filter, Code::InvalidDocumentFilter)?,
        None => snapshot.document_ids().clone(),
    };
    let edition = Arc::new(Edition::new(request)?);
    let mut chunk = Vec::with_capacity(APPLY_CHUNK_DOCUMENTS);
    let mut step = Vec::with_capacity(EDITION_STEP_DOCUMENTS);
    for internal_id in &candidates {
        let document = snapshot
            .document_by_id(internal_id, None)
            .map_err(shard_error)?
            .ok_or_else(|| ResponseError::internal("a live id without its document"))?;
        step.push(document);
        if step.len() >= EDITION_STEP_DOCUMENTS {
            let documents =
                std::mem::replace(&mut step, Vec::with_capacity(EDITION_STEP_DOCUMENTS));
            edit_step(&edition, documents, &request.primary_key, &mut chunk).await?;
        }
        if chunk.len() >= APPLY_CHUNK_DOCUMENTS {
            prepared
                .apply_chunk(std::mem::take(&mut chunk))
                .map_err(shard_error)?;
            crate::runtime::yield_if_needed().await;
        }
    }
    edit_step(&edition, step, &request.primary_key, &mut chunk).await?;
    prepared.apply_chunk(chunk).map_err(shard_error)?;
    Ok(candidates.len())
}

/// The external id of a stored document.
fn external_id(document: &Map<String, Value>, primary_key: &str) -> Result<String, ResponseError> {
    shards::documents::document_id::extract_document_id(document, primary_key)
        .map_err(crate::errors::documents_error)
}

/// Runs the edition's script on `documents` on the core's indexing thread, in steps of at
/// most [`EDITION_STEP_BUDGET`] (plus one document), and adds the operations it gives to
/// `chunk`. Off the core and at the indexing thread's lower priority, a slow script (up to
/// [`super::edition::SCRIPT_OPERATIONS_MAX`] operations per document) never holds up
/// requests; in short steps, it never holds up for long the other shards' indexing work on
/// the same thread. Stops at the first document whose script fails.
async fn edit_step(
    edition: &Arc<Edition>,
    mut documents: Vec<Map<String, Value>>,
    primary_key: &str,
    chunk: &mut Vec<Operation>,
) -> Result<(), ResponseError> {
    while !documents.is_empty() {
        let edition = edition.clone();
        let (edited, rest) =
            crate::runtime::indexing_thread::run(move || edit_for_a_step(&edition, documents))
                .await?;
        documents = rest;
        for (document, outcome) in edited {
            match outcome {
                Edited::Unchanged => {}
                Edited::Deleted => chunk.push(Operation::Delete {
                    external_id: external_id(&document, primary_key)?,
                }),
                Edited::Replaced(edited) => chunk.push(Operation::Replace {
                    external_id: external_id(&document, primary_key)?,
                    document: edited,
                }),
            }
        }
    }
    Ok(())
}

/// What one step of [`edit_step`] gives: the documents it ran the script on, with the
/// outcome, and those left for the next step.
type EditedStep = (Vec<(Map<String, Value>, Edited)>, Vec<Map<String, Value>>);

/// Runs the script on the first documents of `documents` until [`EDITION_STEP_BUDGET`]
/// has passed.
fn edit_for_a_step(
    edition: &Edition,
    documents: Vec<Map<String, Value>>,
) -> Result<EditedStep, ResponseError> {
    let started = std::time::Instant::now();
    let mut remaining = documents.into_iter();
    let mut edited = Vec::new();
    for document in remaining.by_ref() {
        let outcome = edition.edit(&document)?;
        edited.push((document, outcome));
        if started.elapsed() >= EDITION_STEP_BUDGET {
            break;
        }
    }
    Ok((edited, remaining.collect()))
}
