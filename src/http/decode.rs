//! Decoding of request bodies sent with a `Content-Encoding` (gzip, deflate, br).
//!
//! Invariant: decoding never produces more than `limit + 1` bytes, so a zip bomb hits the
//! payload limit instead of the memory; the decoded size limit is the raw one.

use std::io::Read;

use super::request::BodyError;

/// Read size of the decoding loop.
const DECODE_CHUNK_BYTES: usize = 64 * 1024;
/// Internal buffer of the brotli decoder.
const BROTLI_DECODER_BUFFER_BYTES: usize = 16 * 1024;

/// A request content coding this server decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ContentCoding {
    Identity,
    Gzip,
    Deflate,
    Brotli,
}

/// Reads the `Content-Encoding` header value: absent, empty or `identity` mean none. The
/// names are actix's (`br`, `gzip`, `deflate`, case-insensitive); note that actix itself
/// decodes any other name as identity, where this layer reports it unsupported.
pub(crate) fn content_coding(value: Option<&[u8]>) -> Result<ContentCoding, BodyError> {
    let Some(value) = value else {
        return Ok(ContentCoding::Identity);
    };
    let text = String::from_utf8_lossy(value);
    let token = text.trim();
    let codings = [
        ("", ContentCoding::Identity),
        ("identity", ContentCoding::Identity),
        ("gzip", ContentCoding::Gzip),
        ("deflate", ContentCoding::Deflate),
        ("br", ContentCoding::Brotli),
    ];
    codings
        .iter()
        .find(|(name, _)| token.eq_ignore_ascii_case(name))
        .map(|(_, coding)| *coding)
        .ok_or_else(|| BodyError::UnsupportedEncoding(token.to_string()))
}

/// Decodes `raw` with `coding`, refusing to produce more than `limit` bytes.
pub(crate) fn decode(
    raw: Vec<u8>,
    coding: ContentCoding,
    limit: u64,
) -> Result<Vec<u8>, BodyError> {
    match coding {
        ContentCoding::Identity => Ok(raw),
        ContentCoding::Gzip => read_bounded(flate2::read::MultiGzDecoder::new(&raw[..]), limit),
        ContentCoding::Deflate => read_bounded(flate2::read::ZlibDecoder::new(&raw[..]), limit),
        ContentCoding::Brotli => read_bounded(
            brotli::Decompressor::new(&raw[..], BROTLI_DECODER_BUFFER_BYTES),
            limit,
        ),
    }
}

fn read_bounded(decoder: impl Read, limit: u64) -> Result<Vec<u8>, BodyError> {
    let mut decoded = Vec::new();
    let mut bounded = decoder.take(limit.saturating_add(1));
    let mut chunk = vec![0u8; DECODE_CHUNK_BYTES];
    loop {
        match bounded.read(&mut chunk) {
            Ok(0) => break,
            Ok(read) => decoded.extend_from_slice(&chunk[..read]),
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(BodyError::MalformedEncoding(error.to_string())),
        }
    }
    if decoded.len() as u64 > limit {
        return Err(BodyError::TooLarge {
            content_length: None,
            limit,
        });
    }
    Ok(decoded)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        encoder.write_all(data).expect("write");
        encoder.finish().expect("finish")
    }

    #[test]
    fn codings_are_recognized_case_insensitively() {
        assert_eq!(content_coding(None), Ok(ContentCoding::Identity));
        assert_eq!(content_coding(Some(b" GZip ")), Ok(ContentCoding::Gzip));
        assert_eq!(content_coding(Some(b"br")), Ok(ContentCoding::Brotli));
        assert_eq!(content_coding(Some(b"deflate")), Ok(ContentCoding::Deflate));
        assert_eq!(
            content_coding(Some(b"zstd")),
            Err(BodyError::UnsupportedEncoding("zstd".to_string()))
        );
    }

    #[test]
    fn a_zip_bomb_stops_at_the_limit() {
        let bomb = gzip(&vec![0u8; 50 * 1024 * 1024]);
        assert!(bomb.len() < 100 * 1024);
        let limit = 1024 * 1024;
        assert_eq!(
            decode(bomb, ContentCoding::Gzip, limit),
            Err(BodyError::TooLarge {
                content_length: None,
                limit
            })
        );
    }

    #[test]
    fn garbage_is_malformed() {
        let result = decode(b"not gzip at all".to_vec(), ContentCoding::Gzip, 1000);
        assert!(matches!(result, Err(BodyError::MalformedEncoding(_))));
    }

    #[test]
    fn exactly_the_limit_is_accepted() {
        let data = vec![7u8; 1000];
        assert_eq!(decode(gzip(&data), ContentCoding::Gzip, 1000), Ok(data));
    }
}
