//! How the bounds of the commit caches that hold document bitmaps grow with the shard.
//!
//! Term postings, prefix unions, range unions and facet columns hold bitmaps or columns over
//! the shard's documents: an entry weighs in proportion to the documents it covers. Their
//! bounds were chosen on indexes of some hundred thousand documents; with fixed bounds, an
//! index ten times larger keeps a tenth as many entries, and a query mix that stayed in the
//! caches at 200k documents misses them at 2.66M (each miss reads the full postings again:
//! the cost per query then grows with the index). A [`CacheScale`] keeps the number of
//! entries a cache can hold the same as the shard grows: its bound is multiplied by one more
//! step per [`DOCUMENTS_PER_STEP`] documents.
//!
//! Memory stays bounded for the process: every kept value is charged to the process's cache
//! budget ([`crate::cache_meter`]), which refuses what would pass it and closes the least
//! recently used shards. The caches bounded by the vocabulary (prefix words, splits,
//! derivations, facet forms) do not scale.
//!
//! Invariant: a scale has at least one step and at most [`STEPS_MAX`]; a bound is the bound
//! at one step times the steps, saturating.

/// Documents per step of the scale: the index size the bounds at one step were chosen for.
pub const DOCUMENTS_PER_STEP: u64 = 500_000;
/// Most steps: past 32M documents per shard, the bounds stop growing (the process budget
/// bounds them well before on most machines).
pub const STEPS_MAX: u64 = 64;

/// The multiplier of the document-sized caches' bounds for one commit of a shard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheScale {
    steps: u64,
}

impl CacheScale {
    /// The scale of an empty or small shard: the bounds as written.
    pub const ONE: CacheScale = CacheScale { steps: 1 };

    /// The scale of a commit holding `documents` documents.
    pub fn for_documents(documents: u64) -> CacheScale {
        CacheScale {
            steps: documents.div_ceil(DOCUMENTS_PER_STEP).clamp(1, STEPS_MAX),
        }
    }

    /// `bytes_at_one_step` multiplied by the steps.
    pub fn bound(self, bytes_at_one_step: usize) -> usize {
        let steps = usize::try_from(self.steps).unwrap_or(usize::MAX);
        debug_assert!((1..=STEPS_MAX).contains(&self.steps));
        bytes_at_one_step.saturating_mul(steps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bound_grows_by_one_step_per_half_million_documents() {
        assert_eq!(CacheScale::for_documents(0).bound(10), 10);
        assert_eq!(CacheScale::for_documents(500_000).bound(10), 10);
        assert_eq!(CacheScale::for_documents(500_001).bound(10), 20);
        assert_eq!(CacheScale::for_documents(2_658_969).bound(10), 60);
    }

    #[test]
    fn a_bound_stops_growing_at_the_most_steps_and_never_overflows() {
        let huge = CacheScale::for_documents(u64::MAX);
        assert_eq!(
            huge,
            CacheScale::for_documents(STEPS_MAX * DOCUMENTS_PER_STEP)
        );
        assert_eq!(huge.bound(1), 64);
        assert_eq!(huge.bound(usize::MAX), usize::MAX);
    }
}
