//! Reading a snapshot's vectors: a document's embeddings, the nearest documents to a vector
//! (several vectors of one document count once, at their best distance), and the counts the
//! index statistics show.
//!
//! Invariant: everything is read from one read transaction, so the graph and the
//! `embeddings` tree describe the same commit.

use std::collections::HashMap;

use roaring::RoaringBitmap;
use storage_engine::vector::{SearchRequest, SearchScratch, VectorError};
use storage_engine::{Direction, ReadTransaction};

use super::graphs::GraphSet;
use super::settings::{EmbedderSlot, VectorSettings};
use super::stored::{
    EMBEDDINGS_TREE, EXTRA_VECTOR_ID_BASE, GENERATED_FLAG, REGENERATE_FLAG, StoredEmbeddings,
    decode, document_key, extra_range, id_of_key, is_document_key, read_u32, slot_range,
};
use crate::error::{ShardError, ShardResult};

/// A document near a query vector.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VectorHit {
    pub id: u32,
    /// `1 - cosine` of the document's closest vector (0 is identical, 2 opposite).
    pub distance: f32,
}

/// Document `id`'s entry for `slot`, its floats not read when the graph keeps them (flags,
/// graph ids and fragments are all there).
pub fn entry_of(
    read: &ReadTransaction,
    slot: &EmbedderSlot,
    id: u32,
) -> ShardResult<Option<StoredEmbeddings>> {
    let Some(tree) = read.open_tree(EMBEDDINGS_TREE)? else {
        return Ok(None);
    };
    tree.get(&document_key(slot.slot, id))?
        .map(|bytes| decode(bytes, slot.dimensions))
        .transpose()
}

/// The embeddings document `id` keeps for `slot`, read from the slot's graph when the entry
/// leaves them to it.
pub fn embeddings_of(
    read: &ReadTransaction,
    graphs: &GraphSet,
    slot: &EmbedderSlot,
    id: u32,
) -> ShardResult<Option<StoredEmbeddings>> {
    let Some(mut stored) = entry_of(read, slot, id)? else {
        return Ok(None);
    };
    if stored.in_graph {
        let graph = graphs
            .for_read(read, slot)?
            .ok_or_else(|| ShardError::corrupted("embeddings kept by a missing graph"))?;
        let originals = graph.originals(read)?;
        stored.resolve(|graph_id| Ok(originals.get(graph_id)?))?;
    }
    Ok(Some(stored))
}

/// Extra vector id → owning document, for every extra vector of `slot`.
fn extra_owners(read: &ReadTransaction, slot: &EmbedderSlot) -> ShardResult<HashMap<u32, u32>> {
    let mut owners = HashMap::new();
    let Some(tree) = read.open_tree(EMBEDDINGS_TREE)? else {
        return Ok(owners);
    };
    let (start, end) = extra_range(slot.slot);
    for entry in tree.range(
        std::ops::Bound::Included(start.as_slice()),
        std::ops::Bound::Excluded(end.as_slice()),
        Direction::Forward,
    )? {
        let (key, value) = entry?;
        let owner = read_u32(value, 0).ok_or_else(|| ShardError::corrupted("extra owner"))?;
        owners.insert(id_of_key(key)?, owner);
    }
    Ok(owners)
}

/// The `limit` documents closest to `vector` among `candidates` (every document when `None`),
/// closest first.
pub fn nearest(
    read: &ReadTransaction,
    graphs: &GraphSet,
    slot: &EmbedderSlot,
    vector: &[f32],
    limit: usize,
    candidates: Option<&RoaringBitmap>,
) -> ShardResult<Vec<VectorHit>> {
    let Some(graph) = graphs.for_read(read, slot)? else {
        return Ok(Vec::new());
    };
    let reader = match graph.reader(read) {
        Ok(reader) => reader,
        Err(VectorError::UnknownGraph(_)) => return Ok(Vec::new()),
        Err(error) => return Err(error.into()),
    };
    let has_extras = reader
        .live_ids()
        .max()
        .is_some_and(|max| max >= EXTRA_VECTOR_ID_BASE);
    let owners = if has_extras {
        extra_owners(read, slot)?
    } else {
        HashMap::new()
    };
    let graph_candidates = candidates.map(|documents| {
        let mut ids = documents.clone();
        ids.extend(
            owners
                .iter()
                .filter(|(_, owner)| documents.contains(**owner))
                .map(|(extra, _)| *extra),
        );
        ids
    });
    let asked = limit.saturating_add(owners.len().min(limit));
    let mut request = SearchRequest::new(vector, asked);
    request.candidates = graph_candidates.as_ref();
    let mut scratch = SearchScratch::new();
    let hits = reader.search(&request, &mut scratch)?;
    let mut best: Vec<VectorHit> = Vec::with_capacity(hits.len());
    for hit in hits {
        let id = if hit.internal_id >= EXTRA_VECTOR_ID_BASE {
            match owners.get(&hit.internal_id) {
                Some(owner) => *owner,
                None => return Err(ShardError::corrupted("an extra vector without owner")),
            }
        } else {
            hit.internal_id
        };
        if !best.iter().any(|kept| kept.id == id) {
            best.push(VectorHit {
                id,
                distance: hit.distance,
            });
        }
    }
    best.truncate(limit);
    Ok(best)
}

/// Live vectors and documents with at least one vector, over every slot.
pub fn counts(
    read: &ReadTransaction,
    graphs: &GraphSet,
    settings: &VectorSettings,
) -> ShardResult<(u64, u64)> {
    let mut embeddings = 0;
    let mut documents = RoaringBitmap::new();
    for slot in &settings.slots {
        let Some(graph) = graphs.for_read(read, slot)? else {
            continue;
        };
        let reader = match graph.reader(read) {
            Ok(reader) => reader,
            Err(VectorError::UnknownGraph(_)) => continue,
            Err(error) => return Err(error.into()),
        };
        embeddings += reader.len();
        let mut own = reader.live_ids().clone();
        own.remove_range(EXTRA_VECTOR_ID_BASE..);
        documents |= own;
    }
    Ok((embeddings, documents.len()))
}

/// The documents whose embeddings for a slot came from the user (an entry in the
/// `embeddings` tree not written by the embedder, even without embeddings), and those with
/// an entry that are never generated again (`regenerate: false`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProvidedDocuments {
    pub user_provided: RoaringBitmap,
    pub skip_regenerate: RoaringBitmap,
}

/// Calls `each` with the internal id and the value of every document entry of `slot`.
fn for_each_entry(
    read: &ReadTransaction,
    slot: &EmbedderSlot,
    mut each: impl FnMut(u32, &[u8]) -> ShardResult<()>,
) -> ShardResult<()> {
    let Some(tree) = read.open_tree(EMBEDDINGS_TREE)? else {
        return Ok(());
    };
    let (start, end) = slot_range(slot.slot);
    for entry in tree.range(
        std::ops::Bound::Included(start.as_slice()),
        std::ops::Bound::Excluded(end.as_slice()),
        Direction::Forward,
    )? {
        let (key, value) = entry?;
        if is_document_key(key) {
            each(id_of_key(key)?, value)?;
        }
    }
    Ok(())
}

/// The [`ProvidedDocuments`] of `slot`, from one scan of its document entries.
pub fn provided_documents(
    read: &ReadTransaction,
    slot: &EmbedderSlot,
) -> ShardResult<ProvidedDocuments> {
    let mut provided = ProvidedDocuments::default();
    for_each_entry(read, slot, |id, value| {
        let flags = *value
            .first()
            .ok_or_else(|| ShardError::corrupted("embeddings entry"))?;
        if flags & GENERATED_FLAG == 0 {
            provided.user_provided.insert(id);
        }
        if flags & REGENERATE_FLAG == 0 {
            provided.skip_regenerate.insert(id);
        }
        Ok(())
    })?;
    Ok(provided)
}

/// The documents with an embedding the embedder computed from fragment `fragment` of
/// `slot`.
pub fn fragment_documents(
    read: &ReadTransaction,
    slot: &EmbedderSlot,
    fragment: u8,
) -> ShardResult<RoaringBitmap> {
    let mut documents = RoaringBitmap::new();
    for_each_entry(read, slot, |id, value| {
        let stored = decode(value, slot.dimensions)?;
        if stored.generated && stored.fragments.contains(&fragment) {
            documents.insert(id);
        }
        Ok(())
    })?;
    Ok(documents)
}

/// The documents with at least one vector for `slot`.
pub fn documents_with_vectors(
    read: &ReadTransaction,
    graphs: &GraphSet,
    slot: &EmbedderSlot,
) -> ShardResult<RoaringBitmap> {
    let Some(graph) = graphs.for_read(read, slot)? else {
        return Ok(RoaringBitmap::new());
    };
    let reader = match graph.reader(read) {
        Ok(reader) => reader,
        Err(VectorError::UnknownGraph(_)) => return Ok(RoaringBitmap::new()),
        Err(error) => return Err(error.into()),
    };
    let mut documents = reader.live_ids().clone();
    documents.remove_range(EXTRA_VECTOR_ID_BASE..);
    Ok(documents)
}
