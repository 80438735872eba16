//! A batch's pending vector changes, written into the graphs and the `embeddings` tree at each
//! flush of the batch (in the batch's write transaction, so they commit with the documents).
//!
//! Per slot, the documents whose embeddings change map to their new embeddings (`None`: the
//! document's embeddings go). A flush first deletes the old graph ids of every changed
//! document in one graph operation (links are patched once), then inserts the new ones.
//!
//! Invariants: after a flush the `embeddings` tree and the graph agree: a document's entry
//! lists exactly the graph ids live for it, and every live graph id below
//! `EXTRA_VECTOR_ID_BASE` is a document with an entry. A graph that holds originals keeps the
//! only copy of each vector: the entries written into its slot leave their floats out. The graph's files are synced before
//! the flush returns (`GraphWriter::finish`), so a commit never names unsynced records.

use std::collections::{BTreeMap, BTreeSet};

use roaring::RoaringBitmap;
use storage_engine::WriteTransaction;
use storage_engine::WriteTree;
use storage_engine::vector::GraphWriter;

use super::graphs::GraphSet;
use super::settings::{EmbedderSlot, VectorSettings};
use super::stored::{
    EMBEDDINGS_TREE, EXTRA_VECTOR_ID_BASE, StoredEmbeddings, decode, document_key, encode,
    extra_key, is_document_key, next_extra_key, read_u32, slot_entries,
};
use crate::error::{ShardError, ShardResult};

/// A document's new embeddings for one slot.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEmbeddings {
    pub embeddings: Vec<Vec<f32>>,
    pub regenerate: bool,
    /// The embedder computed them (false: the user gave them).
    pub generated: bool,
    /// The fragment id of each embedding (empty: from no fragment).
    pub fragments: Vec<u8>,
}

impl NewEmbeddings {
    /// Embeddings the user gave.
    pub fn given(embeddings: Vec<Vec<f32>>, regenerate: bool) -> Self {
        NewEmbeddings {
            embeddings,
            regenerate,
            generated: false,
            fragments: Vec::new(),
        }
    }
}

/// Pending changes of one batch.
#[derive(Debug, Default)]
pub struct VectorChanges {
    /// Slot → document → its new embeddings (`None`: removed).
    pending: BTreeMap<u16, BTreeMap<u32, Option<NewEmbeddings>>>,
    /// Every slot's vectors go before the pending changes apply (a `DeleteAll`).
    clear_all: bool,
    /// Heap bytes of the pending embeddings, about.
    bytes: usize,
    /// Slots this batch wrote to a graph (forgotten if the batch does not commit).
    touched: BTreeSet<u16>,
}

impl VectorChanges {
    /// Document `id` gets `embeddings` (given by the user) for `slot`.
    pub fn set(&mut self, slot: u16, id: u32, embeddings: Vec<Vec<f32>>, regenerate: bool) {
        self.set_entry(slot, id, NewEmbeddings::given(embeddings, regenerate));
    }

    /// Document `id` gets the embeddings of `new` for `slot`.
    pub fn set_entry(&mut self, slot: u16, id: u32, new: NewEmbeddings) {
        debug_assert!(new.fragments.is_empty() || new.fragments.len() == new.embeddings.len());
        self.bytes += new
            .embeddings
            .iter()
            .map(|vector| 4 * vector.len() + 24)
            .sum::<usize>()
            + 48
            + new.fragments.len();
        self.pending.entry(slot).or_default().insert(id, Some(new));
    }

    /// Document `id` loses its embeddings in every slot.
    pub fn remove_document(&mut self, settings: &VectorSettings, id: u32) {
        for slot in &settings.slots {
            self.pending.entry(slot.slot).or_default().insert(id, None);
        }
        self.bytes += 48 * settings.slots.len();
    }

    /// Every document loses its embeddings (pending changes before this one are void).
    pub fn clear_all(&mut self) {
        self.pending.clear();
        self.bytes = 0;
        self.clear_all = true;
    }

    /// Whether document `id` gets new embeddings for `slot` in this batch (not yet flushed).
    pub fn is_pending(&self, slot: u16, id: u32) -> bool {
        self.pending
            .get(&slot)
            .and_then(|documents| documents.get(&id))
            .is_some_and(Option::is_some)
    }

    /// About how many heap bytes the pending changes take.
    pub fn estimated_bytes(&self) -> usize {
        self.bytes
    }

    /// The slots written so far.
    pub fn touched(&self) -> impl Iterator<Item = u16> + '_ {
        self.touched.iter().copied()
    }

    /// Writes the pending changes into the graphs and the `embeddings` tree.
    pub fn flush(
        &mut self,
        transaction: &WriteTransaction,
        settings: &VectorSettings,
        graphs: &GraphSet,
    ) -> ShardResult<()> {
        if self.pending.is_empty() && !self.clear_all {
            return Ok(());
        }
        let tree = transaction.create_tree(EMBEDDINGS_TREE)?;
        if std::mem::take(&mut self.clear_all) {
            for slot in &settings.slots {
                self.touched.insert(slot.slot);
                clear_slot(transaction, &tree, slot, graphs)?;
            }
        }
        for (slot_number, documents) in std::mem::take(&mut self.pending) {
            let Some(slot) = settings.slots.iter().find(|slot| slot.slot == slot_number) else {
                continue;
            };
            self.touched.insert(slot_number);
            let graph = graphs.for_write(transaction, slot)?;
            let mut writer = graph.writer(transaction)?;
            flush_slot(&tree, &mut writer, graph.holds_originals(), slot, documents)?;
            writer.finish()?;
        }
        self.bytes = 0;
        Ok(())
    }
}

/// Deletes every vector of `slot`.
fn clear_slot(
    transaction: &WriteTransaction,
    tree: &WriteTree<'_>,
    slot: &EmbedderSlot,
    graphs: &GraphSet,
) -> ShardResult<()> {
    let graph = graphs.for_write(transaction, slot)?;
    let mut writer = graph.writer(transaction)?;
    let mut live = RoaringBitmap::new();
    for (key, value) in slot_entries(tree, slot.slot)? {
        if is_document_key(&key) {
            live.extend(decode(&value, slot.dimensions)?.graph_ids);
        }
        if key.as_slice() != next_extra_key(slot.slot).as_slice() {
            tree.delete(&key)?;
        }
    }
    writer.delete(&live)?;
    writer.finish()?;
    Ok(())
}

/// Applies one slot's changes; entries leave their floats to the graph when it
/// `holds_originals`.
fn flush_slot(
    tree: &WriteTree<'_>,
    writer: &mut GraphWriter<'_>,
    holds_originals: bool,
    slot: &EmbedderSlot,
    documents: BTreeMap<u32, Option<NewEmbeddings>>,
) -> ShardResult<()> {
    let mut old_ids = RoaringBitmap::new();
    for id in documents.keys() {
        if let Some(bytes) = tree.get(&document_key(slot.slot, *id))? {
            let old = decode(&bytes, slot.dimensions)?;
            for graph_id in &old.graph_ids {
                old_ids.insert(*graph_id);
                if *graph_id >= EXTRA_VECTOR_ID_BASE {
                    tree.delete(&extra_key(slot.slot, *graph_id))?;
                }
            }
            tree.delete(&document_key(slot.slot, *id))?;
        }
    }
    writer.delete(&old_ids)?;
    let mut next_extra = match tree.get(&next_extra_key(slot.slot))? {
        Some(bytes) => read_u32(&bytes, 0).ok_or_else(|| ShardError::corrupted("next extra id"))?,
        None => EXTRA_VECTOR_ID_BASE,
    };
    for (id, change) in documents {
        let Some(new) = change else {
            continue;
        };
        let mut graph_ids = Vec::with_capacity(new.embeddings.len());
        for (index, embedding) in new.embeddings.iter().enumerate() {
            let graph_id = if index == 0 {
                id
            } else {
                let extra = next_extra;
                next_extra = next_extra
                    .checked_add(1)
                    .ok_or_else(|| ShardError::InvalidSetting("too many vectors".into()))?;
                tree.put(&extra_key(slot.slot, extra), &id.to_le_bytes())?;
                extra
            };
            writer.insert(graph_id, embedding)?;
            graph_ids.push(graph_id);
        }
        let stored = StoredEmbeddings {
            regenerate: new.regenerate,
            generated: new.generated,
            graph_ids,
            fragments: new.fragments,
            embeddings: new.embeddings,
            in_graph: holds_originals,
        };
        tree.put(&document_key(slot.slot, id), &encode(&stored))?;
    }
    tree.put(&next_extra_key(slot.slot), &next_extra.to_le_bytes())?;
    Ok(())
}
