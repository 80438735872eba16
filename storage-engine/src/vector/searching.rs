//! Answering a query over one graph plus its insert buffer: validation, the exact-or-graph
//! decision for filtered queries, binary-quantization re-scoring, and mapping records back to
//! internal ids with user distances.
//!
//! Binary quantization: the beam holds `max(ef, limit * rescore_candidates_per_result(d))`
//! candidates ranked by estimated (or, for `Hamming`, bit-count) distances, and with
//! re-scoring all of them are re-ranked by their full vectors. The insert buffer's records
//! (searched by brute force) are estimated too and compete with the beam's for that pool:
//! the best `ef` estimates of both are re-scored. (Re-scoring every buffered record read up
//! to `merge_threshold_vectors` more full vectors per query and graph: 736 instead of 100 on
//! a shard of the 100k MiniLM benchmark, whose buffer held 636 records.) A `d`-dimensional code holds
//! `d` bits, so the estimate sharpens as `d` grows and fewer candidates per result keep the
//! same recall: the pool is [`RESCORE_CANDIDATE_BITS_PER_RESULT`] bits of code per result,
//! `ceil(3,840 / d)` candidates. Measured: 100k x 384 all-MiniLM-L6-v2 embeddings (10
//! candidates per result, the beam 100 at `limit` 10): recall@10 0.986 unfiltered, 0.963 with
//! a 10 % filter (`tuning/results/vector-compare-2026-11-26b.md`); 1M x 128 clustered (30 per
//! result: between the measured 0.928 at 20 and 0.974 at 40, `vector-store-bq-2026-11-22.md`).
//!
//! Filtered search policy (documented threshold): with `c` matching live ids out of `n` live
//! vectors, the search is exact (every candidate scored, with full vectors when they exist)
//! when `c <= max(exact_search_candidates_min, EXACT_SEARCH_SELECTIVITY_MAX * n)` (the first
//! is a graph parameter, default `DEFAULT_EXACT_SEARCH_CANDIDATES_MIN` = 4,096); otherwise
//! the graph is searched with the filter (see `graph::search`) and, if that finds fewer than
//! `min(limit, c)` matches, the exact search answers instead.
//!
//! Invariants: hits are sorted by increasing distance, hold at most `limit` entries, with a
//! filter only matching ids, and `min(limit, matching live ids)` of them.

use super::distance::Metric;
use super::error::VectorError;
use super::estimator::Centres;
use super::graph::search::{score_records, search};
use super::graph::visited::SearchScratch;
use super::graph::{Links, Scored};
use super::parameters::GraphParameters;
use super::records::RecordStore;
use super::sketch::Sketch;
use super::space::Space;
use roaring::RoaringBitmap;

/// Below this fraction of the live vectors a filtered search is exact.
pub const EXACT_SEARCH_SELECTIVITY_MAX: f64 = 0.02;
/// With binary quantization and re-scoring, the bits of code the beam holds per requested
/// result: `d`-dimensional vectors keep `ceil(this / d)` candidates per result, and all of
/// them (`max(limit * that, ef)`) are re-scored with full vectors (see the module docs).
pub const RESCORE_CANDIDATE_BITS_PER_RESULT: usize = 3_840;

/// The candidates kept and re-scored per requested result for `dimensions`-long vectors
/// (at least one: a rounded-up quotient of a positive budget).
pub fn rescore_candidates_per_result(dimensions: usize) -> usize {
    RESCORE_CANDIDATE_BITS_PER_RESULT.div_ceil(dimensions.max(1))
}

/// One query.
#[derive(Debug, Clone, Copy)]
pub struct SearchRequest<'a> {
    /// The query vector (user form, `dimensions` long).
    pub vector: &'a [f32],
    /// Hits wanted.
    pub limit: usize,
    /// Beam width; the graph's `ef_search` when `None` (always raised to `limit`).
    pub ef: Option<usize>,
    /// Only these internal ids may be returned.
    pub candidates: Option<&'a RoaringBitmap>,
    /// With binary quantization: re-score the best Hamming candidates with full vectors.
    pub rescore: bool,
}

impl<'a> SearchRequest<'a> {
    /// The `limit` nearest vectors, default beam width, no filter, with re-scoring.
    pub fn new(vector: &'a [f32], limit: usize) -> Self {
        Self {
            vector,
            limit,
            ef: None,
            candidates: None,
            rescore: true,
        }
    }
}

/// One result.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    /// The document's internal id.
    pub internal_id: u32,
    /// The user distance (see `Metric::user_distance`).
    pub distance: f32,
}

/// Reads full-precision vectors to re-score candidates.
pub trait FullVectors {
    /// Ordering distances from the prepared `query` to each record, in order.
    fn distances(
        &self,
        metric: Metric,
        query: &[f32],
        records: &[u32],
    ) -> Result<Vec<f32>, VectorError>;
}

/// Everything a search reads.
pub struct SearchView<'a, L: Links, R: RecordStore, F: FullVectors> {
    /// The graph.
    pub links: &'a L,
    /// The records navigated (codes with binary quantization).
    pub records: &'a R,
    /// Full vectors for re-scoring and exact search (`None` for Hamming graphs).
    pub full: Option<&'a F>,
    /// The graph's parameters.
    pub parameters: &'a GraphParameters,
    /// Records inserted but not yet merged into the graph.
    pub buffer: &'a [u32],
    /// Live vectors (graph and buffer).
    pub live_count: u64,
    /// The live ids (graph and buffer).
    pub live_ids: &'a RoaringBitmap,
    /// Maps a live internal id to its record (only ever called with ids of `live_ids`).
    pub record_of: &'a dyn Fn(u32) -> Result<Option<u32>, VectorError>,
    /// The internal ids of records `0..len`, when a dense map is at hand (a filtered search
    /// checks them instead of the record headers; records past it are read from headers).
    pub record_ids: Option<&'a [u32]>,
    /// Distance lower bounds for `records` (skips vectors that cannot be results).
    pub sketch: Option<&'a Sketch>,
    /// The centres of centred-code records (binary quantization with full vectors).
    pub centres: &'a Centres,
}

/// Checks a query or stored vector against the graph's dimensions.
pub fn validate_vector(parameters: &GraphParameters, vector: &[f32]) -> Result<(), VectorError> {
    if vector.len() != parameters.dimensions {
        return Err(VectorError::DimensionMismatch {
            expected: parameters.dimensions,
            found: vector.len(),
        });
    }
    if vector.iter().any(|value| !value.is_finite()) {
        return Err(VectorError::NonFiniteValue);
    }
    Ok(())
}

/// Answers `request` (see the module documentation).
pub fn search_view<L: Links, R: RecordStore, F: FullVectors>(
    view: &SearchView<'_, L, R, F>,
    request: &SearchRequest<'_>,
    scratch: &mut SearchScratch,
) -> Result<Vec<Hit>, VectorError> {
    validate_vector(view.parameters, request.vector)?;
    if request.limit == 0 || view.live_count == 0 {
        return Ok(Vec::new());
    }
    let Some(candidates) = request.candidates else {
        return approximate(view, request, None, scratch);
    };
    let matching = candidates.intersection_len(view.live_ids);
    let threshold = view
        .parameters
        .exact_search_candidates_min
        .max((EXACT_SEARCH_SELECTIVITY_MAX * view.live_count as f64) as u64);
    if matching <= threshold {
        return exact(view, request, candidates);
    }
    let hits = approximate(view, request, Some(candidates), scratch)?;
    if (hits.len() as u64) < matching.min(request.limit as u64) {
        return exact(view, request, candidates);
    }
    Ok(hits)
}

/// Graph (plus buffer) search, re-scored with binary quantization.
fn approximate<L: Links, R: RecordStore, F: FullVectors>(
    view: &SearchView<'_, L, R, F>,
    request: &SearchRequest<'_>,
    candidates: Option<&RoaringBitmap>,
    scratch: &mut SearchScratch,
) -> Result<Vec<Hit>, VectorError> {
    let space = Space::new(view.records, view.parameters.metric)
        .with_sketch(view.sketch)
        .with_centres(view.centres);
    let query = space.prepare_query(request.vector);
    let rescoring = request.rescore && view.parameters.binary_quantized && view.full.is_some();
    let mut ef = request
        .ef
        .unwrap_or(view.parameters.ef_search)
        .max(request.limit);
    if rescoring {
        let per_result = rescore_candidates_per_result(view.parameters.dimensions);
        ef = ef.max(request.limit.saturating_mul(per_result));
    }
    let records = view.records;
    let record_ids = view.record_ids.unwrap_or(&[]);
    let internal_id = |record: u32| match record_ids.get(record as usize) {
        Some(&internal_id) => internal_id,
        None => records.internal_id(record),
    };
    let accept = |record: u32| candidates.is_none_or(|set| set.contains(internal_id(record)));
    let filter: Option<&dyn Fn(u32) -> bool> = if candidates.is_some() {
        Some(&accept)
    } else {
        None
    };
    let mut found = search(view.links, &space, &query, ef, filter, scratch)?;
    found.extend(
        view.buffer
            .iter()
            .filter(|record| accept(**record))
            .map(|&record| Scored {
                distance: space.to_query(&query, record),
                record,
            }),
    );
    found.sort_unstable();
    if let (true, Some(full)) = (rescoring, view.full) {
        // The pool is the best `ef` estimates, buffered records and graph nodes alike: a
        // buffer of up to `merge_threshold_vectors` records must not re-score them all.
        found.truncate(ef);
        found = rescore(view.parameters.metric, full, request.vector, &found)?;
    }
    found.truncate(request.limit);
    Ok(to_hits(view, &found))
}

/// Scores every matching live id exactly (full vectors when available): without binary
/// quantization the navigation records are the full vectors and are scored in place, the
/// next ones prefetched; with it, the full vectors are read through `FullVectors`.
fn exact<L: Links, R: RecordStore, F: FullVectors>(
    view: &SearchView<'_, L, R, F>,
    request: &SearchRequest<'_>,
    candidates: &RoaringBitmap,
) -> Result<Vec<Hit>, VectorError> {
    let live_candidates = candidates & view.live_ids;
    let mut records = Vec::with_capacity(live_candidates.len() as usize);
    for internal_id in &live_candidates {
        if let Some(record) = (view.record_of)(internal_id)? {
            records.push(record);
        }
    }
    let scored: Vec<Scored> = match view.full {
        Some(full) if view.parameters.binary_quantized => {
            let scored: Vec<Scored> = records
                .iter()
                .map(|&record| Scored {
                    distance: 0.0,
                    record,
                })
                .collect();
            rescore(view.parameters.metric, full, request.vector, &scored)?
        }
        _ => {
            let space = Space::new(view.records, view.parameters.metric);
            let query = space.prepare_query(request.vector);
            score_records(&space, &query, &records)
        }
    };
    Ok(to_hits(view, &nearest(scored, request.limit)))
}

/// The `limit` smallest of `scored`, sorted (a selection, then a sort of the few kept).
fn nearest(mut scored: Vec<Scored>, limit: usize) -> Vec<Scored> {
    if scored.len() > limit {
        scored.select_nth_unstable(limit);
        scored.truncate(limit);
    }
    scored.sort_unstable();
    scored
}

/// Replaces navigation distances by full-precision ones and re-sorts.
fn rescore<F: FullVectors>(
    metric: Metric,
    full: &F,
    vector: &[f32],
    found: &[Scored],
) -> Result<Vec<Scored>, VectorError> {
    let mut prepared = vector.to_vec();
    metric.prepare(&mut prepared);
    let records: Vec<u32> = found.iter().map(|scored| scored.record).collect();
    let distances = full.distances(metric, &prepared, &records)?;
    let mut rescored: Vec<Scored> = records
        .iter()
        .zip(distances)
        .map(|(&record, distance)| Scored { distance, record })
        .collect();
    rescored.sort_unstable();
    Ok(rescored)
}

/// Maps records to hits. Distances are the metric's: exact, or, from a binary-quantized
/// graph without re-scoring, estimates of it (bit counts for the `Hamming` metric).
fn to_hits<L: Links, R: RecordStore, F: FullVectors>(
    view: &SearchView<'_, L, R, F>,
    found: &[Scored],
) -> Vec<Hit> {
    let (metric, dimensions) = (view.parameters.metric, view.parameters.dimensions);
    found
        .iter()
        .map(|scored| Hit {
            internal_id: view.records.internal_id(scored.record),
            distance: metric.user_distance(scored.distance, dimensions),
        })
        .collect()
}

/// Full vectors held in float records (in memory or mapped).
pub struct RecordVectors<'a, R: RecordStore>(pub &'a R);

impl<R: RecordStore> FullVectors for RecordVectors<'_, R> {
    fn distances(
        &self,
        metric: Metric,
        query: &[f32],
        records: &[u32],
    ) -> Result<Vec<f32>, VectorError> {
        Ok(records
            .iter()
            .map(|&record| {
                metric.scaled_distance(query, self.0.floats(record), self.0.scale(record))
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vector::estimator::NO_CENTRE;
    use crate::vector::graph::memory::MemoryLinks;
    use crate::vector::random::SplitMix64;
    use crate::vector::records::{MemoryRecords, PayloadKind, RecordLayout};
    use std::cell::Cell;

    /// Full vectors that count the records they re-score.
    struct Counting<'a> {
        inner: RecordVectors<'a, MemoryRecords>,
        rescored: Cell<usize>,
    }

    impl FullVectors for Counting<'_> {
        fn distances(
            &self,
            metric: Metric,
            query: &[f32],
            records: &[u32],
        ) -> Result<Vec<f32>, VectorError> {
            self.rescored.set(self.rescored.get() + records.len());
            self.inner.distances(metric, query, records)
        }
    }

    /// A buffer larger than the pool: only the best `ef` estimates are re-scored (every
    /// buffered record was before), and the hits are still the exact nearest.
    #[test]
    fn buffered_records_compete_for_the_re_scoring_pool() {
        let seed = 59;
        println!("seed {seed}");
        let mut random = SplitMix64::new(seed);
        let (metric, dimensions, count, limit) = (Metric::Cosine, 64, 500_u32, 2);
        let mut parameters = GraphParameters::new(metric, dimensions);
        parameters.binary_quantized = true;
        let centres = Centres::new(dimensions);
        let mut codes = MemoryRecords::new(RecordLayout {
            kind: PayloadKind::CentredCodes,
            dimensions,
        });
        let mut floats = MemoryRecords::new(RecordLayout {
            kind: PayloadKind::Floats,
            dimensions,
        });
        let mut vectors = Vec::new();
        for id in 0..count {
            let mut vector: Vec<f32> = (0..dimensions)
                .map(|_| random.next_gaussian_f32())
                .collect();
            metric.prepare(&mut vector);
            codes.push_centred(metric, id, &vector, &centres, NO_CENTRE);
            floats.push(id, metric.stored_scale(&vector), &vector);
            vectors.push(vector);
        }
        let full = Counting {
            inner: RecordVectors(&floats),
            rescored: Cell::new(0),
        };
        let buffer: Vec<u32> = (0..count).collect();
        let live_ids: RoaringBitmap = (0..count).collect();
        let record_of = |id: u32| Ok(Some(id));
        let links = MemoryLinks::new();
        let view = SearchView {
            links: &links,
            records: &codes,
            full: Some(&full),
            parameters: &parameters,
            buffer: &buffer,
            live_count: u64::from(count),
            live_ids: &live_ids,
            record_of: &record_of,
            record_ids: None,
            sketch: None,
            centres: &centres,
        };
        let mut query: Vec<f32> = (0..dimensions)
            .map(|_| random.next_gaussian_f32())
            .collect();
        metric.prepare(&mut query);
        let request = SearchRequest::new(&query, limit);
        let hits = search_view(&view, &request, &mut SearchScratch::default())
            .expect("a valid query over valid records is answered");
        let pool = parameters
            .ef_search
            .max(limit * rescore_candidates_per_result(dimensions));
        assert!(
            pool < count as usize,
            "the buffer must be larger than the pool"
        );
        assert_eq!(full.rescored.get(), pool);
        let mut exact: Vec<(f32, u32)> = vectors
            .iter()
            .zip(0..)
            .map(|(vector, id)| (metric.reference_distance(&query, vector), id))
            .collect();
        exact.sort_by(|left, right| left.0.total_cmp(&right.0));
        let found: Vec<u32> = hits.iter().map(|hit| hit.internal_id).collect();
        let expected: Vec<u32> = exact[..limit].iter().map(|(_, id)| *id).collect();
        assert_eq!(found, expected);
    }
}
