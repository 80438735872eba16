//! Listing a snapshot's documents: in internal id order or sorted by sortable fields, after an
//! optional filter, with offset and limit.
//!
//! Invariants: the sort follows Meilisearch's facet sort — for each rule, documents with
//! numbers come before documents with strings (in the rule's direction within each), a document
//! sits in the bucket of its first value met in that direction, documents without a value come
//! last; ties fall to the next rule, then to internal id order. Sorting reads only facet keys.

use roaring::RoaringBitmap;
use storage_engine::{Direction, ReadTransaction};

use crate::error::ShardResult;
use crate::index::keys::{decode_bitmap, decode_string_entry, field_id, field_prefix};
use crate::index::trees::{FACET_NUMBERS_TREE, FACET_STRINGS_TREE};

/// One `sort` criterion: a field and its direction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SortRule {
    pub field: String,
    pub ascending: bool,
}

/// A document listing request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListQuery {
    pub offset: usize,
    pub limit: usize,
    /// Only these internal ids (a filter's result), when set.
    pub filter: Option<RoaringBitmap>,
    pub sort: Vec<SortRule>,
}

/// The first `needed` ids of `candidates` in the order of `rules`.
pub(crate) fn sorted_ids(
    read: &ReadTransaction,
    candidates: RoaringBitmap,
    rules: &[SortRule],
    needed: usize,
) -> ShardResult<Vec<u32>> {
    let mut output = Vec::new();
    sort_into(read, candidates, rules, needed, &mut output)?;
    Ok(output)
}

fn sort_into(
    read: &ReadTransaction,
    candidates: RoaringBitmap,
    rules: &[SortRule],
    needed: usize,
    output: &mut Vec<u32>,
) -> ShardResult<()> {
    let Some((rule, rest)) = rules.split_first() else {
        output.extend(candidates.iter().take(needed.saturating_sub(output.len())));
        return Ok(());
    };
    let mut remaining = candidates;
    if let Some(field) = field_id(read, &rule.field)? {
        let direction = if rule.ascending {
            Direction::Forward
        } else {
            Direction::Backward
        };
        for tree_name in [FACET_NUMBERS_TREE, FACET_STRINGS_TREE] {
            let Some(tree) = read.open_tree(tree_name)? else {
                continue;
            };
            let prefix = field_prefix(field);
            for entry in tree.prefix(&prefix, direction)? {
                if output.len() >= needed || remaining.is_empty() {
                    return Ok(());
                }
                let (_key, value) = entry?;
                let bitmap = if tree_name == FACET_STRINGS_TREE {
                    decode_string_entry(value)?.1
                } else {
                    decode_bitmap(value)?
                };
                let bucket = &remaining & &bitmap;
                if bucket.is_empty() {
                    continue;
                }
                remaining -= &bucket;
                sort_into(read, bucket, rest, needed, output)?;
            }
        }
    }
    if output.len() < needed && !remaining.is_empty() {
        sort_into(read, remaining, rest, needed, output)?;
    }
    Ok(())
}

/// Ids `offset..offset + limit` of the listing, and how many ids match in all.
pub(crate) fn list_ids(
    read: &ReadTransaction,
    universe: &RoaringBitmap,
    query: &ListQuery,
) -> ShardResult<(Vec<u32>, u64)> {
    let candidates = match &query.filter {
        Some(filter) => universe & filter,
        None => universe.clone(),
    };
    let total = candidates.len();
    let needed = query.offset.saturating_add(query.limit);
    let ids = if query.sort.is_empty() {
        candidates
            .iter()
            .skip(query.offset)
            .take(query.limit)
            .collect()
    } else {
        let sorted = sorted_ids(read, candidates, &query.sort, needed)?;
        sorted
            .into_iter()
            .skip(query.offset)
            .take(query.limit)
            .collect()
    };
    Ok((ids, total))
}
