//! A stored document read from a snapshot but not decoded yet: its stored bytes and the one
//! prepared dictionary they need, if any — everything decoding takes, away from the snapshot
//! and from the thread that read it.
//!
//! A sharded search reads, on every shard, the documents of that shard's first
//! `offset + limit` hits, but only `limit` of all of them reach the answer. Decoding (zstd,
//! then JSON) is most of a document's cost, so each shard hands its documents over as read and
//! the caller decodes the ones it keeps.
//!
//! Invariant: `decoder` is the dictionary `bytes` name (see [`document_codec::dictionary_of`]), so
//! [`StoredDocument::decode`] answers what decoding `bytes` against the snapshot would.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::error::ShardResult;
use crate::index::document_codec::{self, Dictionaries, DictionaryDecoder, unknown_dictionary};

/// A document's stored bytes with the dictionary they were compressed with.
#[derive(Clone)]
pub struct StoredDocument {
    bytes: Vec<u8>,
    decoder: Option<(u32, Arc<DictionaryDecoder>)>,
}

impl std::fmt::Debug for StoredDocument {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("StoredDocument")
            .field("bytes", &self.bytes.len())
            .field("dictionary", &self.decoder.as_ref().map(|(id, _)| id))
            .finish()
    }
}

impl StoredDocument {
    /// `bytes` as stored, with its dictionary taken from `dictionaries`.
    pub(crate) fn new(
        bytes: Vec<u8>,
        dictionaries: &dyn Dictionaries,
    ) -> ShardResult<StoredDocument> {
        let decoder = match document_codec::dictionary_of(&bytes) {
            Some(id) => Some((id, dictionaries.decoder(id)?)),
            None => None,
        };
        Ok(StoredDocument { bytes, decoder })
    }

    /// The document.
    pub fn decode(&self) -> ShardResult<Map<String, Value>> {
        document_codec::decode(&self.bytes, self)
    }
}

impl Dictionaries for StoredDocument {
    fn decoder(&self, id: u32) -> ShardResult<Arc<DictionaryDecoder>> {
        match &self.decoder {
            Some((known, decoder)) if *known == id => Ok(Arc::clone(decoder)),
            _ => Err(unknown_dictionary(id)),
        }
    }
}
