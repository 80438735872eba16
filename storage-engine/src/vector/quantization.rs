//! Binary quantization: one bit per dimension, packed little-endian into 64-bit words.
//!
//! Invariant: bit `i` of the code (word `i / 64`, bit `i % 64`) is 1 exactly when dimension `i`
//! is `> 0.0`; padding bits past the last dimension are 0, so padding never adds distance.

/// Bits in one code word.
pub const CODE_WORD_BITS: usize = 64;

/// Words needed to hold the code of a vector with `dimensions` dimensions.
pub fn code_words(dimensions: usize) -> usize {
    dimensions.div_ceil(CODE_WORD_BITS)
}

/// The 1-bit code of `vector`.
pub fn encode(vector: &[f32]) -> Vec<u64> {
    let mut code = vec![0_u64; code_words(vector.len())];
    encode_into(vector, &mut code);
    code
}

/// Writes the 1-bit code of `vector` into `code` (`code_words(vector.len())` words).
pub fn encode_into(vector: &[f32], code: &mut [u64]) {
    assert_eq!(
        code.len(),
        code_words(vector.len()),
        "a code holds one bit per dimension"
    );
    for (word, chunk) in code.iter_mut().zip(vector.chunks(CODE_WORD_BITS)) {
        let mut bits = 0_u64;
        for (position, value) in chunk.iter().enumerate() {
            if *value > 0.0 {
                bits |= 1 << position;
            }
        }
        *word = bits;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_set_exactly_the_positive_dimensions() {
        let mut vector = vec![-1.0_f32; 130];
        vector[0] = 0.5;
        vector[64] = 2.0;
        vector[129] = 1e-9;
        vector[1] = 0.0;
        let code = encode(&vector);
        assert_eq!(code, vec![1, 1, 1 << 1]);
    }
}
