//! One payload of an export: documents as NDJSON (one JSON object per line), gzip-compressed
//! as they are added, so that building a payload costs one pass over its documents and holds
//! only the compressed bytes.
//!
//! Invariants: a payload holds at least one document once anything was added; its
//! uncompressed size (every line and its newline) is what the caller compares with
//! `payloadSize` ([`Payload::admits`]); a line never contains a newline of its own.

use std::io::Write;

use flate2::Compression;
use flate2::write::GzEncoder;

use crate::errors::ResponseError;

/// The gzip level of export payloads: the fastest. Compressing is the export's main CPU
/// cost, and on JSON the fastest level already divides the bytes by about four, which a
/// network between two servers carries easily; higher levels cost several times the CPU for
/// a few more percent.
pub const PAYLOAD_COMPRESSION_LEVEL: u32 = 1;

/// The byte ending every document of a payload.
const LINE_END: u8 = b'\n';

/// A payload being built.
pub struct Payload {
    encoder: GzEncoder<Vec<u8>>,
    uncompressed_bytes: u64,
    documents: u64,
}

impl Default for Payload {
    fn default() -> Self {
        Payload::new()
    }
}

impl Payload {
    pub fn new() -> Payload {
        Payload {
            encoder: GzEncoder::new(Vec::new(), Compression::new(PAYLOAD_COMPRESSION_LEVEL)),
            uncompressed_bytes: 0,
            documents: 0,
        }
    }

    /// Whether no document was added.
    pub fn is_empty(&self) -> bool {
        self.documents == 0
    }

    pub fn documents(&self) -> u64 {
        self.documents
    }

    /// Whether a document of `json_bytes` may join without passing `payload_bytes_max`
    /// uncompressed bytes; an empty payload admits any document (at least one per payload).
    pub fn admits(&self, json_bytes: usize, payload_bytes_max: u64) -> bool {
        let line_bytes = json_bytes as u64 + 1;
        self.is_empty() || self.uncompressed_bytes.saturating_add(line_bytes) <= payload_bytes_max
    }

    /// Adds one document's JSON (which holds no newline) as a line.
    pub fn push(&mut self, json: &[u8]) -> Result<(), ResponseError> {
        debug_assert!(
            !json.contains(&LINE_END),
            "a document line holds no newline"
        );
        self.encoder
            .write_all(json)
            .and_then(|()| self.encoder.write_all(&[LINE_END]))
            .map_err(compression_error)?;
        self.uncompressed_bytes += json.len() as u64 + 1;
        self.documents += 1;
        Ok(())
    }

    /// The gzip bytes of the payload.
    pub fn finish(self) -> Result<Vec<u8>, ResponseError> {
        self.encoder.finish().map_err(compression_error)
    }
}

fn compression_error(error: std::io::Error) -> ResponseError {
    ResponseError::internal(format!("could not compress an export payload: {error}"))
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    fn gunzip(bytes: &[u8]) -> String {
        let mut text = String::new();
        flate2::read::GzDecoder::new(bytes)
            .read_to_string(&mut text)
            .expect("a payload is valid gzip");
        text
    }

    #[test]
    fn a_payload_is_gzip_ndjson_of_its_documents_in_order() {
        let mut payload = Payload::new();
        assert!(payload.is_empty());
        payload.push(br#"{"id":1,"title":"Carol"}"#).expect("push");
        payload.push(br#"{"id":2}"#).expect("push");
        assert_eq!(payload.documents(), 2);
        let text = gunzip(&payload.finish().expect("finish"));
        assert_eq!(text, "{\"id\":1,\"title\":\"Carol\"}\n{\"id\":2}\n");
    }

    #[test]
    fn the_size_bound_counts_lines_and_admits_one_document_whatever_its_size() {
        let mut payload = Payload::new();
        assert!(
            payload.admits(1_000, 10),
            "an empty payload takes any document"
        );
        payload.push(b"123456789").expect("push");
        // 10 bytes used (9 and the newline): one more byte of JSON needs 2 more.
        assert!(payload.admits(0, 11));
        assert!(!payload.admits(1, 11));
        assert!(payload.admits(1, 12));
    }
}
