//! The distances a graph can be built for, and how vectors are prepared for them.
//!
//! Every distance here is an *ordering distance*: smaller means closer, and it is cheap to
//! compute. `Metric::user_distance` turns it into the value shown to users.
//!
//! | metric      | stored float vector     | ordering distance          | user distance         |
//! |-------------|-------------------------|----------------------------|-----------------------|
//! | Cosine      | as given, + `1 / ‖v‖`   | `1 - dot(q̂, v) * scale(v)` | `1 - cosine`          |
//! | Euclidean   | as given                | squared Euclidean          | Euclidean             |
//! | DotProduct  | as given                | `-dot`                     | `-dot`                |
//! | Hamming     | 1 bit per dimension     | differing bits             | differing bits / dims |
//!
//! Queries are *prepared* (`Metric::prepare`: cosine normalises them, `q̂`). Float records keep
//! the vector exactly as inserted; a cosine record also keeps its scale, the `f32` inverse norm
//! `1 / ‖v‖` (`Metric::stored_scale`, in the record header, see `records`), so that
//! `v * scale(v)` is the prepared vector and the ordering distance needs one multiply more than
//! with normalised records, not a second copy of the vector. Between two cosine records the
//! distance is `1 - dot(a, b) * (scale(a) * scale(b))`. A stored scale word of 0 reads as scale
//! 1.0: right for zero vectors (their dot is 0 anyway) and for the records of format-1 vector
//! files, which stored cosine vectors normalised with a 0 word. Euclidean and dot-product
//! records store a 0 word and their distances ignore the scale. Code records (binary
//! quantization) are encoded from the prepared vector.
//!
//! Invariants: `scaled_distance(a, b, 1.0) == distance(a, b)` bit for bit (a product by 1.0 is
//! exact); for `Hamming` a dimension's bit is 1 exactly when its value is `> 0.0`, the same
//! rule binary quantization uses (see `quantization`).

use super::kernels;
use super::quantization;
use super::scalar;

/// A distance between vectors of one graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Metric {
    /// Angle between vectors (records keep their inverse norm, see the module table).
    Cosine,
    /// Straight-line distance.
    Euclidean,
    /// Negated inner product (larger products are closer).
    DotProduct,
    /// Differing sign bits (vectors are stored as 1-bit codes).
    Hamming,
}

impl Metric {
    /// A stable number for on-disk metadata.
    pub fn code(self) -> u8 {
        match self {
            Metric::Cosine => 0,
            Metric::Euclidean => 1,
            Metric::DotProduct => 2,
            Metric::Hamming => 3,
        }
    }

    /// The metric stored under `code`, if any.
    pub fn from_code(code: u8) -> Option<Self> {
        match code {
            0 => Some(Metric::Cosine),
            1 => Some(Metric::Euclidean),
            2 => Some(Metric::DotProduct),
            3 => Some(Metric::Hamming),
            _ => None,
        }
    }

    /// Prepares a float vector for storage or querying under this metric (cosine normalises;
    /// a zero vector stays zero). Hamming vectors are binarised separately.
    pub fn prepare(self, vector: &mut [f32]) {
        if self == Metric::Cosine {
            let norm = kernels::dot(vector, vector).sqrt();
            if norm > 0.0 {
                vector.iter_mut().for_each(|value| *value /= norm);
            }
        }
    }

    /// The scale word a float record of `vector` (as inserted, not prepared) stores in its
    /// header: for `Cosine` the `f32` bits of `1 / ‖vector‖` (0 for a zero vector, read as
    /// scale 1.0), for the other metrics 0. The norm is summed in `f64`, so that no finite
    /// vector overflows it.
    pub fn stored_scale(self, vector: &[f32]) -> u32 {
        if self != Metric::Cosine {
            return 0;
        }
        let squares: f64 = vector.iter().map(|&value| f64::from(value).powi(2)).sum();
        if squares > 0.0 {
            ((1.0 / squares.sqrt()) as f32).to_bits()
        } else {
            0
        }
    }

    /// The ordering distance between two prepared float vectors, with the optimised kernels.
    /// For `Hamming` the vectors are compared by their sign bits.
    #[inline]
    pub fn distance(self, left: &[f32], right: &[f32]) -> f32 {
        self.scaled_distance(left, right, 1.0)
    }

    /// The ordering distance between the prepared `query` and a float record's stored vector
    /// `record` of scale `scale` (the record's `RecordStore::scale`; for two records, the
    /// product of both scales), with the optimised kernels. Only `Cosine` uses the scale.
    #[inline]
    pub fn scaled_distance(self, query: &[f32], record: &[f32], scale: f32) -> f32 {
        match self {
            Metric::Cosine => 1.0 - kernels::dot(query, record) * scale,
            Metric::Euclidean => kernels::squared_euclidean(query, record),
            Metric::DotProduct => -kernels::dot(query, record),
            Metric::Hamming => {
                let left_code = quantization::encode(query);
                let right_code = quantization::encode(record);
                kernels::hamming(&left_code, &right_code) as f32
            }
        }
    }

    /// The same distance computed by the scalar reference kernels (tests only rely on it).
    pub fn reference_distance(self, left: &[f32], right: &[f32]) -> f32 {
        match self {
            Metric::Cosine => 1.0 - scalar::dot(left, right),
            Metric::Euclidean => scalar::squared_euclidean(left, right),
            Metric::DotProduct => -scalar::dot(left, right),
            Metric::Hamming => {
                let left_code = quantization::encode(left);
                let right_code = quantization::encode(right);
                scalar::hamming(&left_code, &right_code) as f32
            }
        }
    }

    /// Turns an ordering distance into the distance users see (see the module table).
    pub fn user_distance(self, ordering_distance: f32, dimensions: usize) -> f32 {
        match self {
            Metric::Cosine | Metric::DotProduct => ordering_distance,
            Metric::Euclidean => ordering_distance.max(0.0).sqrt(),
            Metric::Hamming => ordering_distance / dimensions.max(1) as f32,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::vector::random::SplitMix64;

    const METRICS: [Metric; 4] = [
        Metric::Cosine,
        Metric::Euclidean,
        Metric::DotProduct,
        Metric::Hamming,
    ];

    #[test]
    fn every_metric_matches_its_scalar_reference() {
        let seed = 3;
        println!("seed {seed}");
        let mut random = SplitMix64::new(seed);
        for metric in METRICS {
            for dimensions in [1, 5, 64, 100, 384, 769] {
                let mut left: Vec<f32> =
                    (0..dimensions).map(|_| random.next_signed_f32()).collect();
                let mut right: Vec<f32> =
                    (0..dimensions).map(|_| random.next_signed_f32()).collect();
                metric.prepare(&mut left);
                metric.prepare(&mut right);
                let fast = metric.distance(&left, &right);
                let reference = metric.reference_distance(&left, &right);
                assert!(
                    (fast - reference).abs() <= 1e-4 * reference.abs().max(1.0),
                    "{metric:?} at {dimensions}: {fast} vs {reference}"
                );
            }
        }
    }

    #[test]
    fn metric_codes_round_trip() {
        for metric in METRICS {
            assert_eq!(Metric::from_code(metric.code()), Some(metric));
        }
        assert_eq!(Metric::from_code(200), None);
    }

    #[test]
    fn only_cosine_stores_a_scale_the_inverse_norm_and_zero_vectors_store_none() {
        let vector = [3.0_f32, -4.0];
        assert_eq!(Metric::Cosine.stored_scale(&vector), 0.2_f32.to_bits());
        assert_eq!(Metric::Cosine.stored_scale(&[0.0, -0.0]), 0);
        for metric in [Metric::Euclidean, Metric::DotProduct, Metric::Hamming] {
            assert_eq!(metric.stored_scale(&vector), 0, "{metric:?}");
        }
        // Large finite values do not overflow the norm (summed in f64).
        let large = [3e30_f32, 4e30];
        let scale = f32::from_bits(Metric::Cosine.stored_scale(&large));
        assert!((scale * 5e30 - 1.0).abs() < 1e-6, "{scale}");
    }

    #[test]
    fn a_scaled_cosine_distance_is_the_distance_to_the_normalised_vector() {
        let seed = 5;
        println!("seed {seed}");
        let mut random = SplitMix64::new(seed);
        for dimensions in [1, 7, 64, 385] {
            let mut query: Vec<f32> = (0..dimensions).map(|_| random.next_signed_f32()).collect();
            Metric::Cosine.prepare(&mut query);
            let vector: Vec<f32> = (0..dimensions)
                .map(|_| random.next_signed_f32() * 250.0)
                .collect();
            let scale = f32::from_bits(Metric::Cosine.stored_scale(&vector));
            let mut normalised = vector.clone();
            Metric::Cosine.prepare(&mut normalised);
            let scaled = Metric::Cosine.scaled_distance(&query, &vector, scale);
            let expected = Metric::Cosine.reference_distance(&query, &normalised);
            assert!((scaled - expected).abs() < 1e-5, "{scaled} vs {expected}");
            for metric in METRICS {
                assert_eq!(
                    metric.scaled_distance(&query, &vector, 1.0).to_bits(),
                    metric.distance(&query, &vector).to_bits()
                );
            }
            for metric in [Metric::Euclidean, Metric::DotProduct] {
                assert_eq!(
                    metric.scaled_distance(&query, &vector, scale).to_bits(),
                    metric.distance(&query, &vector).to_bits(),
                    "{metric:?} ignores the scale"
                );
            }
        }
    }

    #[test]
    fn cosine_preparation_normalises_and_keeps_zero_vectors() {
        let mut vector = vec![3.0, 4.0];
        Metric::Cosine.prepare(&mut vector);
        assert!((vector[0] - 0.6).abs() < 1e-6 && (vector[1] - 0.8).abs() < 1e-6);
        let mut zero = vec![0.0; 4];
        Metric::Cosine.prepare(&mut zero);
        assert_eq!(zero, vec![0.0; 4]);
    }
}
