//! The value each document shows a sort rule, read from the facet indexes: for an ascending
//! rule the smallest value, for a descending one the largest, numbers before strings (as
//! Meilisearch's facet sort meets them), nothing when the field has no value or no facet index.
//!
//! Invariant: one pass over the field's facet keys in the rule's direction, stopping when
//! every document has its value; the value depends only on the document.

use std::collections::BTreeMap;

use roaring::RoaringBitmap;
use storage_engine::{Direction, ReadTransaction};

use crate::shard::facet_source::field_id;
use crate::shard::keys::{
    FIELD_ID_BYTES, decode_bitmap, decode_string_entry, number_from_ordered, string_of_key,
};
use crate::shard::{FACET_NUMBERS_TREE, FACET_STRINGS_TREE, ShardError, ShardResult};

use super::score::SortValue;

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
    let direction = if ascending {
        Direction::Forward
    } else {
        Direction::Backward
    };
    let prefix = field.to_be_bytes();
    let mut remaining = documents.clone();
    if let Some(tree) = read.open_tree(FACET_NUMBERS_TREE)? {
        for entry in tree.prefix(&prefix, direction)? {
            if remaining.is_empty() {
                return Ok(values);
            }
            let (key, value) = entry?;
            let ordered: [u8; 8] = key
                .get(FIELD_ID_BYTES..)
                .and_then(|bytes| bytes.try_into().ok())
                .ok_or_else(|| ShardError::Corrupted("number facet key".to_owned()))?;
            let number = number_from_ordered(u64::from_be_bytes(ordered));
            let here = decode_bitmap(value)? & &remaining;
            for document in &here {
                values.insert(document, SortValue::Number(number));
            }
            remaining -= here;
        }
    }
    if let Some(tree) = read.open_tree(FACET_STRINGS_TREE)? {
        for entry in tree.prefix(&prefix, direction)? {
            if remaining.is_empty() {
                break;
            }
            let (key, value) = entry?;
            let normalized = string_of_key(key)?;
            let (original, bitmap) = decode_string_entry(value)?;
            let here = bitmap & &remaining;
            for document in &here {
                values.insert(
                    document,
                    SortValue::String {
                        normalized: normalized.to_owned(),
                        original: original.clone(),
                    },
                );
            }
            remaining -= here;
        }
    }
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
    let mut grouping = Grouping {
        groups: Vec::new(),
        grouped: 0,
        remaining: documents.clone(),
    };
    let Some(field) = field_id(read, field)? else {
        return Ok((vec![grouping.remaining], RoaringBitmap::new()));
    };
    let direction = if ascending {
        Direction::Forward
    } else {
        Direction::Backward
    };
    let prefix = field.to_be_bytes();
    if let Some(tree) = read.open_tree(FACET_NUMBERS_TREE)? {
        for entry in tree.prefix(&prefix, direction)? {
            if grouping.is_done(enough) {
                return Ok((grouping.groups, grouping.remaining));
            }
            let (_, value) = entry?;
            grouping.take(decode_bitmap(value)?);
        }
    }
    if let Some(tree) = read.open_tree(FACET_STRINGS_TREE)? {
        for entry in tree.prefix(&prefix, direction)? {
            if grouping.is_done(enough) {
                return Ok((grouping.groups, grouping.remaining));
            }
            let (_, value) = entry?;
            grouping.take(decode_string_entry(value)?.1);
        }
    }
    // The documents without a value: one last group.
    let missing = grouping.remaining.clone();
    grouping.take(missing);
    Ok((grouping.groups, grouping.remaining))
}

/// The groups made so far by [`sort_groups`] and the documents not grouped yet.
struct Grouping {
    groups: Vec<RoaringBitmap>,
    grouped: u64,
    remaining: RoaringBitmap,
}

impl Grouping {
    /// Groups the documents not grouped yet that `value_documents` holds, if any.
    fn take(&mut self, value_documents: RoaringBitmap) {
        let here = value_documents & &self.remaining;
        if !here.is_empty() {
            self.remaining -= &here;
            self.grouped += here.len();
            self.groups.push(here);
        }
    }

    fn is_done(&self, enough: u64) -> bool {
        self.remaining.is_empty() || self.grouped >= enough
    }
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
        let direction = if *ascending {
            Direction::Forward
        } else {
            Direction::Backward
        };
        let prefix = field.to_be_bytes();
        if let Some(tree) = read.open_tree(FACET_NUMBERS_TREE)? {
            for entry in tree.prefix(&prefix, direction)? {
                if remaining.is_empty() || sorted.len() >= needed {
                    return Ok(());
                }
                let (key, value) = entry?;
                let here = decode_bitmap(value)? & &remaining;
                if here.is_empty() {
                    continue;
                }
                let ordered: [u8; 8] = key
                    .get(FIELD_ID_BYTES..)
                    .and_then(|bytes| bytes.try_into().ok())
                    .ok_or_else(|| ShardError::Corrupted("number facet key".to_owned()))?;
                remaining -= &here;
                let number = number_from_ordered(u64::from_be_bytes(ordered));
                visit(SortValue::Number(number), here, sorted)?;
            }
        }
        if let Some(tree) = read.open_tree(FACET_STRINGS_TREE)? {
            for entry in tree.prefix(&prefix, direction)? {
                if remaining.is_empty() || sorted.len() >= needed {
                    return Ok(());
                }
                let (key, value) = entry?;
                let (original, bitmap) = decode_string_entry(value)?;
                let here = bitmap & &remaining;
                if here.is_empty() {
                    continue;
                }
                remaining -= &here;
                let value = SortValue::String {
                    normalized: string_of_key(key)?.to_owned(),
                    original,
                };
                visit(value, here, sorted)?;
            }
        }
    }
    if !remaining.is_empty() && sorted.len() < needed {
        visit(SortValue::Missing, remaining, sorted)?;
    }
    Ok(())
}
