//! Compression of whole response bodies, as actix-web's `Compress` middleware decides it:
//! bodies that are empty, `204`/`101` responses, responses that already carry a
//! `content-encoding`, and `image/*` (but SVG) or `video/*` content types stay identity.
//!
//! Invariant: every stream produced decodes, with the standard decoder of its coding, to
//! exactly the body given.

use std::io::Write;

use super::negotiate::Encoding;

/// Brotli parameters of actix-http: quality, window bits, buffer size.
const BROTLI_QUALITY: u32 = 3;
const BROTLI_WINDOW_BITS: u32 = 22;
const BROTLI_BUFFER_BYTES: usize = 32 * 1024;
const BROTLI_BUFFER_BYTES_MIN: usize = 1024;
/// Bodies up to this size use brotli's fast one-pass mode (quality 1), whose tables are
/// sized to the input, instead of quality 3 whose fixed tables cost more to set up than
/// compressing a small body.
const BROTLI_FAST_BODY_BYTES_MAX: usize = 64 * 1024;
const BROTLI_FAST_QUALITY: u32 = 1;

/// Whether a response may be compressed at all (coding aside).
pub(crate) fn is_compressible(
    status: u16,
    body_length: usize,
    content_type: Option<&str>,
    has_content_encoding: bool,
) -> bool {
    if body_length == 0 || status == 204 || status == 101 || has_content_encoding {
        return false;
    }
    content_type.is_none_or(is_compressible_content_type)
}

fn is_compressible_content_type(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or("").trim();
    let Some((kind, subtype)) = essence.split_once('/') else {
        return true;
    };
    if kind.eq_ignore_ascii_case("image") {
        let subtype = subtype.split('+').next().unwrap_or("");
        return subtype.eq_ignore_ascii_case("svg");
    }
    !kind.eq_ignore_ascii_case("video")
}

/// Compresses `body` with `encoding` (identity returns `None`).
///
/// gzip and deflate reuse one compressor per thread (reset between bodies) instead of
/// allocating and zeroing a new one per response; brotli sizes its window to the body.
pub(crate) fn compress(body: &[u8], encoding: Encoding) -> Option<Vec<u8>> {
    if body.len() <= STORED_BODY_BYTES_MAX {
        return stored(body, encoding);
    }
    match encoding {
        Encoding::Identity => None,
        Encoding::Gzip => gzip(body),
        Encoding::Deflate => {
            let mut output = Vec::with_capacity(body.len() / 2 + DEFLATE_SLACK_BYTES);
            ZLIB_COMPRESSOR.with(|compressor| deflate_into(compressor, body, &mut output))?;
            Some(output)
        }
        Encoding::Brotli => brotli(body),
    }
}

/// Bodies up to this size are framed in the coding without being compressed (stored
/// blocks): the bytes saved would not pay for setting up a compressor on the hot path.
pub(crate) const STORED_BODY_BYTES_MAX: usize = 512;

/// `body` in a valid stream of `encoding` made of uncompressed (stored) blocks.
fn stored(body: &[u8], encoding: Encoding) -> Option<Vec<u8>> {
    const FRAMING_BYTES_MAX: usize = 32;
    let length = u16::try_from(body.len()).ok()?;
    let mut output = Vec::with_capacity(body.len() + FRAMING_BYTES_MAX);
    match encoding {
        Encoding::Identity => return None,
        Encoding::Gzip => {
            output.extend_from_slice(&GZIP_HEADER);
            write_stored_deflate_block(&mut output, body, length);
            let mut checksum = flate2::Crc::new();
            checksum.update(body);
            output.extend_from_slice(&checksum.sum().to_le_bytes());
            output.extend_from_slice(&u32::from(length).to_le_bytes());
        }
        Encoding::Deflate => {
            // zlib header: deflate with a 32 KiB window, fastest level, check bits valid.
            output.extend_from_slice(&[0x78, 0x01]);
            write_stored_deflate_block(&mut output, body, length);
            output.extend_from_slice(&adler32(body).to_be_bytes());
        }
        Encoding::Brotli => write_stored_brotli(&mut output, body)?,
    }
    Some(output)
}

/// One final stored deflate block (RFC 1951 §3.2.4).
fn write_stored_deflate_block(output: &mut Vec<u8>, body: &[u8], length: u16) {
    output.push(0x01);
    output.extend_from_slice(&length.to_le_bytes());
    output.extend_from_slice(&(!length).to_le_bytes());
    output.extend_from_slice(body);
}

fn adler32(bytes: &[u8]) -> u32 {
    const MODULUS: u32 = 65_521;
    let (mut low, mut high) = (1u32, 0u32);
    for &byte in bytes {
        low = (low + u32::from(byte)) % MODULUS;
        high = (high + low) % MODULUS;
    }
    (high << 16) | low
}

/// A brotli stream (RFC 7932) of one uncompressed meta-block and an empty last one.
/// Bits, least significant first: WBITS=16 (`0`), ISLAST=0, MNIBBLES=4 (`00`),
/// MLEN-1 on 16 bits, ISUNCOMPRESSED=1, padding to the byte; then the bytes; then
/// ISLAST=1, ISLASTEMPTY=1.
fn write_stored_brotli(output: &mut Vec<u8>, body: &[u8]) -> Option<()> {
    if body.is_empty() {
        // WBITS=16, ISLAST=1, ISLASTEMPTY=1.
        output.push(0b110);
        return Some(());
    }
    let length_minus_one = u32::try_from(body.len() - 1)
        .ok()
        .filter(|length| *length < 1 << 16)?;
    let header: u32 = (length_minus_one << 4) | (1 << 20);
    output.extend_from_slice(&header.to_le_bytes()[..3]);
    output.extend_from_slice(body);
    output.push(0b11);
    Some(())
}

/// Room reserved beyond half the body for compressed output (headers, incompressible data).
const DEFLATE_SLACK_BYTES: usize = 64;
/// gzip member header: magic, deflate method, no flags, no mtime, no extra flags, unknown OS.
const GZIP_HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
/// Smallest brotli window (bits).
const BROTLI_WINDOW_BITS_MIN: u32 = 10;

thread_local! {
    static RAW_DEFLATE_COMPRESSOR: std::cell::RefCell<flate2::Compress> =
        std::cell::RefCell::new(flate2::Compress::new(flate2::Compression::fast(), false));
    static ZLIB_COMPRESSOR: std::cell::RefCell<flate2::Compress> =
        std::cell::RefCell::new(flate2::Compress::new(flate2::Compression::fast(), true));
}

fn gzip(body: &[u8]) -> Option<Vec<u8>> {
    const TRAILER_BYTES: usize = 8;
    let mut output = Vec::with_capacity(
        GZIP_HEADER.len() + body.len() / 2 + DEFLATE_SLACK_BYTES + TRAILER_BYTES,
    );
    output.extend_from_slice(&GZIP_HEADER);
    RAW_DEFLATE_COMPRESSOR.with(|compressor| deflate_into(compressor, body, &mut output))?;
    let mut checksum = flate2::Crc::new();
    checksum.update(body);
    output.extend_from_slice(&checksum.sum().to_le_bytes());
    // ISIZE is the input length modulo 2^32 (RFC 1952).
    output.extend_from_slice(&(body.len() as u32).to_le_bytes());
    Some(output)
}

/// Compresses all of `body` to the end of `output` with the thread's reusable compressor.
fn deflate_into(
    compressor: &std::cell::RefCell<flate2::Compress>,
    body: &[u8],
    output: &mut Vec<u8>,
) -> Option<()> {
    let mut compressor = compressor.try_borrow_mut().ok()?;
    compressor.reset();
    loop {
        let consumed = usize::try_from(compressor.total_in()).ok()?;
        if output.capacity() == output.len() {
            output.reserve(body.len().saturating_sub(consumed) / 2 + DEFLATE_SLACK_BYTES);
        }
        let status = compressor
            .compress_vec(&body[consumed..], output, flate2::FlushCompress::Finish)
            .ok()?;
        if status == flate2::Status::StreamEnd {
            return Some(());
        }
    }
}

fn brotli(body: &[u8]) -> Option<Vec<u8>> {
    let window_bits = usize::BITS - body.len().saturating_sub(1).leading_zeros();
    let quality = if body.len() <= BROTLI_FAST_BODY_BYTES_MAX {
        BROTLI_FAST_QUALITY
    } else {
        BROTLI_QUALITY
    };
    let params = brotli::enc::BrotliEncoderParams {
        quality: quality as i32,
        lgwin: window_bits.clamp(BROTLI_WINDOW_BITS_MIN, BROTLI_WINDOW_BITS) as i32,
        size_hint: body.len(),
        ..brotli::enc::BrotliEncoderParams::default()
    };
    let output = Vec::with_capacity(body.len() / 2 + DEFLATE_SLACK_BYTES);
    let buffer_bytes = BROTLI_BUFFER_BYTES.min(body.len().max(BROTLI_BUFFER_BYTES_MIN));
    let mut encoder = brotli::CompressorWriter::with_params(output, buffer_bytes, &params);
    encoder.write_all(body).ok()?;
    encoder.flush().ok()?;
    Some(encoder.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compressibility_follows_actix_predicate() {
        assert!(is_compressible(200, 10, Some("application/json"), false));
        assert!(is_compressible(200, 10, None, false));
        assert!(is_compressible(200, 10, Some("image/svg+xml"), false));
        assert!(!is_compressible(200, 10, Some("image/png"), false));
        assert!(!is_compressible(200, 10, Some("video/mp4"), false));
        assert!(!is_compressible(200, 0, None, false));
        assert!(!is_compressible(204, 10, None, false));
        assert!(!is_compressible(200, 10, None, true));
    }

    #[test]
    fn every_coding_round_trips() {
        use std::io::Read;
        let body = b"{\"hits\":[]}".repeat(100);
        let gzip = compress(&body, Encoding::Gzip).expect("gzip");
        let mut decoded = Vec::new();
        flate2::read::GzDecoder::new(&gzip[..])
            .read_to_end(&mut decoded)
            .expect("gunzip");
        assert_eq!(decoded, body);
        let deflate = compress(&body, Encoding::Deflate).expect("deflate");
        decoded.clear();
        flate2::read::ZlibDecoder::new(&deflate[..])
            .read_to_end(&mut decoded)
            .expect("inflate");
        assert_eq!(decoded, body);
        let brotli = compress(&body, Encoding::Brotli).expect("brotli");
        decoded.clear();
        brotli::Decompressor::new(&brotli[..], 4096)
            .read_to_end(&mut decoded)
            .expect("unbrotli");
        assert_eq!(decoded, body);
        assert!(compress(&body, Encoding::Identity).is_none());
    }

    #[test]
    fn stored_streams_decode_with_standard_decoders() {
        use std::io::Read;
        for size in [0usize, 1, 2, 100, STORED_BODY_BYTES_MAX] {
            let body: Vec<u8> = (0..size).map(|index| (index * 13 % 256) as u8).collect();
            let mut decoded = Vec::new();
            let gzip = stored(&body, Encoding::Gzip).expect("gzip");
            flate2::read::GzDecoder::new(&gzip[..])
                .read_to_end(&mut decoded)
                .expect("gunzip");
            assert_eq!(decoded, body, "gzip {size}");
            decoded.clear();
            let deflate = stored(&body, Encoding::Deflate).expect("deflate");
            flate2::read::ZlibDecoder::new(&deflate[..])
                .read_to_end(&mut decoded)
                .expect("inflate");
            assert_eq!(decoded, body, "deflate {size}");
            decoded.clear();
            let brotli = stored(&body, Encoding::Brotli).expect("brotli");
            brotli::Decompressor::new(&brotli[..], 4096)
                .read_to_end(&mut decoded)
                .expect("unbrotli");
            assert_eq!(decoded, body, "brotli {size}");
        }
    }

    #[test]
    fn reused_compressors_produce_independent_streams() {
        use std::io::Read;
        for size in [1usize, 17, 1000, 70_000, 300_000] {
            let body: Vec<u8> = (0..size).map(|index| (index * 7 % 251) as u8).collect();
            for _ in 0..2 {
                let mut decoded = Vec::new();
                let gzip = compress(&body, Encoding::Gzip).expect("gzip");
                flate2::read::GzDecoder::new(&gzip[..])
                    .read_to_end(&mut decoded)
                    .expect("gunzip");
                assert_eq!(decoded, body, "gzip {size}");
                decoded.clear();
                let deflate = compress(&body, Encoding::Deflate).expect("deflate");
                flate2::read::ZlibDecoder::new(&deflate[..])
                    .read_to_end(&mut decoded)
                    .expect("inflate");
                assert_eq!(decoded, body, "deflate {size}");
                decoded.clear();
                let brotli = compress(&body, Encoding::Brotli).expect("brotli");
                brotli::Decompressor::new(&brotli[..], 4096)
                    .read_to_end(&mut decoded)
                    .expect("unbrotli");
                assert_eq!(decoded, body, "brotli {size}");
            }
        }
    }
}
