//! [`FacetSource`] over a read snapshot: filters are answered from the facet trees, never by
//! reading documents.
//!
//! Invariants: answers describe exactly the snapshot's documents; [`FacetSource`] cannot return
//! errors, so a storage error makes the answer empty and is kept: call
//! [`ShardFacetSource::take_error`] after evaluating and discard the result if it is `Some`.
//! `has_field` answers from this shard's fields map; with several shards the caller answers
//! for the whole index.

use std::cell::RefCell;
use std::ops::Bound;

use roaring::{MultiOps, RoaringBitmap};
use storage_engine::{Direction, ReadTransaction};

use crate::filter::{FacetSource, GeoPoint, VectorFilter, VectorLookupError};
use crate::network_shards::NetworkShards;

use super::network_membership::MembershipSlot;
use super::range_unions::{RangeKey, RangeTree, RangeUnions};
use super::vector_filter::VectorReads;
use crate::error::{ShardError, ShardResult};
use crate::index::keys::{
    Presence, decode_bitmap, decode_geo_point, decode_string_entry, document_from_key, field_id,
    field_prefix, number_key, presence_key, string_key, string_of_key,
};
use crate::index::trees::{FACET_NUMBERS_TREE, FACET_PRESENCE_TREE, FACET_STRINGS_TREE, GEO_TREE};

/// Whether a string value is kept (`Some(true)`), skipped (`Some(false)`), or ends the
/// ordered scan (`None`).
type KeepValue<'a> = dyn Fn(&str) -> Option<bool> + 'a;

/// The facet indexes of one snapshot.
pub struct ShardFacetSource<'a> {
    read: &'a ReadTransaction,
    universe: &'a RoaringBitmap,
    /// The commit's unions over value ranges (see `range_unions`).
    ranges: &'a RangeUnions,
    /// The snapshot's vectors, for `_vectors… EXISTS` filters.
    vectors: VectorReads<'a>,
    /// The shard's network membership, for `_shard` filters.
    membership: MembershipReads<'a>,
    error: RefCell<Option<ShardError>>,
}

/// Where a snapshot finds which network shard its documents belong to.
pub(crate) struct MembershipReads<'a> {
    pub slot: &'a MembershipSlot,
    /// The snapshot's applied batch (which commit's membership it needs).
    pub applied_batch: Option<u64>,
}

/// Bound on keys of field `field` from a bound on its values.
fn key_bound(bound: Bound<Vec<u8>>, field: u16, upper: bool) -> Bound<Vec<u8>> {
    match bound {
        Bound::Unbounded if upper => match field.checked_add(1) {
            Some(next) => Bound::Excluded(field_prefix(next).to_vec()),
            None => Bound::Unbounded,
        },
        Bound::Unbounded => Bound::Included(field_prefix(field).to_vec()),
        other => other,
    }
}

impl<'a> ShardFacetSource<'a> {
    pub(crate) fn new(
        read: &'a ReadTransaction,
        universe: &'a RoaringBitmap,
        ranges: &'a RangeUnions,
        vectors: VectorReads<'a>,
        membership: MembershipReads<'a>,
    ) -> Self {
        ShardFacetSource {
            read,
            universe,
            ranges,
            vectors,
            membership,
            error: RefCell::new(None),
        }
    }

    /// The first storage error met while answering, if any.
    pub fn take_error(&self) -> Option<ShardError> {
        self.error.borrow_mut().take()
    }

    fn answer(&self, result: ShardResult<RoaringBitmap>) -> RoaringBitmap {
        result.unwrap_or_else(|error| {
            self.error.borrow_mut().get_or_insert(error);
            RoaringBitmap::new()
        })
    }

    /// Union of the bitmaps of every key of field `field` between `lower` and `upper` in the
    /// tree `tree`, from the commit's range unions when it was computed before.
    fn every_value_in_range(
        &self,
        tree: RangeTree,
        field: u16,
        lower: Bound<Vec<u8>>,
        upper: Bound<Vec<u8>>,
    ) -> ShardResult<RoaringBitmap> {
        let tree_name = match tree {
            RangeTree::Numbers => FACET_NUMBERS_TREE,
            RangeTree::Strings => FACET_STRINGS_TREE,
        };
        let key = RangeKey {
            tree,
            lower: key_bound(lower, field, false),
            upper: key_bound(upper, field, true),
        };
        let union = self.ranges.union(key.clone(), || {
            self.union_range(tree_name, key.lower, key.upper, &|_| Ok(Some(true)))
        })?;
        Ok(RoaringBitmap::clone(&union))
    }

    /// Union of the bitmaps of the keys in the range of `tree_name` (key bounds) that `keep`
    /// keeps, up to the first key it answers `None` for.
    fn union_range(
        &self,
        tree_name: &str,
        lower: Bound<Vec<u8>>,
        upper: Bound<Vec<u8>>,
        keep: &dyn Fn(&[u8]) -> ShardResult<Option<bool>>,
    ) -> ShardResult<RoaringBitmap> {
        let Some(tree) = self.read.open_tree(tree_name)? else {
            return Ok(RoaringBitmap::new());
        };
        let mut range = tree.range(
            lower.as_ref().map(Vec::as_slice),
            upper.as_ref().map(Vec::as_slice),
            Direction::Forward,
        )?;
        // One streamed union over the values' bitmaps: or-ing them one by one merged array
        // containers again and again and converted them on the way (a range over a few
        // frequent values cost more than the search it filtered).
        let strings = tree_name == FACET_STRINGS_TREE;
        let bitmaps = std::iter::from_fn(|| {
            for entry in range.by_ref() {
                let (key, value) = match entry {
                    Ok(entry) => entry,
                    Err(error) => return Some(Err(ShardError::from(error))),
                };
                match keep(key) {
                    Ok(Some(true)) => {}
                    Ok(Some(false)) => continue,
                    Ok(None) => return None,
                    Err(error) => return Some(Err(error)),
                }
                return Some(if strings {
                    decode_string_entry(value).map(|(_, documents)| documents)
                } else {
                    decode_bitmap(value)
                });
            }
            None
        });
        // Fused: the union asks again after the first `None`, which must stay the end.
        bitmaps.fuse().union()
    }

    fn numbers(
        &self,
        attribute: &str,
        lower: Bound<f64>,
        upper: Bound<f64>,
    ) -> ShardResult<RoaringBitmap> {
        let Some(field) = field_id(self.read, attribute)? else {
            return Ok(RoaringBitmap::new());
        };
        if is_inverted(&lower, &upper) {
            return Ok(RoaringBitmap::new());
        }
        let lower = lower.map(|number| number_key(field, number));
        let upper = upper.map(|number| number_key(field, number));
        self.every_value_in_range(RangeTree::Numbers, field, lower, upper)
    }

    /// The documents of the values of `attribute` between `lower` and `upper` that `keep`
    /// keeps (`None`: every value, and the union may come from the commit's range unions).
    fn strings(
        &self,
        attribute: &str,
        lower: Bound<&str>,
        upper: Bound<&str>,
        keep: Option<&KeepValue<'_>>,
    ) -> ShardResult<RoaringBitmap> {
        let Some(field) = field_id(self.read, attribute)? else {
            return Ok(RoaringBitmap::new());
        };
        if is_inverted(&lower, &upper) {
            return Ok(RoaringBitmap::new());
        }
        let lower = lower.map(|text| string_key(field, text));
        let upper = upper.map(|text| string_key(field, text));
        match keep {
            None => self.every_value_in_range(RangeTree::Strings, field, lower, upper),
            Some(keep) => self.union_range(
                FACET_STRINGS_TREE,
                key_bound(lower, field, false),
                key_bound(upper, field, true),
                &|key| Ok(keep(string_of_key(key)?)),
            ),
        }
    }

    fn presence(&self, attribute: &str, presence: Presence) -> ShardResult<RoaringBitmap> {
        let Some(field) = field_id(self.read, attribute)? else {
            return Ok(RoaringBitmap::new());
        };
        let Some(tree) = self.read.open_tree(FACET_PRESENCE_TREE)? else {
            return Ok(RoaringBitmap::new());
        };
        match tree.get(&presence_key(field, presence))? {
            Some(bytes) => decode_bitmap(bytes),
            None => Ok(RoaringBitmap::new()),
        }
    }

    fn geo_points(&self, visit: &mut dyn FnMut(GeoPoint)) -> ShardResult<()> {
        let Some(tree) = self.read.open_tree(GEO_TREE)? else {
            return Ok(());
        };
        for entry in tree.range(Bound::Unbounded, Bound::Unbounded, Direction::Forward)? {
            let (key, value) = entry?;
            let [latitude, longitude] = decode_geo_point(value)?;
            visit(GeoPoint {
                document: document_from_key(key)?,
                latitude,
                longitude,
            });
        }
        Ok(())
    }
}

/// Whether a range is empty or inverted.
fn is_inverted<T: PartialOrd>(lower: &Bound<T>, upper: &Bound<T>) -> bool {
    match (lower, upper) {
        (Bound::Included(low), Bound::Included(high)) => low > high,
        (Bound::Included(low) | Bound::Excluded(low), Bound::Excluded(high))
        | (Bound::Excluded(low), Bound::Included(high)) => low >= high,
        _ => false,
    }
}

impl FacetSource for ShardFacetSource<'_> {
    fn universe(&self) -> RoaringBitmap {
        self.universe.clone()
    }

    fn has_field(&self, attribute: &str) -> bool {
        match field_id(self.read, attribute) {
            Ok(found) => found.is_some(),
            Err(error) => {
                self.error.borrow_mut().get_or_insert(error);
                false
            }
        }
    }

    fn numbers_in_range(
        &self,
        attribute: &str,
        lower: Bound<f64>,
        upper: Bound<f64>,
    ) -> RoaringBitmap {
        self.answer(self.numbers(attribute, lower, upper))
    }

    fn strings_in_range(
        &self,
        attribute: &str,
        lower: Bound<&str>,
        upper: Bound<&str>,
    ) -> RoaringBitmap {
        self.answer(self.strings(attribute, lower, upper, None))
    }

    fn strings_containing(&self, attribute: &str, normalized: &str) -> RoaringBitmap {
        self.answer(self.strings(
            attribute,
            Bound::Unbounded,
            Bound::Unbounded,
            Some(&|value| Some(value.contains(normalized))),
        ))
    }

    fn strings_starting_with(&self, attribute: &str, normalized: &str) -> RoaringBitmap {
        self.answer(self.strings(
            attribute,
            Bound::Included(normalized),
            Bound::Unbounded,
            Some(&|value| value.starts_with(normalized).then_some(true)),
        ))
    }

    fn exists(&self, attribute: &str) -> RoaringBitmap {
        self.answer(self.presence(attribute, Presence::Exists))
    }

    fn null(&self, attribute: &str) -> RoaringBitmap {
        self.answer(self.presence(attribute, Presence::Null))
    }

    fn empty(&self, attribute: &str) -> RoaringBitmap {
        self.answer(self.presence(attribute, Presence::Empty))
    }

    fn for_each_geo_point(&self, visit: &mut dyn FnMut(GeoPoint)) {
        if let Err(error) = self.geo_points(visit) {
            self.error.borrow_mut().get_or_insert(error);
        }
    }

    fn vector_documents(
        &self,
        embedder: Option<&str>,
        filter: &VectorFilter,
    ) -> Result<RoaringBitmap, VectorLookupError> {
        let selected = self.vectors.documents(embedder, filter)?;
        Ok(self.answer(selected) & self.universe)
    }

    fn shard_documents(&self, shards: &NetworkShards, position: usize) -> RoaringBitmap {
        let membership =
            self.membership
                .slot
                .membership(self.read, self.membership.applied_batch, shards);
        self.answer(membership.map(|membership| membership.documents(position)))
    }
}
