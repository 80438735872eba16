//! Facet columns: per faceted field of one commit, the values each document holds, indexed by
//! internal id, so that counting a field's values over a set of documents reads each document
//! once instead of intersecting every value's bitmap with the set.
//!
//! The facet trees map a value to its documents; `facetDistribution` needs the other
//! direction. Intersecting each value's bitmap with the matches costs about as much as every
//! document of the field whatever the matches (a `year` facet over a two-letter prefix search
//! cost more than the search), and a field of many values costs one intersection per value.
//! A column is built once per commit and field, on the first count or sort that needs it (one
//! pass over the field's values and documents), and kept by the commit's view. Sorting reads
//! it too (see [`super::sort_values`]): the value a sort rule sees for a document is
//! [`FacetColumn::sort_ordinal`], ordered as a walk over the facet keys meets it by
//! [`FacetColumn::walk_rank`].
//!
//! Layout: the field's values in facet order (numbers ascending, then strings by normalized
//! form, each with its original spelling); per internal id up to the largest one holding a
//! value, the ordinal + 1 of its value (0: no value) or [`SEVERAL_VALUES`], the ordinals of
//! documents holding several values being kept aside.
//!
//! Invariants: a column describes exactly its commit's facet trees for its field, so
//! [`FacetColumn::counts`] equals intersecting each stored value with the documents (the
//! per-value path in `facet_counts`, which a test compares it with); the columns of one commit
//! stay under [`COLUMNS_BYTES_MAX`] times the commit's [`crate::cache_scale::CacheScale`] (a
//! column that would pass it serves the count that built it, then the field is counted the
//! per-value way for the rest of the commit).

use std::collections::HashMap;
use std::sync::Arc;

use roaring::RoaringBitmap;
use storage_engine::ReadTransaction;

use crate::cache_meter::CacheAccount;
use crate::cache_scale::CacheScale;
use crate::commit_memo::{CommitMemo, WhenFull};
use crate::error::{ShardError, ShardResult};
use crate::index::keys::{
    decode_bitmap, decode_string_entry, number_of_key, stored_single_id, string_of_key,
};
use crate::index::trees::{FACET_NUMBERS_TREE, FACET_STRINGS_TREE};

use super::facet_counts::{FieldFacetCounts, for_each_field_entry};
use super::score::SortValue;

/// Most bytes the columns of one commit hold (about 4 bytes per internal id and field), at one
/// step of its [`crate::cache_scale::CacheScale`] (one more step per half million documents).
pub const COLUMNS_BYTES_MAX: usize = 128 << 20;
/// The slot of a document holding several values of the field (see `several`).
const SEVERAL_VALUES: u32 = u32::MAX;

/// The values of one field and which documents hold them.
pub struct FacetColumn {
    numbers: Vec<f64>,
    /// Normalized form and original spelling.
    strings: Vec<(String, String)>,
    /// Per internal id: 0, the ordinal of its one value + 1, or [`SEVERAL_VALUES`].
    slots: Vec<u32>,
    /// The ordinals of the documents whose slot is [`SEVERAL_VALUES`], ascending.
    several: HashMap<u32, Vec<u32>>,
}

impl FacetColumn {
    /// Reads the column of `field` from the facet trees of `read`.
    pub fn build(read: &ReadTransaction, field: u16) -> ShardResult<FacetColumn> {
        let mut column = FacetColumn {
            numbers: Vec::new(),
            strings: Vec::new(),
            slots: Vec::new(),
            several: HashMap::new(),
        };
        for_each_field_entry(read, FACET_NUMBERS_TREE, field, &mut |key, value| {
            column.numbers.push(number_of_key(key)?);
            // A value of one document (most of a field like a rank) is read in place.
            match stored_single_id(value) {
                Some(document) => column.add_value(std::iter::once(document)),
                None => column.add_value(&decode_bitmap(value)?),
            }
        })?;
        for_each_field_entry(read, FACET_STRINGS_TREE, field, &mut |key, value| {
            let (original, documents) = decode_string_entry(value)?;
            column
                .strings
                .push((string_of_key(key)?.to_owned(), original));
            column.add_value(&documents)
        })?;
        Ok(column)
    }

    /// Records that the value just pushed (the last ordinal) is held by `documents`.
    fn add_value(&mut self, documents: impl IntoIterator<Item = u32>) -> ShardResult<()> {
        let ordinal = u32::try_from(self.numbers.len() + self.strings.len() - 1)
            .map_err(|_| ShardError::corrupted("facet value count"))?;
        for document in documents {
            let index = document as usize;
            if self.slots.len() <= index {
                self.slots.resize(index + 1, 0);
            }
            let slot = &mut self.slots[index];
            match *slot {
                0 => *slot = ordinal + 1,
                SEVERAL_VALUES => self.several.entry(document).or_default().push(ordinal),
                single => {
                    *slot = SEVERAL_VALUES;
                    self.several.insert(document, vec![single - 1, ordinal]);
                }
            }
        }
        Ok(())
    }

    /// Heap bytes held, about.
    pub fn bytes(&self) -> usize {
        let strings: usize = self
            .strings
            .iter()
            .map(|(normalized, original)| normalized.len() + original.len() + 48)
            .sum();
        let several: usize = self.several.values().map(|list| 40 + 4 * list.len()).sum();
        self.numbers.len() * 8 + strings + self.slots.len() * 4 + several
    }

    /// Number of distinct values of the field (the entries a walk over its facet keys meets).
    pub fn value_count(&self) -> usize {
        self.numbers.len() + self.strings.len()
    }

    /// The ordinal of the value a sort in direction `ascending` sees for `document` (see
    /// `super::sort_values`: numbers before strings, each in the rule's direction), `None`
    /// when it holds no value.
    pub fn sort_ordinal(&self, document: u32, ascending: bool) -> Option<u32> {
        match self.slots.get(document as usize).copied().unwrap_or(0) {
            0 => None,
            SEVERAL_VALUES => {
                let ordinals = self.several.get(&document)?;
                if ascending {
                    return ordinals.first().copied();
                }
                let numbers = self.numbers.len();
                ordinals
                    .iter()
                    .rev()
                    .find(|&&ordinal| (ordinal as usize) < numbers)
                    .or_else(|| ordinals.last())
                    .copied()
            }
            single => Some(single - 1),
        }
    }

    /// Where the value of `ordinal` comes in a walk in direction `ascending` (0 first): the
    /// key that orders documents by [`FacetColumn::sort_ordinal`] as the walk meets them.
    pub fn walk_rank(&self, ordinal: u32, ascending: bool) -> u32 {
        if ascending {
            return ordinal;
        }
        let numbers = u32::try_from(self.numbers.len()).unwrap_or(u32::MAX);
        let values = u32::try_from(self.value_count()).unwrap_or(u32::MAX);
        debug_assert!(ordinal < values, "an ordinal of this column");
        if ordinal < numbers {
            numbers - 1 - ordinal
        } else {
            numbers + (values - 1 - ordinal)
        }
    }

    /// The sort value of `ordinal`.
    pub fn sort_value(&self, ordinal: u32) -> SortValue {
        let ordinal = ordinal as usize;
        match self.numbers.get(ordinal) {
            Some(number) => SortValue::Number(*number),
            None => match self.strings.get(ordinal - self.numbers.len()) {
                Some((normalized, original)) => SortValue::String {
                    normalized: normalized.clone(),
                    original: original.clone(),
                },
                None => SortValue::Missing,
            },
        }
    }

    /// Per value held by at least one of `documents`, how many of them hold it.
    pub fn counts(&self, documents: &RoaringBitmap) -> FieldFacetCounts {
        let mut counts = vec![0_u64; self.numbers.len() + self.strings.len()];
        for document in documents {
            match self.slots.get(document as usize).copied().unwrap_or(0) {
                0 => {}
                SEVERAL_VALUES => {
                    for &ordinal in self.several.get(&document).into_iter().flatten() {
                        counts[ordinal as usize] += 1;
                    }
                }
                single => counts[single as usize - 1] += 1,
            }
        }
        let (number_counts, string_counts) = counts.split_at(self.numbers.len());
        FieldFacetCounts {
            numbers: self
                .numbers
                .iter()
                .zip(number_counts)
                .filter(|(_, count)| **count > 0)
                .map(|(number, count)| (*number, *count))
                .collect(),
            strings: self
                .strings
                .iter()
                .zip(string_counts)
                .filter(|(_, count)| **count > 0)
                .map(|((normalized, original), count)| {
                    (normalized.clone(), original.clone(), *count)
                })
                .collect(),
        }
    }
}

/// One commit's facet columns; a field whose column did not fit holds `None`, so that it is
/// counted the per-value way for the rest of the commit without building it again.
pub struct FacetColumns {
    memo: CommitMemo<u16, Option<FacetColumn>>,
}

impl Default for FacetColumns {
    /// Outside any cache budget.
    fn default() -> Self {
        FacetColumns::charging(CacheAccount::unbounded(), CacheScale::ONE)
    }
}

impl FacetColumns {
    /// An empty memo whose values are charged to `account`, its bound grown by `scale` (see
    /// [`crate::cache_scale`]).
    pub fn charging(account: Arc<CacheAccount>, scale: CacheScale) -> Self {
        FacetColumns {
            memo: CommitMemo::charging(
                scale.bound(COLUMNS_BYTES_MAX),
                WhenFull::KeepWhatIsThere,
                account,
            ),
        }
    }
}

impl FacetColumns {
    /// The column of `field`, built from `read` (a transaction of this commit) unless already
    /// known. A column that would pass the memo's bound ([`COLUMNS_BYTES_MAX`] times the
    /// commit's scale) with the others serves the count that built it, and is `None` for the
    /// rest of the commit.
    pub fn column(
        &self,
        read: &ReadTransaction,
        field: u16,
    ) -> ShardResult<Arc<Option<FacetColumn>>> {
        if let Some(known) = self.memo.get(&field) {
            return Ok(known);
        }
        let column = FacetColumn::build(read, field)?;
        let bytes = column.bytes();
        let answer = self.memo.keep(field, Arc::new(Some(column)), bytes);
        if self.memo.get(&field).is_none() {
            // Refused: remembered as weighing nothing.
            self.memo.keep(field, Arc::new(None), 0);
        }
        Ok(answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::facet_counts::counts_per_value;
    use crate::shard::Operation;
    use crate::test_database::scratch_shard;
    use crate::test_random::Random;
    use serde_json::{Value, json};

    /// Documents of each random shard.
    const DOCUMENTS: u32 = 400;
    /// Random document sets counted per shard.
    const SETS: usize = 40;

    fn value(random: &mut Random) -> Value {
        match random.below(4) {
            0 => json!(random.below(12)),
            1 => json!(f64::from(random.below(5)) / 2.0),
            2 => json!(["Red", "green", "BLUE", "rouge"][random.below(4) as usize]),
            _ => json!([random.below(6), "Green", random.below(3)]),
        }
    }

    fn operations(random: &mut Random) -> Vec<Operation> {
        (0..DOCUMENTS)
            .map(|number| {
                let mut document = serde_json::Map::new();
                document.insert("id".into(), json!(number));
                if random.below(5) != 0 {
                    document.insert("tag".into(), value(random));
                }
                Operation::Replace {
                    external_id: number.to_string(),
                    document,
                }
            })
            .collect()
    }

    #[test]
    fn column_counts_equal_the_per_value_counts() {
        let (_directory, shard) = scratch_shard();
        shard
            .set_filterable_fields(&json!(["tag"]))
            .expect("set_filterable_fields succeeds");
        let mut random = Random(0x5eed_fa7e);
        shard
            .apply(1, operations(&mut random))
            .expect("apply succeeds");
        // Deletions and replacements: slots of documents gone or changed.
        let changes = (0..DOCUMENTS / 4)
            .map(|_| {
                let external_id = random.below(u64::from(DOCUMENTS)).to_string();
                if random.below(2) == 0 {
                    Operation::Delete { external_id }
                } else {
                    let mut document = serde_json::Map::new();
                    document.insert("tag".into(), value(&mut random));
                    Operation::Replace {
                        external_id,
                        document,
                    }
                }
            })
            .collect();
        shard.apply(2, changes).expect("apply succeeds");
        let snapshot = shard.read().expect("read succeeds");
        let read = snapshot.read_transaction();
        let field = snapshot.fields_map().expect("fields map")["tag"];
        let column = FacetColumn::build(read, field).expect("build succeeds");
        assert!(
            !column.several.is_empty(),
            "some documents hold several values"
        );
        let live = snapshot.document_ids().clone();
        let mut sets = vec![live.clone(), RoaringBitmap::new()];
        for _ in 0..SETS {
            let keep = u64::from(random.below(8)) + 1;
            sets.push(live.iter().filter(|_| random.below(keep) == 0).collect());
        }
        // Ids past the column (never stored) count nothing.
        sets.push((DOCUMENTS * 2..DOCUMENTS * 3).collect());
        for documents in &sets {
            let expected = counts_per_value(read, field, documents).expect("counts succeed");
            assert_eq!(column.counts(documents), expected);
        }
    }
}
