//! Reads of the pair trees (`word_pairs`, `word_pairs_2`, `word_pairs_3`): the documents where
//! one word stands 1 to 3 positions after another in one field, for a pair of alternatives at
//! a proximity, a phrase, or a bucket's adjacent query terms.
//!
//! Invariants: a pair read here at proximity `p` is exactly where [`super::ranking`] finds
//! two single-word occurrences at proximity `p` (same field; the right one `p` positions after
//! the left one, or `p - 1` before it when both directions count; at proximity 1 also one
//! occurrence of a word both terms share); a prefix alternative stands for every longer word
//! it starts, as in [`super::occurrences`]. A left alternative that is a prefix or several
//! words, a right one that is several words, or a right prefix read backward that starts more
//! than [`BACKWARD_PREFIX_WORDS_MAX`] words cannot be read from pairs (`None`), and the
//! caller falls back to per-document occurrences.

use std::collections::HashMap;
use std::ops::Bound;
use std::rc::Rc;

use roaring::RoaringBitmap;
use storage_engine::{Direction, ReadTransaction, ReadTree};

use crate::error::ShardResult;
use crate::index::inverted::{bitmap_within, keys_extending, prefix_end, write_pair_key};
use crate::index::stored_bitmap::stored_len;
use crate::index::trees::{PAIR_DISTANCE_MAX, WORD_DOCUMENTS_TREE, WORD_PAIR_TREES};

use super::bitmap_union::union_of_owned;
use super::terms::Alternative;

/// Most words a prefix may start for its pairs to be read backward (one read per word and
/// distance); a prefix starting more is ranked per document.
pub const BACKWARD_PREFIX_WORDS_MAX: usize = 512;

/// The pair trees of a snapshot, opened once for several reads.
pub struct WordPairs<'t> {
    /// The pair trees by distance (distance `d` at index `d - 1`).
    trees: [Option<ReadTree<'t>>; PAIR_DISTANCE_MAX],
    /// `word_documents`, for a word two terms share and the words a prefix starts.
    documents: Option<ReadTree<'t>>,
    /// Prefix → the words it starts (`None`: more than [`BACKWARD_PREFIX_WORDS_MAX`]).
    prefix_words: HashMap<String, Option<Rc<[String]>>>,
    key: Vec<u8>,
}

impl<'t> WordPairs<'t> {
    pub fn open(read: &'t ReadTransaction) -> ShardResult<WordPairs<'t>> {
        let [near, second, third] = WORD_PAIR_TREES;
        Ok(WordPairs {
            trees: [
                read.open_tree(near)?,
                read.open_tree(second)?,
                read.open_tree(third)?,
            ],
            documents: read.open_tree(WORD_DOCUMENTS_TREE)?,
            prefix_words: HashMap::new(),
            key: Vec::new(),
        })
    }

    /// The pair tree of `distance` (1 to [`PAIR_DISTANCE_MAX`]).
    fn tree(&self, distance: usize) -> Option<&ReadTree<'t>> {
        debug_assert!(
            (1..=PAIR_DISTANCE_MAX).contains(&distance),
            "pairs are kept at distances 1 to {PAIR_DISTANCE_MAX}"
        );
        self.trees.get(distance.checked_sub(1)?)?.as_ref()
    }

    /// The documents of `within` holding `word`.
    fn documents(&self, word: &str, within: &RoaringBitmap) -> ShardResult<RoaringBitmap> {
        let Some(tree) = &self.documents else {
            return Ok(RoaringBitmap::new());
        };
        bitmap_within(tree.get(word.as_bytes())?, within)
    }

    /// The documents of `within` where `right` follows `left` right away in one field.
    pub fn words(
        &mut self,
        left: &str,
        right: &str,
        within: &RoaringBitmap,
    ) -> ShardResult<RoaringBitmap> {
        self.words_at(1, left, right, within)
    }

    /// The documents of `within` where `right` stands `distance` positions after `left` in
    /// one field.
    fn words_at(
        &mut self,
        distance: usize,
        left: &str,
        right: &str,
        within: &RoaringBitmap,
    ) -> ShardResult<RoaringBitmap> {
        bitmap_within(self.stored(distance, left, right)?, within)
    }

    /// The number of documents of the shard where `right` follows `left` right away in one
    /// field (read from the stored bitmap's header).
    pub fn count(&mut self, left: &str, right: &str) -> ShardResult<u64> {
        self.stored(1, left, right)?.map_or(Ok(0), stored_len)
    }

    /// The stored bitmap of the pair `left`, `right` in the tree of `distance` (`None`: no
    /// document holds it).
    fn stored(
        &mut self,
        distance: usize,
        left: &str,
        right: &str,
    ) -> ShardResult<Option<&'t [u8]>> {
        write_pair_key(&mut self.key, left, right);
        match self.tree(distance) {
            Some(tree) => Ok(tree.get(&self.key)?),
            None => Ok(None),
        }
    }

    /// The documents of `within` where a word longer than `prefix` that starts with it stands
    /// `distance` positions after `left` in one field.
    fn extending(
        &mut self,
        distance: usize,
        left: &str,
        prefix: &str,
        within: &RoaringBitmap,
    ) -> ShardResult<RoaringBitmap> {
        write_pair_key(&mut self.key, left, prefix);
        let Some(tree) = self.tree(distance) else {
            return Ok(RoaringBitmap::new());
        };
        let end = prefix_end(&self.key);
        let end_bound = end.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
        let mut found = Vec::new();
        for entry in tree.range(Bound::Excluded(&self.key), end_bound, Direction::Forward)? {
            let (_, value) = entry?;
            found.push(bitmap_within(Some(value), within)?);
        }
        Ok(union_of_owned(found))
    }

    /// The words longer than `prefix` that start with it, read once per prefix; `None` when
    /// there are more than [`BACKWARD_PREFIX_WORDS_MAX`].
    fn words_of_prefix(&mut self, prefix: &str) -> ShardResult<Option<Rc<[String]>>> {
        if let Some(words) = self.prefix_words.get(prefix) {
            return Ok(words.clone());
        }
        let mut words = Vec::new();
        let mut within_limit = true;
        if let Some(tree) = &self.documents {
            for entry in keys_extending(tree, prefix)? {
                if words.len() == BACKWARD_PREFIX_WORDS_MAX {
                    within_limit = false;
                    break;
                }
                let (word, _) = entry?;
                words.push(String::from_utf8_lossy(word).into_owned());
            }
        }
        let words = within_limit.then(|| Rc::from(words));
        self.prefix_words.insert(prefix.to_owned(), words.clone());
        Ok(words)
    }

    /// The documents of `within` where an occurrence of `right` stands at `proximity` (1 to
    /// [`PAIR_DISTANCE_MAX`]) from one of `left` in one field: `proximity` positions after it,
    /// or, when `backward`, `proximity - 1` positions before it; `None` when pairs cannot tell
    /// (see the module invariants).
    pub fn alternatives_at(
        &mut self,
        left: &Alternative,
        right: &Alternative,
        proximity: usize,
        backward: bool,
        within: &RoaringBitmap,
    ) -> ShardResult<Option<RoaringBitmap>> {
        let ([Some(left_word)], [Some(right_word)]) =
            (left.words.as_slice(), right.words.as_slice())
        else {
            return Ok(None);
        };
        if left.prefix {
            return Ok(None);
        }
        if proximity == 1 && left.shared && right.shared && left_word == right_word {
            // One occurrence of a word both terms share (an n-gram, a multi-word synonym's
            // one-word value) stands for both side by side.
            if right.prefix {
                return Ok(None);
            }
            return self.documents(left_word, within).map(Some);
        }
        let mut found = vec![if right.prefix {
            self.extending(proximity, left_word, right_word, within)?
        } else {
            self.words_at(proximity, left_word, right_word, within)?
        }];
        let before = proximity - 1;
        if backward && before >= 1 {
            if right.prefix {
                let Some(words) = self.words_of_prefix(right_word)? else {
                    return Ok(None);
                };
                for word in words.iter() {
                    found.push(self.words_at(before, word, left_word, within)?);
                }
            } else {
                found.push(self.words_at(before, right_word, left_word, within)?);
            }
        }
        Ok(Some(union_of_owned(found)))
    }

    /// The documents of `within` that may hold `phrase` (`None` for stop-word holes): those
    /// holding each pair of its consecutive words side by side; exactly the documents holding
    /// it when it is two words. `None` when the phrase has no two consecutive words.
    pub fn phrase_candidates(
        &mut self,
        phrase: &[Option<String>],
        within: &RoaringBitmap,
    ) -> ShardResult<Option<RoaringBitmap>> {
        let mut candidates: Option<RoaringBitmap> = None;
        for pair in phrase.windows(2) {
            let [Some(left), Some(right)] = pair else {
                continue;
            };
            let scope = candidates.as_ref().unwrap_or(within);
            let holding = self.words(left, right, scope)?;
            candidates = Some(holding);
        }
        Ok(candidates)
    }
}
