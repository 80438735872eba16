//! The distances a graph can be built for, and how vectors are prepared for them.
//!
//! Every distance here is an *ordering distance*: smaller means closer, and it is cheap to
//! compute. `Metric::user_distance` turns it into the value shown to users.
//!
//! | metric      | stored vector          | ordering distance      | user distance          |
//! |-------------|------------------------|------------------------|------------------------|
//! | Cosine      | normalised to length 1 | `1 - dot`              | `1 - cosine`           |
//! | Euclidean   | as given               | squared Euclidean      | Euclidean              |
//! | DotProduct  | as given               | `-dot`                 | `-dot`                 |
//! | Hamming     | 1 bit per dimension    | differing bits         | differing bits / dims  |
//!
//! Invariant: for `Hamming` a dimension's bit is 1 exactly when its value is `> 0.0`, the same
//! rule binary quantization uses (see `quantization`).

use super::kernels;
use super::quantization;
use super::scalar;

/// A distance between vectors of one graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Metric {
    /// Angle between vectors (vectors are normalised when stored).
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

    /// The ordering distance between two prepared float vectors, with the optimised kernels.
    /// For `Hamming` the vectors are compared by their sign bits.
    #[inline]
    pub fn distance(self, left: &[f32], right: &[f32]) -> f32 {
        match self {
            Metric::Cosine => 1.0 - kernels::dot(left, right),
            Metric::Euclidean => kernels::squared_euclidean(left, right),
            Metric::DotProduct => -kernels::dot(left, right),
            Metric::Hamming => {
                let left_code = quantization::encode(left);
                let right_code = quantization::encode(right);
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
    fn cosine_preparation_normalises_and_keeps_zero_vectors() {
        let mut vector = vec![3.0, 4.0];
        Metric::Cosine.prepare(&mut vector);
        assert!((vector[0] - 0.6).abs() < 1e-6 && (vector[1] - 0.8).abs() < 1e-6);
        let mut zero = vec![0.0; 4];
        Metric::Cosine.prepare(&mut zero);
        assert_eq!(zero, vec![0.0; 4]);
    }
}
