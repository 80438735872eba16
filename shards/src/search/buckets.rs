//! Early stop by `words` buckets: when `words` is the first ranking step, documents that keep
//! more query terms always rank first, so the documents of each words bucket (computed from
//! bitmaps alone) are ranked in turn and the search stops once it holds `offset + limit` hits.
//!
//! Invariant: a term's bitmap here is exactly the set of documents where it has an occurrence
//! (see [`super::occurrences`]) when every searchable field is searched and no field disables
//! typos; the caller uses buckets only then, so hits and totals equal the full evaluation's.

use roaring::{MultiOps, RoaringBitmap};
use storage_engine::ReadTransaction;

use crate::shard::ShardResult;

use super::inverted::{WORD_DOCUMENTS_TREE, bitmap_or_empty, keys_extending};
use super::occurrences::{phrase_occurrences, word_documents, word_postings};
use super::prefix_unions::{ComputedUnion, PrefixUnions, SlotUnion, UnionKind};
use super::terms::{Alternative, ResolvedTerm};
use super::word_pairs::WordPairs;

/// The documents a search may return, and whether they are every document of the shard.
/// Postings only ever list live documents (a deletion removes the document from each of its
/// words'), so against every document a posting needs no intersection: decoding it is
/// enough, which spares an unfiltered search one bitmap intersection per word it matches.
#[derive(Debug, Clone, Copy)]
pub struct Universe<'a> {
    pub documents: &'a RoaringBitmap,
    pub is_everything: bool,
}

/// Per alternative of `term`, the documents of `universe` where it occurs (their union is
/// where the term occurs).
pub fn alternatives_documents(
    read: &ReadTransaction,
    prefixes: &PrefixUnions,
    universe: Universe<'_>,
    term: &ResolvedTerm,
) -> ShardResult<Vec<RoaringBitmap>> {
    term.alternatives
        .iter()
        .map(|alternative| alternative_documents(read, prefixes, universe, alternative))
        .collect()
}

/// The documents of `universe` where `alternative` occurs.
pub fn alternative_documents(
    read: &ReadTransaction,
    prefixes: &PrefixUnions,
    universe: Universe<'_>,
    alternative: &Alternative,
) -> ShardResult<RoaringBitmap> {
    let documents = universe.documents;
    Ok(match alternative.words.as_slice() {
        [Some(word)] if alternative.prefix => {
            let union =
                prefixes.union(UnionKind::Documents, word, || prefix_documents(read, word))?;
            match union.get(&0) {
                Some(found) if universe.is_everything => found.clone(),
                Some(found) => found & documents,
                None => RoaringBitmap::new(),
            }
        }
        [Some(word)] if universe.is_everything => word_postings(read, word)?,
        [Some(word)] => word_documents(read, documents, word)?,
        // Two words side by side: their pair alone decides.
        [Some(left), Some(right)] => WordPairs::open(read)?.words(left, right, documents)?,
        phrase => phrase_occurrences(read, documents, phrase)?
            .into_keys()
            .collect(),
    })
}

/// The documents containing a word longer than `prefix` that starts with it (as slot 0).
fn prefix_documents(read: &ReadTransaction, prefix: &str) -> ShardResult<ComputedUnion> {
    let Some(tree) = read.open_tree(WORD_DOCUMENTS_TREE)? else {
        return Ok(ComputedUnion {
            union: SlotUnion::new(),
            keys_read: 0,
        });
    };
    let mut words = Vec::new();
    for entry in keys_extending(&tree, prefix)? {
        let (_, value) = entry?;
        words.push(bitmap_or_empty(Some(value))?);
    }
    let keys_read = words.len();
    // One multi-way union: or-ing thousands of bitmaps one by one is quadratic.
    Ok(ComputedUnion {
        union: SlotUnion::from([(0, words.union())]),
        keys_read,
    })
}

/// The words buckets, best first: the documents keeping every term, then those keeping the
/// terms left after each removal group, each bucket without the documents of earlier ones.
pub fn words_buckets(
    term_documents: &[RoaringBitmap],
    removal_order: &[Vec<usize>],
) -> Vec<RoaringBitmap> {
    let mut buckets = Vec::with_capacity(removal_order.len() + 1);
    let mut seen = RoaringBitmap::new();
    let mut removed: Vec<usize> = Vec::new();
    for step in 0..=removal_order.len() {
        if let Some(group) = step
            .checked_sub(1)
            .and_then(|index| removal_order.get(index))
        {
            removed.extend(group);
        }
        let mut kept = (0..term_documents.len()).filter(|index| !removed.contains(index));
        let Some(first) = kept.next() else {
            break;
        };
        let mut bucket = term_documents[first].clone();
        for index in kept {
            bucket &= &term_documents[index];
        }
        bucket -= &seen;
        seen |= &bucket;
        buckets.push(bucket);
    }
    buckets
}
