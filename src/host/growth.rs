//! The shard side of an index growing to more shards (`crate::tasks::index_batch`): the old
//! shards list their ids ([`GrowthIds`]) and read their documents out ([`ReadCopies`]), each
//! with what it keeps for every embedder; the new shards store them as they were, under
//! the same internal ids ([`ApplyCopies`], inside a batch [`super::batch::Prepare`]d on
//! each).
//!
//! Invariants: a copy is the stored document and, per embedder, the embeddings with their
//! flags and fragments as the old shard keeps them (nothing is embedded again, nothing
//! becomes the user's that was generated); the old shards are only read, from one snapshot
//! each (the scheduler runs nothing else on the index meanwhile).

use serde_json::{Map, Value};
use shards::shard::{Operation, ShardSnapshot, StoredVectors};

use super::batch::apply_off_core;
use super::protocol::{ShardRead, ShardRequest, shard_reads};
use super::{ShardAddress, ShardHost};
use crate::errors::{ResponseError, shard_error};

/// Every document's external id with its internal id.
#[derive(Debug)]
pub struct GrowthIds;

impl ShardRead for GrowthIds {
    type Answer = Vec<(String, u32)>;

    fn read(self, snapshot: &ShardSnapshot) -> Result<Self::Answer, ResponseError> {
        snapshot.external_ids_with_internal().map_err(shard_error)
    }
}

/// One document as another shard will store it.
#[derive(Debug, Clone, PartialEq)]
pub struct CopiedDocument {
    pub external_id: String,
    /// Its internal id, index-wide, kept by the copy.
    pub internal_id: u32,
    /// The document as stored, with `_vectors` entries for the embedders that have some
    /// (what a document written fresh must give for a `userProvided` embedder).
    pub document: Map<String, Value>,
    /// What it keeps for each embedder, exactly.
    pub vectors: Vec<(String, StoredVectors)>,
}

/// The documents `documents` names (external and internal id, as [`GrowthIds`] listed
/// them), read for a copy; one no longer stored is skipped.
#[derive(Debug)]
pub struct ReadCopies {
    pub documents: Vec<(String, u32)>,
}

impl ShardRead for ReadCopies {
    type Answer = Vec<CopiedDocument>;

    fn read(self, snapshot: &ShardSnapshot) -> Result<Self::Answer, ResponseError> {
        let embedders: Vec<String> = snapshot
            .vector_settings()
            .slots
            .iter()
            .map(|slot| slot.name.clone())
            .collect();
        let mut copies = Vec::with_capacity(self.documents.len());
        for (external_id, internal_id) in self.documents {
            let Some(mut document) = snapshot
                .document_by_id(internal_id, None)
                .map_err(shard_error)?
            else {
                continue;
            };
            let mut vectors = Vec::with_capacity(embedders.len());
            for name in &embedders {
                if let Some(stored) = snapshot
                    .stored_vectors(name, internal_id)
                    .map_err(shard_error)?
                {
                    vectors.push((name.clone(), stored));
                }
            }
            if !embedders.is_empty() {
                snapshot
                    .attach_vectors(internal_id, &mut document)
                    .map_err(shard_error)?;
            }
            copies.push(CopiedDocument {
                external_id,
                internal_id,
                document,
                vectors,
            });
        }
        Ok(copies)
    }
}

shard_reads!(GrowthIds, ReadCopies);

/// Stores `documents` in the batch prepared on the shard, as [`ReadCopies`] read them.
#[derive(Debug)]
pub struct ApplyCopies {
    pub documents: Vec<CopiedDocument>,
}

impl ShardRequest for ApplyCopies {
    type Answer = ();
    const IS_WRITE: bool = true;

    async fn run(self, host: &ShardHost, address: ShardAddress) -> Result<(), ResponseError> {
        if self.documents.is_empty() {
            return Ok(());
        }
        let mut preparing = host.take_prepared(&address, "copied documents")?;
        preparing.batch.assign_ids(
            self.documents
                .iter()
                .map(|copy| (copy.external_id.clone(), copy.internal_id)),
        );
        preparing.batch = apply_off_core(preparing.batch, copy_operations(self.documents)).await?;
        host.hold_prepared(address, preparing);
        Ok(())
    }
}

/// The operations that store `documents`: each document, then its embeddings as they were.
fn copy_operations(documents: Vec<CopiedDocument>) -> Vec<Operation> {
    let mut operations = Vec::with_capacity(2 * documents.len());
    for copy in documents {
        operations.push(Operation::Replace {
            external_id: copy.external_id.clone(),
            document: copy.document,
        });
        if !copy.vectors.is_empty() {
            operations.push(Operation::SetStoredVectors {
                external_id: copy.external_id,
                vectors: copy.vectors,
            });
        }
    }
    operations
}
