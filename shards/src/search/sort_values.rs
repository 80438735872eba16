//! The value each document shows a sort rule, read from the facet indexes: for an ascending
//! rule the smallest value, for a descending one the largest, numbers before strings (as
//! Meilisearch's facet sort meets them), nothing when the field has no value or no facet index.
//!
//! Per document values ([`sort_values`]), value groups as far as a page needs
//! ([`sort_groups`]) and the bucket sort of placeholder searches ([`sorted_documents`]) all
//! walk the facet keys the same way ([`walk_values`]), or read the commit's facet column of
//! the field (see [`super::facet_columns`]) where that costs less:
//! - per document values always come from the column when the field has one: a walk reads
//!   every value up to the last document's, often most of the field (a `rank` of one value
//!   per document: a B-tree step, a bitmap decoded and an intersection per value), the
//!   column one slot per document;
//! - groups come from the column when its cost, a slot per document of the bucket, is below
//!   the walk's expected cost ([`walk_is_cheaper`]): the values met until `enough` documents
//!   are grouped, about `values × enough / documents` when the documents spread evenly.
//!
//! Invariant: one pass over the field's facet keys in the rule's direction, stopping when
//! every document has its value; the value depends only on the document. The column gives
//! the same values and groups as that pass (a test compares the two on random fields).

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use roaring::RoaringBitmap;
use storage_engine::{Direction, ReadTransaction};

use crate::error::ShardResult;
use crate::index::keys::{
    decode_bitmap, decode_string_entry, field_id, field_prefix, number_of_key, string_of_key,
};
use crate::index::trees::{FACET_NUMBERS_TREE, FACET_STRINGS_TREE};

use super::facet_columns::{FacetColumn, FacetColumns};
use super::score::SortValue;

/// How many column slots cost as much as one facet value a walk meets (a B-tree step, a
/// bitmap decoded and intersected): the weight [`walk_is_cheaper`] gives the walk.
const COLUMN_SLOTS_PER_WALKED_VALUE: u64 = 16;

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
    columns: &FacetColumns,
    field: &str,
    ascending: bool,
    documents: &RoaringBitmap,
) -> ShardResult<BTreeMap<u32, SortValue>> {
    let mut values = BTreeMap::new();
    let Some(field) = field_id(read, field)? else {
        return Ok(values);
    };
    if let Some(column) = &*columns.column(read, field)? {
        for document in documents {
            if let Some(ordinal) = column.sort_ordinal(document, ascending) {
                values.insert(document, column.sort_value(ordinal));
            }
        }
        return Ok(values);
    }
    walked_values(read, field, ascending, documents)
}

/// [`sort_values`] by a walk over the facet keys of `field`.
fn walked_values(
    read: &ReadTransaction,
    field: u16,
    ascending: bool,
    documents: &RoaringBitmap,
) -> ShardResult<BTreeMap<u32, SortValue>> {
    let mut values = BTreeMap::new();
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

/// Whether walking the facet keys is expected to group `enough` of `documents` for less than
/// reading a column slot per document (see the module documentation).
fn walk_is_cheaper(values: usize, documents: u64, enough: u64) -> bool {
    let documents = documents.max(1);
    let walked = (values as u64).saturating_mul(enough.min(documents)) / documents;
    walked.saturating_mul(COLUMN_SLOTS_PER_WALKED_VALUE) < documents
}

/// `documents` grouped by the value a sort on `field` sees, best group first, until the groups
/// hold at least `enough` documents; the documents not grouped yet come back unsplit (they
/// rank after every group). The groups are those of equal [`sort_values`], in the order the
/// rule ranks them (documents without a value last), without a value per document.
pub fn sort_groups(
    read: &ReadTransaction,
    columns: &FacetColumns,
    field: &str,
    ascending: bool,
    documents: &RoaringBitmap,
    enough: u64,
) -> ShardResult<(Vec<RoaringBitmap>, RoaringBitmap)> {
    let Some(field) = field_id(read, field)? else {
        return Ok((vec![documents.clone()], RoaringBitmap::new()));
    };
    if let (Some(column), true) = (&*columns.column(read, field)?, enough > 0) {
        if !walk_is_cheaper(column.value_count(), documents.len(), enough) {
            return Ok(column_groups(column, ascending, documents, enough));
        }
    }
    walked_groups(read, field, ascending, documents, enough)
}

/// [`sort_groups`] by a walk over the facet keys of `field`.
fn walked_groups(
    read: &ReadTransaction,
    field: u16,
    ascending: bool,
    documents: &RoaringBitmap,
    enough: u64,
) -> ShardResult<(Vec<RoaringBitmap>, RoaringBitmap)> {
    let mut groups = Vec::new();
    let mut grouped = 0_u64;
    let mut remaining = documents.clone();
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

/// [`sort_groups`] by the column: each document's place in the walk, then only the
/// documents up to the group that holds the `enough`-th one are sorted.
fn column_groups(
    column: &FacetColumn,
    ascending: bool,
    documents: &RoaringBitmap,
    enough: u64,
) -> (Vec<RoaringBitmap>, RoaringBitmap) {
    let mut ranked: Vec<(u32, u32)> = Vec::with_capacity(documents.len() as usize);
    let mut missing = RoaringBitmap::new();
    for document in documents {
        match column.sort_ordinal(document, ascending) {
            Some(ordinal) => ranked.push((column.walk_rank(ordinal, ascending), document)),
            None => {
                missing.insert(document);
            }
        }
    }
    let enough_index = usize::try_from(enough).unwrap_or(usize::MAX).max(1);
    let mut rest = RoaringBitmap::new();
    if ranked.len() > enough_index {
        // The `enough`-th smallest place: its whole group is taken, nothing after it.
        let (_, &mut (last_place, _), _) = ranked.select_nth_unstable(enough_index - 1);
        let mut after = Vec::new();
        ranked.retain(|&(place, document)| {
            let keep = place <= last_place;
            if !keep {
                after.push(document);
            }
            keep
        });
        rest = after.into_iter().collect();
    }
    ranked.sort_unstable();
    let mut groups = Vec::new();
    let mut grouped = 0_u64;
    for run in ranked.chunk_by(|left, right| left.0 == right.0) {
        let group: RoaringBitmap = run.iter().map(|&(_, document)| document).collect();
        grouped += group.len();
        groups.push(group);
    }
    debug_assert!(
        rest.is_empty() || grouped >= enough,
        "documents are left unsplit only once enough are grouped"
    );
    if grouped >= enough {
        rest |= missing;
    } else if !missing.is_empty() {
        // Every value was met: the documents without one are the last group.
        groups.push(missing);
    }
    (groups, rest)
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

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::search::facet_columns::FacetColumn;
    use crate::shard::{Operation, Shard};
    use crate::test_database::scratch_shard;
    use crate::test_random::Random;

    /// Documents of the random shard.
    const DOCUMENTS: u32 = 600;
    /// Random document sets compared.
    const SETS: usize = 60;

    /// A value of a sort field: numbers, strings (some equal once normalized), arrays of
    /// both, or nothing.
    fn value(random: &mut Random) -> Option<Value> {
        Some(match random.below(6) {
            0 => json!(random.below(40)),
            1 => json!(f64::from(random.below(9)) / 4.0 - 1.0),
            2 => json!(["Red", "red", "green", "BLUE", "ocre"][random.below(5) as usize]),
            3 => json!([random.below(30), "Green", random.below(5)]),
            4 => json!(["zinc", "amber"]),
            _ => return None,
        })
    }

    fn shard_with_random_values() -> (tempfile::TempDir, Shard) {
        let (directory, shard) = scratch_shard();
        shard
            .set_filterable_fields(&json!(["rank"]))
            .expect("set_filterable_fields succeeds");
        let mut random = Random(0x050e_7c01);
        let operations = (0..DOCUMENTS)
            .map(|number| {
                let mut document = serde_json::Map::new();
                document.insert("id".into(), json!(number));
                if let Some(value) = value(&mut random) {
                    document.insert("rank".into(), value);
                }
                Operation::Replace {
                    external_id: number.to_string(),
                    document,
                }
            })
            .collect();
        shard.apply(1, operations).expect("apply succeeds");
        (directory, shard)
    }

    #[test]
    fn the_column_gives_the_values_and_groups_of_the_walk() {
        let (_directory, shard) = shard_with_random_values();
        let snapshot = shard.read().expect("read succeeds");
        let read = snapshot.read_transaction();
        let field = snapshot.fields_map().expect("fields map")["rank"];
        let column = FacetColumn::build(read, field).expect("build succeeds");
        let mut random = Random(0x00dd_5e75);
        let live = snapshot.document_ids().clone();
        let mut sets = vec![live.clone(), RoaringBitmap::new()];
        for _ in 0..SETS {
            let keep = u64::from(random.below(40)) + 1;
            sets.push(live.iter().filter(|_| random.below(keep) == 0).collect());
        }
        let mut compared_groups = 0;
        for documents in &sets {
            for ascending in [true, false] {
                let walked = walked_values(read, field, ascending, documents).expect("walk");
                let mut from_column = BTreeMap::new();
                for document in documents {
                    if let Some(ordinal) = column.sort_ordinal(document, ascending) {
                        from_column.insert(document, column.sort_value(ordinal));
                    }
                }
                assert_eq!(from_column, walked, "values, ascending {ascending}");
                for enough in [1, 2, 5, 10, 50, 1000] {
                    let expected =
                        walked_groups(read, field, ascending, documents, enough).expect("walk");
                    let groups = column_groups(&column, ascending, documents, enough);
                    assert_eq!(groups, expected, "groups, ascending {ascending}, {enough}");
                    compared_groups += expected.0.len();
                }
            }
        }
        assert!(compared_groups > 1000, "the sets make many groups");
    }

    #[test]
    fn the_walk_is_chosen_only_where_it_reads_little() {
        // A value per document (a rank): a small bucket reads the column.
        assert!(!walk_is_cheaper(100_000, 2_000, 10));
        // A few values (a year) over a large bucket: the walk meets one or two.
        assert!(walk_is_cheaper(20, 50_000, 10));
        // A large bucket of a rank: its first values hold the page.
        assert!(walk_is_cheaper(100_000, 90_000, 10));
    }
}
