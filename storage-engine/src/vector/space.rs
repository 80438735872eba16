//! The space a graph navigates: its records and the distance between them.
//!
//! A full-precision graph navigates float records with its metric. A binary-quantized graph
//! navigates code records: plain codes with Hamming distance (the `Hamming` metric), centred
//! codes with asymmetric estimates of its metric's distance from the float query (`estimator`);
//! it re-scores its best candidates with the full vectors afterwards.
//!
//! Float records keep vectors as inserted; cosine distances multiply by the records' scales
//! (see `distance`), and a record used as a query is prepared from its floats and scale first
//! (`Space::prepared_floats`).
//!
//! Invariant: a `Query` is prepared for the space it is used with (`Space::prepare_query`).

use super::distance::Metric;
use super::estimator::{Centres, CodedRecord, EstimateQuery};
use super::kernels;
use super::quantization;
use super::records::{PayloadKind, RecordStore};
use super::sketch::Sketch;

/// A query vector prepared for one space.
#[derive(Debug, Clone)]
pub enum Query {
    /// A prepared float vector (normalised for cosine).
    Floats(Vec<f32>),
    /// A 1-bit code.
    Codes(Vec<u64>),
    /// A float query with the lookup tables that estimate distances to centred codes.
    Estimated(Box<EstimateQuery>),
}

/// The centres of a space without any.
static NO_CENTRES: Centres = Centres::empty();

/// Records plus the distance that orders them.
#[derive(Debug, Clone, Copy)]
pub struct Space<'a, R: RecordStore> {
    /// The records navigated.
    pub records: &'a R,
    /// The metric for float records (code records always use Hamming).
    pub metric: Metric,
    /// Distance lower bounds for the records (readers' searches; see `sketch`).
    pub sketch: Option<&'a Sketch>,
    /// The centres centred-code records are coded against (see `estimator`).
    pub centres: &'a Centres,
}

impl<'a, R: RecordStore> Space<'a, R> {
    /// A space over `records` ordered by `metric`.
    pub fn new(records: &'a R, metric: Metric) -> Self {
        Self {
            records,
            metric,
            sketch: None,
            centres: &NO_CENTRES,
        }
    }

    /// The same space, with the centres its centred-code records name.
    pub fn with_centres(self, centres: &'a Centres) -> Self {
        Self { centres, ..self }
    }

    /// The same space, with `sketch` to skip vectors that cannot enter a search's results
    /// (used only when it covers every record, and only for dot-product metrics).
    pub fn with_sketch(self, sketch: Option<&'a Sketch>) -> Self {
        Self { sketch, ..self }
    }

    /// Prepares a user vector (already validated) as a query of this space.
    pub fn prepare_query(&self, vector: &[f32]) -> Query {
        match self.records.layout().kind {
            PayloadKind::Floats => {
                let mut prepared = vector.to_vec();
                self.metric.prepare(&mut prepared);
                Query::Floats(prepared)
            }
            PayloadKind::Codes => Query::Codes(quantization::encode(vector)),
            PayloadKind::CentredCodes => {
                let mut prepared = vector.to_vec();
                self.metric.prepare(&mut prepared);
                Query::Estimated(Box::new(EstimateQuery::new(
                    self.metric,
                    prepared,
                    self.centres,
                )))
            }
        }
    }

    /// Distance from `query` to record `record`.
    #[inline]
    pub fn to_query(&self, query: &Query, record: u32) -> f32 {
        match query {
            Query::Floats(vector) => self.metric.scaled_distance(
                vector,
                self.records.floats(record),
                self.records.scale(record),
            ),
            Query::Codes(code) => kernels::hamming(code, self.records.codes(record)) as f32,
            Query::Estimated(estimator) => {
                estimator.estimate(self.centres, self.records.record_bytes(record))
            }
        }
    }

    /// Hints the processor to start loading record `record` (a neighbour about to be scored):
    /// every cache line of it, so that a distance computed a few neighbours later finds the
    /// whole vector in cache instead of stalling on each line in turn.
    #[inline]
    pub fn prefetch(&self, record: u32) {
        kernels::prefetch(self.records.record_bytes(record));
    }

    /// Distance between two records.
    #[inline]
    pub fn between(&self, left: u32, right: u32) -> f32 {
        match self.records.layout().kind {
            PayloadKind::Floats => self.metric.scaled_distance(
                self.records.floats(left),
                self.records.floats(right),
                self.records.scale(left) * self.records.scale(right),
            ),
            PayloadKind::Codes => {
                kernels::hamming(self.records.codes(left), self.records.codes(right)) as f32
            }
            PayloadKind::CentredCodes => self
                .metric
                .distance(&self.reconstruct(left), &self.reconstruct(right)),
        }
    }

    /// Float record `record`'s vector as the metric prepares vectors (cosine: normalised by its
    /// stored scale), for use as a query or in a centre.
    pub fn prepared_floats(&self, record: u32) -> Vec<f32> {
        let mut vector = Vec::with_capacity(self.records.layout().dimensions);
        self.records
            .prepared_floats(self.metric, record, &mut vector);
        vector
    }

    /// The approximation a centred-code record stands for (record-to-record distances of a
    /// centred-code space; graphs with float copies build their links from the floats).
    pub fn reconstruct(&self, record: u32) -> Vec<f32> {
        let dimensions = self.records.layout().dimensions;
        CodedRecord::read(self.records.record_bytes(record), dimensions).reconstruct(
            self.metric,
            self.centres,
            dimensions,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vector::random::SplitMix64;
    use crate::vector::records::{MemoryRecords, RecordLayout};

    #[test]
    fn cosine_records_compare_as_their_normalised_vectors_whatever_their_norms() {
        let seed = 29;
        println!("seed {seed}");
        let mut random = SplitMix64::new(seed);
        let dimensions = 33;
        let mut records = MemoryRecords::new(RecordLayout {
            kind: PayloadKind::Floats,
            dimensions,
        });
        let mut normalised = Vec::new();
        for id in 0..12 {
            let spread = [1e-3, 1.0, 1e3][id as usize % 3];
            let mut vector: Vec<f32> = (0..dimensions)
                .map(|_| random.next_signed_f32() * spread)
                .collect();
            if id == 4 {
                vector.fill(0.0);
            }
            let mut prepared = vector.clone();
            Metric::Cosine.prepare(&mut prepared);
            // Record 5 as a format-1 file holds it: normalised, with a 0 word.
            if id == 5 {
                records.push(id, 0, &prepared);
            } else {
                records.push(id, Metric::Cosine.stored_scale(&vector), &vector);
            }
            normalised.push(prepared);
        }
        let space = Space::new(&records, Metric::Cosine);
        for left in 0..12 {
            let prepared = space.prepared_floats(left);
            for (value, expected) in prepared.iter().zip(&normalised[left as usize]) {
                assert!((value - expected).abs() < 1e-6, "record {left}");
            }
            for right in 0..12 {
                let expected = Metric::Cosine
                    .reference_distance(&normalised[left as usize], &normalised[right as usize]);
                let between = space.between(left, right);
                assert!(
                    (between - expected).abs() < 1e-5,
                    "{left} {right}: {between} vs {expected}"
                );
                let to_query = space.to_query(&Query::Floats(prepared.clone()), right);
                assert!((to_query - expected).abs() < 1e-5, "{left} {right}");
            }
        }
    }
}
