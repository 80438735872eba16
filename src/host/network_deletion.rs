//! The shard side of the last step of a network change: [`DeleteForNetworkChange`] prepares
//! the deletion of every document of the shard this instance no longer keeps
//! ([`crate::network::transfer_plan`]), inside the change's batch; [`super::batch::Commit`]
//! then makes it durable on every shard, or [`super::batch::Abort`] drops it.
//!
//! Invariants: the shard only deletes what the plan says it no longer keeps, and only once
//! every instance confirmed its imports (the caller's guarantee), so no document is lost;
//! preparing under a batch uid the shard already applied deletes nothing again (a rerun
//! after a crash); the deletions run on the core's indexing thread,
//! [`super::batch::APPLY_CHUNK_DOCUMENTS`] at a time.

use std::sync::Arc;

use shards::shard::{Operation, PreparedBatch};

use super::batch::APPLY_CHUNK_DOCUMENTS;
use super::export::DOCUMENTS_PER_STEP;
use super::protocol::ShardRequest;
use super::{Preparing, ShardAddress, ShardHost};
use crate::errors::{ResponseError, shard_error};
use crate::network::transfer_plan::TransferPlan;

/// Prepare the deletion of the shard's documents this instance no longer keeps.
#[derive(Debug)]
pub struct DeleteForNetworkChange {
    pub plan: Arc<TransferPlan>,
    pub batch_uid: u64,
}

impl ShardRequest for DeleteForNetworkChange {
    /// The documents deleted.
    type Answer = u64;
    const IS_WRITE: bool = true;

    async fn run(self, host: &ShardHost, address: ShardAddress) -> Result<u64, ResponseError> {
        let shard = host.shard(&address)?;
        host.prepared.borrow_mut().remove(&address);
        let snapshot = shard.read().map_err(shard_error)?;
        let documents = snapshot.external_ids_with_internal().map_err(shard_error)?;
        let mut batch = shard.prepare(self.batch_uid).map_err(shard_error)?;
        let mut chunk = Vec::new();
        let mut deleted = 0;
        for (position, (external_id, _)) in documents.into_iter().enumerate() {
            if position % DOCUMENTS_PER_STEP == 0 {
                crate::runtime::yield_if_needed().await;
            }
            if self.plan.keeps(&external_id) {
                continue;
            }
            chunk.push(Operation::Delete { external_id });
            deleted += 1;
            if chunk.len() >= APPLY_CHUNK_DOCUMENTS {
                batch = apply_off_core(batch, std::mem::take(&mut chunk)).await?;
            }
        }
        if !chunk.is_empty() {
            batch = apply_off_core(batch, chunk).await?;
        }
        let preparing = Preparing {
            batch,
            snapshot,
            delete_all: false,
            embedders: Vec::new(),
        };
        host.hold_prepared(address, preparing);
        Ok(deleted)
    }
}

async fn apply_off_core(
    mut batch: PreparedBatch,
    chunk: Vec<Operation>,
) -> Result<PreparedBatch, ResponseError> {
    crate::runtime::indexing_thread::run(move || batch.apply_chunk(chunk).map(|()| batch))
        .await
        .map_err(shard_error)
}
