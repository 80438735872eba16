//! An index that outgrows its shards grows, in the batch that makes it outgrow them (the
//! rule: [`crate::tasks::shard_growth`]), before the batch's documents are applied: when the
//! documents stored and the ids the batch writes would take the index past its shards. The
//! estimate bounds the count the batch leaves from above, so no check is needed after it,
//! and a large first batch lands on the shards it needs with nothing copied.
//!
//! How: the index's committed documents are copied into a new storage of more shards
//! ([`grown_storage_name`]), each document to the shard rendezvous hashing ranks first among
//! the new shards' names, with its internal id and its embeddings as they were
//! (`crate::host::growth`); the new shards commit, and the batch's catalog names the new
//! storage. The old storage is removed once that catalog is recorded, like a deleted index's.
//!
//! Crash safety, as a batch's: until the batch's catalog is recorded, the catalog names the
//! old storage, which the copy only read, and a crash runs the batch again, which removes
//! what the interrupted copy left before copying again (and the start removes any storage
//! the catalog does not name, `crate::server`); once it is recorded, the new storage holds
//! every document. Searches and reads meanwhile use the catalog they started with: the old
//! storage until the batch's catalog is published, the new one after, each complete.
//!
//! A copy that fails (a full disk, say) fails no task: the index keeps its shards (the batch
//! applies to them, or already has), what the copy wrote is removed, and the next batch
//! tries again.

use std::time::Instant;

use shards::rendezvous::rendezvous_winner_position;

use super::{BatchWork, remove_index_files};
use crate::coordinator::catalog::{IndexRecord, ShardSet, grown_storage_name};
use crate::errors::ResponseError;
use crate::host::batch::{APPLY_CHUNK_DOCUMENTS, Prepare};
use crate::host::documents::DocumentCount;
use crate::host::growth::{ApplyCopies, CopiedDocument, GrowthIds, ReadCopies};
use crate::host::settings::{SetEmbedders, SetFacetSettings, SetTextSettings};
use crate::settings::apply::StoredSettings;
use crate::settings::embedder_specs::embedder_specs;
use crate::settings::text_settings::text_settings;

/// Documents read from an old shard per [`ReadCopies`] (then sent on by new shard).
const COPY_CHUNK_DOCUMENTS: usize = APPLY_CHUNK_DOCUMENTS;
/// The progress step while an index's documents are copied into its new shards.
const PROGRESS_GROWING: &str = "copying documents to more shards";

/// The documents of one old shard: external and internal ids.
type ShardIds = Vec<(String, u32)>;

impl BatchWork {
    /// Before the batch's documents are applied: grows `record` when the documents it holds
    /// and the `writes` ids the batch writes (an upper bound of what it adds) would make it
    /// outgrow its shards, so that a large batch lands on the shards it needs instead of
    /// being copied right after. The new shards get `settings` (what the old ones index by:
    /// the batch's settings changes reach both the same way, after its documents). Answers
    /// the old storage when the index grew, for the caller to remove once the catalog naming
    /// the new one is recorded (or the new one, if the batch fails).
    pub(super) async fn grow_ahead(
        &self,
        record: &mut IndexRecord,
        created: bool,
        writes: usize,
        settings: &StoredSettings,
    ) -> Option<ShardSet> {
        if !self.may_grow(record) || writes == 0 {
            return None;
        }
        // A new index holds nothing (and counting would make its first shard's file).
        let stored = if created {
            0
        } else {
            self.count_for_growth(record).await?
        };
        self.grow(record, stored + writes as u64, settings, created)
            .await
    }

    /// Whether `record` has room to grow.
    fn may_grow(&self, record: &IndexRecord) -> bool {
        self.shard_growth.documents_per_shard > 0
            && record.shards_max.is_some_and(|max| record.shards < max)
    }

    /// The documents of `record`, `None` (with a warning) when a shard cannot say.
    async fn count_for_growth(&self, record: &IndexRecord) -> Option<u64> {
        match self.count_documents(&record.shard_set()).await {
            Ok(documents) => Some(documents),
            Err(error) => {
                tracing::warn!(%error, index = record.uid, "could not count the documents to grow");
                None
            }
        }
    }

    /// Grows `record` (`empty` when the batch just created it: nothing to copy) to the
    /// shards `documents` want, if more than it has: on success
    /// `record` names the new storage and the old one is answered; on failure what the copy
    /// wrote is removed and `record` is left as it was.
    async fn grow(
        &self,
        record: &mut IndexRecord,
        documents: u64,
        settings: &StoredSettings,
        empty: bool,
    ) -> Option<ShardSet> {
        let shards = self.shard_growth.grown_shards(record, documents)?;
        let from = record.shard_set();
        let to = ShardSet {
            storage: grown_storage_name(&record.storage, shards),
            shards,
        };
        let started = Instant::now();
        match self
            .copy_into(settings, (!empty).then_some(&from), &to)
            .await
        {
            Ok(()) => {
                tracing::info!(
                    index = record.uid,
                    from = from.shards,
                    to = to.shards,
                    documents,
                    milliseconds = started.elapsed().as_millis() as u64,
                    "the index grew to more shards"
                );
                record.storage = to.storage;
                record.shards = to.shards;
                Some(from)
            }
            Err(error) => {
                tracing::warn!(
                    %error,
                    index = record.uid,
                    shards = from.shards,
                    "the index could not grow and keeps its shards"
                );
                remove_index_files(&self.coordinator, &to).await;
                None
            }
        }
    }

    /// The documents of the shards of `set`.
    async fn count_documents(&self, set: &ShardSet) -> Result<u64, ResponseError> {
        let mut total = 0;
        for answer in self
            .coordinator
            .ask_every_shard(set, |_| DocumentCount)
            .await
        {
            total += answer?;
        }
        Ok(total)
    }

    /// Copies every document of `from` (none when `None`: the index is new) into the new
    /// shards of `to`, set up with `settings`, and commits them.
    ///
    /// The copy commits as the batch before this one: a shard applies a batch once, by uid,
    /// and the batch's own documents may still have to land on the new shards (a growth
    /// ahead of them).
    async fn copy_into(
        &self,
        settings: &StoredSettings,
        from: Option<&ShardSet>,
        to: &ShardSet,
    ) -> Result<(), ResponseError> {
        // What a copy a crash interrupted left.
        remove_index_files(&self.coordinator, to).await;
        self.set_up_shards(to, settings).await?;
        let Some(from) = from else {
            return Ok(());
        };
        let mut sources = Vec::with_capacity(from.shards as usize);
        for answer in self.coordinator.ask_every_shard(from, |_| GrowthIds).await {
            sources.push(answer?);
        }
        let copy_uid = u64::from(self.batch_uid)
            .checked_sub(1)
            .ok_or_else(|| ResponseError::internal("the first batch has no documents to copy"))?;
        let prepared = self
            .prepare_every_shard(to, |_| Prepare {
                batch_uid: copy_uid,
                delete_all: false,
                // Each copy brings its internal id.
                assigned: Vec::new(),
                embedders: Vec::new(),
            })
            .await;
        let copied = match prepared {
            Ok(_) => self.copy_documents(from, to, &to.names(), sources).await,
            Err(error) => Err(error),
        };
        self.commit_or_abort(to, copied).await
    }

    /// Gives the new, empty shards of `set` the settings they index by.
    async fn set_up_shards(
        &self,
        set: &ShardSet,
        settings: &StoredSettings,
    ) -> Result<(), ResponseError> {
        let filterable = settings.setting_view("filterableAttributes");
        let sortable = super::settings::faceted_for_ranking(settings);
        self.coordinator
            .on_every_shard(set, |_| SetFacetSettings {
                filterable: filterable.clone(),
                sortable: sortable.clone(),
            })
            .await?;
        let text = text_settings(settings);
        self.coordinator
            .on_every_shard(set, |_| SetTextSettings {
                settings: Box::new(text.clone()),
            })
            .await?;
        let specs = embedder_specs(settings);
        self.coordinator
            .on_every_shard(set, |_| SetEmbedders {
                specs: specs.clone(),
            })
            .await
    }

    /// Reads each old shard's documents, [`COPY_CHUNK_DOCUMENTS`] at a time, and applies each
    /// chunk's documents to their new shards (one request per new shard, all at once).
    async fn copy_documents(
        &self,
        from: &ShardSet,
        to: &ShardSet,
        names: &[String],
        sources: Vec<ShardIds>,
    ) -> Result<(), ResponseError> {
        let total: usize = sources.iter().map(Vec::len).sum();
        let mut copied = 0;
        for (shard, ids) in (0..from.shards).zip(sources) {
            for chunk in ids.chunks(COPY_CHUNK_DOCUMENTS) {
                self.progress(PROGRESS_GROWING, copied as u32, total as u32);
                let documents = self
                    .coordinator
                    .ask_shard(
                        from,
                        shard,
                        ReadCopies {
                            documents: chunk.to_vec(),
                        },
                    )
                    .await?;
                self.apply_copies(to, names, documents).await?;
                copied += chunk.len();
            }
        }
        self.progress(PROGRESS_GROWING, total as u32, total as u32);
        Ok(())
    }

    /// Sends each of `documents` to its shard of `to`.
    async fn apply_copies(
        &self,
        to: &ShardSet,
        names: &[String],
        documents: Vec<CopiedDocument>,
    ) -> Result<(), ResponseError> {
        let mut shares: Vec<Vec<CopiedDocument>> = vec![Vec::new(); to.shards as usize];
        for document in documents {
            shares[owner(names, &document.external_id)?].push(document);
        }
        let mut requests: Vec<Option<ApplyCopies>> = shares
            .into_iter()
            .map(|documents| (!documents.is_empty()).then_some(ApplyCopies { documents }))
            .collect();
        for answer in self
            .coordinator
            .ask_every_shard(to, |shard| {
                requests[shard as usize].take().unwrap_or(ApplyCopies {
                    documents: Vec::new(),
                })
            })
            .await
        {
            answer?;
        }
        Ok(())
    }
}

/// The position in `names` of the shard that owns document `external_id`.
fn owner(names: &[String], external_id: &str) -> Result<usize, ResponseError> {
    rendezvous_winner_position(names, external_id)
        .ok_or_else(|| ResponseError::internal("an index grows to no shard"))
}
