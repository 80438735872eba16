//! Which words a batch added to and removed from the `word_documents` keys, recorded as the
//! batch writes them, so that its commit's word dictionary is the previous commit's merged
//! with them (one pass over an FST held in memory) instead of a walk over the whole tree.
//!
//! Invariants: `created` and `deleted` are disjoint; after [`DictionaryChanges::cleared`]
//! (a `DeleteAll`) they describe the keys relative to an empty tree, otherwise relative to
//! the keys of the commit the batch started from; past [`TRACKED_WORDS_MAX`] words the
//! changes are given up (`overflowed`) and the dictionary is built from the tree, which a
//! batch that big (an initial import) costs little more than the batch itself.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::word_touches::{TouchedWords, WordTouches};
use crate::error::{ShardError, ShardResult};
use crate::search::derivation_carry::DictionaryDelta;
use crate::search::dictionary::{Dictionary, WordSet};

/// Most words a batch tracks before its dictionary is rebuilt from the tree instead.
pub const TRACKED_WORDS_MAX: usize = 200_000;

/// What a batch did to one key of `word_documents`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyChange {
    /// The key did not exist and now does.
    Created,
    /// The key existed and is gone.
    Deleted,
    /// The key exists before and after (its documents may differ), or neither.
    Kept,
}

/// The words a batch created and deleted (see the module invariants).
#[derive(Debug, Default)]
pub struct DictionaryChanges {
    created: BTreeSet<Box<[u8]>>,
    deleted: BTreeSet<Box<[u8]>>,
    cleared: bool,
    overflowed: bool,
    /// Every word and document the batch touched (see [`super::word_touches`]).
    touches: WordTouches,
}

impl DictionaryChanges {
    /// Records what the batch did to the key `word`.
    pub fn record(&mut self, word: &[u8], change: KeyChange) {
        self.touches.word(word);
        if self.overflowed {
            return;
        }
        match change {
            KeyChange::Kept => return,
            KeyChange::Created => {
                if !self.deleted.remove(word) {
                    self.created.insert(word.into());
                }
            }
            KeyChange::Deleted => {
                if !self.created.remove(word) {
                    self.deleted.insert(word.into());
                }
            }
        }
        if self.created.len() + self.deleted.len() > TRACKED_WORDS_MAX {
            self.overflowed = true;
            self.created.clear();
            self.deleted.clear();
        }
    }

    /// Every key is gone (`DeleteAll`): later changes are relative to an empty tree.
    pub fn cleared(&mut self) {
        self.touches.give_up();
        self.cleared = true;
        self.created.clear();
        self.deleted.clear();
    }

    /// Records no touches from now on: [`DictionaryChanges::touched`] answers `None`.
    pub fn skip_touches(&mut self) {
        self.touches.give_up();
    }

    /// Records that the batch changes the words of `document`.
    pub fn touched_document(&mut self, document: u32) {
        self.touches.document(document);
    }

    /// Every word and document the batch touched; `None` when that was given up.
    pub fn touched(&mut self) -> Option<&TouchedWords> {
        self.touches.touched()
    }

    /// The words created and deleted, relative to the commit the batch started from; `None`
    /// when the changes overflowed or the batch cleared every key.
    pub fn delta(&self) -> ShardResult<Option<DictionaryDelta>> {
        if self.overflowed || self.cleared {
            return Ok(None);
        }
        Ok(Some(DictionaryDelta::new(
            set_of(self.created.iter())?,
            set_of(self.deleted.iter())?,
        )))
    }

    /// The dictionary of the batch's commit, from `previous` (the dictionary of the commit the
    /// batch started from); `None` when the changes overflowed. The previous base is kept and
    /// only the small delta FSTs are built, unless the delta grows past its share of the base
    /// (then one pass merges everything into a new base).
    pub fn applied_to(&self, previous: &Dictionary) -> ShardResult<Option<Dictionary>> {
        if self.overflowed {
            return Ok(None);
        }
        if self.cleared {
            return Ok(Some(Dictionary::from_words(set_of(self.created.iter())?)));
        }
        let base = previous.base();
        let mut added = words_of(previous.added());
        let mut removed = words_of(previous.removed());
        for word in &self.created {
            // A created word was absent: in the base only as a removed word.
            if !removed.remove(word.as_ref()) {
                added.insert(word.to_vec());
            }
        }
        for word in &self.deleted {
            // A deleted word was present: added since the base, or in it.
            if !added.remove(word.as_ref()) {
                removed.insert(word.to_vec());
            }
        }
        if Dictionary::delta_is_full(base.len(), added.len() + removed.len()) {
            return Ok(Some(merged(base, &added, &removed)?));
        }
        Ok(Some(Dictionary::with_delta(
            Arc::clone(base),
            set_of(added.iter())?,
            set_of(removed.iter())?,
        )))
    }
}

/// Every word of `set`.
fn words_of(set: &WordSet) -> BTreeSet<Vec<u8>> {
    set.stream().into_bytes().into_iter().collect()
}

/// An FST of `words` (in byte order).
fn set_of<Word: AsRef<[u8]>>(words: impl Iterator<Item = Word>) -> ShardResult<WordSet> {
    let mut builder = fst::SetBuilder::memory();
    for (index, word) in words.enumerate() {
        turns::checkpoint_at(index);
        insert(&mut builder, word.as_ref())?;
    }
    Ok(builder.into_set())
}

/// One dictionary of `base` with `added` and without `removed`, in one pass over `base`.
fn merged(
    base: &WordSet,
    added: &BTreeSet<Vec<u8>>,
    removed: &BTreeSet<Vec<u8>>,
) -> ShardResult<Dictionary> {
    // About the base's size, reserved at once: a builder left to grow copies all it built at
    // each doubling, in one stretch no turn can cut (see `turns`).
    let reserved = Vec::with_capacity(base.as_fst().size());
    let mut builder = fst::SetBuilder::new(reserved)
        .map_err(|error| ShardError::Corrupted(format!("word dictionary: {error}")))?;
    let mut added = added.iter().peekable();
    let mut stream = base.stream();
    let mut read = 0;
    while let Some(word) = fst::Streamer::next(&mut stream) {
        turns::checkpoint_at(read);
        read += 1;
        while let Some(new) = added.next_if(|new| new.as_slice() < word) {
            insert(&mut builder, new)?;
        }
        if !removed.contains(word) {
            insert(&mut builder, word)?;
        }
    }
    for new in added {
        insert(&mut builder, new)?;
    }
    Ok(Dictionary::from_words(builder.into_set()))
}

fn insert(builder: &mut fst::SetBuilder<Vec<u8>>, word: &[u8]) -> ShardResult<()> {
    builder
        .insert(word)
        .map_err(|error| ShardError::Corrupted(format!("word dictionary: {error}")))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::{DictionaryChanges, KeyChange};
    use crate::search::dictionary::Dictionary;
    use crate::test_random::Random;

    fn dictionary(words: &BTreeSet<Vec<u8>>) -> Dictionary {
        Dictionary::from_words(fst::Set::from_iter(words.iter()).expect("sorted words build a set"))
    }

    fn words_of(dictionary: &Dictionary) -> BTreeSet<Vec<u8>> {
        dictionary.words().into_iter().collect()
    }

    /// Random keys created and deleted in turn against a model set; the merged dictionary
    /// must equal the model's keys.
    #[test]
    fn merged_dictionary_equals_the_keys_after_random_changes() {
        let seed = 0x5EED_D1C7;
        println!("seed {seed:#x}");
        let mut random = Random(seed);
        for case in 0..50 {
            let mut model: BTreeSet<Vec<u8>> = (0..random.below(200))
                .map(|_| format!("w{}", random.below(300)).into_bytes())
                .collect();
            let before = dictionary(&model);
            let mut changes = DictionaryChanges::default();
            for _ in 0..random.below(400) {
                if case % 7 == 3 && random.below(100) == 0 {
                    changes.cleared();
                    model.clear();
                }
                let word = format!("w{}", random.below(300)).into_bytes();
                let change = if model.contains(&word) {
                    if random.below(2) == 0 {
                        model.remove(&word);
                        KeyChange::Deleted
                    } else {
                        KeyChange::Kept
                    }
                } else {
                    model.insert(word.clone());
                    KeyChange::Created
                };
                changes.record(&word, change);
            }
            let after = changes
                .applied_to(&before)
                .expect("the merge succeeds")
                .expect("few changes are tracked");
            assert_eq!(words_of(&after), model, "case {case}");
        }
    }

    /// Batch after batch, each dictionary built from the one before: the words equal the
    /// model's every time, most batches keep the base and build only the delta, and a delta
    /// past its share is merged into a new base.
    #[test]
    fn successive_batches_keep_the_base_until_the_delta_is_merged() {
        let seed = 0xD1C7_0002;
        println!("seed {seed:#x}");
        let mut random = Random(seed);
        let mut model: BTreeSet<Vec<u8>> = (0..6_000)
            .map(|_| format!("w{}", random.below(20_000)).into_bytes())
            .collect();
        let mut current = dictionary(&model);
        let (mut kept, mut merged) = (0, 0);
        for batch in 0..40 {
            let mut changes = DictionaryChanges::default();
            for _ in 0..400 {
                let word = format!("w{}", random.below(20_000)).into_bytes();
                let change = if model.remove(&word) {
                    KeyChange::Deleted
                } else {
                    model.insert(word.clone());
                    KeyChange::Created
                };
                changes.record(&word, change);
            }
            let next = changes
                .applied_to(&current)
                .expect("the merge succeeds")
                .expect("few changes are tracked");
            assert_eq!(words_of(&next), model, "batch {batch}");
            for word in model.iter().take(50) {
                assert!(next.contains(word), "batch {batch}");
            }
            if std::sync::Arc::ptr_eq(next.base(), current.base()) {
                kept += 1;
            } else {
                merged += 1;
                assert!(next.added().is_empty() && next.removed().is_empty());
            }
            current = next;
        }
        assert!(kept > merged && merged > 0, "kept {kept}, merged {merged}");
    }
}
