//! The leaf a write-tree handle inserted into last, with the key range its ancestors' separators
//! give it: a run of puts and gets of nearby keys (ascending keys under one word, say) goes
//! straight to that leaf instead of searching from the root each time.
//!
//! Invariants: the cache is used only while the tree's version (bumped by every change that
//! took the path from the root: splits, deletions, dropping the tree) is the one it was filled
//! at, so its leaf is still a dirty node of the tree and its range is still the range the
//! root-to-leaf search gives; a change through the cache only adds or replaces a cell that fits
//! the leaf, which moves no separator. So a cached operation does exactly what the same
//! operation from the root does.

/// A remembered leaf and its key range.
#[derive(Debug, Default)]
pub(crate) struct LeafCache {
    /// The leaf's dirty page and the tree version it was found at; `None` when empty.
    pub leaf: Option<(u64, u64)>,
    /// Lowest key of the range (included); unbounded when `low_bounded` is false.
    pub low: Vec<u8>,
    pub low_bounded: bool,
    /// Key past the range (excluded); unbounded when `high_bounded` is false.
    pub high: Vec<u8>,
    pub high_bounded: bool,
}

impl LeafCache {
    /// Starts a search from the root: the range is everything until a branch narrows it.
    pub fn start(&mut self) {
        self.leaf = None;
        self.low_bounded = false;
        self.high_bounded = false;
    }

    /// A branch chose child `index` of `count + 1`, between `low` (the separator before the
    /// child, if any) and `high` (the separator after it, if any).
    pub fn narrow(&mut self, low: Option<&[u8]>, high: Option<&[u8]>) {
        if let Some(low) = low {
            self.low.clear();
            self.low.extend_from_slice(low);
            self.low_bounded = true;
        }
        if let Some(high) = high {
            self.high.clear();
            self.high.extend_from_slice(high);
            self.high_bounded = true;
        }
    }

    /// The cached leaf holding `key`'s place at tree version `version`, if any.
    pub fn leaf_for(&self, key: &[u8], version: u64) -> Option<u64> {
        let (page, cached_version) = self.leaf?;
        let above_low = !self.low_bounded || key >= self.low.as_slice();
        let below_high = !self.high_bounded || key < self.high.as_slice();
        (cached_version == version && above_low && below_high).then_some(page)
    }
}
