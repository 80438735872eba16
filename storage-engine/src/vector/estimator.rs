//! Asymmetric distance estimates from 1-bit codes (binary quantization that keeps recall).
//!
//! A binary-quantized graph with a float copy (cosine, Euclidean, dot product) stores, per
//! vector `x`, the 1-bit code of its *residual* `r = x - c` from a centre `c` (or from zero
//! when no centre exists yet), plus two correction scalars, and estimates the distance to a
//! float query `q` without the float vector (RaBitQ-style, without rotation):
//!
//! - `b = sign(r)` in `{-1, +1}^d` (bit set exactly when `r_i > 0`, as in `quantization`);
//! - `s = |r|^2 / sum |r_i|` makes `s * <b, r> = |r|^2` exact, so `s * <b, q>` estimates
//!   `<r, q>` (the projection of `r` on its sign pattern, scaled back);
//! - `t = <r, c> - s * <b, c>` moves the error of that estimate off the large shared component
//!   `c`: `<x, q> ~ <c, q> + s * <b, q> + t`, exact when `q` is `c` or `r` is zero;
//! - stored as `scale` and `bias` per record, with a per-query, per-centre `term` such that the
//!   estimated ordering distance is `bias + term(centre) + scale * <b, q>`:
//!
//! | metric     | scale  | bias             | term(c)              |
//! |------------|--------|------------------|----------------------|
//! | Cosine     | `-s`   | `1 - t`          | `-<c, q>`            |
//! | DotProduct | `-s`   | `-t`             | `-<c, q>`            |
//! | Euclidean  | `-2 s` | `|x|^2 - 2 t`    | `|q|^2 - 2 <c, q>`   |
//!
//! `<b, q>` is summed from per-query lookup tables: one table of 16 floats per half byte of
//! the code (entry `v` = sum over the 4 dimensions of the half byte of `+q_i` where bit `i` of
//! `v` is set and `-q_i` where it is clear), so a record costs two table reads per code byte,
//! in four running sums. Half-byte tables (6 KiB at 384 dimensions) stay in the first-level
//! cache and take 0.75 µs to build; byte tables (48 KiB) took 19 µs per query and shard,
//! for reads no faster (a throwaway micro-benchmark over 50,000 random codes: 41 ns per
//! estimate against 45).
//!
//! `term(c)` reads an 8-bit copy of the centre (`CompactCentre`: values rounded to a per-centre
//! step `max |c_i| / 127`), not its floats: a search meets about one new centre per two
//! records scored (2,340 estimates and 1,016 centres per shard and query on 100k MiniLM
//! vectors), and reading 1.5 KiB of floats per centre at random made those dot products
//! wait on memory (22 % of the search's CPU in a profile). The copy is a quarter of that, and
//! its error in `<c, q>` is at most `step / 2 * sum |q_i|` and about 4e-4 on unit vectors of
//! 384 dimensions, far inside the 1-bit estimate's own error (re-scoring uses the full
//! vectors).
//!
//! Centres are local means: when a node of level `CENTRE_LEVEL_MIN` or more joins the graph,
//! the mean of its float vector and of its `CENTRE_NEIGHBOURS` nearest layer-0 candidates
//! becomes a new centre, the node's (about one centre per `m` vectors). A vector is coded
//! against the nearest centre that exists when it is inserted, found through the graph
//! (`graph::centres::nearest_centre`: a greedy descent by full-precision distances to layer 1,
//! then the centres of the node reached and of its layer-1 neighbours). Residuals from a local
//! mean are small and isotropic, which is what makes 1-bit codes discriminate between close
//! neighbours.
//!
//! This file is arithmetic over the centres it is given (`Centres`, `mean`, codes, estimates)
//! and imports nothing from `graph/`: finding and making centres through the graph is
//! `graph::centres`, which sits above it.
//!
//! Record payload (`PayloadKind::CentredCodes`): `code_words(d)` LE `u64` words, then `scale`
//! and `bias` as LE `f32`; the header's second word holds the centre number (`NO_CENTRE` for
//! none). Invariants: a record only names a centre that existed (was committed with it or
//! before) when it was written; centres are only appended, never changed.

use super::distance::Metric;
use super::kernels;
use super::quantization::{self, CODE_WORD_BITS};
use super::records::{RECORD_HEADER_BYTES, RecordLayout};
use std::cell::Cell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, DefaultHasher};

/// The centre number of a record coded against zero (no centre existed yet).
pub const NO_CENTRE: u32 = u32::MAX;
/// Nodes of at least this level create a centre when they join the graph (about one node in
/// `m`: 1 in 16 at the default `m` = 16).
pub const CENTRE_LEVEL_MIN: u8 = 1;
/// Nearest layer-0 candidates averaged (with the node itself) into a new centre.
pub const CENTRE_NEIGHBOURS: usize = 100;
/// Bytes of the correction scalars after the code words (`scale`, `bias`).
pub const FACTOR_BYTES: usize = 2 * size_of::<f32>();
/// Bits of the code one lookup table covers (half a byte).
const TABLE_BITS: usize = 4;
/// Entries of one lookup table (one per value of a half byte).
const TABLE_ENTRIES: usize = 1 << TABLE_BITS;
/// Bits in one code byte.
const BYTE_BITS: usize = 8;
/// Independent running sums of [`EstimateQuery::signed_sum`] (two code bytes per round).
const SIGNED_SUM_LANES: usize = 4;
/// Slots of a query's direct-mapped cache of centre terms (centre `c` in slot `c % this`;
/// a power of two): a search meets a few hundred to a few thousand centres, and a collision
/// only recomputes one dot product.
pub const CENTRE_TERM_SLOTS: usize = 4_096;

/// Largest magnitude of an 8-bit centre value (symmetric, so -127..=127).
const COMPACT_VALUE_MAX: f32 = 127.0;

/// The centres of one graph, numbered from 0 in creation order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Centres {
    dimensions: usize,
    values: Vec<f32>,
    /// Every centre's values rounded to 8 bits, `dimensions` per centre (see the module doc).
    compact_values: Vec<i8>,
    /// Every centre's step: value `v` of `compact_values` stands for `v * step`.
    compact_steps: Vec<f32>,
    /// The graph node each centre was made for.
    records: Vec<u32>,
    /// The centre of each node that has one.
    by_record: HashMap<u32, u32, BuildHasherDefault<DefaultHasher>>,
}

impl Centres {
    /// No centres, for vectors of no particular length.
    pub const fn empty() -> Self {
        Self {
            dimensions: 0,
            values: Vec::new(),
            compact_values: Vec::new(),
            compact_steps: Vec::new(),
            records: Vec::new(),
            by_record: HashMap::with_hasher(BuildHasherDefault::new()),
        }
    }

    /// No centres, for `dimensions`-long vectors.
    pub fn new(dimensions: usize) -> Self {
        Self {
            dimensions,
            ..Self::empty()
        }
    }

    /// Number of centres.
    pub fn len(&self) -> u32 {
        (self.values.len() / self.dimensions.max(1)) as u32
    }

    /// Length of every centre.
    pub fn dimensions(&self) -> usize {
        self.dimensions
    }

    /// Keeps the first `count` centres.
    pub fn truncate(&mut self, count: u32) {
        self.values.truncate(count as usize * self.dimensions);
        self.compact_values
            .truncate(count as usize * self.dimensions);
        self.compact_steps.truncate(count as usize);
        for record in self.records.drain(count.min(self.len()) as usize..) {
            self.by_record.remove(&record);
        }
    }

    /// The node centre `centre` was made for.
    pub fn record(&self, centre: u32) -> u32 {
        self.records[centre as usize]
    }

    /// The centre made for node `record`, if any.
    pub fn of_record(&self, record: u32) -> Option<u32> {
        self.by_record.get(&record).copied()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Centre `centre` (panics past the last).
    pub fn vector(&self, centre: u32) -> &[f32] {
        let start = centre as usize * self.dimensions;
        &self.values[start..start + self.dimensions]
    }

    /// The 8-bit copy of centre `centre` (panics past the last).
    pub fn compact(&self, centre: u32) -> CompactCentre<'_> {
        let start = centre as usize * self.dimensions;
        CompactCentre {
            values: &self.compact_values[start..start + self.dimensions],
            step: self.compact_steps[centre as usize],
        }
    }

    /// Appends the centre made for node `record` and returns its number.
    pub fn push(&mut self, record: u32, vector: &[f32]) -> u32 {
        assert_eq!(
            vector.len(),
            self.dimensions,
            "centres share the dimensions"
        );
        let centre = self.len();
        self.values.extend_from_slice(vector);
        let step = compact_step(vector);
        self.compact_steps.push(step);
        self.compact_values
            .extend(vector.iter().map(|value| compact_value(*value, step)));
        self.records.push(record);
        self.by_record.insert(record, centre);
        centre
    }

    /// Bytes held.
    pub fn memory_bytes(&self) -> usize {
        self.values.len() * size_of::<f32>()
            + self.compact_values.len()
            + self.compact_steps.len() * size_of::<f32>()
    }

    /// The centre closest to `vector` (smallest squared Euclidean distance: the smallest
    /// residual), `NO_CENTRE` when there is none; by brute force.
    pub fn nearest(&self, vector: &[f32]) -> u32 {
        self.nearest_of(vector, 0..self.len())
    }

    /// The centre among `candidates` closest to `vector`, `NO_CENTRE` when there is none.
    pub fn nearest_of(&self, vector: &[f32], candidates: impl IntoIterator<Item = u32>) -> u32 {
        let mut best = (f32::INFINITY, NO_CENTRE);
        for centre in candidates {
            let distance = kernels::squared_euclidean(vector, self.vector(centre));
            if distance < best.0 {
                best = (distance, centre);
            }
        }
        best.1
    }
}

/// A centre's values rounded to 8 bits: value `i` stands for `values[i] * step`.
#[derive(Debug, Clone, Copy)]
pub struct CompactCentre<'a> {
    /// The rounded values, one per dimension.
    pub values: &'a [i8],
    /// What one unit of a value stands for (0 for an all-zero centre).
    pub step: f32,
}

impl CompactCentre<'_> {
    /// `<c, query>` as the 8-bit copy gives it (within `step / 2 * sum |query_i|` of the
    /// floats').
    #[inline]
    pub fn dot(&self, query: &[f32]) -> f32 {
        kernels::dot_i8(query, self.values) * self.step
    }
}

/// The step that maps `vector`'s largest magnitude onto `COMPACT_VALUE_MAX`.
fn compact_step(vector: &[f32]) -> f32 {
    let largest = vector
        .iter()
        .fold(0.0_f32, |largest, value| largest.max(value.abs()));
    largest / COMPACT_VALUE_MAX
}

/// `value` in units of `step`, rounded to the nearest 8-bit value.
fn compact_value(value: f32, step: f32) -> i8 {
    if step == 0.0 {
        return 0;
    }
    let units = (value / step)
        .round()
        .clamp(-COMPACT_VALUE_MAX, COMPACT_VALUE_MAX);
    // The clamp keeps it within i8's range, so the cast is exact.
    units as i8
}

/// The mean of `vectors` (at least one, all `dimensions` long): a new centre.
pub fn mean<'a>(dimensions: usize, vectors: impl Iterator<Item = &'a [f32]>) -> Vec<f32> {
    let mut sum = vec![0.0_f64; dimensions];
    let mut count = 0_usize;
    for vector in vectors {
        sum.iter_mut()
            .zip(vector)
            .for_each(|(total, value)| *total += f64::from(*value));
        count += 1;
    }
    let count = count.max(1) as f64;
    sum.iter().map(|total| (total / count) as f32).collect()
}

/// Bytes of the code of a `dimensions`-long vector (whole words).
pub fn code_bytes(dimensions: usize) -> usize {
    quantization::code_words(dimensions) * size_of::<u64>()
}

/// Encodes one `CentredCodes` record of `layout` for the prepared `vector`, coded against
/// centre `centre` of `centres` (`NO_CENTRE`: against zero).
pub fn encode_record(
    layout: RecordLayout,
    metric: Metric,
    internal_id: u32,
    vector: &[f32],
    centres: &Centres,
    centre: u32,
    out: &mut Vec<u8>,
) {
    assert_eq!(vector.len(), layout.dimensions, "one graph, one dimension");
    let zero;
    let centre_vector = if centre == NO_CENTRE {
        zero = vec![0.0_f32; vector.len()];
        &zero[..]
    } else {
        centres.vector(centre)
    };
    let residual: Vec<f32> = vector
        .iter()
        .zip(centre_vector)
        .map(|(value, centre)| value - centre)
        .collect();
    let code = quantization::encode(&residual);
    let (mut residual_square, mut residual_l1, mut residual_centre, mut sign_centre) =
        (0.0_f64, 0.0_f64, 0.0_f64, 0.0_f64);
    for (index, (&value, &centre)) in residual.iter().zip(centre_vector).enumerate() {
        let (value, centre) = (f64::from(value), f64::from(centre));
        residual_square += value * value;
        residual_l1 += value.abs();
        residual_centre += value * centre;
        sign_centre += if bit(&code, index) { centre } else { -centre };
    }
    let scale = if residual_l1 > 0.0 {
        residual_square / residual_l1
    } else {
        0.0
    };
    let shift = residual_centre - scale * sign_centre;
    let (scale, bias) = match metric {
        Metric::Cosine => (-scale, 1.0 - shift),
        Metric::DotProduct => (-scale, -shift),
        Metric::Euclidean => {
            let norm_square: f64 = vector.iter().map(|v| f64::from(*v).powi(2)).sum();
            (-2.0 * scale, norm_square - 2.0 * shift)
        }
        Metric::Hamming => unreachable!("Hamming graphs store plain codes"),
    };
    let start = out.len();
    out.extend_from_slice(&internal_id.to_le_bytes());
    out.extend_from_slice(&centre.to_le_bytes());
    code.iter()
        .for_each(|word| out.extend_from_slice(&word.to_le_bytes()));
    out.extend_from_slice(&(scale as f32).to_le_bytes());
    out.extend_from_slice(&(bias as f32).to_le_bytes());
    out.resize(start + layout.stride(), 0);
}

/// Whether bit `index` of `code` is set.
fn bit(code: &[u64], index: usize) -> bool {
    code[index / CODE_WORD_BITS] >> (index % CODE_WORD_BITS) & 1 == 1
}

/// The parts of one `CentredCodes` record.
#[derive(Debug, Clone, Copy)]
pub struct CodedRecord<'a> {
    /// The centre number (`NO_CENTRE` for none).
    pub centre: u32,
    /// The code bytes (little-endian words as bytes: byte `j` holds dimensions `8j..8j+8`).
    pub code: &'a [u8],
    /// The factor multiplying `<b, q>`.
    pub scale: f32,
    /// The per-record additive term.
    pub bias: f32,
}

impl<'a> CodedRecord<'a> {
    /// Reads a record of `dimensions` from its bytes.
    #[inline]
    pub fn read(bytes: &'a [u8], dimensions: usize) -> Self {
        let code_length = code_bytes(dimensions);
        let factors = RECORD_HEADER_BYTES + code_length;
        let float = |offset: usize| {
            f32::from_le_bytes([
                bytes[offset],
                bytes[offset + 1],
                bytes[offset + 2],
                bytes[offset + 3],
            ])
        };
        Self {
            centre: u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]),
            code: &bytes[RECORD_HEADER_BYTES..factors],
            scale: float(factors),
            bias: float(factors + size_of::<f32>()),
        }
    }

    /// The approximation `centre + |scale| * b` this record stands for (for the rare
    /// record-to-record distances of a quantized space; `Euclidean` scales carry a factor 2).
    pub fn reconstruct(&self, metric: Metric, centres: &Centres, dimensions: usize) -> Vec<f32> {
        let step = match metric {
            Metric::Euclidean => -self.scale / 2.0,
            _ => -self.scale,
        };
        (0..dimensions)
            .map(|index| {
                let centre = if self.centre == NO_CENTRE {
                    0.0
                } else {
                    centres.vector(self.centre)[index]
                };
                let set = self.code[index / BYTE_BITS] >> (index % BYTE_BITS) & 1 == 1;
                centre + if set { step } else { -step }
            })
            .collect()
    }
}

/// A float query prepared for estimates: its lookup tables and lazily computed centre terms.
#[derive(Debug, Clone)]
pub struct EstimateQuery {
    metric: Metric,
    /// The prepared query.
    prepared: Vec<f32>,
    /// One table per half byte of the code.
    tables: Vec<[f32; TABLE_ENTRIES]>,
    /// Recently needed `(centre, term(centre))`, slot `centre % CENTRE_TERM_SLOTS`
    /// (`NO_CENTRE` in an empty slot).
    centre_terms: Vec<Cell<(u32, f32)>>,
    /// `term` of records without a centre.
    no_centre_term: f32,
}

impl EstimateQuery {
    /// Prepares `prepared` (already normalised for cosine) for records coded against
    /// `centres`.
    pub fn new(metric: Metric, prepared: Vec<f32>, centres: &Centres) -> Self {
        let slots = CENTRE_TERM_SLOTS.min((centres.len() as usize).next_power_of_two());
        let table_count = code_bytes(prepared.len()) * BYTE_BITS / TABLE_BITS;
        let mut tables = vec![[0.0_f32; TABLE_ENTRIES]; table_count];
        for (index, table) in tables.iter_mut().enumerate() {
            let values: Vec<f32> = (0..TABLE_BITS)
                .map(|bit| {
                    prepared
                        .get(index * TABLE_BITS + bit)
                        .copied()
                        .unwrap_or(0.0)
                })
                .collect();
            let all_clear: f32 = -values.iter().sum::<f32>();
            table[0] = all_clear;
            for value in 1..TABLE_ENTRIES {
                // Built from the value without its lowest set bit: flipping that bit from -q to
                // +q adds 2q.
                let lowest = value.trailing_zeros() as usize;
                table[value] = table[value & (value - 1)] + 2.0 * values[lowest];
            }
        }
        let no_centre_term = match metric {
            Metric::Euclidean => kernels::dot(&prepared, &prepared),
            _ => 0.0,
        };
        Self {
            metric,
            tables,
            centre_terms: vec![Cell::new((NO_CENTRE, 0.0)); slots],
            no_centre_term,
            prepared,
        }
    }

    /// The prepared query.
    pub fn prepared(&self) -> &[f32] {
        &self.prepared
    }

    /// `<b, q>` for code bytes `code` (whole code words: a multiple of 8 bytes, so the tables
    /// come in whole rounds of [`SIGNED_SUM_LANES`]).
    #[inline]
    pub fn signed_sum(&self, code: &[u8]) -> f32 {
        debug_assert_eq!(code.len() * BYTE_BITS / TABLE_BITS, self.tables.len());
        let mut sums = [0.0_f32; SIGNED_SUM_LANES];
        let low = |byte: u8| usize::from(byte & 0x0f);
        let high = |byte: u8| usize::from(byte >> TABLE_BITS);
        for (tables, bytes) in self
            .tables
            .chunks_exact(SIGNED_SUM_LANES)
            .zip(code.chunks_exact(SIGNED_SUM_LANES / 2))
        {
            sums[0] += tables[0][low(bytes[0])];
            sums[1] += tables[1][high(bytes[0])];
            sums[2] += tables[2][low(bytes[1])];
            sums[3] += tables[3][high(bytes[1])];
        }
        (sums[0] + sums[1]) + (sums[2] + sums[3])
    }

    /// `term(centre)` (see the module table), computed at first use.
    #[inline]
    fn term(&self, centres: &Centres, centre: u32) -> f32 {
        if centre == NO_CENTRE {
            return self.no_centre_term;
        }
        let slot = centre as usize & (self.centre_terms.len() - 1);
        let cell = &self.centre_terms[slot];
        let (cached_centre, cached) = cell.get();
        if cached_centre == centre {
            return cached;
        }
        let dot = centres.compact(centre).dot(&self.prepared);
        let term = match self.metric {
            Metric::Euclidean => self.no_centre_term - 2.0 * dot,
            _ => -dot,
        };
        cell.set((centre, term));
        term
    }

    /// The estimated ordering distance to the record `bytes` (a `CentredCodes` record of
    /// this query's dimensions, coded against `centres`).
    #[inline]
    pub fn estimate(&self, centres: &Centres, bytes: &[u8]) -> f32 {
        let record = CodedRecord::read(bytes, self.prepared.len());
        record.bias
            + self.term(centres, record.centre)
            + record.scale * self.signed_sum(record.code)
    }
}

/// The estimate computed the slow way, in `f64`, from the decoded signs and the 8-bit centre
/// (tests rely on it).
pub fn reference_estimate(
    metric: Metric,
    prepared: &[f32],
    centres: &Centres,
    bytes: &[u8],
) -> f32 {
    let record = CodedRecord::read(bytes, prepared.len());
    let signed: f64 = prepared
        .iter()
        .enumerate()
        .map(|(index, &value)| {
            let set = record.code[index / BYTE_BITS] >> (index % BYTE_BITS) & 1 == 1;
            if set {
                f64::from(value)
            } else {
                -f64::from(value)
            }
        })
        .sum();
    let centre_dot: f64 = if record.centre == NO_CENTRE {
        0.0
    } else {
        let compact = centres.compact(record.centre);
        prepared
            .iter()
            .zip(compact.values)
            .map(|(q, c)| f64::from(*q) * f64::from(*c) * f64::from(compact.step))
            .sum()
    };
    let norm_square: f64 = prepared.iter().map(|q| f64::from(*q).powi(2)).sum();
    let term = match metric {
        Metric::Euclidean => norm_square - 2.0 * centre_dot,
        _ => -centre_dot,
    };
    (f64::from(record.bias) + term + f64::from(record.scale) * signed) as f32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vector::random::SplitMix64;
    use crate::vector::records::PayloadKind;

    const METRICS: [Metric; 3] = [Metric::Cosine, Metric::DotProduct, Metric::Euclidean];

    fn random_vector(random: &mut SplitMix64, dimensions: usize) -> Vec<f32> {
        (0..dimensions)
            .map(|_| random.next_gaussian_f32())
            .collect()
    }

    fn encoded(
        metric: Metric,
        vector: &[f32],
        centres: &Centres,
        centre: u32,
    ) -> (RecordLayout, Vec<u8>) {
        let layout = RecordLayout {
            kind: PayloadKind::CentredCodes,
            dimensions: vector.len(),
        };
        let mut bytes = Vec::new();
        encode_record(layout, metric, 7, vector, centres, centre, &mut bytes);
        (layout, bytes)
    }

    #[test]
    fn table_estimates_equal_the_scalar_reference() {
        let seed = 41;
        println!("seed {seed}");
        let mut random = SplitMix64::new(seed);
        for metric in METRICS {
            for dimensions in [1, 7, 8, 63, 64, 65, 128, 384, 769] {
                let mut centres = Centres::new(dimensions);
                let mut centre = random_vector(&mut random, dimensions);
                metric.prepare(&mut centre);
                centres.push(0, &centre);
                for with_centre in [false, true] {
                    let mut vector = random_vector(&mut random, dimensions);
                    metric.prepare(&mut vector);
                    let mut query = random_vector(&mut random, dimensions);
                    metric.prepare(&mut query);
                    let number = if with_centre { 0 } else { NO_CENTRE };
                    let (layout, bytes) = encoded(metric, &vector, &centres, number);
                    assert_eq!(bytes.len(), layout.stride());
                    let estimator = EstimateQuery::new(metric, query.clone(), &centres);
                    let fast = estimator.estimate(&centres, &bytes);
                    let reference = reference_estimate(metric, &query, &centres, &bytes);
                    assert!(
                        (fast - reference).abs() <= 1e-4 * reference.abs().max(1.0),
                        "{metric:?} {dimensions} centre {with_centre}: {fast} vs {reference}"
                    );
                }
            }
        }
    }

    /// How far the 8-bit copy of centre `centre` may put `<c, query>` from the floats'.
    fn compact_error_bound(centres: &Centres, centre: u32, query: &[f32]) -> f32 {
        centres.compact(centre).step / 2.0 * query.iter().map(|q| q.abs()).sum::<f32>()
    }

    #[test]
    fn the_compact_centre_dot_stays_within_its_rounding_bound() {
        let seed = 53;
        println!("seed {seed}");
        let mut random = SplitMix64::new(seed);
        let mut errors = Vec::new();
        for dimensions in [1, 8, 33, 384] {
            let mut centres = Centres::new(dimensions);
            for centre in 0..20 {
                let mut vector = random_vector(&mut random, dimensions);
                Metric::Cosine.prepare(&mut vector);
                centres.push(centre, &vector);
                let mut query = random_vector(&mut random, dimensions);
                Metric::Cosine.prepare(&mut query);
                let exact = kernels::dot(&vector, &query);
                let compact = centres.compact(centre).dot(&query);
                let bound = compact_error_bound(&centres, centre, &query);
                assert!(
                    (compact - exact).abs() <= bound + 1e-6,
                    "{dimensions}: {compact} vs {exact}, bound {bound}"
                );
                if dimensions == 384 {
                    errors.push((compact - exact).abs());
                }
            }
        }
        let mean = errors.iter().sum::<f32>() / errors.len() as f32;
        println!("mean error at 384 dimensions: {mean}");
        assert!(mean < 1e-3, "mean error {mean}");
        let mut zero = Centres::new(4);
        zero.push(0, &[0.0; 4]);
        assert_eq!(zero.compact(0).dot(&[1.0, 2.0, 3.0, 4.0]), 0.0);
    }

    #[test]
    fn a_vector_equal_to_its_centre_is_estimated_exactly() {
        let seed = 43;
        println!("seed {seed}");
        let mut random = SplitMix64::new(seed);
        for metric in METRICS {
            let mut vector = random_vector(&mut random, 96);
            metric.prepare(&mut vector);
            let mut centres = Centres::new(96);
            centres.push(0, &vector);
            let (_, bytes) = encoded(metric, &vector, &centres, 0);
            let mut query = random_vector(&mut random, 96);
            metric.prepare(&mut query);
            let estimate =
                EstimateQuery::new(metric, query.clone(), &centres).estimate(&centres, &bytes);
            let exact = metric.reference_distance(&query, &vector);
            // Exact but for the 8-bit centre's rounding (twice it for Euclidean's `-2 <c, q>`).
            let rounding = 2.0 * compact_error_bound(&centres, 0, &query);
            assert!(
                (estimate - exact).abs() <= 1e-4 * exact.abs().max(1.0) + rounding,
                "{metric:?}: {estimate} vs {exact}"
            );
        }
    }

    /// The estimate ranks vectors near a query far better than Hamming distance between codes
    /// does: among 400 vectors around one centre, the true nearest 10 are within the best 40
    /// estimates far more often.
    #[test]
    fn estimates_rank_close_neighbours_better_than_hamming() {
        let seed = 47;
        println!("seed {seed}");
        let mut random = SplitMix64::new(seed);
        let dimensions = 128;
        let metric = Metric::Cosine;
        let base = random_vector(&mut random, dimensions);
        let around = |random: &mut SplitMix64| {
            let mut vector: Vec<f32> = base
                .iter()
                .map(|value| value + 0.5 * random.next_gaussian_f32())
                .collect();
            metric.prepare(&mut vector);
            vector
        };
        let vectors: Vec<Vec<f32>> = (0..400).map(|_| around(&mut random)).collect();
        let mut centres = Centres::new(dimensions);
        centres.push(0, &mean(dimensions, vectors.iter().map(Vec::as_slice)));
        let records: Vec<Vec<u8>> = vectors
            .iter()
            .map(|vector| encoded(metric, vector, &centres, 0).1)
            .collect();
        let (mut estimated_hits, mut hamming_hits) = (0, 0);
        for _ in 0..20 {
            let query = around(&mut random);
            let rank = |score: &dyn Fn(usize) -> f32| {
                let mut order: Vec<usize> = (0..vectors.len()).collect();
                order.sort_by(|a, b| score(*a).total_cmp(&score(*b)));
                order
            };
            let truth = rank(&|index| metric.distance(&query, &vectors[index]));
            let estimator = EstimateQuery::new(metric, query.clone(), &centres);
            let estimated = rank(&|index| estimator.estimate(&centres, &records[index]));
            let query_code = quantization::encode(&query);
            let hamming = rank(&|index| {
                kernels::hamming(&query_code, &quantization::encode(&vectors[index])) as f32
            });
            estimated_hits += truth[..10]
                .iter()
                .filter(|index| estimated[..40].contains(index))
                .count();
            hamming_hits += truth[..10]
                .iter()
                .filter(|index| hamming[..40].contains(index))
                .count();
        }
        println!("estimated {estimated_hits} / 200, Hamming {hamming_hits} / 200");
        assert!(estimated_hits >= 150, "estimated {estimated_hits} / 200");
        assert!(estimated_hits > hamming_hits + 40);
    }

    #[test]
    fn nearest_centre_has_the_smallest_residual() {
        let mut centres = Centres::new(2);
        assert_eq!(centres.nearest(&[0.0, 0.0]), NO_CENTRE);
        centres.push(5, &[1.0, 0.0]);
        centres.push(9, &[0.0, 1.0]);
        assert_eq!(centres.nearest(&[0.1, 0.9]), 1);
        assert_eq!(centres.nearest(&[0.9, 0.1]), 0);
        assert_eq!(centres.len(), 2);
        assert_eq!((centres.of_record(9), centres.record(0)), (Some(1), 5));
        centres.truncate(1);
        assert_eq!((centres.of_record(9), centres.len()), (None, 1));
    }
}
