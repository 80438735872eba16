//! `POST /indexes/{index_uid}/facet-search`: the values of one facet among the documents a
//! search matches, filtered by a facet query.
//!
//! The body is decoded leniently, as Meilisearch does: unknown fields are ignored. The facet
//! must be facet-searchable (a `filterableAttributes` rule with `facetSearch`), and the index's
//! `facetSearch` setting must be on. Refusals carry no ``Index `uid`: `` prefix (Meilisearch's
//! facet search answers its engine's errors as they are), and list only displayed patterns. Every shard runs the search (no hits) and answers every
//! matching value with its count; values are added across shards, ordered by the facet's
//! `sortFacetValuesBy` (`alpha`: the order of the values' facet search forms with a facet
//! query, of their normalized forms without; `count`: most documents first) and cut at
//! `faceting.maxValuesPerFacet`. The facet query is analysed in the facet's `locales` (see
//! `shards::search::facet_values`).
//!
//! With a distinct attribute (the index's: a facet search has no `distinct` parameter), a
//! keyword search counts what Meilisearch counts: the matches distinct leaves once the first
//! 20 hits are ranked, or, under `exhaustiveFacetCount`, once distinct went over every match
//! in internal id order (see [`super::distinct`]).
//!
//! Invariant: counts are exact over the documents counted (the shards count from their facet
//! indexes).

use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Instant;

use deserr::Deserr;
use serde_json::{Map, Value, json};
use shards::filter::{FilterableRule, FilterableRules};
use shards::search::DistinctNarrowing;

use crate::coordinator::Coordinator;
use crate::coordinator::catalog::IndexRecord;
use crate::decode::JsonError;
use crate::errors::{Code, ResponseError, codes};
use crate::settings::locale::Locale;
use crate::settings::model::FacetValuesSort;

use super::distinct::facet_search_narrowings;
use super::parameters::{
    HybridParameter, MatchingStrategyParameter, RankingScoreThreshold, SearchBody,
};
use super::prepare::{EngineErrors, PreparedSearch, hidden_suffix, prepare_with, shown_names};
use super::shard_request::shard_request;
use crate::control::features::RuntimeFeatures;
use crate::host::facet_search::ShardFacetSearch;

/// The body of a facet search; unknown fields are ignored.
#[derive(Debug, Deserr)]
#[deserr(error = JsonError, rename_all = camelCase)]
pub struct FacetSearchBody {
    #[deserr(error = JsonError<codes::InvalidFacetSearchFacetName>, missing_field_error = JsonError::<codes::MissingFacetSearchFacetName>::missing_field)]
    facet_name: String,
    #[deserr(default, error = JsonError<codes::InvalidFacetSearchQuery>)]
    facet_query: Option<String>,
    #[deserr(default, error = JsonError<codes::InvalidSearchQ>)]
    q: Option<String>,
    #[deserr(default, error = JsonError<codes::InvalidSearchVector>)]
    vector: Option<Vec<f32>>,
    #[deserr(default, error = JsonError<codes::InvalidSearchMedia>)]
    media: Option<Value>,
    #[deserr(default, error = JsonError<codes::InvalidSearchHybridQuery>)]
    hybrid: Option<HybridParameter>,
    #[deserr(default, error = JsonError<codes::InvalidSearchFilter>)]
    filter: Option<Value>,
    #[deserr(default, error = JsonError<codes::InvalidSearchMatchingStrategy>)]
    matching_strategy: MatchingStrategyParameter,
    #[deserr(default, error = JsonError<codes::InvalidSearchAttributesToSearchOn>)]
    attributes_to_search_on: Option<Vec<String>>,
    #[deserr(default, error = JsonError<codes::InvalidSearchRankingScoreThreshold>)]
    ranking_score_threshold: Option<RankingScoreThreshold>,
    #[deserr(default, error = JsonError<codes::InvalidSearchLocales>)]
    locales: Option<Vec<Locale>>,
    /// Counts are always exact here, but with a distinct attribute Meilisearch counts the
    /// documents distinct leaves after its first 20 hits, or, with this, after a pass over
    /// every match.
    #[deserr(default, error = JsonError<codes::InvalidFacetSearchExhaustiveFacetCount>)]
    exhaustive_facet_count: Option<bool>,
    /// Across the network (Meilisearch 1.50; see [`super::network_facet_search`]).
    #[deserr(default, error = JsonError<codes::InvalidSearchUseNetwork>)]
    use_network: Option<bool>,
}

impl FacetSearchBody {
    /// `useNetwork`, as the body gives it.
    pub fn use_network(&self) -> Option<bool> {
        self.use_network
    }

    /// The facet searched.
    pub fn facet_name(&self) -> &str {
        &self.facet_name
    }

    /// `facetQuery`, as the body gives it.
    pub fn facet_query(&self) -> Option<&str> {
        self.facet_query.as_deref()
    }

    /// Takes the body's filter out.
    pub fn take_filter(&mut self) -> Option<Value> {
        self.filter.take()
    }

    /// Replaces the body's filter.
    pub fn set_filter(&mut self, filter: Option<Value>) {
        self.filter = filter;
    }
}

/// The search whose candidates the facet values are counted over: the body's query,
/// vector, filter (with the tenant token's) and matching options, asking for no hits.
fn candidates_search(body: &mut FacetSearchBody, tenant_filter: Option<Value>) -> SearchBody {
    let mut search = SearchBody::empty();
    search.q = body.q.take();
    search.vector = body.vector.take();
    search.media = body.media.take();
    search.hybrid = body.hybrid.take();
    search.filter = super::prepare::fuse_filters(tenant_filter, body.filter.take());
    search.matching_strategy = body.matching_strategy;
    search.attributes_to_search_on = body.attributes_to_search_on.take();
    search.ranking_score_threshold = body.ranking_score_threshold.take();
    search.locales = body.locales.take();
    search.limit = Some(0);
    search
}

/// Runs a facet search on `record`.
pub async fn facet_search(
    coordinator: &Rc<Coordinator>,
    record: &IndexRecord,
    mut body: FacetSearchBody,
    tenant_filter: Option<Value>,
    features: RuntimeFeatures,
) -> Result<Map<String, Value>, ResponseError> {
    let started = Instant::now();
    if !record.settings.facet_search {
        return Err(ResponseError::new(
            Code::FacetSearchDisabled,
            "The facet search is disabled for this index",
        ));
    }
    let rules =
        FilterableRules::from_setting(&record.settings.setting_view("filterableAttributes"))
            .map_err(ResponseError::internal)?;
    check_facet_searchable(record, &rules, &body.facet_name)?;
    let search = candidates_search(&mut body, tenant_filter);
    let prepared = prepare_with(
        record,
        search,
        features,
        coordinator.filter_shards(),
        EngineErrors::Plain,
    )?;
    let request = ShardFacetSearch {
        search: shard_request(&prepared),
        facet_name: body.facet_name.clone(),
        facet_query: body.facet_query.clone(),
        narrowing: None,
    };
    let exact = body.exhaustive_facet_count == Some(true);
    let mut narrowings = distinct_narrowings(coordinator, record, &prepared, &request, exact)
        .await?
        .into_iter()
        .map(Some)
        .collect::<Vec<_>>();
    let answers = coordinator
        .ask_every_shard(&record.shard_set(), |shard| {
            let mut request = request.clone();
            request.narrowing = narrowings.get_mut(shard as usize).and_then(Option::take);
            request
        })
        .await;
    let mut merged: MergedValues = BTreeMap::new();
    for answer in answers {
        let values =
            answer.map_err(|error| super::shard_request::index_filter_error(record, error))?;
        for value in values {
            let key = (value.order, value.normalized);
            merged.entry(key).or_insert((value.original, 0)).1 += value.count;
        }
    }
    let order = record
        .settings
        .sort_facet_values_by
        .get(&body.facet_name)
        .or_else(|| record.settings.sort_facet_values_by.get("*"))
        .copied()
        .unwrap_or_default();
    let hits = ordered_hits(merged, order, record.settings.max_values_per_facet);
    let mut result = Map::new();
    result.insert("facetHits".to_owned(), Value::Array(hits));
    result.insert(
        "facetQuery".to_owned(),
        body.facet_query.map_or(Value::Null, Value::String),
    );
    result.insert(
        "processingTimeMs".to_owned(),
        json!(started.elapsed().as_millis()),
    );
    Ok(result)
}

/// With a distinct attribute and a keyword search, what each shard counts (see
/// [`super::distinct`]); nothing otherwise (every match counts).
async fn distinct_narrowings(
    coordinator: &Rc<Coordinator>,
    record: &IndexRecord,
    prepared: &PreparedSearch,
    request: &ShardFacetSearch,
    exact: bool,
) -> Result<Vec<DistinctNarrowing>, ResponseError> {
    let (Some(field), None) = (&prepared.distinct, &prepared.semantic) else {
        return Ok(Vec::new());
    };
    let threshold = prepared
        .body
        .ranking_score_threshold
        .map(|threshold| threshold.0);
    facet_search_narrowings(
        coordinator,
        record,
        &request.search,
        field,
        exact,
        threshold,
    )
    .await
}

/// (order key, normalized value) → (one original spelling, documents), across shards.
type MergedValues = BTreeMap<(String, String), (String, u64)>;

/// At most `max` values as `{value, count}`, in the facet's order.
fn ordered_hits(merged: MergedValues, order: FacetValuesSort, max: usize) -> Vec<Value> {
    let mut values: Vec<(String, u64)> = merged.into_values().collect();
    if order == FacetValuesSort::Count {
        values.sort_by(|left, right| right.1.cmp(&left.1).then_with(|| right.0.cmp(&left.0)));
    }
    values
        .into_iter()
        .take(max)
        .map(|(value, count)| json!({"value": value, "count": count}))
        .collect()
}

/// The facet must match a filterable rule that enables facet search.
fn check_facet_searchable(
    record: &IndexRecord,
    rules: &FilterableRules,
    facet_name: &str,
) -> Result<(), ResponseError> {
    let matched = rules.matching_rule(facet_name);
    if matched.is_some_and(|(_, rule)| rule.facet_search()) {
        return Ok(());
    }
    let patterns = facet_searchable_patterns(rules);
    let (shown, hidden) = shown_names(record, patterns.iter().map(String::as_str));
    let detail = match (shown.is_empty(), matched) {
        (_, Some((index, _))) => format!(
            "Note: this attribute matches rule #{index} in filterableAttributes, but this rule does not enable facetSearch.\nHint: enable facetSearch in rule #{index} by adding `\"facetSearch\": true` to the rule.\nHint: prepend another rule matching {facet_name} with facetSearch: true before rule #{index}"
        ),
        (true, None) => "This index does not have configured facet-searchable attributes. To make it facet-searchable add it to the `filterableAttributes` index settings.".to_owned(),
        (false, None) => format!(
            "Available facet-searchable attributes patterns are: `{}{}`. To make it facet-searchable add it to the `filterableAttributes` index settings.",
            shown.join(", "),
            hidden_suffix(hidden)
        ),
    };
    // The facet search words its refusals without the index, as Meilisearch does.
    Err(ResponseError::new(
        Code::InvalidFacetSearchFacetName,
        format!("Attribute `{facet_name}` is not facet-searchable. {detail}"),
    ))
}

/// The patterns of the rules that enable facet search, sorted.
fn facet_searchable_patterns(rules: &FilterableRules) -> Vec<String> {
    let mut patterns: Vec<String> = rules
        .rules()
        .iter()
        .filter(|rule| rule.facet_search())
        .flat_map(|rule| match rule {
            FilterableRule::Field(field) => vec![field.clone()],
            FilterableRule::Patterns {
                attribute_patterns, ..
            } => attribute_patterns.clone(),
        })
        .collect();
    patterns.sort();
    patterns.dedup();
    patterns
}
