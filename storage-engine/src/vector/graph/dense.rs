//! A compact in-memory adjacency indexed by record number, used by the writer of a persisted
//! graph for the whole life of its write transaction (every merge and delete works on it, and
//! only the nodes they changed are encoded into the page store, once per operation).
//!
//! Layout: one level byte per record (`LEVEL_ABSENT` for records that are not nodes), the
//! layer-0 lists in one flat array of fixed stride (`1 + bottom_cap` words per record: the
//! count, then the links; allocated on huge pages, see `huge_pages`), and the lists of layers
//! `1..=level` of the few nodes that live above layer 0 in a map from record to one slice per
//! node (`1 + upper_cap` words per layer, the same count-then-links slots), hashed by one
//! multiplication. Looking up a neighbour list is an index computation (or one probe), not a
//! tree search; an upper list is one hash-table entry and one slice away, which matters to the
//! greedy descent, whose every step waits for the next list.
//!
//! Invariants:
//! - `levels[record] != LEVEL_ABSENT` exactly for the nodes of the graph, and `upper` holds
//!   exactly `level` slots of `1 + upper_cap` words for every node of level `>= 1`;
//! - a list of layer `l` never holds more than its cap (`bottom_cap` on layer 0, `upper_cap`
//!   above), and every stored count is within the stride;
//! - `changed` holds every record whose level or lists differ from what was last handed to
//!   `take_changed` (or loaded).

use super::{EntryPoint, Links, LinksMut};
use crate::vector::error::VectorError;
use crate::vector::huge_pages;
use roaring::RoaringBitmap;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Hashes a record number by one multiplication with an odd constant (2^64 / golden ratio),
/// rotated so that the product's well-mixed high bits land in the low bits, from which the
/// hash table picks a bucket (its control bytes read the top seven). Record numbers are not
/// attacker-chosen keys (the store assigns them in order), so a keyed hash buys nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct RecordHasher {
    hash: u64,
}

/// The multiplier of `RecordHasher`.
const RECORD_HASH_MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15;
/// How far `RecordHasher` rotates the product left (its bits 38..64 become the low bits).
const RECORD_HASH_ROTATION: u32 = 26;

impl Hasher for RecordHasher {
    fn finish(&self) -> u64 {
        self.hash.rotate_left(RECORD_HASH_ROTATION)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.hash =
                (self.hash.rotate_left(8) ^ u64::from(byte)).wrapping_mul(RECORD_HASH_MULTIPLIER);
        }
    }

    fn write_u32(&mut self, value: u32) {
        self.hash = (self.hash ^ u64::from(value)).wrapping_mul(RECORD_HASH_MULTIPLIER);
    }
}

/// The links of a count-then-links slot (a count past `cap` is read as `cap`).
#[inline]
fn slot_links(slot: &[u32], cap: usize) -> &[u32] {
    let count = (slot[0] as usize).min(cap);
    &slot[1..1 + count]
}

/// Level byte of a record that is not a node.
pub const LEVEL_ABSENT: u8 = u8::MAX;
/// List words per cache line (a layer-0 slot is prefetched line by line).
const PREFETCH_LINE_WORDS: usize = 64 / size_of::<u32>();

/// A graph's nodes and links in memory, indexed by record number.
#[derive(Debug)]
pub struct DenseLinks {
    levels: Vec<u8>,
    bottom: Vec<u32>,
    bottom_cap: usize,
    upper_cap: usize,
    upper: HashMap<u32, Box<[u32]>, BuildHasherDefault<RecordHasher>>,
    entry_point: Option<EntryPoint>,
    node_count: usize,
    changed: RoaringBitmap,
}

impl Clone for DenseLinks {
    /// A copy whose layer-0 lists are on huge pages too (a plain `Vec` clone would not be).
    fn clone(&self) -> Self {
        Self {
            levels: self.levels.clone(),
            bottom: huge_pages::copy(&self.bottom),
            bottom_cap: self.bottom_cap,
            upper_cap: self.upper_cap,
            upper: self.upper.clone(),
            entry_point: self.entry_point,
            node_count: self.node_count,
            changed: self.changed.clone(),
        }
    }
}

impl DenseLinks {
    /// An empty graph whose lists hold at most `bottom_cap` links on layer 0 and `upper_cap`
    /// above.
    pub fn new(bottom_cap: usize, upper_cap: usize) -> Self {
        Self {
            levels: Vec::new(),
            bottom: Vec::new(),
            bottom_cap,
            upper_cap,
            upper: HashMap::default(),
            entry_point: None,
            node_count: 0,
            changed: RoaringBitmap::new(),
        }
    }

    /// Nodes in the graph.
    pub fn len(&self) -> usize {
        self.node_count
    }

    /// Whether the graph has no node.
    pub fn is_empty(&self) -> bool {
        self.node_count == 0
    }

    fn stride(&self) -> usize {
        self.bottom_cap + 1
    }

    /// Makes room for records `0..=record`.
    fn reserve_record(&mut self, record: u32) {
        let count = record as usize + 1;
        if self.levels.len() < count {
            self.levels.resize(count, LEVEL_ABSENT);
            let stride = self.stride();
            huge_pages::resize(&mut self.bottom, count * stride, 0);
        }
    }

    /// The level of node `record`, if it is one.
    #[inline]
    pub fn node_level(&self, record: u32) -> Option<u8> {
        match self.levels.get(record as usize) {
            Some(&level) if level != LEVEL_ABSENT => Some(level),
            _ => None,
        }
    }

    /// The layer-0 slot of `record` (count, then links), if it has room in the array.
    #[inline]
    fn bottom_slot(&self, record: u32) -> Option<&[u32]> {
        let stride = self.stride();
        let start = record as usize * stride;
        self.bottom.get(start..start + stride)
    }

    /// Where the slot of `layer` (at least 1) lies in a node's upper-layer slice.
    #[inline]
    fn upper_slot_range(&self, layer: u8) -> std::ops::Range<usize> {
        let stride = self.upper_cap + 1;
        let start = (usize::from(layer) - 1) * stride;
        start..start + stride
    }

    /// The layer-0 list of `record` (empty when it is not a node), borrowed.
    #[inline]
    pub fn bottom_list(&self, record: u32) -> &[u32] {
        self.bottom_slot(record)
            .map_or(&[], |slot| slot_links(slot, self.bottom_cap))
    }

    /// The list of `record` on `layer`, borrowed (empty when absent).
    #[inline]
    pub fn list(&self, record: u32, layer: u8) -> &[u32] {
        if layer == 0 {
            return self.bottom_list(record);
        }
        self.upper
            .get(&record)
            .and_then(|layers| layers.get(self.upper_slot_range(layer)))
            .map_or(&[], |slot| slot_links(slot, self.upper_cap))
    }

    /// Adds node `record` of `level` with the given lists (`layers[l]` for layer `l`), as read
    /// from storage: marks nothing changed. A list over its cap is `Corrupted`.
    pub fn load_node(&mut self, record: u32, layers: Vec<Vec<u32>>) -> Result<(), VectorError> {
        let level = u8::try_from(layers.len().saturating_sub(1))
            .map_err(|_| VectorError::Corrupted(format!("node {record} has too many layers")))?;
        if layers.is_empty() || level == LEVEL_ABSENT {
            return Err(VectorError::Corrupted(format!(
                "node {record} has no layer"
            )));
        }
        self.insert_node(record, level)?;
        let mut layers = layers.into_iter();
        if let Some(bottom) = layers.next() {
            self.set_neighbours(record, 0, &bottom)?;
        }
        for (index, list) in layers.enumerate() {
            let layer = u8::try_from(index + 1).expect("levels fit a byte (checked above)");
            self.set_neighbours(record, layer, &list)?;
        }
        self.changed.remove(record);
        Ok(())
    }

    /// The records changed since the last call, in increasing order; clears the set.
    pub fn take_changed(&mut self) -> RoaringBitmap {
        std::mem::take(&mut self.changed)
    }

    /// Records `0..record_bound()` may be nodes (one past the highest record ever held).
    pub fn record_bound(&self) -> u32 {
        u32::try_from(self.levels.len()).expect("record numbers are u32")
    }
}

impl Links for DenseLinks {
    fn entry_point(&self) -> Option<EntryPoint> {
        self.entry_point
    }

    fn level(&self, record: u32) -> Result<Option<u8>, VectorError> {
        Ok(self.node_level(record))
    }

    #[inline]
    fn neighbours(&self, record: u32, layer: u8, out: &mut Vec<u32>) -> Result<(), VectorError> {
        out.clear();
        out.extend_from_slice(self.list(record, layer));
        Ok(())
    }

    #[inline]
    fn borrowed_neighbours(&self, record: u32, layer: u8) -> Option<&[u32]> {
        Some(self.list(record, layer))
    }

    #[inline]
    fn prefetch_neighbours(&self, record: u32, layer: u8) {
        #[cfg(target_arch = "x86_64")]
        if layer == 0 {
            use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
            if let Some(slot) = self.bottom_slot(record) {
                for line in slot.chunks(PREFETCH_LINE_WORDS) {
                    // SAFETY: SSE is part of the x86_64 baseline; a prefetch is only a hint,
                    // never faults, and the address lies inside the slot.
                    unsafe { _mm_prefetch::<_MM_HINT_T0>(line.as_ptr().cast::<i8>()) };
                }
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (record, layer);
    }

    fn nodes(&self) -> Result<Vec<(u32, u8)>, VectorError> {
        Ok(self
            .levels
            .iter()
            .enumerate()
            .filter(|(_, level)| **level != LEVEL_ABSENT)
            .map(|(record, level)| (record as u32, *level))
            .collect())
    }
}

impl LinksMut for DenseLinks {
    fn insert_node(&mut self, record: u32, level: u8) -> Result<(), VectorError> {
        if level == LEVEL_ABSENT {
            return Err(VectorError::Corrupted(format!(
                "node {record} level {level} too high"
            )));
        }
        self.reserve_record(record);
        let index = record as usize;
        if self.levels[index] == LEVEL_ABSENT {
            self.node_count += 1;
        }
        self.levels[index] = level;
        let stride = self.stride();
        self.bottom[index * stride] = 0;
        if level > 0 {
            let words = self.upper_slot_range(level).end;
            self.upper.insert(record, vec![0; words].into_boxed_slice());
        } else {
            self.upper.remove(&record);
        }
        self.changed.insert(record);
        Ok(())
    }

    fn set_neighbours(&mut self, record: u32, layer: u8, links: &[u32]) -> Result<(), VectorError> {
        let level = self
            .node_level(record)
            .ok_or_else(|| VectorError::Corrupted(format!("no node {record}")))?;
        if layer > level {
            return Err(VectorError::Corrupted(format!(
                "node {record} has no layer {layer}"
            )));
        }
        let cap = if layer == 0 {
            self.bottom_cap
        } else {
            self.upper_cap
        };
        if links.len() > cap {
            return Err(VectorError::Corrupted(format!(
                "node {record} layer {layer}: {} links over the cap {cap}",
                links.len()
            )));
        }
        let slot = if layer == 0 {
            let stride = self.stride();
            let start = record as usize * stride;
            &mut self.bottom[start..start + stride]
        } else {
            let range = self.upper_slot_range(layer);
            self.upper
                .get_mut(&record)
                .and_then(|layers| layers.get_mut(range))
                .ok_or_else(|| {
                    VectorError::Corrupted(format!("node {record} has no layer {layer}"))
                })?
        };
        slot[0] = links.len() as u32;
        slot[1..1 + links.len()].copy_from_slice(links);
        self.changed.insert(record);
        Ok(())
    }

    fn remove_node(&mut self, record: u32) -> Result<(), VectorError> {
        if self.node_level(record).is_none() {
            return Ok(());
        }
        let index = record as usize;
        self.levels[index] = LEVEL_ABSENT;
        let stride = self.stride();
        self.bottom[index * stride] = 0;
        self.upper.remove(&record);
        self.node_count -= 1;
        self.changed.insert(record);
        Ok(())
    }

    fn set_entry_point(&mut self, entry_point: Option<EntryPoint>) -> Result<(), VectorError> {
        self.entry_point = entry_point;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vector::graph::memory::MemoryLinks;
    use crate::vector::random::SplitMix64;

    /// Applies the same random operations to a `DenseLinks` and to the reference
    /// `MemoryLinks`; both must read back the same graph.
    #[test]
    fn dense_links_read_back_what_the_reference_storage_reads_back() {
        let seed = 7;
        println!("seed {seed}");
        let mut random = SplitMix64::new(seed);
        let (bottom_cap, upper_cap) = (6, 3);
        let mut dense = DenseLinks::new(bottom_cap, upper_cap);
        let mut reference = MemoryLinks::new();
        let record_count = 40_u32;
        for _ in 0..2_000 {
            let record = (random.next_u64() % u64::from(record_count)) as u32;
            match random.next_u64() % 4 {
                0 => {
                    let level = (random.next_u64() % 3) as u8;
                    dense.insert_node(record, level).expect("insert succeeds");
                    reference
                        .insert_node(record, level)
                        .expect("insert succeeds");
                }
                1 => {
                    dense.remove_node(record).expect("remove succeeds");
                    reference.remove_node(record).expect("remove succeeds");
                }
                _ => {
                    let Some(level) = dense.node_level(record) else {
                        continue;
                    };
                    let layer = (random.next_u64() % (u64::from(level) + 1)) as u8;
                    let cap = if layer == 0 { bottom_cap } else { upper_cap };
                    let length = (random.next_u64() % (cap as u64 + 1)) as usize;
                    let list: Vec<u32> = (0..length)
                        .map(|_| (random.next_u64() % u64::from(record_count)) as u32)
                        .collect();
                    dense
                        .set_neighbours(record, layer, &list)
                        .expect("set succeeds");
                    reference
                        .set_neighbours(record, layer, &list)
                        .expect("set succeeds");
                }
            }
        }
        assert_eq!(
            dense.nodes().expect("nodes succeeds"),
            reference.nodes().expect("nodes succeeds")
        );
        assert_eq!(dense.len(), reference.len());
        let (mut left, mut right) = (Vec::new(), Vec::new());
        for record in 0..record_count {
            for layer in 0..4 {
                dense
                    .neighbours(record, layer, &mut left)
                    .expect("neighbours succeeds");
                reference
                    .neighbours(record, layer, &mut right)
                    .expect("neighbours succeeds");
                assert_eq!(left, right, "record {record} layer {layer}");
            }
        }
    }

    #[test]
    fn lists_over_their_cap_and_missing_layers_are_refused() {
        let mut dense = DenseLinks::new(2, 1);
        dense.insert_node(3, 1).expect("insert succeeds");
        assert!(dense.set_neighbours(3, 0, &[1, 2, 4]).is_err());
        assert!(dense.set_neighbours(3, 1, &[1, 2]).is_err());
        assert!(dense.set_neighbours(3, 2, &[1]).is_err());
        assert!(dense.set_neighbours(5, 0, &[1]).is_err());
        dense.set_neighbours(3, 0, &[1, 2]).expect("within the cap");
        assert_eq!(dense.list(3, 0), &[1, 2]);
        let changed = dense.take_changed();
        assert_eq!(changed.iter().collect::<Vec<u32>>(), [3]);
        assert!(dense.take_changed().is_empty());
    }
}
