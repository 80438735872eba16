//! A search with a distinct attribute over every shard of an index, as Meilisearch runs it
//! over one index (its bucket sort, `milli::search::new::bucket_sort`), in rounds; a
//! semantic search (`vectorSort`) runs the same rounds, its buckets being equal similarities:
//!
//! 1. every shard sends its candidates ([`DistinctShardSearch`]); distinct is applied once
//!    over all of them ([`super::distinct_merge::select`]), asking a shard for more (twice as
//!    many) when it could still hold a hit ranked before the pass's next one;
//! 2. for an exact count (`page`/`hitsPerPage`, a facet search's `exhaustiveFacetCount`),
//!    distinct runs again in internal id order over the matches that hold no value of a kept
//!    hit ([`DistinctValued`], [`super::distinct_merge::select_by_id`]);
//! 3. every shard counts what Meilisearch counts (the matches minus the documents sharing a
//!    value with a kept hit, plus the kept hits; for an exact count, only the kept ones among
//!    documents holding a value) with its facet counts, and loads the page's documents
//!    ([`DistinctFinish`]); a facet search counts its values there instead.
//!
//! So `estimatedTotalHits`, `totalHits`, `facetDistribution`, `facetStats` and facet-search
//! counts describe what Meilisearch's do: the documents distinct left after ranking up to
//! the bucket of the last hit asked for. Known difference: a bucket wholly before `offset`
//! is ranked here to its end before distinct runs over it (Meilisearch goes through it by
//! internal id); the hits shown are the same, which of its documents counts may differ.

use std::rc::Rc;
use std::sync::Arc;

use roaring::RoaringBitmap;
use shards::search::{DistinctNarrowing, ShardHit};

use super::distinct_merge::{Merge, ShardCandidates, select, select_by_id};
use super::facets::MergedFacets;
use super::outcome::{SearchOutcome, merge_query_words};
use super::parameters::SEARCH_LIMIT_DEFAULT;
use super::prepare::PreparedSearch;
use crate::coordinator::Coordinator;
use crate::coordinator::catalog::IndexRecord;
use crate::errors::ResponseError;
use crate::host::distinct::{
    DistinctFinish, DistinctShardAnswer, DistinctShardSearch, DistinctValued,
};
use crate::host::search::{ShardFoundHit, ShardSearchRequest};

/// What the first two rounds decided.
pub struct DistinctPlan {
    /// The hits kept, best first, each with its shard.
    pub kept: Vec<(u32, ShardHit)>,
    /// Per shard (in shard order), what it counts.
    pub narrowings: Vec<DistinctNarrowing>,
    /// Some hit was left out for a `rankingScoreThreshold`.
    pub below_threshold: bool,
    pub attribute_unified: bool,
    pub query_words: Vec<Vec<String>>,
    pub query_languages: Vec<String>,
}

/// How a search with a distinct attribute runs: its field, the hits to keep (the offset and
/// the limit), whether its count is exact, and its `rankingScoreThreshold`.
#[derive(Debug, Clone)]
pub struct DistinctRun<'a> {
    pub field: &'a str,
    pub target: usize,
    pub exact: bool,
    pub threshold: Option<f64>,
}

/// Runs rounds 1 and 2 of `request` on `record` as `run` says.
pub async fn plan(
    coordinator: &Rc<Coordinator>,
    record: &IndexRecord,
    request: &ShardSearchRequest,
    run: &DistinctRun<'_>,
) -> Result<DistinctPlan, ResponseError> {
    let DistinctRun {
        field,
        target,
        exact,
        threshold,
    } = *run;
    let mut answers = first_round(coordinator, record, request, target).await?;
    let selection = select_with_more(
        coordinator,
        record,
        request,
        target,
        threshold,
        &mut answers,
    )
    .await?;
    let taken = Arc::new(selection.taken);
    let mut kept_by_shard = vec![RoaringBitmap::new(); answers.len()];
    let mut kept = Vec::with_capacity(selection.kept.len());
    for (shard, position) in selection.kept {
        let hit = answers[shard].hits[position].clone();
        kept_by_shard[shard].insert(hit.id);
        kept.push((shard as u32, hit));
    }
    let mut plan = DistinctPlan {
        kept,
        narrowings: Vec::with_capacity(answers.len()),
        below_threshold: selection.below_threshold,
        attribute_unified: false,
        query_words: Vec::new(),
        query_languages: Vec::new(),
    };
    for (answer, kept) in answers.into_iter().zip(kept_by_shard) {
        plan.attribute_unified = answer.attribute_unified;
        merge_query_words(&mut plan.query_words, answer.query_words);
        if plan.query_languages.is_empty() {
            plan.query_languages = answer.query_languages;
        }
        plan.narrowings.push(DistinctNarrowing {
            field: field.to_owned(),
            matching: answer.matching,
            taken: Arc::clone(&taken),
            kept,
            only_kept_valued: false,
        });
    }
    if exact {
        exact_round(coordinator, record, &mut plan.narrowings).await?;
    }
    Ok(plan)
}

/// Round 1 on every shard.
async fn first_round(
    coordinator: &Rc<Coordinator>,
    record: &IndexRecord,
    request: &ShardSearchRequest,
    limit: usize,
) -> Result<Vec<DistinctShardAnswer>, ResponseError> {
    coordinator
        .ask_every_shard(&record.shard_set(), |_| DistinctShardSearch {
            request: with_limit(request, limit),
        })
        .await
        .into_iter()
        .collect()
}

/// `request` asking a shard to keep `limit` hits of its own, without facets (counted later).
fn with_limit(request: &ShardSearchRequest, limit: usize) -> ShardSearchRequest {
    let mut request = request.clone();
    request.query.offset = 0;
    request.query.limit = limit;
    if let Some(vector) = request.vector.as_mut() {
        vector.limit = limit;
    }
    request.facets = None;
    request
}

/// Applies distinct over the shards' candidates, asking shards for more until it can.
async fn select_with_more(
    coordinator: &Rc<Coordinator>,
    record: &IndexRecord,
    request: &ShardSearchRequest,
    target: usize,
    threshold: Option<f64>,
    answers: &mut [DistinctShardAnswer],
) -> Result<super::distinct_merge::Selection, ResponseError> {
    let mut limits = vec![target; answers.len()];
    loop {
        let sent: Vec<ShardCandidates<'_>> = answers
            .iter()
            .map(|answer| ShardCandidates {
                hits: &answer.hits,
                complete: answer.complete,
            })
            .collect();
        let shards = match select(&sent, target, threshold) {
            Merge::Done(selection) => return Ok(selection),
            Merge::NeedMore(shards) => shards,
        };
        for shard in shards {
            limits[shard] = limits[shard].saturating_mul(2).max(1);
            let again = DistinctShardSearch {
                request: with_limit(request, limits[shard]),
            };
            answers[shard] = coordinator
                .ask_shard(&record.shard_set(), shard as u32, again)
                .await?;
        }
    }
}

/// Round 2: distinct in internal id order over what round 1 left, for an exact count.
async fn exact_round(
    coordinator: &Rc<Coordinator>,
    record: &IndexRecord,
    narrowings: &mut [DistinctNarrowing],
) -> Result<(), ResponseError> {
    let lists: Vec<Vec<(u32, Vec<String>)>> = coordinator
        .ask_every_shard(&record.shard_set(), |shard| DistinctValued {
            narrowing: narrowings[shard as usize].clone(),
        })
        .await
        .into_iter()
        .collect::<Result<_, _>>()?;
    for (narrowing, kept) in narrowings.iter_mut().zip(select_by_id(&lists)) {
        narrowing.kept.extend(kept);
        narrowing.only_kept_valued = true;
    }
    Ok(())
}

/// Runs `prepared` (a search whose distinct attribute is `field`) on every shard of
/// `record`: the three rounds, then the page's hits with their documents.
pub async fn execute_distinct(
    coordinator: &Rc<Coordinator>,
    record: &IndexRecord,
    prepared: &PreparedSearch,
    request: &ShardSearchRequest,
    field: &str,
) -> Result<SearchOutcome, ResponseError> {
    let target = if prepared.limit == 0 {
        0
    } else {
        prepared.offset.saturating_add(prepared.limit)
    };
    let run = DistinctRun {
        field,
        target,
        exact: prepared.is_page_mode(),
        threshold: prepared
            .body
            .ranking_score_threshold
            .map(|threshold| threshold.0),
    };
    let mut plan = plan(coordinator, record, request, &run).await?;
    let window: Vec<(u32, ShardHit)> = plan
        .kept
        .iter()
        .skip(prepared.offset)
        .take(prepared.limit)
        .cloned()
        .collect();
    let mut windows = vec![Vec::new(); plan.narrowings.len()];
    for (shard, hit) in &window {
        windows[*shard as usize].push(hit.clone());
    }
    let kept_narrowings = plan.narrowings.clone();
    let mut narrowings: Vec<Option<DistinctNarrowing>> =
        plan.narrowings.drain(..).map(Some).collect();
    let answers = coordinator
        .ask_every_shard(&record.shard_set(), |shard| DistinctFinish {
            narrowing: narrowings[shard as usize]
                .take()
                .expect("one request per shard"),
            facets: prepared.body.facets.clone(),
            window: std::mem::take(&mut windows[shard as usize]),
            retrieve_vectors: prepared.body.retrieve_vectors,
        })
        .await;
    let mut outcome = SearchOutcome {
        attribute_unified: plan.attribute_unified,
        query_words: plan.query_words,
        query_languages: plan.query_languages,
        facets: prepared
            .body
            .facets
            .as_ref()
            .map(|_| MergedFacets::default()),
        distinct_narrowings: Some(kept_narrowings),
        ..SearchOutcome::default()
    };
    let mut found: Vec<Vec<ShardFoundHit>> = Vec::with_capacity(answers.len());
    for answer in answers {
        let answer = answer?;
        outcome.total += answer.count;
        if let (Some(merged), Some(counts)) = (outcome.facets.as_mut(), answer.facets) {
            merged.add(counts);
        }
        found.push(answer.hits);
    }
    if plan.below_threshold {
        // As without distinct: the hits kept are all that is known to pass the threshold.
        outcome.total = plan.kept.len() as u64;
    }
    outcome.hits = in_window_order(&window, found)?;
    Ok(outcome)
}

/// The window's hits, decoded, in its order (a hit whose document went away between the
/// rounds is left out).
fn in_window_order(
    window: &[(u32, ShardHit)],
    found: Vec<Vec<ShardFoundHit>>,
) -> Result<Vec<crate::host::search::ShardSearchHit>, ResponseError> {
    let mut by_shard: Vec<std::collections::VecDeque<ShardFoundHit>> =
        found.into_iter().map(Into::into).collect();
    let mut hits = Vec::with_capacity(window.len());
    for (shard, hit) in window {
        let queue = &mut by_shard[*shard as usize];
        if queue.front().is_some_and(|found| found.hit.id == hit.id) {
            if let Some(found) = queue.pop_front() {
                hits.push(found.decoded()?);
            }
        }
    }
    Ok(hits)
}

/// The documents a facet search counts with a distinct attribute: Meilisearch's facet search
/// runs its search for its first 20 hits (none, counted exactly, under
/// `exhaustiveFacetCount`).
pub async fn facet_search_narrowings(
    coordinator: &Rc<Coordinator>,
    record: &IndexRecord,
    request: &ShardSearchRequest,
    field: &str,
    exact: bool,
    threshold: Option<f64>,
) -> Result<Vec<DistinctNarrowing>, ResponseError> {
    let run = DistinctRun {
        field,
        target: if exact { 0 } else { SEARCH_LIMIT_DEFAULT },
        exact,
        threshold,
    };
    Ok(plan(coordinator, record, request, &run).await?.narrowings)
}
