//! Distinct attribute inside one shard: of the documents sharing a value of the distinct field,
//! only the best ranked is kept (as Meilisearch: a kept document excludes every other document
//! having any of its values; documents without a value are all kept). Values come from the
//! facet indexes, so the field must be filterable or sortable.
//!
//! Invariant: each hit carries its distinct values ([`distinct_values`]'s keys: `n:` then the
//! number, or `s:` then the normalized string), so the server deduplicates again across
//! shards with the same rule.

use std::collections::{BTreeMap, BTreeSet};

use roaring::RoaringBitmap;
use storage_engine::{Direction, ReadTransaction};

use crate::error::ShardResult;
use crate::index::keys::{
    FIELD_ID_BYTES, decode_string_entry, field_id, field_prefix, number_of_key,
};
use crate::index::stored_bitmap::intersection_within;
use crate::index::trees::{FACET_NUMBERS_TREE, FACET_STRINGS_TREE};

/// Document → its values of `field` (documents without one are absent).
pub fn distinct_values(
    read: &ReadTransaction,
    field: &str,
    documents: &RoaringBitmap,
) -> ShardResult<BTreeMap<u32, BTreeSet<String>>> {
    let mut values: BTreeMap<u32, BTreeSet<String>> = BTreeMap::new();
    let Some(field) = field_id(read, field)? else {
        return Ok(values);
    };
    let prefix = field_prefix(field);
    if let Some(tree) = read.open_tree(FACET_NUMBERS_TREE)? {
        for entry in tree.prefix(&prefix, Direction::Forward)? {
            let (key, value) = entry?;
            let name = format!("n:{}", number_of_key(key)?);
            for document in &intersection_within(value, documents)? {
                values.entry(document).or_default().insert(name.clone());
            }
        }
    }
    if let Some(tree) = read.open_tree(FACET_STRINGS_TREE)? {
        for entry in tree.prefix(&prefix, Direction::Forward)? {
            let (key, value) = entry?;
            let normalized = String::from_utf8_lossy(key.get(FIELD_ID_BYTES..).unwrap_or_default());
            let name = format!("s:{normalized}");
            let (_, bitmap) = decode_string_entry(value)?;
            for document in &(bitmap & documents) {
                values.entry(document).or_default().insert(name.clone());
            }
        }
    }
    Ok(values)
}

/// Keeps, in order, the first document of each group sharing a value; returns the kept ids.
pub fn keep_distinct(ordered: &[u32], values: &BTreeMap<u32, BTreeSet<String>>) -> BTreeSet<u32> {
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    let mut kept = BTreeSet::new();
    for document in ordered {
        match values.get(document) {
            Some(own) => {
                if own.iter().any(|value| seen.contains(value.as_str())) {
                    continue;
                }
                seen.extend(own.iter().map(String::as_str));
                kept.insert(*document);
            }
            None => {
                kept.insert(*document);
            }
        }
    }
    kept
}
