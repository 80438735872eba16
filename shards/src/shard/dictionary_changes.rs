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

use crate::error::{ShardError, ShardResult};
use crate::search::dictionary::Dictionary;

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
}

impl DictionaryChanges {
    /// Records what the batch did to the key `word`.
    pub fn record(&mut self, word: &[u8], change: KeyChange) {
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
        self.cleared = true;
        self.created.clear();
        self.deleted.clear();
    }

    /// The dictionary of the batch's commit, from `previous` (the dictionary of the commit the
    /// batch started from); `None` when the changes overflowed.
    pub fn applied_to(&self, previous: &Dictionary) -> ShardResult<Option<Dictionary>> {
        if self.overflowed {
            return Ok(None);
        }
        let mut builder = fst::SetBuilder::memory();
        let mut created = self.created.iter().peekable();
        if !self.cleared {
            let mut stream = previous.stream();
            while let Some(word) = fst::Streamer::next(&mut stream) {
                while let Some(new) = created.next_if(|new| new.as_ref() < word) {
                    insert(&mut builder, new)?;
                }
                if !self.deleted.contains(word) {
                    insert(&mut builder, word)?;
                }
            }
        }
        for new in created {
            insert(&mut builder, new)?;
        }
        Ok(Some(builder.into_set()))
    }
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
        fst::Set::from_iter(words.iter()).expect("sorted words build a set")
    }

    fn words_of(dictionary: &Dictionary) -> BTreeSet<Vec<u8>> {
        dictionary.stream().into_bytes().into_iter().collect()
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
}
