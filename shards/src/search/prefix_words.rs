//! The words a prefix starts, kept per commit with the documents of the rare ones, so that
//! the occurrences of a prefix term in a few documents (a page's hits, a small chunk to rank)
//! are found without reading every word the prefix starts.
//!
//! A two-letter prefix starts tens of thousands of words, most of them in a handful of
//! documents. Finding which of them the ten documents of a page hold meant one dictionary
//! entry and one bitmap per word, on every search. Here a prefix's words are read once per
//! commit and split: the frequent ones (at least [`FREQUENT_DOCUMENTS_MIN`] documents, a few
//! hundred words at most) are kept by name and their bitmaps read per search, in place; the
//! rare ones are kept as (document, word) pairs sorted by document, where each wanted
//! document finds its words by a binary search.
//!
//! Invariants: an entry lists every word longer than its prefix that starts with it on the
//! commit it was read from (the commit view owns the memo, so an entry never outlives its
//! commit), each exactly once, frequent or rare by its number of documents; `rare` is sorted
//! by document then word index and holds exactly the (document, word) pairs of the rare
//! words. Entries are kept within [`CACHED_BYTES_MAX`] per commit (the memo starts over when
//! the next entry would pass it); an entry weighing more than [`ENTRY_BYTES_MAX`] is read once
//! and remembered as refused, and that prefix's occurrences are then read word by word, so a
//! prefix is never read whole twice on one commit.

use std::collections::BTreeMap;
use std::sync::Arc;

use roaring::RoaringBitmap;
use storage_engine::{ReadTransaction, ReadTree};

use crate::cache_meter::CacheAccount;
use crate::commit_memo::{CommitMemo, WhenFull};
use crate::error::{ShardError, ShardResult};
use crate::index::keys::{decode_bitmap, stored_single_id};
use crate::index::stored_bitmap::{intersection_within_counted, stored_len};

use crate::index::inverted::keys_extending;
use crate::index::trees::WORD_DOCUMENTS_TREE;

/// Documents from which a word is frequent: read through its bitmap rather than listed per
/// document (the size of a roaring container's array form).
pub const FREQUENT_DOCUMENTS_MIN: u64 = 4_096;
/// Most bytes one commit's entries weigh.
pub const CACHED_BYTES_MAX: usize = 64 << 20;
/// Most bytes one entry weighs (a heavier prefix is read word by word).
pub const ENTRY_BYTES_MAX: usize = 16 << 20;
/// Bytes a kept (document, word) pair weighs.
const PAIR_BYTES: usize = std::mem::size_of::<(u32, u32)>();
/// Bytes a kept word weighs besides its letters (its box and its document count).
const WORD_OVERHEAD_BYTES: usize = std::mem::size_of::<(Box<[u8]>, u64)>();

/// The words of one prefix (see the module invariants).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct WordsOfPrefix {
    /// The frequent words, in byte order.
    pub(super) frequent: Vec<Box<[u8]>>,
    /// The rare words with their number of documents, in byte order, indexed by `rare`.
    pub(super) rare_words: Vec<(Box<[u8]>, u64)>,
    /// (document, index in `rare_words`), sorted.
    pub(super) rare: Vec<(u32, u32)>,
}

/// A word the prefix starts, the documents of a universe holding it, and how many documents
/// hold it in all.
pub struct WordWithin<'a> {
    pub word: &'a [u8],
    pub documents: RoaringBitmap,
    pub stored_len: u64,
}

impl WordsOfPrefix {
    /// Reads the words longer than `prefix` that start with it.
    pub fn read(read: &ReadTransaction, prefix: &str) -> ShardResult<WordsOfPrefix> {
        let mut words = WordsOfPrefix::default();
        let Some(tree) = read.open_tree(WORD_DOCUMENTS_TREE)? else {
            return Ok(words);
        };
        for entry in keys_extending(&tree, prefix)? {
            let (word, stored) = entry?;
            words.add(word, stored)?;
        }
        words.rare.sort_unstable();
        Ok(words)
    }

    /// Adds `word`, stored as `stored` (`rare` is left to sort).
    pub(super) fn add(&mut self, word: &[u8], stored: &[u8]) -> ShardResult<()> {
        let index = u32::try_from(self.rare_words.len())
            .map_err(|_| ShardError::corrupted("more words than a u32 counts"))?;
        if let Some(document) = stored_single_id(stored) {
            self.rare.push((document, index));
            self.rare_words.push((word.into(), 1));
            return Ok(());
        }
        if stored_len(stored)? >= FREQUENT_DOCUMENTS_MIN {
            self.frequent.push(word.into());
            return Ok(());
        }
        let documents = decode_bitmap(stored)?;
        self.rare
            .extend(documents.iter().map(|document| (document, index)));
        self.rare_words.push((word.into(), documents.len()));
        Ok(())
    }

    /// What the entry weighs in memory.
    pub fn bytes(&self) -> usize {
        let letters: usize = self.frequent.iter().map(|word| word.len()).sum::<usize>()
            + self
                .rare_words
                .iter()
                .map(|(word, _)| word.len())
                .sum::<usize>();
        let words = self.frequent.len() + self.rare_words.len();
        letters + words * WORD_OVERHEAD_BYTES + self.rare.len() * PAIR_BYTES
    }

    /// Every word the prefix starts that some document of `universe` holds, with those
    /// documents; frequent words first, then rare words in dictionary order.
    pub fn within<'a>(
        &'a self,
        documents_tree: &ReadTree<'_>,
        universe: &RoaringBitmap,
    ) -> ShardResult<Vec<WordWithin<'a>>> {
        let mut found = Vec::new();
        for word in &self.frequent {
            let Some(stored) = documents_tree.get(word)? else {
                continue;
            };
            let (documents, stored_len) = intersection_within_counted(stored, universe)?;
            if !documents.is_empty() {
                found.push(WordWithin {
                    word,
                    documents,
                    stored_len,
                });
            }
        }
        let mut rare: BTreeMap<u32, RoaringBitmap> = BTreeMap::new();
        for document in universe {
            let start = self.rare.partition_point(|(held, _)| *held < document);
            for (_, index) in self.rare[start..]
                .iter()
                .take_while(|(held, _)| *held == document)
            {
                rare.entry(*index).or_default().insert(document);
            }
        }
        for (index, documents) in rare {
            let Some((word, stored_len)) = usize::try_from(index)
                .ok()
                .and_then(|index| self.rare_words.get(index))
            else {
                continue;
            };
            found.push(WordWithin {
                word,
                documents,
                stored_len: *stored_len,
            });
        }
        Ok(found)
    }
}

/// One commit's prefix words; a refused prefix (heavier than [`ENTRY_BYTES_MAX`]) is kept as
/// `None`, weighing nothing.
pub struct PrefixWords {
    memo: CommitMemo<String, Option<WordsOfPrefix>>,
}

impl Default for PrefixWords {
    /// Outside any cache budget.
    fn default() -> Self {
        PrefixWords::charging(CacheAccount::unbounded())
    }
}

impl PrefixWords {
    /// An empty memo whose values are charged to `account`.
    pub fn charging(account: Arc<CacheAccount>) -> Self {
        PrefixWords {
            memo: CommitMemo::charging(CACHED_BYTES_MAX, WhenFull::StartOver, account),
        }
    }
}

impl PrefixWords {
    /// Whether no entry is kept (nothing to carry to the next commit).
    pub fn is_empty(&self) -> bool {
        self.memo.is_empty()
    }

    /// The memo itself (for the carry over a batch, [`super::prefix_carry`]).
    pub(super) fn memo(&self) -> &CommitMemo<String, Option<WordsOfPrefix>> {
        &self.memo
    }

    /// The words of `prefix`, read from `read` (a transaction of this commit) unless known;
    /// `None` when the prefix is too heavy to keep (read it word by word).
    pub fn words(
        &self,
        read: &ReadTransaction,
        prefix: &str,
    ) -> ShardResult<Arc<Option<WordsOfPrefix>>> {
        let key = prefix.to_owned();
        if let Some(known) = self.memo.get(&key) {
            return Ok(known);
        }
        let words = WordsOfPrefix::read(read, prefix)?;
        let bytes = words.bytes();
        if bytes > ENTRY_BYTES_MAX {
            return Ok(self.memo.keep(key, Arc::new(None), 0));
        }
        Ok(self.memo.keep(key, Arc::new(Some(words)), bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::inverted::bitmap_or_empty;
    use crate::shard::Operation;
    use crate::test_database::scratch_shard;
    use crate::test_random::Random;
    use serde_json::json;

    /// Documents of the shard: enough for words past [`FREQUENT_DOCUMENTS_MIN`].
    const DOCUMENTS: u32 = 6_000;
    /// Random universes compared.
    const UNIVERSES: usize = 30;

    /// A text of words starting with `ab` (one of them in most documents, a few in many,
    /// most in one or two) and words that do not.
    fn text(random: &mut Random) -> String {
        let mut words = vec![format!("zz{}", random.below(50))];
        if random.below(4) != 0 {
            words.push("abundant".to_owned());
        }
        if random.below(3) == 0 {
            words.push(format!("abc{}", random.below(6)));
        }
        words.push(format!("ab{}", random.below(3_000)));
        words.join(" ")
    }

    /// Per word the prefix starts, its documents within `universe`, read word by word.
    fn by_each_word(
        read: &ReadTransaction,
        prefix: &str,
        universe: &RoaringBitmap,
    ) -> BTreeMap<Vec<u8>, (RoaringBitmap, u64)> {
        let tree = read
            .open_tree(WORD_DOCUMENTS_TREE)
            .expect("open_tree succeeds")
            .expect("the tree exists");
        let mut found = BTreeMap::new();
        for entry in keys_extending(&tree, prefix).expect("range succeeds") {
            let (word, stored) = entry.expect("entry reads");
            let all = bitmap_or_empty(Some(stored)).expect("bitmap decodes");
            let within = &all & universe;
            if !within.is_empty() {
                found.insert(word.to_vec(), (within, all.len()));
            }
        }
        found
    }

    #[test]
    fn words_within_equal_reading_every_word() {
        let (_directory, shard) = scratch_shard();
        let mut random = Random(0x0ab5_eed5);
        let operations = (0..DOCUMENTS)
            .map(|number| {
                let mut document = serde_json::Map::new();
                document.insert("id".into(), json!(number));
                document.insert("text".into(), json!(text(&mut random)));
                Operation::Replace {
                    external_id: number.to_string(),
                    document,
                }
            })
            .collect();
        shard.apply(1, operations).expect("apply succeeds");
        let snapshot = shard.read().expect("read succeeds");
        let read = snapshot.read_transaction();
        let tree = read
            .open_tree(WORD_DOCUMENTS_TREE)
            .expect("open_tree succeeds")
            .expect("the tree exists");
        let words = WordsOfPrefix::read(read, "ab").expect("read succeeds");
        assert!(
            !words.frequent.is_empty(),
            "a frequent word is read by bitmap"
        );
        assert!(words.rare_words.len() > 1_000, "most words are rare");
        let live = snapshot.document_ids().clone();
        let mut universes = vec![RoaringBitmap::new(), live.clone()];
        for _ in 0..UNIVERSES {
            let keep = u64::from(random.below(200)) + 1;
            universes.push(live.iter().filter(|_| random.below(keep) == 0).collect());
        }
        // Ids never stored hold nothing.
        universes.push((DOCUMENTS * 2..DOCUMENTS * 2 + 50).collect());
        for universe in &universes {
            let found: BTreeMap<Vec<u8>, (RoaringBitmap, u64)> = words
                .within(&tree, universe)
                .expect("within succeeds")
                .into_iter()
                .map(|within| (within.word.to_vec(), (within.documents, within.stored_len)))
                .collect();
            assert_eq!(found, by_each_word(read, "ab", universe));
        }
    }
}
