//! Which embedders a shard keeps vectors for: one slot per embedder, each with its own graph.
//!
//! A slot number names the embedder's graph (`graph_name`) and prefixes its entries in the
//! `embeddings` tree (see `stored`), so an embedder that is dropped and added again under the
//! same name starts a fresh graph instead of reading the old one's vectors.
//!
//! An embedder with indexing fragments (a multimodal `rest` embedder) numbers them: each
//! fragment name gets the smallest id its slot does not use, and keeps it until the fragment
//! is removed; every generated embedding records the id of the fragment it came from (see
//! `stored`), so a removed fragment's embeddings can be dropped and a filter can select by
//! fragment.
//!
//! Invariants: slot numbers are unique and below `next_slot`, which only grows; names are
//! unique; `dimensions` is between 1 and the vector store's `DIMENSIONS_MAX`; a slot's
//! fragment names and fragment ids are each unique.

use serde::{Deserialize, Serialize};
use storage_engine::vector::parameters::DIMENSIONS_MAX;
use storage_engine::vector::{GraphParameters, Metric};

use crate::error::{ShardError, ShardResult};

/// One embedder's vectors in a shard.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EmbedderSlot {
    /// The embedder's name in the index settings.
    pub name: String,
    /// The slot number (graph and tree prefix).
    pub slot: u16,
    /// Length of every vector.
    pub dimensions: usize,
    /// Whether the graph navigates 1-bit codes (full vectors are kept for re-scoring).
    pub binary_quantized: bool,
    /// Whether a new document must give this embedder's vectors (`userProvided`: nothing else
    /// can compute them).
    #[serde(default)]
    pub requires_vectors: bool,
    /// The indexing fragments and their ids (none: the embedder renders a document
    /// template, or takes user-provided vectors only).
    #[serde(default)]
    pub fragments: Vec<FragmentSlot>,
}

/// One indexing fragment of an embedder slot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FragmentSlot {
    pub name: String,
    pub id: u8,
}

/// How many fragments one embedder may have (ids are one byte).
pub const FRAGMENTS_MAX: usize = 256;

impl EmbedderSlot {
    /// The id of fragment `name`.
    pub fn fragment_id(&self, name: &str) -> Option<u8> {
        self.fragments
            .iter()
            .find(|fragment| fragment.name == name)
            .map(|fragment| fragment.id)
    }

    /// The name of fragment `id`.
    pub fn fragment_name(&self, id: u8) -> Option<&str> {
        self.fragments
            .iter()
            .find(|fragment| fragment.id == id)
            .map(|fragment| fragment.name.as_str())
    }

    /// Makes the fragments `names`: removed ones lose their ids (returned), new ones take the
    /// smallest free ids, in `names`' order.
    fn reconcile_fragments(&mut self, names: &[String]) -> ShardResult<Vec<u8>> {
        let mut removed = Vec::new();
        self.fragments.retain(|fragment| {
            let kept = names.contains(&fragment.name);
            if !kept {
                removed.push(fragment.id);
            }
            kept
        });
        for name in names {
            if self.fragment_id(name).is_some() {
                continue;
            }
            let free = (0..=u8::MAX).find(|id| self.fragment_name(*id).is_none());
            let Some(id) = free else {
                return Err(ShardError::InvalidSetting(format!(
                    "an embedder has at most {FRAGMENTS_MAX} indexing fragments"
                )));
            };
            self.fragments.push(FragmentSlot {
                name: name.clone(),
                id,
            });
        }
        Ok(removed)
    }

    /// The name of this slot's graph in the vector store.
    pub fn graph_name(&self) -> String {
        format!("embedder{}", self.slot)
    }

    /// The graph parameters of this slot: cosine, as Meilisearch compares embeddings.
    pub fn graph_parameters(&self) -> GraphParameters {
        let mut parameters = GraphParameters::new(Metric::Cosine, self.dimensions);
        parameters.binary_quantized = self.binary_quantized;
        parameters
    }
}

/// What an embedder needs from the shard: its name, dimensions and quantization.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbedderSpec {
    pub name: String,
    pub dimensions: usize,
    pub binary_quantized: bool,
    /// See [`EmbedderSlot::requires_vectors`].
    pub requires_vectors: bool,
    /// The names of the embedder's indexing fragments, sorted (none: no fragments).
    pub fragments: Vec<String>,
}

/// Every embedder slot of a shard.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VectorSettings {
    pub slots: Vec<EmbedderSlot>,
    pub next_slot: u16,
}

/// What changing the embedders does to the slots.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct SlotChanges {
    /// Slots whose graph and vectors are dropped (embedder removed, or its dimensions or
    /// quantization changed).
    pub dropped: Vec<EmbedderSlot>,
    /// Old slots whose embeddings move to the new slot of the same embedder (only the
    /// quantization changed: the embeddings still fit).
    pub moved: Vec<(EmbedderSlot, u16)>,
    /// Kept slots whose removed fragments' embeddings are dropped: the slot and the ids.
    pub removed_fragments: Vec<(u16, Vec<u8>)>,
    /// Whether anything changed.
    pub changed: bool,
}

impl VectorSettings {
    /// The slot of embedder `name`.
    pub fn slot(&self, name: &str) -> Option<&EmbedderSlot> {
        self.slots.iter().find(|slot| slot.name == name)
    }

    /// Whether the shard keeps any vectors.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Makes the slots match `specs`: an embedder whose dimensions or quantization changed
    /// gets a fresh slot (its vectors no longer fit the old graph), a removed one loses its
    /// slot, a new one gets one.
    pub fn reconcile(&mut self, specs: &[EmbedderSpec]) -> ShardResult<SlotChanges> {
        let mut changes = SlotChanges::default();
        let mut kept = Vec::with_capacity(specs.len());
        for mut slot in std::mem::take(&mut self.slots) {
            let spec = specs.iter().find(|spec| {
                spec.name == slot.name
                    && spec.dimensions == slot.dimensions
                    && spec.binary_quantized == slot.binary_quantized
            });
            let Some(spec) = spec else {
                changes.dropped.push(slot);
                changes.changed = true;
                continue;
            };
            if slot.requires_vectors != spec.requires_vectors {
                slot.requires_vectors = spec.requires_vectors;
                changes.changed = true;
            }
            let before = slot.fragments.clone();
            let removed = slot.reconcile_fragments(&spec.fragments)?;
            changes.changed |= slot.fragments != before;
            if !removed.is_empty() {
                changes.removed_fragments.push((slot.slot, removed));
            }
            kept.push(slot);
        }
        for spec in specs {
            if kept.iter().any(|slot| slot.name == spec.name) {
                continue;
            }
            check_dimensions(spec.dimensions)?;
            // A slot replacing one of the same embedder keeps its fragment ids: moved
            // embeddings name them.
            let inherited = changes
                .dropped
                .iter()
                .find(|old| old.name == spec.name)
                .map(|old| old.fragments.clone())
                .unwrap_or_default();
            let mut slot = EmbedderSlot {
                name: spec.name.clone(),
                slot: self.next_slot,
                dimensions: spec.dimensions,
                binary_quantized: spec.binary_quantized,
                requires_vectors: spec.requires_vectors,
                fragments: inherited,
            };
            slot.reconcile_fragments(&spec.fragments)?;
            kept.push(slot);
            self.next_slot = self
                .next_slot
                .checked_add(1)
                .ok_or_else(|| ShardError::InvalidSetting("too many embedder changes".into()))?;
            changes.changed = true;
        }
        for old in &changes.dropped {
            let successor = kept.iter().find(|slot| {
                slot.name == old.name
                    && slot.dimensions == old.dimensions
                    && slot.binary_quantized != old.binary_quantized
            });
            if let Some(successor) = successor {
                changes.moved.push((old.clone(), successor.slot));
            }
        }
        self.slots = kept;
        Ok(changes)
    }

    /// Persisted form (JSON).
    pub fn to_bytes(&self) -> Vec<u8> {
        // Strings and numbers only: serializing cannot fail.
        serde_json::to_vec(self).expect("vector settings always serialize")
    }

    /// Reads the persisted form.
    pub fn from_bytes(bytes: &[u8]) -> ShardResult<VectorSettings> {
        serde_json::from_slice(bytes).map_err(|_| ShardError::corrupted("vector settings"))
    }
}

fn check_dimensions(dimensions: usize) -> ShardResult<()> {
    if dimensions == 0 || dimensions > DIMENSIONS_MAX {
        return Err(ShardError::InvalidSetting(format!(
            "an embedder's dimensions must be between 1 and {DIMENSIONS_MAX}"
        )));
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn spec(name: &str, dimensions: usize) -> EmbedderSpec {
        EmbedderSpec {
            name: name.into(),
            dimensions,
            binary_quantized: false,
            requires_vectors: true,
            fragments: Vec::new(),
        }
    }

    #[test]
    fn a_changed_embedder_gets_a_fresh_slot_and_the_old_one_is_dropped() {
        let mut settings = VectorSettings::default();
        settings.reconcile(&[spec("a", 3), spec("b", 4)]).unwrap();
        assert_eq!(settings.slot("a").unwrap().slot, 0);
        let changes = settings.reconcile(&[spec("a", 3), spec("b", 5)]).unwrap();
        assert_eq!(changes.dropped.len(), 1);
        assert_eq!(changes.dropped[0].slot, 1);
        assert_eq!(settings.slot("b").unwrap().slot, 2);
        let unchanged = settings.reconcile(&[spec("a", 3), spec("b", 5)]).unwrap();
        assert!(!unchanged.changed);
        let mut quantized = spec("a", 3);
        quantized.binary_quantized = true;
        let moved = settings.reconcile(&[quantized, spec("b", 5)]).unwrap();
        assert_eq!(moved.moved.len(), 1);
        assert_eq!(moved.moved[0].0.slot, 0);
        assert_eq!(moved.moved[0].1, settings.slot("a").unwrap().slot);
        let bytes = settings.to_bytes();
        assert_eq!(VectorSettings::from_bytes(&bytes).unwrap(), settings);
    }

    #[test]
    fn fragments_keep_their_ids_and_removed_ids_are_reused() {
        let mut settings = VectorSettings::default();
        let mut fragmented = spec("f", 2);
        fragmented.fragments = vec!["image".into(), "text".into()];
        settings
            .reconcile(std::slice::from_ref(&fragmented))
            .unwrap();
        let slot = settings.slot("f").unwrap().clone();
        assert_eq!(
            (slot.fragment_id("image"), slot.fragment_id("text")),
            (Some(0), Some(1))
        );
        fragmented.fragments = vec!["audio".into(), "text".into()];
        let changes = settings
            .reconcile(std::slice::from_ref(&fragmented))
            .unwrap();
        assert!(changes.changed);
        assert_eq!(changes.removed_fragments, vec![(slot.slot, vec![0])]);
        let slot = settings.slot("f").unwrap();
        assert_eq!(
            (slot.fragment_id("audio"), slot.fragment_id("text")),
            (Some(0), Some(1))
        );
        let unchanged = settings
            .reconcile(std::slice::from_ref(&fragmented))
            .unwrap();
        assert!(!unchanged.changed);
        // A quantization change moves the embeddings: the new slot keeps the ids.
        fragmented.binary_quantized = true;
        let moved = settings
            .reconcile(std::slice::from_ref(&fragmented))
            .unwrap();
        assert_eq!(moved.moved.len(), 1);
        assert_eq!(settings.slot("f").unwrap().fragment_id("text"), Some(1));
    }
}
