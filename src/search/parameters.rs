//! The parameters of one search, decoded from a `POST` body ([`SearchBody`]), a `GET` query
//! string ([`SearchQueryString`], converted with [`SearchQueryString::into_body`]) or one
//! query of a multi-search (decoded at its own location, see `search::multi`).
//!
//! Invariants: every parameter has Meilisearch's name, default and error code; unknown fields
//! are refused; values are only decoded here — checks that need the index (filterable, sortable,
//! searchable attributes) belong to `search::prepare`.

use deserr::{DeserializeError, Deserr, ValuePointerRef};
use serde_json::Value;

use crate::decode::{JsonError, Param, QueryError};
use crate::errors::codes;
use crate::settings::locale::Locale;

/// Default `limit` (and `hitsPerPage` in page mode).
pub const SEARCH_LIMIT_DEFAULT: usize = 20;
/// Default `cropLength`, in words.
pub const CROP_LENGTH_DEFAULT: usize = 10;
/// Default `cropMarker`.
pub const CROP_MARKER_DEFAULT: &str = "…";
/// Default `highlightPreTag`.
pub const HIGHLIGHT_PRE_TAG_DEFAULT: &str = "<em>";
/// Default `highlightPostTag`.
pub const HIGHLIGHT_POST_TAG_DEFAULT: &str = "</em>";

/// `matchingStrategy`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserr, serde::Serialize)]
#[deserr(rename_all = camelCase)]
#[serde(rename_all = "camelCase")]
pub enum MatchingStrategyParameter {
    #[default]
    Last,
    All,
    Frequency,
}

/// `rankingScoreThreshold`: a float within `0.0..=1.0`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
#[serde(transparent)]
pub struct RankingScoreThreshold(pub f64);

/// Why a ranking score threshold was refused.
#[derive(Debug)]
pub struct ThresholdOutOfRange;

impl std::fmt::Display for ThresholdOutOfRange {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(
            "the value of `rankingScoreThreshold` is invalid, expected a float between `0.0` and `1.0`.",
        )
    }
}

impl std::error::Error for ThresholdOutOfRange {}

impl RankingScoreThreshold {
    fn checked(value: f64) -> Result<RankingScoreThreshold, ThresholdOutOfRange> {
        if (0.0..=1.0).contains(&value) {
            Ok(RankingScoreThreshold(value))
        } else {
            Err(ThresholdOutOfRange)
        }
    }
}

impl<E> Deserr<E> for RankingScoreThreshold
where
    E: DeserializeError + deserr::MergeWithError<ThresholdOutOfRange>,
{
    fn deserialize_from_value<V: deserr::IntoValue>(
        value: deserr::Value<V>,
        location: ValuePointerRef,
    ) -> Result<Self, E> {
        let number = f64::deserialize_from_value(value, location)?;
        RankingScoreThreshold::checked(number)
            .map_err(|error| deserr::take_cf_content(E::merge(None, error, location)))
    }
}

impl crate::decode::FromQueryParameter for RankingScoreThreshold {
    type Err = QueryFloatError;

    fn from_query_parameter(text: &str) -> Result<Self, QueryFloatError> {
        let number: f64 = text
            .parse()
            .map_err(|_| QueryFloatError::NotAFloat(text.to_owned()))?;
        RankingScoreThreshold::checked(number).map_err(|_| QueryFloatError::OutOfRange)
    }
}

/// A float query parameter that did not parse or is out of range.
#[derive(Debug)]
pub enum QueryFloatError {
    NotAFloat(String),
    OutOfRange,
}

impl std::fmt::Display for QueryFloatError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            QueryFloatError::NotAFloat(text) => {
                write!(formatter, "could not parse `{text}` as a float")
            }
            QueryFloatError::OutOfRange => ThresholdOutOfRange.fmt(formatter),
        }
    }
}

impl std::error::Error for QueryFloatError {}

/// `hybrid`.
#[derive(Debug, Clone, PartialEq, Deserr, serde::Serialize)]
#[deserr(error = JsonError<codes::InvalidSearchHybridQuery>, rename_all = camelCase, deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct HybridParameter {
    #[deserr(default, error = JsonError<codes::InvalidSearchSemanticRatio>)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub semantic_ratio: Option<f32>,
    #[deserr(error = JsonError<codes::InvalidSearchEmbedder>)]
    pub embedder: String,
}

/// `personalize`.
#[derive(Debug, Clone, PartialEq, Deserr, serde::Serialize)]
#[deserr(error = JsonError<codes::InvalidSearchPersonalize>, rename_all = camelCase, deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct PersonalizeParameter {
    #[deserr(error = JsonError<codes::InvalidSearchPersonalizeUserContext>)]
    pub user_context: String,
}

/// Every parameter of one search, as a `POST /indexes/{uid}/search` body carries them.
///
/// It serializes back to the same JSON (absent options left out), which is what a remote
/// instance is sent when this search runs across the network.
#[derive(Debug, Clone, Deserr, serde::Serialize)]
#[deserr(error = JsonError, rename_all = camelCase, deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct SearchBody {
    #[deserr(default, error = JsonError<codes::InvalidSearchQ>)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub q: Option<String>,
    #[deserr(default, error = JsonError<codes::InvalidSearchOffset>)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<usize>,
    #[deserr(default, error = JsonError<codes::InvalidSearchLimit>)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    #[deserr(default, error = JsonError<codes::InvalidSearchPage>)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page: Option<usize>,
    #[deserr(default, error = JsonError<codes::InvalidSearchHitsPerPage>)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hits_per_page: Option<usize>,
    #[deserr(default, error = JsonError<codes::InvalidSearchAttributesToRetrieve>)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attributes_to_retrieve: Option<Vec<String>>,
    #[deserr(default, error = JsonError<codes::InvalidSearchAttributesToCrop>)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attributes_to_crop: Option<Vec<String>>,
    #[deserr(default = CROP_LENGTH_DEFAULT, error = JsonError<codes::InvalidSearchCropLength>)]
    pub crop_length: usize,
    #[deserr(default = CROP_MARKER_DEFAULT.to_owned(), error = JsonError<codes::InvalidSearchCropMarker>)]
    pub crop_marker: String,
    #[deserr(default, error = JsonError<codes::InvalidSearchAttributesToHighlight>)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attributes_to_highlight: Option<Vec<String>>,
    #[deserr(default = HIGHLIGHT_PRE_TAG_DEFAULT.to_owned(), error = JsonError<codes::InvalidSearchHighlightPreTag>)]
    pub highlight_pre_tag: String,
    #[deserr(default = HIGHLIGHT_POST_TAG_DEFAULT.to_owned(), error = JsonError<codes::InvalidSearchHighlightPostTag>)]
    pub highlight_post_tag: String,
    #[deserr(default, error = JsonError<codes::InvalidSearchShowMatchesPosition>)]
    pub show_matches_position: bool,
    #[deserr(default, error = JsonError<codes::InvalidSearchFilter>)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filter: Option<Value>,
    #[deserr(default, error = JsonError<codes::InvalidSearchSort>)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sort: Option<Vec<String>>,
    #[deserr(default, error = JsonError<codes::InvalidSearchDistinct>)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub distinct: Option<String>,
    #[deserr(default, error = JsonError<codes::InvalidSearchFacets>)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub facets: Option<Vec<String>>,
    #[deserr(default, error = JsonError<codes::InvalidSearchMatchingStrategy>)]
    pub matching_strategy: MatchingStrategyParameter,
    #[deserr(default, error = JsonError<codes::InvalidSearchAttributesToSearchOn>)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attributes_to_search_on: Option<Vec<String>>,
    #[deserr(default, error = JsonError<codes::InvalidSearchRankingScoreThreshold>)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ranking_score_threshold: Option<RankingScoreThreshold>,
    #[deserr(default, error = JsonError<codes::InvalidSearchLocales>)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub locales: Option<Vec<Locale>>,
    #[deserr(default, error = JsonError<codes::InvalidSearchHybridQuery>)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hybrid: Option<HybridParameter>,
    #[deserr(default, error = JsonError<codes::InvalidSearchVector>)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vector: Option<Vec<f32>>,
    #[deserr(default, error = JsonError<codes::InvalidSearchRetrieveVectors>)]
    pub retrieve_vectors: bool,
    #[deserr(default, error = JsonError<codes::InvalidSearchMedia>)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub media: Option<Value>,
    #[deserr(default, error = JsonError<codes::InvalidSearchPersonalize>)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub personalize: Option<PersonalizeParameter>,
    #[deserr(default, error = JsonError<codes::InvalidSearchUseNetwork>)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub use_network: Option<bool>,
    #[deserr(default, error = JsonError<codes::InvalidSearchShowRankingScore>)]
    pub show_ranking_score: bool,
    #[deserr(default, error = JsonError<codes::InvalidSearchShowRankingScoreDetails>)]
    pub show_ranking_score_details: bool,
    /// Left out of the JSON when `false`: a Meilisearch remote refuses the field in a federated
    /// query even when `false`.
    #[deserr(default, error = JsonError<codes::InvalidSearchShowPerformanceDetails>)]
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub show_performance_details: bool,
}

impl SearchBody {
    /// Whether `page` or `hitsPerPage` asks for page mode (an exhaustive count).
    pub fn is_page_mode(&self) -> bool {
        self.page.is_some() || self.hits_per_page.is_some()
    }

    /// The body without its page (`offset`, `limit`, `page`, `hitsPerPage`), as JSON: what
    /// every page of one search has in common.
    pub fn without_page_json(&self) -> Result<String, serde_json::Error> {
        let mut body = self.clone();
        body.offset = None;
        body.limit = None;
        body.page = None;
        body.hits_per_page = None;
        serde_json::to_string(&body)
    }

    /// A body with every parameter at its default.
    pub fn empty() -> SearchBody {
        SearchBody {
            q: None,
            offset: None,
            limit: None,
            page: None,
            hits_per_page: None,
            attributes_to_retrieve: None,
            attributes_to_crop: None,
            crop_length: CROP_LENGTH_DEFAULT,
            crop_marker: CROP_MARKER_DEFAULT.to_owned(),
            attributes_to_highlight: None,
            highlight_pre_tag: HIGHLIGHT_PRE_TAG_DEFAULT.to_owned(),
            highlight_post_tag: HIGHLIGHT_POST_TAG_DEFAULT.to_owned(),
            show_matches_position: false,
            filter: None,
            sort: None,
            distinct: None,
            facets: None,
            matching_strategy: MatchingStrategyParameter::Last,
            attributes_to_search_on: None,
            ranking_score_threshold: None,
            locales: None,
            hybrid: None,
            vector: None,
            retrieve_vectors: false,
            media: None,
            personalize: None,
            use_network: None,
            show_ranking_score: false,
            show_ranking_score_details: false,
            show_performance_details: false,
        }
    }
}

/// `matchingStrategy` as a query parameter.
impl crate::decode::FromQueryParameter for MatchingStrategyParameter {
    type Err = UnknownStrategy;

    fn from_query_parameter(text: &str) -> Result<Self, UnknownStrategy> {
        match text {
            "last" => Ok(MatchingStrategyParameter::Last),
            "all" => Ok(MatchingStrategyParameter::All),
            "frequency" => Ok(MatchingStrategyParameter::Frequency),
            other => Err(UnknownStrategy(other.to_owned())),
        }
    }
}

/// A `matchingStrategy` query value that names no strategy.
#[derive(Debug)]
pub struct UnknownStrategy(String);

impl std::fmt::Display for UnknownStrategy {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            formatter,
            "Unknown value `{}`, expected one of `last`, `all`, `frequency`",
            self.0
        )
    }
}

impl std::error::Error for UnknownStrategy {}

/// The parameters of `GET /indexes/{uid}/search`, each a string.
#[derive(Debug, Deserr)]
#[deserr(error = QueryError, rename_all = camelCase, deny_unknown_fields)]
pub struct SearchQueryString {
    // In Meilisearch's order: an unknown parameter's message lists them so.
    #[deserr(default, error = QueryError<codes::InvalidSearchQ>)]
    q: Option<String>,
    #[deserr(default, error = QueryError<codes::InvalidSearchOffset>)]
    offset: Option<Param<usize>>,
    #[deserr(default, error = QueryError<codes::InvalidSearchLimit>)]
    limit: Option<Param<usize>>,
    #[deserr(default, error = QueryError<codes::InvalidSearchPage>)]
    page: Option<Param<usize>>,
    #[deserr(default, error = QueryError<codes::InvalidSearchHitsPerPage>)]
    hits_per_page: Option<Param<usize>>,
    #[deserr(default, error = QueryError<codes::InvalidSearchAttributesToRetrieve>)]
    attributes_to_retrieve: Option<String>,
    #[deserr(default, error = QueryError<codes::InvalidSearchAttributesToCrop>)]
    attributes_to_crop: Option<String>,
    #[deserr(default, error = QueryError<codes::InvalidSearchCropLength>)]
    crop_length: Option<Param<usize>>,
    #[deserr(default, error = QueryError<codes::InvalidSearchCropMarker>)]
    crop_marker: Option<String>,
    #[deserr(default, error = QueryError<codes::InvalidSearchAttributesToHighlight>)]
    attributes_to_highlight: Option<String>,
    #[deserr(default, error = QueryError<codes::InvalidSearchHighlightPreTag>)]
    highlight_pre_tag: Option<String>,
    #[deserr(default, error = QueryError<codes::InvalidSearchHighlightPostTag>)]
    highlight_post_tag: Option<String>,
    #[deserr(default, error = QueryError<codes::InvalidSearchShowMatchesPosition>)]
    show_matches_position: Option<Param<bool>>,
    #[deserr(default, error = QueryError<codes::InvalidSearchFilter>)]
    filter: Option<String>,
    #[deserr(default, error = QueryError<codes::InvalidSearchSort>)]
    sort: Option<String>,
    #[deserr(default, error = QueryError<codes::InvalidSearchDistinct>)]
    distinct: Option<String>,
    #[deserr(default, error = QueryError<codes::InvalidSearchFacets>)]
    facets: Option<String>,
    #[deserr(default, error = QueryError<codes::InvalidSearchMatchingStrategy>)]
    matching_strategy: Option<Param<MatchingStrategyParameter>>,
    #[deserr(default, error = QueryError<codes::InvalidSearchAttributesToSearchOn>)]
    attributes_to_search_on: Option<String>,
    #[deserr(default, error = QueryError<codes::InvalidSearchRankingScoreThreshold>)]
    ranking_score_threshold: Option<Param<RankingScoreThreshold>>,
    #[deserr(default, error = QueryError<codes::InvalidSearchLocales>)]
    locales: Option<String>,
    #[deserr(default, error = QueryError<codes::InvalidSearchEmbedder>)]
    hybrid_embedder: Option<String>,
    #[deserr(default, error = QueryError<codes::InvalidSearchSemanticRatio>)]
    hybrid_semantic_ratio: Option<String>,
    #[deserr(default, error = QueryError<codes::InvalidSearchVector>)]
    vector: Option<String>,
    #[deserr(default, error = QueryError<codes::InvalidSearchRetrieveVectors>)]
    retrieve_vectors: Option<Param<bool>>,
    #[deserr(default, error = QueryError<codes::InvalidSearchPersonalizeUserContext>)]
    personalize_user_context: Option<String>,
    #[deserr(default, error = QueryError<codes::InvalidSearchUseNetwork>)]
    use_network: Option<Param<bool>>,
    #[deserr(default, error = QueryError<codes::InvalidSearchShowRankingScore>)]
    show_ranking_score: Option<Param<bool>>,
    #[deserr(default, error = QueryError<codes::InvalidSearchShowRankingScoreDetails>)]
    show_ranking_score_details: Option<Param<bool>>,
    #[deserr(default, error = QueryError<codes::InvalidSearchShowPerformanceDetails>)]
    show_performance_details: Option<Param<bool>>,
}

impl SearchQueryString {
    /// The same search as a body; fails where the string forms cannot be combined (a
    /// semantic ratio or a vector without an embedder) or a float does not parse.
    pub fn into_body(self) -> Result<SearchBody, crate::errors::ResponseError> {
        use crate::errors::{Code, ResponseError};
        let hybrid = match (self.hybrid_embedder, &self.hybrid_semantic_ratio) {
            (Some(embedder), ratio) => Some(HybridParameter {
                semantic_ratio: ratio.as_deref().map(semantic_ratio).transpose()?,
                embedder,
            }),
            (None, Some(_)) => {
                return Err(ResponseError::new(
                    Code::InvalidSearchHybridQuery,
                    "`hybridEmbedder` is mandatory when `hybridSemanticRatio` is present",
                ));
            }
            (None, None) => None,
        };
        if hybrid.is_none() && self.vector.is_some() {
            return Err(ResponseError::new(
                Code::MissingSearchHybrid,
                "`hybridEmbedder` is mandatory when `vector` is present",
            ));
        }
        let vector = self.vector.as_deref().map(vector_list).transpose()?;
        let mut body = SearchBody::empty();
        body.q = self.q;
        body.offset = self.offset.map(Param::into_inner);
        body.limit = self.limit.map(Param::into_inner);
        body.page = self.page.map(Param::into_inner);
        body.hits_per_page = self.hits_per_page.map(Param::into_inner);
        body.attributes_to_retrieve = self.attributes_to_retrieve.as_deref().map(comma_list);
        body.retrieve_vectors = self.retrieve_vectors.is_some_and(|flag| flag.0);
        body.attributes_to_crop = self.attributes_to_crop.as_deref().map(comma_list);
        if let Some(length) = self.crop_length {
            body.crop_length = length.0;
        }
        body.attributes_to_highlight = self.attributes_to_highlight.as_deref().map(comma_list);
        body.filter = self
            .filter
            .map(|text| serde_json::from_str::<Value>(&text).unwrap_or(Value::String(text)));
        body.sort = self.sort.as_deref().map(sort_list);
        body.distinct = self.distinct;
        body.show_matches_position = self.show_matches_position.is_some_and(|flag| flag.0);
        body.show_ranking_score = self.show_ranking_score.is_some_and(|flag| flag.0);
        body.show_ranking_score_details =
            self.show_ranking_score_details.is_some_and(|flag| flag.0);
        body.show_performance_details = self.show_performance_details.is_some_and(|flag| flag.0);
        body.facets = self.facets.as_deref().map(comma_list);
        if let Some(tag) = self.highlight_pre_tag {
            body.highlight_pre_tag = tag;
        }
        if let Some(tag) = self.highlight_post_tag {
            body.highlight_post_tag = tag;
        }
        if let Some(marker) = self.crop_marker {
            body.crop_marker = marker;
        }
        if let Some(strategy) = self.matching_strategy {
            body.matching_strategy = strategy.0;
        }
        body.attributes_to_search_on = self.attributes_to_search_on.as_deref().map(comma_list);
        body.hybrid = hybrid;
        body.vector = vector;
        body.ranking_score_threshold = self.ranking_score_threshold.map(Param::into_inner);
        body.locales = self.locales.as_deref().map(locale_list).transpose()?;
        body.personalize = self
            .personalize_user_context
            .map(|user_context| PersonalizeParameter { user_context });
        body.use_network = self.use_network.map(Param::into_inner);
        Ok(body)
    }
}

/// `hybridSemanticRatio`: a float within `0.0..=1.0`.
fn semantic_ratio(text: &str) -> Result<f32, crate::errors::ResponseError> {
    use crate::errors::{Code, ResponseError};
    match text.parse::<f32>() {
        Ok(ratio) if (0.0..=1.0).contains(&ratio) => Ok(ratio),
        Ok(_) => Err(ResponseError::new(
            Code::InvalidSearchSemanticRatio,
            "Invalid value in parameter `hybridSemanticRatio`: the value of `semanticRatio` is invalid, expected a float between `0.0` and `1.0`.",
        )),
        Err(_) => Err(ResponseError::new(
            Code::InvalidSearchSemanticRatio,
            format!(
                "Invalid value in parameter `hybridSemanticRatio`: could not parse `{text}` as a float"
            ),
        )),
    }
}

/// `locales`: comma-separated locale codes.
fn locale_list(text: &str) -> Result<Vec<Locale>, crate::errors::ResponseError> {
    use crate::errors::{Code, ResponseError};
    comma_list(text)
        .iter()
        .map(|code| {
            Locale::parse(code).ok_or_else(|| {
                ResponseError::new(
                    Code::InvalidSearchLocales,
                    format!(
                        "Invalid value in parameter `locales`: {}",
                        Locale::unsupported_message(code)
                    ),
                )
            })
        })
        .collect()
}

/// `vector`: comma-separated floats.
fn vector_list(text: &str) -> Result<Vec<f32>, crate::errors::ResponseError> {
    use crate::errors::{Code, ResponseError};
    comma_list(text)
        .iter()
        .map(|item| {
            item.trim().parse::<f32>().map_err(|_| {
                ResponseError::new(
                    Code::InvalidSearchVector,
                    format!(
                        "Invalid value in parameter `vector`: could not parse `{item}` as a float"
                    ),
                )
            })
        })
        .collect()
}

/// A comma-separated list, trimmed, empty items dropped.
pub fn comma_list(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(str::to_owned)
        .collect()
}

/// A `sort` query value: comma-separated, with the commas of `_geoPoint(…)` kept.
pub fn sort_list(text: &str) -> Vec<String> {
    let mut rules: Vec<String> = Vec::new();
    let mut open = false;
    for part in text.split(',') {
        if open {
            if let Some(last) = rules.last_mut() {
                last.push(',');
                last.push_str(part);
            }
        } else {
            rules.push(part.to_owned());
        }
        open = rules
            .last()
            .is_some_and(|last| last.contains('(') && !last.contains(')'));
    }
    rules
        .into_iter()
        .map(|rule| rule.trim().to_owned())
        .filter(|rule| !rule.is_empty())
        .collect()
}

/// Decodes a search at `location` (a multi-search query sits at `.queries[i]`).
pub fn decode_at(value: Value, location: ValuePointerRef) -> Result<SearchBody, JsonError> {
    use deserr::IntoValue;
    SearchBody::deserialize_from_value(value.into_value(), location)
}

/// A sort rule's field and direction (`field:asc` → ascending); anything else is refused with
/// Meilisearch's syntax message under `code`.
pub fn sort_rule_parts(
    rule: &str,
    code: crate::errors::Code,
) -> Result<(&str, bool), crate::errors::ResponseError> {
    match rule.rsplit_once(':') {
        Some((field, "asc")) => Ok((field, true)),
        Some((field, "desc")) => Ok((field, false)),
        _ => Err(crate::errors::ResponseError::new(
            code,
            format!(
                "Invalid syntax for the sort parameter: expected expression ending by `:asc` or `:desc`, found `{rule}`."
            ),
        )),
    }
}
