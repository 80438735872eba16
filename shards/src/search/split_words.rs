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
//! Invariant: counts are this shard's (`word_pairs`), so shards choose the same cut unless
//! two cuts are nearly as frequent and the documents split the tie differently; every
//! non-phrase term may be split, which is why every such term's typo maximum is at least one
//! (see [`super::terms::typo_floors`]).

use storage_engine::ReadTransaction;

use crate::error::ShardResult;

use super::query::TermKind;
use super::terms::{Alternative, ResolvedTerm};
use super::word_pairs::WordPairs;

/// The typos a split costs: it is one of the word's one-typo matches.
pub const SPLIT_TYPOS: u8 = 1;

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

/// Adds to each word term of `resolved` its best split, as a two-word phrase alternative.
pub fn add_split_alternatives(
    read: &ReadTransaction,
    resolved: &mut [ResolvedTerm],
) -> ShardResult<()> {
    let mut pairs = WordPairs::open(read)?;
    for term in resolved {
        let TermKind::Word { word, .. } = &term.term.kind else {
            continue;
        };
        if let Some((left, right)) = best_split(&mut pairs, word)? {
            term.alternatives.push(Alternative {
                words: vec![Some(left), Some(right)],
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
