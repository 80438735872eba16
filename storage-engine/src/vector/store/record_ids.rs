//! The dense record -> internal id map of a graph, so that a filtered search checks a
//! neighbour's id with one array read instead of a cache miss on its record header.
//!
//! Persisted in tree `vector.N.records`: key = chunk number (`u32` BE), value = the internal
//! ids (`u32` LE) of records `chunk * RECORD_IDS_PER_CHUNK ..`, in record order; the last chunk
//! holds only the records that exist. The writer appends an id in the same transaction that
//! raises the record count, so the map is exactly as crash-safe as the rest of the graph's
//! trees. Graphs written before the map existed have no chunks (or a chunk that does not start
//! at its first record); their ids are read from the record headers instead.
//!
//! In memory, one `RecordIdCache` per open `Graph` holds the ids of records `0..len`, shared by
//! every reader. It is only ever extended from committed snapshots, and a committed record is
//! never rewritten (vector files are append-only), so a prefix read once stays true for every
//! later snapshot: readers of any snapshot use the ids below their own record count.
//!
//! Invariants: a stored chunk of `n` ids describes records `chunk * RECORD_IDS_PER_CHUNK ..
//! + n`, each id equal to its record header's; the cache's ids equal the record headers'.

use super::trees::{TreeRead, TreeWrite};
use crate::vector::error::VectorError;
use crate::vector::records::RecordStore;
use std::sync::{Arc, RwLock};

/// Records described by one chunk of the map (a 1 KiB value).
pub const RECORD_IDS_PER_CHUNK: u32 = 256;
/// Bytes of one stored internal id.
const ID_BYTES: usize = size_of::<u32>();

fn chunk_key(record: u32) -> [u8; 4] {
    (record / RECORD_IDS_PER_CHUNK).to_be_bytes()
}

/// Records that record `record` (appended as the newest record) holds `internal_id`.
/// A chunk that does not end right before `record` (a graph older than the map) is left
/// alone: those records' ids stay in their headers only.
pub fn append_record_id(
    tree: &dyn TreeWrite,
    record: u32,
    internal_id: u32,
) -> Result<(), VectorError> {
    let key = chunk_key(record);
    let position = (record % RECORD_IDS_PER_CHUNK) as usize;
    let mut value = match tree.get(&key)? {
        Some(bytes) => bytes.into_owned(),
        None => Vec::new(),
    };
    if value.len() != position * ID_BYTES {
        return Ok(());
    }
    value.extend_from_slice(&internal_id.to_le_bytes());
    tree.put(&key, &value)
}

/// Appends the ids of records `from..to` to `ids`: from the map where it has them, else from
/// the record headers.
fn read_ids<R: RecordStore>(
    tree: Option<&dyn TreeRead>,
    records: &R,
    from: u32,
    to: u32,
    ids: &mut Vec<u32>,
) -> Result<(), VectorError> {
    let mut record = from;
    while record < to {
        let chunk_end = (record / RECORD_IDS_PER_CHUNK + 1)
            .saturating_mul(RECORD_IDS_PER_CHUNK)
            .min(to);
        let chunk = match tree {
            Some(tree) => tree.get(&chunk_key(record))?,
            None => None,
        };
        let first = (record % RECORD_IDS_PER_CHUNK) as usize;
        let wanted = (chunk_end - record) as usize;
        match chunk
            .as_deref()
            .and_then(|bytes| bytes.get(first * ID_BYTES..(first + wanted) * ID_BYTES))
        {
            Some(stored) => ids.extend(stored.chunks_exact(ID_BYTES).map(|bytes| {
                u32::from_le_bytes(bytes.try_into().expect("chunks_exact yields four bytes"))
            })),
            None => ids.extend((record..chunk_end).map(|record| records.internal_id(record))),
        }
        record = chunk_end;
    }
    Ok(())
}

/// The ids of records `0..len` of one graph, shared by its readers (see the module doc).
#[derive(Debug, Default)]
pub struct RecordIdCache {
    ids: RwLock<Arc<Vec<u32>>>,
}

impl RecordIdCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The ids of at least records `0..record_count`, read from the committed snapshot's map
    /// `tree` (or the record headers) past what the cache already holds.
    pub fn ids_up_to<R: RecordStore>(
        &self,
        tree: Option<&dyn TreeRead>,
        records: &R,
        record_count: u32,
    ) -> Result<Arc<Vec<u32>>, VectorError> {
        {
            let ids = self.ids.read().unwrap_or_else(|poison| poison.into_inner());
            if ids.len() >= record_count as usize {
                return Ok(Arc::clone(&ids));
            }
        }
        let mut shared = self
            .ids
            .write()
            .unwrap_or_else(|poison| poison.into_inner());
        let cached = shared.len() as u32;
        if cached < record_count {
            let mut grown = Vec::with_capacity(record_count as usize);
            grown.extend_from_slice(&shared);
            read_ids(tree, records, cached, record_count, &mut grown)?;
            *shared = Arc::new(grown);
        }
        Ok(Arc::clone(&shared))
    }

    /// Records whose ids are cached.
    pub fn len(&self) -> usize {
        self.ids
            .read()
            .unwrap_or_else(|poison| poison.into_inner())
            .len()
    }

    /// Whether no id is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vector::records::{MemoryRecords, PayloadKind, RecordLayout};
    use crate::vector::store::trees::{MemoryTrees, ReadTrees, WriteTrees};

    fn records(ids: &[u32]) -> MemoryRecords {
        let mut records = MemoryRecords::new(RecordLayout {
            kind: PayloadKind::Floats,
            dimensions: 2,
        });
        for &id in ids {
            records.push(id, &[1.0, 0.0]);
        }
        records
    }

    #[test]
    fn the_map_and_the_headers_give_the_same_ids_across_chunks_and_legacy_gaps() {
        let seed = 11;
        println!("seed {seed}");
        let count = RECORD_IDS_PER_CHUNK * 2 + 17;
        let ids: Vec<u32> = (0..count).map(|record| record * 7 + 3).collect();
        let records = records(&ids);
        let trees = MemoryTrees::new();
        let tree = trees.open_write("map").expect("open_write succeeds");
        // Records of the first chunk predate the map: nothing stored for them.
        for record in RECORD_IDS_PER_CHUNK + 5..count {
            append_record_id(&*tree, record, ids[record as usize]).expect("append succeeds");
        }
        let read = trees.open_read("map").expect("open_read succeeds");
        let cache = RecordIdCache::new();
        let prefix = cache
            .ids_up_to(read.as_deref(), &records, 100)
            .expect("ids_up_to succeeds");
        assert_eq!(prefix[..], ids[..100]);
        let all = cache
            .ids_up_to(read.as_deref(), &records, count)
            .expect("ids_up_to succeeds");
        assert_eq!(all[..], ids[..]);
        assert_eq!(cache.len(), count as usize);
        let stored = read
            .as_deref()
            .expect("the map exists")
            .get(&chunk_key(RECORD_IDS_PER_CHUNK * 2))
            .expect("get succeeds")
            .expect("the last chunk is stored");
        assert_eq!(stored.len(), 17 * ID_BYTES);
    }
}
