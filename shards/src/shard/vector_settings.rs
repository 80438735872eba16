//! Changing a shard's embedders, and the snapshot's vector reads: a document's embeddings in
//! `_vectors` form, and the nearest documents to a vector.
//!
//! Invariant: an embedder whose slot is dropped loses its graph trees and its `embeddings`
//! entries in the same transaction that records the new slots; its vector files are removed
//! only once that transaction committed.

use roaring::RoaringBitmap;
use serde_json::{Map, Value, json};

use super::state::ShardState;
use super::{PreparedBatch, Shard, ShardSnapshot};
use crate::error::ShardResult;
use crate::vectors::reads::{documents_with_vectors, embeddings_of, entry_of, nearest};
use crate::vectors::stored::embeddings_json;
use crate::vectors::{EmbedderSlot, EmbedderSpec, VECTORS_FIELD, VectorHit};

impl Shard {
    /// Makes the shard's embedders `specs`; returns whether anything changed. An embedder
    /// whose dimensions or quantization change starts empty.
    pub fn set_embedders(&self, specs: &[EmbedderSpec]) -> ShardResult<bool> {
        let transaction = self.database.begin_write()?;
        let state = ShardState::load_write(&transaction)?;
        let mut batch = PreparedBatch::for_embedders(
            transaction,
            state,
            self.views.decoders(),
            self.pending_changes_bytes(),
            &self.graphs,
        )?;
        let before = batch.vector_settings_mut().clone();
        let changes = batch.vector_settings_mut().reconcile(specs)?;
        if !changes.changed {
            return Ok(false);
        }
        for (from, to) in &changes.moved {
            batch.move_slot(from, *to)?;
        }
        for (slot_number, ids) in &changes.removed_fragments {
            let slot = batch
                .vector_settings_mut()
                .slots
                .iter()
                .find(|slot| slot.slot == *slot_number)
                .cloned();
            if let Some(slot) = slot {
                batch.drop_fragments(&slot, ids)?;
            }
        }
        for slot in &changes.dropped {
            batch.drop_slot(slot)?;
        }
        let added: Vec<String> = batch
            .vector_settings_mut()
            .slots
            .iter()
            .filter(|slot| before.slots.iter().all(|old| old.slot != slot.slot))
            .filter(|slot| changes.moved.iter().all(|(_, to)| *to != slot.slot))
            .map(|slot| slot.name.clone())
            .collect();
        batch.adopt_stored_vectors(&added)?;
        batch.commit_embedders()?;
        for slot in &changes.dropped {
            self.graphs.remove_files(slot);
        }
        Ok(true)
    }
}

impl Shard {
    /// A batch that rewrites documents' vectors without counting as a batch of the task
    /// queue: it commits under the last applied batch uid (a re-embedding after an
    /// embedder's settings changed; replaying it embeds again, which changes nothing).
    pub fn prepare_vectors(&self) -> ShardResult<PreparedBatch> {
        let transaction = self.database.begin_write()?;
        let state = ShardState::load_write(&transaction)?;
        PreparedBatch::for_embedders(
            transaction,
            state,
            self.views.decoders(),
            self.pending_changes_bytes(),
            &self.graphs,
        )
    }
}

/// What a document keeps for one embedder (see [`ShardSnapshot::stored_vectors`]).
#[derive(Debug, Clone, PartialEq)]
pub struct StoredVectors {
    pub regenerate: bool,
    /// The embedder computed them (false: the user gave them).
    pub generated: bool,
    /// Each embedding, with the fragment it was computed from (`None`: none, or a fragment
    /// removed since).
    pub vectors: Vec<(Option<String>, Vec<f32>)>,
}

impl ShardSnapshot {
    /// Whether document `id`'s embeddings for embedder `name` may be computed again: it has
    /// none yet, or they were generated (`regenerate: true`), not given.
    pub fn regenerates(&self, name: &str, id: u32) -> ShardResult<bool> {
        let Some(slot) = self.embedder_slot(name) else {
            return Ok(true);
        };
        Ok(entry_of(self.read_transaction(), slot, id)?.is_none_or(|stored| stored.regenerate))
    }

    /// The slot of embedder `name`, if the shard keeps vectors for it.
    pub fn embedder_slot(&self, name: &str) -> Option<&EmbedderSlot> {
        self.vector_settings().slot(name)
    }

    /// Document `id`'s `_vectors` as Meilisearch shows them with `retrieveVectors`: every
    /// embedder's `{"embeddings", "regenerate"}` (none given: empty and not regenerated),
    /// after the entries of unknown embedders the stored document keeps. An embedder with
    /// fragments lists every fragment's embedding, in fragment id order.
    pub fn vectors_of(&self, id: u32, stored: Option<&Value>) -> ShardResult<Value> {
        self.vectors_as(id, stored, false)
    }

    /// Document `id`'s `_vectors` as a dump or an export writes them: as
    /// [`ShardSnapshot::vectors_of`], except that an embedder with fragments writes
    /// `regenerate: false` (imported again, its embeddings are the user's, and Meilisearch
    /// would otherwise compute every fragment again at the first change).
    pub fn vectors_for_transfer(&self, id: u32, stored: Option<&Value>) -> ShardResult<Value> {
        self.vectors_as(id, stored, true)
    }

    fn vectors_as(&self, id: u32, stored: Option<&Value>, transfer: bool) -> ShardResult<Value> {
        let mut vectors = match stored {
            Some(Value::Object(entries)) => entries.clone(),
            _ => Map::new(),
        };
        for slot in &self.vector_settings().slots {
            let keeps_regenerate = !transfer || slot.fragments.is_empty();
            let entry = match embeddings_of(self.read_transaction(), self.graphs(), slot, id)? {
                Some(stored) => json!({
                    "embeddings": embeddings_json(&stored.embeddings),
                    "regenerate": stored.regenerate && keeps_regenerate,
                }),
                None => json!({ "embeddings": [], "regenerate": false }),
            };
            vectors.insert(slot.name.clone(), entry);
        }
        Ok(Value::Object(vectors))
    }

    /// Puts document `id`'s `_vectors` into `document` (see [`ShardSnapshot::vectors_of`]).
    pub fn attach_vectors(&self, id: u32, document: &mut Map<String, Value>) -> ShardResult<()> {
        let vectors = self.vectors_of(id, document.get(VECTORS_FIELD))?;
        document.insert(VECTORS_FIELD.to_owned(), vectors);
        Ok(())
    }

    /// Puts document `id`'s `_vectors` into `document` as a dump or an export writes them
    /// (see [`ShardSnapshot::vectors_for_transfer`]).
    pub fn attach_vectors_for_transfer(
        &self,
        id: u32,
        document: &mut Map<String, Value>,
    ) -> ShardResult<()> {
        let vectors = self.vectors_for_transfer(id, document.get(VECTORS_FIELD))?;
        document.insert(VECTORS_FIELD.to_owned(), vectors);
        Ok(())
    }

    /// What document `id` keeps for embedder `name`: its embeddings, each with the name of
    /// the fragment it was computed from, and whether they were generated and may be
    /// generated again (`None`: no entry).
    pub fn stored_vectors(&self, name: &str, id: u32) -> ShardResult<Option<StoredVectors>> {
        let Some(slot) = self.embedder_slot(name) else {
            return Ok(None);
        };
        let Some(stored) = embeddings_of(self.read_transaction(), self.graphs(), slot, id)? else {
            return Ok(None);
        };
        let fragments: Vec<Option<String>> = if stored.fragments.is_empty() {
            vec![None; stored.embeddings.len()]
        } else {
            stored
                .fragments
                .iter()
                .map(|fragment| slot.fragment_name(*fragment).map(str::to_owned))
                .collect()
        };
        Ok(Some(StoredVectors {
            regenerate: stored.regenerate,
            generated: stored.generated,
            vectors: fragments.into_iter().zip(stored.embeddings).collect(),
        }))
    }

    /// The embeddings document `id` keeps for embedder `name`.
    pub fn embeddings(&self, name: &str, id: u32) -> ShardResult<Vec<Vec<f32>>> {
        let Some(slot) = self.embedder_slot(name) else {
            return Ok(Vec::new());
        };
        Ok(
            embeddings_of(self.read_transaction(), self.graphs(), slot, id)?
                .map(|stored| stored.embeddings)
                .unwrap_or_default(),
        )
    }

    /// The `limit` documents of `candidates` closest to `vector` for embedder `name`.
    pub fn nearest_documents(
        &self,
        name: &str,
        vector: &[f32],
        limit: usize,
        candidates: Option<&RoaringBitmap>,
    ) -> ShardResult<Vec<VectorHit>> {
        let Some(slot) = self.embedder_slot(name) else {
            return Ok(Vec::new());
        };
        nearest(
            self.read_transaction(),
            self.graphs(),
            slot,
            vector,
            limit,
            candidates,
        )
    }

    /// The documents with at least one vector for embedder `name`.
    pub fn documents_with_vectors(&self, name: &str) -> ShardResult<RoaringBitmap> {
        match self.embedder_slot(name) {
            Some(slot) => documents_with_vectors(self.read_transaction(), self.graphs(), slot),
            None => Ok(RoaringBitmap::new()),
        }
    }
}
