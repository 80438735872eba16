//! Reads of the `word_pairs` tree: the documents where one word stands right after another in
//! one field (proximity 1), for a pair of alternatives, a phrase, or a bucket's adjacent
//! query terms.
//!
//! Invariants: a pair read here is exactly what [`super::ranking`] calls proximity 1 between
//! two single-word occurrences (same field, the right one at the position after the left
//! one, or one occurrence of a word both terms share); a prefix alternative stands for every longer word it starts, as in
//! [`super::occurrences`]; a left alternative that is a prefix or several words cannot be read
//! from pairs (`None`), and the caller falls back to per-document occurrences.

use std::ops::Bound;

use roaring::RoaringBitmap;
use storage_engine::{Direction, ReadTransaction, ReadTree};

use crate::error::ShardResult;
use crate::index::inverted::prefix_end;
use crate::index::inverted::{bitmap_within, write_pair_key};
use crate::index::stored_bitmap::stored_len;
use crate::index::trees::{WORD_DOCUMENTS_TREE, WORD_PAIRS_TREE};

use super::bitmap_union::union_of_owned;
use super::terms::Alternative;

/// The `word_pairs` tree of a snapshot, opened once for several reads.
pub struct WordPairs<'t> {
    tree: Option<ReadTree<'t>>,
    /// `word_documents`, for a word two terms share.
    documents: Option<ReadTree<'t>>,
    key: Vec<u8>,
}

impl<'t> WordPairs<'t> {
    pub fn open(read: &'t ReadTransaction) -> ShardResult<WordPairs<'t>> {
        Ok(WordPairs {
            tree: read.open_tree(WORD_PAIRS_TREE)?,
            documents: read.open_tree(WORD_DOCUMENTS_TREE)?,
            key: Vec::new(),
        })
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
        let Some(tree) = &self.tree else {
            return Ok(RoaringBitmap::new());
        };
        write_pair_key(&mut self.key, left, right);
        bitmap_within(tree.get(&self.key)?, within)
    }

    /// The number of documents of the shard where `right` follows `left` right away in one
    /// field (read from the stored bitmap's header).
    pub fn count(&mut self, left: &str, right: &str) -> ShardResult<u64> {
        let Some(tree) = &self.tree else {
            return Ok(0);
        };
        write_pair_key(&mut self.key, left, right);
        tree.get(&self.key)?.map_or(Ok(0), stored_len)
    }

    /// The documents of `within` where a word longer than `prefix` that starts with it follows
    /// `left` right away in one field.
    fn extending(
        &mut self,
        left: &str,
        prefix: &str,
        within: &RoaringBitmap,
    ) -> ShardResult<RoaringBitmap> {
        let Some(tree) = &self.tree else {
            return Ok(RoaringBitmap::new());
        };
        write_pair_key(&mut self.key, left, prefix);
        let end = prefix_end(&self.key);
        let end_bound = end.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
        let mut found = Vec::new();
        for entry in tree.range(Bound::Excluded(&self.key), end_bound, Direction::Forward)? {
            let (_, value) = entry?;
            found.push(bitmap_within(Some(value), within)?);
        }
        Ok(union_of_owned(found))
    }

    /// The documents of `within` where an occurrence of `right` follows one of `left` right
    /// away in one field, or `None` when pairs cannot tell (see the module invariants).
    pub fn alternatives(
        &mut self,
        left: &Alternative,
        right: &Alternative,
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
        if left.shared && right.shared && left_word == right_word {
            // One occurrence of a word both terms share (an n-gram, a multi-word synonym's
            // one-word value) stands for both side by side.
            if right.prefix {
                return Ok(None);
            }
            return self.documents(left_word, within).map(Some);
        }
        let found = if right.prefix {
            self.extending(left_word, right_word, within)?
        } else {
            self.words(left_word, right_word, within)?
        };
        Ok(Some(found))
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
