//! The documents Meilisearch counts and describes after a search with a distinct attribute,
//! on one shard: what `estimatedTotalHits`, `totalHits`, `facetDistribution`, `facetStats`
//! and the counts of a facet search are taken over.
//!
//! Meilisearch's bucket sort applies distinct to the buckets it ranks (up to the bucket of the
//! last hit asked for): each document it keeps removes from the matches every document that
//! shares one of its values. The rest of the matches stays as it is. So the candidates are the
//! matches minus the documents holding a value some kept document holds, plus the kept
//! documents. When the total must be exact (`page`/`hitsPerPage`, a facet search's
//! `exhaustiveFacetCount`), distinct then runs once more over those candidates in internal id
//! order: the documents holding a value count only when that pass keeps them.
//!
//! The server decides which documents are kept (over every shard, see `search::distinct`);
//! a [`DistinctNarrowing`] tells a shard what it decided. Invariant: values are keys of
//! [`super::distinct::distinct_values`], the same in every shard.

use std::collections::BTreeSet;
use std::sync::Arc;

use roaring::RoaringBitmap;

use crate::error::ShardResult;
use crate::shard::ShardSnapshot;

use super::distinct::{distinct_values, documents_with_values};

/// What the server decided of a distinct search, for one shard.
#[derive(Debug, Clone)]
pub struct DistinctNarrowing {
    /// The distinct attribute.
    pub field: String,
    /// The documents of the shard the search matches.
    pub matching: RoaringBitmap,
    /// The values of every document kept, in any shard.
    pub taken: Arc<BTreeSet<String>>,
    /// This shard's documents kept (they count whatever their values).
    pub kept: RoaringBitmap,
    /// An exact count: of the documents holding a value, only the kept ones count.
    pub only_kept_valued: bool,
}

impl ShardSnapshot {
    /// The matches that hold no taken value.
    fn untaken(&self, narrowing: &DistinctNarrowing) -> ShardResult<RoaringBitmap> {
        let holding = documents_with_values(
            self.read_transaction(),
            &narrowing.field,
            &narrowing.taken,
            &narrowing.matching,
        )?;
        Ok(&narrowing.matching - holding)
    }

    /// The documents of this shard Meilisearch counts and describes (see the module
    /// documentation).
    pub fn narrowed(&self, narrowing: &DistinctNarrowing) -> ShardResult<RoaringBitmap> {
        let mut candidates = self.untaken(narrowing)?;
        if narrowing.only_kept_valued {
            let valued = distinct_values(self.read_transaction(), &narrowing.field, &candidates)?;
            for document in valued.keys() {
                candidates.remove(*document);
            }
        }
        candidates |= &narrowing.kept;
        Ok(candidates)
    }

    /// For the exact count: the matches that hold no taken value but hold some value, in
    /// internal id order with their values, minus the ones certainly dropped by the pass in
    /// id order (one of their values is the only value of a document before them).
    pub fn valued_untaken(
        &self,
        narrowing: &DistinctNarrowing,
    ) -> ShardResult<Vec<(u32, Vec<String>)>> {
        let untaken = self.untaken(narrowing)?;
        let valued = distinct_values(self.read_transaction(), &narrowing.field, &untaken)?;
        let mut certain: BTreeSet<&str> = BTreeSet::new();
        let mut listed = Vec::new();
        for (document, values) in &valued {
            if values.iter().any(|value| certain.contains(value.as_str())) {
                continue;
            }
            if let [alone] = values.iter().collect::<Vec<_>>().as_slice() {
                certain.insert(alone.as_str());
            }
            listed.push((*document, values.iter().cloned().collect()));
        }
        Ok(listed)
    }
}
