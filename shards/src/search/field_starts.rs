//! Which documents can match a searched field at its start, and which can match one exactly,
//! bounded from bitmaps: what lets exactness as the last rule rank only those documents one
//! by one.
//!
//! A document holding every kept term exactly matches a field at its start when, in that
//! field, each term has an exact occurrence whose position falls in the position bucket of the
//! term's place in the query (see `exact_attribute` in [`super::ranking`]); it matches the
//! field exactly when the field also holds as many words as the terms span. An exact
//! occurrence is one of the term's exact alternatives (the query word, the phrase; never an
//! n-gram, see [`super::ngrams`]),
//! and it starts where the alternative's first word stands. So a document can match a field
//! at its start only if, for every term, one of its exact alternatives' first words is in
//! `word_position_buckets` at the term's bucket and in `word_fields` at that field; and
//! exactly only if that field is also in `field_word_counts` at the wanted count. A phrase
//! occurs where its words stand at consecutive positions of one field: when a term's one exact
//! alternative is a phrase and its place in the query has an exact position bucket (below
//! [`EXACT_POSITIONS`]), the phrase can only start there, so each later word of the phrase
//! must also be in `word_fields` at that field and in `word_position_buckets` at the bucket of
//! its own position. Without this, a phrase such as `"mcp server"` bounds every document with
//! `mcp` first in a two-word field, most of which never match.
//!
//! Invariant: [`FieldStarts::at_start`] holds every document of the bucket whose exactness is
//! "start of a field" or "exact match", and [`FieldStarts::exact_length`] (a subset of it)
//! every one whose exactness is "exact match"; both may hold more (the field and the position
//! are read from separate bitmaps), never less. With one kept term matched exactly through
//! single words, `at_start` holds no more ([`FieldStarts::at_start_is_exact`]): the position
//! bucket of the word's occurrence lies in a field holding it, and that occurrence counts
//! there. This needs every indexed field searched, which the bucket path ensures (it runs
//! only without `attributesToSearchOn`, see `by_buckets` in [`super::execute`]; only
//! searchable fields are indexed), and no field disabling typos (an n-gram alternative has
//! typos and would not count in such a field), which is checked here as well. `None` when the bitmaps cannot bound them: a
//! term without an exact alternative, a phrase beginning with a stop-word hole, a count past
//! what `field_word_counts` indexes, or a shard without one of the trees.

use roaring::RoaringBitmap;
use storage_engine::{ReadTransaction, ReadTree};

use crate::error::ShardResult;
use crate::index::inverted::bucketed_position;
use crate::index::inverted::{bitmap_within, field_word_count_key, write_word_slot_key};
use crate::index::trees::{FIELD_WORD_COUNTS_TREE, WORD_FIELDS_TREE, WORD_POSITION_BUCKETS_TREE};

use super::ranking::{Kept, RankingContext, bucketed_query_position};
use super::rule_bitmaps::EXACT_POSITIONS;
use super::terms::ResolvedTerm;

/// The documents of a bucket that may match a field at its start, and exactly.
#[derive(Debug, Default, PartialEq)]
pub struct FieldStarts {
    pub at_start: RoaringBitmap,
    pub exact_length: RoaringBitmap,
    /// Whether every document of `at_start` matches a field at its start (see the module
    /// invariant): those not matching one exactly are at the "start of a field" rank unread.
    pub at_start_is_exact: bool,
}

/// The trees the bound reads.
struct Trees<'t> {
    fields: ReadTree<'t>,
    buckets: ReadTree<'t>,
    counts: ReadTree<'t>,
}

/// Bounds, within `bucket` (documents holding every kept term exactly), the documents that may
/// match a field at its start or exactly.
pub fn field_starts(
    read: &ReadTransaction,
    context: &RankingContext<'_>,
    resolved: &[ResolvedTerm],
    kept: &Kept,
    bucket: &RoaringBitmap,
) -> ShardResult<Option<FieldStarts>> {
    let Ok(wanted) = u16::try_from(context.exact_match_length(kept)) else {
        return Ok(None);
    };
    let Some(trees) = open_trees(read)? else {
        return Ok(None);
    };
    let Some(exact_words) = exact_words(resolved, kept) else {
        return Ok(None);
    };
    let mut key = Vec::new();
    let mut positioned = bucket.clone();
    for (&term, words) in kept.terms.iter().zip(&exact_words) {
        let position = context.terms[term].position;
        let bucketed = bucketed_query_position(position);
        positioned = union_of_slots(
            &trees.buckets,
            &words.first,
            bucketed,
            &positioned,
            &mut key,
        )?;
        if bucketed < EXACT_POSITIONS {
            for (offset, word) in &words.following {
                let at = bucketed_position(u16::try_from(position + offset).unwrap_or(u16::MAX));
                positioned = union_of_slots(
                    &trees.buckets,
                    std::slice::from_ref(word),
                    at,
                    &positioned,
                    &mut key,
                )?;
            }
        }
        if positioned.is_empty() {
            return Ok(Some(FieldStarts::default()));
        }
    }
    let mut starts = FieldStarts {
        at_start_is_exact: matches!(exact_words.as_slice(), [only] if only.single_words)
            && context.fields.values().all(|field| !field.typos_disabled),
        ..FieldStarts::default()
    };
    for &field in context.fields.keys() {
        let mut in_field = positioned.clone();
        let field_words = exact_words.iter().flat_map(|words| {
            std::iter::once(words.first.as_slice()).chain(
                words
                    .following
                    .iter()
                    .map(|(_, word)| std::slice::from_ref(word)),
            )
        });
        for words in field_words {
            in_field = union_of_slots(&trees.fields, words, field, &in_field, &mut key)?;
            if in_field.is_empty() {
                break;
            }
        }
        if in_field.is_empty() {
            continue;
        }
        let Some(count_key) = field_word_count_key(field, wanted) else {
            return Ok(None);
        };
        starts.exact_length |= bitmap_within(trees.counts.get(&count_key)?, &in_field)?;
        starts.at_start |= in_field;
    }
    Ok(Some(starts))
}

fn open_trees(read: &ReadTransaction) -> ShardResult<Option<Trees<'_>>> {
    let (Some(fields), Some(buckets), Some(counts)) = (
        read.open_tree(WORD_FIELDS_TREE)?,
        read.open_tree(WORD_POSITION_BUCKETS_TREE)?,
        read.open_tree(FIELD_WORD_COUNTS_TREE)?,
    ) else {
        return Ok(None);
    };
    Ok(Some(Trees {
        fields,
        buckets,
        counts,
    }))
}

/// The words a term's exact occurrence must show in a field that starts with it.
struct ExactWords {
    /// The first words of the term's exact alternatives (one of them at the term's place).
    first: Vec<String>,
    /// When the term's one exact alternative is a phrase: its later words, each with its
    /// offset from the first word.
    following: Vec<(u32, String)>,
    /// Whether every exact alternative of the term is one word.
    single_words: bool,
}

/// Per kept term, the words of its exact alternatives; `None` when a term has none or one
/// begins with a stop-word hole (its occurrences start before its first word).
fn exact_words(resolved: &[ResolvedTerm], kept: &Kept) -> Option<Vec<ExactWords>> {
    kept.terms
        .iter()
        .map(|&term| {
            let exact: Vec<_> = resolved[term]
                .alternatives
                .iter()
                .filter(|alternative| alternative.exact)
                .collect();
            let mut first: Vec<String> = Vec::new();
            for alternative in &exact {
                let word = alternative.words.first()?.as_ref()?;
                if !first.contains(word) {
                    first.push(word.clone());
                }
            }
            let following = match exact.as_slice() {
                [only] => only
                    .words
                    .iter()
                    .enumerate()
                    .skip(1)
                    .filter_map(|(offset, word)| {
                        Some((u32::try_from(offset).ok()?, word.as_ref()?.clone()))
                    })
                    .collect(),
                _ => Vec::new(),
            };
            let single_words = exact.iter().all(|alternative| alternative.words.len() == 1);
            (!first.is_empty()).then_some(ExactWords {
                first,
                following,
                single_words,
            })
        })
        .collect()
}

/// The documents of `within` where one of `words` is in `tree` at `slot`.
fn union_of_slots(
    tree: &ReadTree<'_>,
    words: &[String],
    slot: u16,
    within: &RoaringBitmap,
    key: &mut Vec<u8>,
) -> ShardResult<RoaringBitmap> {
    let mut found = RoaringBitmap::new();
    for word in words {
        write_word_slot_key(key, word, slot);
        found |= bitmap_within(tree.get(key)?, within)?;
    }
    Ok(found)
}
