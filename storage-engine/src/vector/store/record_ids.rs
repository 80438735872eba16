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
//! Beside it the cache keeps the inverse, `newest[id]` = the newest record of `0..len` that
//! holds `id`, in a dense array indexed by id, so that an exact filtered search maps its
//! candidate ids to records by index instead of one ids-tree lookup each. It is exact for
//! every snapshot because an insert (new or replacing) always appends a new record and points
//! the id at it: the live record of an id that is live in a snapshot of `c` records is the
//! newest record below `c` holding it. So `newest[id] < c` *is* that record; when
//! `newest[id] >= c` (an older snapshot, the id re-inserted since) the caller asks the tree.
//! Ids far sparser than the records (highest id at or above `ID_SPAN_PER_RECORD_MAX` times the
//! record count plus `ID_SPAN_SLACK_IDS`) get no array: every lookup goes to the tree.
//!
//! Invariants: a stored chunk of `n` ids describes records `chunk * RECORD_IDS_PER_CHUNK ..
//! + n`, each id equal to its record header's; the cache's ids equal the record headers';
//! when present, `newest[id]` is the highest record `r < len` with `ids[r] == id`, or
//! `NO_RECORD` when no record holds `id`.

use super::trees::{TreeRead, TreeWrite};
use crate::vector::error::VectorError;
use crate::vector::records::RecordStore;
use std::sync::{Arc, RwLock};

/// Records described by one chunk of the map (a 1 KiB value).
pub const RECORD_IDS_PER_CHUNK: u32 = 256;
/// `newest` entry of an id that no record holds.
pub const NO_RECORD: u32 = u32::MAX;
/// The id -> record array exists only while the highest id is below this many times the
/// record count (plus `ID_SPAN_SLACK_IDS`): at most this many array slots per record.
pub const ID_SPAN_PER_RECORD_MAX: u64 = 4;
/// Ids always allowed in the id -> record array, whatever the record count (256 KiB).
pub const ID_SPAN_SLACK_IDS: u64 = 65_536;
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

/// The ids of records `0..len` and the newest record of each id (see the module doc).
#[derive(Debug, Default, Clone)]
pub struct RecordIdMaps {
    /// `ids[record]`: the internal id of `record`.
    ids: Vec<u32>,
    /// `newest[id]`: the newest record holding `id` (`NO_RECORD` if none); `None` while the
    /// ids are too sparse for an array.
    newest: Option<Vec<u32>>,
    /// The highest id of `ids`.
    highest_id: Option<u32>,
}

impl RecordIdMaps {
    /// The internal ids of records `0..len`, by record.
    pub fn ids(&self) -> &[u32] {
        &self.ids
    }

    /// Records covered.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether no record is covered.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Whether the id -> record array exists (ids dense enough).
    pub fn has_id_array(&self) -> bool {
        self.newest.is_some()
    }

    /// The record of `internal_id` in a snapshot of `record_count` records in which
    /// `internal_id` is live, when the array can tell: `None` when there is no array, no
    /// covered record holds the id, or its newest record is past the snapshot (then the
    /// ids tree answers).
    #[inline]
    pub fn live_record(&self, internal_id: u32, record_count: u32) -> Option<u32> {
        let newest = self.newest.as_ref()?;
        match newest.get(internal_id as usize) {
            Some(&record) if record != NO_RECORD && record < record_count => Some(record),
            _ => None,
        }
    }

    /// Appends the ids of the next records and updates the inverse.
    fn append(&mut self, new_ids: &[u32]) {
        let first = self.ids.len();
        self.ids.extend_from_slice(new_ids);
        if let Some(&highest) = new_ids.iter().max() {
            self.highest_id = Some(self.highest_id.map_or(highest, |old| old.max(highest)));
        }
        let span_max = (self.ids.len() as u64)
            .saturating_mul(ID_SPAN_PER_RECORD_MAX)
            .saturating_add(ID_SPAN_SLACK_IDS);
        if self
            .highest_id
            .is_some_and(|highest| u64::from(highest) >= span_max)
        {
            self.newest = None;
            return;
        }
        let from = if self.newest.is_some() { first } else { 0 };
        let newest = self.newest.get_or_insert_with(Vec::new);
        let needed = self.highest_id.map_or(0, |highest| highest as usize + 1);
        if newest.len() < needed {
            newest.resize(needed, NO_RECORD);
        }
        for (record, &internal_id) in self.ids.iter().enumerate().skip(from) {
            newest[internal_id as usize] = u32::try_from(record).expect("record numbers are u32");
        }
    }
}

/// The id maps of records `0..len` of one graph, shared by its readers (see the module doc).
#[derive(Debug, Default)]
pub struct RecordIdCache {
    maps: RwLock<Arc<RecordIdMaps>>,
}

impl RecordIdCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The maps of at least records `0..record_count`, read from the committed snapshot's map
    /// `tree` (or the record headers) past what the cache already holds.
    pub fn ids_up_to<R: RecordStore>(
        &self,
        tree: Option<&dyn TreeRead>,
        records: &R,
        record_count: u32,
    ) -> Result<Arc<RecordIdMaps>, VectorError> {
        {
            let maps = self
                .maps
                .read()
                .unwrap_or_else(|poison| poison.into_inner());
            if maps.len() >= record_count as usize {
                return Ok(Arc::clone(&maps));
            }
        }
        let mut shared = self
            .maps
            .write()
            .unwrap_or_else(|poison| poison.into_inner());
        let cached = shared.len() as u32;
        if cached < record_count {
            let mut new_ids = Vec::with_capacity((record_count - cached) as usize);
            read_ids(tree, records, cached, record_count, &mut new_ids)?;
            Arc::make_mut(&mut shared).append(&new_ids);
        }
        Ok(Arc::clone(&shared))
    }

    /// Records whose ids are cached.
    pub fn len(&self) -> usize {
        self.maps
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
            records.push(id, 0, &[1.0, 0.0]);
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
        assert_eq!(prefix.ids(), &ids[..100]);
        let all = cache
            .ids_up_to(read.as_deref(), &records, count)
            .expect("ids_up_to succeeds");
        assert_eq!(all.ids(), &ids[..]);
        assert_eq!(cache.len(), count as usize);
        let stored = read
            .as_deref()
            .expect("the map exists")
            .get(&chunk_key(RECORD_IDS_PER_CHUNK * 2))
            .expect("get succeeds")
            .expect("the last chunk is stored");
        assert_eq!(stored.len(), 17 * ID_BYTES);
    }

    /// A snapshot: its record count and its ids tree (internal id -> record).
    type Snapshot = (u32, std::collections::HashMap<u32, u32>);

    /// Random inserts (new and replacing ids) and deletes, the way `GraphWriter` does them:
    /// every insert appends a record and points the id at it, a delete drops the id.
    /// Returns the records' ids and the snapshot after every operation.
    fn random_history(
        random: &mut crate::vector::random::SplitMix64,
        operations: usize,
        id_range: u64,
    ) -> (Vec<u32>, Vec<Snapshot>) {
        let mut ids = Vec::new();
        let mut tree = std::collections::HashMap::new();
        let mut history = Vec::new();
        for _ in 0..operations {
            let internal_id = (random.next_u64() % id_range) as u32;
            if random.next_u64() % 4 == 0 {
                tree.remove(&internal_id);
            } else {
                tree.insert(internal_id, ids.len() as u32);
                ids.push(internal_id);
            }
            history.push((ids.len() as u32, tree.clone()));
        }
        (ids, history)
    }

    #[test]
    fn the_id_array_agrees_with_the_ids_tree_of_every_snapshot_after_random_inserts_and_deletes() {
        let seed = 29;
        println!("seed {seed}");
        let mut random = crate::vector::random::SplitMix64::new(seed);
        for (id_range, dense) in [(300_u64, true), (5_000, true), (u64::from(u32::MAX), false)] {
            let (ids, history) = random_history(&mut random, 2_000, id_range);
            let records = records(&ids);
            let cache = RecordIdCache::new();
            // The cache grows snapshot by snapshot, as readers of later commits extend it:
            // each snapshot read here is the newest, so every live id must be answered.
            for (record_count, tree) in history.iter().step_by(97) {
                let maps = cache
                    .ids_up_to(None, &records, *record_count)
                    .expect("ids_up_to succeeds");
                assert_eq!(maps.has_id_array(), dense, "id range {id_range}");
                for (&internal_id, &record) in tree {
                    let found = maps.live_record(internal_id, *record_count);
                    if dense {
                        assert_eq!(found, Some(record), "id {internal_id}");
                    } else {
                        assert_eq!(found, None, "no array, the tree answers");
                    }
                }
            }
            // Older snapshots, read once the cache covers every record: whatever the array
            // answers is the snapshot's own record, and re-inserted ids go to the tree.
            let maps = cache
                .ids_up_to(None, &records, ids.len() as u32)
                .expect("ids_up_to succeeds");
            let mut answered = 0;
            for (record_count, tree) in &history {
                for (&internal_id, &record) in tree {
                    if let Some(found) = maps.live_record(internal_id, *record_count) {
                        assert_eq!(found, record, "id {internal_id} at {record_count}");
                        answered += 1;
                    }
                }
            }
            assert_eq!(answered > 0, dense);
        }
    }
}
