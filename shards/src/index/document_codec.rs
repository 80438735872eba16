//! How documents are stored: the JSON bytes as sent (key order kept), behind one tag byte:
//! [`TAG_RAW`] then the JSON, [`TAG_LZ4`] then the lz4 block (size prepended), or
//! [`TAG_ZSTD_DICTIONARY`] then the id of one of the shard's document dictionaries (LEB128)
//! and a zstd frame compressed with it. A shard with a dictionary writes that form unless it
//! is no smaller than the JSON; without one, lz4 when it is smaller, else raw.
//!
//! lz4 (`lz4_flex`) was chosen over plain zstd for speed: documents are decompressed for every
//! displayed hit, and `shard_bench` measured zstd-3 per document at 5 MB/s against lz4's
//! 88 MB/s. On small documents (PyPI, ~156 bytes) neither gains much per document (lz4 1.00
//! with the raw fallback, zstd-3 0.89): what documents have in common (keys, recurring
//! values) is in no single one. A dictionary trained from the shard's own documents holds it.
//! `document_codec_bench` on all of PyPI, per document (one core, times vary by ~20% with
//! the machine's load):
//!
//! | form | bytes | compress | decompress |
//! |---|---:|---:|---:|
//! | raw | 156.9 | 73 ns | 34 ns |
//! | lz4, else raw | 155.9 | 371 ns | 65 ns |
//! | zstd-3, 64 KiB dictionary | 64.7 | 1 107 ns | 398 ns |
//! | the same in standard frames (magic number, dictionary id) | 72.7 | 1 102 ns | 390 ns |
//!
//! (Parsing the JSON into a document, which every read does next, takes 767 ns.)
//!
//! Dictionaries (`document_dictionaries`: id → bytes) are trained by the shard (see
//! `apply.rs`, [`DICTIONARY_TRAINING_DOCUMENTS`]); the frames leave out everything the shard
//! knows anyway: no magic number, no checksum (the page store checks its pages), no
//! dictionary id (ours comes first). They keep the content size, which sizes the output.
//!
//! Reading prepares each dictionary once per shard ([`DecoderCache`]) and decompresses with a
//! per-thread context; writing compresses with a [`DocumentEncoder`] per batch, which holds
//! the dictionary loaded into its context.
//!
//! Invariant: `decode(compress(document_json(document))) == document`, keys in the same order,
//! for every form; bytes that are no stored form give [`ShardError::Corrupted`], never a
//! panic.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Map, Value};
use zstd::zstd_safe::{CCtx, CParameter, DCtx, DDict, DParameter, FrameFormat};

use crate::error::{ShardError, ShardResult};

/// The JSON text of a document, keys in their given order.
pub fn document_json(document: &Map<String, Value>) -> Vec<u8> {
    serde_json::to_vec(document).expect("a JSON map always serializes")
}

/// The stored value holds the JSON as is.
pub const TAG_RAW: u8 = 0;
/// The stored value holds an lz4 block with its size prepended.
pub const TAG_LZ4: u8 = 1;
/// The stored value holds a dictionary id (LEB128) then a magicless zstd frame with the
/// content size, compressed with that dictionary.
pub const TAG_ZSTD_DICTIONARY: u8 = 2;

/// Documents a shard holds when it trains its first dictionary (counting the batch that
/// reaches them). On PyPI (156 bytes of JSON per document) a 64 KiB dictionary from the first
/// 2 000 documents stores all 886 000 in 65.2 bytes each, from the first 5 000 in 64.8,
/// 10 000 in 64.7, 2 MiB of the first 20 000 in 64.6, 2 MiB spread over all of them in 64.8:
/// a few thousand documents hold nearly all there is to learn, and the earlier the
/// dictionary, the fewer documents without it.
pub const DICTIONARY_TRAINING_DOCUMENTS: u64 = 10_000;
/// Fewest documents a shard trains from; with at least these, a shard whose stored documents
/// already take [`DICTIONARY_SAMPLE_BYTES`] (large documents) trains without waiting for
/// [`DICTIONARY_TRAINING_DOCUMENTS`].
pub const DICTIONARY_TRAINING_DOCUMENTS_MIN: u64 = 1_000;
/// A shard trains a newer dictionary once it holds this many times the documents it held
/// at the last training (or failed attempt), from a sample spread over all of them: insurance
/// against documents that change over time, cheap (a retraining every 8-fold growth). On
/// PyPI, whose documents do not change, it gains nothing (see above). Older dictionaries stay
/// as long as any document uses them: until a compaction stores every document again with
/// the newest.
pub const DICTIONARY_RETRAINING_GROWTH: u64 = 8;
/// The size of a trained dictionary. On PyPI, zstd-3: 16 KiB 68.2 bytes per document, 32 KiB
/// 66.4, 64 KiB 64.7, 112 KiB 64.4 (at the same speed; the encoder takes longer to load, 620-820
/// µs against 440-470 at 64 KiB, and its tables grow with the dictionary).
pub const DICTIONARY_BYTES: usize = 64 * 1024;
/// The JSON bytes of the sample a dictionary is trained from (32 times the dictionary).
/// Training from 1.5 MiB takes about 30 ms, from 2 MiB about 40, on the core applying the
/// batch.
pub const DICTIONARY_SAMPLE_BYTES: usize = 2 * 1024 * 1024;
/// The zstd level documents are compressed at with a dictionary. On PyPI, 64 KiB: level -1
/// 81.0 bytes per document, 1 70.0, 2 68.0, 3 64.7, 5 71.1, in 1 009, 1 038, 1 051, 1 107 and
/// 1 794 ns: up to 3 the cost is the frame's, not the level's; 5 is both larger and slower.
pub const DICTIONARY_LEVEL: i32 = 3;
/// The segment size (fastCover's k) dictionaries are trained with: about a small document.
/// PyPI, 64 KiB: 200 bytes 64.7 bytes per document, 537 65.0, 1 000 65.3, 2 000 65.3.
pub const DICTIONARY_SEGMENT_BYTES: u32 = 200;
/// Fewest sample documents worth training from.
pub const DICTIONARY_SAMPLES_MIN: usize = 16;

/// Bytes of the largest block of a zstd frame, the most a block (3 bytes at least) gives.
const ZSTD_BLOCK_BYTES_MAX: u64 = 128 * 1024;

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

/// The dictionary a stored value was compressed with, if any (no check of the rest).
pub fn dictionary_of(stored: &[u8]) -> Option<u32> {
    match stored.split_first() {
        Some((&TAG_ZSTD_DICTIONARY, rest)) => read_varint(rest).map(|(id, _)| id),
        _ => None,
    }
}

/// The JSON bytes of a stored value.
pub fn decompress(stored: &[u8], dictionaries: &dyn Dictionaries) -> ShardResult<Vec<u8>> {
    match stored.split_first() {
        Some((&TAG_RAW, json)) => Ok(json.to_vec()),
        Some((&TAG_LZ4, block)) => lz4_flex::decompress_size_prepended(block)
            .map_err(|_| ShardError::corrupted("compressed document")),
        Some((&TAG_ZSTD_DICTIONARY, rest)) => {
            let (id, frame) =
                read_varint(rest).ok_or_else(|| ShardError::corrupted("document dictionary id"))?;
            let decoder = dictionaries.decoder(id)?;
            decompress_frame(frame, &decoder)
        }
        _ => Err(ShardError::corrupted("document tag")),
    }
}

/// The document a stored value holds.
pub fn decode(stored: &[u8], dictionaries: &dyn Dictionaries) -> ShardResult<Map<String, Value>> {
    let json = decompress(stored, dictionaries)?;
    serde_json::from_slice(&json)
        // A field nested up to serde_json's limit in a document that adds its own level: each
        // value read on its own, as when the document was written.
        .or_else(|_| crate::documents::field_values::parse_fields(&json))
        .map_err(|_| ShardError::corrupted("document JSON"))
}

/// A dictionary trained from `samples` (JSON texts), at most `dictionary_bytes` long; `None`
/// when there are too few samples or zstd cannot train from them.
///
/// zstd's fastCover with fixed parameters ([`DICTIONARY_SEGMENT_BYTES`], d = 8, f = 20: 6 MiB
/// of tables). `ZDICT_trainFromBuffer` tries four segment sizes and tests each: on 1.5 MiB of
/// PyPI or npm documents it took 3 to 4 times as long (126-224 ms against 45-60 ms, measured
/// side by side) for dictionaries that compress them no better (PyPI 65.1 against 64.7 bytes
/// per document, npm 61.5 against 61.2).
pub fn train_dictionary<'a>(
    samples: impl IntoIterator<Item = &'a [u8]>,
    dictionary_bytes: usize,
) -> Option<Vec<u8>> {
    use zstd::zstd_safe::zstd_sys::{
        ZDICT_fastCover_params_t, ZDICT_isError, ZDICT_params_t, ZDICT_trainFromBuffer_fastCover,
    };
    let mut buffer = Vec::new();
    let mut sizes = Vec::new();
    for sample in samples {
        buffer.extend_from_slice(sample);
        sizes.push(sample.len());
    }
    let count = u32::try_from(sizes.len()).ok()?;
    if sizes.len() < DICTIONARY_SAMPLES_MIN {
        return None;
    }
    let parameters = ZDICT_fastCover_params_t {
        k: DICTIONARY_SEGMENT_BYTES,
        d: 8,
        f: 0,
        steps: 0,
        nbThreads: 0,
        splitPoint: 0.0,
        accel: 0,
        shrinkDict: 0,
        shrinkDictMaxRegression: 0,
        zParams: ZDICT_params_t {
            compressionLevel: DICTIONARY_LEVEL,
            notificationLevel: 0,
            dictID: 0,
        },
    };
    let mut dictionary = vec![0u8; dictionary_bytes];
    // SAFETY: `dictionary` is writable for its whole length; `buffer` holds exactly the
    // `count` samples whose lengths `sizes` lists (both built in the loop above); zstd reads
    // the parameters by value and keeps no pointer past the call.
    let written = unsafe {
        ZDICT_trainFromBuffer_fastCover(
            dictionary.as_mut_ptr().cast(),
            dictionary.len(),
            buffer.as_ptr().cast(),
            sizes.as_ptr(),
            count,
            parameters,
        )
    };
    // SAFETY: a pure function of the returned code.
    if unsafe { ZDICT_isError(written) } != 0 || written > dictionary.len() {
        return None;
    }
    dictionary.truncate(written);
    Some(dictionary)
}

/// Compresses documents with one dictionary: the dictionary is loaded into the context once,
/// and every document after the first reuses it.
pub struct DocumentEncoder {
    dictionary: u32,
    context: CCtx<'static>,
    frame: Vec<u8>,
}

impl DocumentEncoder {
    /// An encoder for dictionary `dictionary` (its `bytes`) at zstd level `level`; `None`
    /// when zstd refuses the dictionary or a parameter.
    pub fn new(dictionary: u32, bytes: &[u8], level: i32) -> Option<DocumentEncoder> {
        let mut context = CCtx::try_create()?;
        for parameter in [
            CParameter::CompressionLevel(level),
            CParameter::Format(FrameFormat::Magicless),
            CParameter::ChecksumFlag(false),
            CParameter::DictIdFlag(false),
            CParameter::ContentSizeFlag(true),
        ] {
            context.set_parameter(parameter).ok()?;
        }
        context.load_dictionary(bytes).ok()?;
        let mut encoder = DocumentEncoder {
            dictionary,
            context,
            frame: Vec::new(),
        };
        // The first frame builds the prepared dictionary: fail here, not per document.
        encoder.frame_of(b"{}").then_some(encoder)
    }

    /// The dictionary this encoder compresses with.
    pub fn dictionary(&self) -> u32 {
        self.dictionary
    }

    /// Compresses `json` into `self.frame`; false when zstd failed.
    fn frame_of(&mut self, json: &[u8]) -> bool {
        self.frame.clear();
        self.frame
            .reserve(zstd::zstd_safe::compress_bound(json.len()));
        self.context.compress2(&mut self.frame, json).is_ok()
    }

    /// The stored form of `json`: compressed with the dictionary when that is smaller than
    /// the JSON, else as [`compress`] stores it (lz4 or raw).
    pub fn compress(&mut self, json: &[u8]) -> Vec<u8> {
        let mut header = [0u8; 6];
        header[0] = TAG_ZSTD_DICTIONARY;
        let header_bytes = 1 + write_varint(self.dictionary, &mut header[1..]);
        if self.frame_of(json) && header_bytes + self.frame.len() < 1 + json.len() {
            let mut stored = Vec::with_capacity(header_bytes + self.frame.len());
            stored.extend_from_slice(&header[..header_bytes]);
            stored.extend_from_slice(&self.frame);
            return stored;
        }
        compress(json)
    }
}

/// A dictionary prepared for decompression.
pub struct DictionaryDecoder(DDict<'static>);

impl DictionaryDecoder {
    /// Prepares the dictionary `bytes` (copied).
    pub fn new(bytes: &[u8]) -> ShardResult<DictionaryDecoder> {
        DDict::try_create(bytes)
            .map(DictionaryDecoder)
            .ok_or_else(|| ShardError::corrupted("document dictionary"))
    }
}

/// Where the prepared dictionaries of stored values come from.
pub trait Dictionaries {
    /// The prepared dictionary `id`; [`ShardError::Corrupted`] when there is none.
    fn decoder(&self, id: u32) -> ShardResult<Arc<DictionaryDecoder>>;
}

/// No dictionary at all: values compressed with one do not decode.
pub struct NoDictionaries;

impl Dictionaries for NoDictionaries {
    fn decoder(&self, id: u32) -> ShardResult<Arc<DictionaryDecoder>> {
        Err(unknown_dictionary(id))
    }
}

/// Dictionaries given by id (tests, benches, the dictionaries a batch trained).
impl Dictionaries for HashMap<u32, Arc<DictionaryDecoder>> {
    fn decoder(&self, id: u32) -> ShardResult<Arc<DictionaryDecoder>> {
        self.get(&id).cloned().ok_or_else(|| unknown_dictionary(id))
    }
}

pub(crate) fn unknown_dictionary(id: u32) -> ShardError {
    ShardError::corrupted(format!("unknown document dictionary {id}"))
}

/// The prepared dictionaries of one shard, by id, shared by its readers and writers.
///
/// Invariant: an id names one dictionary for the shard's whole life (ids are never reused,
/// see `ShardState::next_dictionary_id`), and only committed dictionaries enter the cache,
/// so an entry never goes stale.
#[derive(Default)]
pub struct DecoderCache {
    decoders: Mutex<HashMap<u32, Arc<DictionaryDecoder>>>,
}

impl DecoderCache {
    /// The prepared dictionary `id`, prepared from `load()`'s bytes the first time.
    pub fn decoder(
        &self,
        id: u32,
        load: impl FnOnce() -> ShardResult<Option<Vec<u8>>>,
    ) -> ShardResult<Arc<DictionaryDecoder>> {
        if let Some(decoder) = self.lock().get(&id) {
            return Ok(Arc::clone(decoder));
        }
        let bytes = load()?.ok_or_else(|| unknown_dictionary(id))?;
        let decoder = Arc::new(DictionaryDecoder::new(&bytes)?);
        Ok(Arc::clone(self.lock().entry(id).or_insert(decoder)))
    }

    /// Records a committed dictionary prepared elsewhere.
    pub fn insert(&self, id: u32, decoder: Arc<DictionaryDecoder>) {
        self.lock().entry(id).or_insert(decoder);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u32, Arc<DictionaryDecoder>>> {
        // Every value the map can hold is whole: a panic elsewhere leaves it usable.
        self.decoders.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

thread_local! {
    /// The decompression context of this thread (made on first use).
    static DECOMPRESSION: RefCell<Option<DCtx<'static>>> = const { RefCell::new(None) };
}

fn decompression_context() -> ShardResult<DCtx<'static>> {
    let mut context = DCtx::try_create()
        .ok_or_else(|| ShardError::corrupted("document decompression context"))?;
    context
        .set_parameter(DParameter::Format(FrameFormat::Magicless))
        .map_err(|_| ShardError::corrupted("document decompression context"))?;
    Ok(context)
}

/// Runs `work` with this thread's decompression context (a fresh one when it is in use or
/// gone, as while the thread ends).
fn with_context<T>(work: impl FnOnce(&mut DCtx<'static>) -> ShardResult<T>) -> ShardResult<T> {
    let mut work = Some(work);
    let shared = DECOMPRESSION.try_with(|cell| {
        let Ok(mut slot) = cell.try_borrow_mut() else {
            return None;
        };
        let context = match slot.as_mut() {
            Some(context) => context,
            None => match decompression_context() {
                Ok(context) => slot.insert(context),
                Err(error) => return Some(Err(error)),
            },
        };
        work.take().map(|work| work(context))
    });
    match (shared, work) {
        (Ok(Some(result)), _) => result,
        (_, Some(work)) => work(&mut decompression_context()?),
        (_, None) => Err(ShardError::corrupted("document decompression context")),
    }
}

/// The content of the magicless zstd `frame` compressed with `decoder`.
fn decompress_frame(frame: &[u8], decoder: &DictionaryDecoder) -> ShardResult<Vec<u8>> {
    let size = frame_content_size(frame)?;
    let mut json = Vec::with_capacity(size);
    with_context(|context| {
        context
            .decompress_using_ddict(&mut json, frame, &decoder.0)
            .map_err(|_| ShardError::corrupted("compressed document"))
    })?;
    if json.len() != size {
        return Err(ShardError::corrupted("compressed document size"));
    }
    Ok(json)
}

/// The content size a magicless zstd frame header declares (RFC 8878, 3.1.1.1), refused when
/// absent or beyond what the frame's blocks could hold.
fn frame_content_size(frame: &[u8]) -> ShardResult<usize> {
    let corrupted = || ShardError::corrupted("compressed document header");
    let (&descriptor, rest) = frame.split_first().ok_or_else(corrupted)?;
    if descriptor & 0b1000 != 0 {
        return Err(corrupted());
    }
    let single_segment = descriptor & 0b10_0000 != 0;
    let dictionary_id_bytes = [0, 1, 2, 4][usize::from(descriptor & 0b11)];
    let size_bytes = match descriptor >> 6 {
        0 if single_segment => 1,
        0 => return Err(corrupted()),
        1 => 2,
        2 => 4,
        _ => 8,
    };
    let start = usize::from(!single_segment) + dictionary_id_bytes;
    let field = rest.get(start..start + size_bytes).ok_or_else(corrupted)?;
    let mut size = field
        .iter()
        .rev()
        .fold(0u64, |size, &byte| (size << 8) | u64::from(byte));
    if size_bytes == 2 {
        size += 256;
    }
    let bound = (frame.len() as u64 / 3 + 1) * ZSTD_BLOCK_BYTES_MAX;
    if size > bound {
        return Err(corrupted());
    }
    usize::try_from(size).map_err(|_| corrupted())
}

/// Writes `value` as LEB128 into `out` (5 bytes at most); answers the bytes written.
fn write_varint(mut value: u32, out: &mut [u8]) -> usize {
    let mut written = 0;
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out[written] = byte;
            return written + 1;
        }
        out[written] = byte | 0x80;
        written += 1;
    }
}

/// The LEB128 `u32` at the start of `bytes` and the bytes after it.
fn read_varint(bytes: &[u8]) -> Option<(u32, &[u8])> {
    let mut value = 0u32;
    for (index, &byte) in bytes.iter().enumerate().take(5) {
        let part = u32::from(byte & 0x7f);
        if index == 4 && part > 0x0f {
            return None;
        }
        value |= part << (7 * index);
        if byte & 0x80 == 0 {
            return Some((value, &bytes[index + 1..]));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Documents alike enough for a dictionary to help (what a shard of one data set holds).
    fn samples(count: usize) -> Vec<Vec<u8>> {
        (0..count)
            .map(|index| {
                format!(
                    r#"{{"id":{index},"name":"package-{}","summary":"A library for {} things","version":"{}.{}.0","year":{}}}"#,
                    index * 7919 % 1000,
                    ["parsing", "testing", "plotting", "serving"][index % 4],
                    index % 5,
                    index % 11,
                    2000 + index % 25
                )
                .into_bytes()
            })
            .collect()
    }

    fn trained(samples: &[Vec<u8>]) -> Vec<u8> {
        train_dictionary(samples.iter().map(Vec::as_slice), 4096).expect("trains")
    }

    #[test]
    fn stored_form_round_trips_raw_and_compressed() {
        let small = br#"{"a":1}"#.to_vec();
        assert_eq!(compress(&small)[0], TAG_RAW);
        let large = format!(r#"{{"a":"{}"}}"#, "x".repeat(1000)).into_bytes();
        assert_eq!(compress(&large)[0], TAG_LZ4);
        for json in [small, large] {
            assert_eq!(
                decompress(&compress(&json), &NoDictionaries).expect("round trip"),
                json
            );
        }
    }

    #[test]
    fn dictionary_form_round_trips_and_is_smaller() {
        let samples = samples(2000);
        let dictionary = trained(&samples);
        let mut encoder =
            DocumentEncoder::new(300, &dictionary, DICTIONARY_LEVEL).expect("encoder");
        let mut decoders = HashMap::new();
        decoders.insert(
            300,
            Arc::new(DictionaryDecoder::new(&dictionary).expect("decoder")),
        );
        let (mut json_bytes, mut stored_bytes) = (0, 0);
        for json in &samples {
            let stored = encoder.compress(json);
            assert_eq!(stored[0], TAG_ZSTD_DICTIONARY);
            assert_eq!(dictionary_of(&stored), Some(300));
            assert_eq!(decompress(&stored, &decoders).expect("round trip"), *json);
            json_bytes += json.len();
            stored_bytes += stored.len();
        }
        assert!(
            stored_bytes * 2 < json_bytes,
            "{stored_bytes} of {json_bytes}"
        );
        // Raw and lz4 values read the same with dictionaries around.
        let large = format!(r#"{{"a":"{}"}}"#, "x".repeat(1000)).into_bytes();
        assert_eq!(
            decompress(&compress(&large), &decoders).expect("lz4"),
            large
        );
        // Keys keep their order through decode.
        let document: Map<String, Value> =
            serde_json::from_slice(br#"{"z":1,"a":[true,null],"m":{"y":"x"}}"#).expect("JSON");
        let stored = encoder.compress(&document_json(&document));
        let decoded = decode(&stored, &decoders).expect("decodes");
        assert_eq!(decoded, document);
        assert!(decoded.keys().eq(document.keys()));
    }

    #[test]
    fn a_document_the_dictionary_does_not_shrink_stays_in_the_old_forms() {
        let dictionary = trained(&samples(2000));
        let mut encoder = DocumentEncoder::new(0, &dictionary, DICTIONARY_LEVEL).expect("encoder");
        let tiny = br#"{"q":0}"#;
        let stored = encoder.compress(tiny);
        assert!(matches!(stored[0], TAG_RAW | TAG_LZ4));
        assert_eq!(decompress(&stored, &NoDictionaries).expect("raw"), tiny);
    }

    #[test]
    fn unknown_dictionary_truncated_or_damaged_frames_are_corrupted() {
        let samples = samples(2000);
        let dictionary = trained(&samples);
        let mut encoder = DocumentEncoder::new(7, &dictionary, DICTIONARY_LEVEL).expect("encoder");
        let mut decoders = HashMap::new();
        decoders.insert(
            7,
            Arc::new(DictionaryDecoder::new(&dictionary).expect("decoder")),
        );
        let stored = encoder.compress(&samples[3]);
        assert!(matches!(
            decompress(&stored, &NoDictionaries),
            Err(ShardError::Corrupted(_))
        ));
        let mut other = HashMap::new();
        other.insert(8, Arc::clone(&decoders[&7]));
        assert!(matches!(
            decompress(&stored, &other),
            Err(ShardError::Corrupted(_))
        ));
        for end in 0..stored.len() {
            assert!(
                matches!(
                    decompress(&stored[..end], &decoders),
                    Err(ShardError::Corrupted(_))
                ),
                "truncated at {end}"
            );
        }
        // Every single-byte change either fails as corrupted or decodes to some bytes.
        for position in 1..stored.len() {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut damaged = stored.clone();
                damaged[position] ^= flip;
                match decompress(&damaged, &decoders) {
                    Ok(_) | Err(ShardError::Corrupted(_)) => {}
                    Err(other) => panic!("unexpected error {other}"),
                }
            }
        }
        // A header claiming more than the frame could hold is refused before allocating.
        let huge = [
            TAG_ZSTD_DICTIONARY,
            7,
            0b1100_0000,
            0xff,
            0xff,
            0xff,
            0xff,
            0xff,
            0xff,
            0xff,
            0x7f,
        ];
        assert!(matches!(
            decompress(&huge, &decoders),
            Err(ShardError::Corrupted(_))
        ));
        assert!(matches!(
            decompress(&[TAG_ZSTD_DICTIONARY, 0x80, 0x80], &decoders),
            Err(ShardError::Corrupted(_))
        ));
        assert!(matches!(
            decompress(&[9, 1, 2], &decoders),
            Err(ShardError::Corrupted(_))
        ));
        assert!(matches!(
            decompress(&[], &decoders),
            Err(ShardError::Corrupted(_))
        ));
    }

    #[test]
    fn training_from_few_or_odd_samples_fails_softly() {
        assert!(train_dictionary(std::iter::empty(), 4096).is_none());
        let few = samples(3);
        assert!(train_dictionary(few.iter().map(Vec::as_slice), 4096).is_none());
        let empty: Vec<&[u8]> = vec![b""; 100];
        assert!(train_dictionary(empty.iter().copied(), 4096).is_none());
        let same: Vec<&[u8]> = vec![b"{}"; 100];
        let one_byte: Vec<&[u8]> = vec![b"7"; 1000];
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let noise: Vec<Vec<u8>> = (0..2000)
            .map(|_| {
                (0..150)
                    .map(|_| {
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        state as u8
                    })
                    .collect()
            })
            .collect();
        let probe = br#"{"a":"b","c":[1,2,3]}"#;
        for samples in [same, one_byte, noise.iter().map(Vec::as_slice).collect()] {
            let Some(dictionary) = train_dictionary(samples.iter().copied(), 4096) else {
                continue;
            };
            // Whatever zstd makes of them must still round trip (or refuse to load).
            if let Some(mut encoder) = DocumentEncoder::new(1, &dictionary, DICTIONARY_LEVEL) {
                let mut decoders = HashMap::new();
                decoders.insert(
                    1,
                    Arc::new(DictionaryDecoder::new(&dictionary).expect("decoder")),
                );
                for json in [&probe[..], samples[0]] {
                    let stored = encoder.compress(json);
                    assert_eq!(decompress(&stored, &decoders).expect("round trip"), json);
                }
            }
        }
        let alike = samples(100);
        assert!(train_dictionary(alike.iter().map(Vec::as_slice), 10).is_none());
    }

    #[test]
    fn varints_round_trip() {
        for value in [0, 1, 127, 128, 300, 16_383, 16_384, u32::MAX] {
            let mut out = [0u8; 5];
            let written = write_varint(value, &mut out);
            assert_eq!(read_varint(&out[..written]), Some((value, &[][..])));
        }
        assert_eq!(read_varint(&[0xff, 0xff, 0xff, 0xff, 0x1f]), None);
        assert_eq!(read_varint(&[0x80]), None);
    }

    #[test]
    fn decompression_works_from_several_threads() {
        let samples = samples(500);
        let dictionary = trained(&samples);
        let mut encoder = DocumentEncoder::new(2, &dictionary, 1).expect("encoder");
        let stored: Vec<Vec<u8>> = samples.iter().map(|json| encoder.compress(json)).collect();
        let cache = Arc::new(DecoderCache::default());
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    let source = CacheOnly(&cache, &dictionary);
                    for (json, stored) in samples.iter().zip(&stored) {
                        assert_eq!(decompress(stored, &source).expect("round trip"), *json);
                    }
                });
            }
        });
    }

    struct CacheOnly<'a>(&'a DecoderCache, &'a [u8]);

    impl Dictionaries for CacheOnly<'_> {
        fn decoder(&self, id: u32) -> ShardResult<Arc<DictionaryDecoder>> {
            self.0
                .decoder(id, || Ok((id == 2).then(|| self.1.to_vec())))
        }
    }
}
