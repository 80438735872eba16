//! Semantic and hybrid search: the keyword ranking and the semantic one fused by
//! `semanticRatio`, as Meilisearch fuses them.
//!
//! - A ratio of 1 ranks by similarity only; every hit counts as semantic.
//! - Otherwise the keyword search runs first over `offset + limit` hits (less the places
//!   documents pinned by dynamic search rules take, see [`super::pins`]); when it fills the
//!   window with hits whose score, weighted by `1 - ratio`, is at least
//!   [`GOOD_ENOUGH_SCORE`], its hits answer alone. Else both rankings' hits are merged by
//!   their score weighted by their side's ratio (the semantic side first on a tie), each
//!   document once, and the window is cut; `semanticHitCount` counts the window's hits that
//!   came from the semantic side.
//! - Without a vector, `q` is embedded by the embedder (through the one search fragment that
//!   renders for it, with fragments), and `media` (with `q` when given) through the one
//!   search fragment that renders for them. When that fails, a hybrid search (a ratio below
//!   1 and a query text) answers with the keyword hits, `semanticHitCount` 0; a
//!   semantic-only one (a ratio of 1, or no query text) fails with Meilisearch's
//!   `vector_embedding_error`.
//!
//! Invariants: at most `limit` hits; the semantic side's universe is every document the
//! filter selects, so the total is the larger of both sides' totals.

use std::collections::HashSet;
use std::rc::Rc;

use shards::search::VectorQuery;

use super::outcome::SearchOutcome;
use super::prepare::{PreparedSearch, SemanticSearch};
use super::ranked::execute_ranked;
use crate::coordinator::Coordinator;
use crate::coordinator::catalog::IndexRecord;
use crate::embedders::query_cache;
use crate::embedders::{EmbedError, EmbedErrorKind, Embedder, EmbedderSettings};
use crate::errors::ResponseError;
use crate::host::search::ShardSearchHit;
use crate::settings::embedder_specs::embedder_spec;

/// A keyword hit whose score weighted by the keyword ratio reaches this needs no semantic
/// ranking (a 0.9 keyword score at a 0.5 ratio).
pub const GOOD_ENOUGH_SCORE: f64 = 0.45;

/// Runs a semantic or hybrid search.
pub async fn execute_hybrid(
    coordinator: &Rc<Coordinator>,
    record: &IndexRecord,
    prepared: &PreparedSearch,
    semantic: &SemanticSearch,
    pin_positions: &[u32],
) -> Result<SearchOutcome, ResponseError> {
    let vector = match query_vector(record, prepared, semantic).await? {
        Ok(vector) => vector,
        Err(error) if semantic.semantic_only => return Err(error.to_response_error()),
        Err(error) => {
            tracing::warn!(embedder = %semantic.embedder, %error, "embedding the query failed");
            let mut keyword = execute_ranked(coordinator, record, prepared, None).await?;
            keyword.semantic_hit_count = Some(0);
            return Ok(keyword);
        }
    };
    if semantic.semantic_only {
        let mut outcome = execute_ranked(
            coordinator,
            record,
            prepared,
            Some(vector_query(prepared, semantic, vector.clone())),
        )
        .await?;
        outcome.semantic_hit_count = Some(outcome.hits.len() as u32);
        outcome.query_vector = Some(vector);
        return Ok(outcome);
    }
    let whole = whole_window(prepared, pin_positions);
    let keyword = execute_ranked(coordinator, record, &whole, None).await?;
    if good_enough(&keyword, prepared, semantic.ratio, pin_positions) {
        let mut outcome = cut_window(keyword, prepared);
        outcome.semantic_hit_count = Some(0);
        return Ok(outcome);
    }
    let query = vector_query(&whole, semantic, vector.clone());
    let semantic_outcome = execute_ranked(coordinator, record, &whole, Some(query)).await?;
    let mut fused = fuse(semantic_outcome, keyword, prepared, semantic.ratio);
    for hit in &mut fused.hits {
        hit.semantic = hit.hit.details.iter().any(is_vector_detail);
    }
    fused.query_vector = Some(vector);
    Ok(fused)
}

fn is_vector_detail(detail: &shards::search::ScoreDetail) -> bool {
    matches!(detail, shards::search::ScoreDetail::Vector { .. })
}

/// The vector to search with: the one given, else `media` (with `q`) or `q` embedded by
/// the embedder; the inner error is the embedder's (see the module documentation).
async fn query_vector(
    record: &IndexRecord,
    prepared: &PreparedSearch,
    semantic: &SemanticSearch,
) -> Result<Result<Vec<f32>, EmbedError>, ResponseError> {
    if let Some(vector) = &semantic.vector {
        return Ok(Ok(vector.clone()));
    }
    let query = prepared.body.q.as_deref().filter(|q| !q.trim().is_empty());
    let fields = record
        .settings
        .embedders
        .get(&semantic.embedder)
        .ok_or_else(|| ResponseError::internal("a checked embedder is missing"))?;
    let embedder = || -> Result<Result<Embedder, EmbedError>, ResponseError> {
        let settings = EmbedderSettings::from_map(fields).map_err(ResponseError::internal)?;
        let client = crate::outgoing::shared::core_client()
            .ok_or_else(|| ResponseError::internal("searches run only on a core"))?;
        let embedder = match Embedder::new(&settings.config, client) {
            Ok(embedder) => embedder,
            Err(error) => {
                let kind = EmbedErrorKind::Unsupported(error.kind.to_string());
                return Ok(Err(EmbedError::new(kind, error.fault)));
            }
        };
        // The index knows its embedder's dimensions: no test text before each query.
        Ok(Ok(
            match embedder_spec(&record.settings, &semantic.embedder) {
                Some(spec) => embedder.with_known_dimensions(spec.dimensions),
                None => embedder,
            },
        ))
    };
    if let Some(media) = &semantic.media {
        // Beside `media`, `q` goes to the search fragments as given, even empty.
        let q = prepared.body.q.as_deref();
        return Ok(match embedder()? {
            Ok(embedder) => embedder.embed_search_media(q, Some(media)).await,
            Err(error) => Err(error),
        });
    }
    let Some(query) = query else {
        return Err(ResponseError::internal("a semantic search without a query"));
    };
    // The key hashes the embedder's settings: only built when the cache is on.
    let cache_key = query_cache::is_enabled()
        .then(|| query_cache::EmbedderKey::new(&record.uid, &semantic.embedder, fields));
    if let Some(vector) = cache_key
        .as_ref()
        .and_then(|key| query_cache::get(key, query))
    {
        return Ok(Ok(vector));
    }
    let embedded = match embedder()? {
        Ok(embedder) => embedder.embed_search(query).await,
        Err(error) => Err(error),
    };
    if let (Ok(vector), Some(key)) = (&embedded, &cache_key) {
        query_cache::put(key, query, vector);
    }
    Ok(embedded)
}

/// The shards' semantic query for `prepared`'s first `offset + limit` hits.
fn vector_query(
    prepared: &PreparedSearch,
    semantic: &SemanticSearch,
    vector: Vec<f32>,
) -> VectorQuery {
    VectorQuery {
        embedder: semantic.embedder.clone(),
        vector,
        limit: prepared.offset.saturating_add(prepared.limit),
        candidates: None,
        excluded: None,
        distribution: semantic.distribution,
        only_with_vectors: false,
        distinct: prepared.distinct.clone(),
    }
}

/// `prepared` asking each ranking for its first `offset + limit` hits from the top, less
/// the places pinned documents take among them: as in Meilisearch, where each side's list
/// holds the pins.
fn whole_window(prepared: &PreparedSearch, pin_positions: &[u32]) -> PreparedSearch {
    let mut whole = prepared.clone();
    let wanted = prepared.offset.saturating_add(prepared.limit);
    whole.limit = super::pins::ranked_places(pin_positions, wanted);
    whole.offset = 0;
    whole
}

/// Whether the keyword hits, with the pinned documents placed among them (they score 1, as
/// in Meilisearch's keyword results), fill the window and all score well enough.
fn good_enough(
    keyword: &SearchOutcome,
    prepared: &PreparedSearch,
    ratio: f32,
    pin_positions: &[u32],
) -> bool {
    let wanted = prepared.offset.saturating_add(prepared.limit);
    let scores: Vec<f64> = keyword.hits.iter().map(|hit| hit.hit.score).collect();
    let pins = pin_positions
        .iter()
        .map(|position| (*position, 1.0))
        .collect();
    let placed = super::pins::place_pins(pins, 0, wanted, scores);
    placed.len() >= wanted
        && placed
            .iter()
            .all(|score| score * f64::from(1.0 - ratio) >= GOOD_ENOUGH_SCORE)
}

/// `outcome`'s hits from `offset`, at most `limit` of them.
fn cut_window(mut outcome: SearchOutcome, prepared: &PreparedSearch) -> SearchOutcome {
    outcome.hits = std::mem::take(&mut outcome.hits)
        .into_iter()
        .skip(prepared.offset)
        .take(prepared.limit)
        .collect();
    outcome
}

/// Merges both rankings (see the module documentation).
fn fuse(
    semantic: SearchOutcome,
    keyword: SearchOutcome,
    prepared: &PreparedSearch,
    ratio: f32,
) -> SearchOutcome {
    let semantic_weight = f64::from(ratio);
    let keyword_weight = f64::from(1.0 - ratio);
    let mut semantic_hits = semantic.hits.into_iter().peekable();
    let mut keyword_hits = keyword.hits.into_iter().peekable();
    let mut seen: HashSet<u32> = HashSet::new();
    let mut distinct_seen: HashSet<String> = HashSet::new();
    let mut merged: Vec<(ShardSearchHit, bool)> = Vec::new();
    loop {
        let take_semantic = match (semantic_hits.peek(), keyword_hits.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(left), Some(right)) => {
                left.hit.score * semantic_weight >= right.hit.score * keyword_weight
            }
        };
        let next = if take_semantic {
            semantic_hits.next()
        } else {
            keyword_hits.next()
        };
        let Some(hit) = next else { break };
        if !seen.insert(hit.hit.id) {
            continue;
        }
        if prepared.distinct.is_some() {
            let values = &hit.hit.distinct_values;
            if values.iter().any(|value| distinct_seen.contains(value)) {
                continue;
            }
            distinct_seen.extend(values.iter().cloned());
        }
        merged.push((hit, take_semantic));
    }
    let window: Vec<(ShardSearchHit, bool)> = merged
        .into_iter()
        .skip(prepared.offset)
        .take(prepared.limit)
        .collect();
    let semantic_hit_count = window.iter().filter(|(_, semantic)| *semantic).count() as u32;
    SearchOutcome {
        hits: window.into_iter().map(|(hit, _)| hit).collect(),
        total: semantic.total.max(keyword.total),
        attribute_unified: keyword.attribute_unified,
        query_words: keyword.query_words,
        query_languages: keyword.query_languages,
        facets: semantic.facets.or(keyword.facets),
        semantic_hit_count: Some(semantic_hit_count),
        query_vector: None,
        distinct_narrowings: None,
    }
}
