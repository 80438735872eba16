//! The `embeddings` tree: for every document, which graph ids hold its embeddings and how
//! they came (given or generated, regenerable, from which fragment) — the embeddings
//! themselves stay in the graph, which keeps them as the user gave them (older graphs kept
//! them normalised: their entries carry the floats) — and the owners of the extra vectors of
//! documents with several.
//!
//! Keys start with the slot (u16 BE) and a kind byte:
//! - `slot ‖ 0 ‖ internal id (u32 BE)` → `flags (u8) ‖ count (u32 LE) ‖ count graph ids
//!   (u32 LE) ‖ [count fragment ids (u8), when flagged] ‖ count × dimensions floats (f32 LE)`:
//!   the document's embeddings and the graph id each is stored under (the first under the
//!   document's own id, the others under extra ids). Flags: [`REGENERATE_FLAG`] (the
//!   embedder may compute them again), [`GENERATED_FLAG`] (the embedder computed them: not
//!   given by the user), [`FRAGMENTS_FLAG`] (each embedding names the indexing fragment it
//!   was computed from) and [`IN_GRAPH_FLAG`] (the floats are left out: each embedding is the
//!   original its graph id keeps in the slot's graph, see `Graph::holds_originals`, so every
//!   vector is stored once). Entries written before the last three flags existed hold 0 or
//!   1: they read as given by the user, without fragments, with their floats, as they were;
//! - `slot ‖ 1 ‖ extra id (u32 BE)` → owner internal id (u32 LE);
//! - `slot ‖ 2` → the next extra id (u32 LE).
//!
//! Invariants: an extra id is at least [`EXTRA_VECTOR_ID_BASE`] and is never reused by a
//! slot; a graph id below the base is the internal id of the document it belongs to; a
//! document's entry exists exactly when it gave (or kept) embeddings for the slot, even none;
//! an entry flagged [`IN_GRAPH_FLAG`] is only written while its slot's graph holds originals,
//! and every graph id it lists is live in that graph in the same commit.

use crate::error::{ShardError, ShardResult};

/// The tree's name.
pub const EMBEDDINGS_TREE: &str = "embeddings";
/// The first graph id of a document's second, third… vector: internal ids stay below it, so
/// a graph id tells at once whether it needs the owner look-up.
pub const EXTRA_VECTOR_ID_BASE: u32 = 1 << 31;

/// Entry flag: the embeddings may be computed again (`regenerate: true`).
pub const REGENERATE_FLAG: u8 = 1;
/// Entry flag: the embedder computed the embeddings (the user did not give them).
pub const GENERATED_FLAG: u8 = 2;
/// Entry flag: a fragment id per embedding follows the graph ids.
pub const FRAGMENTS_FLAG: u8 = 4;
/// Entry flag: the floats are left out, the slot's graph keeps them (by graph id).
pub const IN_GRAPH_FLAG: u8 = 8;
/// Every flag an entry may hold: another bit is damage.
const KNOWN_FLAGS: u8 = REGENERATE_FLAG | GENERATED_FLAG | FRAGMENTS_FLAG | IN_GRAPH_FLAG;

const DOCUMENT_KIND: u8 = 0;
const EXTRA_KIND: u8 = 1;
const NEXT_EXTRA_KIND: u8 = 2;

/// One document's embeddings for one slot.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEmbeddings {
    pub regenerate: bool,
    /// The embedder computed them (false: the user gave them).
    pub generated: bool,
    /// The graph id of each embedding.
    pub graph_ids: Vec<u32>,
    /// The indexing fragment each embedding was computed from (see
    /// `settings::FragmentSlot`); empty when the embeddings come from no fragment.
    pub fragments: Vec<u8>,
    /// The embeddings (empty while `in_graph` and not yet [`StoredEmbeddings::resolve`]d).
    pub embeddings: Vec<Vec<f32>>,
    /// The floats are kept by the slot's graph, not by the entry.
    pub in_graph: bool,
}

impl StoredEmbeddings {
    /// Fills `embeddings` of an entry kept in the graph from `original` (a graph id's stored
    /// vector); an entry with its own floats stays as it is. A listed graph id without a
    /// vector is damage.
    pub fn resolve(
        &mut self,
        mut original: impl FnMut(u32) -> ShardResult<Option<Vec<f32>>>,
    ) -> ShardResult<()> {
        if !self.in_graph || self.embeddings.len() == self.graph_ids.len() {
            return Ok(());
        }
        self.embeddings = self
            .graph_ids
            .iter()
            .map(|&graph_id| {
                original(graph_id)?
                    .ok_or_else(|| ShardError::corrupted("embedding missing from its graph"))
            })
            .collect::<ShardResult<_>>()?;
        Ok(())
    }
}

/// The key of a document's entry.
pub fn document_key(slot: u16, internal_id: u32) -> [u8; 7] {
    key(slot, DOCUMENT_KIND, internal_id)
}

/// The key of an extra vector's owner.
pub fn extra_key(slot: u16, extra_id: u32) -> [u8; 7] {
    key(slot, EXTRA_KIND, extra_id)
}

/// The key of a slot's next extra id.
pub fn next_extra_key(slot: u16) -> [u8; 3] {
    let [high, low] = slot.to_be_bytes();
    [high, low, NEXT_EXTRA_KIND]
}

/// The first key of a slot and the first key past it.
pub fn slot_range(slot: u16) -> (Vec<u8>, Vec<u8>) {
    let start = slot.to_be_bytes().to_vec();
    let end = match slot.checked_add(1) {
        Some(next) => next.to_be_bytes().to_vec(),
        None => vec![0xFF, 0xFF, 0xFF],
    };
    (start, end)
}

/// The first key of a slot's extra owners and the first key past them.
pub fn extra_range(slot: u16) -> ([u8; 3], [u8; 3]) {
    let [high, low] = slot.to_be_bytes();
    ([high, low, EXTRA_KIND], [high, low, EXTRA_KIND + 1])
}

fn key(slot: u16, kind: u8, id: u32) -> [u8; 7] {
    let mut key = [0_u8; 7];
    key[..2].copy_from_slice(&slot.to_be_bytes());
    key[2] = kind;
    key[3..].copy_from_slice(&id.to_be_bytes());
    key
}

/// The id in a document or extra key.
pub fn id_of_key(key: &[u8]) -> ShardResult<u32> {
    let bytes: [u8; 4] = key
        .get(3..7)
        .and_then(|bytes| bytes.try_into().ok())
        .ok_or_else(|| ShardError::corrupted("embeddings key"))?;
    Ok(u32::from_be_bytes(bytes))
}

/// Encodes a document's entry (without its floats when `stored.in_graph`).
pub fn encode(stored: &StoredEmbeddings) -> Vec<u8> {
    debug_assert_eq!(stored.graph_ids.len(), stored.embeddings.len());
    debug_assert!(!stored.in_graph || !stored.embeddings.iter().any(|vector| vector.is_empty()));
    debug_assert!(stored.fragments.is_empty() || stored.fragments.len() == stored.graph_ids.len());
    let floats: usize = stored.embeddings.iter().map(Vec::len).sum();
    let mut bytes = Vec::with_capacity(5 + 5 * stored.graph_ids.len() + 4 * floats);
    let mut flags = 0;
    if stored.regenerate {
        flags |= REGENERATE_FLAG;
    }
    if stored.generated {
        flags |= GENERATED_FLAG;
    }
    let with_fragments = !stored.fragments.is_empty();
    if with_fragments {
        flags |= FRAGMENTS_FLAG;
    }
    if stored.in_graph {
        flags |= IN_GRAPH_FLAG;
    }
    bytes.push(flags);
    bytes.extend_from_slice(&(stored.graph_ids.len() as u32).to_le_bytes());
    for id in &stored.graph_ids {
        bytes.extend_from_slice(&id.to_le_bytes());
    }
    if with_fragments {
        bytes.extend_from_slice(&stored.fragments);
    }
    if !stored.in_graph {
        for value in stored.embeddings.iter().flatten() {
            bytes.extend_from_slice(&value.to_le_bytes());
        }
    }
    bytes
}

/// Decodes a document's entry of `dimensions`-long embeddings (an entry kept in the graph
/// decodes without them: see [`StoredEmbeddings::resolve`]).
pub fn decode(bytes: &[u8], dimensions: usize) -> ShardResult<StoredEmbeddings> {
    let corrupted = || ShardError::corrupted("stored embeddings");
    let (&flags, rest) = bytes.split_first().ok_or_else(corrupted)?;
    if flags & !KNOWN_FLAGS != 0 {
        return Err(corrupted());
    }
    let count = read_u32(rest, 0).ok_or_else(corrupted)? as usize;
    let fragments_start = 4 + 4 * count;
    let fragment_bytes = if flags & FRAGMENTS_FLAG == 0 {
        0
    } else {
        count
    };
    let floats_start = fragments_start + fragment_bytes;
    let in_graph = flags & IN_GRAPH_FLAG != 0;
    let float_count = if in_graph { 0 } else { count * dimensions };
    if rest.len() != floats_start + 4 * float_count {
        return Err(corrupted());
    }
    let graph_ids = (0..count)
        .map(|index| read_u32(rest, 4 + 4 * index).ok_or_else(corrupted))
        .collect::<ShardResult<Vec<u32>>>()?;
    let floats: Vec<f32> = rest[floats_start..]
        .chunks_exact(4)
        .map(|chunk| f32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]))
        .collect();
    let embeddings = if dimensions == 0 || in_graph {
        Vec::new()
    } else {
        floats.chunks(dimensions).map(<[f32]>::to_vec).collect()
    };
    Ok(StoredEmbeddings {
        regenerate: flags & REGENERATE_FLAG != 0,
        generated: flags & GENERATED_FLAG != 0,
        graph_ids,
        fragments: rest[fragments_start..floats_start].to_vec(),
        embeddings,
        in_graph,
    })
}

/// An `f32` as JSON with its shortest decimal form (`0.1`, not the `f64` widening
/// `0.10000000149011612`), as Meilisearch writes embeddings.
pub fn float_json(value: f32) -> serde_json::Value {
    format!("{value}")
        .parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map_or(serde_json::Value::Null, serde_json::Value::Number)
}

/// Embeddings as JSON arrays of [`float_json`] numbers.
pub fn embeddings_json(embeddings: &[Vec<f32>]) -> serde_json::Value {
    serde_json::Value::Array(
        embeddings
            .iter()
            .map(|embedding| embedding.iter().copied().map(float_json).collect())
            .collect(),
    )
}

/// Every entry of `slot` in a write transaction's `embeddings` tree, in key order.
pub fn slot_entries(
    tree: &storage_engine::WriteTree<'_>,
    slot: u16,
) -> ShardResult<Vec<(Vec<u8>, Vec<u8>)>> {
    let (start, end) = slot_range(slot);
    let mut entries = Vec::new();
    for entry in tree.range(
        std::ops::Bound::Included(start.as_slice()),
        std::ops::Bound::Excluded(end.as_slice()),
        storage_engine::Direction::Forward,
    )? {
        let (key, value) = entry?;
        entries.push((key.to_vec(), value.to_vec()));
    }
    Ok(entries)
}

/// Whether an `embeddings` key is a document's entry (not an extra owner or a counter).
pub fn is_document_key(key: &[u8]) -> bool {
    key.len() == 7 && key[2] == DOCUMENT_KIND
}

/// A `u32` (LE) at `offset`.
pub fn read_u32(bytes: &[u8], offset: usize) -> Option<u32> {
    let slice: [u8; 4] = bytes.get(offset..offset + 4)?.try_into().ok()?;
    Some(u32::from_le_bytes(slice))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_and_keys_sort_by_slot_kind_and_id() {
        let stored = StoredEmbeddings {
            regenerate: true,
            generated: false,
            graph_ids: vec![7, EXTRA_VECTOR_ID_BASE],
            fragments: Vec::new(),
            embeddings: vec![vec![1.0, 2.0], vec![-0.5, 0.25]],
            in_graph: false,
        };
        assert_eq!(decode(&encode(&stored), 2).unwrap(), stored);
        assert!(decode(&encode(&stored), 3).is_err());
        let fragments = StoredEmbeddings {
            regenerate: true,
            generated: true,
            fragments: vec![0, 3],
            ..stored.clone()
        };
        assert_eq!(decode(&encode(&fragments), 2).unwrap(), fragments);
        // An entry of the first format (flags 0 or 1, no fragment ids) reads as given.
        let mut legacy = encode(&stored);
        legacy[0] = 1;
        let read = decode(&legacy, 2).unwrap();
        assert!(read.regenerate && !read.generated && read.fragments.is_empty());
        legacy[0] = 0x80;
        assert!(decode(&legacy, 2).is_err());
        assert!(document_key(1, 9).as_slice() < extra_key(1, 0).as_slice());
        assert!(extra_key(1, u32::MAX).as_slice() < next_extra_key(1).as_slice());
        assert!(next_extra_key(1).as_slice() < document_key(2, 0).as_slice());
        assert_eq!(id_of_key(&document_key(3, 12)).unwrap(), 12);
    }

    #[test]
    fn entries_kept_in_the_graph_leave_their_floats_out_and_resolve_by_graph_id() {
        let vectors = [vec![1.0, 2.0, 3.0], vec![-0.5, 0.25, 0.0]];
        let given = StoredEmbeddings {
            regenerate: false,
            generated: true,
            graph_ids: vec![7, EXTRA_VECTOR_ID_BASE],
            fragments: vec![1, 2],
            embeddings: vectors.to_vec(),
            in_graph: true,
        };
        let bytes = encode(&given);
        let with_floats = encode(&StoredEmbeddings {
            in_graph: false,
            ..given.clone()
        });
        assert_eq!(
            with_floats.len() - bytes.len(),
            2 * 3 * 4,
            "no float is stored"
        );
        let mut read = decode(&bytes, 3).expect("an entry kept in the graph decodes");
        assert!(read.in_graph && read.embeddings.is_empty());
        assert_eq!(
            (read.graph_ids.clone(), read.fragments.clone()),
            (given.graph_ids.clone(), given.fragments.clone())
        );
        let original = |graph_id: u32| {
            Ok(match graph_id {
                7 => Some(vectors[0].clone()),
                EXTRA_VECTOR_ID_BASE => Some(vectors[1].clone()),
                _ => None,
            })
        };
        read.resolve(original)
            .expect("every graph id has its vector");
        assert_eq!(read, given);
        // A listed graph id the graph does not know is damage, not an empty embedding.
        let mut lost = decode(&bytes, 3).expect("an entry kept in the graph decodes");
        lost.graph_ids[1] = 9;
        assert!(lost.resolve(original).is_err());
        // An entry with its own floats ignores the graph.
        let mut own = decode(&with_floats, 3).expect("an entry with floats decodes");
        own.resolve(|_| Ok(None))
            .expect("an entry with floats needs no graph");
        assert_eq!(own.embeddings, vectors.to_vec());
    }
}
