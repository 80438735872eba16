//! Scalar reference distance kernels: the obvious loops, one element at a time, in `f64`
//! accumulation so that they are a trustworthy yardstick.
//!
//! Invariant: these are never used on a hot path; tests compare every optimised kernel in
//! `kernels` against them within a relative tolerance.

/// The inner product of two equally long vectors.
pub fn dot(left: &[f32], right: &[f32]) -> f32 {
    assert_eq!(
        left.len(),
        right.len(),
        "vectors of one graph share their dimensions"
    );
    let mut sum = 0.0_f64;
    for (a, b) in left.iter().zip(right) {
        sum += f64::from(*a) * f64::from(*b);
    }
    sum as f32
}

/// The squared Euclidean distance between two equally long vectors.
pub fn squared_euclidean(left: &[f32], right: &[f32]) -> f32 {
    assert_eq!(
        left.len(),
        right.len(),
        "vectors of one graph share their dimensions"
    );
    let mut sum = 0.0_f64;
    for (a, b) in left.iter().zip(right) {
        let difference = f64::from(*a) - f64::from(*b);
        sum += difference * difference;
    }
    sum as f32
}

/// The number of differing bits between two equally long bit strings.
pub fn hamming(left: &[u64], right: &[u64]) -> u32 {
    assert_eq!(
        left.len(),
        right.len(),
        "codes of one graph share their length"
    );
    let mut count = 0_u32;
    for (a, b) in left.iter().zip(right) {
        let mut differing = a ^ b;
        while differing != 0 {
            count += 1;
            differing &= differing - 1;
        }
    }
    count
}
