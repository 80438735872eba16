//! One shard's part of a search with a distinct attribute, in the rounds the server runs
//! (see `crate::search::distinct`):
//! - [`DistinctShardSearch`]: the ranked candidates (`shards::search::distinct`), whether
//!   the shard sent all of them, and the documents the query matches;
//! - [`DistinctValued`]: for an exact count, the matches holding a value no kept document
//!   holds, in internal id order;
//! - [`DistinctFinish`]: the number of documents Meilisearch counts, their facet counts, and
//!   the documents of the hits shown.
//!
//! Invariant: each round reads one snapshot; the server carries the matches of the first
//! round to the next ones, so a batch committed in between changes only which stored values
//! the later rounds read (counts are estimates then, as between any two searches).

use std::collections::BTreeMap;

use roaring::RoaringBitmap;
use shards::search::{DistinctNarrowing, FieldFacetCounts, ShardHit};
use shards::shard::ShardSnapshot;

use super::protocol::{ShardRead, shard_reads};
use super::search::{ShardFoundHit, ShardSearchRequest, found_hits, resolved_query};
use crate::errors::{ResponseError, shard_error};

/// The first round: the query's candidates on this shard, ranked by the keyword rules or,
/// with `vector`, by similarity (`query.limit`, and `vector.limit`, is how many this shard's
/// own pass must keep before it stops).
#[derive(Debug, Clone)]
pub struct DistinctShardSearch {
    pub request: ShardSearchRequest,
}

/// What a shard answers to [`DistinctShardSearch`].
#[derive(Debug, Clone, Default)]
pub struct DistinctShardAnswer {
    /// The candidates, best first, each with its distinct values.
    pub hits: Vec<ShardHit>,
    /// No match ranks after the last candidate.
    pub complete: bool,
    /// Every document the query matches.
    pub matching: RoaringBitmap,
    pub attribute_unified: bool,
    pub query_words: Vec<Vec<String>>,
    pub query_languages: Vec<String>,
}

impl ShardRead for DistinctShardSearch {
    type Answer = DistinctShardAnswer;

    fn read(self, snapshot: &ShardSnapshot) -> Result<DistinctShardAnswer, ResponseError> {
        let query = resolved_query(snapshot, &self.request)?;
        let found = match &self.request.vector {
            Some(vector) => {
                let mut vector = vector.clone();
                vector.candidates = query.candidates.clone();
                snapshot.vector_search(&vector)
            }
            None => snapshot.search(&query),
        }
        .map_err(shard_error)?;
        Ok(DistinctShardAnswer {
            hits: found.hits,
            complete: found.complete,
            matching: found.matching,
            attribute_unified: found.attribute_unified,
            query_words: found.query_words,
            query_languages: found.query_languages,
        })
    }
}

/// For an exact count: the matches holding a value but no taken one, in internal id order.
#[derive(Debug, Clone)]
pub struct DistinctValued {
    pub narrowing: DistinctNarrowing,
}

impl ShardRead for DistinctValued {
    type Answer = Vec<(u32, Vec<String>)>;

    fn read(self, snapshot: &ShardSnapshot) -> Result<Self::Answer, ResponseError> {
        snapshot
            .valued_untaken(&self.narrowing)
            .map_err(shard_error)
    }
}

/// The last round: what the answer counts and describes, and the documents shown.
#[derive(Debug, Clone)]
pub struct DistinctFinish {
    pub narrowing: DistinctNarrowing,
    /// `facets`, when given.
    pub facets: Option<Vec<String>>,
    /// This shard's hits of the page.
    pub window: Vec<ShardHit>,
    pub retrieve_vectors: bool,
}

/// What a shard answers to [`DistinctFinish`].
#[derive(Debug, Clone, Default)]
pub struct DistinctFinishAnswer {
    /// The documents of the shard Meilisearch counts.
    pub count: u64,
    pub facets: Option<BTreeMap<String, FieldFacetCounts>>,
    /// The window's hits with their documents, in the window's order.
    pub hits: Vec<ShardFoundHit>,
}

impl ShardRead for DistinctFinish {
    type Answer = DistinctFinishAnswer;

    fn read(self, snapshot: &ShardSnapshot) -> Result<DistinctFinishAnswer, ResponseError> {
        let candidates = snapshot.narrowed(&self.narrowing).map_err(shard_error)?;
        let facets = match &self.facets {
            Some(requested) => Some(
                snapshot
                    .facet_counts(requested, &candidates)
                    .map_err(shard_error)?,
            ),
            None => None,
        };
        Ok(DistinctFinishAnswer {
            count: candidates.len(),
            facets,
            hits: found_hits(snapshot, self.window, self.retrieve_vectors, true)?,
        })
    }
}

shard_reads!(DistinctShardSearch, DistinctValued, DistinctFinish);
