//! Optimised distance kernels behind a safe API.
//!
//! Two implementations of every kernel exist: a portable one written over fixed-size chunks
//! with independent accumulators (the compiler vectorises it for whatever the build target
//! allows), and on x86_64 an AVX2 + FMA one (POPCNT for Hamming) chosen at run time when the
//! processor has those features. (AVX-512F kernels were measured no faster on 384 dimensions
//! and need Rust 1.89, above the workspace's minimum, so they are not kept.) The public functions pick the best available; both are
//! exported so that tests and benchmarks can compare them with `scalar`.
//!
//! Invariant: every function here returns the same value as its `scalar` counterpart up to
//! floating-point reassociation (relative error well below 1e-4 for the sizes we use).

/// Lanes summed independently by the portable kernels (a multiple of every SIMD width).
const PORTABLE_CHUNK_LANES: usize = 16;
/// Bytes of one cache line: [`prefetch`] steps by it.
const CACHE_LINE_BYTES: usize = 64;

/// Hints the processor to start loading every cache line of `bytes` (the memory a kernel is
/// about to read). Only a hint: it never faults, not even on a mapped page that is not
/// resident, and does nothing where the target has no prefetch instruction.
#[inline]
pub fn prefetch(bytes: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        for line in bytes.chunks(CACHE_LINE_BYTES) {
            // SAFETY: SSE is part of the x86_64 baseline; a prefetch is only a hint, never
            // faults, and the address lies inside `bytes`.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(line.as_ptr().cast::<i8>()) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bytes;
}

/// The inner product of two equally long vectors, with the fastest kernel available.
#[inline]
pub fn dot(left: &[f32], right: &[f32]) -> f32 {
    assert_eq!(
        left.len(),
        right.len(),
        "vectors of one graph share their dimensions"
    );
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx2_fma() {
            // SAFETY: the processor supports AVX2 and FMA (checked just above), and the two
            // slices have equal lengths (asserted above).
            return unsafe { x86::dot_avx2(left, right) };
        }
    }
    portable_dot(left, right)
}

/// The inner product of a float vector with an equally long 8-bit one, with the fastest
/// kernel available.
#[inline]
pub fn dot_i8(left: &[f32], right: &[i8]) -> f32 {
    assert_eq!(
        left.len(),
        right.len(),
        "vectors of one graph share their dimensions"
    );
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx2_fma() {
            // SAFETY: the processor supports AVX2 and FMA (checked just above), and the two
            // slices have equal lengths (asserted above).
            return unsafe { x86::dot_i8_avx2(left, right) };
        }
    }
    portable_dot_i8(left, right)
}

/// The squared Euclidean distance between two equally long vectors, with the fastest kernel.
#[inline]
pub fn squared_euclidean(left: &[f32], right: &[f32]) -> f32 {
    assert_eq!(
        left.len(),
        right.len(),
        "vectors of one graph share their dimensions"
    );
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx2_fma() {
            // SAFETY: the processor supports AVX2 and FMA (checked just above), and the two
            // slices have equal lengths (asserted above).
            return unsafe { x86::squared_euclidean_avx2(left, right) };
        }
    }
    portable_squared_euclidean(left, right)
}

/// The number of differing bits between two equally long bit strings, with the fastest kernel.
#[inline]
pub fn hamming(left: &[u64], right: &[u64]) -> u32 {
    assert_eq!(
        left.len(),
        right.len(),
        "codes of one graph share their length"
    );
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("popcnt") {
            // SAFETY: the processor supports POPCNT (checked just above).
            return unsafe { x86::hamming_popcnt(left, right) };
        }
    }
    portable_hamming(left, right)
}

/// Whether the AVX2 + FMA kernels may run (the detection is cached by the standard library).
#[cfg(target_arch = "x86_64")]
#[inline]
pub fn has_avx2_fma() -> bool {
    std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
}

/// The AVX2 + FMA inner product, if the processor has those features (for comparisons).
#[cfg(target_arch = "x86_64")]
pub fn avx2_dot(left: &[f32], right: &[f32]) -> Option<f32> {
    assert_eq!(
        left.len(),
        right.len(),
        "vectors of one graph share their dimensions"
    );
    // SAFETY: features checked first; lengths asserted above.
    has_avx2_fma().then(|| unsafe { x86::dot_avx2(left, right) })
}

/// The AVX2 + FMA squared Euclidean distance, if the processor has those features.
#[cfg(target_arch = "x86_64")]
pub fn avx2_squared_euclidean(left: &[f32], right: &[f32]) -> Option<f32> {
    assert_eq!(
        left.len(),
        right.len(),
        "vectors of one graph share their dimensions"
    );
    // SAFETY: features checked first; lengths asserted above.
    has_avx2_fma().then(|| unsafe { x86::squared_euclidean_avx2(left, right) })
}

/// The AVX2 + FMA inner product over raw pointers (the search loops' kernel, chosen once
/// per query by `scorer::dispatch`).
///
/// # Safety
/// The processor supports AVX2 and FMA (`has_avx2_fma`), and both pointers address `length`
/// readable floats.
#[cfg(target_arch = "x86_64")]
#[inline]
pub unsafe fn dot_avx2_raw(left: *const f32, right: *const f32, length: usize) -> f32 {
    // SAFETY: guaranteed by the caller.
    unsafe { x86::dot_avx2_raw(left, right, length) }
}

/// The AVX2 + FMA squared Euclidean distance over raw pointers (see `dot_avx2_raw`).
///
/// # Safety
/// The processor supports AVX2 and FMA (`has_avx2_fma`), and both pointers address `length`
/// readable floats.
#[cfg(target_arch = "x86_64")]
#[inline]
pub unsafe fn squared_euclidean_avx2_raw(
    left: *const f32,
    right: *const f32,
    length: usize,
) -> f32 {
    // SAFETY: guaranteed by the caller.
    unsafe { x86::squared_euclidean_avx2_raw(left, right, length) }
}

/// The float-by-8-bit inner product over fixed-size chunks (vectorised by the compiler).
pub fn portable_dot_i8(left: &[f32], right: &[i8]) -> f32 {
    let mut sums = [0.0_f32; PORTABLE_CHUNK_LANES];
    let left_chunks = left.chunks_exact(PORTABLE_CHUNK_LANES);
    let right_chunks = right.chunks_exact(PORTABLE_CHUNK_LANES);
    let tail: f32 = left_chunks
        .remainder()
        .iter()
        .zip(right_chunks.remainder())
        .map(|(a, b)| a * f32::from(*b))
        .sum();
    for (a, b) in left_chunks.zip(right_chunks) {
        for lane in 0..PORTABLE_CHUNK_LANES {
            sums[lane] += a[lane] * f32::from(b[lane]);
        }
    }
    sums.iter().sum::<f32>() + tail
}

/// Portable chunked inner product.
pub fn portable_dot(left: &[f32], right: &[f32]) -> f32 {
    let mut lanes = [0.0_f32; PORTABLE_CHUNK_LANES];
    let left_chunks = left.chunks_exact(PORTABLE_CHUNK_LANES);
    let right_chunks = right.chunks_exact(PORTABLE_CHUNK_LANES);
    let tail: f32 = left_chunks
        .remainder()
        .iter()
        .zip(right_chunks.remainder())
        .map(|(a, b)| a * b)
        .sum();
    for (a, b) in left_chunks.zip(right_chunks) {
        for lane in 0..PORTABLE_CHUNK_LANES {
            lanes[lane] += a[lane] * b[lane];
        }
    }
    lanes.iter().sum::<f32>() + tail
}

/// Portable chunked squared Euclidean distance.
pub fn portable_squared_euclidean(left: &[f32], right: &[f32]) -> f32 {
    let mut lanes = [0.0_f32; PORTABLE_CHUNK_LANES];
    let left_chunks = left.chunks_exact(PORTABLE_CHUNK_LANES);
    let right_chunks = right.chunks_exact(PORTABLE_CHUNK_LANES);
    let tail: f32 = left_chunks
        .remainder()
        .iter()
        .zip(right_chunks.remainder())
        .map(|(a, b)| (a - b) * (a - b))
        .sum();
    for (a, b) in left_chunks.zip(right_chunks) {
        for lane in 0..PORTABLE_CHUNK_LANES {
            let difference = a[lane] - b[lane];
            lanes[lane] += difference * difference;
        }
    }
    lanes.iter().sum::<f32>() + tail
}

/// Portable Hamming distance.
pub fn portable_hamming(left: &[u64], right: &[u64]) -> u32 {
    left.iter()
        .zip(right)
        .map(|(a, b)| (a ^ b).count_ones())
        .sum()
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    //! AVX2 + FMA kernels; callers guarantee the features and equal lengths.
    use std::arch::x86_64::{
        __m128i, __m256, _mm_add_ps, _mm_add_ss, _mm_cvtss_f32, _mm_loadl_epi64, _mm_movehl_ps,
        _mm_shuffle_ps, _mm256_add_ps, _mm256_castps256_ps128, _mm256_cvtepi8_epi32,
        _mm256_cvtepi32_ps, _mm256_extractf128_ps, _mm256_fmadd_ps, _mm256_loadu_ps,
        _mm256_setzero_ps, _mm256_sub_ps,
    };

    /// Floats per AVX register.
    const AVX_LANES: usize = 8;
    /// Floats consumed per unrolled iteration (four independent accumulators).
    const UNROLLED_LANES: usize = 4 * AVX_LANES;

    /// Sums the eight lanes of a register.
    #[target_feature(enable = "avx2,fma")]
    fn horizontal_sum(value: __m256) -> f32 {
        let low = _mm256_castps256_ps128(value);
        let high = _mm256_extractf128_ps::<1>(value);
        let quad = _mm_add_ps(low, high);
        let pair = _mm_add_ps(quad, _mm_movehl_ps(quad, quad));
        let single = _mm_add_ss(pair, _mm_shuffle_ps::<0x55>(pair, pair));
        _mm_cvtss_f32(single)
    }

    /// # Safety
    /// The processor supports AVX2 and FMA, and `left.len() == right.len()`.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn dot_avx2(left: &[f32], right: &[f32]) -> f32 {
        // SAFETY: both slices hold `left.len()` floats (equal lengths); features as required.
        unsafe { dot_avx2_raw(left.as_ptr(), right.as_ptr(), left.len()) }
    }

    /// # Safety
    /// The processor supports AVX2 and FMA, and both pointers address `length` readable
    /// floats.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn dot_avx2_raw(left: *const f32, right: *const f32, length: usize) -> f32 {
        let mut accumulators = [_mm256_setzero_ps(); 4];
        let mut index = 0;
        while index + UNROLLED_LANES <= length {
            for (lane, accumulator) in accumulators.iter_mut().enumerate() {
                let offset = index + lane * AVX_LANES;
                // SAFETY: offset + 8 <= index + 32 <= length for both pointers.
                let (a, b) = unsafe {
                    (
                        _mm256_loadu_ps(left.add(offset)),
                        _mm256_loadu_ps(right.add(offset)),
                    )
                };
                *accumulator = _mm256_fmadd_ps(a, b, *accumulator);
            }
            index += UNROLLED_LANES;
        }
        while index + AVX_LANES <= length {
            // SAFETY: index + 8 <= length for both pointers.
            let (a, b) = unsafe {
                (
                    _mm256_loadu_ps(left.add(index)),
                    _mm256_loadu_ps(right.add(index)),
                )
            };
            accumulators[0] = _mm256_fmadd_ps(a, b, accumulators[0]);
            index += AVX_LANES;
        }
        let sum = _mm256_add_ps(
            _mm256_add_ps(accumulators[0], accumulators[1]),
            _mm256_add_ps(accumulators[2], accumulators[3]),
        );
        let mut total = horizontal_sum(sum);
        while index < length {
            // SAFETY: index < length for both pointers.
            total += unsafe { *left.add(index) * *right.add(index) };
            index += 1;
        }
        total
    }

    /// # Safety
    /// The processor supports AVX2 and FMA, and `left.len() == right.len()`.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn dot_i8_avx2(left: &[f32], right: &[i8]) -> f32 {
        let length = left.len();
        let (left, right) = (left.as_ptr(), right.as_ptr());
        // Eight 8-bit values at `offset`, widened to floats.
        let widened = |offset: usize| {
            // SAFETY: callers below keep offset + 8 <= length; an unaligned 8-byte load.
            let bytes = unsafe { _mm_loadl_epi64(right.add(offset).cast::<__m128i>()) };
            _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes))
        };
        let mut accumulators = [_mm256_setzero_ps(); 4];
        let mut index = 0;
        while index + UNROLLED_LANES <= length {
            for (lane, accumulator) in accumulators.iter_mut().enumerate() {
                let offset = index + lane * AVX_LANES;
                // SAFETY: offset + 8 <= index + 32 <= length.
                let a = unsafe { _mm256_loadu_ps(left.add(offset)) };
                *accumulator = _mm256_fmadd_ps(a, widened(offset), *accumulator);
            }
            index += UNROLLED_LANES;
        }
        while index + AVX_LANES <= length {
            // SAFETY: index + 8 <= length.
            let a = unsafe { _mm256_loadu_ps(left.add(index)) };
            accumulators[0] = _mm256_fmadd_ps(a, widened(index), accumulators[0]);
            index += AVX_LANES;
        }
        let sum = _mm256_add_ps(
            _mm256_add_ps(accumulators[0], accumulators[1]),
            _mm256_add_ps(accumulators[2], accumulators[3]),
        );
        let mut total = horizontal_sum(sum);
        while index < length {
            // SAFETY: index < length for both pointers.
            total += unsafe { *left.add(index) * f32::from(*right.add(index)) };
            index += 1;
        }
        total
    }

    /// # Safety
    /// The processor supports AVX2 and FMA, and `left.len() == right.len()`.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn squared_euclidean_avx2(left: &[f32], right: &[f32]) -> f32 {
        // SAFETY: both slices hold `left.len()` floats (equal lengths); features as required.
        unsafe { squared_euclidean_avx2_raw(left.as_ptr(), right.as_ptr(), left.len()) }
    }

    /// # Safety
    /// The processor supports AVX2 and FMA, and both pointers address `length` readable
    /// floats.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn squared_euclidean_avx2_raw(
        left: *const f32,
        right: *const f32,
        length: usize,
    ) -> f32 {
        let mut accumulators = [_mm256_setzero_ps(); 4];
        let mut index = 0;
        while index + UNROLLED_LANES <= length {
            for (lane, accumulator) in accumulators.iter_mut().enumerate() {
                let offset = index + lane * AVX_LANES;
                // SAFETY: offset + 8 <= index + 32 <= length for both pointers.
                let (a, b) = unsafe {
                    (
                        _mm256_loadu_ps(left.add(offset)),
                        _mm256_loadu_ps(right.add(offset)),
                    )
                };
                let difference = _mm256_sub_ps(a, b);
                *accumulator = _mm256_fmadd_ps(difference, difference, *accumulator);
            }
            index += UNROLLED_LANES;
        }
        while index + AVX_LANES <= length {
            // SAFETY: index + 8 <= length for both pointers.
            let (a, b) = unsafe {
                (
                    _mm256_loadu_ps(left.add(index)),
                    _mm256_loadu_ps(right.add(index)),
                )
            };
            let difference = _mm256_sub_ps(a, b);
            accumulators[0] = _mm256_fmadd_ps(difference, difference, accumulators[0]);
            index += AVX_LANES;
        }
        let sum = _mm256_add_ps(
            _mm256_add_ps(accumulators[0], accumulators[1]),
            _mm256_add_ps(accumulators[2], accumulators[3]),
        );
        let mut total = horizontal_sum(sum);
        while index < length {
            // SAFETY: index < length for both pointers.
            let difference = unsafe { *left.add(index) - *right.add(index) };
            total += difference * difference;
            index += 1;
        }
        total
    }

    /// # Safety
    /// The processor supports POPCNT.
    #[target_feature(enable = "popcnt")]
    pub unsafe fn hamming_popcnt(left: &[u64], right: &[u64]) -> u32 {
        left.iter()
            .zip(right)
            .map(|(a, b)| (a ^ b).count_ones())
            .sum()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::vector::random::SplitMix64;
    use crate::vector::scalar;

    /// Dimensions that exercise every unrolled, single-register and tail path.
    const DIMENSIONS_TESTED: [usize; 12] = [0, 1, 3, 7, 8, 15, 16, 31, 33, 128, 384, 1023];

    fn close(optimised: f32, reference: f32) -> bool {
        (optimised - reference).abs() <= 1e-4 * reference.abs().max(1.0)
    }

    #[test]
    fn float_kernels_match_the_scalar_reference() {
        let seed = 7;
        println!("seed {seed}");
        let mut random = SplitMix64::new(seed);
        for dimensions in DIMENSIONS_TESTED {
            let left: Vec<f32> = (0..dimensions).map(|_| random.next_signed_f32()).collect();
            let right: Vec<f32> = (0..dimensions).map(|_| random.next_signed_f32()).collect();
            let reference_dot = scalar::dot(&left, &right);
            let reference_l2 = scalar::squared_euclidean(&left, &right);
            assert!(
                close(dot(&left, &right), reference_dot),
                "dot at {dimensions}"
            );
            assert!(
                close(portable_dot(&left, &right), reference_dot),
                "portable dot {dimensions}"
            );
            assert!(
                close(squared_euclidean(&left, &right), reference_l2),
                "l2 at {dimensions}"
            );
            assert!(
                close(portable_squared_euclidean(&left, &right), reference_l2),
                "portable l2 at {dimensions}"
            );
            #[cfg(target_arch = "x86_64")]
            {
                if let Some(value) = avx2_dot(&left, &right) {
                    assert!(close(value, reference_dot), "avx2 dot at {dimensions}");
                }
                if let Some(value) = avx2_squared_euclidean(&left, &right) {
                    assert!(close(value, reference_l2), "avx2 l2 at {dimensions}");
                }
            }
        }
    }

    #[test]
    fn eight_bit_dot_kernels_match_the_scalar_reference() {
        let seed = 13;
        println!("seed {seed}");
        let mut random = SplitMix64::new(seed);
        for dimensions in DIMENSIONS_TESTED {
            let left: Vec<f32> = (0..dimensions).map(|_| random.next_signed_f32()).collect();
            let right: Vec<i8> = (0..dimensions)
                .map(|_| (random.next_u64() % 255) as i16 - 127)
                .map(|value| value as i8)
                .collect();
            let reference: f32 = left
                .iter()
                .zip(&right)
                .map(|(a, b)| f64::from(*a) * f64::from(*b))
                .sum::<f64>() as f32;
            let scale = 127.0 * (dimensions as f32).sqrt().max(1.0);
            let near = |value: f32| (value - reference).abs() <= 1e-5 * scale;
            assert!(near(dot_i8(&left, &right)), "dot_i8 at {dimensions}");
            assert!(
                near(portable_dot_i8(&left, &right)),
                "portable dot_i8 at {dimensions}"
            );
        }
    }

    #[test]
    fn hamming_kernels_match_the_scalar_reference() {
        let seed = 11;
        println!("seed {seed}");
        let mut random = SplitMix64::new(seed);
        for words in [0, 1, 2, 6, 12, 48] {
            let left: Vec<u64> = (0..words).map(|_| random.next_u64()).collect();
            let right: Vec<u64> = (0..words).map(|_| random.next_u64()).collect();
            let reference = scalar::hamming(&left, &right);
            assert_eq!(hamming(&left, &right), reference);
            assert_eq!(portable_hamming(&left, &right), reference);
        }
    }
}
