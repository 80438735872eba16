//! The value each document shows a sort rule, read from the facet indexes: for an ascending
//! rule the smallest value, for a descending one the largest, numbers before strings (as
//! Meilisearch's facet sort meets them), nothing when the field has no value or no facet index.
//!
//! Per document values ([`sort_values`]), value groups as far as a page needs
//! ([`sort_groups`]) and the bucket sort of placeholder searches ([`sorted_documents`]) all
//! walk the facet keys the same way ([`walk_values`]).
//!
//! Invariant: one pass over the field's facet keys in the rule's direction, stopping when
//! every document has its value; the value depends only on the document.

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use roaring::RoaringBitmap;
use storage_engine::{Direction, ReadTransaction};

use crate::error::ShardResult;
use crate::index::keys::{
    decode_bitmap, decode_string_entry, field_id, field_prefix, number_of_key, string_of_key,
};
use crate::index::trees::{FACET_NUMBERS_TREE, FACET_STRINGS_TREE};

use super::score::SortValue;

/// A facet value met by [`walk_values`], made into a [`SortValue`] only when some wanted
/// document holds it.
enum FacetValue<'a> {
    Number(f64),
    String { key: &'a [u8], original: String },
}

impl FacetValue<'_> {
    fn into_sort_value(self) -> ShardResult<SortValue> {
        Ok(match self {
            FacetValue::Number(number) => SortValue::Number(number),
            FacetValue::String { key, original } => SortValue::String {
                normalized: string_of_key(key)?.to_owned(),
                original,
            },
        })
    }
}

/// Calls `visit` with each value of the field `field` and its documents, in the order a sort
/// in direction `ascending` meets them: numbers, then strings, each in that direction; stops
/// when `visit` breaks. Returns whether every value was visited.
fn walk_values(
    read: &ReadTransaction,
    field: u16,
    ascending: bool,
    visit: &mut dyn FnMut(FacetValue<'_>, RoaringBitmap) -> ShardResult<ControlFlow<()>>,
) -> ShardResult<bool> {
    let direction = if ascending {
        Direction::Forward
    } else {
        Direction::Backward
    };
    let prefix = field_prefix(field);
    if let Some(tree) = read.open_tree(FACET_NUMBERS_TREE)? {
        for entry in tree.prefix(&prefix, direction)? {
            let (key, value) = entry?;
            let number = number_of_key(key)?;
            if visit(FacetValue::Number(number), decode_bitmap(value)?)?.is_break() {
                return Ok(false);
            }
        }
    }
    if let Some(tree) = read.open_tree(FACET_STRINGS_TREE)? {
        for entry in tree.prefix(&prefix, direction)? {
            let (key, value) = entry?;
            let (original, bitmap) = decode_string_entry(value)?;
            if visit(FacetValue::String { key, original }, bitmap)?.is_break() {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

/// Document → the value a sort on `field` sees (documents without one are absent).
pub fn sort_values(
    read: &ReadTransaction,
    field: &str,
    ascending: bool,
    documents: &RoaringBitmap,
) -> ShardResult<BTreeMap<u32, SortValue>> {
    let mut values = BTreeMap::new();
    let Some(field) = field_id(read, field)? else {
        return Ok(values);
    };
    let mut remaining = documents.clone();
    walk_values(read, field, ascending, &mut |value, documents| {
        if remaining.is_empty() {
            return Ok(ControlFlow::Break(()));
        }
        let here = documents & &remaining;
        if !here.is_empty() {
            let value = value.into_sort_value()?;
            for document in &here {
                values.insert(document, value.clone());
            }
            remaining -= here;
        }
        Ok(ControlFlow::Continue(()))
    })?;
    Ok(values)
}

/// `documents` grouped by the value a sort on `field` sees, best group first, until the groups
/// hold at least `enough` documents; the documents not grouped yet come back unsplit (they
/// rank after every group). The groups are those of equal [`sort_values`], in the order the
/// rule ranks them (documents without a value last), without a value per document.
pub fn sort_groups(
    read: &ReadTransaction,
    field: &str,
    ascending: bool,
    documents: &RoaringBitmap,
    enough: u64,
) -> ShardResult<(Vec<RoaringBitmap>, RoaringBitmap)> {
    let mut groups = Vec::new();
    let mut grouped = 0_u64;
    let mut remaining = documents.clone();
    let Some(field) = field_id(read, field)? else {
        return Ok((vec![remaining], RoaringBitmap::new()));
    };
    let mut take = |documents: RoaringBitmap, remaining: &mut RoaringBitmap| {
        let here = documents & &*remaining;
        if !here.is_empty() {
            *remaining -= &here;
            grouped += here.len();
            groups.push(here);
        }
        remaining.is_empty() || grouped >= enough
    };
    let walked_all = walk_values(read, field, ascending, &mut |_, documents| {
        Ok(if take(documents, &mut remaining) {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        })
    })?;
    if walked_all && !remaining.is_empty() {
        // The documents without a value: one last group.
        groups.push(std::mem::take(&mut remaining));
    }
    Ok((groups, remaining))
}

/// The first `needed` documents of `documents` ordered by `rules` (then internal id), each
/// with the value every rule saw, by a bucket sort over the facet indexes: only the buckets
/// that hold the first `needed` documents are split further, so a placeholder search sorted
/// on a field costs what its page needs, not a value per document.
///
/// Invariant: the order and values are those [`sort_values`] gives each document, compared
/// rule after rule, ties broken by internal id; a document without a value comes after every
/// document with one.
pub fn sorted_documents(
    read: &ReadTransaction,
    rules: &[(&str, bool)],
    documents: &RoaringBitmap,
    needed: usize,
) -> ShardResult<Vec<(u32, Vec<SortValue>)>> {
    let mut sorted = Vec::with_capacity(needed.min(documents.len() as usize));
    let mut values = Vec::with_capacity(rules.len());
    sort_bucket(
        read,
        rules,
        documents.clone(),
        needed,
        &mut values,
        &mut sorted,
    )?;
    Ok(sorted)
}

fn sort_bucket(
    read: &ReadTransaction,
    rules: &[(&str, bool)],
    bucket: RoaringBitmap,
    needed: usize,
    values: &mut Vec<SortValue>,
    sorted: &mut Vec<(u32, Vec<SortValue>)>,
) -> ShardResult<()> {
    let Some(((field, ascending), next_rules)) = rules.split_first() else {
        for document in bucket.iter().take(needed.saturating_sub(sorted.len())) {
            sorted.push((document, values.clone()));
        }
        return Ok(());
    };
    let mut remaining = bucket;
    let mut visit = |value: SortValue, here: RoaringBitmap, sorted: &mut Vec<_>| {
        values.push(value);
        let result = sort_bucket(read, next_rules, here, needed, values, sorted);
        values.pop();
        result
    };
    if let Some(field) = field_id(read, field)? {
        walk_values(read, field, *ascending, &mut |value, documents| {
            if remaining.is_empty() || sorted.len() >= needed {
                return Ok(ControlFlow::Break(()));
            }
            let here = documents & &remaining;
            if !here.is_empty() {
                remaining -= &here;
                visit(value.into_sort_value()?, here, sorted)?;
            }
            Ok(ControlFlow::Continue(()))
        })?;
    }
    if !remaining.is_empty() && sorted.len() < needed {
        visit(SortValue::Missing, remaining, sorted)?;
    }
    Ok(())
}
