//! Fixed-stride vector records, as laid out in a vector file and in memory.
//!
//! A record is `[internal id: u32 LE][reserved: u32 LE][payload]`, padded to a multiple of 8
//! bytes; the payload is either `dimensions` little-endian `f32`s, `code_words(dimensions)`
//! little-endian `u64` code words, or (centred codes, see `estimator`) those words followed by
//! two `f32` correction factors. Record `r` starts at `r * stride` from the first record.
//!
//! The reserved word: in a float record, its *scale word* (`Metric::stored_scale`): the `f32`
//! bits of `1 / ‖v‖` for a cosine vector `v`, stored as inserted, else 0; a word of 0 reads as
//! scale 1.0 (`scale_of_word`), which is also what format-1 vector files hold beside their
//! normalised cosine vectors (see `distance` for how distances use it). In a centred-code
//! record, the centre number; in a plain code record, 0.
//!
//! Invariants: `stride % RECORD_ALIGNMENT_BYTES == 0` and every record store hands out record
//! bytes that start on an 8-byte boundary, so payloads are viewed in place as `&[f32]` or
//! `&[u64]` without copying (the target is little-endian, checked at compile time); a float
//! record's scale lies in the same bytes as its vector (its header), read with it.

use super::distance::Metric;
use super::estimator;
use super::quantization;

const _: () = assert!(
    cfg!(target_endian = "little"),
    "records are viewed in place as LE"
);

/// Bytes before the payload of a record.
pub const RECORD_HEADER_BYTES: usize = 8;
/// Offset of the reserved word (a float record's scale word) in a record.
pub const RECORD_SCALE_OFFSET_BYTES: usize = 4;
/// Alignment of every record and every payload.
pub const RECORD_ALIGNMENT_BYTES: usize = 8;

/// What a record's payload holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadKind {
    /// Full-precision floats, one per dimension.
    Floats,
    /// 1-bit codes, packed into 64-bit words.
    Codes,
    /// 1-bit codes of the residual from a centre plus two correction factors (binary
    /// quantization with a float copy, navigated by asymmetric estimates; see `estimator`).
    CentredCodes,
}

/// The shape of the records of one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordLayout {
    /// What the payload holds.
    pub kind: PayloadKind,
    /// Dimensions of the vectors the records describe.
    pub dimensions: usize,
}

impl RecordLayout {
    /// Bytes of the payload.
    pub fn payload_bytes(&self) -> usize {
        match self.kind {
            PayloadKind::Floats => self.dimensions * size_of::<f32>(),
            PayloadKind::Codes => self.code_bytes(),
            PayloadKind::CentredCodes => self.code_bytes() + estimator::FACTOR_BYTES,
        }
    }

    /// Bytes of the code words of a code payload.
    pub fn code_bytes(&self) -> usize {
        quantization::code_words(self.dimensions) * size_of::<u64>()
    }

    /// Bytes from one record to the next.
    pub fn stride(&self) -> usize {
        (RECORD_HEADER_BYTES + self.payload_bytes()).next_multiple_of(RECORD_ALIGNMENT_BYTES)
    }
}

/// Anything that hands out records by number.
pub trait RecordStore {
    /// The layout of every record.
    fn layout(&self) -> RecordLayout;
    /// Records `0..record_count()` exist.
    fn record_count(&self) -> u32;
    /// The bytes of record `record` (`stride` long, 8-byte aligned); panics past the end.
    fn record_bytes(&self, record: u32) -> &[u8];

    /// Records `0..record_count()` back to back (record `r` at `r * stride`), when the store
    /// holds them in one buffer (then `scorer` addresses them directly); `None` otherwise.
    #[inline]
    fn contiguous_records(&self) -> Option<&[u8]> {
        None
    }

    /// The internal id stored in record `record`.
    #[inline]
    fn internal_id(&self, record: u32) -> u32 {
        let bytes = self.record_bytes(record);
        u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
    }

    /// The float payload of record `record` (layouts of kind `Floats`): the vector as stored.
    #[inline]
    fn floats(&self, record: u32) -> &[f32] {
        let layout = self.layout();
        let bytes = &self.record_bytes(record)[RECORD_HEADER_BYTES..];
        view_floats(&bytes[..layout.payload_bytes()])
    }

    /// The scale of float record `record` (see the module documentation): what a cosine
    /// distance multiplies the record's dot products by.
    #[inline]
    fn scale(&self, record: u32) -> f32 {
        scale_of_record(self.record_bytes(record))
    }

    /// Writes float record `record`'s vector as `metric` prepares vectors into `out`: for
    /// `Cosine` the stored vector times its scale (normalised), for the others as stored.
    fn prepared_floats(&self, metric: Metric, record: u32, out: &mut Vec<f32>) {
        out.clear();
        out.extend_from_slice(self.floats(record));
        if metric == Metric::Cosine {
            let scale = self.scale(record);
            out.iter_mut().for_each(|value| *value *= scale);
        }
    }

    /// The code words of record `record` (layouts of kind `Codes` or `CentredCodes`).
    #[inline]
    fn codes(&self, record: u32) -> &[u64] {
        let layout = self.layout();
        let bytes = &self.record_bytes(record)[RECORD_HEADER_BYTES..];
        view_codes(&bytes[..layout.code_bytes()])
    }
}

/// The scale a stored scale word stands for: its `f32` value, or 1.0 for a word of 0 (zero
/// vectors, and the normalised records of format-1 files).
#[inline]
pub fn scale_of_word(word: u32) -> f32 {
    if word == 0 { 1.0 } else { f32::from_bits(word) }
}

/// The scale of the record whose bytes (header first) are `record`.
#[inline]
pub fn scale_of_record(record: &[u8]) -> f32 {
    let word: [u8; 4] = record[RECORD_SCALE_OFFSET_BYTES..RECORD_HEADER_BYTES]
        .try_into()
        .expect("a record header holds its reserved word");
    scale_of_word(u32::from_le_bytes(word))
}

/// Views 4-byte aligned bytes as floats.
#[inline]
pub fn view_floats(bytes: &[u8]) -> &[f32] {
    // SAFETY: every bit pattern is a valid f32; `align_to` only returns an aligned middle part.
    let (prefix, floats, suffix) = unsafe { bytes.align_to::<f32>() };
    assert!(
        prefix.is_empty() && suffix.is_empty(),
        "record payloads are aligned"
    );
    floats
}

/// Views 8-byte aligned bytes as code words.
#[inline]
pub fn view_codes(bytes: &[u8]) -> &[u64] {
    // SAFETY: every bit pattern is a valid u64; `align_to` only returns an aligned middle part.
    let (prefix, codes, suffix) = unsafe { bytes.align_to::<u64>() };
    assert!(
        prefix.is_empty() && suffix.is_empty(),
        "record payloads are aligned"
    );
    codes
}

/// Encodes one record (`layout.stride()` bytes) for `internal_id` with a float `vector`
/// (binarised when the layout holds codes; pass the prepared vector then) and the reserved word
/// `scale_word` (a float record's `Metric::stored_scale` of `vector`, 0 for codes). Centred
/// codes need their centre: they are encoded by `estimator::encode_record` (here they panic).
pub fn encode_record(
    layout: RecordLayout,
    internal_id: u32,
    scale_word: u32,
    vector: &[f32],
    out: &mut Vec<u8>,
) {
    assert_eq!(
        vector.len(),
        layout.dimensions,
        "vectors of one graph share their dimensions"
    );
    let start = out.len();
    out.extend_from_slice(&internal_id.to_le_bytes());
    out.extend_from_slice(&scale_word.to_le_bytes());
    match layout.kind {
        PayloadKind::Floats => vector
            .iter()
            .for_each(|v| out.extend_from_slice(&v.to_le_bytes())),
        PayloadKind::Codes => quantization::encode(vector)
            .iter()
            .for_each(|word| out.extend_from_slice(&word.to_le_bytes())),
        PayloadKind::CentredCodes => {
            panic!("centred codes are encoded by estimator::encode_record")
        }
    }
    out.resize(start + layout.stride(), 0);
}

/// Records held in memory (8-byte aligned through a `u64` backing buffer).
#[derive(Debug, Clone)]
pub struct MemoryRecords {
    layout: RecordLayout,
    words: Vec<u64>,
    count: u32,
}

impl MemoryRecords {
    /// No records yet.
    pub fn new(layout: RecordLayout) -> Self {
        Self {
            layout,
            words: Vec::new(),
            count: 0,
        }
    }

    /// Appends a record with reserved word `scale_word` (see `encode_record`) and returns its
    /// number.
    pub fn push(&mut self, internal_id: u32, scale_word: u32, vector: &[f32]) -> u32 {
        let mut bytes = Vec::with_capacity(self.layout.stride());
        encode_record(self.layout, internal_id, scale_word, vector, &mut bytes);
        self.push_encoded(&bytes)
    }

    /// Appends a centred-code record of the prepared `vector` against centre `centre`.
    pub fn push_centred(
        &mut self,
        metric: super::distance::Metric,
        internal_id: u32,
        vector: &[f32],
        centres: &estimator::Centres,
        centre: u32,
    ) -> u32 {
        let mut bytes = Vec::with_capacity(self.layout.stride());
        estimator::encode_record(
            self.layout,
            metric,
            internal_id,
            vector,
            centres,
            centre,
            &mut bytes,
        );
        self.push_encoded(&bytes)
    }

    /// Appends one already encoded record and returns its number.
    pub fn push_encoded(&mut self, bytes: &[u8]) -> u32 {
        assert_eq!(bytes.len(), self.layout.stride(), "one record at a time");
        for chunk in bytes.chunks_exact(size_of::<u64>()) {
            let mut word = [0_u8; 8];
            word.copy_from_slice(chunk);
            self.words.push(u64::from_le_bytes(word));
        }
        let record = self.count;
        self.count += 1;
        record
    }

    /// Bytes held by the records.
    pub fn memory_bytes(&self) -> usize {
        self.words.len() * size_of::<u64>()
    }
}

impl RecordStore for MemoryRecords {
    fn layout(&self) -> RecordLayout {
        self.layout
    }

    fn record_count(&self) -> u32 {
        self.count
    }

    #[inline]
    fn contiguous_records(&self) -> Option<&[u8]> {
        let words = &self.words[..self.count as usize * self.layout.stride() / size_of::<u64>()];
        // SAFETY: u64 has no padding and u8 has alignment 1, so any u64 slice is a valid byte
        // slice of eight times its length, living as long as the borrow of `self`.
        Some(unsafe { std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), size_of_val(words)) })
    }

    #[inline]
    fn record_bytes(&self, record: u32) -> &[u8] {
        let words_per_record = self.layout.stride() / size_of::<u64>();
        let start = record as usize * words_per_record;
        let words = &self.words[start..start + words_per_record];
        // SAFETY: u64 has no padding and u8 has alignment 1, so any u64 slice is a valid byte
        // slice of eight times its length, living as long as the borrow of `self`.
        unsafe { std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), self.layout.stride()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_float_record_keeps_its_vector_and_scale_word_and_a_zero_word_reads_as_one() {
        let layout = RecordLayout {
            kind: PayloadKind::Floats,
            dimensions: 3,
        };
        let mut records = MemoryRecords::new(layout);
        let vector = [3.0_f32, -0.0, 4.0];
        let scaled = records.push(9, Metric::Cosine.stored_scale(&vector), &vector);
        let plain = records.push(10, 0, &vector);
        assert_eq!(records.internal_id(scaled), 9);
        assert_eq!(
            records
                .floats(scaled)
                .iter()
                .map(|value| value.to_bits())
                .collect::<Vec<_>>(),
            vector
                .iter()
                .map(|value| value.to_bits())
                .collect::<Vec<_>>()
        );
        assert_eq!(records.scale(scaled), 0.2);
        assert_eq!(records.scale(plain), 1.0);
        let word = &records.record_bytes(scaled)[RECORD_SCALE_OFFSET_BYTES..RECORD_HEADER_BYTES];
        assert_eq!(word, 0.2_f32.to_le_bytes());
        let mut prepared = Vec::new();
        records.prepared_floats(Metric::Cosine, scaled, &mut prepared);
        for (value, expected) in prepared.iter().zip([0.6, 0.0, 0.8]) {
            assert!((value - expected).abs() < 1e-6, "{prepared:?}");
        }
        records.prepared_floats(Metric::Euclidean, scaled, &mut prepared);
        assert_eq!(prepared, vector);
        records.prepared_floats(Metric::Cosine, plain, &mut prepared);
        assert_eq!(prepared, vector, "a 0 word is scale 1.0");
    }
}
