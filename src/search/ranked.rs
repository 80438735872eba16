//! Running a prepared search over every shard of an index and merging their answers into the
//! order one unsharded index gives.
//!
//! Each shard returns its first `offset + limit` hits with their documents, its number of
//! matches and, when asked, its facet counts. The hits are merged by their ranking details
//! ([`compare_details`]), ties by internal id (ids are allocated index-wide, so this is the
//! order of one index), then `rankingScoreThreshold`, then the window `offset..offset + limit`
//! is cut. A search with a distinct attribute, keyword or semantic, runs in rounds instead
//! (see [`super::distinct`]). Keyword, semantic and each half of a hybrid search all run
//! here: [`execute_ranked`] is the one search of the shards that the other paths call.
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
use crate::errors::ResponseError;
use crate::host::search::{ShardFoundHit, ShardSearchRequest, TermCounts};

use super::facets::MergedFacets;
use super::outcome::{SearchOutcome, merge_query_words};
use super::prepare::PreparedSearch;
use super::shard_request::shard_request;

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
