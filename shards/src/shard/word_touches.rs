//! The words and documents a batch touched in the inverted index, recorded as the batch
//! writes its word changes, so that its commit can bring the previous commit's prefix caches
//! up to date (see [`crate::search::prefix_carry`]) instead of reading them again.
//!
//! A document is touched when the batch adds or removes any of its words: a replaced document
//! removes every word of its old version and adds every word of its new one (an unchanged
//! document is skipped whole), a deleted one removes every word. So a document the batch did
//! not touch holds the words it held, and every word a touched document holds afterwards is a
//! touched word.
//!
//! Invariants: `words` holds every word whose `word_documents` key the batch wrote, and
//! `documents` every document whose words it changed, unless the batch cleared the index
//! (`DeleteAll`) or wrote more than [`TOUCHED_WORDS_MAX`] word keys (a word written by two
//! flushes counts twice); then nothing is answered and the caches are read again.

use roaring::RoaringBitmap;

/// Most word keys a batch records before its touches are given up.
pub const TOUCHED_WORDS_MAX: usize = 200_000;

/// The words and documents a batch touched, while it records them.
#[derive(Debug, Default)]
pub struct WordTouches {
    /// The words as recorded (in byte order within a flush, repeated across flushes) until
    /// [`WordTouches::touched`] sorts them.
    touched: TouchedWords,
    given_up: bool,
}

/// The words and documents one batch touched (see the module invariants).
#[derive(Debug, Default)]
pub struct TouchedWords {
    /// In byte order, each once.
    words: Vec<Box<[u8]>>,
    documents: RoaringBitmap,
}

impl WordTouches {
    /// Records that the batch wrote the `word_documents` key of `word` (a push: this runs for
    /// every word of every flush, imports included).
    pub fn word(&mut self, word: &[u8]) {
        if self.given_up {
            return;
        }
        if self.touched.words.len() == TOUCHED_WORDS_MAX {
            self.give_up();
            return;
        }
        self.touched.words.push(word.into());
    }

    /// Records that the batch changes the words of `document`.
    pub fn document(&mut self, document: u32) {
        if !self.given_up {
            self.touched.documents.insert(document);
        }
    }

    /// What the batch touched; `None` when the touches were given up.
    pub fn touched(&mut self) -> Option<&TouchedWords> {
        if self.given_up {
            return None;
        }
        // Sorted runs (one per flush) sort in about one pass; once sorted, in one.
        self.touched.words.sort_unstable();
        self.touched.words.dedup();
        Some(&self.touched)
    }

    /// Records nothing more: the batch cleared every key (nothing earlier can be brought up
    /// to date), or nothing will be carried over it.
    pub fn give_up(&mut self) {
        self.given_up = true;
        self.touched = TouchedWords::default();
    }
}

impl TouchedWords {
    /// The touched words longer than `prefix` that start with it, in byte order.
    pub fn extending<'a>(&'a self, prefix: &str) -> impl Iterator<Item = &'a [u8]> + 'a {
        let start = prefix.as_bytes();
        let first = self.words.partition_point(|word| word.as_ref() <= start);
        // The words a prefix starts follow it in one run.
        let run = self.words[first..].partition_point(|word| word.starts_with(start));
        self.words[first..first + run]
            .iter()
            .map(|word| word.as_ref())
    }

    /// Whether a touched word is longer than `prefix` and starts with it.
    pub fn touches_prefix(&self, prefix: &str) -> bool {
        self.extending(prefix).next().is_some()
    }

    /// Whether `word` was touched.
    pub fn contains(&self, word: &[u8]) -> bool {
        self.words
            .binary_search_by(|touched| touched.as_ref().cmp(word))
            .is_ok()
    }

    /// The documents whose words changed.
    pub fn documents(&self) -> &RoaringBitmap {
        &self.documents
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extending_answers_the_longer_words_a_prefix_starts() {
        let mut touches = WordTouches::default();
        for word in ["ab", "abc", "abd", "ac", "a", "b", "ab\u{ff}"] {
            touches.word(word.as_bytes());
        }
        // A word a later flush records again.
        touches.word(b"abc");
        let touched = touches.touched().expect("nothing given up");
        assert!(touched.contains(b"abd") && !touched.contains(b"abe"));
        let extending: Vec<&[u8]> = touched.extending("ab").collect();
        assert_eq!(
            extending,
            [b"abc".as_slice(), b"abd", "ab\u{ff}".as_bytes()]
        );
        assert_eq!(touched.extending("a").count(), 5);
        assert_eq!(touched.extending("z").count(), 0);
    }

    #[test]
    fn a_cleared_batch_or_too_many_words_answer_nothing() {
        let mut cleared = WordTouches::default();
        cleared.word(b"word");
        cleared.document(1);
        cleared.give_up();
        cleared.word(b"after");
        assert!(cleared.touched().is_none());
        let mut many = WordTouches::default();
        for number in 0..=TOUCHED_WORDS_MAX {
            many.word(format!("w{number}").as_bytes());
        }
        assert!(many.touched().is_none());
    }
}
