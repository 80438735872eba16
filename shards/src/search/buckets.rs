//! Early stop by `words` buckets: when `words` is the first ranking step, documents that keep
//! more query terms always rank first, so the documents of each words bucket (computed from
//! bitmaps alone) are ranked in turn and the search stops once it holds `offset + limit` hits.
//!
//! Invariant: a term's bitmap here is exactly the set of documents where it has an occurrence
//! (see [`super::occurrences`]) when every searchable field is searched and no field disables
//! typos; the caller uses buckets only then, so hits and totals equal the full evaluation's.

use roaring::{MultiOps, RoaringBitmap};
use storage_engine::ReadTransaction;

use crate::error::ShardResult;
use crate::index::inverted::{bitmap_or_empty, keys_extending};
use crate::index::trees::WORD_DOCUMENTS_TREE;

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
pub(super) fn prefix_documents(read: &ReadTransaction, prefix: &str) -> ShardResult<ComputedUnion> {
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

/// The words levels of a search: per removal step, the documents keeping every term the
/// matching strategy has not removed yet.
///
/// Invariant: the levels are nested, each holding the one before it (a later step keeps fewer
/// terms, so fewer sets are intersected); the words bucket of a level is its documents not in
/// the level before, and every document matching the query is in the last level.
pub struct WordsLevels {
    levels: Vec<RoaringBitmap>,
}

impl WordsLevels {
    /// The levels of `term_documents` (per term, the documents it matches) as terms are
    /// removed in `removal_order`: each level is the next level's documents intersected with
    /// the terms the next step removes, computed from the last (fewest terms kept) backwards.
    pub fn new(term_documents: &[&RoaringBitmap], removal_order: &[Vec<usize>]) -> WordsLevels {
        let mut kept_per_level: Vec<Vec<usize>> = Vec::with_capacity(removal_order.len() + 1);
        let mut removed: Vec<usize> = Vec::new();
        for step in 0..=removal_order.len() {
            if let Some(group) = step
                .checked_sub(1)
                .and_then(|index| removal_order.get(index))
            {
                removed.extend(group);
            }
            let kept: Vec<usize> = (0..term_documents.len())
                .filter(|index| !removed.contains(index))
                .collect();
            if kept.is_empty() {
                break;
            }
            kept_per_level.push(kept);
        }
        let mut levels: Vec<RoaringBitmap> = Vec::with_capacity(kept_per_level.len());
        let mut later_kept: &[usize] = &[];
        for kept in kept_per_level.iter().rev() {
            let added = kept
                .iter()
                .filter(|term| !later_kept.contains(term))
                .map(|&term| term_documents[term]);
            let level = intersection_of(levels.last().into_iter().chain(added));
            levels.push(level);
            later_kept = kept;
        }
        levels.reverse();
        WordsLevels { levels }
    }

    /// The number of levels (of words buckets).
    pub fn count(&self) -> usize {
        self.levels.len()
    }

    /// The words bucket of `level`: its documents not in the level before.
    pub fn bucket(&self, level: usize) -> RoaringBitmap {
        match (
            level
                .checked_sub(1)
                .and_then(|before| self.levels.get(before)),
            self.levels.get(level),
        ) {
            (Some(before), Some(documents)) => documents - before,
            (None, Some(documents)) => documents.clone(),
            (_, None) => RoaringBitmap::new(),
        }
    }

    /// Every document matching the query: the last level.
    pub fn matching(&self) -> RoaringBitmap {
        self.levels.last().cloned().unwrap_or_default()
    }
}

/// The intersection of `sets` (empty when there is none).
fn intersection_of<'a>(mut sets: impl Iterator<Item = &'a RoaringBitmap>) -> RoaringBitmap {
    let Some(first) = sets.next() else {
        return RoaringBitmap::new();
    };
    let Some(second) = sets.next() else {
        return first.clone();
    };
    let mut intersection = first & second;
    for set in sets {
        intersection &= set;
    }
    intersection
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_random::Random;

    /// The buckets as their definition states them: per step, the intersection of the terms
    /// kept, without the documents of earlier buckets.
    fn buckets_by_definition(
        term_documents: &[RoaringBitmap],
        removal_order: &[Vec<usize>],
    ) -> Vec<RoaringBitmap> {
        let mut buckets = Vec::new();
        let mut seen = RoaringBitmap::new();
        let mut removed: Vec<usize> = Vec::new();
        for step in 0..=removal_order.len() {
            if step > 0 {
                removed.extend(&removal_order[step - 1]);
            }
            let kept: Vec<usize> = (0..term_documents.len())
                .filter(|index| !removed.contains(index))
                .collect();
            if kept.is_empty() {
                break;
            }
            let mut bucket = term_documents[kept[0]].clone();
            for index in &kept[1..] {
                bucket &= &term_documents[*index];
            }
            bucket -= &seen;
            seen |= &bucket;
            buckets.push(bucket);
        }
        buckets
    }

    #[test]
    fn levels_give_the_buckets_of_their_definition() {
        let mut random = Random(0x0b0c_4e75);
        for _ in 0..200 {
            let terms = random.below(5) as usize + 1;
            let term_documents: Vec<RoaringBitmap> = (0..terms)
                .map(|_| {
                    let density = random.below(4) + 1;
                    (0..3_000_u32)
                        .filter(|_| random.below(u64::from(density) * 2) == 0)
                        .collect()
                })
                .collect();
            // Removal groups: the terms from the last, one or two at a time, some left kept.
            let mut removal_order = Vec::new();
            let mut next = terms;
            while next > 1 && random.below(4) != 0 {
                let size = random.below(2) as usize + 1;
                let start = next.saturating_sub(size).max(1);
                removal_order.push((start..next).collect::<Vec<_>>());
                next = start;
            }
            let expected = buckets_by_definition(&term_documents, &removal_order);
            let borrowed: Vec<&RoaringBitmap> = term_documents.iter().collect();
            let levels = WordsLevels::new(&borrowed, &removal_order);
            assert_eq!(levels.count(), expected.len());
            let buckets: Vec<RoaringBitmap> = (0..levels.count())
                .map(|level| levels.bucket(level))
                .collect();
            assert_eq!(buckets, expected, "{removal_order:?}");
            let union = expected
                .iter()
                .fold(RoaringBitmap::new(), |union, bucket| union | bucket);
            assert_eq!(levels.matching(), union);
        }
    }
}
