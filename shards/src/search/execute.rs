//! Running a search on one shard snapshot: parse `q`, drop documents with negative words or
//! phrases, resolve the terms against the dictionary, read where they occur, keep the
//! documents the matching strategy accepts, rank them rule by rule, and return the first
//! `offset + limit` hits with scores and details, and the total number of matches.
//!
//! Invariants: hits are ordered by [`compare_details`] then internal id, which is the order
//! Meilisearch's bucket sort gives; a hit's details and score depend only on the document and
//! the query (see [`super::ranking`]), so the caller may merge shards by them. A placeholder
//! search (no term) returns every candidate, ordered by the sort rules then internal id.

use std::cell::OnceCell;
use std::collections::BTreeMap;
use std::sync::Arc;

use charabia::Language;
use roaring::RoaringBitmap;

use crate::analysis::{Analyzer, RankingRule};
use crate::error::ShardResult;
use crate::shard::{ShardSnapshot, SortRule};

use super::buckets::{Universe, WordsLevels, alternatives_documents};
use super::details::{
    DetailSources, FieldLengthsReader, details, is_sort, sort_detail, sort_tables,
};
use super::distinct::{DistinctTable, distinct_candidates, distinct_values};
use super::occurrences::{
    DocumentOccurrences, SearchedFields, TermOccurrence, collect_known_occurrences,
    collect_occurrences, phrase_occurrences, searched_fields, word_documents,
};
use super::prefix_cache::forward_only_alternatives;
use super::query::{MatchingStrategy, ParsedQuery, QueryTerm, SearchQuery, TermKind, parse_query};
use super::ranking::RankingContext;
use super::refine::{OccurrenceCache, Refiner, Selection, is_past};
use super::score::{ScoreDetail, compare_details, global_score};
use super::sort_values::sorted_documents;
use super::split_words::add_split_alternatives;
use super::steps::{Step, steps};
use super::term_postings::TermPostings;
use super::terms::{ResolvedTerm, resolve_terms, typo_floors};

/// One hit of a shard.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardHit {
    /// Internal id in this shard.
    pub id: u32,
    /// `_rankingScore`.
    pub score: f64,
    /// Per ranking rule, in rule order (see [`super::details_json`]).
    pub details: Vec<ScoreDetail>,
    /// The dictionary words through which the query matched this document (for highlighting).
    pub matched_words: Vec<String>,
    /// Its values of the distinct attribute, when one applies (see [`super::distinct`]).
    pub distinct_values: Vec<String>,
}

/// The answer of one shard.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ShardHits {
    /// The first `offset + limit` hits, best first; with a distinct attribute, the
    /// candidates of [`super::distinct::distinct_candidates`] instead.
    pub hits: Vec<ShardHit>,
    /// With a distinct attribute: whether no match ranks after the last hit (the hits not
    /// sent rank in later buckets otherwise).
    pub complete: bool,
    /// Number of documents matching the query (after the candidates and negations).
    pub total: u64,
    /// Whether `attribute` (rather than `attributeRank` + `wordPosition`) is in the rules.
    pub attribute_unified: bool,
    /// Per query term, every word it may match in this shard.
    pub query_words: Vec<Vec<String>>,
    /// Every document matching the query (before `distinct`): what facet counts describe.
    pub matching: RoaringBitmap,
    /// The languages `q` was analysed in (ISO-639-3 codes; empty: charabia's detection), for
    /// the formatter to parse `q` as the shard did.
    pub query_languages: Vec<String>,
}

impl ShardSnapshot {
    /// Searches this shard, in named phases (functions of `search/execute.rs`): the
    /// `SearchPlan` (the query analysed, its universe and the ranking steps); without terms,
    /// a `placeholder_search`; with terms, once they are resolved and the `ranking_context`
    /// made, the lazy bucket sort (`bucketed_search`) when `TermSearch::by_buckets` allows
    /// it, else the ranking of every match (`full_search`); both end in
    /// `finish_term_search`.
    pub fn search(&self, query: &SearchQuery) -> ShardResult<ShardHits> {
        let plan = SearchPlan::new(self, query)?;
        if plan.analysed.parsed.terms.is_empty() {
            return placeholder_search(self, query, plan);
        }
        let resolved = resolve(self, &plan.analysed.parsed)?;
        let context = ranking_context(self, query, &plan, &resolved)?;
        let terms = TermSearch {
            snapshot: self,
            query,
            plan: &plan,
            resolved: &resolved,
            context: &context,
        };
        let found = if terms.by_buckets() {
            bucketed_search(&terms)?
        } else {
            full_search(&terms)?
        };
        let mut hits = finish_term_search(found, &terms);
        hits.query_languages = plan.analysed.language_codes;
        Ok(hits)
    }

    /// For `matchingStrategy: frequency` across shards: per term of `query.q`, the number of
    /// documents of this shard matching it (all documents, as Meilisearch counts, whatever the
    /// filter).
    pub fn term_document_counts(&self, query: &SearchQuery) -> ShardResult<Vec<u64>> {
        let analyzer = self.analyzer();
        let AnalysedQuery { fields, parsed, .. } = analyse_query(self, analyzer, query)?;
        let resolved = resolve(self, &parsed)?;
        term_counts_everywhere(self, &resolved, &fields)
    }
}

/// What every strategy of a search starts from.
struct SearchPlan {
    analysed: AnalysedQuery,
    /// The candidates minus the documents holding a negative word or phrase.
    universe: RoaringBitmap,
    /// The ranking steps of the rules, the `sort` parameter and the matching strategy.
    steps: Vec<Step>,
    /// Whether `attribute` (rather than `attributeRank` + `wordPosition`) is in the rules.
    attribute_unified: bool,
    /// The hits wanted: `offset + limit`.
    needed: usize,
}

impl SearchPlan {
    fn new(snapshot: &ShardSnapshot, query: &SearchQuery) -> ShardResult<SearchPlan> {
        let settings = snapshot.text_settings();
        let analysed = analyse_query(snapshot, snapshot.analyzer(), query)?;
        let universe = universe(snapshot, query, &analysed.parsed)?;
        let steps = steps(
            &settings.ranking_rules,
            &query.sort,
            query.matching_strategy,
        );
        Ok(SearchPlan {
            analysed,
            universe,
            steps,
            attribute_unified: settings.ranking_rules.contains(&RankingRule::Attribute),
            needed: query.offset.saturating_add(query.limit),
        })
    }
}

/// A search without terms: every document of the universe, ordered by the sort steps (see
/// [`placeholder`]).
fn placeholder_search(
    snapshot: &ShardSnapshot,
    query: &SearchQuery,
    plan: SearchPlan,
) -> ShardResult<ShardHits> {
    let distinct = distinct_table(snapshot, query, &plan.universe)?;
    let mut hits = placeholder(
        snapshot,
        &plan.steps,
        &plan.universe,
        plan.needed,
        distinct.as_ref(),
    )?;
    hits.attribute_unified = plan.attribute_unified;
    hits.matching = plan.universe;
    hits.query_languages = plan.analysed.language_codes;
    Ok(hits)
}

/// The ranking context of a search with terms: the groups of terms the matching strategy
/// drops, in order (by the index-wide counts the caller gives, else this shard's, for
/// `frequency`), and what the rules read.
fn ranking_context<'p>(
    snapshot: &ShardSnapshot,
    query: &SearchQuery,
    plan: &'p SearchPlan,
    resolved: &[ResolvedTerm],
) -> ShardResult<RankingContext<'p>> {
    let settings = snapshot.text_settings();
    let terms = &plan.analysed.parsed.terms;
    let fields = &plan.analysed.fields;
    let removal_order = match (&query.term_document_counts, query.matching_strategy) {
        (None, MatchingStrategy::Frequency) => removal_order(
            query,
            terms,
            &term_counts_everywhere(snapshot, resolved, fields)?,
        ),
        _ => removal_order(query, terms, &[]),
    };
    Ok(RankingContext {
        terms,
        strategy: query.matching_strategy,
        removal_order,
        proximity_precision: settings.proximity_precision,
        weight_max: settings.weight_max(),
        fields,
        typo_floors: typo_floors(settings, terms),
        forward_only: forward_only_alternatives(&*snapshot.dictionary()?, resolved),
    })
}

/// A search with terms, once they are resolved: what both of its strategies read.
struct TermSearch<'a> {
    snapshot: &'a ShardSnapshot,
    query: &'a SearchQuery,
    plan: &'a SearchPlan,
    resolved: &'a [ResolvedTerm],
    context: &'a RankingContext<'a>,
}

impl TermSearch<'_> {
    /// Whether the lazy bucket sort serves the query: the words rule comes first (or every
    /// term is required), and nothing needs every match ranked (`distinct`,
    /// `attributesToSearchOn`, or a searched field with typos disabled).
    fn by_buckets(&self) -> bool {
        let settings = self.snapshot.text_settings();
        let words_first = match self.query.matching_strategy {
            MatchingStrategy::All => true,
            _ => self.plan.steps.first() == Some(&Step::Words),
        };
        words_first
            && self.query.distinct.is_none()
            && settings.distinct_attribute.is_none()
            && self.query.attributes_to_search_on.is_none()
            && self
                .plan
                .analysed
                .fields
                .values()
                .all(|field| !field.typos_disabled)
    }
}

/// What a strategy of a search with terms found, for [`finish_term_search`].
struct Found {
    /// The ranked documents, unordered.
    hits: Vec<ShardHit>,
    /// Every document matching the query.
    matching: RoaringBitmap,
    /// The number of matches when the strategy knows it without counting the hits.
    total: Option<u64>,
    distinct: Option<DistinctTable>,
    /// The occurrences the hits were ranked by (their matched words are read from them).
    occurrences: DocumentOccurrences,
}

/// The lazy bucket sort: the matches, level by level of the words rule, refined by the next
/// steps only as far as the page needs (see [`select_by_levels`]); then the selected
/// documents' full details.
fn bucketed_search(search: &TermSearch<'_>) -> ShardResult<Found> {
    let snapshot = search.snapshot;
    let read = snapshot.read_transaction();
    let whole = Universe {
        documents: &search.plan.universe,
        // The universe is a subset of the shard's documents: as many means the same.
        is_everything: search.plan.universe.len() == snapshot.document_ids().len(),
    };
    let mut alternatives = Vec::with_capacity(search.resolved.len());
    for term in search.resolved {
        alternatives.push(term_postings(snapshot, whole, term)?);
    }
    let documents: Vec<&RoaringBitmap> = alternatives.iter().map(|found| &found.union).collect();
    let levels = WordsLevels::new(&documents, &search.context.removal_order);
    let matching = levels.matching();
    let total = matching.len();
    let needed = u64::try_from(search.plan.needed).unwrap_or(u64::MAX);
    let selected = select_by_levels(search, &levels, &alternatives, needed)?;
    let occurrences = collect_known_occurrences(
        read,
        snapshot.prefix_words(),
        &selected.documents,
        search.resolved,
        &alternatives,
        &search.plan.analysed.fields,
    )?;
    let limits = RankLimits {
        ranked_steps: selected.ranked_steps(),
        deadline: None,
        attribute_unified: search.plan.attribute_unified,
    };
    let hits = rank(
        snapshot,
        search.context,
        &search.plan.steps,
        &occurrences,
        &limits,
    )?;
    Ok(Found {
        hits,
        matching,
        total: Some(total),
        distinct: None,
        occurrences,
    })
}

/// Where `term` occurs in `universe`: kept in the commit's memo when the universe is every
/// document (see [`super::term_postings`]); otherwise the kept postings restricted to the
/// universe, or, when none are kept, read inside the universe for this search alone.
fn term_postings(
    snapshot: &ShardSnapshot,
    universe: Universe<'_>,
    term: &ResolvedTerm,
) -> ShardResult<Arc<TermPostings>> {
    let read = || -> ShardResult<TermPostings> {
        let alternatives = alternatives_documents(
            snapshot.read_transaction(),
            snapshot.prefix_unions(),
            universe,
            term,
        )?;
        Ok(TermPostings::new(alternatives))
    };
    let memo = snapshot.term_postings();
    if universe.is_everything {
        return memo.postings(term, read);
    }
    match memo.known(term) {
        Some(known) => Ok(Arc::new(known.within(universe.documents))),
        None => read().map(Arc::new),
    }
}

/// The first `needed` documents, taken level by level of the words rule (fewest terms
/// dropped first), each level's bucket refined by the next steps (see [`Refiner`]).
fn select_by_levels(
    search: &TermSearch<'_>,
    levels: &WordsLevels,
    alternatives: &[Arc<TermPostings>],
    needed: u64,
) -> ShardResult<Selection> {
    let mut selected = Selection::default();
    for level in 0..levels.count() {
        if selected.documents.len() >= needed {
            break;
        }
        let bucket = levels.bucket(level);
        let kept = search.context.kept_at_level(level);
        let refiner = Refiner {
            snapshot: search.snapshot,
            read: search.snapshot.read_transaction(),
            context: search.context,
            steps: &search.plan.steps,
            resolved: search.resolved,
            fields: &search.plan.analysed.fields,
            kept: &kept,
            alternatives,
            occurrences: OccurrenceCache::default(),
            exact_occurrences: OccurrenceCache::default(),
            exact_terms: OnceCell::new(),
            deadline: search.query.deadline,
        };
        selected.extend(refiner.select(&bucket, needed - selected.documents.len())?);
    }
    Ok(selected)
}

/// The full evaluation: every document of the universe where a term occurs, ranked by every
/// step (until `searchCutoffMs`), with distinct values when a distinct attribute applies.
fn full_search(search: &TermSearch<'_>) -> ShardResult<Found> {
    let snapshot = search.snapshot;
    let read = snapshot.read_transaction();
    let occurrences = collect_occurrences(
        read,
        snapshot.prefix_words(),
        &search.plan.universe,
        search.resolved,
        &search.plan.analysed.fields,
    )?;
    let limits = RankLimits {
        ranked_steps: BTreeMap::new(),
        deadline: search.query.deadline,
        attribute_unified: search.plan.attribute_unified,
    };
    let hits = rank(
        snapshot,
        search.context,
        &search.plan.steps,
        &occurrences,
        &limits,
    )?;
    let matching: RoaringBitmap = hits.iter().map(|hit| hit.id).collect();
    let distinct = distinct_table(snapshot, search.query, &matching)?;
    Ok(Found {
        hits,
        matching,
        total: None,
        distinct,
        occurrences,
    })
}

/// The tail both strategies share: the hits ordered, deduplicated and cut (see [`finish`]),
/// with the query's words, the matching documents and each hit's matched words.
fn finish_term_search(found: Found, search: &TermSearch<'_>) -> ShardHits {
    let query_words = search
        .resolved
        .iter()
        .map(ResolvedTerm::matching_words)
        .collect();
    let mut hits = finish(
        found.hits,
        search.plan.needed,
        search.plan.attribute_unified,
        query_words,
        found.distinct.as_ref(),
        found.total,
    );
    hits.matching = found.matching;
    fill_matched_words(&mut hits.hits, search.resolved, &found.occurrences);
    hits
}

/// Per resolved term, the number of this shard's documents where it occurs.
fn term_counts_everywhere(
    snapshot: &ShardSnapshot,
    resolved: &[ResolvedTerm],
    fields: &SearchedFields,
) -> ShardResult<Vec<u64>> {
    let found = collect_occurrences(
        snapshot.read_transaction(),
        snapshot.prefix_words(),
        snapshot.document_ids(),
        resolved,
        fields,
    )?;
    Ok(term_counts(&found, resolved.len()))
}

/// The parsed query's terms resolved against this commit's dictionary, synonyms and word
/// pairs (a word's split).
fn resolve(snapshot: &ShardSnapshot, parsed: &ParsedQuery) -> ShardResult<Vec<ResolvedTerm>> {
    let dictionary = snapshot.dictionary()?;
    let mut resolved = resolve_terms(
        &dictionary,
        snapshot.derivation_memo(),
        snapshot.text_settings(),
        snapshot.synonyms(),
        &parsed.terms,
    );
    add_split_alternatives(
        snapshot.read_transaction(),
        snapshot.split_memo(),
        &mut resolved,
    )?;
    Ok(resolved)
}

/// The fields `query` searches and its `q` parsed in its languages (see
/// [`query_languages`]). A blank `q` (a placeholder search) has no term in any language:
/// the fields map is not read for it.
fn analyse_query(
    snapshot: &ShardSnapshot,
    analyzer: &Analyzer,
    query: &SearchQuery,
) -> ShardResult<AnalysedQuery> {
    let q = query.q.as_deref().unwrap_or("");
    if q.trim().is_empty() {
        return Ok(AnalysedQuery {
            fields: SearchedFields::new(),
            language_codes: Vec::new(),
            parsed: ParsedQuery::default(),
        });
    }
    let settings = snapshot.text_settings();
    let fields_map = snapshot.fields_map()?;
    let fields = searched_fields(
        &fields_map,
        settings,
        query.attributes_to_search_on.as_deref(),
    );
    let languages = query_languages(analyzer, query, &fields_map, &fields);
    let parsed = parse_query(analyzer, settings, q, languages.as_deref());
    let language_codes = languages
        .iter()
        .flatten()
        .map(|language| language.code().to_owned())
        .collect();
    Ok(AnalysedQuery {
        fields,
        language_codes,
        parsed,
    })
}

/// The candidates of a query: the caller's candidates (within the shard's documents, see
/// [`SearchQuery::candidates`]) or else every document, minus those holding a negative
/// word or phrase.
fn universe(
    snapshot: &ShardSnapshot,
    query: &SearchQuery,
    parsed: &ParsedQuery,
) -> ShardResult<RoaringBitmap> {
    let read = snapshot.read_transaction();
    let mut universe = match &query.candidates {
        Some(candidates) => {
            debug_assert!(
                candidates.is_subset(snapshot.document_ids()),
                "the candidates are a filter's answer on this snapshot"
            );
            candidates.clone()
        }
        None => snapshot.document_ids().clone(),
    };
    for word in &parsed.negative_words {
        universe -= word_documents(read, &universe, word)?;
    }
    for phrase in &parsed.negative_phrases {
        for document in phrase_occurrences(read, &universe, phrase)?.keys() {
            universe.remove(*document);
        }
    }
    Ok(universe)
}

/// The hits of the documents the matching strategy keeps, unordered. A document cut short
/// (by the lazy sort's deadline, or here once `limits.deadline` passed) is ranked by the
/// first steps only, its details ending with [`ScoreDetail::Skipped`].
fn rank(
    snapshot: &ShardSnapshot,
    context: &RankingContext<'_>,
    steps: &[Step],
    occurrences: &DocumentOccurrences,
    limits: &RankLimits,
) -> ShardResult<Vec<ShardHit>> {
    let read = snapshot.read_transaction();
    let mut kept_documents = Vec::new();
    for (document, term_occurrences) in occurrences {
        let matched: Vec<bool> = term_occurrences
            .iter()
            .map(|list| !list.is_empty())
            .collect();
        if let Some(kept) = context.kept(&matched) {
            kept_documents.push((*document, kept, term_occurrences));
        }
    }
    let matching: RoaringBitmap = kept_documents.iter().map(|(id, ..)| *id).collect();
    let tables = sort_tables(read, snapshot.facet_columns(), steps, &matching)?;
    let mut hits = Vec::with_capacity(kept_documents.len());
    let mut sources = DetailSources {
        tables: &tables,
        lengths: FieldLengthsReader::new(read)?,
    };
    let mut past_deadline = false;
    for (index, (document, kept, term_occurrences)) in kept_documents.into_iter().enumerate() {
        if index % DEADLINE_CHECK_DOCUMENTS == 0 && !past_deadline {
            past_deadline = is_past(limits.deadline);
        }
        let ranked = if past_deadline {
            0
        } else {
            limits.ranked_steps(steps, document)
        };
        let mut details = details(
            context,
            &steps[..ranked],
            &mut sources,
            document,
            &kept,
            term_occurrences,
        )?;
        if ranked < steps.len() {
            details.push(ScoreDetail::Skipped);
        }
        hits.push(ShardHit {
            id: document,
            score: global_score(&details),
            details,
            matched_words: Vec::new(),
            distinct_values: Vec::new(),
        });
    }
    Ok(hits)
}

/// The distinct values of `documents`, when a distinct attribute applies.
fn distinct_table(
    snapshot: &ShardSnapshot,
    query: &SearchQuery,
    documents: &RoaringBitmap,
) -> ShardResult<Option<DistinctTable>> {
    let field = query
        .distinct
        .as_ref()
        .or(snapshot.text_settings().distinct_attribute.as_ref());
    match field {
        Some(field) => Ok(Some(distinct_values(
            snapshot.read_transaction(),
            field,
            documents,
        )?)),
        None => Ok(None),
    }
}

/// A search without terms: the candidates in internal-id order, or ordered by the sort
/// steps. Field sorts alone use the facet indexes' bucket sort, which stops at the page;
/// with `distinct` or a `_geoPoint` sort every candidate gets its sort details (a geo sort
/// reads every candidate's point: one scan of the geo tree).
fn placeholder(
    snapshot: &ShardSnapshot,
    steps: &[Step],
    universe: &RoaringBitmap,
    needed: usize,
    distinct: Option<&DistinctTable>,
) -> ShardResult<ShardHits> {
    let sort_steps: Vec<&SortRule> = steps
        .iter()
        .filter_map(|step| match step {
            Step::Sort(rule) => Some(rule),
            _ => None,
        })
        .collect();
    let total = universe.len();
    if !steps.iter().any(is_sort) && distinct.is_none() {
        let hits = universe
            .iter()
            .take(needed)
            .map(|id| ShardHit {
                id,
                score: 1.0,
                details: Vec::new(),
                matched_words: Vec::new(),
                distinct_values: Vec::new(),
            })
            .collect();
        return Ok(ShardHits {
            hits,
            total,
            ..ShardHits::default()
        });
    }
    let geo = steps.iter().any(|step| matches!(step, Step::GeoSort(_)));
    if distinct.is_none() && !geo {
        return sorted_placeholder(snapshot, &sort_steps, universe, needed);
    }
    let sorting: Vec<&Step> = steps.iter().filter(|step| is_sort(step)).collect();
    let tables = sort_tables(
        snapshot.read_transaction(),
        snapshot.facet_columns(),
        steps,
        universe,
    )?;
    let hits = universe
        .iter()
        .map(|id| {
            let details: Vec<ScoreDetail> = sorting
                .iter()
                .zip(&tables)
                .filter_map(|(step, values)| sort_detail(step, values, id))
                .collect();
            ShardHit {
                id,
                score: 1.0,
                details,
                matched_words: Vec::new(),
                distinct_values: Vec::new(),
            }
        })
        .collect();
    Ok(finish(hits, needed, false, Vec::new(), distinct, None))
}

/// A placeholder search sorted without `distinct`: a bucket sort over the sort fields'
/// facet indexes that stops once `needed` documents are ordered.
fn sorted_placeholder(
    snapshot: &ShardSnapshot,
    sort_steps: &[&SortRule],
    universe: &RoaringBitmap,
    needed: usize,
) -> ShardResult<ShardHits> {
    let rules: Vec<(&str, bool)> = sort_steps
        .iter()
        .map(|rule| (rule.field.as_str(), rule.ascending))
        .collect();
    let sorted = sorted_documents(snapshot.read_transaction(), &rules, universe, needed)?;
    let hits = sorted
        .into_iter()
        .map(|(id, values)| ShardHit {
            id,
            score: 1.0,
            details: sort_steps
                .iter()
                .zip(values)
                .map(|(rule, value)| ScoreDetail::Sort {
                    field: rule.field.clone(),
                    ascending: rule.ascending,
                    value,
                })
                .collect(),
            matched_words: Vec::new(),
            distinct_values: Vec::new(),
        })
        .collect();
    Ok(ShardHits {
        hits,
        total: universe.len(),
        ..ShardHits::default()
    })
}

/// A query's analysis on one shard.
struct AnalysedQuery {
    fields: SearchedFields,
    /// The languages `q` was analysed in, as ISO-639-3 codes (empty: charabia's detection).
    language_codes: Vec<String>,
    parsed: ParsedQuery,
}

/// Documents ranked between two looks at the clock in the full ranking.
const DEADLINE_CHECK_DOCUMENTS: usize = 256;

/// How far [`rank`] ranks each document.
struct RankLimits {
    /// Document → the number of steps that rank it, for documents the lazy sort cut short.
    ranked_steps: BTreeMap<u32, usize>,
    /// Past it, the documents left are not ranked at all.
    deadline: Option<std::time::Instant>,
    /// `attribute` is one rule: a cut never falls between its two steps.
    attribute_unified: bool,
}

impl RankLimits {
    fn ranked_steps(&self, steps: &[Step], document: u32) -> usize {
        let Some(&ranked) = self.ranked_steps.get(&document) else {
            return steps.len();
        };
        let splits_attribute = ranked > 0
            && steps.get(ranked - 1) == Some(&Step::AttributeRank)
            && steps.get(ranked) == Some(&Step::WordPosition);
        if self.attribute_unified && splits_attribute {
            ranked + 1
        } else {
            ranked
        }
    }
}

/// The languages `q` is analysed in: the `locales` parameter, or the locales of the searched
/// fields of this shard (a localized field no document of this shard has does not count; with
/// documents of one shape, every shard sees the same fields).
fn query_languages(
    analyzer: &Analyzer,
    query: &SearchQuery,
    fields_map: &BTreeMap<String, u16>,
    searched: &SearchedFields,
) -> Option<Vec<Language>> {
    let paths = fields_map
        .iter()
        .filter(|(_, id)| searched.contains_key(id))
        .map(|(path, _)| path.as_str());
    analyzer
        .field_languages()
        .of_query(query.locales.as_deref(), paths)
}

/// The groups of terms the matching strategy drops, in order, as Meilisearch: never a phrase;
/// `last` drops from the end, `frequency` the terms matching the most documents first (terms
/// matching none before all, equal counts together); without a phrase the last group stays.
fn removal_order(
    query: &SearchQuery,
    terms: &[QueryTerm],
    local_counts: &[u64],
) -> Vec<Vec<usize>> {
    let removable: Vec<usize> = (0..terms.len())
        .filter(|index| matches!(terms[*index].kind, TermKind::Word { .. }))
        .collect();
    let has_phrase = removable.len() < terms.len();
    let mut groups: Vec<Vec<usize>> = match query.matching_strategy {
        MatchingStrategy::All => return Vec::new(),
        MatchingStrategy::Last => removable.iter().rev().map(|index| vec![*index]).collect(),
        MatchingStrategy::Frequency => {
            let counts: Vec<u64> = match &query.term_document_counts {
                Some(counts) if counts.len() == terms.len() => counts.clone(),
                _ if local_counts.len() == terms.len() => local_counts.to_vec(),
                _ => vec![0; terms.len()],
            };
            let frequency = |index: usize| match counts[index] {
                0 => u64::MAX,
                count => count,
            };
            let mut by_frequency: BTreeMap<std::cmp::Reverse<u64>, Vec<usize>> = BTreeMap::new();
            for index in &removable {
                by_frequency
                    .entry(std::cmp::Reverse(frequency(*index)))
                    .or_default()
                    .push(*index);
            }
            by_frequency.into_values().collect()
        }
    };
    if !has_phrase {
        groups.pop();
    }
    groups
}

/// Per term, the number of documents with an occurrence of it.
fn term_counts(occurrences: &DocumentOccurrences, term_count: usize) -> Vec<u64> {
    (0..term_count)
        .map(|index| {
            let count = occurrences
                .values()
                .filter(|lists| !lists[index].is_empty())
                .count();
            u64::try_from(count).unwrap_or(u64::MAX)
        })
        .collect()
}

/// Sets the matched words of the hits kept (computed for them only: the other ranked
/// documents never need theirs), from the occurrences already read to rank them.
fn fill_matched_words(
    hits: &mut [ShardHit],
    resolved: &[ResolvedTerm],
    occurrences: &DocumentOccurrences,
) {
    for hit in hits {
        if let Some(term_occurrences) = occurrences.get(&hit.id) {
            hit.matched_words = matched_words(resolved, term_occurrences);
        }
    }
}

fn matched_words(terms: &[ResolvedTerm], occurrences: &[Vec<TermOccurrence>]) -> Vec<String> {
    let mut words = std::collections::BTreeSet::new();
    for (term, list) in terms.iter().zip(occurrences) {
        let alternatives: std::collections::BTreeSet<u16> = list
            .iter()
            .map(|occurrence| occurrence.alternative)
            .collect();
        for alternative in alternatives {
            words.extend(term.alternative_words(alternative));
        }
    }
    words.into_iter().collect()
}

/// Orders hits, counts them (unless `total` is known), keeps the first `needed`, or with a
/// distinct attribute the candidates the server applies distinct over.
fn finish(
    mut hits: Vec<ShardHit>,
    needed: usize,
    attribute_unified: bool,
    query_words: Vec<Vec<String>>,
    distinct: Option<&DistinctTable>,
    total: Option<u64>,
) -> ShardHits {
    let order = |left: &ShardHit, right: &ShardHit| {
        compare_details(&left.details, &right.details).then(left.id.cmp(&right.id))
    };
    let counted = u64::try_from(hits.len()).unwrap_or(u64::MAX);
    if distinct.is_none() && hits.len() > needed {
        // Only the first `needed` hits are returned: select them, then order them.
        if needed == 0 {
            hits.clear();
        } else {
            hits.select_nth_unstable_by(needed - 1, order);
            hits.truncate(needed);
        }
    }
    hits.sort_by(order);
    debug_assert!(
        hits.windows(2)
            .all(|pair| order(&pair[0], &pair[1]).is_lt()),
        "hits are ordered by details then internal id"
    );
    let total = total.unwrap_or(counted);
    let complete = match distinct {
        Some(table) => {
            let (candidates, complete) = distinct_candidates(hits, table, needed);
            hits = candidates;
            complete
        }
        None => {
            hits.truncate(needed);
            true
        }
    };
    ShardHits {
        hits,
        complete,
        total,
        attribute_unified,
        query_words,
        matching: RoaringBitmap::new(),
        query_languages: Vec::new(),
    }
}
