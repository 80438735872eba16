//! Reading one word's occurrences from its `word_position_chunks` chunks (see
//! [`crate::index::position_chunks`]): looked up document by document ([`WordPositions`]), or all
//! of them in one ordered scan ([`scan_word`]).
//!
//! Invariants: a lookup answers exactly what the word's chunks hold for the document,
//! whatever the order of the lookups; ascending lookups read each chunk once. Occurrences are
//! handed out encoded, borrowed from the read snapshot, and the chunk holding a document is
//! found from the path of the previous one ([`PathLookup::at_or_below`]): nothing is
//! allocated per lookup.

use storage_engine::{Direction, PathLookup, ReadRange, ReadTree};

use crate::error::{ShardError, ShardResult};
use crate::index::position_chunks::{ChunkDocuments, ChunkKeys};

/// Lookups of one word's occurrences in documents, cheapest in ascending document order.
pub struct WordPositions<'t> {
    lookup: PathLookup<'t>,
    keys: ChunkKeys,
    chunk: Option<CurrentChunk<'t>>,
}

/// The chunk the last lookup read, and how far it was read.
struct CurrentChunk<'t> {
    first: u32,
    bytes: &'t [u8],
    /// The documents after `pending`.
    documents: ChunkDocuments<'t>,
    /// Every document of the chunk below this one was read past.
    low: u32,
    /// The first document at or above `low`, once read.
    pending: Option<(u32, &'t [u8])>,
}

/// Where a document stands against a chunk that may hold it.
enum InChunk<'t> {
    /// The chunk holds it, with these encoded occurrences.
    Found(&'t [u8]),
    /// The chunk holds a larger document and not this one.
    Absent,
    /// Every document of the chunk is below it.
    Beyond,
}

impl<'t> CurrentChunk<'t> {
    fn new(first: u32, bytes: &'t [u8]) -> CurrentChunk<'t> {
        CurrentChunk {
            first,
            bytes,
            documents: ChunkDocuments::new(first, bytes),
            low: first,
            pending: None,
        }
    }

    /// Finds `document` (not below the chunk's first), reading on from where the last search
    /// stopped, or from the start when that is past `document`.
    fn find(&mut self, document: u32) -> ShardResult<InChunk<'t>> {
        if document < self.low {
            *self = CurrentChunk::new(self.first, self.bytes);
        }
        self.low = document;
        let entry = match self.pending {
            Some(pending) if pending.0 >= document => Some(pending),
            _ => self.documents.next_at_or_above(document)?,
        };
        self.pending = entry;
        Ok(match entry {
            Some((found, occurrences)) if found == document => InChunk::Found(occurrences),
            Some(_) => InChunk::Absent,
            None => InChunk::Beyond,
        })
    }
}

impl<'t> WordPositions<'t> {
    /// Lookups of `word` in `tree` (`word_position_chunks`).
    pub fn new(tree: ReadTree<'t>, word: &[u8]) -> WordPositions<'t> {
        WordPositions {
            lookup: tree.path_lookup(),
            keys: ChunkKeys::new(word),
            chunk: None,
        }
    }

    /// The encoded occurrences of the word in `document` (see
    /// [`crate::index::position_chunks::Occurrences`]), `None` when the word is not in it.
    pub fn get(&mut self, document: u32) -> ShardResult<Option<&'t [u8]>> {
        if let Some(chunk) = &mut self.chunk {
            if chunk.first <= document {
                match chunk.find(document)? {
                    InChunk::Found(occurrences) => return Ok(Some(occurrences)),
                    InChunk::Absent => return Ok(None),
                    InChunk::Beyond => {}
                }
            }
        }
        if !self.seek(document)? {
            return Ok(None);
        }
        let Some(chunk) = &mut self.chunk else {
            return Ok(None);
        };
        match chunk.find(document)? {
            InChunk::Found(occurrences) => Ok(Some(occurrences)),
            InChunk::Absent | InChunk::Beyond => Ok(None),
        }
    }

    /// Makes the chunk that may hold `document` (the last one starting at or below it) the
    /// current one; `false` when that is the current one already, which was read past
    /// `document` without finding it, or when the word has no such chunk.
    fn seek(&mut self, document: u32) -> ShardResult<bool> {
        let key = self.keys.of(document);
        let found = self.lookup.at_or_below(key)?;
        let first = match found {
            Some((key, bytes)) => self.keys.document_of(key)?.map(|first| (first, bytes)),
            None => None,
        };
        let Some((first, bytes)) = first else {
            self.chunk = None;
            return Ok(false);
        };
        if self
            .chunk
            .as_ref()
            .is_some_and(|chunk| chunk.first == first)
        {
            return Ok(false);
        }
        self.chunk = Some(CurrentChunk::new(first, bytes));
        Ok(true)
    }
}

/// Every document of one word with its encoded occurrences, in ascending order.
pub struct WordScan<'t> {
    chunks: ReadRange<'t>,
    keys: ChunkKeys,
    documents: Option<ChunkDocuments<'t>>,
}

/// Scans the chunks of `word` in `tree` (`word_position_chunks`).
pub fn scan_word<'t>(tree: &ReadTree<'t>, word: &[u8]) -> ShardResult<WordScan<'t>> {
    let keys = ChunkKeys::new(word);
    let chunks = tree.prefix(keys.prefix(), Direction::Forward)?;
    Ok(WordScan {
        chunks,
        keys,
        documents: None,
    })
}

impl<'t> WordScan<'t> {
    fn step(&mut self) -> ShardResult<Option<(u32, &'t [u8])>> {
        loop {
            if let Some(documents) = &mut self.documents {
                if let Some(entry) = documents.next() {
                    return entry.map(Some);
                }
            }
            let Some(chunk) = self.chunks.next() else {
                return Ok(None);
            };
            let (key, bytes) = chunk?;
            // The prefix holds only this word's keys: 0xFF never occurs in a word.
            let first = self
                .keys
                .document_of(key)?
                .ok_or_else(|| ShardError::corrupted("word positions key"))?;
            self.documents = Some(ChunkDocuments::new(first, bytes));
        }
    }
}

impl<'t> Iterator for WordScan<'t> {
    type Item = ShardResult<(u32, &'t [u8])>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.step() {
            Ok(entry) => entry.map(Ok),
            Err(error) => {
                self.documents = None;
                Some(Err(error))
            }
        }
    }
}
