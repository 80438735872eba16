//! The vector side of applying a document: its `_vectors` taken out of what is stored, and
//! its embeddings recorded as the batch's pending vector changes.
//!
//! Rules (Meilisearch's): an embedder the document gives no entry for keeps the embeddings
//! the document had; a document the batch creates must give an entry for every embedder that
//! requires one (`userProvided`), `null` or `[]` opting out.

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::PreparedBatch;
use crate::error::{ShardError, ShardResult, VectorsErrorKind};
use crate::vectors::changes::NewEmbeddings;
use crate::vectors::{EmbedderSlot, GeneratedVectors, SlotVectors, VECTORS_FIELD, take_vectors};

/// A document without its embedders' `_vectors` entries, and those entries.
type SplitDocument<'d> = (Cow<'d, Map<String, Value>>, Vec<SlotVectors>);

impl PreparedBatch {
    /// `document` without the entries of the shard's embedders, and those entries.
    pub(in crate::shard) fn split_vectors<'d>(
        &self,
        external_id: &str,
        document: &'d Map<String, Value>,
    ) -> ShardResult<SplitDocument<'d>> {
        let settings = &self.state.vector_settings;
        if settings.is_empty() || !document.contains_key(VECTORS_FIELD) {
            return Ok((Cow::Borrowed(document), Vec::new()));
        }
        let mut owned = document.clone();
        let vectors = take_vectors(&mut owned, settings, external_id)?;
        Ok((Cow::Owned(owned), vectors))
    }

    /// Records the embeddings document `id` gives; a `created` document must give every
    /// embedder that requires them.
    pub(in crate::shard) fn record_vectors(
        &mut self,
        external_id: &str,
        id: u32,
        vectors: Vec<SlotVectors>,
        created: bool,
    ) -> ShardResult<()> {
        if created {
            self.check_required_vectors(external_id, &vectors)?;
        }
        for given in vectors {
            self.vectors
                .set(given.slot, id, given.embeddings, given.regenerate);
        }
        Ok(())
    }

    /// Records the embeddings the remote embedders computed for the document stored under
    /// `external_id` (see [`super::Operation::SetGenerated`]).
    pub(in crate::shard) fn record_generated(
        &mut self,
        external_id: &str,
        generated: Vec<GeneratedVectors>,
    ) -> ShardResult<()> {
        let Some(id) = self.existing_id(external_id)? else {
            return Ok(());
        };
        for computed in generated {
            let Some(slot) = self.state.vector_settings.slot(&computed.embedder) else {
                continue;
            };
            let new = generated_entry(slot, computed)?;
            let slot = slot.slot;
            self.vectors.set_entry(slot, id, new);
        }
        Ok(())
    }

    /// Records, for the document stored under `external_id`, the embeddings another shard
    /// kept for it, flags and fragments as they were (see
    /// [`super::Operation::SetStoredVectors`]).
    pub(in crate::shard) fn record_stored_copies(
        &mut self,
        external_id: &str,
        vectors: Vec<(String, crate::shard::StoredVectors)>,
    ) -> ShardResult<()> {
        let Some(id) = self.existing_id(external_id)? else {
            return Ok(());
        };
        for (embedder, stored) in vectors {
            let Some(slot) = self.state.vector_settings.slot(&embedder) else {
                continue;
            };
            let new = copied_entry(slot, stored)?;
            let slot = slot.slot;
            self.vectors.set_entry(slot, id, new);
        }
        Ok(())
    }

    fn check_required_vectors(
        &self,
        external_id: &str,
        vectors: &[SlotVectors],
    ) -> ShardResult<()> {
        let missing = self.state.vector_settings.slots.iter().find(|slot| {
            slot.requires_vectors && !vectors.iter().any(|given| given.slot == slot.slot)
        });
        match missing {
            None => Ok(()),
            Some(slot) => Err(ShardError::InvalidDocumentVectors {
                kind: VectorsErrorKind::Missing,
                message: format!(
                    "While embedding documents for embedder `{name}`: no vectors provided for document `{external_id}`\n- Note: `{name}` has `source: userProvided`, so documents must provide embeddings as an array in `_vectors.{name}`.\n- Hint: opt-out for a document with `_vectors.{name}: null`",
                    name = slot.name
                ),
            }),
        }
    }
}

/// The entry of `computed` in `slot`: embeddings in fragment id order, each with its id.
fn generated_entry(slot: &EmbedderSlot, computed: GeneratedVectors) -> ShardResult<NewEmbeddings> {
    let named = computed
        .vectors
        .into_iter()
        .map(|vector| (vector.fragment, vector.embedding));
    let mut entry = numbered_entry(slot, named)?;
    entry.regenerate = true;
    entry.generated = true;
    Ok(entry)
}

/// The entry another shard kept in `slot` (see [`PreparedBatch::record_stored_copies`]):
/// its flags as they were.
fn copied_entry(
    slot: &EmbedderSlot,
    stored: crate::shard::StoredVectors,
) -> ShardResult<NewEmbeddings> {
    let mut entry = numbered_entry(slot, stored.vectors.into_iter())?;
    entry.regenerate = stored.regenerate;
    entry.generated = stored.generated;
    Ok(entry)
}

/// An entry of `slot` holding `named` (each embedding with the name of its fragment), in
/// fragment id order, with no flag raised.
fn numbered_entry(
    slot: &EmbedderSlot,
    named: impl Iterator<Item = (Option<String>, Vec<f32>)>,
) -> ShardResult<NewEmbeddings> {
    let mut numbered = Vec::new();
    for (fragment, embedding) in named {
        let fragment = match &fragment {
            Some(name) => Some(slot.fragment_id(name).ok_or_else(|| {
                ShardError::InvalidSetting(format!(
                    "embedder `{}` has no indexing fragment `{name}`",
                    slot.name
                ))
            })?),
            None => None,
        };
        numbered.push((fragment, embedding));
    }
    numbered.sort_by_key(|(fragment, _)| *fragment);
    let with_fragments = numbered.iter().any(|(fragment, _)| fragment.is_some());
    let fragments = if with_fragments {
        numbered
            .iter()
            .map(|(fragment, _)| fragment.unwrap_or_default())
            .collect()
    } else {
        Vec::new()
    };
    Ok(NewEmbeddings {
        embeddings: numbered
            .into_iter()
            .map(|(_, embedding)| embedding)
            .collect(),
        regenerate: false,
        generated: false,
        fragments,
    })
}

impl PreparedBatch {
    /// A batch that changes the embedders in `transaction` (see [`Self::adopt_stored_vectors`]).
    pub(in crate::shard) fn for_embedders(
        transaction: storage_engine::WriteTransaction,
        state: crate::shard::state::ShardState,
        decoders: &std::sync::Arc<crate::index::document_codec::DecoderCache>,
        pending_bytes_max: usize,
        graphs: &std::sync::Arc<crate::vectors::GraphSet>,
    ) -> ShardResult<PreparedBatch> {
        let analyzer = crate::analysis::Analyzer::new(&state.text_settings);
        let mut batch =
            PreparedBatch::for_rebuild(transaction, state, analyzer, decoders, pending_bytes_max)?;
        batch.graphs = std::sync::Arc::clone(graphs);
        Ok(batch)
    }

    /// The slots of this batch's state.
    pub(in crate::shard) fn vector_settings_mut(&mut self) -> &mut crate::vectors::VectorSettings {
        &mut self.state.vector_settings
    }

    /// Moves the `_vectors` entries stored documents keep for the embedders of `names` (given
    /// before those embedders existed) into their graphs, as Meilisearch adopts them.
    pub(in crate::shard) fn adopt_stored_vectors(&mut self, names: &[String]) -> ShardResult<()> {
        let mut adopted = self.state.vector_settings.clone();
        adopted.slots.retain(|slot| names.contains(&slot.name));
        if adopted.is_empty() {
            return Ok(());
        }
        for id in self.live_ids() {
            let stored = self.stored_document(id)?;
            let mut document = self.decode(&stored)?;
            if !document.contains_key(VECTORS_FIELD) {
                continue;
            }
            let taken = take_vectors(&mut document, &adopted, &id.to_string())?;
            if taken.is_empty() {
                continue;
            }
            let encoded = self.encode(&crate::index::document_codec::document_json(&document))?;
            self.state.document_bytes = self
                .state
                .document_bytes
                .saturating_sub(stored.len() as u64)
                + encoded.len() as u64;
            self.transaction()
                .create_tree(crate::index::trees::DOCUMENTS_TREE)?
                .put(&crate::index::keys::document_key(id), &encoded)?;
            for given in taken {
                self.vectors
                    .set(given.slot, id, given.embeddings, given.regenerate);
            }
            self.rebuilt_one()?;
        }
        Ok(())
    }

    /// Writes the pending vector changes and the state, and commits.
    pub(in crate::shard) fn commit_embedders(mut self) -> ShardResult<()> {
        let Some(transaction) = self.transaction.take() else {
            return Ok(());
        };
        self.vectors
            .flush(&transaction, &self.state.vector_settings, &self.graphs)?;
        self.state.store(&transaction)?;
        transaction.commit()?;
        Ok(())
    }
}

impl PreparedBatch {
    /// Records every embedding of the old slot `from` again under slot `to`.
    pub(in crate::shard) fn move_slot(
        &mut self,
        from: &crate::vectors::EmbedderSlot,
        to: u16,
    ) -> ShardResult<()> {
        use crate::vectors::stored::{
            EMBEDDINGS_TREE, decode, id_of_key, is_document_key, slot_entries,
        };
        let tree = self.transaction().create_tree(EMBEDDINGS_TREE)?;
        let mut entries = Vec::new();
        for (key, value) in slot_entries(&tree, from.slot)? {
            if is_document_key(&key) {
                entries.push((id_of_key(&key)?, decode(&value, from.dimensions)?));
            }
        }
        drop(tree);
        self.resolve_entries(from, &mut entries)?;
        // The new slot inherited the old one's fragment ids; those it no longer has go.
        let known: Vec<u8> = self
            .state
            .vector_settings
            .slots
            .iter()
            .find(|slot| slot.slot == to)
            .map(|slot| slot.fragments.iter().map(|fragment| fragment.id).collect())
            .unwrap_or_default();
        for (id, stored) in entries {
            let new = if stored.fragments.is_empty() {
                NewEmbeddings {
                    embeddings: stored.embeddings,
                    regenerate: stored.regenerate,
                    generated: stored.generated,
                    fragments: Vec::new(),
                }
            } else {
                let (fragments, embeddings) = stored
                    .fragments
                    .into_iter()
                    .zip(stored.embeddings)
                    .filter(|(fragment, _)| known.contains(fragment))
                    .unzip();
                NewEmbeddings {
                    embeddings,
                    regenerate: stored.regenerate,
                    generated: stored.generated,
                    fragments,
                }
            };
            self.vectors.set_entry(to, id, new);
        }
        Ok(())
    }

    /// Drops, from every document's entry of `slot`, the embeddings of the fragments `ids`
    /// (removed from the embedder); the other embeddings stay.
    pub(in crate::shard) fn drop_fragments(
        &mut self,
        slot: &crate::vectors::EmbedderSlot,
        ids: &[u8],
    ) -> ShardResult<()> {
        use crate::vectors::stored::{
            EMBEDDINGS_TREE, decode, id_of_key, is_document_key, slot_entries,
        };
        let tree = self.transaction().create_tree(EMBEDDINGS_TREE)?;
        let mut changed = Vec::new();
        for (key, value) in slot_entries(&tree, slot.slot)? {
            if !is_document_key(&key) {
                continue;
            }
            let stored = decode(&value, slot.dimensions)?;
            if !stored
                .fragments
                .iter()
                .any(|fragment| ids.contains(fragment))
            {
                continue;
            }
            changed.push((id_of_key(&key)?, stored));
        }
        drop(tree);
        self.resolve_entries(slot, &mut changed)?;
        for (id, stored) in changed {
            let (fragments, embeddings): (Vec<u8>, Vec<Vec<f32>>) = stored
                .fragments
                .into_iter()
                .zip(stored.embeddings)
                .filter(|(fragment, _)| !ids.contains(fragment))
                .unzip();
            self.vectors.set_entry(
                slot.slot,
                id,
                NewEmbeddings {
                    embeddings,
                    regenerate: stored.regenerate,
                    generated: stored.generated,
                    fragments,
                },
            );
        }
        Ok(())
    }

    /// Fills in the embeddings of the `entries` of `slot` that its graph keeps, as this
    /// batch's transaction holds them (before any change to the slot in it).
    fn resolve_entries(
        &self,
        slot: &crate::vectors::EmbedderSlot,
        entries: &mut [(u32, crate::vectors::stored::StoredEmbeddings)],
    ) -> ShardResult<()> {
        if !entries.iter().any(|(_, stored)| stored.in_graph) {
            return Ok(());
        }
        let transaction = self.transaction();
        let graph = self.graphs.for_write(transaction, slot)?;
        let writer = graph.writer(transaction)?;
        for (_, stored) in entries.iter_mut() {
            stored.resolve(|graph_id| Ok(writer.original(graph_id)?))?;
        }
        Ok(())
    }

    /// Drops a slot's graph trees and `embeddings` entries in this batch's transaction.
    pub(in crate::shard) fn drop_slot(
        &mut self,
        slot: &crate::vectors::EmbedderSlot,
    ) -> ShardResult<()> {
        use crate::vectors::stored::{EMBEDDINGS_TREE, slot_entries};
        let transaction = self.transaction();
        self.graphs.drop_trees(transaction, slot)?;
        let tree = transaction.create_tree(EMBEDDINGS_TREE)?;
        for (key, _) in slot_entries(&tree, slot.slot)? {
            tree.delete(&key)?;
        }
        Ok(())
    }
}
