//! The `word_position_chunks` tree: each word's occurrences in its documents, in chunks of
//! consecutive documents.
//!
//! Key: word (UTF-8) ‖ `0xFF` ‖ the chunk's first internal id (u32 big-endian).
//!
//! Value (a chunk): for each document of the chunk, in ascending id order,
//! - the document: its id minus the previous document's (varint); the first document's is
//!   taken from the key's id, so its difference is 0;
//! - the byte length of its occurrences (varint), so that a reader skips a document without
//!   decoding it;
//! - its occurrences, sorted by field then position, each as its field id (varint) then its
//!   position (varint): the position itself when the field differs from the previous
//!   occurrence's (or for the first occurrence), else the difference from the previous
//!   position (modulo 2^16, so even an unsorted list round-trips).
//!
//! A varint is LEB128: 7 bits per byte, lowest first, the high bit set on every byte but the
//! last; at most [`VARINT_BYTES_MAX`] bytes for a u32. The length before the occurrences
//! costs a byte per document but lets a lookup skip the documents below the one it wants
//! without decoding them. On the PyPI dataset (886k documents, `name` and `summary`
//! searchable, 2 shards) a shard's 4.1M (word, document) pairs take 19.0 MiB of chunks,
//! 4.8 bytes each (the former 4-byte occurrences took 17.5 MiB of values, but each pair also
//! had a key and a leaf cell: 95 MiB of priced entries against 28 MiB now).
//!
//! Invariants (kept by `shard::position_merge`, checked by its model test):
//! - a word's chunks are disjoint and ascending: every document of a chunk is below the next
//!   chunk's key id;
//! - no empty chunk is stored;
//! - each chunk's key id is its first document (its first difference is 0), and the documents
//!   of a chunk strictly ascend (every later difference is at least 1);
//! - a chunk holds at most [`POSITION_CHUNK_BYTES_MAX`] bytes unless it holds one document
//!   (a document whose occurrences alone are larger stands in a chunk of its own);
//! - the chunks of a word hold exactly the documents of its `word_documents` bitmap.
//!
//! Where a word's documents are cut into chunks depends on the order the documents came in
//! (a flush appends to the word's last chunk, a change in the middle rewrites only the chunks
//! it touches): two shards holding the same documents may cut differently; the decoded
//! documents and occurrences are the same.

use storage_engine::{PAGE_BYTES_MIN, stored_entry_bytes};

use super::inverted::WORD_END_BYTE;
use crate::analysis::{Occurrence, WORD_BYTES_MAX};
use crate::error::{ShardError, ShardResult};

/// Bytes after the word in a `word_position_chunks` key: the separator and the chunk's first id.
pub const CHUNK_KEY_SUFFIX_BYTES: usize = 5;
/// Most bytes of a chunk holding more than one document.
///
/// With the longest word's key, a chunk this long stays inline in a leaf page of the smallest
/// page size (checked below: 747 bytes at most), so that it never costs an overflow page.
/// Measured on the PyPI dataset (`store_usage`, per shard): 256, 512 and 747 bytes gave 417k,
/// 385k and 375k chunks, 27.7, 27.1 and 26.9 MiB of priced entries and used files within 1%
/// of each other (321.4, 318.8, 318.0 MiB; the same build varies by a few MiB from run to
/// run). A lookup skips half a chunk on average, and `search_bench` ran its multi-word
/// queries 0.01-0.04 ms faster with 256 than with 512: 256.
pub const POSITION_CHUNK_BYTES_MAX: usize = 256;
/// Most bytes of a u32 varint.
pub const VARINT_BYTES_MAX: usize = 5;

/// A full chunk of the longest word takes a leaf cell: less than a page (an overflow value
/// would cost a whole page at least).
const _: () = assert!(
    stored_entry_bytes(
        PAGE_BYTES_MIN,
        WORD_BYTES_MAX + CHUNK_KEY_SUFFIX_BYTES,
        POSITION_CHUNK_BYTES_MAX
    ) < PAGE_BYTES_MIN
);

/// Appends the varint of `value` to `out`.
pub fn write_varint(out: &mut Vec<u8>, mut value: u32) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// The number of bytes of the varint of `value`.
pub fn varint_bytes(value: u32) -> usize {
    match value {
        0..0x80 => 1,
        0x80..0x4000 => 2,
        0x4000..0x20_0000 => 3,
        0x20_0000..0x1000_0000 => 4,
        _ => VARINT_BYTES_MAX,
    }
}

/// Reads the varint at `*offset` in `bytes` and moves `*offset` past it; `None` when cut
/// short or above u32.
#[inline]
pub fn read_varint(bytes: &[u8], offset: &mut usize) -> Option<u32> {
    // Most values (differences of near documents, lengths, fields) take one byte.
    let first = *bytes.get(*offset)?;
    if first < 0x80 {
        *offset += 1;
        return Some(u32::from(first));
    }
    read_long_varint(bytes, offset)
}

/// [`read_varint`] of a varint of two bytes or more.
fn read_long_varint(bytes: &[u8], offset: &mut usize) -> Option<u32> {
    let mut value: u32 = 0;
    for index in 0..VARINT_BYTES_MAX {
        let byte = *bytes.get(*offset + index)?;
        let low = u32::from(byte & 0x7F);
        if index == VARINT_BYTES_MAX - 1 && low > 0x0F {
            return None;
        }
        value |= low << (7 * index);
        if byte & 0x80 == 0 {
            *offset += index + 1;
            return Some(value);
        }
    }
    None
}

/// Appends the encoded `occurrences` (sorted by field, then position) to `out`.
pub fn append_occurrences(out: &mut Vec<u8>, occurrences: &[Occurrence]) {
    let mut previous: Option<Occurrence> = None;
    for occurrence in occurrences {
        write_varint(out, u32::from(occurrence.field));
        let position = match previous {
            Some(previous) if previous.field == occurrence.field => {
                occurrence.position.wrapping_sub(previous.position)
            }
            _ => occurrence.position,
        };
        write_varint(out, u32::from(position));
        previous = Some(*occurrence);
    }
}

/// The occurrences of one document, decoded from [`append_occurrences`]'s bytes.
#[derive(Debug, Clone)]
pub struct Occurrences<'a> {
    bytes: &'a [u8],
    offset: usize,
    previous: Option<Occurrence>,
}

impl<'a> Occurrences<'a> {
    pub fn new(bytes: &'a [u8]) -> Occurrences<'a> {
        Occurrences {
            bytes,
            offset: 0,
            previous: None,
        }
    }

    fn read_u16(&mut self) -> ShardResult<u16> {
        read_varint(self.bytes, &mut self.offset)
            .and_then(|value| u16::try_from(value).ok())
            .ok_or_else(|| ShardError::corrupted("word occurrences"))
    }

    fn read(&mut self) -> ShardResult<Occurrence> {
        let field = self.read_u16()?;
        let coded = self.read_u16()?;
        let position = match self.previous {
            Some(previous) if previous.field == field => previous.position.wrapping_add(coded),
            _ => coded,
        };
        let occurrence = Occurrence { field, position };
        self.previous = Some(occurrence);
        Ok(occurrence)
    }
}

impl Iterator for Occurrences<'_> {
    type Item = ShardResult<Occurrence>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.offset >= self.bytes.len() {
            return None;
        }
        let read = self.read();
        if read.is_err() {
            self.offset = self.bytes.len();
        }
        Some(read)
    }
}

/// Replaces the content of `out` with the occurrences `bytes` encode.
pub fn decode_occurrences_into(bytes: &[u8], out: &mut Vec<Occurrence>) -> ShardResult<()> {
    out.clear();
    for occurrence in Occurrences::new(bytes) {
        out.push(occurrence?);
    }
    Ok(())
}

/// The documents of one chunk, each with its encoded occurrences (see [`Occurrences`]).
#[derive(Debug, Clone)]
pub struct ChunkDocuments<'a> {
    bytes: &'a [u8],
    offset: usize,
    /// The key's id before the first document, then the last document read.
    document: u32,
    started: bool,
    failed: bool,
}

impl<'a> ChunkDocuments<'a> {
    /// The documents of the chunk `bytes` stored under the key id `first`.
    pub fn new(first: u32, bytes: &'a [u8]) -> ChunkDocuments<'a> {
        ChunkDocuments {
            bytes,
            offset: 0,
            document: first,
            started: false,
            failed: false,
        }
    }

    /// The next document and its occurrences (there is one: `offset` is before the end);
    /// `None` when the bytes are malformed.
    #[inline]
    fn read(&mut self) -> Option<(u32, &'a [u8])> {
        let difference = read_varint(self.bytes, &mut self.offset)?;
        // The first document is the key's id; every later one is above the one before.
        if (difference == 0) == self.started {
            return None;
        }
        let document = self.document.checked_add(difference)?;
        let length = read_varint(self.bytes, &mut self.offset)?;
        let end = self
            .offset
            .checked_add(length as usize)
            .filter(|end| *end <= self.bytes.len())?;
        let occurrences = &self.bytes[self.offset..end];
        self.offset = end;
        self.document = document;
        self.started = true;
        Some((document, occurrences))
    }

    /// The next document at or above `document` with its occurrences, the documents below it
    /// skipped without decoding their occurrences; `None` once the chunk is read.
    pub fn next_at_or_above(&mut self, document: u32) -> ShardResult<Option<(u32, &'a [u8])>> {
        while !self.failed && self.offset < self.bytes.len() {
            let Some(entry) = self.read() else {
                self.failed = true;
                return Err(ShardError::corrupted("word positions chunk"));
            };
            if entry.0 >= document {
                return Ok(Some(entry));
            }
        }
        if !self.started && !self.failed {
            self.failed = true;
            return Err(ShardError::corrupted("empty word positions chunk"));
        }
        Ok(None)
    }
}

impl<'a> Iterator for ChunkDocuments<'a> {
    type Item = ShardResult<(u32, &'a [u8])>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_at_or_above(0).transpose()
    }
}

/// Cuts ascending documents into chunks: each document goes into the current chunk unless
/// that would take the chunk past [`POSITION_CHUNK_BYTES_MAX`], in which case the current
/// chunk is handed out first. The buffer is reused from chunk to chunk.
#[derive(Debug, Default)]
pub struct ChunkPacker {
    bytes: Vec<u8>,
    first: u32,
    last: u32,
}

impl ChunkPacker {
    /// Adds `document` (above every document added since the last [`Self::finish`]) with its
    /// encoded `occurrences`; `emit` receives each completed chunk's first id and bytes.
    pub fn push(
        &mut self,
        document: u32,
        occurrences: &[u8],
        emit: &mut impl FnMut(u32, &[u8]) -> ShardResult<()>,
    ) -> ShardResult<()> {
        let length = u32::try_from(occurrences.len())
            .map_err(|_| ShardError::corrupted("word occurrences too long"))?;
        if !self.bytes.is_empty() {
            let difference = document
                .checked_sub(self.last)
                .filter(|difference| *difference > 0)
                .ok_or_else(|| ShardError::corrupted("word positions out of order"))?;
            let entry = varint_bytes(difference) + varint_bytes(length) + occurrences.len();
            if self.bytes.len() + entry <= POSITION_CHUNK_BYTES_MAX {
                write_varint(&mut self.bytes, difference);
                self.append(document, length, occurrences);
                return Ok(());
            }
            self.finish(emit)?;
        }
        self.first = document;
        write_varint(&mut self.bytes, 0);
        self.append(document, length, occurrences);
        Ok(())
    }

    fn append(&mut self, document: u32, length: u32, occurrences: &[u8]) {
        write_varint(&mut self.bytes, length);
        self.bytes.extend_from_slice(occurrences);
        self.last = document;
    }

    /// Hands out the current chunk, if any, and starts anew.
    pub fn finish(
        &mut self,
        emit: &mut impl FnMut(u32, &[u8]) -> ShardResult<()>,
    ) -> ShardResult<()> {
        if self.bytes.is_empty() {
            return Ok(());
        }
        // Documents strictly ascend in a chunk: one document when the first is the last.
        debug_assert!(
            self.bytes.len() <= POSITION_CHUNK_BYTES_MAX || self.first == self.last,
            "a chunk past the limit holds one document"
        );
        let emitted = emit(self.first, &self.bytes);
        self.bytes.clear();
        emitted
    }
}

/// The `word_position_chunks` keys of one word, written into one reused buffer.
#[derive(Debug, Clone)]
pub struct ChunkKeys {
    key: Vec<u8>,
    word_end: usize,
}

impl ChunkKeys {
    pub fn new(word: &[u8]) -> ChunkKeys {
        let mut key = Vec::with_capacity(word.len() + CHUNK_KEY_SUFFIX_BYTES);
        key.extend_from_slice(word);
        key.push(WORD_END_BYTE);
        let word_end = key.len();
        ChunkKeys { key, word_end }
    }

    /// The common start of the word's keys.
    pub fn prefix(&self) -> &[u8] {
        &self.key[..self.word_end]
    }

    /// The key of the word's chunk starting at `document`.
    pub fn of(&mut self, document: u32) -> &[u8] {
        self.key.truncate(self.word_end);
        self.key.extend_from_slice(&document.to_be_bytes());
        &self.key
    }

    /// The first document of the chunk stored under `key`, `None` when `key` is not one of
    /// this word's.
    pub fn document_of(&self, key: &[u8]) -> ShardResult<Option<u32>> {
        let Some(id) = key.strip_prefix(self.prefix()) else {
            return Ok(None);
        };
        let id: [u8; 4] = id
            .try_into()
            .map_err(|_| ShardError::corrupted("word positions key"))?;
        Ok(Some(u32::from_be_bytes(id)))
    }
}

/// Splits a `word_position_chunks` key into its word bytes and its chunk's first document.
pub fn split_chunk_key(key: &[u8]) -> ShardResult<(&[u8], u32)> {
    let corrupted = || ShardError::corrupted("word positions key");
    let word_bytes = key
        .len()
        .checked_sub(CHUNK_KEY_SUFFIX_BYTES)
        .ok_or_else(corrupted)?;
    let (word, suffix) = key.split_at(word_bytes);
    match suffix {
        [WORD_END_BYTE, id @ ..] => {
            let id: [u8; 4] = id.try_into().map_err(|_| corrupted())?;
            Ok((word, u32::from_be_bytes(id)))
        }
        _ => Err(corrupted()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn occurrence(field: u16, position: u16) -> Occurrence {
        Occurrence { field, position }
    }

    fn decoded(bytes: &[u8]) -> Vec<Occurrence> {
        let mut out = Vec::new();
        decode_occurrences_into(bytes, &mut out).expect("the occurrences decode");
        out
    }

    fn encoded(occurrences: &[Occurrence]) -> Vec<u8> {
        let mut bytes = Vec::new();
        append_occurrences(&mut bytes, occurrences);
        bytes
    }

    /// Packs `documents` into chunks, returned with their first ids.
    fn packed(documents: &[(u32, Vec<u8>)]) -> Vec<(u32, Vec<u8>)> {
        let mut chunks = Vec::new();
        let mut packer = ChunkPacker::default();
        let mut emit = |first: u32, bytes: &[u8]| {
            chunks.push((first, bytes.to_vec()));
            Ok(())
        };
        for (document, occurrences) in documents {
            packer
                .push(*document, occurrences, &mut emit)
                .expect("ascending documents pack");
        }
        packer
            .finish(&mut emit)
            .expect("the last chunk is handed out");
        chunks
    }

    fn unpacked(chunks: &[(u32, Vec<u8>)]) -> Vec<(u32, Vec<u8>)> {
        let mut documents = Vec::new();
        for (first, bytes) in chunks {
            for entry in ChunkDocuments::new(*first, bytes) {
                let (document, occurrences) = entry.expect("the chunk decodes");
                documents.push((document, occurrences.to_vec()));
            }
        }
        documents
    }

    #[test]
    fn varints_round_trip_at_every_length_boundary() {
        let values = [
            0,
            1,
            0x7F,
            0x80,
            0x3FFF,
            0x4000,
            0x1F_FFFF,
            0x20_0000,
            0xFFF_FFFF,
            0x1000_0000,
            u32::MAX - 1,
            u32::MAX,
        ];
        for value in values {
            let mut bytes = Vec::new();
            write_varint(&mut bytes, value);
            assert_eq!(bytes.len(), varint_bytes(value), "{value}");
            let mut offset = 0;
            assert_eq!(read_varint(&bytes, &mut offset), Some(value));
            assert_eq!(offset, bytes.len());
            let mut offset = 0;
            assert_eq!(read_varint(&bytes[..bytes.len() - 1], &mut offset), None);
        }
        // Six bytes, or a fifth byte carrying more than 32 bits, are not a u32.
        let mut offset = 0;
        assert_eq!(
            read_varint(&[0xFF, 0xFF, 0xFF, 0xFF, 0x1F], &mut offset),
            None
        );
        assert_eq!(
            read_varint(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x01], &mut offset),
            None
        );
    }

    #[test]
    fn occurrences_round_trip_up_to_the_largest_field_and_position() {
        let lists = [
            vec![],
            vec![occurrence(0, 0)],
            vec![occurrence(0, 0), occurrence(0, u16::MAX)],
            vec![occurrence(u16::MAX, u16::MAX)],
            vec![
                occurrence(1, 3),
                occurrence(1, 4),
                occurrence(1, 200),
                occurrence(2, 1),
                occurrence(300, 0),
                occurrence(300, 65_534),
                occurrence(u16::MAX, 0),
                occurrence(u16::MAX, u16::MAX),
            ],
            // Unsorted lists still round-trip (the differences wrap).
            vec![
                occurrence(4, 9),
                occurrence(4, 2),
                occurrence(1, 7),
                occurrence(4, 1),
            ],
        ];
        for list in lists {
            assert_eq!(decoded(&encoded(&list)), list);
        }
        // Sorted small positions take two bytes each.
        let small: Vec<_> = (0..50)
            .map(|position| occurrence(1, position * 2))
            .collect();
        assert_eq!(encoded(&small).len(), 100);
    }

    #[test]
    fn chunks_round_trip_with_large_gaps_between_documents() {
        let documents: Vec<(u32, Vec<u8>)> = [0, 1, 127, 128, 1 << 20, (1 << 31) + 5, u32::MAX]
            .iter()
            .map(|document| (*document, encoded(&[occurrence(2, *document as u16)])))
            .collect();
        let chunks = packed(&documents);
        assert_eq!(chunks.len(), 1);
        assert_eq!(chunks[0].0, 0);
        assert_eq!(unpacked(&chunks), documents);
        // A chunk may start anywhere, up to the largest id.
        let last = vec![(u32::MAX, encoded(&[occurrence(0, 1)]))];
        assert_eq!(unpacked(&packed(&last)), last);
    }

    #[test]
    fn a_chunk_fills_exactly_to_the_limit_and_splits_one_byte_past_it() {
        // The packer does not look into the occurrences: bytes of chosen lengths will do.
        // Each document takes 1 byte of difference, 1 of length, then its 8 bytes.
        let entry = 10;
        let count = POSITION_CHUNK_BYTES_MAX / entry;
        let rest = POSITION_CHUNK_BYTES_MAX - count * entry;
        let mut documents: Vec<(u32, Vec<u8>)> = (0..count as u32)
            .map(|document| (document * 3, vec![document as u8; 8]))
            .collect();
        // The last document takes the rest, so that the chunk ends exactly at the limit.
        documents[count - 1].1.resize(8 + rest, 7);
        let chunks = packed(&documents);
        assert_eq!(chunks.len(), 1, "a chunk exactly at the limit is one chunk");
        assert_eq!(chunks[0].1.len(), POSITION_CHUNK_BYTES_MAX);
        assert_eq!(unpacked(&chunks), documents);

        // An empty document takes 2 bytes: the chunk can take none, so it is split.
        let mut over = documents.clone();
        over.push((count as u32 * 3, Vec::new()));
        let chunks = packed(&over);
        assert_eq!(chunks.len(), 2, "past the limit the chunk splits");
        assert_eq!(chunks[0].1.len(), POSITION_CHUNK_BYTES_MAX);
        assert_eq!(chunks[1].0, count as u32 * 3);
        assert_eq!(unpacked(&chunks), over);

        // One byte less for the last document leaves room for nothing more either way.
        let mut under = documents.clone();
        under[count - 1].1.pop();
        let chunks = packed(&under);
        assert_eq!(chunks.len(), 1);
        assert_eq!(chunks[0].1.len(), POSITION_CHUNK_BYTES_MAX - 1);
    }

    #[test]
    fn a_document_larger_than_the_limit_stands_alone() {
        let small = encoded(&[occurrence(0, 1)]);
        let large: Vec<_> = (0..POSITION_CHUNK_BYTES_MAX as u16)
            .map(|position| occurrence(3, position * 3))
            .collect();
        let documents = vec![(5, small.clone()), (6, encoded(&large)), (7, small.clone())];
        let chunks = packed(&documents);
        let firsts: Vec<u32> = chunks.iter().map(|(first, _)| *first).collect();
        assert_eq!(firsts, [5, 6, 7]);
        assert!(chunks[1].1.len() > POSITION_CHUNK_BYTES_MAX);
        assert_eq!(unpacked(&chunks), documents);
    }

    #[test]
    fn documents_out_of_order_are_refused() {
        let mut packer = ChunkPacker::default();
        let mut emit = |_: u32, _: &[u8]| Ok(());
        packer.push(4, &[], &mut emit).expect("the first document");
        assert!(packer.push(4, &[], &mut emit).is_err());
        assert!(packer.push(3, &[], &mut emit).is_err());
    }

    #[test]
    fn malformed_chunks_are_corrupted_not_a_panic() {
        let documents: Vec<(u32, Vec<u8>)> = (0..20)
            .map(|document| {
                (
                    document * 1000,
                    encoded(&[occurrence(1, 5), occurrence(1, 900)]),
                )
            })
            .collect();
        let chunks = packed(&documents);
        let (first, bytes) = &chunks[0];
        let read_all = |first: u32, bytes: &[u8]| -> ShardResult<()> {
            for entry in ChunkDocuments::new(first, bytes) {
                let (_, occurrences) = entry?;
                for occurrence in Occurrences::new(occurrences) {
                    occurrence?;
                }
            }
            Ok(())
        };
        read_all(*first, bytes).expect("the whole chunk reads");
        for cut in 0..bytes.len() {
            // Cut at a document boundary, a chunk is merely shorter; elsewhere it fails.
            let _ = read_all(*first, &bytes[..cut]);
        }
        assert!(read_all(*first, &[]).is_err(), "an empty chunk");
        assert!(read_all(0, &[1, 0]).is_err(), "a first difference above 0");
        assert!(read_all(0, &[0, 0, 0, 0]).is_err(), "a repeated document");
        assert!(read_all(u32::MAX, &[0, 0, 1, 0]).is_err(), "past u32");
        assert!(read_all(0, &[0, 9, 1]).is_err(), "occurrences past the end");
        assert!(
            read_all(0, &[0, 4, 0x80, 0x80, 0x04, 0]).is_err(),
            "a field above u16"
        );
    }

    #[test]
    fn keys_split_back_into_word_and_document() {
        let mut keys = ChunkKeys::new("東京".as_bytes());
        let key = keys.of(0x0102_0304).to_vec();
        assert_eq!(
            split_chunk_key(&key).expect("splits"),
            ("東京".as_bytes(), 0x0102_0304)
        );
        assert_eq!(keys.document_of(&key).expect("reads"), Some(0x0102_0304));
        let mut other = ChunkKeys::new(b"x");
        assert_eq!(keys.document_of(other.of(7)).expect("reads"), None);
        assert!(keys.document_of(&key[..key.len() - 1]).is_err());
        assert!(split_chunk_key(b"abc").is_err());
    }
}
