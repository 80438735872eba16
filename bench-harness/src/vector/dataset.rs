//! Benchmark data: synthetic clustered vectors (queries drawn around the same centres but
//! never indexed), exact top-k ground truth by brute force, and raw files for hnswlib.

use std::io::Write;
use std::path::Path;
use storage_engine::vector::kernels;
use storage_engine::vector::synthetic::clustered_vectors;

/// Nearest neighbours compared.
pub const K: usize = 10;

/// One data set.
pub struct Dataset {
    /// Its name in reports.
    pub name: String,
    /// Vector length.
    pub dimensions: usize,
    /// Indexed vectors, row by row.
    pub vectors: Vec<f32>,
    /// Held-out query vectors, row by row.
    pub queries: Vec<f32>,
    /// Extra vectors for the incremental merge measurement.
    pub extra: Vec<f32>,
}

impl Dataset {
    /// Clustered Gaussian data: `clusters` centres, noise `spread`, fixed seeds.
    pub fn clustered(
        name: &str,
        count: usize,
        queries: usize,
        dimensions: usize,
        clusters: usize,
        spread: f32,
    ) -> Self {
        let seed = 0xBE7C_4000 + dimensions as u64;
        Dataset {
            name: name.to_owned(),
            dimensions,
            vectors: clustered_vectors(count, dimensions, clusters, spread, seed, seed),
            queries: clustered_vectors(queries, dimensions, clusters, spread, seed, seed + 1),
            extra: clustered_vectors(count / 100, dimensions, clusters, spread, seed, seed + 2),
        }
    }

    /// Number of indexed vectors.
    pub fn count(&self) -> usize {
        self.vectors.len() / self.dimensions
    }

    /// Number of queries.
    pub fn query_count(&self) -> usize {
        self.queries.len() / self.dimensions
    }

    /// Row `row` of the indexed vectors.
    pub fn vector(&self, row: usize) -> &[f32] {
        &self.vectors[row * self.dimensions..(row + 1) * self.dimensions]
    }

    /// Query `row`.
    pub fn query(&self, row: usize) -> &[f32] {
        &self.queries[row * self.dimensions..(row + 1) * self.dimensions]
    }
}

fn normalised(vectors: &[f32], dimensions: usize) -> Vec<f32> {
    let mut out = vectors.to_vec();
    for row in out.chunks_exact_mut(dimensions) {
        let norm = kernels::dot(row, row).sqrt();
        if norm > 0.0 {
            row.iter_mut().for_each(|value| *value /= norm);
        }
    }
    out
}

/// Exact cosine top-`K` ids of every query (only ids accepted by `accept`).
pub fn ground_truth(dataset: &Dataset, accept: &dyn Fn(u32) -> bool) -> Vec<Vec<u32>> {
    let dimensions = dataset.dimensions;
    let vectors = normalised(&dataset.vectors, dimensions);
    let queries = normalised(&dataset.queries, dimensions);
    queries
        .chunks_exact(dimensions)
        .map(|query| {
            let mut best: Vec<(f32, u32)> = Vec::with_capacity(K + 1);
            for (row, vector) in vectors.chunks_exact(dimensions).enumerate() {
                if !accept(row as u32) {
                    continue;
                }
                let distance = 1.0 - kernels::dot(query, vector);
                if best.len() < K || distance < best[best.len() - 1].0 {
                    let position = best.partition_point(|entry| entry.0 <= distance);
                    best.insert(position, (distance, row as u32));
                    best.truncate(K);
                }
            }
            best.into_iter().map(|(_, row)| row).collect()
        })
        .collect()
}

/// Mean recall@K of `found` against `truth`.
pub fn mean_recall(found: &[Vec<u32>], truth: &[Vec<u32>]) -> f64 {
    let total: f64 = found
        .iter()
        .zip(truth)
        .map(|(found, truth)| {
            truth.iter().filter(|id| found.contains(id)).count() as f64 / truth.len().max(1) as f64
        })
        .sum();
    total / truth.len().max(1) as f64
}

fn write_raw(path: &Path, bytes: impl Iterator<Item = [u8; 4]>) -> std::io::Result<()> {
    let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
    for chunk in bytes {
        file.write_all(&chunk)?;
    }
    file.flush()
}

/// Writes `vectors.f32`, `queries.f32` (little-endian rows) and `truth.u32` (K ids per query).
pub fn export(dataset: &Dataset, truth: &[Vec<u32>], directory: &Path) -> std::io::Result<()> {
    write_raw(
        &directory.join("vectors.f32"),
        dataset.vectors.iter().map(|v| v.to_le_bytes()),
    )?;
    write_raw(
        &directory.join("queries.f32"),
        dataset.queries.iter().map(|v| v.to_le_bytes()),
    )?;
    write_raw(
        &directory.join("truth.u32"),
        truth.iter().flatten().map(|id| id.to_le_bytes()),
    )
}
