//! The exact answers: for every query, the top-[`TOP_K`] rows by cosine similarity over
//! every indexed vector (and over the rows each filter keeps), by brute force on every core;
//! and recall@k of a server's hits against them.
//!
//! Invariants: vectors and queries are normalised before the dot product, so the order is
//! the cosine order whatever their norms; ties keep the lower row first; a filter with fewer
//! matching rows than `TOP_K` gives a shorter answer, and recall is counted against its
//! length.

use storage_engine::vector::kernels;

use super::data::{SearchKind, TOP_K, VectorData};

/// Queries compared with each vector while it is in cache.
const QUERY_BLOCK: usize = 16;

/// The exact top rows of every query for each kind of search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExactAnswers {
    /// Without filter.
    pub unfiltered: Vec<Vec<u32>>,
    /// `bucket = 7`.
    pub one_percent: Vec<Vec<u32>>,
    /// `bucket < 10`.
    pub ten_percent: Vec<Vec<u32>>,
}

impl ExactAnswers {
    /// The answers a kind of search is compared with (none for hybrid search).
    pub fn for_kind(&self, kind: SearchKind) -> Option<&[Vec<u32>]> {
        match kind {
            SearchKind::Semantic => Some(&self.unfiltered),
            SearchKind::FilteredOnePercent => Some(&self.one_percent),
            SearchKind::FilteredTenPercent => Some(&self.ten_percent),
            SearchKind::Hybrid => None,
        }
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

/// The best `TOP_K` (similarity, row) pairs, best first.
#[derive(Debug, Default)]
struct Best {
    entries: Vec<(f32, u32)>,
}

impl Best {
    fn offer(&mut self, similarity: f32, row: u32) {
        if self.entries.len() == TOP_K
            && self
                .entries
                .last()
                .is_some_and(|worst| similarity <= worst.0)
        {
            return;
        }
        let position = self.entries.partition_point(|entry| entry.0 >= similarity);
        self.entries.insert(position, (similarity, row));
        self.entries.truncate(TOP_K);
    }

    fn rows(self) -> Vec<u32> {
        self.entries.into_iter().map(|(_, row)| row).collect()
    }
}

/// The exact answers of every query of `data`, on `threads` threads.
pub fn exact_answers(data: &VectorData, threads: usize) -> ExactAnswers {
    let dimensions = data.dimensions;
    let vectors = normalised(&data.vectors, dimensions);
    let queries = normalised(&data.queries, dimensions);
    let query_count = data.query_count();
    let per_thread = query_count.div_ceil(threads.max(1)).max(1);
    let answers: Vec<(Vec<u32>, Vec<u32>, Vec<u32>)> = std::thread::scope(|scope| {
        let workers: Vec<_> = queries
            .chunks(per_thread * dimensions)
            .map(|chunk| {
                let vectors = &vectors;
                scope.spawn(move || {
                    let mut answers = Vec::with_capacity(chunk.len() / dimensions);
                    // A block of queries per pass over the vectors, so that each vector is
                    // read from memory once per block rather than once per query.
                    for block in chunk.chunks(QUERY_BLOCK * dimensions) {
                        let block_queries: Vec<&[f32]> = block.chunks_exact(dimensions).collect();
                        let mut best: Vec<[Best; 3]> = block_queries
                            .iter()
                            .map(|_| [Best::default(), Best::default(), Best::default()])
                            .collect();
                        for (row, vector) in vectors.chunks_exact(dimensions).enumerate() {
                            let id = row as u32;
                            let ten = SearchKind::FilteredTenPercent.accepts(row);
                            let one = SearchKind::FilteredOnePercent.accepts(row);
                            for (query, [all, one_best, ten_best]) in
                                block_queries.iter().zip(best.iter_mut())
                            {
                                let similarity = kernels::dot(query, vector);
                                all.offer(similarity, id);
                                if ten {
                                    ten_best.offer(similarity, id);
                                }
                                if one {
                                    one_best.offer(similarity, id);
                                }
                            }
                        }
                        answers.extend(
                            best.into_iter()
                                .map(|[all, one, ten]| (all.rows(), one.rows(), ten.rows())),
                        );
                    }
                    answers
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|worker| {
                worker
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    });
    let mut exact = ExactAnswers {
        unfiltered: Vec::with_capacity(query_count),
        one_percent: Vec::with_capacity(query_count),
        ten_percent: Vec::with_capacity(query_count),
    };
    for (all, one, ten) in answers {
        exact.unfiltered.push(all);
        exact.one_percent.push(one);
        exact.ten_percent.push(ten);
    }
    exact
}

/// The share of `truth` found in `found`.
pub fn recall(found: &[u32], truth: &[u32]) -> f64 {
    if truth.is_empty() {
        return 1.0;
    }
    truth.iter().filter(|row| found.contains(row)).count() as f64 / truth.len() as f64
}

/// Mean recall over every query; `None` when a query has no answer (it failed).
pub fn mean_recall(found: &[Option<Vec<u32>>], truth: &[Vec<u32>]) -> Option<f64> {
    if found.is_empty() || found.len() != truth.len() {
        return None;
    }
    let mut total = 0.0;
    for (found, truth) in found.iter().zip(truth) {
        total += recall(found.as_ref()?, truth);
    }
    Some(total / truth.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::vectors::data::RowText;

    #[test]
    fn exact_answers_follow_the_cosine_order_and_the_filters() {
        // 2-dimension rows at growing angles from the x axis; row 0 is the closest to the
        // query (1, 0), and the norms differ to check that only the angle counts.
        let count = 300;
        let vectors: Vec<f32> = (0..count)
            .flat_map(|row| {
                let angle = row as f32 * 0.01;
                let norm = 1.0 + (row % 3) as f32;
                [angle.cos() * norm, angle.sin() * norm]
            })
            .collect();
        let data = VectorData {
            dimensions: 2,
            vectors,
            queries: vec![5.0, 0.0, 1.0, 0.0],
            documents: vec![RowText::default(); count],
            query_texts: vec![RowText::default(); 2],
        };
        for threads in [1, 2, 4] {
            let exact = exact_answers(&data, threads);
            assert_eq!(exact.unfiltered.len(), 2);
            assert_eq!(exact.unfiltered[1], (0..10).collect::<Vec<u32>>());
            assert_eq!(exact.one_percent[0], [7, 107, 207]);
            assert_eq!(exact.ten_percent[0], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
        }
        // More queries than a block: every one is answered, in order.
        let many = VectorData {
            queries: (0..40).flat_map(|_| [1.0, 0.0]).collect(),
            query_texts: vec![RowText::default(); 40],
            ..data
        };
        for threads in [1, 3] {
            let exact = exact_answers(&many, threads);
            assert_eq!(exact.unfiltered.len(), 40);
            assert!(
                exact
                    .unfiltered
                    .iter()
                    .all(|rows| *rows == (0..10).collect::<Vec<u32>>())
            );
        }
    }

    #[test]
    fn recall_counts_the_exact_rows_found() {
        assert_eq!(recall(&[1, 2, 3], &[3, 4]), 0.5);
        assert_eq!(recall(&[], &[]), 1.0);
        let found = vec![Some(vec![1, 2]), Some(vec![5])];
        let truth = vec![vec![1, 2], vec![6]];
        assert_eq!(mean_recall(&found, &truth), Some(0.5));
        assert_eq!(mean_recall(&[None, Some(vec![5])], &truth), None);
    }
}
