//! How documents are stored: the JSON bytes as sent (key order kept), behind one tag byte:
//! [`TAG_RAW`] then the JSON, or [`TAG_LZ4`] then the lz4 block (size prepended) when that is
//! smaller.
//!
//! lz4 (`lz4_flex`) was chosen over zstd for speed: documents are decompressed for every
//! displayed hit, and `shard_bench` measured zstd-3 per document at 5 MB/s against lz4's
//! 88 MB/s. On small documents (PyPI, ~155 bytes) neither gains much per document (lz4 1.02,
//! zstd 0.88), hence the raw form; a shared zstd dictionary is the known next step.
//!
//! Invariant: `decode(compress(document_json(document))) == document`, keys in the same order.

use serde_json::{Map, Value};

use super::error::{ShardError, ShardResult};

/// The JSON text of a document, keys in their given order.
pub fn document_json(document: &Map<String, Value>) -> Vec<u8> {
    serde_json::to_vec(document).expect("a JSON map always serializes")
}

/// The stored value holds the JSON as is.
pub const TAG_RAW: u8 = 0;
/// The stored value holds an lz4 block with its size prepended.
pub const TAG_LZ4: u8 = 1;

/// The stored form of a document's JSON: lz4 when it is smaller, raw otherwise.
pub fn compress(json: &[u8]) -> Vec<u8> {
    let compressed = lz4_flex::compress_prepend_size(json);
    let (tag, body) = if compressed.len() < json.len() {
        (TAG_LZ4, compressed.as_slice())
    } else {
        (TAG_RAW, json)
    };
    let mut stored = Vec::with_capacity(1 + body.len());
    stored.push(tag);
    stored.extend_from_slice(body);
    stored
}

/// The JSON bytes of a stored value.
pub fn decompress(stored: &[u8]) -> ShardResult<Vec<u8>> {
    match stored.split_first() {
        Some((&TAG_RAW, json)) => Ok(json.to_vec()),
        Some((&TAG_LZ4, block)) => lz4_flex::decompress_size_prepended(block)
            .map_err(|_| ShardError::corrupted("compressed document")),
        _ => Err(ShardError::corrupted("document tag")),
    }
}

/// The document a stored value holds.
pub fn decode(stored: &[u8]) -> ShardResult<Map<String, Value>> {
    let json = decompress(stored)?;
    serde_json::from_slice(&json).map_err(|_| ShardError::corrupted("document JSON"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_form_round_trips_raw_and_compressed() {
        let small = br#"{"a":1}"#.to_vec();
        assert_eq!(compress(&small)[0], TAG_RAW);
        let large = format!(r#"{{"a":"{}"}}"#, "x".repeat(1000)).into_bytes();
        assert_eq!(compress(&large)[0], TAG_LZ4);
        for json in [small, large] {
            assert_eq!(decompress(&compress(&json)).expect("round trip"), json);
        }
    }
}
