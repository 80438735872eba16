//! Distinct attribute inside one shard: of the documents sharing a value of the distinct field,
//! only the best ranked is kept, as in Meilisearch: a document is dropped when it shares a
//! value with a document already *kept* (a dropped document excludes nothing); documents
//! without a value are all kept. Values come from the facet indexes (the distinct attribute
//! is faceted, see `shard::settings`).
//!
//! Across shards the rule cannot be applied shard by shard: a document a shard keeps may be
//! dropped for a better document of another shard, and then the documents it made its shard
//! drop are kept. So a shard sends the server its ranked hits minus only the ones *certainly*
//! dropped ([`distinct_candidates`]): a document sharing a value with a better document that
//! holds that value alone (kept or not, that value is taken by a kept document). The server
//! applies the rule once over every shard's candidates (`search::distinct_merge`).
//!
//! Invariant: each hit carries its distinct values ([`distinct_values`]'s keys: `n:` then the
//! 16 hex digits of the number's ordered form, or `s:` then the normalized string): the same
//! value has the same key in every shard ([`documents_with_values`] reads them back).

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use roaring::RoaringBitmap;
use storage_engine::{Direction, ReadTransaction};

use crate::error::ShardResult;
use crate::index::keys::{
    FIELD_ID_BYTES, decode_string_entry, field_id, field_prefix, number_of_key, ordered_number,
    ordered_number_key, string_key,
};
use crate::index::stored_bitmap::intersection_within;
use crate::index::trees::{FACET_NUMBERS_TREE, FACET_STRINGS_TREE};

use super::execute::ShardHit;
use super::score::{ScoreDetail, compare_details};

/// The key of a number value: this, then the 16 hex digits of its ordered form.
const NUMBER_PREFIX: &str = "n:";
/// The key of a string value: this, then its normalized form.
const STRING_PREFIX: &str = "s:";

/// Document → its values of a distinct field.
pub type DistinctTable = BTreeMap<u32, BTreeSet<String>>;

/// Document → its values of `field` (documents without one are absent).
pub fn distinct_values(
    read: &ReadTransaction,
    field: &str,
    documents: &RoaringBitmap,
) -> ShardResult<DistinctTable> {
    let mut values = DistinctTable::new();
    let Some(field) = field_id(read, field)? else {
        return Ok(values);
    };
    let prefix = field_prefix(field);
    if let Some(tree) = read.open_tree(FACET_NUMBERS_TREE)? {
        for entry in tree.prefix(&prefix, Direction::Forward)? {
            let (key, value) = entry?;
            let name = format!(
                "{NUMBER_PREFIX}{:016x}",
                ordered_number(number_of_key(key)?)
            );
            for document in &intersection_within(value, documents)? {
                values.entry(document).or_default().insert(name.clone());
            }
        }
    }
    if let Some(tree) = read.open_tree(FACET_STRINGS_TREE)? {
        for entry in tree.prefix(&prefix, Direction::Forward)? {
            let (key, value) = entry?;
            let normalized = String::from_utf8_lossy(key.get(FIELD_ID_BYTES..).unwrap_or_default());
            let name = format!("{STRING_PREFIX}{normalized}");
            let (_, bitmap) = decode_string_entry(value)?;
            for document in &(bitmap & documents) {
                values.entry(document).or_default().insert(name.clone());
            }
        }
    }
    Ok(values)
}

/// Whether two hits fall in the same bucket of Meilisearch's bucket sort: equal on every
/// ranking rule. Hits ranked by no rule (a placeholder search without sort) are each their
/// own bucket.
pub fn same_bucket(left: &[ScoreDetail], right: &[ScoreDetail]) -> bool {
    !left.is_empty() && compare_details(left, right) == Ordering::Equal
}

/// Of `hits` (in rank order), the ones a shard sends for a distinct search, each with its
/// values: every hit but those certainly dropped (see the module documentation), up to the
/// one this shard's own pass keeps as its `needed`-th, then the hits of that one's bucket.
/// Answers whether nothing was left out after the last hit sent (every hit not sent then
/// ranks in a later bucket than the last one sent).
pub fn distinct_candidates(
    hits: Vec<ShardHit>,
    table: &DistinctTable,
    needed: usize,
) -> (Vec<ShardHit>, bool) {
    if needed == 0 {
        let complete = hits.is_empty();
        return (Vec::new(), complete);
    }
    // Values held alone by a better hit: taken by a kept document, whatever happens.
    let mut certain: BTreeSet<&str> = BTreeSet::new();
    // Values of the hits this shard's own pass keeps.
    let mut taken: BTreeSet<&str> = BTreeSet::new();
    let mut kept = 0usize;
    let mut last_bucket: Option<Vec<ScoreDetail>> = None;
    let mut sent = Vec::new();
    for mut hit in hits {
        if let Some(details) = &last_bucket
            && !same_bucket(details, &hit.details)
        {
            return (sent, false);
        }
        if let Some(own) = table.get(&hit.id) {
            if own.iter().any(|value| certain.contains(value.as_str())) {
                continue;
            }
            if let [alone] = own.iter().collect::<Vec<_>>().as_slice() {
                certain.insert(alone.as_str());
            }
            if !own.iter().any(|value| taken.contains(value.as_str())) {
                taken.extend(own.iter().map(String::as_str));
                kept += 1;
            }
            hit.distinct_values = own.iter().cloned().collect();
        } else {
            kept += 1;
        }
        if last_bucket.is_none() && kept >= needed {
            last_bucket = Some(hit.details.clone());
        }
        sent.push(hit);
    }
    (sent, true)
}

/// The documents of `within` holding any of `values` (keys of [`distinct_values`]) for
/// `field`.
pub fn documents_with_values(
    read: &ReadTransaction,
    field: &str,
    values: &BTreeSet<String>,
    within: &RoaringBitmap,
) -> ShardResult<RoaringBitmap> {
    let mut found = RoaringBitmap::new();
    let Some(field) = field_id(read, field)? else {
        return Ok(found);
    };
    let numbers = read.open_tree(FACET_NUMBERS_TREE)?;
    let strings = read.open_tree(FACET_STRINGS_TREE)?;
    for value in values {
        if let Some(hex) = value.strip_prefix(NUMBER_PREFIX) {
            let (Some(tree), Ok(ordered)) = (&numbers, u64::from_str_radix(hex, 16)) else {
                continue;
            };
            if let Some(bytes) = tree.get(&ordered_number_key(field, ordered))? {
                found |= intersection_within(bytes, within)?;
            }
        } else if let Some(normalized) = value.strip_prefix(STRING_PREFIX) {
            let Some(tree) = &strings else {
                continue;
            };
            if let Some(bytes) = tree.get(&string_key(field, normalized))? {
                found |= decode_string_entry(bytes)?.1 & within;
            }
        }
    }
    Ok(found)
}
