//! The pending changes of one pair tree (word ‖ `0xFF` ‖ the word a given distance after it
//! in a field, see [`crate::index::trees::WORD_PAIR_TREES`]): per pair of word numbers (see
//! [`WordChanges`]), the documents added and removed, kept as one flat list in operation
//! order and sorted into key order when written.
//!
//! A pair is recorded as two word numbers, not as its key bytes: recording costs a push, and
//! the keys are made once per distinct pair when written.
//!
//! Invariants: the numbers are those of the [`WordChanges`] the pairs are written with (so
//! pairs are written before the words, whose write forgets the numbers); per key, a
//! document's last change decides whether the document is in the key, as applying the
//! documents one by one would.

use storage_engine::{WriteTransaction, WriteTree};

use super::segmented_vec::SegmentedVec;
use super::vocabulary::Vocabulary;
use super::word_changes::{Postings, WORD_NUMBERS_MAX};
use crate::error::ShardResult;
use crate::index::inverted::write_pair_key;

/// One document's pair added or removed, in 12 bytes: the right word's number shares its
/// `u32` with the operation (word numbers stay below [`WORD_NUMBERS_MAX`]).
#[derive(Debug, Clone, Copy)]
struct PairChange {
    left: u32,
    /// The right word's number, shifted left by one, with the operation (1 for an addition) in
    /// the low bit.
    right_and_add: u32,
    document: u32,
}

impl PairChange {
    fn right(self) -> u32 {
        self.right_and_add >> 1
    }

    fn add(self) -> bool {
        self.right_and_add & 1 == 1
    }
}

/// The pending changes of one pair tree.
#[derive(Debug, Default)]
pub(super) struct PairChanges {
    /// In operation order.
    changes: SegmentedVec<PairChange>,
}

/// Changes a flush may hold: their sequence numbers take 31 bits, the operation the 32nd.
const CHANGES_MAX: usize = 1 << 31;

impl PairChanges {
    /// About the heap bytes the changes take.
    pub fn estimated_bytes(&self) -> usize {
        self.changes.heap_bytes()
    }

    /// Adds (`add`) or removes `document` in the pair of words numbered `left` and `right`.
    pub fn record(&mut self, left: u32, right: u32, document: u32, add: bool) {
        debug_assert!(
            right < WORD_NUMBERS_MAX,
            "WordChanges::number bounds numbers"
        );
        self.changes.push(PairChange {
            left,
            right_and_add: right << 1 | u32::from(add),
            document,
        });
    }

    /// Writes every pending change into the pair tree named `tree` (created even when there
    /// is none, so that a shard with words always has the tree) and empties the changes;
    /// `vocabulary` holds the words the pairs were recorded with (by number).
    pub fn write(
        &mut self,
        transaction: &WriteTransaction,
        tree: &str,
        vocabulary: &Vocabulary,
    ) -> ShardResult<()> {
        let tree = transaction.create_tree(tree)?;
        if self.changes.is_empty() {
            return Ok(());
        }
        let changes = std::mem::take(&mut self.changes);
        // Applying the changes part after part, in operation order, is applying them all.
        let mut part = Vec::with_capacity(changes.len().min(CHANGES_MAX));
        for change in changes {
            if part.len() == CHANGES_MAX {
                write_part(&tree, vocabulary, std::mem::take(&mut part))?;
            }
            turns::checkpoint_at(part.len());
            part.push(key_order(vocabulary, change, part.len()));
        }
        write_part(&tree, vocabulary, part)
    }
}

/// A change as the writing sorts it: (left rank in terminated order, right rank in byte
/// order, document, sequence ‖ operation). Per key, by document, then operation order, so that
/// `mark` keeps a document's last change; everything the writing needs is in the tuple.
type OrderedChange = (u32, u32, u32, u32);

/// `change`, the `sequence`th of its part, as the writing sorts it.
fn key_order(vocabulary: &Vocabulary, change: PairChange, sequence: usize) -> OrderedChange {
    let sequence = u32::try_from(sequence).expect("a part holds at most CHANGES_MAX changes");
    (
        vocabulary.terminated_rank(change.left),
        vocabulary.byte_rank(change.right()),
        change.document,
        sequence << 1 | u32::from(change.add()),
    )
}

/// Writes `order` (at most [`CHANGES_MAX`] changes, in operation order, by [`key_order`])
/// into `tree`. A key is the left word terminated by `0xFF`, then the right word: keys sort by
/// the left words' terminated order, then by the right words' byte order.
fn write_part(
    tree: &WriteTree<'_>,
    vocabulary: &Vocabulary,
    mut order: Vec<OrderedChange>,
) -> ShardResult<()> {
    turns::sort_unstable(&mut order);
    let mut postings = Postings::default();
    let mut key = Vec::new();
    let mut value = Vec::new();
    let mut merge = tree.merge_writer();
    for group in order.chunk_by(|first, second| (first.0, first.1) == (second.0, second.1)) {
        postings.clear();
        for &(_, _, document, operation) in group {
            postings.mark(document, operation & 1 == 1);
        }
        let left = vocabulary.word(vocabulary.byte_rank_of_terminated(group[0].0));
        let right = vocabulary.word(group[0].1);
        write_pair_key(&mut key, left, right);
        postings.merge_into(&mut merge, &key, &mut value)?;
    }
    merge.finish()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};
    use std::ops::Bound;

    use storage_engine::Direction;

    use super::*;
    use crate::analysis::Occurrence;
    use crate::index::keys::decode_bitmap;
    use crate::index::trees::WORD_PAIRS_TREE;
    use crate::shard::word_changes::WordChanges;
    use crate::test_database::scratch_database;
    use crate::test_random::Random;

    /// Words whose pair keys interleave: a word before the longer words it starts, and a
    /// word starting the left word of another pair.
    const WORDS: [&str; 7] = ["a", "ab", "abc", "b", "ba", "é", "z"];

    /// Pair key → the documents holding the pair.
    type Model = BTreeMap<Vec<u8>, BTreeSet<u32>>;

    /// One round: random pairs added to and removed from random documents, recorded by the
    /// numbers a `WordChanges` gives the words (numbered in the round's first-use order).
    fn random_round(random: &mut Random, model: &mut Model) -> (WordChanges, PairChanges) {
        let mut words = WordChanges::default();
        let mut pairs = PairChanges::default();
        let occurrence = [Occurrence {
            field: 0,
            position: 0,
        }];
        for _ in 0..1 + random.below(300) {
            let left = WORDS[random.below(WORDS.len() as u64) as usize];
            let right = WORDS[random.below(WORDS.len() as u64) as usize];
            let document = random.below(40);
            let add = random.below(3) != 0;
            let left_number = words.record(left, document, &occurrence, add);
            let right_number = words.record(right, document, &occurrence, add);
            pairs.record(left_number, right_number, document, add);
            let mut key = Vec::new();
            write_pair_key(&mut key, left, right);
            let documents = model.entry(key).or_default();
            if add {
                documents.insert(document);
            } else {
                documents.remove(&document);
            }
        }
        model.retain(|_, documents| !documents.is_empty());
        (words, pairs)
    }

    #[test]
    fn pairs_written_in_rounds_equal_a_model_applied_change_by_change() {
        for case in 0..6_u64 {
            let mut random = Random(0x5DEE_CE66_D1CE_4E5B ^ (case + 1).wrapping_mul(0x9E37));
            let (_directory, database) = scratch_database();
            let mut model = Model::new();
            for _ in 0..10 {
                let (mut words, mut pairs) = random_round(&mut random, &mut model);
                let write = database.begin_write().expect("a write begins");
                let vocabulary = words.take_vocabulary();
                pairs
                    .write(&write, WORD_PAIRS_TREE, &vocabulary)
                    .expect("the pairs are written");
                write.commit().expect("the round commits");

                let read = database.begin_read();
                let tree = read
                    .open_tree(WORD_PAIRS_TREE)
                    .expect("the catalog reads")
                    .expect("the tree exists");
                let mut stored = Model::new();
                for entry in tree
                    .range(Bound::Unbounded, Bound::Unbounded, Direction::Forward)
                    .expect("the tree reads")
                {
                    let (key, value) = entry.expect("an entry reads");
                    let bitmap = decode_bitmap(value).expect("a bitmap decodes");
                    stored.insert(key.to_vec(), bitmap.iter().collect());
                }
                assert_eq!(stored, model, "case {case}");
            }
            assert!(!model.is_empty(), "case {case} ends with pairs stored");
        }
    }
}
