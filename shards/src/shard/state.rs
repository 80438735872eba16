//! The shard-wide records of `meta` as one value: id allocation, the set of live ids, the
//! stored document bytes, the facet settings, the applied batch uid and the document
//! dictionaries' bookkeeping.
//!
//! Invariants: `document_ids` and `free_ids` are disjoint and their union is `0..next_id`;
//! allocation takes the smallest free id, else `next_id`. Every document dictionary id is
//! below `next_dictionary_id`, which only grows (also across `DeleteAll`): an id never names
//! two dictionaries.

use roaring::RoaringBitmap;
use storage_engine::{ReadTransaction, WriteTransaction};

use super::settings::FacetSettings;
use crate::analysis::TextSettings;
use crate::error::{ShardError, ShardResult};
use crate::index::keys::{decode_bitmap, decode_u64, encode_bitmap, encode_u64};
use crate::index::trees::{
    META_APPLIED_BATCH, META_DICTIONARY, META_DICTIONARY_TRAINED_AT, META_DOCUMENT_BYTES,
    META_DOCUMENT_IDS, META_FREE_IDS, META_NEXT_DICTIONARY_ID, META_NEXT_ID, META_SETTINGS,
    META_TEXT_SETTINGS, META_TREE, META_VECTOR_SETTINGS,
};
use crate::vectors::VectorSettings;

/// One past the largest internal document id.
pub const DOCUMENT_ID_COUNT_MAX: u64 = 1 << 32;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ShardState {
    pub applied_batch: Option<u64>,
    pub next_id: u64,
    pub free_ids: RoaringBitmap,
    pub document_ids: RoaringBitmap,
    pub document_bytes: u64,
    pub settings: FacetSettings,
    pub text_settings: TextSettings,
    /// The document dictionary new documents are compressed with, if the shard has one.
    pub dictionary: Option<u32>,
    /// The id the next trained dictionary takes.
    pub next_dictionary_id: u32,
    /// Live documents when a dictionary was last trained (or training failed); 0 before.
    pub dictionary_trained_at: u64,
    /// The embedder slots.
    pub vector_settings: VectorSettings,
}

fn decode_u32(bytes: &[u8], what: &str) -> ShardResult<u32> {
    let array: [u8; 4] = bytes.try_into().map_err(|_| ShardError::corrupted(what))?;
    Ok(u32::from_be_bytes(array))
}

/// One `meta` record, if present.
type Record = ShardResult<Option<Vec<u8>>>;

fn read_record(get: &dyn Fn(&[u8]) -> Record) -> ShardResult<ShardState> {
    let mut state = ShardState::default();
    if let Some(bytes) = get(META_APPLIED_BATCH)? {
        state.applied_batch = Some(decode_u64(&bytes, "applied batch")?);
    }
    if let Some(bytes) = get(META_NEXT_ID)? {
        state.next_id = decode_u64(&bytes, "next id")?;
    }
    if let Some(bytes) = get(META_FREE_IDS)? {
        state.free_ids = decode_bitmap(&bytes)?;
    }
    if let Some(bytes) = get(META_DOCUMENT_IDS)? {
        state.document_ids = decode_bitmap(&bytes)?;
    }
    if let Some(bytes) = get(META_DOCUMENT_BYTES)? {
        state.document_bytes = decode_u64(&bytes, "document bytes")?;
    }
    if let Some(bytes) = get(META_SETTINGS)? {
        state.settings = FacetSettings::from_bytes(&bytes)?;
    }
    if let Some(bytes) = get(META_TEXT_SETTINGS)? {
        state.text_settings = TextSettings::from_bytes(&bytes)
            .ok_or_else(|| ShardError::corrupted("text settings"))?;
    }
    if let Some(bytes) = get(META_DICTIONARY)? {
        state.dictionary = Some(decode_u32(&bytes, "document dictionary")?);
    }
    if let Some(bytes) = get(META_NEXT_DICTIONARY_ID)? {
        state.next_dictionary_id = decode_u32(&bytes, "next document dictionary")?;
    }
    if let Some(bytes) = get(META_DICTIONARY_TRAINED_AT)? {
        state.dictionary_trained_at = decode_u64(&bytes, "dictionary trained at")?;
    }
    if let Some(bytes) = get(META_VECTOR_SETTINGS)? {
        state.vector_settings = VectorSettings::from_bytes(&bytes)?;
    }
    Ok(state)
}

impl ShardState {
    pub fn load_read(read: &ReadTransaction) -> ShardResult<ShardState> {
        let Some(tree) = read.open_tree(META_TREE)? else {
            return Ok(ShardState::default());
        };
        read_record(&|key| Ok(tree.get(key)?.map(<[u8]>::to_vec)))
    }

    pub fn load_write(write: &WriteTransaction) -> ShardResult<ShardState> {
        let tree = write.create_tree(META_TREE)?;
        read_record(&|key| Ok(tree.get(key)?.map(|value| value.into_owned())))
    }

    pub fn store(&self, write: &WriteTransaction) -> ShardResult<()> {
        let tree = write.create_tree(META_TREE)?;
        if let Some(batch) = self.applied_batch {
            tree.put(META_APPLIED_BATCH, &encode_u64(batch))?;
        }
        tree.put(META_NEXT_ID, &encode_u64(self.next_id))?;
        tree.put(META_FREE_IDS, &encode_bitmap(&self.free_ids))?;
        tree.put(META_DOCUMENT_IDS, &encode_bitmap(&self.document_ids))?;
        tree.put(META_DOCUMENT_BYTES, &encode_u64(self.document_bytes))?;
        tree.put(META_SETTINGS, &self.settings.to_bytes())?;
        tree.put(META_TEXT_SETTINGS, &self.text_settings.to_bytes())?;
        match self.dictionary {
            Some(id) => tree.put(META_DICTIONARY, &id.to_be_bytes())?,
            None => {
                tree.delete(META_DICTIONARY)?;
            }
        }
        tree.put(
            META_NEXT_DICTIONARY_ID,
            &self.next_dictionary_id.to_be_bytes(),
        )?;
        tree.put(
            META_DICTIONARY_TRAINED_AT,
            &encode_u64(self.dictionary_trained_at),
        )?;
        if self.vector_settings.next_slot > 0 {
            tree.put(META_VECTOR_SETTINGS, &self.vector_settings.to_bytes())?;
        }
        Ok(())
    }

    /// Takes the smallest free id, else the next never-used one.
    pub fn allocate(&mut self) -> ShardResult<u32> {
        let id = match self.free_ids.min() {
            Some(free) => {
                self.free_ids.remove(free);
                free
            }
            None => {
                if self.next_id >= DOCUMENT_ID_COUNT_MAX {
                    return Err(ShardError::DocumentIdsExhausted);
                }
                let id = u32::try_from(self.next_id).expect("checked below the maximum");
                self.next_id += 1;
                id
            }
        };
        self.document_ids.insert(id);
        Ok(id)
    }

    /// Takes `id`, chosen by the caller (an index-wide allocation across shards): it leaves
    /// the free ids, and the ids between `next_id` and it become free. Refuses an id in use.
    pub fn take(&mut self, id: u32) -> ShardResult<u32> {
        if self.document_ids.contains(id) {
            return Err(ShardError::corrupted(format!(
                "assigned internal id {id} is already used"
            )));
        }
        let end = u64::from(id) + 1;
        if end > DOCUMENT_ID_COUNT_MAX {
            return Err(ShardError::DocumentIdsExhausted);
        }
        if end > self.next_id {
            let start = u32::try_from(self.next_id).expect("below an id that fits in u32");
            self.free_ids.insert_range(start..id);
            self.next_id = end;
        } else {
            self.free_ids.remove(id);
        }
        self.document_ids.insert(id);
        Ok(id)
    }

    pub fn release(&mut self, id: u32) {
        self.document_ids.remove(id);
        self.free_ids.insert(id);
    }

    /// Forgets every document (`DeleteAll`), and with them the dictionary (the next one is
    /// trained from the documents that come); dictionary ids keep growing.
    pub fn clear_documents(&mut self) {
        self.next_id = 0;
        self.free_ids.clear();
        self.document_ids.clear();
        self.document_bytes = 0;
        self.dictionary = None;
        self.dictionary_trained_at = 0;
    }
}
