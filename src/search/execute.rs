//! Running a prepared search over every shard of an index and merging their answers into the
//! order one unsharded index gives.
//!
//! Each shard returns its first `offset + limit` hits with their documents, its number of
//! matches and, when asked, its facet counts. The hits are merged by their ranking details
//! ([`compare_details`]), ties by internal id (ids are allocated index-wide, so this is the
//! order of one index), then `rankingScoreThreshold`, then the window `offset..offset + limit`
//! is cut. A search with a distinct attribute, keyword or semantic, runs in rounds instead
//! (see [`super::distinct`]).
//!
//! With `matchingStrategy: frequency`, the shards first report how many of their documents
//! each query term matches, so every shard drops terms in the same, index-wide order.
//!
//! Invariants: a hit's score and details depend only on the document and the query (the
//! shards' contract), so the merge is exact; totals are the sum of the shards' totals, except
//! that a threshold that removes hits makes the total the number of hits kept among those
//! returned (an estimate, as `estimatedTotalHits` is).

use std::rc::Rc;

use shards::search::{MatchingStrategy, SearchQuery, VectorQuery, compare_details};

use crate::coordinator::Coordinator;
use crate::coordinator::catalog::IndexRecord;
use crate::errors::{Code, ResponseError};
use crate::settings::locale::Locale;

use super::facets::MergedFacets;
use super::parameters::MatchingStrategyParameter;
use super::prepare::PreparedSearch;
use crate::host::search::{ShardFoundHit, ShardSearchHit, ShardSearchRequest, TermCounts};

/// The merged answer of every shard.
#[derive(Debug, Default)]
pub struct SearchOutcome {
    /// The hits of the window, best first.
    pub hits: Vec<ShardSearchHit>,
    /// Documents matching the query in the whole index.
    pub total: u64,
    /// Whether the legacy `attribute` rule (rather than `attributeRank` + `wordPosition`) ranks.
    pub attribute_unified: bool,
    /// Per query term, every word it matched in any shard (for highlighting).
    pub query_words: Vec<Vec<String>>,
    /// The languages the shards analysed `q` in (the first shard's that used any: shards
    /// differ only when a localized field exists in some of them).
    pub query_languages: Vec<String>,
    /// The summed facet counts, when `facets` was given.
    pub facets: Option<MergedFacets>,
    /// Hits of the window that came from the semantic ranking (a `hybrid` search only).
    pub semantic_hit_count: Option<u32>,
    /// The vector the semantic ranking searched with.
    pub query_vector: Option<Vec<f32>>,
    /// With a distinct attribute, per shard, what the search counts (see
    /// [`super::distinct`]); a federated search counts and describes the same documents.
    pub distinct_narrowings: Option<Vec<shards::search::DistinctNarrowing>>,
}

/// What every shard is asked for `prepared` (before index-wide term counts are added).
pub fn shard_request(prepared: &PreparedSearch) -> ShardSearchRequest {
    ShardSearchRequest {
        query: shard_query(prepared),
        filter: prepared.filter.clone(),
        facets: prepared.body.facets.clone(),
        vector: None,
        retrieve_vectors: prepared.body.retrieve_vectors,
        pinned_documents: prepared.pinned_documents.clone(),
    }
}

/// The shard-level query of `prepared`: its first `offset + limit` hits.
fn shard_query(prepared: &PreparedSearch) -> SearchQuery {
    let body = &prepared.body;
    SearchQuery {
        q: body.q.clone(),
        offset: 0,
        limit: prepared.offset.saturating_add(prepared.limit),
        matching_strategy: match body.matching_strategy {
            MatchingStrategyParameter::Last => MatchingStrategy::Last,
            MatchingStrategyParameter::All => MatchingStrategy::All,
            MatchingStrategyParameter::Frequency => MatchingStrategy::Frequency,
        },
        attributes_to_search_on: body.attributes_to_search_on.clone(),
        candidates: None,
        sort: prepared.sort.clone(),
        term_document_counts: None,
        distinct: body.distinct.clone(),
        locales: body.locales.as_deref().map(canonical_locales),
        deadline: prepared.deadline,
    }
}

/// The ISO-639-3 codes of `locales` (the form the shards' analysis takes).
pub fn canonical_locales(locales: &[Locale]) -> Vec<String> {
    locales
        .iter()
        .map(|locale| locale.canonical().to_owned())
        .collect()
}

/// Runs `prepared` on every shard of `record` and merges the answers: a keyword search, or
/// a semantic or hybrid one ([`super::hybrid`]), with the documents dynamic search rules pin
/// placed among the ranked hits ([`super::pins`]).
pub async fn execute(
    coordinator: &Rc<Coordinator>,
    record: &IndexRecord,
    prepared: &PreparedSearch,
) -> Result<SearchOutcome, ResponseError> {
    if !prepared.pins.is_empty() {
        return super::pins::execute_pinned(coordinator, record, prepared).await;
    }
    execute_organic(coordinator, record, prepared, &[]).await
}

/// Runs the ranking of `prepared` (what pins are placed among); `pin_positions` are the
/// places pinned documents will take, which a hybrid search counts among its keyword hits.
pub async fn execute_organic(
    coordinator: &Rc<Coordinator>,
    record: &IndexRecord,
    prepared: &PreparedSearch,
    pin_positions: &[u32],
) -> Result<SearchOutcome, ResponseError> {
    let outcome = match &prepared.semantic {
        Some(semantic) => {
            super::hybrid::execute_hybrid(coordinator, record, prepared, semantic, pin_positions)
                .await
        }
        None => execute_ranked(coordinator, record, prepared, None).await,
    };
    outcome.map_err(|error| in_index(error, record))
}

/// A filter refusal of the shards (a bad geo argument, found while evaluating) with the
/// ``Index `uid`: `` prefix Meilisearch's search gives its engine's errors.
fn in_index(error: ResponseError, record: &IndexRecord) -> ResponseError {
    if error.code == crate::errors::Code::InvalidSearchFilter {
        error.prefixed(&format!("Index `{}`: ", record.uid))
    } else {
        error
    }
}

/// Runs `prepared` on every shard of `record`, ranked by the keyword rules or, with
/// `vector`, by similarity, and merges the answers.
pub async fn execute_ranked(
    coordinator: &Rc<Coordinator>,
    record: &IndexRecord,
    prepared: &PreparedSearch,
    vector: Option<VectorQuery>,
) -> Result<SearchOutcome, ResponseError> {
    let set = record.shard_set();
    let mut request = shard_request(prepared);
    request.vector = vector;
    with_term_counts(coordinator, record, &mut request).await?;
    if let Some(field) = &prepared.distinct {
        return super::distinct::execute_distinct(coordinator, record, prepared, &request, field)
            .await;
    }
    let answers = coordinator.ask_every_shard(&set, |_| request.clone()).await;
    let mut outcome = SearchOutcome::default();
    let mut hits = Vec::new();
    let mut facets = prepared
        .body
        .facets
        .as_ref()
        .map(|_| MergedFacets::default());
    for answer in answers {
        // A shard's filter refusal gets its index prefix once, in `execute`.
        let answer = answer?;
        outcome.total += answer.total;
        outcome.attribute_unified = answer.attribute_unified;
        merge_query_words(&mut outcome.query_words, answer.query_words);
        if outcome.query_languages.is_empty() {
            outcome.query_languages = answer.query_languages;
        }
        if let (Some(merged), Some(counts)) = (facets.as_mut(), answer.facets) {
            merged.add(counts);
        }
        hits.extend(answer.hits);
    }
    hits.sort_by(|left, right| {
        compare_details(&left.hit.details, &right.hit.details).then(left.hit.id.cmp(&right.hit.id))
    });
    if let Some(threshold) = prepared.body.ranking_score_threshold {
        let before = hits.len();
        hits.retain(|hit| hit.hit.score >= threshold.0);
        if hits.len() < before {
            outcome.total = hits.len() as u64;
        }
    }
    outcome.hits = hits
        .into_iter()
        .skip(prepared.offset)
        .take(prepared.limit)
        .map(ShardFoundHit::decoded)
        .collect::<Result<_, _>>()?;
    debug_assert!(outcome.hits.len() <= prepared.limit, "at most `limit` hits");
    outcome.facets = facets;
    Ok(outcome)
}

/// A shard's refusal of a filter it evaluated (an unknown embedder in a vector filter, say)
/// is an error of the index's engine: Meilisearch names the index before its message.
pub fn index_filter_error(record: &IndexRecord, error: ResponseError) -> ResponseError {
    if error.code == Code::InvalidSearchFilter {
        error.prefixed(&format!("Index `{}`: ", record.uid))
    } else {
        error
    }
}

/// Adds the index-wide per-term document counts to a keyword search with
/// `matchingStrategy: frequency` over several shards (so every shard drops terms in the same
/// order).
async fn with_term_counts(
    coordinator: &Rc<Coordinator>,
    record: &IndexRecord,
    request: &mut ShardSearchRequest,
) -> Result<(), ResponseError> {
    let query = &request.query;
    let has_text = query.q.as_deref().is_some_and(|q| !q.trim().is_empty());
    if request.vector.is_none()
        && query.matching_strategy == MatchingStrategy::Frequency
        && has_text
        && record.shards > 1
    {
        request.query.term_document_counts =
            Some(term_document_counts(coordinator, record, &request.query).await?);
    }
    Ok(())
}

/// Index-wide per-term document counts (the sum over shards).
async fn term_document_counts(
    coordinator: &Rc<Coordinator>,
    record: &IndexRecord,
    query: &SearchQuery,
) -> Result<Vec<u64>, ResponseError> {
    let answers = coordinator
        .ask_every_shard(&record.shard_set(), |_| TermCounts {
            query: query.clone(),
        })
        .await;
    let mut sums: Vec<u64> = Vec::new();
    for answer in answers {
        let counts = answer?;
        if sums.len() < counts.len() {
            sums.resize(counts.len(), 0);
        }
        for (sum, count) in sums.iter_mut().zip(counts) {
            *sum += count;
        }
    }
    Ok(sums)
}

/// Adds a shard's per-term words to the merged ones, each word once.
pub(super) fn merge_query_words(merged: &mut Vec<Vec<String>>, shard: Vec<Vec<String>>) {
    if merged.len() < shard.len() {
        merged.resize(shard.len(), Vec::new());
    }
    for (words, shard_words) in merged.iter_mut().zip(shard) {
        for word in shard_words {
            if !words.contains(&word) {
                words.push(word);
            }
        }
    }
}
