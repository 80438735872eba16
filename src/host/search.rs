//! One shard's part of a search, run against one snapshot on the shard's owner core (or, for
//! an index of one shard, on the core the search arrived at: see [`super::registry`]): the
//! filter's candidates, the ranked hits (the first `offset + limit`, with their documents as
//! stored: the caller decodes the hits it keeps), the number of matches, and, when asked, the
//! facet counts of every match.
//!
//! The requests: [`ShardSearchRequest`] (a search's share), [`FacetsOfQueries`] (facet counts
//! over what several queries count) and [`TermCounts`] (per query term, its matching
//! documents, for `matchingStrategy: frequency`).
//!
//! Invariant: everything in an answer comes from the same snapshot, so hits, totals and facet
//! counts describe the same documents.

use std::collections::BTreeMap;

use serde_json::{Map, Value};
use shards::filter::Filter;
use shards::search::{DistinctNarrowing, FieldFacetCounts, SearchQuery, ShardHit, VectorQuery};
use shards::shard::{ShardSnapshot, StoredDocument};
use shards::vectors::VECTORS_FIELD;

use super::filter_ids;
use super::protocol::{ShardRead, shard_reads};
use crate::errors::{Code, ResponseError, shard_error};

/// What a shard is asked to search.
#[derive(Debug, Clone)]
pub struct ShardSearchRequest {
    /// The search, with `offset` 0 and `limit` = the caller's `offset + limit`.
    pub query: SearchQuery,
    pub filter: Option<Filter>,
    /// `facets`, when given.
    pub facets: Option<Vec<String>>,
    /// A semantic search instead of the keyword one (its candidates come from `filter`).
    pub vector: Option<VectorQuery>,
    /// Attach each hit's embeddings (`retrieveVectors`).
    pub retrieve_vectors: bool,
    /// The external ids of the documents dynamic search rules pin (see
    /// [`super::pinned`]): left out of the ranking's universe, and counted as matches where
    /// several queries are counted together.
    pub pinned_documents: Option<std::sync::Arc<Vec<String>>>,
}

/// A hit with its document.
#[derive(Debug, Clone)]
pub struct ShardSearchHit {
    pub hit: ShardHit,
    pub document: Map<String, Value>,
    /// The hit came from a semantic ranking (it counts in `semanticHitCount`).
    pub semantic: bool,
}

/// A hit of one shard with its document as stored: the caller decodes only the hits it keeps
/// (of every shard's first `offset + limit`, only `limit` reach the answer).
#[derive(Debug, Clone)]
pub struct ShardFoundHit {
    pub hit: ShardHit,
    pub document: StoredDocument,
    /// The embeddings of the embedders (`_vectors` entries), when asked for.
    pub vectors: Option<Value>,
}

impl ShardFoundHit {
    /// The hit with its decoded document.
    pub fn decoded(self) -> Result<ShardSearchHit, ResponseError> {
        let mut document = self.document.decode().map_err(shard_error)?;
        if let Some(Value::Object(vectors)) = self.vectors {
            let entry = document
                .entry(VECTORS_FIELD)
                .or_insert_with(|| Value::Object(Map::new()));
            match entry {
                Value::Object(stored) => stored.extend(vectors),
                other => *other = Value::Object(vectors),
            }
        }
        Ok(ShardSearchHit {
            semantic: self
                .hit
                .details
                .iter()
                .any(|detail| matches!(detail, shards::search::ScoreDetail::Vector { .. })),
            hit: self.hit,
            document,
        })
    }
}

/// One shard's answer.
#[derive(Debug, Clone, Default)]
pub struct ShardSearchAnswer {
    pub hits: Vec<ShardFoundHit>,
    pub total: u64,
    pub attribute_unified: bool,
    pub query_words: Vec<Vec<String>>,
    /// The languages the shard analysed `q` in (ISO-639-3 codes).
    pub query_languages: Vec<String>,
    pub facets: Option<BTreeMap<String, FieldFacetCounts>>,
}

/// Runs `request` on `snapshot`.
fn search_shard(
    snapshot: &ShardSnapshot,
    request: ShardSearchRequest,
) -> Result<ShardSearchAnswer, ResponseError> {
    let query = resolved_query(snapshot, &request)?;
    let found = match &request.vector {
        Some(vector) => {
            let mut vector = vector.clone();
            vector.candidates = query.candidates.clone();
            snapshot.vector_search(&vector)
        }
        None => snapshot.search(&query),
    }
    .map_err(shard_error)?;
    let facets = request.facets;
    let facets = match &facets {
        Some(requested) => Some(
            snapshot
                .facet_counts(requested, &found.matching)
                .map_err(shard_error)?,
        ),
        None => None,
    };
    Ok(ShardSearchAnswer {
        hits: found_hits(snapshot, found.hits, request.retrieve_vectors, false)?,
        total: found.total,
        attribute_unified: found.attribute_unified,
        query_words: found.query_words,
        query_languages: found.query_languages,
        facets,
    })
}

/// `hits` with their stored documents (and embeddings, under `retrieve_vectors`). A hit
/// found on another snapshot than `snapshot` (`from_earlier_snapshot`) whose document is
/// gone is left out; on the same snapshot every hit has its document.
pub fn found_hits(
    snapshot: &ShardSnapshot,
    hits: Vec<ShardHit>,
    retrieve_vectors: bool,
    from_earlier_snapshot: bool,
) -> Result<Vec<ShardFoundHit>, ResponseError> {
    let mut found = Vec::with_capacity(hits.len());
    for hit in hits {
        let document = match snapshot.stored_document(hit.id).map_err(shard_error)? {
            Some(document) => document,
            None if from_earlier_snapshot => continue,
            None => return Err(ResponseError::internal("a hit without its document")),
        };
        let vectors = if retrieve_vectors && !snapshot.vector_settings().is_empty() {
            Some(snapshot.vectors_of(hit.id, None).map_err(shard_error)?)
        } else {
            None
        };
        found.push(ShardFoundHit {
            hit,
            document,
            vectors,
        });
    }
    Ok(found)
}

impl ShardRead for ShardSearchRequest {
    type Answer = ShardSearchAnswer;

    fn read(self, snapshot: &ShardSnapshot) -> Result<ShardSearchAnswer, ResponseError> {
        search_shard(snapshot, self)
    }
}

/// One query of a federated search as a shard counts it: its request and, with a distinct
/// attribute, what the search decided (the documents counted are then those it leaves).
#[derive(Debug, Clone)]
pub struct CountedQuery {
    pub request: ShardSearchRequest,
    pub narrowing: Option<DistinctNarrowing>,
}

/// Facet counts over the documents several searches count: `facets` of the documents any of
/// `queries` counts.
#[derive(Debug)]
pub struct FacetsOfQueries {
    pub queries: Vec<CountedQuery>,
    pub facets: Vec<String>,
}

impl ShardRead for FacetsOfQueries {
    type Answer = BTreeMap<String, FieldFacetCounts>;

    fn read(self, snapshot: &ShardSnapshot) -> Result<Self::Answer, ResponseError> {
        let union = counted_by_any(snapshot, &self.queries)?;
        snapshot
            .facet_counts(&self.facets, &union)
            .map_err(shard_error)
    }
}

/// Per term of a query, the documents of the shard matching it (for `matchingStrategy:
/// frequency`).
#[derive(Debug)]
pub struct TermCounts {
    pub query: SearchQuery,
}

impl ShardRead for TermCounts {
    type Answer = Vec<u64>;

    fn read(self, snapshot: &ShardSnapshot) -> Result<Vec<u64>, ResponseError> {
        snapshot
            .term_document_counts(&self.query)
            .map_err(shard_error)
    }
}

/// How many documents of the shard any of `queries` counts (a federated search's queries
/// on one index count each document once).
#[derive(Debug)]
pub struct MatchCountOfQueries {
    pub queries: Vec<CountedQuery>,
}

impl ShardRead for MatchCountOfQueries {
    type Answer = u64;

    fn read(self, snapshot: &ShardSnapshot) -> Result<u64, ResponseError> {
        Ok(counted_by_any(snapshot, &self.queries)?.len())
    }
}

/// The documents of the shard any of `queries` counts.
fn counted_by_any(
    snapshot: &ShardSnapshot,
    queries: &[CountedQuery],
) -> Result<roaring::RoaringBitmap, ResponseError> {
    let mut union = roaring::RoaringBitmap::new();
    for query in queries {
        union |= match &query.narrowing {
            Some(narrowing) => snapshot.narrowed(narrowing).map_err(shard_error)?,
            None => matching_documents(snapshot, &query.request)?,
        };
        union |= super::pinned::pinned_matches(snapshot, &query.request)?;
    }
    Ok(union)
}

/// A search's share, remembered for warming the shard's next commit (see
/// [`super::warming`]).
impl super::protocol::ShardRequest for ShardSearchRequest {
    type Answer = ShardSearchAnswer;
    const IS_WRITE: bool = false;
    const READS_SNAPSHOT: bool = true;

    async fn run(
        self,
        host: &super::ShardHost,
        address: super::ShardAddress,
    ) -> Result<ShardSearchAnswer, ResponseError> {
        host.registry.remember_search(&address, &self);
        let snapshot = host.snapshot(&address)?;
        search_shard(&snapshot, self)
    }
}

shard_reads!(FacetsOfQueries, TermCounts, MatchCountOfQueries);

/// The request's query with its filter resolved into candidates on `snapshot`, its pinned
/// documents left out of them.
pub fn resolved_query(
    snapshot: &ShardSnapshot,
    request: &ShardSearchRequest,
) -> Result<SearchQuery, ResponseError> {
    let mut query = request.query.clone();
    if let Some(filter) = &request.filter {
        query.candidates = Some(filter_ids(snapshot, filter, Code::InvalidSearchFilter)?);
    }
    let pinned = super::pinned::pinned_ids(snapshot, request)?;
    if !pinned.is_empty() {
        let universe = query
            .candidates
            .take()
            .unwrap_or_else(|| snapshot.document_ids().clone());
        query.candidates = Some(universe - pinned);
    }
    Ok(query)
}

/// Every document of `snapshot` the request matches (no hits are ranked).
pub fn matching_documents(
    snapshot: &ShardSnapshot,
    request: &ShardSearchRequest,
) -> Result<roaring::RoaringBitmap, ResponseError> {
    let mut query = resolved_query(snapshot, request)?;
    query.limit = 0;
    if request.vector.is_some() {
        // A semantic search matches its whole universe.
        return Ok(query
            .candidates
            .unwrap_or_else(|| snapshot.document_ids().clone()));
    }
    Ok(snapshot.search(&query).map_err(shard_error)?.matching)
}
