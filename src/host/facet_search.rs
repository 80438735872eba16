//! A facet search's share on one shard: the values of one facet among the documents the
//! search matches (with a distinct attribute, the documents Meilisearch counts after it, see
//! `shards::search::distinct_narrowing`), each with its count, filtered by the facet query
//! (analysed in the search's locales).
//!
//! Invariant: counts come from the shard's facet indexes over the exact set of matching
//! documents of one snapshot.

use shards::search::DistinctNarrowing;
use shards::search::facet_values::FacetValueCount;
use shards::shard::ShardSnapshot;

use super::protocol::{ShardRead, shard_reads};
use super::search::{ShardSearchRequest, matching_documents};
use crate::errors::{ResponseError, shard_error};

/// What a shard runs for a facet search.
#[derive(Debug, Clone)]
pub struct ShardFacetSearch {
    pub search: ShardSearchRequest,
    pub facet_name: String,
    pub facet_query: Option<String>,
    /// With a distinct attribute: the documents counted are these, not every match.
    pub narrowing: Option<DistinctNarrowing>,
}

impl ShardRead for ShardFacetSearch {
    type Answer = Vec<FacetValueCount>;

    fn read(self, snapshot: &ShardSnapshot) -> Result<Vec<FacetValueCount>, ResponseError> {
        let matching = match &self.narrowing {
            Some(narrowing) => snapshot.narrowed(narrowing).map_err(shard_error)?,
            None => matching_documents(snapshot, &self.search)?,
        };
        snapshot
            .facet_values(
                &self.facet_name,
                self.facet_query.as_deref(),
                self.search.query.locales.as_deref(),
                &matching,
            )
            .map_err(shard_error)
    }
}

shard_reads!(ShardFacetSearch);
