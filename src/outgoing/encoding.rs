//! Content codings of response bodies: a `Content-Encoding: gzip` body is decoded before
//! the caller sees it; any other coding is passed through as is.
//!
//! Invariants: a decoded body is never larger than the caller's limit (decoding stops one
//! byte past it); once decoded, the response no longer names the coding or the encoded
//! length.

use std::io::Read;

use flate2::read::MultiGzDecoder;

use super::request::OutgoingResponse;
use super::wire::ReadError;

/// The coding decoded here.
pub const GZIP: &str = "gzip";

/// `response` with its body decoded when it is gzip.
pub fn decode(
    mut response: OutgoingResponse,
    max_bytes: usize,
) -> Result<OutgoingResponse, ReadError> {
    let is_gzip = response
        .header("content-encoding")
        .is_some_and(|coding| coding.trim().eq_ignore_ascii_case(GZIP));
    if !is_gzip || response.body.is_empty() {
        return Ok(response);
    }
    let mut decoded = Vec::new();
    let limit = u64::try_from(max_bytes)
        .unwrap_or(u64::MAX)
        .saturating_add(1);
    MultiGzDecoder::new(response.body.as_slice())
        .take(limit)
        .read_to_end(&mut decoded)
        .map_err(|error| ReadError::Invalid(format!("bad gzip body: {error}")))?;
    if decoded.len() > max_bytes {
        return Err(ReadError::TooLarge(max_bytes));
    }
    response.headers.retain(|(name, _)| {
        !name.eq_ignore_ascii_case("content-encoding")
            && !name.eq_ignore_ascii_case("content-length")
    });
    response.body = decoded;
    Ok(response)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use flate2::Compression;
    use flate2::write::GzEncoder;

    use super::*;

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
        encoder.write_all(bytes).expect("write");
        encoder.finish().expect("finish")
    }

    fn response(coding: &str, body: Vec<u8>) -> OutgoingResponse {
        OutgoingResponse {
            status: 200,
            headers: vec![("Content-Encoding".to_owned(), coding.to_owned())],
            body,
        }
    }

    #[test]
    fn a_gzip_body_is_decoded_and_others_pass_through() {
        let decoded = decode(response("gzip", gzip(b"{\"a\":1}")), 100).expect("decoded");
        assert_eq!(decoded.body, b"{\"a\":1}");
        assert_eq!(decoded.header("content-encoding"), None);
        let plain = decode(response("br", b"raw".to_vec()), 100).expect("as is");
        assert_eq!(plain.body, b"raw");
    }

    #[test]
    fn a_bomb_or_a_broken_body_is_an_error() {
        let bomb = gzip(&[0u8; 10_000]);
        assert!(matches!(
            decode(response("gzip", bomb), 100),
            Err(ReadError::TooLarge(100))
        ));
        assert!(matches!(
            decode(response("gzip", b"not gzip".to_vec()), 100),
            Err(ReadError::Invalid(_))
        ));
    }
}
