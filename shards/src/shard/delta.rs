//! The bits a chunk adds to and removes from one facet value's posting bitmap.
//!
//! Invariant: `added` and `removed` are disjoint, and the last change of a document wins, so
//! applying the delta to the stored bitmap gives what applying the changes one by one gives.

use roaring::RoaringBitmap;
use storage_engine::MergeWriter;

use crate::error::ShardResult;
use crate::index::keys::decode_bitmap;

/// Bits added and removed for one key during a chunk.
#[derive(Debug, Default)]
pub(super) struct Delta {
    pub added: RoaringBitmap,
    pub removed: RoaringBitmap,
    /// For string facet keys: the original spelling, used when the key is new.
    pub original: Option<String>,
}

impl Delta {
    pub fn add(&mut self, document: u32) {
        self.removed.remove(document);
        self.added.insert(document);
    }

    pub fn remove(&mut self, document: u32) {
        self.added.remove(document);
        self.removed.insert(document);
    }

    pub fn applied_to(&self, mut bitmap: RoaringBitmap) -> RoaringBitmap {
        bitmap -= &self.removed;
        bitmap |= &self.added;
        bitmap
    }

    /// Applies the delta to the bitmap stored under `key` (absent is empty) through `merge`,
    /// whose keys ascend: an emptied bitmap deletes the key. `buffer` is reused for the
    /// encoding: the roaring serialization, even of one id (unlike
    /// [`crate::index::keys::encode_bitmap`]; [`decode_bitmap`] reads both forms).
    pub fn merge_into(
        &self,
        merge: &mut MergeWriter<'_>,
        key: &[u8],
        buffer: &mut Vec<u8>,
    ) -> ShardResult<()> {
        let updated = match merge.seek(key)? {
            Some(bytes) => self.applied_to(decode_bitmap(bytes)?),
            None => self.applied_to(RoaringBitmap::new()),
        };
        if updated.is_empty() {
            merge.delete()?;
            return Ok(());
        }
        buffer.clear();
        updated
            .serialize_into(&mut *buffer)
            .expect("writing into a Vec cannot fail");
        merge.put(buffer)?;
        Ok(())
    }
}
