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

use charabia::Language;
use roaring::RoaringBitmap;
use storage_engine::{PathLookup, ReadTransaction};

use crate::analysis::{Analyzer, RankingRule};
use crate::error::{ShardError, ShardResult};
use crate::shard::{ShardSnapshot, SortRule};

use super::bitmap_union::union_of;
use super::buckets::{Universe, WordsLevels, alternatives_documents};
use super::distinct::{distinct_values, keep_distinct};
use super::geo_sort::{GeoPoints, geo_points};
use super::occurrences::{
    DocumentOccurrences, SearchedFields, TermOccurrence, collect_known_occurrences,
    collect_occurrences, phrase_occurrences, searched_fields, word_documents,
};
use super::query::{MatchingStrategy, ParsedQuery, QueryTerm, SearchQuery, TermKind, parse_query};
use super::ranking::{Kept, RankingContext};
use super::refine::{OccurrenceCache, Refiner, Selection, is_past};
use super::score::{ScoreDetail, SortValue, compare_details, global_score};
use super::sort_values::{sort_values, sorted_documents};
use super::steps::{Step, steps};
use crate::index::inverted::{FieldLengths, decode_field_lengths};
use crate::index::trees::FIELD_LENGTHS_TREE;

/// Document → its distinct values.
type DistinctTable = BTreeMap<u32, std::collections::BTreeSet<String>>;
use super::terms::{ResolvedTerm, resolve_terms};

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
    /// The first `offset + limit` hits, best first.
    pub hits: Vec<ShardHit>,
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

/// Sort rule index → document → value, for the documents of `documents`.
pub(super) type SortTables = Vec<StepValues>;

/// The values one sort step orders documents by.
pub(super) enum StepValues {
    /// A field's sort values.
    Field(BTreeMap<u32, SortValue>),
    /// The documents' geo points.
    Geo(GeoPoints),
}

/// The detail of a sort or geo sort step for `document`, from its values (`None` for the
/// other steps, or values of the wrong kind).
fn sort_detail(step: &Step, values: &StepValues, document: u32) -> Option<ScoreDetail> {
    match (step, values) {
        (Step::Sort(rule), StepValues::Field(table)) => Some(ScoreDetail::Sort {
            field: rule.field.clone(),
            ascending: rule.ascending,
            value: table.get(&document).cloned().unwrap_or(SortValue::Missing),
        }),
        (Step::GeoSort(rule), StepValues::Geo(points)) => Some(ScoreDetail::GeoSort {
            rule: *rule,
            value: points.get(&document).copied(),
        }),
        _ => None,
    }
}

fn is_sort(step: &Step) -> bool {
    matches!(step, Step::Sort(_) | Step::GeoSort(_))
}

impl ShardSnapshot {
    /// Searches this shard.
    pub fn search(&self, query: &SearchQuery) -> ShardResult<ShardHits> {
        let settings = self.text_settings();
        let analyzer = self.analyzer();
        let AnalysedQuery {
            fields,
            language_codes,
            parsed,
        } = self.analyse_query(analyzer, query)?;
        let universe = self.universe(query, &parsed)?;
        let steps = steps(
            &settings.ranking_rules,
            &query.sort,
            query.matching_strategy,
        );
        let attribute_unified = settings.ranking_rules.contains(&RankingRule::Attribute);
        let needed = query.offset.saturating_add(query.limit);
        if parsed.terms.is_empty() {
            let distinct = self.distinct_table(query, &universe)?;
            let mut hits = self.placeholder(&steps, &universe, needed, distinct.as_ref())?;
            hits.attribute_unified = attribute_unified;
            hits.matching = universe;
            hits.query_languages = language_codes;
            return Ok(hits);
        }
        let read = self.read_transaction();
        let resolved = self.resolve(&parsed)?;
        let removal_order = match (&query.term_document_counts, query.matching_strategy) {
            (None, MatchingStrategy::Frequency) => removal_order(
                query,
                &parsed.terms,
                &self.term_counts_everywhere(&resolved, &fields)?,
            ),
            _ => removal_order(query, &parsed.terms, &[]),
        };
        let context = RankingContext {
            terms: &parsed.terms,
            strategy: query.matching_strategy,
            removal_order,
            proximity_precision: settings.proximity_precision,
            weight_max: settings.weight_max(),
            fields: &fields,
            typo_floors: resolved.iter().map(ResolvedTerm::typo_floor).collect(),
        };
        let words_first = match query.matching_strategy {
            MatchingStrategy::All => true,
            _ => steps.first() == Some(&Step::Words),
        };
        let by_buckets = words_first
            && query.distinct.is_none()
            && settings.distinct_attribute.is_none()
            && query.attributes_to_search_on.is_none()
            && fields.values().all(|field| !field.typos_disabled);
        let query_words = resolved.iter().map(ResolvedTerm::matching_words).collect();
        if by_buckets {
            let mut alternatives = Vec::with_capacity(resolved.len());
            let whole = Universe {
                documents: &universe,
                // The universe is a subset of the shard's documents: as many means the same.
                is_everything: universe.len() == self.document_ids().len(),
            };
            for term in &resolved {
                alternatives.push(alternatives_documents(
                    read,
                    self.prefix_unions(),
                    whole,
                    term,
                )?);
            }
            let documents: Vec<RoaringBitmap> =
                alternatives.iter().map(|found| union_of(found)).collect();
            let levels = WordsLevels::new(&documents, &context.removal_order);
            let matching = levels.matching();
            let total = matching.len();
            let needed = u64::try_from(needed).unwrap_or(u64::MAX);
            let mut selected = Selection::default();
            for level in 0..levels.count() {
                if selected.documents.len() >= needed {
                    break;
                }
                let bucket = levels.bucket(level);
                let kept = context.kept_at_level(level);
                let refiner = Refiner {
                    snapshot: self,
                    read,
                    context: &context,
                    steps: &steps,
                    resolved: &resolved,
                    fields: &fields,
                    kept: &kept,
                    alternatives: &alternatives,
                    occurrences: OccurrenceCache::default(),
                    exact_occurrences: OccurrenceCache::default(),
                    exact_terms: OnceCell::new(),
                    deadline: query.deadline,
                };
                selected.extend(refiner.select(&bucket, needed - selected.documents.len())?);
            }
            let occurrences = collect_known_occurrences(
                read,
                self.prefix_words(),
                &selected.documents,
                &resolved,
                &alternatives,
                &fields,
            )?;
            let limits = RankLimits {
                ranked_steps: selected.ranked_steps(),
                deadline: None,
                attribute_unified,
            };
            let hits = self.rank(&context, &steps, &occurrences, &limits)?;
            let needed = usize::try_from(needed).unwrap_or(usize::MAX);
            let mut hits = finish(
                hits,
                needed,
                attribute_unified,
                query_words,
                None,
                Some(total),
            );
            hits.matching = matching;
            hits.query_languages = language_codes;
            fill_matched_words(&mut hits.hits, &resolved, &occurrences);
            return Ok(hits);
        }
        let occurrences =
            collect_occurrences(read, self.prefix_words(), &universe, &resolved, &fields)?;
        let limits = RankLimits {
            ranked_steps: BTreeMap::new(),
            deadline: query.deadline,
            attribute_unified,
        };
        let hits = self.rank(&context, &steps, &occurrences, &limits)?;
        let matching: RoaringBitmap = hits.iter().map(|hit| hit.id).collect();
        let distinct = self.distinct_table(query, &matching)?;
        let mut hits = finish(
            hits,
            needed,
            attribute_unified,
            query_words,
            distinct.as_ref(),
            None,
        );
        hits.matching = matching;
        hits.query_languages = language_codes;
        fill_matched_words(&mut hits.hits, &resolved, &occurrences);
        Ok(hits)
    }

    /// For `matchingStrategy: frequency` across shards: per term of `query.q`, the number of
    /// documents of this shard matching it (all documents, as Meilisearch counts, whatever the
    /// filter).
    pub fn term_document_counts(&self, query: &SearchQuery) -> ShardResult<Vec<u64>> {
        let analyzer = self.analyzer();
        let AnalysedQuery { fields, parsed, .. } = self.analyse_query(analyzer, query)?;
        let resolved = self.resolve(&parsed)?;
        self.term_counts_everywhere(&resolved, &fields)
    }

    /// Per resolved term, the number of this shard's documents where it occurs.
    fn term_counts_everywhere(
        &self,
        resolved: &[ResolvedTerm],
        fields: &SearchedFields,
    ) -> ShardResult<Vec<u64>> {
        let found = collect_occurrences(
            self.read_transaction(),
            self.prefix_words(),
            self.document_ids(),
            resolved,
            fields,
        )?;
        Ok(term_counts(&found, resolved.len()))
    }

    /// The parsed query's terms resolved against this commit's dictionary and synonyms.
    fn resolve(&self, parsed: &ParsedQuery) -> ShardResult<Vec<ResolvedTerm>> {
        let dictionary = self.dictionary()?;
        Ok(resolve_terms(
            &dictionary,
            self.derivation_memo(),
            self.text_settings(),
            self.synonyms(),
            &parsed.terms,
        ))
    }

    /// The fields `query` searches and its `q` parsed in its languages (see
    /// [`query_languages`]). A blank `q` (a placeholder search) has no term in any language:
    /// the fields map is not read for it.
    fn analyse_query(
        &self,
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
        let settings = self.text_settings();
        let fields_map = self.fields_map()?;
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
    fn universe(&self, query: &SearchQuery, parsed: &ParsedQuery) -> ShardResult<RoaringBitmap> {
        let read = self.read_transaction();
        let mut universe = match &query.candidates {
            Some(candidates) => {
                debug_assert!(
                    candidates.is_subset(self.document_ids()),
                    "the candidates are a filter's answer on this snapshot"
                );
                candidates.clone()
            }
            None => self.document_ids().clone(),
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
        &self,
        context: &RankingContext<'_>,
        steps: &[Step],
        occurrences: &DocumentOccurrences,
        limits: &RankLimits,
    ) -> ShardResult<Vec<ShardHit>> {
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
        let tables = self.sort_tables(steps, &matching)?;
        let mut hits = Vec::with_capacity(kept_documents.len());
        let mut sources = DetailSources {
            tables: &tables,
            lengths: FieldLengthsReader::new(self.read_transaction())?,
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
            let mut details = self.details(
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

    /// Per sort step, the sort values of `documents`.
    pub(super) fn sort_tables(
        &self,
        steps: &[Step],
        documents: &RoaringBitmap,
    ) -> ShardResult<SortTables> {
        let read = self.read_transaction();
        let mut tables = Vec::new();
        for step in steps {
            match step {
                Step::Sort(rule) => tables.push(StepValues::Field(sort_values(
                    read,
                    &rule.field,
                    rule.ascending,
                    documents,
                )?)),
                Step::GeoSort(_) => tables.push(StepValues::Geo(geo_points(read, documents)?)),
                _ => {}
            }
        }
        Ok(tables)
    }

    /// The distinct values of `documents`, when a distinct attribute applies.
    fn distinct_table(
        &self,
        query: &SearchQuery,
        documents: &RoaringBitmap,
    ) -> ShardResult<Option<DistinctTable>> {
        let field = query
            .distinct
            .as_ref()
            .or(self.text_settings().distinct_attribute.as_ref());
        match field {
            Some(field) => Ok(Some(distinct_values(
                self.read_transaction(),
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
        &self,
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
            return self.sorted_placeholder(&sort_steps, universe, needed);
        }
        let sorting: Vec<&Step> = steps.iter().filter(|step| is_sort(step)).collect();
        let tables = self.sort_tables(steps, universe)?;
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
        &self,
        sort_steps: &[&SortRule],
        universe: &RoaringBitmap,
        needed: usize,
    ) -> ShardResult<ShardHits> {
        let rules: Vec<(&str, bool)> = sort_steps
            .iter()
            .map(|rule| (rule.field.as_str(), rule.ascending))
            .collect();
        let sorted = sorted_documents(self.read_transaction(), &rules, universe, needed)?;
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

    /// The details of `document` for each of `steps` (`sources` holds their sort values and
    /// reads field lengths).
    pub(super) fn details(
        &self,
        context: &RankingContext<'_>,
        steps: &[Step],
        sources: &mut DetailSources<'_, '_>,
        document: u32,
        kept: &Kept,
        occurrences: &[Vec<TermOccurrence>],
    ) -> ShardResult<Vec<ScoreDetail>> {
        let mut details = Vec::with_capacity(steps.len() + 1);
        let mut sort_index = 0;
        for step in steps {
            match step {
                Step::Words => details.push(context.words(kept)),
                Step::Typo => details.push(context.typo(kept, occurrences)),
                Step::Proximity => details.push(context.proximity(kept, occurrences)),
                Step::AttributeRank => details.push(context.attribute_rank(kept, occurrences)),
                Step::WordPosition => details.push(context.word_position(kept, occurrences)),
                Step::Exactness => {
                    let lengths = sources.lengths.lengths(document)?;
                    details.extend(context.exactness(kept, occurrences, lengths));
                }
                Step::Sort(_) | Step::GeoSort(_) => {
                    let detail = sources
                        .tables
                        .get(sort_index)
                        .and_then(|values| sort_detail(step, values, document))
                        .ok_or_else(|| ShardError::Corrupted("sort table".to_owned()))?;
                    details.push(detail);
                    sort_index += 1;
                }
            }
        }
        Ok(details)
    }
}

/// What per-document details read besides the occurrences: sort values and field lengths.
pub(super) struct DetailSources<'a, 't> {
    pub(super) tables: &'a SortTables,
    pub(super) lengths: FieldLengthsReader<'t>,
}

/// The field lengths of documents, read one document at a time; reading them in ascending
/// id order reuses the path of the previous lookup, and every document's lengths are decoded
/// into the same buffer (nothing is allocated per document).
pub(super) struct FieldLengthsReader<'t> {
    /// `None` when the shard has no field lengths tree yet.
    lookup: Option<PathLookup<'t>>,
    lengths: Vec<(u16, u16)>,
}

impl<'t> FieldLengthsReader<'t> {
    pub(super) fn new(read: &'t ReadTransaction) -> ShardResult<FieldLengthsReader<'t>> {
        let lookup = read
            .open_tree(FIELD_LENGTHS_TREE)?
            .map(|tree| tree.path_lookup());
        Ok(FieldLengthsReader {
            lookup,
            lengths: Vec::new(),
        })
    }

    /// One document's field lengths, until the next call.
    pub(super) fn lengths(&mut self, document: u32) -> ShardResult<FieldLengths<'_>> {
        self.lengths.clear();
        if let Some(lookup) = &mut self.lookup {
            if let Some(bytes) = lookup.get(&document.to_be_bytes())? {
                decode_field_lengths(bytes, &mut self.lengths)?;
            }
        }
        Ok(FieldLengths(&self.lengths))
    }
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

/// How far [`ShardSnapshot::rank`] ranks each document.
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

/// Orders hits, removes distinct duplicates, counts them (unless `total` is known), keeps the
/// first `needed`.
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
    if let Some(table) = distinct {
        let ordered: Vec<u32> = hits.iter().map(|hit| hit.id).collect();
        let kept = keep_distinct(&ordered, table);
        hits.retain(|hit| kept.contains(&hit.id));
        for hit in &mut hits {
            if let Some(values) = table.get(&hit.id) {
                hit.distinct_values = values.iter().cloned().collect();
            }
        }
    }
    let total = total.unwrap_or_else(|| {
        if distinct.is_some() {
            u64::try_from(hits.len()).unwrap_or(u64::MAX)
        } else {
            counted
        }
    });
    hits.truncate(needed);
    ShardHits {
        hits,
        total,
        attribute_unified,
        query_words,
        matching: RoaringBitmap::new(),
        query_languages: Vec::new(),
    }
}
