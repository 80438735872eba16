//! The inverted index's pending changes, recorded in memory while documents are applied (one
//! list in operation order, grouped by word when written) and written to the word trees once
//! per flush, each tree in its key order:
//! `word_documents` (word), then `word_fields`, `word_position_buckets` and `word_position_chunks`
//! (word ‖ `0xFF` ‖ slot, or a chunk's first internal id); `word_pairs` (word ‖ `0xFF` ‖
//! following word) and `field_word_counts` (field id ‖ word count) from their own changes per
//! key.
//!
//! A document's words are only recorded (one hash of each word, one push of its change);
//! the postings of every key are worked out when written, from the changes sorted by
//! document: per key, the last change of a document that touches the key decides whether the
//! document is in it, exactly as applying the documents one by one would.
//!
//! Invariants: a word's changes are kept in operation order until written (the grouping by
//! word and the sort by document are both stable); the bytes written are those of
//! [`crate::index::inverted`]'s encodings, of [`crate::index::keys::encode_bitmap`] and, for
//! `word_position_chunks`, of [`crate::index::position_chunks`] (merged into the word's
//! chunks by [`super::position_merge`]).

use std::ops::Range;

use compact_str::CompactString;
use roaring::RoaringBitmap;
use rustc_hash::FxHashMap;
use storage_engine::{MergeWriter, WriteTransaction, WriteTree};

use super::dictionary_changes::{DictionaryChanges, KeyChange};
use super::position_merge::{PositionChanges, write_word_positions};
use super::segmented_vec::SegmentedVec;
use super::vocabulary::Vocabulary;
use crate::analysis::Occurrence;
use crate::error::ShardResult;
use crate::index::inverted::bucketed_position;
use crate::index::inverted::write_word_slot_key;
use crate::index::keys::{decode_bitmap, single_id_bytes, stored_single_id, write_bitmap};
use crate::index::position_chunks::ChunkPacker;
use crate::index::trees::{
    WORD_DOCUMENTS_TREE, WORD_FIELDS_TREE, WORD_POSITION_BUCKETS_TREE, WORD_POSITIONS_TREE,
};

/// One document's word added or removed, with the occurrences of the word in the document,
/// whose fields and position buckets the change touches.
///
/// Most words occur once in a document: that occurrence is held here (`single`), so writing
/// the change reads nothing else. Several occurrences are a range of
/// [`WordChanges::occurrences`] (`several`, empty for a single one): the flush reads the changes
/// word by word, and the occurrences, recorded document by document, are far apart then.
#[derive(Debug, Clone)]
struct Change {
    document: u32,
    add: bool,
    single: Occurrence,
    several: Range<u32>,
}

impl Change {
    /// The occurrences of the change, of `occurrences` (the flush's).
    fn occurrences<'c>(&'c self, occurrences: &'c [Occurrence]) -> &'c [Occurrence] {
        if self.several.is_empty() {
            std::slice::from_ref(&self.single)
        } else {
            &occurrences[self.several.start as usize..self.several.end as usize]
        }
    }
}

/// A [`Change`] as it waits for the write, with its word's number, in 16 bytes rather than 24:
/// pending changes are most of a batch's memory between flushes.
///
/// `tail` is the single occurrence (field ‖ position) or, for several, how many;
/// `start_and_flags` holds the operation (bit 31), whether there are several (bit 30) and
/// where they start in [`WordChanges::occurrences`] (bits 0-29).
#[derive(Debug, Clone, Copy)]
struct RecordedChange {
    number: u32,
    document: u32,
    tail: u32,
    start_and_flags: u32,
}

/// Word numbers a flush may give: a pair change ([`super::pair_changes`]) packs the right
/// word's number with its operation in one `u32`. A flush gives far fewer, since its bound is
/// in bytes and every word takes dozens.
pub(super) const WORD_NUMBERS_MAX: u32 = 1 << 31;

/// Occurrences a flush may record: where the several occurrences of a change start takes 30
/// bits of [`RecordedChange`]. A flush records far fewer, since its bound is in bytes.
const OCCURRENCES_MAX: u32 = 1 << 30;
const ADD_FLAG: u32 = 1 << 31;
const SEVERAL_FLAG: u32 = 1 << 30;

impl RecordedChange {
    fn new(number: u32, change: &Change) -> RecordedChange {
        let add = if change.add { ADD_FLAG } else { 0 };
        let (tail, start_and_flags) = if change.several.is_empty() {
            let single = u32::from(change.single.field) << 16 | u32::from(change.single.position);
            (single, add)
        } else {
            let count = change.several.end - change.several.start;
            (count, add | SEVERAL_FLAG | change.several.start)
        };
        RecordedChange {
            number,
            document: change.document,
            tail,
            start_and_flags,
        }
    }

    /// The change this records; `occurrences` are the flush's.
    fn change(self, occurrences: &[Occurrence]) -> Change {
        let add = self.start_and_flags & ADD_FLAG != 0;
        if self.start_and_flags & SEVERAL_FLAG == 0 {
            let [field_high, field_low, position_high, position_low] = self.tail.to_be_bytes();
            let single = Occurrence {
                field: u16::from_be_bytes([field_high, field_low]),
                position: u16::from_be_bytes([position_high, position_low]),
            };
            return Change {
                document: self.document,
                add,
                single,
                several: 0..0,
            };
        }
        let start = self.start_and_flags & !(ADD_FLAG | SEVERAL_FLAG);
        Change {
            document: self.document,
            add,
            single: occurrences[start as usize],
            several: start..start + self.tail,
        }
    }
}

/// The documents a flush adds to and removes from one key, each ascending and disjoint.
#[derive(Debug, Default)]
pub(super) struct Postings {
    added: Vec<u32>,
    removed: Vec<u32>,
}

impl Postings {
    /// Records that `document` (not below any document recorded before) is in the key
    /// (`add`) or not; a later mark of the same document replaces the earlier one.
    pub(super) fn mark(&mut self, document: u32, add: bool) {
        if self.added.last() == Some(&document) {
            if add {
                return;
            }
            self.added.pop();
        } else if self.removed.last() == Some(&document) {
            if !add {
                return;
            }
            self.removed.pop();
        }
        if add {
            self.added.push(document);
        } else {
            self.removed.push(document);
        }
    }

    pub(super) fn clear(&mut self) {
        self.added.clear();
        self.removed.clear();
    }

    /// Applies the postings to the bitmap stored under `key` (absent is empty) through
    /// `merge`, whose keys ascend: an emptied bitmap deletes the key. `buffer` is reused for
    /// the encoding. Answers whether the key was created, deleted or kept.
    pub(super) fn merge_into(
        &self,
        merge: &mut MergeWriter<'_>,
        key: &[u8],
        buffer: &mut Vec<u8>,
    ) -> ShardResult<KeyChange> {
        let stored = merge.seek(key)?;
        let existed = stored.is_some();
        // Most keys hold one document or none: those are worked out without a bitmap.
        let stored_single = match stored {
            None => Some(None),
            Some(bytes) => stored_single_id(bytes).map(Some),
        };
        if let Some(outcome) = stored_single.and_then(|single| self.applied_to_single(single)) {
            return Ok(match outcome {
                SingleOutcome::Unchanged => KeyChange::Kept,
                SingleOutcome::Empty => {
                    merge.delete()?;
                    KeyChange::Deleted
                }
                SingleOutcome::Single(document) => {
                    merge.put(&single_id_bytes(document))?;
                    if existed {
                        KeyChange::Kept
                    } else {
                        KeyChange::Created
                    }
                }
            });
        }
        let mut bitmap = match stored {
            Some(bytes) => decode_bitmap(bytes)?,
            None => RoaringBitmap::new(),
        };
        for document in &self.removed {
            bitmap.remove(*document);
        }
        // New documents usually come after every stored one: appended without a search.
        if bitmap.append(self.added.iter().copied()).is_err() {
            bitmap.extend(self.added.iter().copied());
        }
        if bitmap.is_empty() {
            merge.delete()?;
            return Ok(if existed {
                KeyChange::Deleted
            } else {
                KeyChange::Kept
            });
        }
        buffer.clear();
        write_bitmap(&bitmap, buffer);
        merge.put(buffer)?;
        Ok(if existed {
            KeyChange::Kept
        } else {
            KeyChange::Created
        })
    }
}

/// What postings make of a key holding at most one document, when they leave it at most one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SingleOutcome {
    /// The key holds what it held.
    Unchanged,
    /// The key holds no document (and goes, if it was stored).
    Empty,
    /// The key holds this one document.
    Single(u32),
}

impl Postings {
    /// The postings applied to a key holding `stored` (one document or none), when the key
    /// then holds at most one document; `None` when it holds more.
    fn applied_to_single(&self, stored: Option<u32>) -> Option<SingleOutcome> {
        let kept = stored.filter(|document| self.removed.binary_search(document).is_err());
        match (kept, self.added.as_slice()) {
            (None, []) if stored.is_none() => Some(SingleOutcome::Unchanged),
            (None, []) => Some(SingleOutcome::Empty),
            (None, [added]) => Some(SingleOutcome::Single(*added)),
            (Some(_), []) => Some(SingleOutcome::Unchanged),
            (Some(document), [added]) if document == *added => Some(SingleOutcome::Unchanged),
            _ => None,
        }
    }
}

/// The postings of one word's slots (field ids or position buckets), by slot; a word has
/// few, so a short list beats a map. Entries past `used` are spare (cleared) buffers.
#[derive(Debug, Default)]
struct SlotPostings {
    slots: Vec<(u16, Postings)>,
    used: usize,
}

impl SlotPostings {
    fn mark(&mut self, slot: u16, document: u32, add: bool) {
        let index = match self.slots[..self.used]
            .iter()
            .position(|(existing, _)| *existing == slot)
        {
            Some(index) => index,
            None => {
                if self.used == self.slots.len() {
                    self.slots.push((slot, Postings::default()));
                }
                self.slots[self.used].0 = slot;
                self.used += 1;
                self.used - 1
            }
        };
        self.slots[index].1.mark(document, add);
    }

    /// The used slots in slot order.
    fn sorted(&mut self) -> &[(u16, Postings)] {
        let used = &mut self.slots[..self.used];
        used.sort_unstable_by_key(|(slot, _)| *slot);
        used
    }

    fn clear(&mut self) {
        for (_, postings) in &mut self.slots[..self.used] {
            postings.clear();
        }
        self.used = 0;
    }
}

/// The pending changes of the word trees.
///
/// Every word recorded since the last write has a number, its place in `words`, which
/// [`super::pair_changes::PairChanges`] records pairs with (numbers last until the next write).
/// The changes are kept in one list in operation order, each with its word's number:
/// recording one is a push at the list's end, and the write sorts them by word once.
#[derive(Debug, Default)]
pub(super) struct WordChanges {
    /// Word → its number. A word of up to 24 bytes is held in the key itself, so a lookup
    /// compares it without reading another allocation (one cache miss per word of a document,
    /// not two).
    numbers: FxHashMap<CompactString, u32>,
    /// By number: the word.
    words: Vec<CompactString>,
    /// Every change with its word's number, in operation order.
    changes: SegmentedVec<RecordedChange>,
    /// The occurrences of the changes with several, back to back.
    occurrences: Vec<Occurrence>,
    /// Heap bytes of the words, as [`WordChanges::number`] counts them.
    word_bytes: usize,
}

/// Heap bytes the allocator may round one allocation up by.
pub(super) const ALLOCATION_SLACK_BYTES: usize = 16;
/// Heap bytes a word new to the changes takes besides its text (held twice): the slack of
/// its two allocations (a word longer than 24 bytes has them).
const NEW_WORD_BYTES: usize = 2 * ALLOCATION_SLACK_BYTES;

/// The changes of one document: the run starting at `start` (changes sorted by document).
fn document_run(changes: &[Change], start: usize) -> Range<usize> {
    let document = changes[start].document;
    let length = changes[start..]
        .iter()
        .take_while(|change| change.document == document)
        .count();
    start..start + length
}

/// Reused buffers of a flush.
#[derive(Default)]
struct Scratch {
    documents: Postings,
    fields: SlotPostings,
    buckets: SlotPostings,
    positions: PositionChanges,
    packer: ChunkPacker,
    key: Vec<u8>,
    value: Vec<u8>,
}

impl WordChanges {
    /// Adds (`add`) or removes the occurrences of `word` in `document` (sorted by field, then
    /// position); answers the word's number.
    #[cfg(test)]
    pub fn record(
        &mut self,
        word: &str,
        document: u32,
        occurrences: &[Occurrence],
        add: bool,
    ) -> u32 {
        let number = self.number(word);
        let (first, rest) = occurrences
            .split_first()
            .expect("a recorded word occurs in its document");
        self.record_number(number, document, *first, rest.iter().copied(), add);
        number
    }

    /// The number of `word`, which it takes now if it has none yet (the word is copied only
    /// then).
    pub fn number(&mut self, word: &str) -> u32 {
        if let Some(&number) = self.numbers.get(word) {
            return number;
        }
        let number = u32::try_from(self.words.len())
            .ok()
            .filter(|&number| number < WORD_NUMBERS_MAX)
            .expect("a flush records fewer than WORD_NUMBERS_MAX words (its bound is in bytes)");
        self.word_bytes += 2 * word.len() + NEW_WORD_BYTES;
        let word = CompactString::from(word);
        self.numbers.insert(word.clone(), number);
        self.words.push(word);
        number
    }

    /// Adds (`add`) or removes the occurrences `first` then `rest` (sorted by field, then
    /// position) in `document` of the word numbered `number` (by [`WordChanges::number`]).
    pub fn record_number(
        &mut self,
        number: u32,
        document: u32,
        first: Occurrence,
        mut rest: impl Iterator<Item = Occurrence>,
        add: bool,
    ) {
        let several = match rest.next() {
            None => 0..0,
            Some(second) => {
                let start = self.occurrence_number();
                self.occurrences.push(first);
                self.occurrences.push(second);
                self.occurrences.extend(rest);
                start..self.occurrence_number()
            }
        };
        let change = Change {
            document,
            add,
            single: first,
            several,
        };
        self.changes.push(RecordedChange::new(number, &change));
    }

    /// The number the next occurrence recorded takes in `occurrences`.
    fn occurrence_number(&self) -> u32 {
        u32::try_from(self.occurrences.len())
            .ok()
            .filter(|&number| number < OCCURRENCES_MAX)
            .expect(
                "a flush records fewer than OCCURRENCES_MAX occurrences (its bound is in bytes)",
            )
    }

    /// About the heap bytes the changes take: what bounds a batch's memory between writes.
    pub fn estimated_bytes(&self) -> usize {
        self.word_bytes
            + self.changes.heap_bytes()
            + self.occurrences.capacity() * size_of::<Occurrence>()
            + self.numbers.capacity() * size_of::<(CompactString, u32)>()
            + self.words.capacity() * size_of::<CompactString>()
    }

    /// The words recorded since the last write, with their ranks in the trees' key orders;
    /// the word numbers are forgotten (the changes keep them until [`WordChanges::write`]).
    pub fn take_vocabulary(&mut self) -> Vocabulary {
        self.numbers.clear();
        self.word_bytes = 0;
        Vocabulary::new(std::mem::take(&mut self.words))
    }

    /// Writes every pending change into the word trees and empties the changes; `vocabulary`
    /// is what [`WordChanges::take_vocabulary`] took for them. The words whose
    /// `word_documents` key appears or goes are recorded in `dictionary`.
    pub fn write(
        &mut self,
        transaction: &WriteTransaction,
        vocabulary: &Vocabulary,
        dictionary: &mut DictionaryChanges,
    ) -> ShardResult<()> {
        let occurrences = std::mem::take(&mut self.occurrences);
        let changes = std::mem::take(&mut self.changes);
        if vocabulary.is_empty() {
            return Ok(());
        }
        let mut grouped = ChangesByWord::new(vocabulary, changes, &occurrences);
        let mut scratch = Scratch::default();
        let tree = transaction.create_tree(WORD_DOCUMENTS_TREE)?;
        let mut merge = tree.merge_writer();
        for rank in 0..grouped.words() {
            let changes = grouped.of_mut(rank);
            if !changes.is_sorted_by_key(|change| change.document) {
                // Stable: a document's changes stay in operation order.
                changes.sort_by_key(|change| change.document);
            }
            scratch.documents.clear();
            let mut start = 0;
            while start < changes.len() {
                let run = document_run(changes, start);
                let last = &changes[run.end - 1];
                scratch.documents.mark(last.document, last.add);
                start = run.end;
            }
            let word = vocabulary.word(rank);
            let change =
                scratch
                    .documents
                    .merge_into(&mut merge, word.as_bytes(), &mut scratch.value)?;
            dictionary.record(word.as_bytes(), change);
        }
        merge.finish()?;
        let fields = transaction.create_tree(WORD_FIELDS_TREE)?;
        let buckets = transaction.create_tree(WORD_POSITION_BUCKETS_TREE)?;
        let mut trees = SlotTrees {
            fields: fields.merge_writer(),
            buckets: buckets.merge_writer(),
            positions: transaction.create_tree(WORD_POSITIONS_TREE)?,
        };
        for terminated_rank in 0..grouped.words() {
            let rank = vocabulary.byte_rank_of_terminated(terminated_rank);
            let word = vocabulary.word(rank);
            trees.write_word(word, grouped.of(rank), &occurrences, &mut scratch)?;
        }
        trees.fields.finish()?;
        trees.buckets.finish()?;
        Ok(())
    }
}

/// A flush's changes grouped by word: the words in byte order, each word's changes in
/// operation order (a stable counting sort by the words' ranks).
struct ChangesByWord {
    changes: Vec<Change>,
    /// By rank in byte order: where the word's changes start (then where the last ends).
    starts: Vec<usize>,
}

impl ChangesByWord {
    fn new(
        vocabulary: &Vocabulary,
        recorded: SegmentedVec<RecordedChange>,
        occurrences: &[Occurrence],
    ) -> ChangesByWord {
        let mut starts = vec![0usize; vocabulary.len() + 1];
        for (index, change) in recorded.iter().enumerate() {
            turns::checkpoint_at(index);
            starts[vocabulary.byte_rank(change.number) as usize + 1] += 1;
        }
        for rank in 1..starts.len() {
            starts[rank] += starts[rank - 1];
        }
        let mut next = starts.clone();
        let placeholder = Change {
            document: 0,
            add: false,
            single: Occurrence {
                field: 0,
                position: 0,
            },
            several: 0..0,
        };
        let mut changes = turns::filled_vec(recorded.len(), &placeholder);
        for (index, recorded) in recorded.into_iter().enumerate() {
            turns::checkpoint_at(index);
            let slot = &mut next[vocabulary.byte_rank(recorded.number) as usize];
            changes[*slot] = recorded.change(occurrences);
            *slot += 1;
        }
        ChangesByWord { changes, starts }
    }

    /// How many words (ranks).
    fn words(&self) -> u32 {
        u32::try_from(self.starts.len() - 1).expect("word ranks are u32")
    }

    /// The changes of the word of rank `rank` in byte order.
    fn of(&self, rank: u32) -> &[Change] {
        let rank = rank as usize;
        &self.changes[self.starts[rank]..self.starts[rank + 1]]
    }

    fn of_mut(&mut self, rank: u32) -> &mut [Change] {
        let rank = rank as usize;
        &mut self.changes[self.starts[rank]..self.starts[rank + 1]]
    }
}

/// The pending changes of a tree of bitmaps (`word_pairs`, `field_word_counts`): per key, the
/// documents added and removed, in operation order (written like the word trees: per key, a
/// document's last change decides).
#[derive(Debug, Default)]
pub(super) struct KeyChanges {
    keys: FxHashMap<Box<[u8]>, Vec<DocumentChange>>,
    /// Heap bytes of the keys and their change lists, as [`KeyChanges::record`] counts them.
    list_bytes: usize,
}

/// A document added (`true`) to or removed from a key.
type DocumentChange = (u32, bool);

impl KeyChanges {
    /// Adds (`add`) or removes `document` in `key`.
    pub fn record(&mut self, key: &[u8], document: u32, add: bool) {
        match self.keys.get_mut(key) {
            Some(changes) => changes.push((document, add)),
            None => {
                self.list_bytes += key.len()
                    + 2 * ALLOCATION_SLACK_BYTES
                    + size_of::<(Box<[u8]>, Vec<DocumentChange>)>();
                self.keys.insert(key.into(), vec![(document, add)]);
            }
        }
        self.list_bytes += 2 * size_of::<DocumentChange>();
    }

    /// About the heap bytes the changes take.
    pub fn estimated_bytes(&self) -> usize {
        self.list_bytes
    }

    /// Writes every pending change into the tree `name` (created even when there is none, so
    /// that a shard with words always has the tree) and empties the changes.
    pub fn write(&mut self, transaction: &WriteTransaction, name: &str) -> ShardResult<()> {
        let tree = transaction.create_tree(name)?;
        self.list_bytes = 0;
        let mut entries: Vec<_> = std::mem::take(&mut self.keys).into_iter().collect();
        turns::sort_unstable_by(&mut entries, |left, right| left.0.cmp(&right.0));
        let mut postings = Postings::default();
        let mut value = Vec::new();
        let mut merge = tree.merge_writer();
        for (key, mut changes) in entries {
            if !changes.is_sorted_by_key(|(document, _)| *document) {
                // Stable: a document's changes stay in operation order.
                changes.sort_by_key(|(document, _)| *document);
            }
            postings.clear();
            // `mark` keeps a document's last change: its changes in operation order suffice.
            for (document, add) in changes {
                postings.mark(document, add);
            }
            postings.merge_into(&mut merge, &key, &mut value)?;
        }
        merge.finish()?;
        Ok(())
    }
}

/// The trees keyed by word ‖ `0xFF` ‖ suffix: the slot trees through merge writers (their keys
/// are written in ascending order), the positions tree directly (its chunks are looked up
/// around each key).
struct SlotTrees<'t> {
    fields: MergeWriter<'t>,
    buckets: MergeWriter<'t>,
    positions: WriteTree<'t>,
}

impl SlotTrees<'_> {
    /// Writes the slot postings and the positions of `word`, whose `changes` are sorted by
    /// document.
    fn write_word(
        &mut self,
        word: &str,
        changes: &[Change],
        occurrences: &[Occurrence],
        scratch: &mut Scratch,
    ) -> ShardResult<()> {
        scratch.fields.clear();
        scratch.buckets.clear();
        scratch.positions.clear();
        let (mut start, mut documents) = (0, 0);
        while start < changes.len() {
            turns::checkpoint_at(documents);
            documents += 1;
            let run = document_run(changes, start);
            for change in &changes[run.clone()] {
                for occurrence in change.occurrences(occurrences) {
                    let (document, add) = (change.document, change.add);
                    scratch.fields.mark(occurrence.field, document, add);
                    let bucket = bucketed_position(occurrence.position);
                    scratch.buckets.mark(bucket, document, add);
                }
            }
            let last = &changes[run.end - 1];
            if last.add {
                scratch
                    .positions
                    .set(last.document, last.occurrences(occurrences));
            } else {
                scratch.positions.remove(last.document);
            }
            start = run.end;
        }
        write_word_positions(
            &self.positions,
            word,
            &scratch.positions,
            &mut scratch.packer,
        )?;
        for (merge, slots) in [
            (&mut self.fields, &mut scratch.fields),
            (&mut self.buckets, &mut scratch.buckets),
        ] {
            for (slot, postings) in slots.sorted() {
                write_word_slot_key(&mut scratch.key, word, *slot);
                postings.merge_into(merge, &scratch.key, &mut scratch.value)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_change_gives_back_the_change_it_records() {
        let occurrences: Vec<Occurrence> = (0..40_u16)
            .map(|position| Occurrence {
                field: position % 3,
                position,
            })
            .collect();
        let extremes = [
            Occurrence {
                field: 0,
                position: 0,
            },
            Occurrence {
                field: u16::MAX,
                position: u16::MAX,
            },
            Occurrence {
                field: 0x1234,
                position: 0xFEDC,
            },
        ];
        let mut changes = Vec::new();
        for add in [false, true] {
            for single in extremes {
                changes.push(Change {
                    document: u32::MAX,
                    add,
                    single,
                    several: 0..0,
                });
            }
            for several in [0..2, 5..40, 38..40] {
                changes.push(Change {
                    document: 7,
                    add,
                    single: occurrences[several.start as usize],
                    several,
                });
            }
        }
        for (number, change) in (0..).zip(&changes) {
            let recorded = RecordedChange::new(number, change);
            assert_eq!(recorded.number, number);
            let back = recorded.change(&occurrences);
            assert_eq!(
                (back.document, back.add, back.single, back.several.clone()),
                (
                    change.document,
                    change.add,
                    change.single,
                    change.several.clone()
                )
            );
            assert_eq!(
                back.occurrences(&occurrences),
                change.occurrences(&occurrences)
            );
        }
        assert_eq!(size_of::<RecordedChange>(), 16);
    }

    /// The bitmap `postings` leave of a key holding `stored`, worked out the general way.
    fn applied(postings: &Postings, stored: &[u32]) -> Vec<u32> {
        let mut bitmap: RoaringBitmap = stored.iter().copied().collect();
        for document in &postings.removed {
            bitmap.remove(*document);
        }
        bitmap.extend(postings.added.iter().copied());
        bitmap.into_iter().collect()
    }

    #[test]
    fn keys_of_one_document_or_none_are_worked_out_as_bitmaps_would_be() {
        let documents = [3, 5, 9];
        let mut cases = 0;
        // Every sequence of up to three marks over three documents, on keys holding none or
        // one of them.
        for marks in 0..(1 + 6 + 36 + 216) {
            let mut postings = Postings::default();
            let (mut code, mut count, mut last) = (marks, 0, 0);
            let length = match marks {
                0 => 0,
                1..=6 => 1,
                7..=42 => 2,
                _ => 3,
            };
            code -= [0, 1, 7, 43][length];
            while count < length {
                let mark = code % 6;
                code /= 6;
                count += 1;
                // Postings take documents in ascending order (a document's marks in a row).
                let document = documents[mark / 2];
                if document < last {
                    continue;
                }
                last = document;
                postings.mark(document, mark % 2 == 0);
            }
            for stored in [None, Some(3), Some(5), Some(7)] {
                let stored_list: Vec<u32> = stored.into_iter().collect();
                let expected = applied(&postings, &stored_list);
                match postings.applied_to_single(stored) {
                    Some(SingleOutcome::Unchanged) => {
                        assert_eq!(expected, stored_list, "{postings:?} on {stored:?}")
                    }
                    Some(SingleOutcome::Empty) => {
                        assert!(expected.is_empty() && stored.is_some())
                    }
                    Some(SingleOutcome::Single(document)) => {
                        assert_eq!(expected, vec![document]);
                        assert_ne!(stored, Some(document), "a kept key is unchanged");
                    }
                    None => assert!(expected.len() > 1, "{postings:?} on {stored:?}"),
                }
                cases += 1;
            }
        }
        assert!(cases > 1000);
    }
}
