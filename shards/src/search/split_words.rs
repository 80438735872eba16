//! Split words: a query word also matches two words standing side by side (`jsonld` →
//! `json ld`, `contextmanager` → `context manager`), as Meilisearch's one-typo subset holds
//! a word's best split.
//!
//! The best split of a word is the cut (at a character boundary, both halves non-empty)
//! whose two halves follow each other right away in the most documents; the first such cut
//! on a tie; none when no cut's halves ever follow each other. It is matched as the
//! two-word phrase of its halves and costs one typo ([`SPLIT_TYPOS`]), whatever typos the
//! word itself allows.
//!
//! Finding the best split reads the pair count of every cut (a B-tree lookup each, nine for a
//! ten-letter word, on every shard and for every term), so a commit's view keeps the splits
//! found on it ([`SplitMemo`]).
//!
//! Invariant: counts are this shard's (`word_pairs`), so shards choose the same cut unless
//! two cuts are nearly as frequent and the documents split the tie differently; every
//! non-phrase term may be split, which is why every such term's typo maximum is at least one
//! (see [`super::terms::typo_floors`]); a kept split is exactly what [`best_split`] answers
//! on the commit whose view keeps it.

use std::sync::Arc;

use storage_engine::ReadTransaction;

use crate::cache_meter::CacheAccount;
use crate::commit_memo::{CommitMemo, WhenFull};
use crate::error::ShardResult;

use super::query::TermKind;
use super::terms::{Alternative, ResolvedTerm};
use super::word_pairs::WordPairs;

/// The typos a split costs: it is one of the word's one-typo matches.
pub const SPLIT_TYPOS: u8 = 1;

/// Most bytes (estimated) the splits kept for one commit weigh; a memo that would pass it
/// starts over.
pub const SPLITS_BYTES_MAX: usize = 1 << 20;

/// What a kept split weighs besides its words: the map entry, the key and the two strings.
const SPLIT_ENTRY_BYTES: usize = 96;

/// A split: the two halves, or none.
type Split = Option<(String, String)>;

/// The best splits of the words searched on one commit.
pub struct SplitMemo {
    memo: CommitMemo<String, Split>,
}

impl Default for SplitMemo {
    /// Outside any cache budget.
    fn default() -> Self {
        SplitMemo::charging(CacheAccount::unbounded())
    }
}

impl SplitMemo {
    /// An empty memo whose values are charged to `account`.
    pub fn charging(account: Arc<CacheAccount>) -> Self {
        SplitMemo {
            memo: CommitMemo::charging(SPLITS_BYTES_MAX, WhenFull::StartOver, account),
        }
    }
}

impl SplitMemo {
    /// The best split of `word`, read from `pairs` (of this memo's commit) unless kept.
    fn best_split(&self, pairs: &mut WordPairs<'_>, word: &str) -> ShardResult<Arc<Split>> {
        if let Some(kept) = self.memo.get(word) {
            return Ok(kept);
        }
        let split = best_split(pairs, word)?;
        let bytes = SPLIT_ENTRY_BYTES + 2 * word.len();
        Ok(self.memo.keep(word.to_owned(), Arc::new(split), bytes))
    }
}

/// The best split of `word` in this shard (see the module documentation).
pub fn best_split(pairs: &mut WordPairs<'_>, word: &str) -> ShardResult<Option<(String, String)>> {
    let mut best: Option<(u64, usize)> = None;
    for (cut, _) in word.char_indices().skip(1) {
        let (left, right) = word.split_at(cut);
        let count = pairs.count(left, right)?;
        if count > 0 && best.is_none_or(|(most, _)| count > most) {
            best = Some((count, cut));
        }
    }
    Ok(best.map(|(_, cut)| {
        let (left, right) = word.split_at(cut);
        (left.to_owned(), right.to_owned())
    }))
}

/// Adds to each word term of `resolved` its best split, as a two-word phrase alternative
/// (`splits` is the memo of `read`'s commit).
pub fn add_split_alternatives(
    read: &ReadTransaction,
    splits: &SplitMemo,
    resolved: &mut [ResolvedTerm],
) -> ShardResult<()> {
    let mut pairs = WordPairs::open(read)?;
    for term in resolved {
        let TermKind::Word { word, .. } = &term.term.kind else {
            continue;
        };
        if let Some((left, right)) = &*splits.best_split(&mut pairs, word)? {
            term.alternatives.push(Alternative {
                words: vec![Some(left.clone()), Some(right.clone())],
                typos: SPLIT_TYPOS,
                exact: false,
                shared: false,
                window_offset: 0,
                prefix: false,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::shard::Operation;
    use crate::test_database::scratch_shard;

    fn document(id: u32, name: &str) -> Operation {
        let mut document = serde_json::Map::new();
        document.insert("id".into(), json!(id));
        document.insert("name".into(), json!(name));
        Operation::Replace {
            external_id: id.to_string(),
            document,
        }
    }

    #[test]
    fn the_memo_keeps_what_the_pairs_answer() {
        let (_directory, shard) = scratch_shard();
        let names = [
            "json ld tools",
            "a json ld parser",
            "context manager",
            "js on",
        ];
        let operations = (0..).zip(names).map(|(id, name)| document(id, name));
        shard
            .apply(1, operations.collect())
            .expect("apply succeeds");
        let snapshot = shard.read().expect("read succeeds");
        let read = snapshot.read_transaction();
        let mut pairs = WordPairs::open(read).expect("pairs open");
        let memo = SplitMemo::default();
        for word in ["jsonld", "contextmanager", "parser", "zzz"] {
            let direct = best_split(&mut pairs, word).expect("split read");
            assert!(memo.memo.get(&word.to_owned()).is_none());
            let first = memo.best_split(&mut pairs, word).expect("split read");
            assert_eq!(*first, direct, "{word}");
            assert!(memo.memo.get(&word.to_owned()).is_some(), "{word} is kept");
            let again = memo.best_split(&mut pairs, word).expect("split read");
            assert!(
                Arc::ptr_eq(&first, &again),
                "{word} is answered from the memo"
            );
        }
        assert_eq!(
            *memo.best_split(&mut pairs, "jsonld").expect("split read"),
            Some(("json".to_owned(), "ld".to_owned()))
        );
        assert_eq!(
            *memo.best_split(&mut pairs, "parser").expect("split read"),
            None
        );
    }
}
