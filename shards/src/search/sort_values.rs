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
