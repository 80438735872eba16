//! Response compression as actix-web's `Compress` middleware (with the `compress-brotli` and
//! `compress-gzip` features Meilisearch enables): negotiation of `Accept-Encoding` and
//! encoding of whole bodies.
//!
//! Rules reproduced:
//! - supported codings: `br`, `gzip`, `deflate` (zlib-wrapped), and identity; `zstd` is not
//!   offered (Meilisearch's actix build lacks it);
//! - items sort by q-value, then by server rank (br > zstd > gzip > deflate > others); the
//!   first supported item with q > 0 wins; otherwise identity if acceptable, else 406;
//! - an item that does not parse (bad q-value) is ignored; a header that is not visible ASCII
//!   is ignored altogether (identity);
//! - bodies that are empty, `204`/`101` responses, responses that already carry a
//!   `content-encoding`, and `image/*` (but SVG) or `video/*` content types stay identity.
//!
//! Invariant: a response is compressed only with a coding the request accepts.

use std::io::Write;

/// Body of the 406 answer when no acceptable coding exists, as actix sends it.
pub(crate) const SUPPORTED_ENCODINGS_TEXT: &str = "br, gzip, deflate";
/// Most items of `Accept-Encoding` considered (the rest are ignored).
pub(crate) const ACCEPT_ENCODING_ITEMS_MAX: usize = 32;
/// Brotli parameters of actix-http: quality, window bits, buffer size.
const BROTLI_QUALITY: u32 = 3;
const BROTLI_WINDOW_BITS: u32 = 22;
const BROTLI_BUFFER_BYTES: usize = 32 * 1024;
const BROTLI_MIN_BUFFER_BYTES: usize = 1024;
/// Bodies up to this size use brotli's fast one-pass mode (quality 1), whose tables are
/// sized to the input, instead of quality 3 whose fixed tables cost more to set up than
/// compressing a small body.
const BROTLI_FAST_BODY_BYTES_MAX: usize = 64 * 1024;
const BROTLI_FAST_QUALITY: u32 = 1;
/// q-values are compared in thousandths, as actix does.
const QUALITY_MAX: u16 = 1000;

/// A response content coding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encoding {
    Identity,
    Brotli,
    Gzip,
    Deflate,
}

impl Encoding {
    /// The `content-encoding` token.
    pub(crate) fn token(self) -> &'static str {
        match self {
            Encoding::Identity => "identity",
            Encoding::Brotli => "br",
            Encoding::Gzip => "gzip",
            Encoding::Deflate => "deflate",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Preference {
    Any,
    Identity,
    Supported(Encoding),
    /// Known to actix but not compiled in (zstd), or unknown.
    Other {
        rank: u8,
    },
}

#[derive(Debug, Clone, Copy)]
struct QualityItem {
    preference: Preference,
    quality: u16,
}

impl QualityItem {
    fn rank(&self) -> u8 {
        if self.quality == 0 {
            return 0;
        }
        match self.preference {
            Preference::Supported(Encoding::Brotli) => 5,
            Preference::Supported(Encoding::Gzip) => 3,
            Preference::Supported(Encoding::Deflate) => 2,
            Preference::Other { rank } => rank,
            Preference::Any | Preference::Identity | Preference::Supported(Encoding::Identity) => 0,
        }
    }
}

/// Chooses the response coding from the request's `Accept-Encoding` values (all headers of
/// that name, in order). `None` means no acceptable coding: answer 406.
pub(crate) fn negotiate<'a>(values: impl Iterator<Item = &'a [u8]>) -> Option<Encoding> {
    const UNUSED: QualityItem = QualityItem {
        preference: Preference::Any,
        quality: 0,
    };
    let mut slots = [UNUSED; ACCEPT_ENCODING_ITEMS_MAX];
    let mut count = 0;
    let mut any_header = false;
    for value in values {
        any_header = true;
        let Ok(text) = std::str::from_utf8(value) else {
            return Some(Encoding::Identity);
        };
        if !text
            .bytes()
            .all(|byte| byte == b'\t' || (0x20..0x7f).contains(&byte))
        {
            return Some(Encoding::Identity);
        }
        let parsed = text
            .split(',')
            .map(str::trim)
            .filter(|item| !item.is_empty())
            .filter_map(parse_item);
        for item in parsed {
            if count < ACCEPT_ENCODING_ITEMS_MAX {
                slots[count] = item;
                count += 1;
            }
        }
    }
    let items = &mut slots[..count];
    if !any_header || items.is_empty() {
        return Some(Encoding::Identity);
    }
    // Stable sort: equal items keep their listed order.
    items.sort_by(|a, b| b.quality.cmp(&a.quality).then(b.rank().cmp(&a.rank())));
    let matched = items
        .iter()
        .filter(|item| item.quality > 0)
        .find_map(|item| match item.preference {
            Preference::Supported(encoding) => Some(encoding),
            _ => None,
        });
    match matched {
        Some(encoding) => Some(encoding),
        None if identity_acceptable(items) => Some(Encoding::Identity),
        None => None,
    }
}

/// `identity` is acceptable unless `identity;q=0`, or `*;q=0` without a better `identity`.
fn identity_acceptable(sorted_items: &[QualityItem]) -> bool {
    for item in sorted_items {
        match item.preference {
            Preference::Identity | Preference::Any => return item.quality > 0,
            _ => {}
        }
    }
    true
}

fn parse_item(item: &str) -> Option<QualityItem> {
    let mut raw_item = item;
    let mut quality = QUALITY_MAX;
    if let Some((value, attribute)) = item.rsplit_once(';') {
        let (value, attribute) = (value.trim(), attribute.trim());
        if attribute.len() < 2 {
            return None;
        }
        if attribute.starts_with("q=") || attribute.starts_with("Q=") {
            quality = parse_quality(&attribute[2..])?;
            raw_item = value;
        }
    }
    Some(QualityItem {
        preference: parse_preference(raw_item.trim()),
        quality,
    })
}

fn parse_quality(text: &str) -> Option<u16> {
    const QUALITY_TEXT_BYTES_MAX: usize = 5;
    if text.len() > QUALITY_TEXT_BYTES_MAX {
        return None;
    }
    let value: f32 = text.parse().ok()?;
    if !(0.0..=1.0).contains(&value) {
        return None;
    }
    // Truncation, not rounding, as actix's `Quality::from_f32`.
    Some((value * f32::from(QUALITY_MAX)) as u16)
}

fn parse_preference(token: &str) -> Preference {
    if token == "*" {
        return Preference::Any;
    }
    let known = [
        ("br", Preference::Supported(Encoding::Brotli)),
        ("gzip", Preference::Supported(Encoding::Gzip)),
        ("deflate", Preference::Supported(Encoding::Deflate)),
        ("identity", Preference::Identity),
        ("zstd", Preference::Other { rank: 4 }),
    ];
    known
        .iter()
        .find(|(name, _)| token.eq_ignore_ascii_case(name))
        .map(|(_, preference)| *preference)
        .unwrap_or(Preference::Other { rank: 1 })
}

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
    let buffer_bytes = BROTLI_BUFFER_BYTES.min(body.len().max(BROTLI_MIN_BUFFER_BYTES));
    let mut encoder = brotli::CompressorWriter::with_params(output, buffer_bytes, &params);
    encoder.write_all(body).ok()?;
    encoder.flush().ok()?;
    Some(encoder.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn negotiate_one(value: &str) -> Option<Encoding> {
        negotiate(std::iter::once(value.as_bytes()))
    }

    #[test]
    fn negotiation_prefers_quality_then_server_rank() {
        assert_eq!(negotiate(std::iter::empty()), Some(Encoding::Identity));
        assert_eq!(negotiate_one(""), Some(Encoding::Identity));
        assert_eq!(negotiate_one("gzip, deflate, br"), Some(Encoding::Brotli));
        assert_eq!(negotiate_one("gzip, deflate"), Some(Encoding::Gzip));
        assert_eq!(negotiate_one("deflate"), Some(Encoding::Deflate));
        assert_eq!(negotiate_one("br;q=0.5, gzip;q=0.8"), Some(Encoding::Gzip));
        assert_eq!(negotiate_one("GZIP"), Some(Encoding::Gzip));
        assert_eq!(negotiate_one("zstd"), Some(Encoding::Identity));
        assert_eq!(negotiate_one("zstd, gzip;q=0.1"), Some(Encoding::Gzip));
        assert_eq!(negotiate_one("*"), Some(Encoding::Identity));
        assert_eq!(negotiate_one("br;q=0, gzip;q=0"), Some(Encoding::Identity));
    }

    #[test]
    fn negotiation_refuses_when_identity_is_excluded() {
        assert_eq!(negotiate_one("identity;q=0"), None);
        assert_eq!(negotiate_one("*;q=0"), None);
        assert_eq!(negotiate_one("zstd, *;q=0"), None);
        assert_eq!(negotiate_one("gzip, *;q=0"), Some(Encoding::Gzip));
        assert_eq!(negotiate_one("identity, *;q=0"), Some(Encoding::Identity));
    }

    #[test]
    fn malformed_items_are_ignored() {
        assert_eq!(negotiate_one("br;q=2, gzip"), Some(Encoding::Gzip));
        assert_eq!(
            negotiate_one("br;q=0.12345, deflate"),
            Some(Encoding::Deflate)
        );
        assert_eq!(negotiate_one("br;x"), Some(Encoding::Identity));
        assert_eq!(negotiate_one("gzip;level=1"), Some(Encoding::Identity));
    }

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
