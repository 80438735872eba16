//! Semantic search on one shard: the documents of the universe ranked by the similarity of
//! their closest vector to the query vector, then the documents without a vector (similarity
//! `None`, score 0) in internal id order, as Meilisearch's `vectorSort` ranks them.
//!
//! Similarity: `1 - d / 2` for the cosine distance `d = 1 - cosine` (Meilisearch's
//! `1 - (1 - cosine) / 2`), moved by the embedder's `distribution` when it has one.
//!
//! With a distinct attribute the shard answers the candidates of the server's distinct pass
//! over every shard (as a keyword search does, `super::distinct`), not a page of its own.
//!
//! Invariants: hits are best first, at most `limit` (without distinct), each with one
//! `Vector` detail and its score equal to its similarity (0 without); `total` counts the
//! whole universe (also when `only_with_vectors` leaves the documents without a vector out of
//! the hits, as `similar` counts them).

use roaring::RoaringBitmap;

use super::distinct::{distinct_candidates, distinct_values};
use super::execute::{ShardHit, ShardHits};
use super::score::ScoreDetail;
use crate::error::ShardResult;
use crate::shard::ShardSnapshot;

/// A semantic query on one shard.
#[derive(Debug, Clone)]
pub struct VectorQuery {
    pub embedder: String,
    pub vector: Vec<f32>,
    /// Hits wanted (the caller's `offset + limit`).
    pub limit: usize,
    /// The filter's documents (`None`: every document).
    pub candidates: Option<RoaringBitmap>,
    /// Documents left out (`similar` leaves out its own document).
    pub excluded: Option<u32>,
    /// The embedder's `distribution` as `(mean, sigma)`.
    pub distribution: Option<(f64, f64)>,
    /// Leave out the documents without a vector (`similar` does).
    pub only_with_vectors: bool,
    /// The distinct attribute: of the documents sharing a value, only the best ranked stays.
    pub distinct: Option<String>,
}

/// With `distinct`, the graph is first asked this many times `limit` documents, then this
/// many times more each time the documents distinct drops leave too few.
const DISTINCT_OVERFETCH: usize = 2;

/// Moves a similarity toward a distribution centred on 0.5 with spread 0.4, kept in `]0, 1]`.
pub fn shift_similarity(similarity: f32, (mean, sigma): (f64, f64)) -> f32 {
    const TARGET_MEAN: f32 = 0.5;
    const TARGET_SIGMA: f32 = 0.4;
    let factor = TARGET_SIGMA / sigma as f32;
    let offset = TARGET_MEAN - factor * mean as f32;
    (factor * similarity + offset).clamp(f32::EPSILON, 1.0)
}

/// The similarity shown for a cosine distance (`1 - cosine`).
pub fn similarity_of(distance: f32, distribution: Option<(f64, f64)>) -> f32 {
    let similarity = 1.0 - distance / 2.0;
    match distribution {
        Some(distribution) => shift_similarity(similarity, distribution),
        None => similarity,
    }
}

impl ShardSnapshot {
    /// Runs `query` (see the module documentation).
    pub fn vector_search(&self, query: &VectorQuery) -> ShardResult<ShardHits> {
        let mut universe = match &query.candidates {
            Some(candidates) => candidates & self.document_ids(),
            None => self.document_ids().clone(),
        };
        if let Some(excluded) = query.excluded {
            universe.remove(excluded);
        }
        let (hits, complete) = match &query.distinct {
            Some(field) => self.distinct_candidates_by_similarity(query, &universe, field)?,
            None => (
                self.ranked_by_similarity(query, &universe, query.limit)?,
                true,
            ),
        };
        let total = universe.len();
        Ok(ShardHits {
            hits,
            complete,
            total,
            attribute_unified: false,
            query_words: Vec::new(),
            matching: universe,
            query_languages: Vec::new(),
        })
    }

    /// The first `wanted` documents of `universe`, best first: by the similarity of their
    /// closest vector, then (unless `only_with_vectors`) those without a vector in internal
    /// id order. Fewer than `wanted` means every rankable document is there.
    fn ranked_by_similarity(
        &self,
        query: &VectorQuery,
        universe: &RoaringBitmap,
        wanted: usize,
    ) -> ShardResult<Vec<ShardHit>> {
        let restricted = query.candidates.is_some() || query.excluded.is_some();
        let nearest = self.nearest_documents(
            &query.embedder,
            &query.vector,
            wanted,
            Some(universe).filter(|_| restricted),
        )?;
        let mut hits: Vec<ShardHit> = nearest
            .iter()
            .map(|hit| {
                let similarity = similarity_of(hit.distance, query.distribution);
                vector_hit(hit.id, Some(similarity))
            })
            .collect();
        if !query.only_with_vectors && hits.len() < wanted {
            // The graph answered every document with a vector it may: the documents
            // without one follow, in internal id order, as Meilisearch ranks them.
            let mut without = universe - &self.documents_with_vectors(&query.embedder)?;
            for hit in &nearest {
                without.remove(hit.id);
            }
            let missing = wanted - hits.len();
            hits.extend(without.iter().take(missing).map(|id| vector_hit(id, None)));
        }
        debug_assert!(hits.len() <= wanted, "at most `wanted` hits");
        Ok(hits)
    }

    /// With a distinct attribute, the candidates the server's pass over every shard needs
    /// (`super::distinct::distinct_candidates`): the ranked documents but those certainly
    /// dropped, until this shard's own pass keeps `query.limit` and that hit's bucket ends.
    /// The graph is asked for more (twice as many each time) until then or until every
    /// rankable document was ranked. Answers whether no document ranks after the last sent.
    fn distinct_candidates_by_similarity(
        &self,
        query: &VectorQuery,
        universe: &RoaringBitmap,
        field: &str,
    ) -> ShardResult<(Vec<ShardHit>, bool)> {
        let rankable = usize::try_from(universe.len()).unwrap_or(usize::MAX);
        let mut wanted = query
            .limit
            .max(1)
            .saturating_mul(DISTINCT_OVERFETCH)
            .min(rankable.saturating_add(1));
        loop {
            let hits = self.ranked_by_similarity(query, universe, wanted)?;
            let exhausted = hits.len() < wanted;
            let ids: RoaringBitmap = hits.iter().map(|hit| hit.id).collect();
            let table = distinct_values(self.read_transaction(), field, &ids)?;
            let (sent, complete) = distinct_candidates(hits, &table, query.limit);
            if !complete || exhausted {
                return Ok((sent, complete && exhausted));
            }
            wanted = wanted
                .saturating_mul(DISTINCT_OVERFETCH)
                .min(rankable.saturating_add(1));
        }
    }
}

fn vector_hit(id: u32, similarity: Option<f32>) -> ShardHit {
    ShardHit {
        id,
        score: f64::from(similarity.unwrap_or(0.0)),
        details: vec![ScoreDetail::Vector { similarity }],
        matched_words: Vec::new(),
        distinct_values: Vec::new(),
    }
}
