//! Synthetic data sets and exact ground truth, for tests and benchmarks: uniform random
//! vectors, clustered vectors (Gaussian blobs around random centres), brute-force k nearest
//! neighbours in any metric, and recall.
//!
//! Invariant: everything is a pure function of its arguments and seed.

use super::distance::Metric;
use super::random::SplitMix64;
use roaring::RoaringBitmap;

/// `count` vectors of `dimensions` uniform values in [-1, 1), flattened row by row.
pub fn random_vectors(count: usize, dimensions: usize, seed: u64) -> Vec<f32> {
    let mut random = SplitMix64::new(seed);
    (0..count * dimensions)
        .map(|_| random.next_signed_f32())
        .collect()
}

/// `count` vectors around `clusters` random centres (unit Gaussian centres drawn from
/// `centre_seed`, Gaussian noise of standard deviation `spread` drawn from `sample_seed`),
/// flattened row by row. Data and queries share the centre seed and differ by sample seed.
pub fn clustered_vectors(
    count: usize,
    dimensions: usize,
    clusters: usize,
    spread: f32,
    centre_seed: u64,
    sample_seed: u64,
) -> Vec<f32> {
    let mut centre_random = SplitMix64::new(centre_seed);
    let centres: Vec<f32> = (0..clusters.max(1) * dimensions)
        .map(|_| centre_random.next_gaussian_f32())
        .collect();
    let mut random = SplitMix64::new(sample_seed ^ 0xD1B5_4A32_D192_ED03);
    let mut vectors = Vec::with_capacity(count * dimensions);
    for _ in 0..count {
        let cluster = random.next_below(clusters.max(1) as u64) as usize;
        let centre = &centres[cluster * dimensions..(cluster + 1) * dimensions];
        vectors.extend(
            centre
                .iter()
                .map(|value| value + spread * random.next_gaussian_f32()),
        );
    }
    vectors
}

/// The ids (row numbers) of the `k` rows of `vectors` nearest to `query`, exact, using the
/// scalar reference distance; only rows in `candidates` when given; ties by row number.
pub fn brute_force(
    metric: Metric,
    vectors: &[f32],
    dimensions: usize,
    query: &[f32],
    k: usize,
    candidates: Option<&RoaringBitmap>,
) -> Vec<u32> {
    let mut prepared_query = query.to_vec();
    metric.prepare(&mut prepared_query);
    let mut scored: Vec<(f32, u32)> = vectors
        .chunks_exact(dimensions)
        .enumerate()
        .filter(|(row, _)| candidates.is_none_or(|set| set.contains(*row as u32)))
        .map(|(row, vector)| {
            let mut prepared = vector.to_vec();
            metric.prepare(&mut prepared);
            (
                metric.reference_distance(&prepared_query, &prepared),
                row as u32,
            )
        })
        .collect();
    scored.sort_unstable_by(|left, right| left.0.total_cmp(&right.0).then(left.1.cmp(&right.1)));
    scored.truncate(k);
    scored.into_iter().map(|(_, row)| row).collect()
}

/// The fraction of `truth` present in `found`.
pub fn recall(found: &[u32], truth: &[u32]) -> f64 {
    if truth.is_empty() {
        return 1.0;
    }
    let hits = truth.iter().filter(|id| found.contains(id)).count();
    hits as f64 / truth.len() as f64
}
