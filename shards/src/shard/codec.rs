//! How documents are stored: the JSON bytes as sent (key order kept), lz4-compressed.
//!
//! lz4 (`lz4_flex`, size-prepended block format) was chosen over zstd for its decompression
//! speed on the read path (documents are decompressed for every displayed hit); the bench
//! `shard_bench` prints the compression ratio it reaches on real documents.
//!
//! Invariant: `decode(encode(document)) == document`, keys in the same order.

use serde_json::{Map, Value};

use super::error::{ShardError, ShardResult};

/// The JSON text of a document, keys in their given order.
pub fn document_json(document: &Map<String, Value>) -> Vec<u8> {
    serde_json::to_vec(document).expect("a JSON map always serializes")
}

pub fn compress(json: &[u8]) -> Vec<u8> {
    lz4_flex::compress_prepend_size(json)
}

pub fn decompress(stored: &[u8]) -> ShardResult<Vec<u8>> {
    lz4_flex::decompress_size_prepended(stored)
        .map_err(|_| ShardError::corrupted("compressed document"))
}

/// The document a stored value holds.
pub fn decode(stored: &[u8]) -> ShardResult<Map<String, Value>> {
    let json = decompress(stored)?;
    serde_json::from_slice(&json).map_err(|_| ShardError::corrupted("document JSON"))
}
