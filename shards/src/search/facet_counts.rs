//! Facet value counts over a set of documents, for `facetDistribution` and `facetStats`.
//!
//! A shard answers, per faceted field that the request selects and that this shard has seen,
//! every value held by at least one of the given documents with the number of those documents
//! holding it: numbers in ascending numeric order, strings in ascending normalized order with
//! the original spelling stored with them. The caller adds the counts of every shard, then
//! orders and truncates them as Meilisearch does (see the server's `search::facets`); sending
//! every value keeps the sum exact whatever the order asked for.
//!
//! Invariants: counts are read from the facet trees (from the field's facet column, built from
//! them once per commit, or one intersection per stored value), never from documents; a field absent from this shard's fields map is absent from the answer, and a
//! field present but without values among the documents answers empty lists.

use std::collections::BTreeMap;
use std::ops::Bound;

use roaring::RoaringBitmap;
use storage_engine::{Direction, ReadTransaction};

use crate::error::{ShardError, ShardResult};
use crate::filter::FilterableRules;
use crate::index::keys::{decode_string_entry, field_prefix, number_of_key, string_of_key};
use crate::index::stored_bitmap::intersection_len_within;
use crate::index::trees::{FACET_NUMBERS_TREE, FACET_STRINGS_TREE};
use crate::shard::ShardSnapshot;

/// The values of one field among some documents.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldFacetCounts {
    /// Number → documents holding it, ascending.
    pub numbers: Vec<(f64, u64)>,
    /// Normalized string, original spelling, documents holding it; ascending by normalized.
    pub strings: Vec<(String, String, u64)>,
}

impl ShardSnapshot {
    /// The facet counts of `documents` for the fields of this shard that the `requested`
    /// patterns select among the filterable ones (see [`FilterableRules::facet_selects`]).
    pub fn facet_counts(
        &self,
        requested: &[String],
        documents: &RoaringBitmap,
    ) -> ShardResult<BTreeMap<String, FieldFacetCounts>> {
        let rules = FilterableRules::from_setting(self.settings().filterable_setting())
            .map_err(ShardError::InvalidSetting)?;
        let fields = self.fields_map()?;
        let mut counts = BTreeMap::new();
        for (path, &field) in fields.iter() {
            if !rules.facet_selects(requested, path, |known| fields.contains_key(known)) {
                continue;
            }
            let read = self.read_transaction();
            let field_counts = match &*self.facet_columns().column(read, field)? {
                Some(column) => column.counts(documents),
                None => counts_per_value(read, field, documents)?,
            };
            counts.insert(path.clone(), field_counts);
        }
        Ok(counts)
    }
}

/// The counts of `field` over `documents`, one intersection per stored value (what a facet
/// column answers without them, see [`super::facet_columns`]).
pub fn counts_per_value(
    read: &ReadTransaction,
    field: u16,
    documents: &RoaringBitmap,
) -> ShardResult<FieldFacetCounts> {
    Ok(FieldFacetCounts {
        numbers: number_counts(read, field, documents)?,
        strings: string_values(read, field, documents)?,
    })
}

/// A visitor of one facet tree entry (key, value).
pub(crate) type EntryVisitor<'a> = dyn FnMut(&[u8], &[u8]) -> ShardResult<()> + 'a;

/// Visits every entry of `field` in the facet tree `tree_name`, in key order.
pub(crate) fn for_each_field_entry(
    read: &ReadTransaction,
    tree_name: &str,
    field: u16,
    visit: &mut EntryVisitor<'_>,
) -> ShardResult<()> {
    let Some(tree) = read.open_tree(tree_name)? else {
        return Ok(());
    };
    let lower = field_prefix(field);
    let upper = field.checked_add(1).map(u16::to_be_bytes);
    let upper = match &upper {
        Some(bytes) => Bound::Excluded(bytes.as_slice()),
        None => Bound::Unbounded,
    };
    for entry in tree.range(Bound::Included(lower.as_slice()), upper, Direction::Forward)? {
        let (key, value) = entry?;
        visit(key, value)?;
    }
    Ok(())
}

fn number_counts(
    read: &ReadTransaction,
    field: u16,
    documents: &RoaringBitmap,
) -> ShardResult<Vec<(f64, u64)>> {
    let mut counts = Vec::new();
    for_each_field_entry(read, FACET_NUMBERS_TREE, field, &mut |key, value| {
        let count = intersection_len_within(value, documents)?;
        if count > 0 {
            counts.push((number_of_key(key)?, count));
        }
        Ok(())
    })?;
    Ok(counts)
}

/// The string values of `field` held by some of `documents`, in normalized order.
pub(crate) fn string_values(
    read: &ReadTransaction,
    field: u16,
    documents: &RoaringBitmap,
) -> ShardResult<Vec<(String, String, u64)>> {
    let mut counts = Vec::new();
    for_each_field_entry(read, FACET_STRINGS_TREE, field, &mut |key, value| {
        let (original, bitmap) = decode_string_entry(value)?;
        let count = bitmap.intersection_len(documents);
        if count > 0 {
            counts.push((string_of_key(key)?.to_owned(), original, count));
        }
        Ok(())
    })?;
    Ok(counts)
}
