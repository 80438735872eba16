//! The last phase of a network change: the documents this instance no longer keeps are
//! deleted from every index, inside the change's batch (each index prepared on every shard,
//! then committed everywhere, as an index batch is).
//!
//! Invariant: it runs only once every instance of the new network confirmed its imports
//! and every instance searches the new shards (the scheduler's guarantee), so what it
//! deletes is held elsewhere and asked of nobody here any more.

use std::sync::Arc;

use super::{NetworkChangeWork, Stop};
use crate::coordinator::catalog::IndexRecord;
use crate::errors::ResponseError;
use crate::host::batch::{Abort, Commit};
use crate::host::network_deletion::DeleteForNetworkChange;
use crate::network::topology_change::TopologyChange;
use crate::network::transfer_plan::TransferPlan;

impl NetworkChangeWork {
    /// Deletes what this instance no longer keeps; the number of documents deleted.
    pub(super) async fn delete_unkept(&self, change: &TopologyChange) -> Result<u64, Stop> {
        let plan = Arc::new(TransferPlan::new(change.old.clone(), change.new.clone()));
        let catalog = self.coordinator.catalog();
        let records: Vec<Arc<IndexRecord>> = catalog.iter().cloned().collect();
        let mut deleted = 0;
        for (position, record) in records.iter().enumerate() {
            if self.interrupted() {
                return Err(Stop::Interrupted);
            }
            let step = format!("Deleting removed shards for index `{}`", record.uid);
            self.progress(
                change.phase,
                Some((&step, position as u32, records.len() as u32)),
            );
            deleted += self.delete_in_index(&plan, record).await?;
        }
        Ok(deleted)
    }

    /// Prepares the deletions of `record` on every shard, then commits them everywhere.
    async fn delete_in_index(
        &self,
        plan: &Arc<TransferPlan>,
        record: &IndexRecord,
    ) -> Result<u64, ResponseError> {
        let shard_set = record.shard_set();
        let prepared = self
            .coordinator
            .ask_every_shard(&shard_set, |_| DeleteForNetworkChange {
                plan: plan.clone(),
                batch_uid: u64::from(self.batch_uid),
            })
            .await;
        let mut deleted = 0;
        let mut failure = None;
        for answer in prepared {
            match answer {
                Ok(count) => deleted += count,
                Err(error) => {
                    failure.get_or_insert(error);
                }
            }
        }
        if let Some(error) = failure {
            for answer in self
                .coordinator
                .ask_every_shard(&shard_set, |_| Abort)
                .await
            {
                if let Err(abort_error) = answer {
                    tracing::warn!(%abort_error, "a shard could not abort");
                }
            }
            return Err(error);
        }
        self.coordinator
            .on_every_shard(&shard_set, |_| Commit { settled: true })
            .await?;
        Ok(deleted)
    }
}
