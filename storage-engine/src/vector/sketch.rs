//! Distance sketches: an 8-bit copy of a graph's float vectors, held in memory, that gives a
//! guaranteed *lower bound* of the dot-product distances (cosine, dot product) from a query to
//! a record while reading about a quarter of the bytes of the full vector.
//!
//! A search uses it to skip neighbours that cannot enter its results: once `ef` results are
//! held, a neighbour whose lower bound is at or above the farthest result's distance would not
//! be admitted, so its full vector is never loaded (`graph::search`). At 384 dimensions a full
//! record is 25 cache lines and a sketch row 7; most neighbours scored during a search are
//! rejected, so the search loads far fewer bytes — and hot search is bound by loading vectors.
//! Skipping only vectors that would have been rejected changes no result: a search with a
//! sketch returns exactly what it returns without one.
//!
//! The sketched vector `v` of a record is its prepared vector (`RecordStore::prepared_floats`:
//! for cosine the stored vector times the record's scale, normalised into a scratch row), the
//! vector whose dot product with the query the distance uses; the one rounding more of the
//! scaled distance (`dot * scale` instead of the dot of the scaled vector) lies far within the
//! rounding allowance below.
//!
//! Row of record `r` (`row_lines` whole, 64-byte aligned cache lines): `padded_dimensions`
//! signed 8-bit codes `c` (zero past `dimensions`), then the row's `scale` and `margin` as
//! `f32` LE. The vector is approximated by `scale * c` with `scale = max |v_i| / 127`, and
//! `margin` is at least `|| v - scale * c ||` plus a rounding allowance
//! (`ROUNDING_ALLOWANCE_PER_DIMENSION * dimensions * ||v||`, far above the rounding error of
//! both the exact and the approximate dot products). By Cauchy–Schwarz,
//! `|q.v - scale * q.c| <= ||q|| * || v - scale * c ||`, so
//! `q.v <= scale * (q.c) + ||q|| * margin`, which bounds the distance from below.
//!
//! Storage: rows in chunks of `SKETCH_CHUNK_RECORDS` records, each chunk shared (`Arc`) so
//! that extending a sketch to new records copies at most one partial chunk. A record's row
//! never changes (records are append-only and never rewritten once committed), so a sketch
//! built from any committed snapshot is valid for the records of every later one.
//!
//! Memory: `row_lines * 64` bytes per record (384 dimensions: 448 B; 128: 192 B).
//!
//! Invariants: `chunks` hold rows for records `0..record_count` exactly, chunk `k` the records
//! `k * SKETCH_CHUNK_RECORDS ..`, every chunk but the last full; for every row,
//! `q.v >= dot_upper_bound(q, row)` never fails, i.e. the bound holds for every query.

use super::distance::Metric;
use super::records::{PayloadKind, RecordStore};
use std::sync::{Arc, RwLock};

/// Graphs of fewer dimensions get no sketch: a full record is then too few cache lines more
/// than a sketch row for the skipped loads to pay for the rows read (measured 2026-11-22:
/// faster at 384 dimensions, slower at 128; 256 is between the two and not measured).
pub const SKETCH_DIMENSIONS_MIN: usize = 256;
/// Records per sketch chunk (a power of two: the chunk is `record >> SKETCH_CHUNK_SHIFT`).
pub const SKETCH_CHUNK_RECORDS: u32 = 1 << SKETCH_CHUNK_SHIFT;
/// `log2(SKETCH_CHUNK_RECORDS)`.
const SKETCH_CHUNK_SHIFT: u32 = 13;
/// Bytes of one cache line (the unit of a row).
pub const SKETCH_LINE_BYTES: usize = 64;
/// Codes are padded to a multiple of this many dimensions (one AVX2 load of codes).
const CODE_BLOCK_DIMENSIONS: usize = 32;
/// Largest code magnitude.
const CODE_MAX: f32 = 127.0;
/// Bytes of the scale and the margin after the codes.
const ROW_TRAILER_BYTES: usize = 2 * size_of::<f32>();
/// Allowance for floating-point rounding in the exact and approximate dot products, per
/// dimension and unit of vector norm (each product's rounding error is below
/// `dimensions * 2^-24 * ||q|| * ||v||`; this is about eight times that, for both).
const ROUNDING_ALLOWANCE_PER_DIMENSION: f64 = 5e-7;

/// One 64-byte aligned cache line of rows.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u8; SKETCH_LINE_BYTES]);

const _: () = assert!(size_of::<Line>() == SKETCH_LINE_BYTES);

/// The shape of a sketch's rows for `dimensions`-dimensional vectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SketchLayout {
    /// Dimensions of the vectors.
    pub dimensions: usize,
    /// Codes per row (`dimensions` rounded up to `CODE_BLOCK_DIMENSIONS`).
    pub padded_dimensions: usize,
    /// Cache lines per row.
    pub row_lines: usize,
}

impl SketchLayout {
    /// The rows for `dimensions`-dimensional vectors.
    pub fn new(dimensions: usize) -> Self {
        let padded_dimensions = dimensions.next_multiple_of(CODE_BLOCK_DIMENSIONS);
        Self {
            dimensions,
            padded_dimensions,
            row_lines: (padded_dimensions + ROW_TRAILER_BYTES).div_ceil(SKETCH_LINE_BYTES),
        }
    }

    /// Bytes of one row.
    pub fn row_bytes(&self) -> usize {
        self.row_lines * SKETCH_LINE_BYTES
    }
}

/// Writes the row of `vector` into `row` (`layout.row_bytes()` long, zeroed).
fn encode_row(layout: SketchLayout, vector: &[f32], row: &mut [u8]) {
    let largest = vector
        .iter()
        .fold(0.0_f32, |largest, value| largest.max(value.abs()));
    let scale = largest / CODE_MAX;
    let mut residual_squares = 0.0_f64;
    let mut norm_squares = 0.0_f64;
    for (position, &value) in vector.iter().enumerate() {
        let code = if scale > 0.0 {
            (value / scale).round().clamp(-CODE_MAX, CODE_MAX)
        } else {
            0.0
        };
        row[position] = (code as i8) as u8;
        let residual = f64::from(value) - f64::from(scale) * f64::from(code);
        residual_squares += residual * residual;
        norm_squares += f64::from(value) * f64::from(value);
    }
    let allowance = ROUNDING_ALLOWANCE_PER_DIMENSION * vector.len() as f64 * norm_squares.sqrt();
    let margin = round_up(residual_squares.sqrt() + allowance);
    let trailer = layout.padded_dimensions;
    row[trailer..trailer + 4].copy_from_slice(&scale.to_le_bytes());
    row[trailer + 4..trailer + 8].copy_from_slice(&margin.to_le_bytes());
}

/// The smallest `f32` at or above the non-negative, finite `value`.
fn round_up(value: f64) -> f32 {
    let rounded = value as f32;
    if f64::from(rounded) < value {
        // The next representable float up (`rounded` is finite and non-negative).
        f32::from_bits(rounded.to_bits() + 1)
    } else {
        rounded
    }
}

/// The rows of a graph's records `0..record_count` (see the module documentation).
#[derive(Clone)]
pub struct Sketch {
    layout: SketchLayout,
    /// The metric the sketched records are prepared for.
    metric: Metric,
    chunks: Vec<Arc<Vec<Line>>>,
    record_count: u32,
}

impl std::fmt::Debug for Sketch {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Sketch")
            .field("layout", &self.layout)
            .field("record_count", &self.record_count)
            .finish()
    }
}

impl Sketch {
    /// An empty sketch for `dimensions`-dimensional vectors of a `metric` graph.
    pub fn new(dimensions: usize, metric: Metric) -> Self {
        Self {
            layout: SketchLayout::new(dimensions),
            metric,
            chunks: Vec::new(),
            record_count: 0,
        }
    }

    /// The row shape.
    pub fn layout(&self) -> SketchLayout {
        self.layout
    }

    /// Records sketched (`0..record_count`).
    pub fn record_count(&self) -> u32 {
        self.record_count
    }

    /// Bytes held by the rows.
    pub fn memory_bytes(&self) -> usize {
        self.chunks
            .iter()
            .map(|chunk| chunk.len() * SKETCH_LINE_BYTES)
            .sum()
    }

    /// Appends the rows of `records`' records `self.record_count()..record_count` (float
    /// records of this sketch's dimensions).
    pub fn extend<R: RecordStore>(&mut self, records: &R, record_count: u32) {
        let layout = self.layout;
        let lines = layout.row_lines;
        let mut row = vec![0_u8; layout.row_bytes()];
        let mut vector = Vec::with_capacity(layout.dimensions);
        for record in self.record_count..record_count {
            let chunk = (record >> SKETCH_CHUNK_SHIFT) as usize;
            if chunk == self.chunks.len() {
                self.chunks.push(Arc::new(Vec::with_capacity(
                    SKETCH_CHUNK_RECORDS as usize * lines,
                )));
            }
            row.fill(0);
            records.prepared_floats(self.metric, record, &mut vector);
            encode_row(layout, &vector, &mut row);
            let rows = Arc::make_mut(&mut self.chunks[chunk]);
            rows.extend(
                row.chunks_exact(SKETCH_LINE_BYTES)
                    .map(|bytes| Line(bytes.try_into().expect("chunks_exact yields whole lines"))),
            );
        }
        self.record_count = self.record_count.max(record_count);
    }

    /// The row of `record`, as a pointer to its first byte (`row_bytes` readable, 64-byte
    /// aligned); panics when `record` is not sketched.
    #[inline]
    fn row_pointer(&self, record: u32) -> *const u8 {
        let chunk = &self.chunks[(record >> SKETCH_CHUNK_SHIFT) as usize];
        let first_line = (record & (SKETCH_CHUNK_RECORDS - 1)) as usize * self.layout.row_lines;
        chunk[first_line..first_line + self.layout.row_lines]
            .as_ptr()
            .cast::<u8>()
    }

    /// The row of `record` (panics when `record` is not sketched).
    fn row(&self, record: u32) -> &[u8] {
        // SAFETY: `row_pointer` checked the row's lines are inside the chunk (slice index),
        // and the chunk lives as long as `self`.
        unsafe { std::slice::from_raw_parts(self.row_pointer(record), self.layout.row_bytes()) }
    }

    /// Hints the processor to load the row of `record` (nothing when it is not sketched).
    #[inline]
    pub fn prefetch(&self, record: u32) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
            if record >= self.record_count {
                return;
            }
            let row = self.row_pointer(record);
            for line in 0..self.layout.row_lines {
                // SAFETY: SSE is part of the x86_64 baseline; a prefetch is only a hint, never
                // faults, and the address lies inside the row.
                unsafe { _mm_prefetch::<_MM_HINT_T0>(row.add(line * SKETCH_LINE_BYTES).cast()) };
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = record;
    }

    /// An upper bound of `query . v` for record `record`'s vector `v`, computed by the
    /// portable kernel (`query` padded to `padded_dimensions` with zeros, `query_norm` its
    /// norm). The reference for `dot_upper_bound_avx2`.
    pub fn dot_upper_bound(&self, query: &[f32], query_norm: f32, record: u32) -> f32 {
        let layout = self.layout;
        let row = self.row(record);
        let trailer = layout.padded_dimensions;
        let (scale, margin) = trailer_values(row, trailer);
        let mut sum = 0.0_f32;
        for (&code, &value) in row[..trailer].iter().zip(&query[..trailer]) {
            sum += f32::from(code as i8) * value;
        }
        scale * sum + query_norm * margin
    }

    /// `dot_upper_bound` with the AVX2 + FMA kernel.
    ///
    /// # Safety
    /// The processor supports AVX2 and FMA, and `query` holds `padded_dimensions` floats.
    #[cfg(target_arch = "x86_64")]
    #[inline]
    pub unsafe fn dot_upper_bound_avx2(
        &self,
        query: *const f32,
        query_norm: f32,
        record: u32,
    ) -> f32 {
        let row = self.row_pointer(record);
        let trailer = self.layout.padded_dimensions;
        // SAFETY: the row holds `padded_dimensions` codes then the trailer; the caller
        // guarantees the features and the query's length.
        unsafe {
            let sum = x86::codes_dot_avx2(row.cast::<i8>(), query, trailer);
            let scale = f32::from_le_bytes(*row.add(trailer).cast::<[u8; 4]>());
            let margin = f32::from_le_bytes(*row.add(trailer + 4).cast::<[u8; 4]>());
            scale * sum + query_norm * margin
        }
    }
}

/// The scale and margin stored at `trailer` in `row`.
fn trailer_values(row: &[u8], trailer: usize) -> (f32, f32) {
    let value = |at: usize| {
        f32::from_le_bytes(
            row[at..at + 4]
                .try_into()
                .expect("the trailer holds two floats"),
        )
    };
    (value(trailer), value(trailer + 4))
}

/// A query prepared for bounds: padded with zeros to the sketch's padded dimensions, with its
/// norm.
#[derive(Debug, Clone)]
pub struct BoundQuery {
    /// The padded query.
    pub padded: Vec<f32>,
    /// `||query||`.
    pub norm: f32,
}

impl BoundQuery {
    /// Pads `query` for `layout`.
    pub fn new(layout: SketchLayout, query: &[f32]) -> Self {
        let mut padded = vec![0.0_f32; layout.padded_dimensions];
        padded[..query.len()].copy_from_slice(query);
        let norm_squares: f64 = query.iter().map(|&value| f64::from(value).powi(2)).sum();
        // Rounded up, like the margins.
        Self {
            padded,
            norm: round_up(norm_squares.sqrt()),
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    //! The AVX2 + FMA codes-times-floats dot product; callers guarantee the features.
    use std::arch::x86_64::{
        __m128i, _mm_loadu_si128, _mm_srli_si128, _mm256_add_ps, _mm256_castps256_ps128,
        _mm256_cvtepi8_epi32, _mm256_cvtepi32_ps, _mm256_extractf128_ps, _mm256_fmadd_ps,
        _mm256_loadu_ps, _mm256_setzero_ps,
    };
    use std::arch::x86_64::{_mm_add_ps, _mm_add_ss, _mm_cvtss_f32, _mm_movehl_ps, _mm_shuffle_ps};

    /// Codes consumed per iteration (two 16-byte loads, four registers of eight).
    const BLOCK: usize = 32;

    /// `sum codes[i] * query[i]` over `length` (a multiple of 32) positions.
    ///
    /// # Safety
    /// AVX2 and FMA are available; `codes` and `query` address `length` readable values.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn codes_dot_avx2(codes: *const i8, query: *const f32, length: usize) -> f32 {
        let mut accumulators = [_mm256_setzero_ps(); 4];
        let mut index = 0;
        while index + BLOCK <= length {
            // SAFETY: index + 32 <= length for both pointers (16-byte loads at +0 and +16,
            // float loads at +0, +8, +16, +24).
            unsafe {
                let low = _mm_loadu_si128(codes.add(index).cast::<__m128i>());
                let high = _mm_loadu_si128(codes.add(index + 16).cast::<__m128i>());
                let parts = [
                    low,
                    _mm_srli_si128::<8>(low),
                    high,
                    _mm_srli_si128::<8>(high),
                ];
                for (lane, (accumulator, part)) in accumulators.iter_mut().zip(parts).enumerate() {
                    let floats = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(part));
                    let values = _mm256_loadu_ps(query.add(index + lane * 8));
                    *accumulator = _mm256_fmadd_ps(floats, values, *accumulator);
                }
            }
            index += BLOCK;
        }
        let sum = _mm256_add_ps(
            _mm256_add_ps(accumulators[0], accumulators[1]),
            _mm256_add_ps(accumulators[2], accumulators[3]),
        );
        let low = _mm256_castps256_ps128(sum);
        let high = _mm256_extractf128_ps::<1>(sum);
        let quad = _mm_add_ps(low, high);
        let pair = _mm_add_ps(quad, _mm_movehl_ps(quad, quad));
        _mm_cvtss_f32(_mm_add_ss(pair, _mm_shuffle_ps::<0x55>(pair, pair)))
    }
}

/// The sketch of one graph's float records, shared by its readers and extended from committed
/// snapshots (see the module documentation).
#[derive(Debug)]
pub struct SketchCache {
    sketch: RwLock<Arc<Sketch>>,
}

impl SketchCache {
    /// An empty cache for `dimensions`-dimensional vectors of a `metric` graph.
    pub fn new(dimensions: usize, metric: Metric) -> Self {
        Self {
            sketch: RwLock::new(Arc::new(Sketch::new(dimensions, metric))),
        }
    }

    /// A sketch of at least records `0..record_count` of `records` (float records of a
    /// committed snapshot); `None` for records that are not floats of the sketch's dimensions.
    pub fn up_to<R: RecordStore>(&self, records: &R, record_count: u32) -> Option<Arc<Sketch>> {
        let layout = records.layout();
        {
            let sketch = self
                .sketch
                .read()
                .unwrap_or_else(|poison| poison.into_inner());
            if layout.kind != PayloadKind::Floats || layout.dimensions != sketch.layout.dimensions {
                return None;
            }
            if sketch.record_count >= record_count {
                return Some(Arc::clone(&sketch));
            }
        }
        let mut shared = self
            .sketch
            .write()
            .unwrap_or_else(|poison| poison.into_inner());
        if shared.record_count < record_count {
            // Readers keep the old sketch; the new one shares every full chunk with it.
            let mut grown = Sketch::clone(&shared);
            grown.extend(records, record_count);
            *shared = Arc::new(grown);
        }
        Some(Arc::clone(&shared))
    }

    /// Bytes held by the current sketch.
    pub fn memory_bytes(&self) -> usize {
        self.sketch
            .read()
            .unwrap_or_else(|poison| poison.into_inner())
            .memory_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vector::distance::Metric;
    use crate::vector::random::SplitMix64;
    use crate::vector::records::{MemoryRecords, RecordLayout};
    use crate::vector::scalar;

    fn random_records(
        random: &mut SplitMix64,
        dimensions: usize,
        count: u32,
        metric: Metric,
    ) -> MemoryRecords {
        let mut records = MemoryRecords::new(RecordLayout {
            kind: PayloadKind::Floats,
            dimensions,
        });
        for id in 0..count {
            // Mixed magnitudes, a few all-zero and spiky vectors.
            let spread = 1.0 + (id % 5) as f32 * 10.0;
            let mut vector: Vec<f32> = (0..dimensions)
                .map(|_| random.next_signed_f32() * spread)
                .collect();
            match id % 17 {
                0 => vector.fill(0.0),
                1 => vector[0] = 1e4,
                _ => {}
            }
            // As graphs store them: as given, cosine ones with their scale.
            records.push(id, metric.stored_scale(&vector), &vector);
        }
        records
    }

    #[test]
    fn the_bound_is_never_below_the_exact_dot_product_for_any_query() {
        let seed = 41;
        println!("seed {seed}");
        let mut random = SplitMix64::new(seed);
        for metric in [Metric::Cosine, Metric::DotProduct] {
            for dimensions in [1, 7, 31, 32, 33, 100, 128, 384, 769] {
                let records = random_records(&mut random, dimensions, 60, metric);
                let mut sketch = Sketch::new(dimensions, metric);
                sketch.extend(&records, 60);
                let mut prepared_record = Vec::new();
                for _ in 0..20 {
                    let mut query: Vec<f32> = (0..dimensions)
                        .map(|_| random.next_signed_f32() * 3.0)
                        .collect();
                    metric.prepare(&mut query);
                    let prepared = BoundQuery::new(sketch.layout(), &query);
                    for record in 0..60 {
                        let (floats, scale) = (records.floats(record), records.scale(record));
                        let exact = metric.scaled_distance(&query, floats, scale);
                        records.prepared_floats(metric, record, &mut prepared_record);
                        let reference = metric.reference_distance(&query, &prepared_record);
                        let portable =
                            sketch.dot_upper_bound(&prepared.padded, prepared.norm, record);
                        let lower = match metric {
                            Metric::Cosine => 1.0 - portable,
                            _ => -portable,
                        };
                        assert!(
                            lower <= exact && lower <= reference,
                            "{metric:?} {dimensions} record {record}: {lower} > {exact}"
                        );
                        #[cfg(target_arch = "x86_64")]
                        if crate::vector::kernels::has_avx2_fma() {
                            // SAFETY: features checked; the padded query has the padded length.
                            let fast = unsafe {
                                sketch.dot_upper_bound_avx2(
                                    prepared.padded.as_ptr(),
                                    prepared.norm,
                                    record,
                                )
                            };
                            let lower = match metric {
                                Metric::Cosine => 1.0 - fast,
                                _ => -fast,
                            };
                            assert!(lower <= exact, "avx2 {metric:?} {dimensions} {record}");
                            assert!(
                                (fast - portable).abs() <= 1e-3 * portable.abs().max(1.0),
                                "kernels agree"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn the_bound_is_close_for_normalised_vectors() {
        let seed = 43;
        println!("seed {seed}");
        let mut random = SplitMix64::new(seed);
        let dimensions = 384;
        let records = random_records(&mut random, dimensions, 40, Metric::Cosine);
        let mut sketch = Sketch::new(dimensions, Metric::Cosine);
        sketch.extend(&records, 40);
        let mut prepared_record = Vec::new();
        let mut query: Vec<f32> = (0..dimensions).map(|_| random.next_signed_f32()).collect();
        Metric::Cosine.prepare(&mut query);
        let prepared = BoundQuery::new(sketch.layout(), &query);
        // Spiky vectors (ids 0 and 1 modulo 17) have loose bounds; ordinary ones do not.
        for record in (0..40).filter(|record| record % 17 > 1) {
            records.prepared_floats(Metric::Cosine, record, &mut prepared_record);
            let exact = scalar::dot(&query, &prepared_record);
            let bound = sketch.dot_upper_bound(&prepared.padded, prepared.norm, record);
            // Useful only if the slack is small against cosine distances (~0.01-1).
            assert!(bound - exact < 0.02, "record {record}: {bound} vs {exact}");
        }
    }

    #[test]
    fn an_extended_sketch_equals_one_built_at_once_and_shares_full_chunks() {
        let seed = 47;
        println!("seed {seed}");
        let mut random = SplitMix64::new(seed);
        let count = SKETCH_CHUNK_RECORDS * 2 + 100;
        let records = random_records(&mut random, 24, count, Metric::Cosine);
        let cache = SketchCache::new(24, Metric::Cosine);
        let partial = cache
            .up_to(&records, SKETCH_CHUNK_RECORDS + 5)
            .expect("float records get a sketch");
        let grown = cache
            .up_to(&records, count)
            .expect("float records get a sketch");
        assert_eq!(grown.record_count(), count);
        assert_eq!(partial.record_count(), SKETCH_CHUNK_RECORDS + 5);
        assert!(Arc::ptr_eq(&partial.chunks[0], &grown.chunks[0]));
        let mut whole = Sketch::new(24, Metric::Cosine);
        whole.extend(&records, count);
        for record in 0..count {
            assert_eq!(whole.row(record), grown.row(record), "record {record}");
            if record < partial.record_count() {
                assert_eq!(partial.row(record), grown.row(record));
            }
        }
        let codes = MemoryRecords::new(RecordLayout {
            kind: PayloadKind::Codes,
            dimensions: 24,
        });
        assert!(cache.up_to(&codes, 0).is_none());
    }
}
