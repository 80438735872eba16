//! Which network shard each document of this shard belongs to: what a `_shard` filter
//! selects, without anything stored for it.
//!
//! Membership is a pure function of a document's external id and the network's shard names
//! (the rendezvous winner, [`NetworkShards::shard_of`]), so nothing is persisted: it is
//! computed from the `external_ids` tree the first time a filter asks, kept in memory, and
//! kept up to date by the batches that commit afterwards. It equals what Meilisearch
//! Enterprise stores per shard (`shard_docids`) as long as the documents were placed by
//! rendezvous, which the server's ownership rule on writes guarantees; a document stored
//! before the network had a leader simply counts in the shard rendezvous names for it.
//!
//! Invariants:
//! - a [`Membership`] describes the commits whose applied batch uid it records, for the shard
//!   names it records: only a batch commit changes which external id an internal id stands
//!   for (a replaced document keeps its id; a deleted one frees it; a created one takes an
//!   id), and every batch commit records a new applied batch uid, so two snapshots with the
//!   same applied batch map ids to external ids alike (settings rebuilds and repacks change
//!   neither ids nor the applied batch);
//! - a snapshot uses the kept membership only when both its applied batch and the shard
//!   names match exactly; otherwise it computes its own (and keeps it when it is newer), so a
//!   reader never sees another commit's membership;
//! - a batch that starts while a membership for its base commit is kept records the ids it
//!   creates, by network shard (one hash per network shard and created document); its commit
//!   turns the kept membership into the new commit's: ids it created leave their old shard
//!   and join their new one, ids no longer live leave every shard. A batch that started
//!   without one records nothing, and the next reader computes afresh;
//! - a new network (other shard names) replaces the kept membership at its first filter.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use roaring::RoaringBitmap;
use storage_engine::{Direction, ReadTransaction};

use crate::error::{ShardError, ShardResult};
use crate::index::keys::document_from_key;
use crate::index::trees::EXTERNAL_IDS_TREE;
use crate::network_shards::NetworkShards;

/// The documents of one shard by network shard, for one commit and one set of shard names.
#[derive(Debug)]
pub(crate) struct Membership {
    shards: NetworkShards,
    /// The applied batch uid of the commits this describes.
    applied_batch: Option<u64>,
    /// By position in `shards`.
    documents: Vec<RoaringBitmap>,
}

impl Membership {
    /// Computes the membership of every document `read` stores (a scan of `external_ids`).
    fn compute(
        read: &ReadTransaction,
        applied_batch: Option<u64>,
        shards: &NetworkShards,
    ) -> ShardResult<Membership> {
        let mut by_shard: Vec<Vec<u32>> = vec![Vec::new(); shards.len()];
        if let Some(tree) = read.open_tree(EXTERNAL_IDS_TREE)?
            && !shards.is_empty()
        {
            let entries = tree.range(
                std::ops::Bound::Unbounded,
                std::ops::Bound::Unbounded,
                Direction::Forward,
            )?;
            for entry in entries {
                let (key, value) = entry?;
                let external =
                    std::str::from_utf8(key).map_err(|_| ShardError::corrupted("external id"))?;
                if let Some(position) = shards.shard_of(external) {
                    by_shard[position].push(document_from_key(value)?);
                }
            }
        }
        let documents = by_shard
            .into_iter()
            .map(|mut ids| {
                ids.sort_unstable();
                RoaringBitmap::from_sorted_iter(ids).unwrap_or_default()
            })
            .collect();
        Ok(Membership {
            shards: shards.clone(),
            applied_batch,
            documents,
        })
    }

    fn describes(&self, shards: &NetworkShards, applied_batch: Option<u64>) -> bool {
        self.applied_batch == applied_batch && self.shards == *shards
    }

    /// The documents of the network shard at `position` (none past the last shard).
    pub(crate) fn documents(&self, position: usize) -> RoaringBitmap {
        self.documents.get(position).cloned().unwrap_or_default()
    }
}

/// The ids a batch creates, by network shard, for the membership kept at its start.
#[derive(Debug)]
pub(crate) struct MembershipChanges {
    shards: NetworkShards,
    /// The applied batch uid the batch starts from.
    base: Option<u64>,
    created: RoaringBitmap,
    /// By position in `shards`.
    created_by_shard: Vec<RoaringBitmap>,
}

impl MembershipChanges {
    /// Records that the batch created the document `id` under `external_id`.
    pub(crate) fn created(&mut self, external_id: &str, id: u32) {
        if !self.created.insert(id) {
            // The id was created before in this batch, for a document deleted since.
            for documents in &mut self.created_by_shard {
                documents.remove(id);
            }
        }
        if let Some(position) = self.shards.shard_of(external_id) {
            self.created_by_shard[position].insert(id);
        }
    }
}

/// The membership a shard keeps between commits (at most one: the newest asked for).
#[derive(Debug, Default)]
pub(crate) struct MembershipSlot {
    kept: Mutex<Option<Arc<Membership>>>,
}

impl MembershipSlot {
    fn lock(&self) -> MutexGuard<'_, Option<Arc<Membership>>> {
        // A membership is replaced whole: a panic elsewhere leaves a consistent one.
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The membership of the snapshot `read` (whose applied batch is `applied_batch`) for
    /// `shards`: the kept one when it describes that commit, else computed (and kept when it
    /// is newer than the kept one, or for other shard names).
    pub(crate) fn membership(
        &self,
        read: &ReadTransaction,
        applied_batch: Option<u64>,
        shards: &NetworkShards,
    ) -> ShardResult<Arc<Membership>> {
        if let Some(kept) = self.lock().as_ref()
            && kept.describes(shards, applied_batch)
        {
            return Ok(Arc::clone(kept));
        }
        let computed = Arc::new(Membership::compute(read, applied_batch, shards)?);
        let mut kept = self.lock();
        let replaces = kept.as_ref().is_none_or(|kept| {
            kept.shards != computed.shards || kept.applied_batch < computed.applied_batch
        });
        if replaces {
            *kept = Some(Arc::clone(&computed));
        }
        Ok(computed)
    }

    /// What a batch starting from the commit of `applied_batch` records, when a membership of
    /// that commit is kept.
    pub(crate) fn changes_from(&self, applied_batch: Option<u64>) -> Option<MembershipChanges> {
        let kept = self.lock();
        let kept = kept
            .as_ref()
            .filter(|kept| kept.applied_batch == applied_batch)?;
        Some(MembershipChanges {
            shards: kept.shards.clone(),
            base: applied_batch,
            created: RoaringBitmap::new(),
            created_by_shard: vec![RoaringBitmap::new(); kept.shards.len()],
        })
    }

    /// After a batch with `changes` committed: the kept membership of its base commit becomes
    /// the one of the new commit, whose live ids are `live` and applied batch
    /// `applied_batch`. Anything else kept is left alone.
    pub(crate) fn committed(
        &self,
        changes: MembershipChanges,
        live: &RoaringBitmap,
        applied_batch: Option<u64>,
    ) {
        let mut kept = self.lock();
        let Some(base) = kept
            .as_ref()
            .filter(|kept| kept.describes(&changes.shards, changes.base))
        else {
            return;
        };
        let documents = base
            .documents
            .iter()
            .zip(changes.created_by_shard)
            .map(|(before, created)| {
                let mut documents = before - &changes.created;
                documents |= created;
                documents &= live;
                documents
            })
            .collect();
        *kept = Some(Arc::new(Membership {
            shards: changes.shards,
            applied_batch,
            documents,
        }));
    }
}
