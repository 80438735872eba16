//! Per-query distance scoring for the search loops. The metric, the kernel (AVX2 + FMA or
//! portable) and the record addressing are chosen once per query by `dispatch`, which hands a
//! `ScorerTask` a concrete `Scorer` type: each search loop is compiled once per scorer type,
//! so its inner loop calls one known kernel on a record address computed from the record
//! number — no per-distance metric match, feature check, slice view or alignment check.
//!
//! Float records held back to back in one contiguous buffer (vector files, in-memory records)
//! get a `FloatScorer`; anything else (1-bit codes, stores without a contiguous buffer) gets
//! a `SpaceScorer`, which goes through `Space::to_query` as before.
//!
//! With a sketch in the space (cosine or dot product, AVX2 + FMA, every record sketched) the
//! float scorer is a `BoundedScorer`: it also gives a lower bound of the distance from the
//! sketch (`sketch`), which the search uses to skip vectors that cannot enter its results.
//!
//! A float scorer reads a record's scale word from the record's header (the bytes just before
//! its vector, loaded and prefetched with it) and hands the scale to the kernel: the cosine
//! kernels multiply the dot product by it (see `distance`), the others ignore it.
//!
//! Invariant: a scorer returns exactly the distance `Space::to_query` returns for the same
//! query and record (same kernel, same formula, scale included), so choosing one or the other
//! never changes a result; it panics, like `Space::to_query`, on a record number past the last
//! record. A lower bound is never above the distance `score` returns.

use super::distance::Metric;
use super::kernels;
use super::records::{
    PayloadKind, RECORD_HEADER_BYTES, RECORD_SCALE_OFFSET_BYTES, RecordStore, scale_of_word,
};
#[cfg(target_arch = "x86_64")]
use super::sketch::{BoundQuery, Sketch};
use super::space::{Query, Space};
use std::marker::PhantomData;

/// Bytes of one cache line (a record is prefetched line by line).
const PREFETCH_LINE_BYTES: usize = 64;

/// Distances from one prepared query to records, by record number.
pub trait Scorer {
    /// The ordering distance from the query to `record`.
    fn score(&self, record: u32) -> f32;
    /// Hints the processor to start loading every cache line of record `record`.
    fn prefetch(&self, record: u32);
    /// Whether `lower_bound` can be above minus infinity (then a search checks it first).
    const BOUNDED: bool = false;
    /// A lower bound of `score(record)`, read from less memory than the record.
    #[inline]
    fn lower_bound(&self, _record: u32) -> f32 {
        f32::NEG_INFINITY
    }
    /// Hints the processor to start loading what `lower_bound(record)` reads.
    #[inline]
    fn prefetch_bound(&self, _record: u32) {}
}

/// Work that runs with whatever scorer fits the query (see `dispatch`).
pub trait ScorerTask {
    /// What the work returns.
    type Output;
    /// Runs the work with `scorer`.
    fn run<S: Scorer>(self, scorer: &S) -> Self::Output;
}

/// Runs `task` with the fastest scorer for `query` over `space`.
pub fn dispatch<R: RecordStore, T: ScorerTask>(
    space: &Space<'_, R>,
    query: &Query,
    task: T,
) -> T::Output {
    if let Query::Floats(vector) = query {
        if let Some(records) = FloatRecords::of(space.records, vector) {
            #[cfg(target_arch = "x86_64")]
            if kernels::has_avx2_fma() {
                let sketch = space
                    .sketch
                    .filter(|sketch| sketch.record_count() >= records.record_count);
                if let Some(sketch) = sketch {
                    match space.metric {
                        Metric::Cosine => {
                            let scorer = FloatScorer::<CosineAvx2>::new(records);
                            return task.run(&BoundedScorer::new(scorer, sketch, vector, 1.0));
                        }
                        Metric::DotProduct => {
                            let scorer = FloatScorer::<DotAvx2>::new(records);
                            return task.run(&BoundedScorer::new(scorer, sketch, vector, 0.0));
                        }
                        Metric::Euclidean | Metric::Hamming => {}
                    }
                }
                match space.metric {
                    Metric::Cosine => return task.run(&FloatScorer::<CosineAvx2>::new(records)),
                    Metric::DotProduct => return task.run(&FloatScorer::<DotAvx2>::new(records)),
                    Metric::Euclidean => {
                        return task.run(&FloatScorer::<EuclideanAvx2>::new(records));
                    }
                    Metric::Hamming => {}
                }
            }
            match space.metric {
                Metric::Cosine => return task.run(&FloatScorer::<CosinePortable>::new(records)),
                Metric::DotProduct => return task.run(&FloatScorer::<DotPortable>::new(records)),
                Metric::Euclidean => {
                    return task.run(&FloatScorer::<EuclideanPortable>::new(records));
                }
                Metric::Hamming => {}
            }
        }
    }
    task.run(&SpaceScorer { space, query })
}

/// The general scorer: `Space::to_query` and `Space::prefetch`.
pub struct SpaceScorer<'a, 'r, R: RecordStore> {
    space: &'a Space<'r, R>,
    query: &'a Query,
}

impl<R: RecordStore> Scorer for SpaceScorer<'_, '_, R> {
    #[inline]
    fn score(&self, record: u32) -> f32 {
        self.space.to_query(self.query, record)
    }

    #[inline]
    fn prefetch(&self, record: u32) {
        self.space.prefetch(record);
    }
}

/// Float records back to back in one buffer, with a query of their dimensions.
#[derive(Clone, Copy)]
struct FloatRecords<'a> {
    /// Records `0..record_count`, `stride` bytes each, 8-byte aligned.
    bytes: &'a [u8],
    stride: usize,
    record_count: u32,
    query: &'a [f32],
}

impl<'a> FloatRecords<'a> {
    /// The records of `store` when they are floats of the query's length in one buffer.
    fn of<R: RecordStore>(store: &'a R, query: &'a [f32]) -> Option<Self> {
        let layout = store.layout();
        if layout.kind != PayloadKind::Floats || layout.dimensions != query.len() {
            return None;
        }
        let bytes = store.contiguous_records()?;
        let stride = layout.stride();
        let record_count = store.record_count();
        if bytes.len() < record_count as usize * stride || stride < RECORD_HEADER_BYTES {
            return None;
        }
        Some(Self {
            bytes,
            stride,
            record_count,
            query,
        })
    }
}

/// A distance kernel over raw float pointers.
///
/// # Safety
/// `distance` may only be called when the processor has the features the kernel needs
/// (`FloatScorer::new` is only reached for kernels `dispatch` checked) and both pointers
/// address `dimensions` readable floats.
unsafe trait FloatKernel {
    /// The ordering distance between the `dimensions` floats at `query` and the stored vector
    /// at `record`, whose scale is `scale` (`Metric::scaled_distance`, same formula).
    ///
    /// # Safety
    /// See the trait.
    unsafe fn distance(query: *const f32, record: *const f32, dimensions: usize, scale: f32)
    -> f32;
}

/// Scores float records of one contiguous buffer with kernel `K`.
struct FloatScorer<'a, K: FloatKernel> {
    records: FloatRecords<'a>,
    kernel: PhantomData<K>,
}

impl<'a, K: FloatKernel> FloatScorer<'a, K> {
    fn new(records: FloatRecords<'a>) -> Self {
        Self {
            records,
            kernel: PhantomData,
        }
    }
}

impl<K: FloatKernel> Scorer for FloatScorer<'_, K> {
    #[inline]
    fn score(&self, record: u32) -> f32 {
        let records = &self.records;
        assert!(
            record < records.record_count,
            "a graph links only records of its vector file"
        );
        // SAFETY: record < record_count, so its `stride` bytes lie inside `bytes` (checked
        // in `FloatRecords::of`): its header, whose scale word is 4-byte aligned (records
        // start 8-byte aligned), then its payload of `dimensions` floats; the query holds
        // `dimensions` floats; `dispatch` checked the kernel's features.
        unsafe {
            let start = records.bytes.as_ptr().add(record as usize * records.stride);
            let word = start.add(RECORD_SCALE_OFFSET_BYTES).cast::<u32>().read();
            K::distance(
                records.query.as_ptr(),
                start.add(RECORD_HEADER_BYTES).cast::<f32>(),
                records.query.len(),
                scale_of_word(u32::from_le(word)),
            )
        }
    }

    #[inline]
    fn prefetch(&self, record: u32) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
            let records = &self.records;
            if record >= records.record_count {
                return;
            }
            let start = record as usize * records.stride;
            let mut offset = 0;
            while offset < records.stride {
                // SAFETY: SSE is part of the x86_64 baseline; a prefetch is only a hint and
                // never faults, and the address lies inside the record (record < count).
                unsafe {
                    _mm_prefetch::<_MM_HINT_T0>(
                        records.bytes.as_ptr().add(start + offset).cast::<i8>(),
                    );
                }
                offset += PREFETCH_LINE_BYTES;
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = record;
    }
}

/// A float scorer plus lower bounds from a sketch: for a metric whose distance is
/// `offset - dot` of the prepared vectors (cosine: 1, with the record's vector times its scale;
/// dot product: 0), `offset - (upper bound of the dot)` (the sketch holds prepared vectors).
#[cfg(target_arch = "x86_64")]
struct BoundedScorer<'a, K: FloatKernel> {
    scorer: FloatScorer<'a, K>,
    sketch: &'a Sketch,
    query: BoundQuery,
    offset: f32,
}

#[cfg(target_arch = "x86_64")]
impl<'a, K: FloatKernel> BoundedScorer<'a, K> {
    /// Only for kernels whose distance is `offset - dot`, after `has_avx2_fma`, with a sketch
    /// of every record.
    fn new(scorer: FloatScorer<'a, K>, sketch: &'a Sketch, query: &[f32], offset: f32) -> Self {
        Self {
            scorer,
            sketch,
            query: BoundQuery::new(sketch.layout(), query),
            offset,
        }
    }
}

#[cfg(target_arch = "x86_64")]
impl<K: FloatKernel> Scorer for BoundedScorer<'_, K> {
    const BOUNDED: bool = true;

    #[inline]
    fn score(&self, record: u32) -> f32 {
        self.scorer.score(record)
    }

    #[inline]
    fn prefetch(&self, record: u32) {
        self.scorer.prefetch(record);
    }

    #[inline]
    fn lower_bound(&self, record: u32) -> f32 {
        // SAFETY: `dispatch` built this scorer only after `has_avx2_fma`; the padded query
        // has the sketch's padded length; the sketch covers every record (checked there,
        // and `row_pointer` panics otherwise).
        let upper = unsafe {
            self.sketch
                .dot_upper_bound_avx2(self.query.padded.as_ptr(), self.query.norm, record)
        };
        self.offset - upper
    }

    #[inline]
    fn prefetch_bound(&self, record: u32) {
        self.sketch.prefetch(record);
    }
}

/// Views `dimensions` floats at `pointer` as a slice.
///
/// # Safety
/// `pointer` addresses `dimensions` readable, aligned floats that outlive the slice's use.
#[inline]
unsafe fn floats<'a>(pointer: *const f32, dimensions: usize) -> &'a [f32] {
    // SAFETY: guaranteed by the caller.
    unsafe { std::slice::from_raw_parts(pointer, dimensions) }
}

/// `1 - dot * scale`, portable kernel.
struct CosinePortable;
// SAFETY: needs no processor feature; reads `dimensions` floats from each pointer.
unsafe impl FloatKernel for CosinePortable {
    #[inline]
    unsafe fn distance(
        query: *const f32,
        record: *const f32,
        dimensions: usize,
        scale: f32,
    ) -> f32 {
        // SAFETY: the trait's contract.
        let (query, record) = unsafe { (floats(query, dimensions), floats(record, dimensions)) };
        1.0 - kernels::portable_dot(query, record) * scale
    }
}

/// `-dot`, portable kernel.
struct DotPortable;
// SAFETY: needs no processor feature; reads `dimensions` floats from each pointer.
unsafe impl FloatKernel for DotPortable {
    #[inline]
    unsafe fn distance(
        query: *const f32,
        record: *const f32,
        dimensions: usize,
        _scale: f32,
    ) -> f32 {
        // SAFETY: the trait's contract.
        let (query, record) = unsafe { (floats(query, dimensions), floats(record, dimensions)) };
        -kernels::portable_dot(query, record)
    }
}

/// Squared Euclidean, portable kernel.
struct EuclideanPortable;
// SAFETY: needs no processor feature; reads `dimensions` floats from each pointer.
unsafe impl FloatKernel for EuclideanPortable {
    #[inline]
    unsafe fn distance(
        query: *const f32,
        record: *const f32,
        dimensions: usize,
        _scale: f32,
    ) -> f32 {
        // SAFETY: the trait's contract.
        let (query, record) = unsafe { (floats(query, dimensions), floats(record, dimensions)) };
        kernels::portable_squared_euclidean(query, record)
    }
}

/// `1 - dot * scale`, AVX2 + FMA kernel.
#[cfg(target_arch = "x86_64")]
struct CosineAvx2;
// SAFETY: `dispatch` selects it only after `has_avx2_fma`; reads `dimensions` floats each.
#[cfg(target_arch = "x86_64")]
unsafe impl FloatKernel for CosineAvx2 {
    #[inline]
    unsafe fn distance(
        query: *const f32,
        record: *const f32,
        dimensions: usize,
        scale: f32,
    ) -> f32 {
        // SAFETY: the trait's contract (features and readable floats).
        1.0 - unsafe { kernels::dot_avx2_raw(query, record, dimensions) } * scale
    }
}

/// `-dot`, AVX2 + FMA kernel.
#[cfg(target_arch = "x86_64")]
struct DotAvx2;
// SAFETY: `dispatch` selects it only after `has_avx2_fma`; reads `dimensions` floats each.
#[cfg(target_arch = "x86_64")]
unsafe impl FloatKernel for DotAvx2 {
    #[inline]
    unsafe fn distance(
        query: *const f32,
        record: *const f32,
        dimensions: usize,
        _scale: f32,
    ) -> f32 {
        // SAFETY: the trait's contract (features and readable floats).
        -unsafe { kernels::dot_avx2_raw(query, record, dimensions) }
    }
}

/// Squared Euclidean, AVX2 + FMA kernel.
#[cfg(target_arch = "x86_64")]
struct EuclideanAvx2;
// SAFETY: `dispatch` selects it only after `has_avx2_fma`; reads `dimensions` floats each.
#[cfg(target_arch = "x86_64")]
unsafe impl FloatKernel for EuclideanAvx2 {
    #[inline]
    unsafe fn distance(
        query: *const f32,
        record: *const f32,
        dimensions: usize,
        _scale: f32,
    ) -> f32 {
        // SAFETY: the trait's contract (features and readable floats).
        unsafe { kernels::squared_euclidean_avx2_raw(query, record, dimensions) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vector::random::SplitMix64;
    use crate::vector::records::{MemoryRecords, RecordLayout};

    /// Collects every record's score through `dispatch`.
    struct ScoreAll(u32);

    impl ScorerTask for ScoreAll {
        type Output = Vec<f32>;
        fn run<S: Scorer>(self, scorer: &S) -> Vec<f32> {
            (0..self.0)
                .map(|record| {
                    scorer.prefetch(record);
                    scorer.score(record)
                })
                .collect()
        }
    }

    /// A vector of `dimensions` with magnitudes varying by `id` (all zero when `id % 7 == 6`).
    fn test_vector(random: &mut SplitMix64, dimensions: usize, id: u32) -> Vec<f32> {
        let spread = 1.0 + (id % 4) as f32 * 7.0;
        let zero = id % 7 == 6;
        (0..dimensions)
            .map(|_| random.next_signed_f32() * spread)
            .map(|value| if zero { 0.0 } else { value })
            .collect()
    }

    /// Pushes `vector` as graphs store it: float records as inserted with their scale word
    /// (or, when `id % 5 == 3`, normalised with a 0 word, as format-1 files hold them), code
    /// records from the prepared vector.
    fn push_stored(records: &mut MemoryRecords, metric: Metric, id: u32, vector: &[f32]) {
        let mut prepared = vector.to_vec();
        metric.prepare(&mut prepared);
        if records.layout().kind == PayloadKind::Floats && id % 5 != 3 {
            records.push(id, metric.stored_scale(vector), vector);
        } else {
            records.push(id, 0, &prepared);
        }
    }

    #[test]
    fn dispatched_scores_equal_the_space_distances_bit_for_bit() {
        let seed = 19;
        println!("seed {seed}");
        let mut random = SplitMix64::new(seed);
        for kind in [PayloadKind::Floats, PayloadKind::Codes] {
            for metric in [Metric::Cosine, Metric::Euclidean, Metric::DotProduct] {
                for dimensions in [1, 7, 16, 33, 128, 384] {
                    let mut records = MemoryRecords::new(RecordLayout { kind, dimensions });
                    for id in 0..20 {
                        let vector = test_vector(&mut random, dimensions, id);
                        push_stored(&mut records, metric, id, &vector);
                    }
                    let space = Space::new(&records, metric);
                    let user: Vec<f32> =
                        (0..dimensions).map(|_| random.next_signed_f32()).collect();
                    let query = space.prepare_query(&user);
                    let dispatched = dispatch(&space, &query, ScoreAll(20));
                    let expected: Vec<f32> = (0..20)
                        .map(|record| space.to_query(&query, record))
                        .collect();
                    assert_eq!(
                        dispatched.iter().map(|d| d.to_bits()).collect::<Vec<_>>(),
                        expected.iter().map(|d| d.to_bits()).collect::<Vec<_>>(),
                        "{kind:?} {metric:?} {dimensions}"
                    );
                }
            }
        }
    }

    #[test]
    fn cosine_scores_are_the_distances_to_the_normalised_vectors() {
        let seed = 23;
        println!("seed {seed}");
        let mut random = SplitMix64::new(seed);
        for dimensions in [1, 7, 33, 384] {
            let layout = RecordLayout {
                kind: PayloadKind::Floats,
                dimensions,
            };
            let mut records = MemoryRecords::new(layout);
            let mut normalised = Vec::new();
            for id in 0..20 {
                let vector = test_vector(&mut random, dimensions, id);
                push_stored(&mut records, Metric::Cosine, id, &vector);
                let mut prepared = vector;
                Metric::Cosine.prepare(&mut prepared);
                normalised.push(prepared);
            }
            let space = Space::new(&records, Metric::Cosine);
            let user: Vec<f32> = (0..dimensions).map(|_| random.next_signed_f32()).collect();
            let query = space.prepare_query(&user);
            let Query::Floats(prepared_query) = &query else {
                panic!("float records take float queries");
            };
            let scores = dispatch(&space, &query, ScoreAll(20));
            for (record, score) in scores.iter().enumerate() {
                let expected =
                    Metric::Cosine.reference_distance(prepared_query, &normalised[record]);
                assert!(
                    (score - expected).abs() <= 1e-5,
                    "{dimensions} record {record}: {score} vs {expected}"
                );
            }
        }
    }

    /// Collects every record's score and lower bound, and whether the scorer is bounded.
    struct BoundAll(u32);

    impl ScorerTask for BoundAll {
        type Output = (bool, Vec<(f32, f32)>);
        fn run<S: Scorer>(self, scorer: &S) -> Self::Output {
            let pairs = (0..self.0)
                .map(|record| {
                    scorer.prefetch_bound(record);
                    (scorer.score(record), scorer.lower_bound(record))
                })
                .collect();
            (S::BOUNDED, pairs)
        }
    }

    #[test]
    fn a_sketched_space_scores_the_same_and_bounds_from_below() {
        use crate::vector::sketch::Sketch;
        let seed = 31;
        println!("seed {seed}");
        let mut random = SplitMix64::new(seed);
        for metric in [Metric::Cosine, Metric::DotProduct, Metric::Euclidean] {
            for dimensions in [3, 128, 384] {
                let mut records = MemoryRecords::new(RecordLayout {
                    kind: PayloadKind::Floats,
                    dimensions,
                });
                for id in 0..50 {
                    let vector = test_vector(&mut random, dimensions, id);
                    push_stored(&mut records, metric, id, &vector);
                }
                let mut sketch = Sketch::new(dimensions, metric);
                sketch.extend(&records, 50);
                let plain = Space::new(&records, metric);
                let sketched = Space::new(&records, metric).with_sketch(Some(&sketch));
                let user: Vec<f32> = (0..dimensions).map(|_| random.next_signed_f32()).collect();
                let query = plain.prepare_query(&user);
                let (plain_bounded, expected) = dispatch(&plain, &query, BoundAll(50));
                let (bounded, found) = dispatch(&sketched, &query, BoundAll(50));
                assert!(!plain_bounded);
                assert_eq!(
                    bounded,
                    kernels::has_avx2_fma() && metric != Metric::Euclidean,
                    "{metric:?} {dimensions}"
                );
                for ((score, bound), (expected_score, _)) in found.iter().zip(&expected) {
                    assert_eq!(score.to_bits(), expected_score.to_bits());
                    assert!(bound <= score, "{metric:?} {dimensions}: {bound} > {score}");
                }
            }
        }
    }

    #[test]
    #[should_panic(expected = "a graph links only records of its vector file")]
    fn a_record_past_the_last_is_refused() {
        let mut records = MemoryRecords::new(RecordLayout {
            kind: PayloadKind::Floats,
            dimensions: 4,
        });
        records.push(0, 0, &[1.0, 0.0, 0.0, 0.0]);
        let space = Space::new(&records, Metric::Euclidean);
        let query = space.prepare_query(&[0.0, 1.0, 0.0, 0.0]);
        dispatch(&space, &query, ScoreAll(2));
    }
}
