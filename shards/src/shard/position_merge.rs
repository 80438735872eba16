//! Applying one word's changes of a flush to its `word_position_chunks` chunks (the encoding and
//! its invariants are in [`crate::index::position_chunks`]).
//!
//! The changes are the word's documents in ascending order, each either set (in the word,
//! with these occurrences) or removed. They are cut into regions, one per chunk they touch:
//! a region runs from the chunk holding its first change (the last chunk starting at or below
//! it; none when the change is below the word's first chunk) to the next chunk. Each region's
//! stored documents and changes are merged, packed again from the region's start, and
//! written; the old chunk's key is deleted when no new chunk starts where it did (its first
//! document was removed, or every document). Chunks the changes do not reach are not read.
//!
//! The common case, every change at or above the word's last chunk (new documents take
//! increasing ids), is one region: the last chunk is read, appended to and split when full.
//!
//! Invariants: documents of a region stay below the next chunk's key, so regions never
//! overlap another chunk; a chunk written again with unchanged bytes is not written.

use std::borrow::Cow;
use std::ops::{Bound, Range};

use storage_engine::{Direction, WriteTree};

use crate::analysis::Occurrence;
use crate::error::ShardResult;
use crate::index::position_chunks::{ChunkDocuments, ChunkKeys, ChunkPacker, append_occurrences};

/// One flush's changes of one word's positions, documents ascending.
#[derive(Debug, Default)]
pub(super) struct PositionChanges {
    /// Per document, its encoded occurrences (a range of `encoded`) or `None` for removed.
    documents: Vec<(u32, Option<Range<usize>>)>,
    encoded: Vec<u8>,
}

impl PositionChanges {
    pub fn clear(&mut self) {
        self.documents.clear();
        self.encoded.clear();
    }

    /// Records that `document` (above every document recorded since the last clear) holds
    /// the word at `occurrences`.
    pub fn set(&mut self, document: u32, occurrences: &[Occurrence]) {
        let start = self.encoded.len();
        append_occurrences(&mut self.encoded, occurrences);
        self.documents
            .push((document, Some(start..self.encoded.len())));
    }

    /// Records that `document` (above every document recorded since the last clear) does not
    /// hold the word.
    pub fn remove(&mut self, document: u32) {
        self.documents.push((document, None));
    }
}

/// A stored chunk: its first document and its bytes.
struct StoredChunk<'t> {
    first: u32,
    bytes: Cow<'t, [u8]>,
}

/// Writes `changes` into the chunks of `word` in `tree` (`word_position_chunks`); `packer` is
/// reused from word to word.
pub(super) fn write_word_positions(
    tree: &WriteTree<'_>,
    word: &str,
    changes: &PositionChanges,
    packer: &mut ChunkPacker,
) -> ShardResult<()> {
    let Some(&(lowest, _)) = changes.documents.first() else {
        return Ok(());
    };
    let mut keys = ChunkKeys::new(word.as_bytes());
    let last = chunk_at_or_below(tree, &mut keys, u32::MAX)?;
    if last.as_ref().is_none_or(|last| last.first <= lowest) {
        let region = Region {
            old: last.as_ref(),
            changes: &changes.documents,
            encoded: &changes.encoded,
        };
        return region.write(tree, &mut keys, packer);
    }
    let mut rest = changes.documents.as_slice();
    while let Some(&(document, _)) = rest.first() {
        let old = chunk_at_or_below(tree, &mut keys, document)?;
        let end = match first_chunk_above(tree, &mut keys, document)? {
            Some(next) => rest.partition_point(|(document, _)| *document < next),
            None => rest.len(),
        };
        let region = Region {
            old: old.as_ref(),
            changes: &rest[..end],
            encoded: &changes.encoded,
        };
        region.write(tree, &mut keys, packer)?;
        rest = &rest[end..];
    }
    Ok(())
}

/// The last chunk of the word starting at or below `document`.
fn chunk_at_or_below<'t>(
    tree: &WriteTree<'t>,
    keys: &mut ChunkKeys,
    document: u32,
) -> ShardResult<Option<StoredChunk<'t>>> {
    let key = keys.of(document);
    let found = tree
        .range(Bound::Unbounded, Bound::Included(key), Direction::Backward)?
        .next()
        .transpose()?;
    let Some((key, bytes)) = found else {
        return Ok(None);
    };
    Ok(keys
        .document_of(&key)?
        .map(|first| StoredChunk { first, bytes }))
}

/// The first document of the word's first chunk starting above `document`.
fn first_chunk_above(
    tree: &WriteTree<'_>,
    keys: &mut ChunkKeys,
    document: u32,
) -> ShardResult<Option<u32>> {
    let key = keys.of(document);
    let found = tree
        .range(Bound::Excluded(key), Bound::Unbounded, Direction::Forward)?
        .next()
        .transpose()?;
    match found {
        Some((key, _)) => keys.document_of(&key),
        None => Ok(None),
    }
}

/// The changes below the next chunk, with the chunk they start in (if any).
struct Region<'a, 't> {
    old: Option<&'a StoredChunk<'t>>,
    changes: &'a [(u32, Option<Range<usize>>)],
    encoded: &'a [u8],
}

impl Region<'_, '_> {
    /// Merges the old chunk's documents with the changes, packs them into chunks and writes
    /// those; deletes the old chunk's key when no chunk starts there any more.
    fn write(
        &self,
        tree: &WriteTree<'_>,
        keys: &mut ChunkKeys,
        packer: &mut ChunkPacker,
    ) -> ShardResult<()> {
        let mut old_key_kept = false;
        let mut emit = |first: u32, bytes: &[u8]| -> ShardResult<()> {
            if let Some(old) = self.old.filter(|old| old.first == first) {
                old_key_kept = true;
                if *old.bytes == *bytes {
                    return Ok(());
                }
            }
            tree.put(keys.of(first), bytes)?;
            Ok(())
        };
        self.merge(packer, &mut emit)?;
        packer.finish(&mut emit)?;
        if let Some(old) = self.old.filter(|_| !old_key_kept) {
            tree.delete(keys.of(old.first))?;
        }
        Ok(())
    }

    /// Pushes into `packer`, in ascending order, the old documents no change touches and the
    /// documents the changes set.
    fn merge(
        &self,
        packer: &mut ChunkPacker,
        emit: &mut impl FnMut(u32, &[u8]) -> ShardResult<()>,
    ) -> ShardResult<()> {
        let mut old_documents = self
            .old
            .map(|old| ChunkDocuments::new(old.first, &old.bytes));
        let mut next_old = || -> ShardResult<Option<(u32, &[u8])>> {
            match old_documents.as_mut().and_then(Iterator::next) {
                Some(entry) => entry.map(Some),
                None => Ok(None),
            }
        };
        let mut old = next_old()?;
        for (document, change) in self.changes {
            while let Some((old_document, occurrences)) = old.filter(|(old, _)| old < document) {
                packer.push(old_document, occurrences, emit)?;
                old = next_old()?;
            }
            if old.is_some_and(|(old, _)| old == *document) {
                old = next_old()?;
            }
            if let Some(range) = change {
                packer.push(*document, &self.encoded[range.clone()], emit)?;
            }
        }
        while let Some((old_document, occurrences)) = old {
            packer.push(old_document, occurrences, emit)?;
            old = next_old()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use storage_engine::ReadTree;

    use super::super::word_changes::WordChanges;
    use crate::analysis::Occurrence;
    use crate::index::position_chunks::{
        ChunkDocuments, POSITION_CHUNK_BYTES_MAX, decode_occurrences_into, split_chunk_key,
    };
    use crate::index::trees::WORD_POSITIONS_TREE;
    use crate::search::word_positions::{WordPositions, scan_word};

    use crate::test_database::scratch_database;
    use crate::test_random::Random;

    /// (word, document) → the word's occurrences in the document.
    type Model = BTreeMap<(String, u32), Vec<Occurrence>>;

    /// Words whose keys sort next to each other (a word before the longer words it starts,
    /// in `0xFF`-terminated order), and the longest word a key may hold.
    fn words() -> Vec<String> {
        let mut words: Vec<String> = ["a", "ab", "abc", "b", "é"]
            .iter()
            .map(|word| (*word).to_owned())
            .collect();
        words.push("w".repeat(crate::analysis::WORD_BYTES_MAX));
        words
    }

    fn random_occurrences(random: &mut Random) -> Vec<Occurrence> {
        let count = match random.below(40) {
            0 => 150 + random.below(300),
            1..=8 => 2 + random.below(6),
            _ => 1,
        };
        let fields = [0, 1, 2, 700, u16::MAX];
        let mut occurrences: Vec<Occurrence> = (0..count)
            .map(|_| Occurrence {
                field: fields[random.below(fields.len() as u64) as usize],
                position: match random.below(10) {
                    0 => u16::MAX - random.below(3) as u16,
                    1 => random.below(u64::from(u16::MAX) + 1) as u16,
                    _ => random.below(200) as u16,
                },
            })
            .collect();
        occurrences.sort_unstable();
        occurrences.dedup();
        occurrences
    }

    /// A document to change: mostly a new one above every other, else one anywhere below
    /// (stored or not), rarely one at the top of the id range.
    fn random_document(random: &mut Random, next_id: &mut u32) -> u32 {
        match random.below(20) {
            0..=10 => {
                let gap = if random.below(30) == 0 {
                    random.below(1 << 20)
                } else {
                    random.below(3)
                };
                *next_id += 1 + gap;
                *next_id
            }
            11..=18 => random.below(u64::from(*next_id) + 1),
            _ => u32::MAX - random.below(4),
        }
    }

    /// One round of random changes, recorded as applying documents records them and applied
    /// to the model.
    fn random_round(
        random: &mut Random,
        words: &[String],
        next_id: &mut u32,
        model: &mut Model,
    ) -> WordChanges {
        let mut changes = WordChanges::default();
        let operations = 1 + random.below(400);
        for _ in 0..operations {
            let document = random_document(random, next_id);
            let word = &words[random.below(words.len() as u64) as usize];
            let key = (word.clone(), document);
            let add = random.below(4) != 0;
            match model.get(&key) {
                Some(old) => {
                    changes.record(word, document, old, false);
                }
                // Removing what is not there changes nothing.
                None if !add => {
                    changes.record(word, document, &random_occurrences(random), false);
                }
                None => {}
            }
            if add {
                let occurrences = random_occurrences(random);
                changes.record(word, document, &occurrences, true);
                model.insert(key, occurrences);
            } else {
                model.remove(&key);
            }
        }
        changes
    }

    fn decoded(bytes: &[u8]) -> Vec<Occurrence> {
        let mut occurrences = Vec::new();
        decode_occurrences_into(bytes, &mut occurrences).expect("the occurrences decode");
        occurrences
    }

    /// Checks the chunk invariants of every word and that the chunks hold exactly the model;
    /// returns the most chunks a word has.
    fn check_chunks(tree: &ReadTree<'_>, model: &Model) -> usize {
        let mut stored = Model::new();
        let mut chunks_of: BTreeMap<Vec<u8>, usize> = BTreeMap::new();
        let mut previous: Option<(Vec<u8>, u32)> = None;
        for entry in tree
            .range(
                std::ops::Bound::Unbounded,
                std::ops::Bound::Unbounded,
                storage_engine::Direction::Forward,
            )
            .expect("the tree reads")
        {
            let (key, bytes) = entry.expect("an entry reads");
            let (word, first) = split_chunk_key(key).expect("a chunk key");
            let documents: Vec<(u32, &[u8])> = ChunkDocuments::new(first, bytes)
                .collect::<Result<_, _>>()
                .expect("the chunk decodes");
            assert!(!documents.is_empty(), "no empty chunk");
            assert_eq!(documents[0].0, first, "keyed by its first document");
            assert!(
                bytes.len() <= POSITION_CHUNK_BYTES_MAX || documents.len() == 1,
                "a chunk of {} bytes holds {} documents",
                bytes.len(),
                documents.len()
            );
            if let Some((previous_word, previous_last)) = &previous {
                if previous_word == word {
                    assert!(*previous_last < first, "chunks are disjoint and ascending");
                }
            }
            let last = documents.last().map_or(first, |(document, _)| *document);
            previous = Some((word.to_vec(), last));
            *chunks_of.entry(word.to_vec()).or_default() += 1;
            let word = String::from_utf8(word.to_vec()).expect("a UTF-8 word");
            for (document, occurrences) in documents {
                stored.insert((word.clone(), document), decoded(occurrences));
            }
        }
        assert_eq!(&stored, model, "the chunks hold the model");
        chunks_of.into_values().max().unwrap_or(0)
    }

    /// Reads each word back through a scan, ascending lookups (of stored and absent
    /// documents) and lookups in random order.
    fn check_reads(tree: &ReadTree<'_>, model: &Model, words: &[String], random: &mut Random) {
        for word in words {
            let expected: Vec<(u32, Vec<Occurrence>)> = model
                .iter()
                .filter(|((stored, _), _)| stored == word)
                .map(|((_, document), occurrences)| (*document, occurrences.clone()))
                .collect();
            let scanned: Vec<(u32, Vec<Occurrence>)> = scan_word(tree, word.as_bytes())
                .expect("the scan starts")
                .map(|entry| {
                    let (document, bytes) = entry.expect("the scan reads");
                    (document, decoded(bytes))
                })
                .collect();
            assert_eq!(scanned, expected, "scan of {word:?}");

            let mut asked: Vec<u32> = expected
                .iter()
                .map(|(document, _)| *document)
                .filter(|_| random.below(3) != 0)
                .collect();
            let top = expected.last().map_or(10, |(document, _)| *document);
            asked.extend((0..20).map(|_| random.below(u64::from(top) + 2)));
            asked.extend([0, u32::MAX]);
            asked.sort_unstable();
            asked.dedup();
            let stored: BTreeMap<u32, &Vec<Occurrence>> = expected
                .iter()
                .map(|(document, occurrences)| (*document, occurrences))
                .collect();
            let mut lookup = WordPositions::new(*tree, word.as_bytes());
            for document in &asked {
                let found = lookup.get(*document).expect("the lookup reads");
                assert_eq!(
                    found.map(decoded).as_ref(),
                    stored.get(document).copied(),
                    "{word:?} in {document}, ascending"
                );
            }
            let mut lookup = WordPositions::new(*tree, word.as_bytes());
            for _ in 0..asked.len() {
                let document = asked[random.below(asked.len() as u64) as usize];
                let found = lookup.get(document).expect("the lookup reads");
                assert_eq!(
                    found.map(decoded).as_ref(),
                    stored.get(&document).copied(),
                    "{word:?} in {document}, in random order"
                );
            }
        }
    }

    #[test]
    fn random_changes_flushed_in_rounds_keep_the_chunks_equal_to_a_model() {
        let words = words();
        let mut most_chunks = 0;
        for case in 0..4_u64 {
            let mut random = Random(0x9E37_79B9_7F4A_7C15 ^ (case + 1).wrapping_mul(0xA24B));
            let (_directory, database) = scratch_database();
            let mut model = Model::new();
            let mut next_id = 0;
            for round in 0..14 {
                let mut changes = random_round(&mut random, &words, &mut next_id, &mut model);
                let write = database.begin_write().expect("a write begins");
                let vocabulary = changes.take_vocabulary();
                changes
                    .write(&write, &vocabulary, &mut Default::default())
                    .expect("the changes are written");
                write.commit().expect("the round commits");

                let read = database.begin_read();
                let tree = read
                    .open_tree(WORD_POSITIONS_TREE)
                    .expect("the catalog reads")
                    .expect("the tree exists");
                let chunks = check_chunks(&tree, &model);
                most_chunks = most_chunks.max(chunks);
                check_reads(&tree, &model, &words, &mut random);
                println!(
                    "case {case} round {round}: {} entries, {chunks} chunks at most",
                    model.len()
                );
            }
        }
        assert!(
            most_chunks >= 5,
            "some word spans several chunks ({most_chunks})"
        );
    }
}
