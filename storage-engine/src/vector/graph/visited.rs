//! Per-search scratch space: a generation-stamped visited set and reusable buffers, so that a
//! search allocates nothing once warmed up.
//!
//! Invariant: a record is visited in the current search iff `stamps[record] == generation`;
//! bumping the generation clears the set in O(1) (a wrap-around clears it for real).

use super::Scored;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Scratch space reused across searches by one thread.
#[derive(Debug, Default)]
pub struct SearchScratch {
    stamps: Vec<u32>,
    generation: u32,
    pub(crate) candidates: BinaryHeap<Reverse<Scored>>,
    pub(crate) results: BinaryHeap<Scored>,
    pub(crate) neighbours: Vec<u32>,
    pub(crate) second_hop: Vec<u32>,
    pub(crate) rejected: Vec<u32>,
    pub(crate) fresh: Vec<u32>,
}

impl SearchScratch {
    /// Empty scratch space.
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts a new search over records `0..record_count`.
    pub fn begin(&mut self, record_count: u32) {
        let count = record_count as usize;
        if self.stamps.len() < count {
            self.stamps.resize(count, 0);
        }
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.stamps.iter_mut().for_each(|stamp| *stamp = 0);
            self.generation = 1;
        }
        self.candidates.clear();
        self.results.clear();
    }

    /// Marks `record` visited; returns whether it was new.
    #[inline]
    pub fn visit(&mut self, record: u32) -> bool {
        let index = record as usize;
        if index >= self.stamps.len() {
            self.stamps.resize(index + 1, 0);
        }
        let stamp = &mut self.stamps[index];
        if *stamp == self.generation {
            false
        } else {
            *stamp = self.generation;
            true
        }
    }
}
