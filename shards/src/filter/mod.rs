//! The filter language of Meilisearch 1.41: parsing (string or JSON array form), feature gating,
//! validation against `filterableAttributes`, and evaluation to a set of internal document ids.
//!
//! Invariants: a [`Filter`] keeps every source string it was parsed from, so each error can point
//! at the exact characters it is about; parsing never panics and its recursion is bounded by
//! [`PARSER_DEPTH_MAX`]; messages are byte-for-byte Meilisearch's.
//!
//! The flow of a search request:
//!
//! ```
//! use serde_json::json;
//! use shards::filter::{EnabledFeatures, Filter, FilterableRules, MemoryFacetSource, evaluate};
//!
//! let documents = [json!({"genre": "Horror", "year": 1982}), json!({"genre": "Drama", "year": 1990})];
//! let source = MemoryFacetSource::from_documents(documents.iter().enumerate().map(|(id, d)| (id as u32, d)));
//! let rules = FilterableRules::from_setting(&json!(["genre", "year"])).expect("valid setting");
//!
//! // 1. At the edge: parse the JSON parameter and check experimental features.
//! let filter = Filter::from_json(&json!(["year > 1980", ["genre = horror", "genre = comedy"]]))
//!     .expect("valid filter")
//!     .expect("not blank");
//! filter.check_features(EnabledFeatures::default()).expect("no gated operator");
//! // 2. In each shard: check against the rules and evaluate.
//! let selected = evaluate(&filter, &rules, &source).expect("filterable");
//! assert_eq!(selected.into_iter().collect::<Vec<_>>(), [0]);
//! ```
//!
//! Errors carry their family ([`FilterErrorKind`]) for the code table; the server prefixes
//! ``Index `{uid}`: `` to [`FilterErrorKind::Index`] messages, as Meilisearch does.

mod ast;
mod cursor;
mod error;
mod evaluate;
mod facet_patterns;
mod facet_source;
mod geo;
mod geo_evaluate;
mod geo_syntax;
mod json;
mod memory_source;
mod normalize;
mod parser;
mod rules;
mod syntax_error;
mod validate;
mod value;
mod vector_syntax;

#[cfg(test)]
mod evaluate_tests;
#[cfg(test)]
mod parser_tests;
#[cfg(test)]
mod random_tests;

pub use ast::{Condition, Expression, Token, VectorFilter};
pub use error::{FilterError, FilterErrorKind};
pub use evaluate::{evaluate, is_shard_refusal};
pub use facet_patterns::{EVERY_FACET, FacetRefusal};
pub use facet_source::{FacetSource, GeoPoint, VectorLookupError};
pub use geo::{EARTH_RADIUS_METERS, haversine_distance_meters};
pub use memory_source::MemoryFacetSource;
pub use normalize::{FACET_STRING_BYTES_MAX, normalize_facet, truncate_facet};
pub use parser::PARSER_DEPTH_MAX;
pub use rules::{FilterFeatures, FilterableRule, FilterableRules, PatternMatch};
pub use syntax_error::{SyntaxError, SyntaxErrorKind, position_marker};
pub use validate::check_filterable;

use crate::network_shards::NetworkShards;
use cursor::Cursor;

/// The deepest `AND`/`OR` nesting a filter may have once its array parts are combined.
pub const CONDITION_DEPTH_MAX: usize = 2000;

/// The experimental features that gate parts of the language.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EnabledFeatures {
    /// `containsFilter`: the `CONTAINS` operator.
    pub contains_filter: bool,
    /// `network`: the `_shard` attribute.
    pub network: bool,
    /// `multimodal`: `_vectors… EXISTS` filters.
    pub multimodal: bool,
}

/// A parsed filter and the source strings its tokens point into.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    expression: Expression,
    sources: Vec<String>,
    /// The network shards `_shard` conditions name (see [`Filter::with_network_shards`]).
    network_shards: Option<NetworkShards>,
}

impl Filter {
    /// Parses a filter string; a blank string is no filter (`Ok(None)`).
    pub fn parse(text: &str) -> Result<Option<Filter>, FilterError> {
        let mut sources = Vec::new();
        let Some(expression) = parse_source(text, &mut sources)? else {
            return Ok(None);
        };
        Ok(Some(Filter::checked_depth(expression, sources)?))
    }

    /// Parses the `filter` parameter as JSON: a string, or an array whose string elements are
    /// AND-ed and whose array elements (of strings) are OR-ed. `null` is no filter.
    pub fn from_json(value: &serde_json::Value) -> Result<Option<Filter>, FilterError> {
        json::filter_from_json(value)
    }

    pub(crate) fn checked_depth(
        expression: Expression,
        sources: Vec<String>,
    ) -> Result<Filter, FilterError> {
        let filter = Filter {
            expression,
            sources,
            network_shards: None,
        };
        if let Some(token) = filter.expression.token_at_depth(CONDITION_DEPTH_MAX) {
            let message = format!(
                "Too many filter conditions, can't process more than {CONDITION_DEPTH_MAX} filters."
            );
            return Err(FilterError::new(
                FilterErrorKind::InvalidFilter,
                filter.located(token, &message),
            ));
        }
        Ok(filter)
    }

    pub fn expression(&self) -> &Expression {
        &self.expression
    }

    /// The filter, its `_shard` conditions evaluated against the network shards `shards`
    /// (`None`: the network does not shard, and every shard named does not exist, as in an
    /// index whose network never had a leader). Set where the filter enters the server, from
    /// the network of that moment; a filter that was never given shards knows none.
    pub fn with_network_shards(mut self, shards: Option<NetworkShards>) -> Filter {
        self.network_shards = shards;
        self
    }

    /// The network shards `_shard` conditions are evaluated against.
    pub fn network_shards(&self) -> Option<&NetworkShards> {
        self.network_shards.as_ref()
    }

    /// The source string a token of this filter was read from.
    pub fn source_of(&self, token: &Token) -> &str {
        self.sources.get(token.source).map_or("", String::as_str)
    }

    /// `message`, a newline and the position marker of `token`.
    pub fn located(&self, token: &Token, message: &str) -> String {
        let source = self.source_of(token);
        let end = token.end.min(source.len());
        let start = token.start.min(end);
        format!("{message}\n{}", position_marker(source, start, end))
    }

    /// Refuses operators whose experimental feature is off, in Meilisearch's order of checks.
    pub fn check_features(&self, features: EnabledFeatures) -> Result<(), FilterError> {
        let gates = [
            (
                features.contains_filter,
                self.expression.contains_keyword(),
                "Using `CONTAINS` in a filter requires enabling the `contains filter` experimental feature. See https://github.com/orgs/meilisearch/discussions/763",
            ),
            (
                features.network,
                self.expression.attribute_named(SHARD_ATTRIBUTE),
                "using a shard filter requires enabling the `network` experimental feature. See https://github.com/orgs/meilisearch/discussions/805",
            ),
            (
                features.multimodal,
                self.expression.vector_filter(),
                "using a vector filter requires enabling the `multimodal` experimental feature. See https://github.com/orgs/meilisearch/discussions/846",
            ),
        ];
        for (enabled, token, message) in gates {
            if let (false, Some(token)) = (enabled, token) {
                return Err(FilterError::new(
                    FilterErrorKind::FeatureNotEnabled,
                    self.located(token, message),
                ));
            }
        }
        Ok(())
    }
}

/// The attribute that filters on the network shard a document belongs to.
pub const SHARD_ATTRIBUTE: &str = "_shard";

/// Parses one source string into `sources`; blank strings give `None` and are not kept.
pub(crate) fn parse_source(
    text: &str,
    sources: &mut Vec<String>,
) -> Result<Option<Expression>, FilterError> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    let cursor = Cursor::new(text, sources.len());
    let expression = cursor
        .parse_filter()
        .map_err(|error| FilterError::new(FilterErrorKind::InvalidFilter, error.render(text)))?;
    sources.push(text.to_owned());
    // Each string is checked alone first, as Meilisearch does, then the combination.
    if let Some(token) = expression.token_at_depth(CONDITION_DEPTH_MAX) {
        let message = format!(
            "Too many filter conditions, can't process more than {CONDITION_DEPTH_MAX} filters."
        );
        let located = format!(
            "{message}\n{}",
            position_marker(text, token.start, token.end)
        );
        return Err(FilterError::new(FilterErrorKind::InvalidFilter, located));
    }
    Ok(Some(expression))
}
