//! The documents a `_vectors… EXISTS` filter selects in one snapshot, as Meilisearch 1.41
//! answers it per embedder (every embedder of the shard when the filter names none):
//! - `_vectors.e EXISTS`: documents with at least one vector for `e`;
//! - `.userProvided`: documents whose embeddings for `e` came from the user;
//! - `.documentTemplate`: documents with vectors that were not given by the user (none for
//!   an embedder with fragments);
//! - `.regenerate`: documents with vectors that may be generated again (not
//!   `regenerate: false`);
//! - `.fragments.f`: documents with an embedding computed from the indexing fragment `f`
//!   (embeddings the user gave belong to no fragment).
//!
//! Invariant: the answer is within the snapshot's documents; an unknown embedder or fragment
//! is an error naming the ones that exist; a storage error is returned apart, for the facet
//! source to keep.

use roaring::RoaringBitmap;
use storage_engine::ReadTransaction;

use crate::error::ShardResult;
use crate::filter::{VectorFilter, VectorLookupError};
use crate::vectors::GraphSet;
use crate::vectors::reads::{documents_with_vectors, fragment_documents, provided_documents};
use crate::vectors::settings::{EmbedderSlot, VectorSettings};

/// What a vector filter reads: the snapshot's transaction, graphs and embedder slots.
pub struct VectorReads<'a> {
    pub read: &'a ReadTransaction,
    pub graphs: &'a GraphSet,
    pub settings: &'a VectorSettings,
}

impl VectorReads<'_> {
    /// The documents `filter` selects for `embedder` (every embedder when `None`).
    pub fn documents(
        &self,
        embedder: Option<&str>,
        filter: &VectorFilter,
    ) -> Result<ShardResult<RoaringBitmap>, VectorLookupError> {
        let slots: Vec<&EmbedderSlot> = match embedder {
            Some(name) => match self.settings.slot(name) {
                Some(slot) => vec![slot],
                None => {
                    return Err(VectorLookupError::EmbedderDoesNotExist {
                        available: self.names(),
                    });
                }
            },
            None => self.settings.slots.iter().collect(),
        };
        let mut selected = RoaringBitmap::new();
        for slot in slots {
            if let VectorFilter::Fragment(token) = filter
                && slot.fragment_id(&token.value).is_none()
            {
                return Err(VectorLookupError::FragmentDoesNotExist {
                    available: slot
                        .fragments
                        .iter()
                        .map(|fragment| fragment.name.clone())
                        .collect(),
                });
            }
            match self.slot_documents(slot, filter) {
                Ok(documents) => selected |= documents,
                Err(error) => return Ok(Err(error)),
            }
        }
        Ok(Ok(selected))
    }

    fn names(&self) -> Vec<String> {
        self.settings
            .slots
            .iter()
            .map(|slot| slot.name.clone())
            .collect()
    }

    fn slot_documents(
        &self,
        slot: &EmbedderSlot,
        filter: &VectorFilter,
    ) -> ShardResult<RoaringBitmap> {
        let with_vectors = || documents_with_vectors(self.read, self.graphs, slot);
        Ok(match filter {
            VectorFilter::None => with_vectors()?,
            VectorFilter::UserProvided => provided_documents(self.read, slot)?.user_provided,
            VectorFilter::DocumentTemplate if !slot.fragments.is_empty() => RoaringBitmap::new(),
            VectorFilter::DocumentTemplate => {
                with_vectors()? - provided_documents(self.read, slot)?.user_provided
            }
            VectorFilter::Regenerate => {
                with_vectors()? - provided_documents(self.read, slot)?.skip_regenerate
            }
            VectorFilter::Fragment(token) => match slot.fragment_id(&token.value) {
                Some(fragment) => fragment_documents(self.read, slot, fragment)?,
                None => RoaringBitmap::new(),
            },
        })
    }
}
