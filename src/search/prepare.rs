//! Checking one decoded search against its index and turning it into what the shards run:
//! the filter (parsed, each attribute filterable), the sort rules (each sortable, the `sort`
//! ranking rule present), `distinct` (filterable), `facets` (filterable), and
//! `attributesToSearchOn` (searchable), and the effective window of hits.
//!
//! Invariants: every refusal carries Meilisearch's code and message, with the
//! ``Index `uid`: `` prefix where Meilisearch's engine adds it; `offset` is clamped to
//! `pagination.maxTotalHits` and `limit` to what remains of it, as Meilisearch does.

use std::time::{Duration, Instant};

use serde_json::Value;
use shards::filter::{FacetRefusal, Filter, FilterableRules, check_filterable};
use shards::network_shards::NetworkShards;
use shards::search::SearchSort;
use shards::search::geo_sort::GeoSort;
use shards::shard::SortRule;

use crate::control::features::RuntimeFeatures;
use crate::coordinator::catalog::IndexRecord;
use crate::errors::{Code, ResponseError};
use crate::settings::embedder_specs::{embedder_distribution, embedder_spec};
use crate::settings::ranking_rule::RankingRule;

use super::parameters::{SEARCH_LIMIT_DEFAULT, SearchBody, sort_rule_parts};
use super::sort_member::{SortMember, parse_sort_member};

/// `hybrid.semanticRatio` when absent.
const SEMANTIC_RATIO_DEFAULT: f32 = 0.5;

/// A search ready to be sent to the shards.
#[derive(Debug, Clone)]
pub struct PreparedSearch {
    pub body: SearchBody,
    pub filter: Option<Filter>,
    pub sort: Vec<SearchSort>,
    /// `distinct`, from the parameter or the index's setting.
    pub distinct: Option<String>,
    /// Hits skipped, after clamping.
    pub offset: usize,
    /// Hits returned at most, after clamping.
    pub limit: usize,
    pub max_total_hits: usize,
    /// `searchCutoffMs` after the search was prepared: past it, the shards stop ranking and
    /// answer with what they have (`None` when the budget overflows the clock).
    pub deadline: Option<Instant>,
    /// The semantic part of a `hybrid` search (`None`: keyword only).
    pub semantic: Option<SemanticSearch>,
    /// The documents dynamic search rules pin for this query, by position (see
    /// [`super::pins`]); empty once they are placed apart from the ranking.
    pub pins: Vec<super::pins::Pin>,
    /// The ids of every pinned document, which the ranking leaves out.
    pub pinned_documents: Option<std::sync::Arc<Vec<String>>>,
}

/// The semantic part of a search: the embedder, the share of the semantic ranking in the
/// fusion, and the query vector when given.
#[derive(Debug, Clone, PartialEq)]
pub struct SemanticSearch {
    pub embedder: String,
    /// `hybrid.semanticRatio` (1: semantic only).
    pub ratio: f32,
    /// `vector`; `None` means `q` (or `media`) is to be embedded.
    pub vector: Option<Vec<f32>>,
    /// `media`, embedded through the embedder's search fragments.
    pub media: Option<Value>,
    /// Whether only the semantic ranking answers (a ratio of 1, or no query text): then a
    /// query that cannot be embedded is an error, not a keyword search.
    pub semantic_only: bool,
    /// The embedder's `distribution` as `(mean, sigma)`.
    pub distribution: Option<(f64, f64)>,
}

impl PreparedSearch {
    /// Whether `page` or `hitsPerPage` was given.
    pub fn is_page_mode(&self) -> bool {
        self.body.is_page_mode()
    }
}

/// Meilisearch's search budget when `searchCutoffMs` is not set.
pub const SEARCH_CUTOFF_MS_DEFAULT: u64 = 1_500;

/// The discussion `feature_not_enabled` points to for `media`.
const MULTIMODAL_LINK: &str = "https://github.com/orgs/meilisearch/discussions/846";

/// How a route words the refusals Meilisearch's engine makes (an attribute that cannot be
/// filtered, sorted, searched or used as distinct): `search` and multi-search put the
/// ``Index `uid`: `` prefix before them, the facet search and similar documents do not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineErrors {
    Prefixed,
    Plain,
}

/// Checks `body` against `record`'s settings and the experimental `features`, for `search`
/// and multi-search; the filter's `_shard` conditions name `filter_shards` (see
/// [`Filter::with_network_shards`]).
pub fn prepare(
    record: &IndexRecord,
    body: SearchBody,
    features: RuntimeFeatures,
    filter_shards: Option<NetworkShards>,
) -> Result<PreparedSearch, ResponseError> {
    prepare_with(
        record,
        body,
        features,
        filter_shards,
        EngineErrors::Prefixed,
    )
}

/// Checks `body` against `record`'s settings and the experimental `features`, in
/// Meilisearch's order: the kind of search (`hybrid`, `vector`, `media`), the `media` gate,
/// the filter (syntax, then its gated operators, then its attributes), then the rest; the
/// engine's refusals worded as `errors` says.
pub fn prepare_with(
    record: &IndexRecord,
    body: SearchBody,
    features: RuntimeFeatures,
    filter_shards: Option<NetworkShards>,
    errors: EngineErrors,
) -> Result<PreparedSearch, ResponseError> {
    let settings = &record.settings;
    let engine = Engine { record, errors };
    let semantic = check_hybrid(record, &body)?;
    if body.media.is_some() && !features.multimodal {
        return Err(ResponseError::feature_not_enabled(
            "passing `media` in a search query",
            "multimodal",
            MULTIMODAL_LINK,
        ));
    }
    let rules = FilterableRules::from_setting(&settings.setting_view("filterableAttributes"))
        .map_err(ResponseError::internal)?;
    let filter = match &body.filter {
        Some(value) => parse_filter(&engine, &rules, value, features)?
            .map(|filter| filter.with_network_shards(filter_shards)),
        None => None,
    };
    let sort = match &body.sort {
        Some(rules) => parse_sort(&engine, rules)?,
        None => Vec::new(),
    };
    if let Some(distinct) = &body.distinct {
        check_distinct(&engine, &rules, distinct)?;
    }
    if let Some(facets) = &body.facets {
        // Meilisearch words a facet distribution's refusal without the index.
        check_facets(&rules, facets)
            .map_err(|message| ResponseError::new(Code::InvalidSearchFacets, message))?;
    }
    if let Some(attributes) = &body.attributes_to_search_on {
        check_searchable(&engine, attributes)?;
    }
    let max_total_hits = settings.max_total_hits;
    let (offset, limit) = window(&body);
    let offset = offset.min(max_total_hits);
    let limit = limit.min(max_total_hits.saturating_sub(offset));
    let distinct = body
        .distinct
        .clone()
        .or_else(|| settings.distinct_attribute.clone());
    let budget = settings
        .search_cutoff_ms
        .unwrap_or(SEARCH_CUTOFF_MS_DEFAULT);
    Ok(PreparedSearch {
        semantic,
        body,
        filter,
        sort,
        distinct,
        offset,
        limit,
        max_total_hits,
        deadline: Instant::now().checked_add(Duration::from_millis(budget)),
        pins: Vec::new(),
        pinned_documents: None,
    })
}

/// The requested `(offset, limit)`: from `page`/`hitsPerPage` in page mode (page 0 asks for
/// nothing), else from `offset`/`limit`.
fn window(body: &SearchBody) -> (usize, usize) {
    if body.is_page_mode() {
        let hits_per_page = body.hits_per_page.unwrap_or(SEARCH_LIMIT_DEFAULT);
        match body.page.unwrap_or(1).checked_sub(1) {
            Some(previous_pages) => (previous_pages.saturating_mul(hits_per_page), hits_per_page),
            None => (0, 0),
        }
    } else {
        (
            body.offset.unwrap_or(0),
            body.limit.unwrap_or(SEARCH_LIMIT_DEFAULT),
        )
    }
}

/// The index searched and how its engine's refusals are worded.
struct Engine<'a> {
    record: &'a IndexRecord,
    errors: EngineErrors,
}

impl Engine<'_> {
    /// A refusal of the index's engine.
    fn error(&self, code: Code, message: String) -> ResponseError {
        match self.errors {
            EngineErrors::Prefixed => {
                ResponseError::new(code, format!("Index `{}`: {message}", self.record.uid))
            }
            EngineErrors::Plain => ResponseError::new(code, message),
        }
    }

    /// `names` in order without those `displayedAttributes` hides, and whether any was
    /// hidden (Meilisearch's engine lists only displayed attributes in its refusals).
    fn shown<'n>(&self, names: impl IntoIterator<Item = &'n str>) -> (Vec<&'n str>, bool) {
        shown_names(self.record, names)
    }
}

/// `names`, sorted, without those `displayedAttributes` of `record` hides, and whether any
/// was hidden.
pub fn shown_names<'n>(
    record: &IndexRecord,
    names: impl IntoIterator<Item = &'n str>,
) -> (Vec<&'n str>, bool) {
    let all: std::collections::BTreeSet<&str> = names.into_iter().collect();
    let count = all.len();
    let shown: Vec<&str> = match &record.settings.displayed_attributes {
        None => all.into_iter().collect(),
        Some(displayed) => all
            .into_iter()
            .filter(|name| displayed.iter().any(|shown| shown == name))
            .collect(),
    };
    let hidden = shown.len() < count;
    (shown, hidden)
}

/// The suffix Meilisearch adds to a list of attributes some of which are hidden.
pub fn hidden_suffix(hidden: bool) -> &'static str {
    if hidden {
        ", <..hidden-attributes>"
    } else {
        ""
    }
}

fn parse_filter(
    engine: &Engine<'_>,
    rules: &FilterableRules,
    value: &Value,
    features: RuntimeFeatures,
) -> Result<Option<Filter>, ResponseError> {
    let filter = Filter::from_json(value)
        .map_err(|error| ResponseError::new(Code::InvalidSearchFilter, error.message))?;
    if let Some(filter) = &filter {
        check_filter_features(filter, features)?;
        check_filterable(filter, rules)
            .map_err(|error| engine.error(Code::InvalidSearchFilter, error.message))?;
    }
    Ok(filter)
}

/// 400 `feature_not_enabled` when `filter` uses an operator whose experimental feature is
/// off (`CONTAINS`, `_shard`, vector filters), pointing at it in the filter.
pub fn check_filter_features(
    filter: &Filter,
    features: RuntimeFeatures,
) -> Result<(), ResponseError> {
    filter
        .check_features(features.filter_features())
        .map_err(|error| ResponseError::new(Code::FeatureNotEnabled, error.message))
}

/// `sort`: `field:asc|desc` rules and `_geoPoint(lat, lng):asc|desc` rules, checked in
/// Meilisearch's order: each rule's syntax, then the `sort` ranking rule, then each field
/// sortable (`_geo` for a geo rule).
fn parse_sort(engine: &Engine<'_>, rules: &[String]) -> Result<Vec<SearchSort>, ResponseError> {
    let settings = &engine.record.settings;
    let mut parsed = Vec::with_capacity(rules.len());
    for rule in rules {
        let (member, ascending) = sort_rule_parts(rule, Code::InvalidSearchSort)?;
        parsed.push(match parse_sort_member(member)? {
            SortMember::Field(field) => SearchSort::Field(SortRule {
                field: field.to_owned(),
                ascending,
            }),
            SortMember::GeoPoint(point) => SearchSort::Geo(GeoSort { point, ascending }),
        });
    }
    if !parsed.is_empty() && !settings.ranking_rules.contains(&RankingRule::Sort) {
        return Err(engine.error(
            Code::InvalidSearchSort,
            "You must specify where `sort` is listed in the rankingRules setting to use the sort parameter at search time.".to_owned(),
        ));
    }
    for sort in &parsed {
        let field = match sort {
            SearchSort::Field(rule) => rule.field.as_str(),
            SearchSort::Geo(_) => "_geo",
        };
        if settings.sortable_attributes.contains(field) {
            continue;
        }
        let available = if settings.sortable_attributes.is_empty() {
            "This index does not have configured sortable attributes.".to_owned()
        } else {
            let (shown, hidden) =
                engine.shown(settings.sortable_attributes.iter().map(String::as_str));
            format!(
                "Available sortable attributes are: `{}{}`.",
                shown.join(", "),
                hidden_suffix(hidden)
            )
        };
        return Err(engine.error(
            Code::InvalidSearchSort,
            format!("Attribute `{field}` is not sortable. {available}"),
        ));
    }
    Ok(parsed)
}

/// The filterable patterns as Meilisearch lists them in its messages.
fn filterable_list(rules: &FilterableRules) -> String {
    let patterns: Vec<&str> = rules.filterable_patterns().into_iter().collect();
    patterns.join(", ")
}

fn check_distinct(
    engine: &Engine<'_>,
    rules: &FilterableRules,
    distinct: &str,
) -> Result<(), ResponseError> {
    if rules.is_filterable(distinct) {
        return Ok(());
    }
    let detail = match rules.matching_rule(distinct) {
        Some((index, _)) => format!(
            "Note: this attribute matches rule #{index} in filterableAttributes, but this rule does not enable filtering.\nHint: enable filtering in rule #{index} by adding appropriate filter features.\nHint: prepend another rule matching {distinct} with filter features before rule #{index}"
        ),
        None if rules.filterable_patterns().is_empty() => {
            "This index does not have configured filterable attributes.".to_owned()
        }
        None => {
            let (shown, hidden) = engine.shown(rules.filterable_patterns());
            format!(
                "Available filterable attributes patterns are: `{}{}`.",
                shown.join(", "),
                hidden_suffix(hidden)
            )
        }
    };
    Err(engine.error(
        Code::InvalidSearchDistinct,
        format!(
            "Attribute `{distinct}` is not filterable and thus, cannot be used as distinct attribute. {detail}"
        ),
    ))
}

/// Every facet pattern must meet a filterable rule (see
/// [`FilterableRules::check_facet_patterns`]); the refusal names the first that does not,
/// worded as Meilisearch 1.50 words it, with the filterable patterns.
pub fn check_facets(rules: &FilterableRules, facets: &[String]) -> Result<(), String> {
    let message = match rules.check_facet_patterns(facets) {
        Ok(()) => return Ok(()),
        Err(FacetRefusal::RuleWithoutFiltering {
            pattern,
            rule_index,
        }) => format!(
            "Attribute `{pattern}` matched rule #{rule_index} in filterableAttributes, but this rule does not enable filtering.\nHint: enable filtering in rule #{rule_index} by modifying the features.filter object\nHint: prepend another rule matching `{pattern}` with appropriate filter features before rule #{rule_index}"
        ),
        Err(FacetRefusal::NotFilterable { pattern }) => {
            let patterns = filterable_list(rules);
            if patterns.is_empty() {
                format!(
                    "Pattern `{pattern}` is not filterable. This index does not have configured filterable attributes."
                )
            } else {
                format!(
                    "Pattern `{pattern}` is not filterable. Available filterable attributes patterns are: `{patterns}`."
                )
            }
        }
    };
    Err(format!("Invalid facet distribution: {message}"))
}

/// `attributesToSearchOn`: each attribute searchable (any, when every attribute is).
fn check_searchable(engine: &Engine<'_>, attributes: &[String]) -> Result<(), ResponseError> {
    let record = engine.record;
    let Some(searchable) = &record.settings.searchable_attributes else {
        return Ok(());
    };
    for attribute in attributes {
        let allowed = searchable.iter().any(|field| {
            attribute == field
                || attribute
                    .strip_prefix(field.as_str())
                    .is_some_and(|rest| rest.starts_with('.'))
        });
        if allowed {
            continue;
        }
        let (shown, hidden) = engine.shown(searchable.iter().map(String::as_str));
        return Err(engine.error(
            Code::InvalidSearchAttributesToSearchOn,
            format!(
                "Attribute `{attribute}` is not searchable. Available searchable attributes are: `{}{}`.",
                shown.join(", "),
                hidden_suffix(hidden)
            ),
        ));
    }
    Ok(())
}

/// `hybrid`, `vector` and `media`, in Meilisearch's order of cases: a semantic ratio of 0,
/// or no query text, vector or media, is a keyword search whatever the embedder; anything
/// else needs the embedder to exist and vectors to search.
fn check_hybrid(
    record: &IndexRecord,
    body: &SearchBody,
) -> Result<Option<SemanticSearch>, ResponseError> {
    let has_text = body.q.as_deref().is_some_and(|q| !q.trim().is_empty());
    if body.media.is_some() && body.vector.is_some() {
        return Err(ResponseError::new(
            Code::InvalidSearchMediaAndVector,
            "Invalid request: both `media` and `vector` parameters are present.",
        ));
    }
    let Some(hybrid) = &body.hybrid else {
        if body.vector.is_some() || body.media.is_some() {
            return Err(ResponseError::new(
                Code::MissingSearchHybrid,
                "Invalid request: missing `hybrid` parameter when `vector` or `media` are present.",
            ));
        }
        return Ok(None);
    };
    let ratio = hybrid.semantic_ratio.unwrap_or(SEMANTIC_RATIO_DEFAULT);
    if !(0.0..=1.0).contains(&ratio) {
        return Err(ResponseError::new(
            Code::InvalidSearchSemanticRatio,
            "Invalid value at `.hybrid.semanticRatio`: the value of `semanticRatio` is invalid, expected a float between `0.0` and `1.0`.",
        ));
    }
    let keyword_only = ratio == 0.0 || (body.media.is_none() && !has_text && body.vector.is_none());
    if keyword_only {
        return Ok(None);
    }
    let Some(fields) = record.settings.embedders.get(&hybrid.embedder) else {
        return Err(ResponseError::new(
            Code::InvalidSearchEmbedder,
            format!("Cannot find embedder with name `{}`.", hybrid.embedder),
        ));
    };
    let spec = embedder_spec(&record.settings, &hybrid.embedder);
    if let (Some(vector), Some(spec)) = (&body.vector, &spec)
        && vector.len() != spec.dimensions
    {
        return Err(ResponseError::new(
            Code::InvalidVectorDimensions,
            format!(
                "Invalid vector dimensions: expected: `{}`, found: `{}`.",
                spec.dimensions,
                vector.len()
            ),
        ));
    }
    Ok(Some(SemanticSearch {
        embedder: hybrid.embedder.clone(),
        ratio,
        vector: body.vector.clone(),
        media: body.media.clone(),
        semantic_only: ratio >= 1.0 || !has_text,
        distribution: embedder_distribution(fields),
    }))
}

/// Two filters AND-ed in the array form: each side's top-level items side by side.
pub fn fuse_filters(left: Option<Value>, right: Option<Value>) -> Option<Value> {
    match (left, right) {
        (None, right) => right,
        (left, None) => left,
        (Some(left), Some(right)) => {
            let mut items = into_items(left);
            items.extend(into_items(right));
            Some(Value::Array(items))
        }
    }
}

fn into_items(filter: Value) -> Vec<Value> {
    match filter {
        Value::Array(items) => items,
        other => vec![other],
    }
}
