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
//! kept (cheaper ones are read again); the bitmaps held stay under [`CACHED_BYTES_MAX`] times the
//! commit's [`crate::cache_scale::CacheScale`] (the memo starts over when the next entry would
//! pass it).
//!
//! A batch's commit carries the entries searches asked for lately (the rules of
//! [`super::prefix_carry`]), on the indexing thread before the commit is served: an
//! alternative none of whose words the batch touched keeps its documents (a touched document
//! had each of its earlier words touched, and holds only touched words afterwards); the
//! others are their earlier documents without the touched documents, with the touched
//! documents where they occur now. A carried entry equals the entry read afresh from the new
//! commit (the unit tests compare them after random batches).

use std::sync::Arc;
use std::time::Instant;

use roaring::RoaringBitmap;
use storage_engine::ReadTransaction;

use crate::cache_meter::CacheAccount;
use crate::cache_scale::CacheScale;
use crate::commit_memo::{CommitMemo, WhenFull};
use crate::error::ShardResult;
use crate::shard::word_touches::TouchedWords;

use super::buckets::{Universe, alternative_documents};
use super::prefix_carry::carry_entries;
use super::prefix_unions::PrefixUnions;
use super::terms::{Alternative, ResolvedTerm};

/// Fewest documents, summed over a term's alternatives, that make its postings worth keeping.
pub const CACHED_DOCUMENTS_MIN: u64 = 1_024;
/// Fewest alternatives that make a term's postings worth keeping, whatever they hold.
pub const CACHED_ALTERNATIVES_MIN: usize = 8;
/// Most bytes of bitmaps (serialized size) one commit's memo holds, at one step of its
/// [`crate::cache_scale::CacheScale`] (one more step per half million documents).
pub const CACHED_BYTES_MAX: usize = 32 << 20;

/// What decides where one alternative of a term occurs: its words (`None`: a phrase's
/// stop-word hole) and whether its one word is a prefix.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AlternativeKey {
    words: Vec<Option<String>>,
    prefix: bool,
}

/// The key of a term's postings: its alternatives' keys, in the term's order.
pub type TermKey = Vec<AlternativeKey>;

impl AlternativeKey {
    fn of(alternative: &Alternative) -> AlternativeKey {
        AlternativeKey {
            words: alternative.words.clone(),
            prefix: alternative.prefix,
        }
    }

    /// Whether the batch `touched` describes may have changed where the alternative occurs:
    /// it touched one of its words (for a prefix, a word the prefix starts).
    fn is_touched(&self, touched: &TouchedWords) -> bool {
        match self.words.as_slice() {
            [Some(word)] if self.prefix => touched.touches_prefix(word),
            words => words
                .iter()
                .flatten()
                .any(|word| touched.contains(word.as_bytes())),
        }
    }

    /// The alternative this key stands for, as [`alternative_documents`] reads it (its words
    /// and prefix flag; the rest does not change where it occurs).
    fn alternative(&self) -> Alternative {
        Alternative {
            words: self.words.clone(),
            typos: 0,
            exact: false,
            shared: false,
            prefix: self.prefix,
            window_offset: 0,
        }
    }
}

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
            alternatives: self.alternatives_within(documents),
            union: &self.union & documents,
        }
    }

    /// Each alternative's documents among `documents`. When `documents` are exactly where the
    /// term occurs (a one-term query's first words level), every alternative lies within them
    /// and is copied, not intersected (the intersections were 13 % of a one-word query load's
    /// CPU on a 400k-document index).
    pub fn alternatives_within(&self, documents: &RoaringBitmap) -> Vec<RoaringBitmap> {
        if self.union.len() == documents.len() && self.union == *documents {
            debug_assert!(
                self.alternatives
                    .iter()
                    .all(|alternative| alternative.is_subset(documents))
            );
            return self.alternatives.clone();
        }
        self.alternatives
            .iter()
            .map(|alternative| alternative & documents)
            .collect()
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
    memo: CommitMemo<TermKey, TermPostings>,
}

impl Default for TermPostingsMemo {
    /// Outside any cache budget.
    fn default() -> Self {
        TermPostingsMemo::charging(CacheAccount::unbounded(), CacheScale::ONE)
    }
}

impl TermPostingsMemo {
    /// An empty memo whose values are charged to `account`, its bound grown by `scale` (see
    /// [`crate::cache_scale`]).
    pub fn charging(account: Arc<CacheAccount>, scale: CacheScale) -> Self {
        TermPostingsMemo {
            memo: CommitMemo::charging(scale.bound(CACHED_BYTES_MAX), WhenFull::StartOver, account),
        }
    }
}

impl TermPostingsMemo {
    /// Whether no entry is kept (nothing to carry to the next commit).
    pub fn is_empty(&self) -> bool {
        self.memo.is_empty()
    }

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

/// The key of `term`'s postings.
fn key(term: &ResolvedTerm) -> TermKey {
    term.alternatives.iter().map(AlternativeKey::of).collect()
}

/// Carries the entries of `earlier` (the memo of the commit before a batch) into `into` (the
/// batch's commit's) over the batch `touched` describes, reading the new commit through `read`
/// and its prefix unions `prefixes`, until `deadline`.
pub fn carry_term_postings(
    earlier: &TermPostingsMemo,
    into: &TermPostingsMemo,
    read: &ReadTransaction,
    prefixes: &PrefixUnions,
    touched: &TouchedWords,
    deadline: Instant,
) -> ShardResult<()> {
    carry_entries(&earlier.memo, &into.memo, deadline, |key, postings| {
        carried_postings(key, postings, read, prefixes, touched)
    })
}

/// `earlier` (the postings of `key` before the batch) on the new commit, or `None` when the
/// batch changed none of its alternatives (the entry is then shared as it is).
fn carried_postings(
    key: &TermKey,
    earlier: &TermPostings,
    read: &ReadTransaction,
    prefixes: &PrefixUnions,
    touched: &TouchedWords,
) -> ShardResult<Option<(TermPostings, usize)>> {
    debug_assert_eq!(
        key.len(),
        earlier.alternatives.len(),
        "one bitmap per alternative"
    );
    let changed: Vec<bool> = key
        .iter()
        .map(|alternative| alternative.is_touched(touched))
        .collect();
    if !changed.contains(&true) {
        return Ok(None);
    }
    let documents = touched.documents();
    let universe = Universe {
        documents,
        is_everything: false,
    };
    let mut alternatives = Vec::with_capacity(key.len());
    for ((alternative, held), changed) in key.iter().zip(&earlier.alternatives).zip(changed) {
        turns::checkpoint();
        if changed {
            let mut carried = held - documents;
            carried |= alternative_documents(read, prefixes, universe, &alternative.alternative())?;
            alternatives.push(carried);
        } else {
            alternatives.push(held.clone());
        }
    }
    let carried = TermPostings::new(alternatives);
    let bytes = carried.bytes();
    Ok(Some((carried, bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::prefix_carry::tests::{BATCHES, DOCUMENTS, document, random_batch};
    use crate::search::query::{QueryTerm, TermKind};
    use crate::shard::ShardSnapshot;
    use crate::test_database::scratch_shard;
    use crate::test_random::Random;
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

    /// Asks `memo` twice for a term of one alternative holding `held`; answers how many
    /// times its postings were read, and the two answers.
    fn asked_twice(
        memo: &TermPostingsMemo,
        word: &str,
        held: &RoaringBitmap,
    ) -> (usize, Arc<TermPostings>, Arc<TermPostings>) {
        let searched = term(vec![alternative(&[Some(word)], false)]);
        let reads = Cell::new(0);
        let read = || {
            reads.set(reads.get() + 1);
            Ok(TermPostings::new(vec![held.clone()]))
        };
        let first = memo.postings(&searched, read).expect("computed");
        let second = memo.postings(&searched, read).expect("computed or kept");
        (reads.get(), first, second)
    }

    #[test]
    fn a_costly_term_is_read_once_per_commit() {
        let memo = TermPostingsMemo::default();
        let (reads, first, second) = asked_twice(&memo, "python", &documents(0..5_000));
        assert_eq!(reads, 1);
        assert!(Arc::ptr_eq(&first, &second));
        let searched = term(vec![alternative(&[Some("python")], false)]);
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
        let (reads, _, _) = asked_twice(&memo, "rare", &documents(0..10));
        assert_eq!(reads, 2);
        let searched = term(vec![alternative(&[Some("rare")], false)]);
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
    fn a_key_names_each_alternative_words_and_prefix_in_order() {
        let searched = term(vec![
            alternative(&[Some("for")], true),
            alternative(&[Some("for"), None, Some("m")], false),
        ]);
        assert_eq!(
            key(&searched),
            vec![
                AlternativeKey {
                    words: vec![Some("for".to_owned())],
                    prefix: true,
                },
                AlternativeKey {
                    words: vec![Some("for".to_owned()), None, Some("m".to_owned())],
                    prefix: false,
                },
            ]
        );
    }

    /// The terms whose postings are carried: a frequent word, eight rare ones, a prefix and
    /// its word, and a word pair and a phrase among single words.
    fn carried_terms() -> Vec<ResolvedTerm> {
        let words = |words: &[&str]| -> Vec<Alternative> {
            words
                .iter()
                .map(|word| alternative(&[Some(word)], false))
                .collect()
        };
        let mut pairs = vec![
            alternative(&[Some("abundant"), Some("q1")], false),
            alternative(&[Some("abundant"), Some("q2"), Some("abundant")], false),
        ];
        pairs.extend(words(&["b1", "b2", "b3", "b4", "b5", "b6"]));
        vec![
            term(words(&["abundant"])),
            term(words(&["q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7"])),
            term(vec![
                alternative(&[Some("abc")], false),
                alternative(&[Some("abc")], true),
            ]),
            term(pairs),
        ]
    }

    /// The postings of `term` read afresh from `snapshot`'s commit.
    fn fresh(snapshot: &ShardSnapshot, term: &ResolvedTerm) -> TermPostings {
        let universe = Universe {
            documents: snapshot.document_ids(),
            is_everything: true,
        };
        let alternatives = crate::search::buckets::alternatives_documents(
            snapshot.read_transaction(),
            snapshot.prefix_unions(),
            universe,
            term,
        )
        .expect("the postings read");
        TermPostings::new(alternatives)
    }

    #[test]
    fn carried_postings_equal_the_postings_read_afresh_after_random_batches() {
        let mut random = Random(0x7E2A_CA22);
        let (_directory, shard) = scratch_shard();
        let operations = (0..DOCUMENTS).map(|id| document(&mut random, id)).collect();
        shard.apply(1, operations).expect("the documents apply");
        let terms = carried_terms();
        let snapshot = shard.read().expect("a snapshot");
        for term in &terms {
            snapshot
                .term_postings()
                .postings(term, || Ok(fresh(&snapshot, term)))
                .expect("the postings are read");
            assert!(snapshot.term_postings().known(term).is_some(), "kept");
        }
        drop(snapshot);
        let mut next_id = DOCUMENTS;
        let mut before: Vec<RoaringBitmap> = Vec::new();
        let mut changed = 0;
        for batch in 2..2 + BATCHES {
            let mut prepared = shard.prepare(batch).expect("the batch opens");
            prepared
                .apply_chunk(random_batch(&mut random, &mut next_id))
                .expect("the chunk applies");
            let mut unions = Vec::new();
            let warm = |snapshot: &ShardSnapshot| {
                for term in &terms {
                    let carried = snapshot
                        .term_postings()
                        .known(term)
                        .unwrap_or_else(|| panic!("batch {batch}: {term:?} carried"));
                    assert_eq!(*carried, fresh(snapshot, term), "batch {batch}: {term:?}");
                    unions.push(carried.union.clone());
                }
            };
            shard
                .commit_warmed(prepared, Some(warm))
                .expect("the batch commits");
            if unions != before {
                changed += 1;
            }
            before = unions;
        }
        assert!(changed >= 3, "the batches change the postings ({changed})");
    }
}
