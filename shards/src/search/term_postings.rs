//! A query term's postings, kept per commit: per alternative of the term, the documents
//! where it occurs, and their union (where the term occurs).
//!
//! Every search with terms starts by reading them: one B-tree lookup and one bitmap decoding
//! per alternative (a typo term has tens), then one union per term. On the PyPI mix at 16
//! connections that was 12.5 % of the server's CPU, and a few words (`for`, `python`,
//! `and`, `package`) make most of it: they hold the most documents and come back in many
//! queries. A term's postings depend only on its alternatives and the commit, so a search
//! without a filter keeps them in the commit view and the next search of the same term on the
//! same commit borrows them. A filtered search restricts the kept postings of a term to its
//! candidates (one intersection per alternative instead of one lookup and decoding), and
//! reads the others inside its candidates without keeping them.
//!
//! Invariants: an entry holds exactly what [`super::buckets::alternatives_documents`] and
//! [`super::bitmap_union::union_of`] give over every document of the commit, for the
//! alternatives its key names in their order; only terms that cost at least
//! [`CACHED_DOCUMENTS_MIN`] documents or [`CACHED_ALTERNATIVES_MIN`] alternatives to read are
//! kept (cheaper ones are read again); the bitmaps held stay under [`CACHED_BYTES_MAX`] (the
//! memo starts over when the next entry would pass it). Nothing is carried to the next
//! commit: after a batch a term's first search reads it again.

use std::sync::Arc;

use roaring::RoaringBitmap;

use crate::commit_memo::{CommitMemo, WhenFull};
use crate::error::ShardResult;

use super::terms::ResolvedTerm;

/// Fewest documents, summed over a term's alternatives, that make its postings worth keeping.
pub const CACHED_DOCUMENTS_MIN: u64 = 1_024;
/// Fewest alternatives that make a term's postings worth keeping, whatever they hold.
pub const CACHED_ALTERNATIVES_MIN: usize = 8;
/// Most bytes of bitmaps (serialized size) one commit's memo holds.
pub const CACHED_BYTES_MAX: usize = 32 << 20;

/// Separates two words of one alternative in a key.
const WORD_SEPARATOR: char = '\u{1f}';
/// Separates two alternatives in a key.
const ALTERNATIVE_SEPARATOR: char = '\u{1e}';
/// Stands for a stop-word hole of a phrase in a key.
const HOLE: char = '\u{0}';

/// Where one query term occurs.
#[derive(Debug, Default, PartialEq)]
pub struct TermPostings {
    /// Per alternative of the term, in its order, the documents where it occurs.
    pub alternatives: Vec<RoaringBitmap>,
    /// Their union: the documents where the term occurs.
    pub union: RoaringBitmap,
}

impl TermPostings {
    /// The per-alternative documents and their union.
    pub fn new(alternatives: Vec<RoaringBitmap>) -> TermPostings {
        let union = super::bitmap_union::union_of(&alternatives);
        TermPostings {
            alternatives,
            union,
        }
    }

    /// The same postings restricted to `documents`.
    pub fn within(&self, documents: &RoaringBitmap) -> TermPostings {
        TermPostings {
            alternatives: self
                .alternatives
                .iter()
                .map(|alternative| alternative & documents)
                .collect(),
            union: &self.union & documents,
        }
    }

    /// Whether reading them again would cost enough to keep them.
    fn is_worth_keeping(&self) -> bool {
        self.alternatives.len() >= CACHED_ALTERNATIVES_MIN
            || self
                .alternatives
                .iter()
                .map(RoaringBitmap::len)
                .sum::<u64>()
                >= CACHED_DOCUMENTS_MIN
    }

    /// What the entry weighs in the memo.
    fn bytes(&self) -> usize {
        self.alternatives
            .iter()
            .chain([&self.union])
            .map(RoaringBitmap::serialized_size)
            .sum()
    }
}

/// One commit's term postings, over every document of the commit.
pub struct TermPostingsMemo {
    memo: CommitMemo<String, TermPostings>,
}

impl Default for TermPostingsMemo {
    fn default() -> Self {
        TermPostingsMemo {
            memo: CommitMemo::new(CACHED_BYTES_MAX, WhenFull::StartOver),
        }
    }
}

impl TermPostingsMemo {
    /// The postings of `term` over every document, if a search of this commit kept them.
    pub fn known(&self, term: &ResolvedTerm) -> Option<Arc<TermPostings>> {
        self.memo.get(&key(term))
    }

    /// The postings of `term` over every document, computed by `compute` unless known.
    pub fn postings(
        &self,
        term: &ResolvedTerm,
        compute: impl FnOnce() -> ShardResult<TermPostings>,
    ) -> ShardResult<Arc<TermPostings>> {
        let key = key(term);
        if let Some(known) = self.memo.get(&key) {
            return Ok(known);
        }
        let postings = Arc::new(compute()?);
        if !postings.is_worth_keeping() {
            return Ok(postings);
        }
        let bytes = postings.bytes();
        Ok(self.memo.keep(key, postings, bytes))
    }
}

/// The key of `term`'s postings: what decides where each alternative occurs (its words and
/// whether it is a prefix), alternative after alternative.
fn key(term: &ResolvedTerm) -> String {
    let mut key = String::new();
    for alternative in &term.alternatives {
        key.push(if alternative.prefix { '*' } else { '=' });
        for (index, word) in alternative.words.iter().enumerate() {
            if index > 0 {
                key.push(WORD_SEPARATOR);
            }
            match word {
                Some(word) => key.push_str(word),
                None => key.push(HOLE),
            }
        }
        key.push(ALTERNATIVE_SEPARATOR);
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::query::{QueryTerm, TermKind};
    use crate::search::terms::Alternative;
    use std::cell::Cell;

    fn alternative(words: &[Option<&str>], prefix: bool) -> Alternative {
        Alternative {
            words: words.iter().map(|word| word.map(str::to_owned)).collect(),
            typos: 0,
            exact: false,
            shared: false,
            prefix,
            window_offset: 0,
        }
    }

    fn term(alternatives: Vec<Alternative>) -> ResolvedTerm {
        ResolvedTerm {
            term: QueryTerm {
                kind: TermKind::Word {
                    word: "word".to_owned(),
                    is_prefix: false,
                    typos_max: 0,
                },
                position: 0,
                end_position: 0,
            },
            alternatives,
        }
    }

    fn documents(range: std::ops::Range<u32>) -> RoaringBitmap {
        range.collect()
    }

    #[test]
    fn a_costly_term_is_read_once_per_commit() {
        let memo = TermPostingsMemo::default();
        let searched = term(vec![alternative(&[Some("python")], false)]);
        let reads = Cell::new(0);
        let read = || {
            reads.set(reads.get() + 1);
            Ok(TermPostings::new(vec![documents(0..5_000)]))
        };
        let first = memo.postings(&searched, read).expect("computed");
        let second = memo.postings(&searched, read).expect("kept");
        assert_eq!(reads.get(), 1);
        assert!(Arc::ptr_eq(&first, &second));
        let known = memo.known(&searched).expect("known");
        assert!(Arc::ptr_eq(&first, &known));
        assert_eq!(second.union, documents(0..5_000));
    }

    #[test]
    fn postings_within_documents_are_restricted_to_them() {
        let postings = TermPostings::new(vec![documents(0..100), documents(50..300)]);
        let candidates = documents(80..120);
        let within = postings.within(&candidates);
        assert_eq!(
            within.alternatives,
            vec![documents(80..100), documents(80..120)]
        );
        assert_eq!(within.union, documents(80..120));
    }

    #[test]
    fn a_cheap_term_is_read_again() {
        let memo = TermPostingsMemo::default();
        let searched = term(vec![alternative(&[Some("rare")], false)]);
        let reads = Cell::new(0);
        let read = || {
            reads.set(reads.get() + 1);
            Ok(TermPostings::new(vec![documents(0..10)]))
        };
        memo.postings(&searched, read).expect("computed");
        memo.postings(&searched, read).expect("computed");
        assert_eq!(reads.get(), 2);
        assert!(memo.known(&searched).is_none());
    }

    #[test]
    fn the_union_is_every_alternative_documents() {
        let postings = TermPostings::new(
            (0..CACHED_ALTERNATIVES_MIN as u32)
                .map(|index| documents(index * 3..index * 3 + 5))
                .collect(),
        );
        let expected: RoaringBitmap = postings.alternatives.iter().flatten().collect();
        assert_eq!(postings.union, expected);
        assert!(postings.is_worth_keeping());
    }

    #[test]
    fn keys_tell_apart_what_decides_the_postings() {
        let keys = [
            key(&term(vec![alternative(&[Some("for")], false)])),
            key(&term(vec![alternative(&[Some("for")], true)])),
            key(&term(vec![
                alternative(&[Some("for")], false),
                alternative(&[Some("form")], false),
            ])),
            key(&term(vec![alternative(&[Some("for"), Some("m")], false)])),
            key(&term(vec![alternative(&[Some("form")], false)])),
            key(&term(vec![alternative(
                &[Some("for"), None, Some("m")],
                false,
            )])),
            key(&term(vec![
                alternative(&[Some("form")], false),
                alternative(&[Some("for")], false),
            ])),
        ];
        for (index, one) in keys.iter().enumerate() {
            for other in &keys[index + 1..] {
                assert_ne!(one, other);
            }
        }
    }
}
