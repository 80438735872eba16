//! The persisted state of one graph (key `state` of its metadata tree), plus the live-id and
//! buffer bitmaps (keys `live` and `buffer`, serialized roaring bitmaps).
//!
//! Layout of `state`, version 2, little-endian, `STATE_BYTES` long:
//!
//! | offset | size | field                                  |
//! |--------|------|----------------------------------------|
//! | 0      | 1    | format version (2)                     |
//! | 1      | 1    | metric code                            |
//! | 2      | 1    | binary quantized (0/1)                 |
//! | 3      | 1    | entry point present (0/1)              |
//! | 4      | 4    | dimensions                             |
//! | 8      | 2    | m                                      |
//! | 10     | 2    | m0                                     |
//! | 12     | 4    | ef_construction                        |
//! | 16     | 4    | ef_search                              |
//! | 20     | 4    | merge threshold (vectors)              |
//! | 24     | 8    | seed                                   |
//! | 32     | 8    | exact-search candidates minimum        |
//! | 40     | 8    | level sampler state                    |
//! | 48     | 4    | entry point record                     |
//! | 52     | 1    | entry point level                      |
//! | 53     | 3    | zero                                   |
//! | 56     | 4    | committed record count                 |
//! | 60     | 4    | committed centre count (see `estimator`) |
//!
//! Version 1 had zero at 60 and, for binary quantization with full vectors, plain Hamming
//! codes as navigation records (version 2 writes centred codes there, see `estimator`): a
//! version-1 state is read when its records are laid out as in version 2 (no binary
//! quantization, or the `Hamming` metric), and refused otherwise (the graph must be rebuilt),
//! so old records are never misread.
//!
//! Invariant: decoding validates every field (`GraphParameters::validate`, known metric,
//! entry point below the record count, centres only in graphs with centred codes and never
//! more than records); bad bytes are `Corrupted`.

use crate::vector::distance::Metric;
use crate::vector::error::VectorError;
use crate::vector::graph::EntryPoint;
use crate::vector::parameters::GraphParameters;

/// Bytes of the encoded state.
pub const STATE_BYTES: usize = 64;
/// Format version written.
const STATE_VERSION: u8 = 2;
/// The version before centred codes (still read for graphs without them).
const STATE_VERSION_HAMMING_CODES: u8 = 1;

/// A graph's persisted state.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphState {
    /// The graph's parameters.
    pub parameters: GraphParameters,
    /// The level sampler's state.
    pub random_state: u64,
    /// The entry point.
    pub entry_point: Option<EntryPoint>,
    /// Records `0..record_count` of the vector files are durable and may be referenced.
    pub record_count: u32,
    /// Centres `0..centre_count` are committed (binary quantization with full vectors).
    pub centre_count: u32,
}

/// Whether a graph with `parameters` stores centred codes (and centres).
pub fn has_centred_codes(parameters: &GraphParameters) -> bool {
    parameters.binary_quantized && parameters.keeps_full_vectors()
}

/// Encodes `state`.
pub fn encode_state(state: &GraphState) -> [u8; STATE_BYTES] {
    let parameters = &state.parameters;
    let mut bytes = [0_u8; STATE_BYTES];
    bytes[0] = STATE_VERSION;
    bytes[1] = parameters.metric.code();
    bytes[2] = u8::from(parameters.binary_quantized);
    bytes[3] = u8::from(state.entry_point.is_some());
    let narrow = |value: usize| u32::try_from(value).unwrap_or(u32::MAX).to_le_bytes();
    bytes[4..8].copy_from_slice(&narrow(parameters.dimensions));
    bytes[8..10].copy_from_slice(&(parameters.m as u16).to_le_bytes());
    bytes[10..12].copy_from_slice(&(parameters.m0 as u16).to_le_bytes());
    bytes[12..16].copy_from_slice(&narrow(parameters.ef_construction));
    bytes[16..20].copy_from_slice(&narrow(parameters.ef_search));
    bytes[20..24].copy_from_slice(&narrow(parameters.merge_threshold_vectors));
    bytes[24..32].copy_from_slice(&parameters.seed.to_le_bytes());
    bytes[32..40].copy_from_slice(&parameters.exact_search_candidates_min.to_le_bytes());
    bytes[40..48].copy_from_slice(&state.random_state.to_le_bytes());
    if let Some(entry_point) = state.entry_point {
        bytes[48..52].copy_from_slice(&entry_point.record.to_le_bytes());
        bytes[52] = entry_point.level;
    }
    bytes[56..60].copy_from_slice(&state.record_count.to_le_bytes());
    bytes[60..64].copy_from_slice(&state.centre_count.to_le_bytes());
    bytes
}

fn read_u32(bytes: &[u8], offset: usize) -> u32 {
    u32::from_le_bytes([
        bytes[offset],
        bytes[offset + 1],
        bytes[offset + 2],
        bytes[offset + 3],
    ])
}

fn read_u64(bytes: &[u8], offset: usize) -> u64 {
    let mut word = [0_u8; 8];
    word.copy_from_slice(&bytes[offset..offset + 8]);
    u64::from_le_bytes(word)
}

/// Decodes and validates a state.
pub fn decode_state(bytes: &[u8]) -> Result<GraphState, VectorError> {
    let corrupted = |what: &str| VectorError::Corrupted(format!("graph state: {what}"));
    if bytes.len() != STATE_BYTES
        || (bytes[0] != STATE_VERSION && bytes[0] != STATE_VERSION_HAMMING_CODES)
    {
        return Err(corrupted("unknown version or length"));
    }
    let metric = Metric::from_code(bytes[1]).ok_or_else(|| corrupted("unknown metric"))?;
    let mut parameters = GraphParameters::new(metric, read_u32(bytes, 4) as usize);
    parameters.binary_quantized = bytes[2] == 1;
    parameters.m = usize::from(u16::from_le_bytes([bytes[8], bytes[9]]));
    parameters.m0 = usize::from(u16::from_le_bytes([bytes[10], bytes[11]]));
    parameters.ef_construction = read_u32(bytes, 12) as usize;
    parameters.ef_search = read_u32(bytes, 16) as usize;
    parameters.merge_threshold_vectors = read_u32(bytes, 20) as usize;
    parameters.seed = read_u64(bytes, 24);
    parameters.exact_search_candidates_min = read_u64(bytes, 32);
    parameters
        .validate()
        .map_err(|_| corrupted("invalid parameters"))?;
    let record_count = read_u32(bytes, 56);
    let entry_point = match bytes[3] {
        0 => None,
        1 => Some(EntryPoint {
            record: read_u32(bytes, 48),
            level: bytes[52],
        }),
        _ => return Err(corrupted("bad entry point flag")),
    };
    if entry_point.is_some_and(|entry| entry.record >= record_count) {
        return Err(corrupted("entry point past the records"));
    }
    let centre_count = read_u32(bytes, 60);
    let centred = has_centred_codes(&parameters);
    if bytes[0] == STATE_VERSION_HAMMING_CODES && centred {
        return Err(corrupted(
            "format 1 binary-quantized graph (Hamming codes): rebuild it with this version",
        ));
    }
    if (centre_count > 0 && !centred) || centre_count > record_count {
        return Err(corrupted("centre count"));
    }
    Ok(GraphState {
        parameters,
        random_state: read_u64(bytes, 40),
        entry_point,
        record_count,
        centre_count,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn states_round_trip_and_bad_bytes_are_rejected() {
        let mut parameters = GraphParameters::new(Metric::DotProduct, 384);
        parameters.binary_quantized = true;
        parameters.m = 12;
        let state = GraphState {
            parameters,
            random_state: 99,
            entry_point: Some(EntryPoint {
                record: 4,
                level: 3,
            }),
            record_count: 10,
            centre_count: 3,
        };
        let bytes = encode_state(&state);
        assert_eq!(decode_state(&bytes).expect("decode_state succeeds"), state);
        let mut damaged = bytes;
        damaged[60] = 11;
        assert!(decode_state(&damaged).is_err(), "more centres than records");
        let mut damaged = bytes;
        damaged[1] = 77;
        assert!(decode_state(&damaged).is_err());
        let mut damaged = bytes;
        damaged[56] = 2;
        assert!(decode_state(&damaged).is_err());
        assert!(decode_state(&bytes[..10]).is_err());
    }

    #[test]
    fn format_1_states_are_read_or_refused_never_misread() {
        let float_state = GraphState {
            parameters: GraphParameters::new(Metric::Cosine, 8),
            random_state: 5,
            entry_point: None,
            record_count: 4,
            centre_count: 0,
        };
        let mut hamming_parameters = GraphParameters::new(Metric::Hamming, 64);
        hamming_parameters.binary_quantized = true;
        let hamming_state = GraphState {
            parameters: hamming_parameters,
            ..float_state.clone()
        };
        for state in [float_state, hamming_state] {
            let mut bytes = encode_state(&state);
            bytes[0] = STATE_VERSION_HAMMING_CODES;
            assert_eq!(
                decode_state(&bytes).expect("same records in format 1"),
                state
            );
        }
        let mut quantized = GraphParameters::new(Metric::Euclidean, 8);
        quantized.binary_quantized = true;
        let mut bytes = encode_state(&GraphState {
            parameters: quantized,
            random_state: 5,
            entry_point: None,
            record_count: 4,
            centre_count: 0,
        });
        assert!(decode_state(&bytes).is_ok());
        bytes[0] = STATE_VERSION_HAMMING_CODES;
        let refused = decode_state(&bytes).expect_err("Hamming codes of format 1 are refused");
        assert!(refused.to_string().contains("rebuild"), "{refused}");
    }
}
