//! Decoding of request bodies sent with a `Content-Encoding` (gzip, deflate, br).
//!
//! Invariant: decoding stops within one bounded step past `limit`, so a zip bomb hits the
//! payload limit instead of the memory; the decoded size limit is the raw one.

use super::bounded_decoder::decode_all;
use super::request::BodyError;

/// A request content coding this server decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ContentCoding {
    Identity,
    Gzip,
    Deflate,
    Brotli,
}

/// Reads the `Content-Encoding` header value: absent, empty or `identity` mean none. The
/// names are actix's (`br`, `gzip`, `deflate`, case-insensitive); any other name is read as
/// identity, as actix reads it for Meilisearch (checked beside Meilisearch 1.50: a JSON body
/// sent with `Content-Encoding: zstd` or `foo` is taken as it is).
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
    Ok(codings
        .iter()
        .find(|(name, _)| token.eq_ignore_ascii_case(name))
        .map_or(ContentCoding::Identity, |(_, coding)| *coding))
}

/// Decodes `raw` with `coding`, refusing to produce more than `limit` bytes (it stops one
/// bounded step past the limit, see [`super::bounded_decoder`]).
pub(crate) fn decode(
    raw: Vec<u8>,
    coding: ContentCoding,
    limit: u64,
) -> Result<Vec<u8>, BodyError> {
    if coding == ContentCoding::Identity {
        return Ok(raw);
    }
    decode_all(&raw, coding, limit).map_err(|error| match error {
        Some(error) => BodyError::MalformedEncoding(format!("{error:?}")),
        None => BodyError::TooLarge {
            content_length: None,
            limit,
        },
    })
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
        assert_eq!(content_coding(Some(b"zstd")), Ok(ContentCoding::Identity));
        assert_eq!(content_coding(Some(b"foo")), Ok(ContentCoding::Identity));
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
