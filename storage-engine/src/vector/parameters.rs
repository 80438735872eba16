//! The parameters of one graph, explicit and stored with it.
//!
//! Invariants (checked by `GraphParameters::validate`): `2 <= m <= m0 <= LINKS_PER_LAYER_MAX`,
//! `ef_construction >= 1`, `ef_search >= 1`, `1 <= dimensions <= DIMENSIONS_MAX`, and a
//! `Hamming` graph is always quantized (it stores codes only).

use super::distance::Metric;
use super::error::VectorError;

/// The largest neighbour list a layer may hold (a node record stores the count in one byte).
pub const LINKS_PER_LAYER_MAX: usize = 255;
/// The largest number of dimensions a graph accepts (Meilisearch embedders stay far below).
pub const DIMENSIONS_MAX: usize = 65_536;
/// Default neighbours per node on the upper layers.
pub const DEFAULT_M: usize = 16;
/// Default neighbours per node on the bottom layer.
pub const DEFAULT_M0: usize = 32;
/// Default beam width while inserting.
pub const DEFAULT_EF_CONSTRUCTION: usize = 125;
/// Default beam width while searching (raised to the number of results asked for).
pub const DEFAULT_EF_SEARCH: usize = 100;
/// Default number of buffered inserts that triggers a merge into the graph.
pub const DEFAULT_MERGE_THRESHOLD_VECTORS: usize = 1_024;
/// Default number of matching ids below which a filtered search is exact.
pub const DEFAULT_EXACT_SEARCH_CANDIDATES_MIN: u64 = 4_096;
/// Default seed of the level sampler.
pub const DEFAULT_SEED: u64 = 0x5EED_0F64_A9B0;

/// Everything that defines how one graph is built and searched.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GraphParameters {
    /// Distance between vectors.
    pub metric: Metric,
    /// Length of every vector.
    pub dimensions: usize,
    /// Navigate the graph with 1-bit codes and Hamming distance (full vectors kept for
    /// re-scoring unless the metric is `Hamming` itself).
    pub binary_quantized: bool,
    /// Neighbours per node on layers above 0.
    pub m: usize,
    /// Neighbours per node on layer 0.
    pub m0: usize,
    /// Beam width while inserting.
    pub ef_construction: usize,
    /// Beam width while searching.
    pub ef_search: usize,
    /// Buffered inserts that trigger a merge.
    pub merge_threshold_vectors: usize,
    /// Seed of the level sampler.
    pub seed: u64,
    /// A filtered search is exact when at most this many live ids match (see `searching`).
    pub exact_search_candidates_min: u64,
}

impl GraphParameters {
    /// Default parameters for `dimensions`-long vectors under `metric`.
    pub fn new(metric: Metric, dimensions: usize) -> Self {
        Self {
            metric,
            dimensions,
            binary_quantized: metric == Metric::Hamming,
            m: DEFAULT_M,
            m0: DEFAULT_M0,
            ef_construction: DEFAULT_EF_CONSTRUCTION,
            ef_search: DEFAULT_EF_SEARCH,
            merge_threshold_vectors: DEFAULT_MERGE_THRESHOLD_VECTORS,
            seed: DEFAULT_SEED,
            exact_search_candidates_min: DEFAULT_EXACT_SEARCH_CANDIDATES_MIN,
        }
    }

    /// Checks the invariants listed in the module documentation.
    pub fn validate(&self) -> Result<(), VectorError> {
        if self.m < 2 || self.m > self.m0 || self.m0 > LINKS_PER_LAYER_MAX {
            return Err(VectorError::InvalidParameters("need 2 <= m <= m0 <= 255"));
        }
        if self.ef_construction == 0 || self.ef_search == 0 {
            return Err(VectorError::InvalidParameters(
                "beam widths must be positive",
            ));
        }
        if self.dimensions == 0 || self.dimensions > DIMENSIONS_MAX {
            return Err(VectorError::InvalidParameters(
                "need 1 <= dimensions <= 65536",
            ));
        }
        if self.metric == Metric::Hamming && !self.binary_quantized {
            return Err(VectorError::InvalidParameters(
                "a Hamming graph stores codes only",
            ));
        }
        if self.merge_threshold_vectors == 0 {
            return Err(VectorError::InvalidParameters(
                "the merge threshold must be positive",
            ));
        }
        Ok(())
    }

    /// The neighbour cap of `layer`.
    pub fn links_cap(&self, layer: u8) -> usize {
        if layer == 0 { self.m0 } else { self.m }
    }

    /// Whether full-precision vectors are kept beside the codes (for re-scoring).
    pub fn keeps_full_vectors(&self) -> bool {
        self.metric != Metric::Hamming
    }

    /// The level normalisation factor `1 / ln(m)` of the exponential level distribution.
    pub fn level_factor(&self) -> f64 {
        1.0 / (self.m as f64).ln()
    }
}
