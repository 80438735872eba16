//! Evaluation of a filter to the set of internal document ids it selects, over any
//! [`FacetSource`] (the persisted facet indexes, or [`super::MemoryFacetSource`]).
//!
//! Invariants, all Meilisearch's: `NOT e` is the universe minus `e`; an `AND` stops at the first
//! empty intermediate result (later operands are not evaluated, so they raise no error); a
//! condition on an attribute no document has selects nothing before its operator is checked;
//! string operands compare with normalized stored strings, numeric operands also with numbers;
//! `<`, `>`, `TO`… on strings compare bytes of the raw operand with normalized stored strings.

use std::ops::Bound::{self, Excluded, Included, Unbounded};

use roaring::RoaringBitmap;

use super::ast::{Condition, Expression, Token, VectorFilter};
use super::facet_source::{FacetSource, VectorLookupError};
use super::normalize::normalize_facet;
use super::rules::{FilterFeatures, FilterableRules};
use super::syntax_error::closest_within_two_edits;
use super::validate::check_filterable;
use super::{Filter, FilterError, FilterErrorKind, SHARD_ATTRIBUTE};

/// The documents of `source` selected by `filter`, checking it against `rules` first.
pub fn evaluate(
    filter: &Filter,
    rules: &FilterableRules,
    source: &impl FacetSource,
) -> Result<RoaringBitmap, FilterError> {
    check_filterable(filter, rules)?;
    Evaluator {
        filter,
        rules,
        source,
    }
    .expression(filter.expression(), None)
}

pub(crate) struct Evaluator<'a, S: FacetSource> {
    pub(crate) filter: &'a Filter,
    pub(crate) rules: &'a FilterableRules,
    pub(crate) source: &'a S,
}

fn index_error(message: String) -> FilterError {
    FilterError::new(FilterErrorKind::Index, message)
}

fn shard_error(message: String) -> FilterError {
    FilterError::new(FilterErrorKind::Shard, message)
}

/// The end of the message of a refused operator on `_shard`.
const SHARD_OPERATOR_REFUSAL: &str = "is not allowed for the special attribute `_shard`.\n  - Note: allowed operators: =, !=, IN. \n  - Note: other operators are not allowed for the special attribute `_shard`.";

/// Whether `message` is a [`FilterErrorKind::Shard`] refusal, once it has become an API
/// error's message (possibly prefixed by the index): a route that gives the engine's filter
/// refusals its own code keeps `invalid_search_filter` for these, as Meilisearch does.
pub fn is_shard_refusal(message: &str) -> bool {
    let unknown_shard = message.contains("Shard `") && message.ends_with("` does not exist");
    unknown_shard || message.ends_with(SHARD_OPERATOR_REFUSAL)
}

/// Whether the range `lower..upper` is empty, the cases Meilisearch answers without a lookup.
fn is_empty_range<T: PartialOrd>(lower: &Bound<T>, upper: &Bound<T>) -> bool {
    match (lower, upper) {
        (Included(low), Included(high)) => low > high,
        (Included(low), Excluded(high))
        | (Excluded(low), Excluded(high))
        | (Excluded(low), Included(high)) => low >= high,
        _ => false,
    }
}

impl<S: FacetSource> Evaluator<'_, S> {
    pub(crate) fn located(&self, token: &Token, message: &str) -> FilterError {
        index_error(self.filter.located(token, message))
    }

    fn expression(
        &self,
        expression: &Expression,
        hint: Option<&RoaringBitmap>,
    ) -> Result<RoaringBitmap, FilterError> {
        if hint.is_some_and(RoaringBitmap::is_empty) {
            return Ok(RoaringBitmap::new());
        }
        match expression {
            Expression::Not(inner) => {
                let selected = self.expression(inner, hint)?;
                let base = hint.cloned().unwrap_or_else(|| self.source.universe());
                Ok(base - selected)
            }
            Expression::In { attribute, values } if attribute.value == SHARD_ATTRIBUTE => {
                let mut union = RoaringBitmap::new();
                for value in values {
                    union |= self.shard_equal(value, hint)?;
                }
                Ok(union)
            }
            Expression::In { attribute, values } => {
                let mut union = RoaringBitmap::new();
                for value in values {
                    union |= self.condition(attribute, &Condition::Equal(value.clone()))?;
                }
                Ok(union)
            }
            Expression::Condition {
                attribute,
                condition,
            } if attribute.value == SHARD_ATTRIBUTE => self.shard_condition(condition, hint),
            Expression::Condition {
                attribute,
                condition,
            } => self.condition(attribute, condition),
            Expression::Or(children) => {
                let mut union = RoaringBitmap::new();
                for child in children {
                    union |= self.expression(child, hint)?;
                }
                Ok(union)
            }
            Expression::And(children) => self.conjunction(children, hint),
            Expression::VectorExists {
                attribute,
                embedder,
                filter,
            } => {
                let mut selected = self.vectors(attribute, embedder.as_ref(), filter)?;
                if let Some(hint) = hint {
                    selected &= hint;
                }
                Ok(selected)
            }
            Expression::GeoRadius {
                latitude,
                longitude,
                radius,
                resolution,
            } => self.geo_radius(latitude, longitude, radius, resolution.as_ref()),
            Expression::GeoBoundingBox {
                top_right,
                bottom_left,
            } => self.geo_bounding_box(top_right, bottom_left),
            Expression::GeoPolygon { points } => self.geo_polygon(points),
        }
    }

    fn conjunction(
        &self,
        children: &[Expression],
        hint: Option<&RoaringBitmap>,
    ) -> Result<RoaringBitmap, FilterError> {
        let mut children = children.iter();
        let Some(first) = children.next() else {
            return Ok(RoaringBitmap::new());
        };
        let mut selected = self.expression(first, hint)?;
        for child in children {
            if selected.is_empty() {
                break;
            }
            let narrowed = self.expression(child, Some(&selected))?;
            selected &= narrowed;
        }
        Ok(selected)
    }

    /// A condition on an ordinary attribute.
    fn condition(
        &self,
        attribute: &Token,
        condition: &Condition,
    ) -> Result<RoaringBitmap, FilterError> {
        let name = attribute.value.as_str();
        if !self.source.has_field(name) {
            return Ok(RoaringBitmap::new());
        }
        let Some((rule_index, rule)) = self.rules.matching_rule(name) else {
            return Ok(RoaringBitmap::new());
        };
        check_operator_allowed(name, condition, rule.filter_features(), rule_index)?;
        Ok(self.operator(name, condition))
    }

    fn operator(&self, name: &str, condition: &Condition) -> RoaringBitmap {
        let source = self.source;
        match condition {
            Condition::Null => source.null(name),
            Condition::Empty => source.empty(name),
            Condition::Exists => source.exists(name),
            Condition::Equal(value) => self.equal(name, value),
            Condition::NotEqual(value) => source.universe() - self.equal(name, value),
            Condition::Contains { word, .. } => {
                source.strings_containing(name, &normalize_facet(&word.value))
            }
            Condition::StartsWith { word, .. } => {
                let prefix = normalize_facet(&word.value);
                if prefix.is_empty() {
                    return source.exists(name);
                }
                source.strings_starting_with(name, &prefix)
            }
            comparison => {
                let (numbers, strings) = comparison_ranges(comparison);
                let mut selected = RoaringBitmap::new();
                if let Some((lower, upper)) = numbers {
                    if !is_empty_range(&lower, &upper) {
                        selected |= source.numbers_in_range(name, lower, upper);
                    }
                }
                if !is_empty_range(&strings.0, &strings.1) {
                    selected |= source.strings_in_range(name, strings.0, strings.1);
                }
                selected
            }
        }
    }

    fn equal(&self, name: &str, value: &Token) -> RoaringBitmap {
        let mut selected = self
            .source
            .strings_equal(name, &normalize_facet(&value.value));
        if let Some(number) = finite_number(value) {
            selected |= self.source.numbers_equal(name, number);
        }
        selected
    }

    /// The documents of the network shard `shard` (the filter's network shards say which
    /// exist), within `hint`.
    fn shard_equal(
        &self,
        shard: &Token,
        hint: Option<&RoaringBitmap>,
    ) -> Result<RoaringBitmap, FilterError> {
        let network = self.filter.network_shards();
        let Some((shards, position)) = network.and_then(|shards| {
            shards
                .position(&shard.value)
                .map(|position| (shards, position))
        }) else {
            return Err(shard_error(format!(
                "Shard `{}` does not exist",
                shard.value
            )));
        };
        let mut documents = self.source.shard_documents(shards, position);
        if let Some(hint) = hint {
            documents &= hint;
        }
        Ok(documents)
    }

    fn shard_condition(
        &self,
        condition: &Condition,
        hint: Option<&RoaringBitmap>,
    ) -> Result<RoaringBitmap, FilterError> {
        match condition {
            Condition::Equal(shard) => self.shard_equal(shard, hint),
            Condition::NotEqual(shard) => {
                let removed = self.shard_equal(shard, hint)?;
                Ok(hint.cloned().unwrap_or_else(|| self.source.universe()) - removed)
            }
            other => Err(shard_error(format!(
                "Filter operator `{} {SHARD_OPERATOR_REFUSAL}",
                other.operator()
            ))),
        }
    }

    fn vectors(
        &self,
        attribute: &Token,
        embedder: Option<&Token>,
        filter: &VectorFilter,
    ) -> Result<RoaringBitmap, FilterError> {
        let embedder_name = embedder.map(|token| token.value.as_str());
        self.source
            .vector_documents(embedder_name, filter)
            .map_err(|error| match error {
                VectorLookupError::EmbedderDoesNotExist { available } => {
                    let name = embedder_name.unwrap_or_default();
                    let message = format!(
                        "The embedder `{name}` does not exist. {}",
                        listing(
                            name,
                            available,
                            "This index does not have any configured embedders.",
                            "Available embedders are"
                        )
                    );
                    self.located(embedder.unwrap_or(attribute), &message)
                }
                VectorLookupError::FragmentDoesNotExist { available } => {
                    let (fragment, token) = match filter {
                        VectorFilter::Fragment(token) => (token.value.as_str(), token),
                        _ => ("", embedder.unwrap_or(attribute)),
                    };
                    let message = format!(
                        "The fragment `{fragment}` does not exist on embedder `{}`. {}",
                        embedder_name.unwrap_or_default(),
                        listing(
                            fragment,
                            available,
                            "This embedder does not have any configured fragments.",
                            "Available fragments on this embedder are"
                        )
                    );
                    self.located(token, &message)
                }
            })
    }
}

/// A range of numbers.
type NumberRange = (Bound<f64>, Bound<f64>);
/// A range of strings, compared byte-wise.
type StringRange<'a> = (Bound<&'a str>, Bound<&'a str>);

/// The number range (when the operands read as numbers) and the string range of a comparison
/// (`<`, `<=`, `>`, `>=`, `TO`); any other condition selects nothing through ranges.
fn comparison_ranges(condition: &Condition) -> (Option<NumberRange>, StringRange<'_>) {
    match condition {
        Condition::GreaterThan(value) => (
            finite_number(value).map(|number| (Excluded(number), Included(f64::MAX))),
            (Excluded(value.value.as_str()), Unbounded),
        ),
        Condition::GreaterThanOrEqual(value) => (
            finite_number(value).map(|number| (Included(number), Included(f64::MAX))),
            (Included(value.value.as_str()), Unbounded),
        ),
        Condition::LowerThan(value) => (
            finite_number(value).map(|number| (Included(f64::MIN), Excluded(number))),
            (Unbounded, Excluded(value.value.as_str())),
        ),
        Condition::LowerThanOrEqual(value) => (
            finite_number(value).map(|number| (Included(f64::MIN), Included(number))),
            (Unbounded, Included(value.value.as_str())),
        ),
        Condition::Between { from, to } => (
            finite_number(from)
                .zip(finite_number(to))
                .map(|(from, to)| (Included(from), Included(to))),
            (Included(from.value.as_str()), Included(to.value.as_str())),
        ),
        // Not comparisons: an empty range.
        _ => (None, (Excluded(""), Excluded(""))),
    }
}

/// The operand as a finite number, when it reads as one.
fn finite_number(token: &Token) -> Option<f64> {
    token
        .value
        .parse::<f64>()
        .ok()
        .filter(|number| number.is_finite())
}

/// `none` when nothing is available, else "{intro}: `a`, `b`." and a suggestion close to `name`.
fn listing(name: &str, mut available: Vec<String>, none: &str, intro: &str) -> String {
    if available.is_empty() {
        return none.to_owned();
    }
    available.sort_unstable();
    let listed: Vec<String> = available.iter().map(|item| format!("`{item}`")).collect();
    let mut text = format!("{intro}: {}.", listed.join(", "));
    if let Some(suggestion) = closest_within_two_edits(name, available.iter().map(String::as_str)) {
        text.push_str(&format!(" Did you mean `{suggestion}`?"));
    }
    text
}

/// Refuses an operator the matching rule's features do not allow (Meilisearch's message, which
/// carries no position marker).
fn check_operator_allowed(
    name: &str,
    condition: &Condition,
    features: FilterFeatures,
    rule_index: usize,
) -> Result<(), FilterError> {
    let allowed = match condition {
        Condition::GreaterThan(_)
        | Condition::GreaterThanOrEqual(_)
        | Condition::LowerThan(_)
        | Condition::LowerThanOrEqual(_)
        | Condition::Between { .. } => features.comparison,
        Condition::Empty | Condition::Null | Condition::Exists => features.is_filterable(),
        Condition::Equal(_) | Condition::NotEqual(_) => features.equality,
        Condition::Contains { .. } | Condition::StartsWith { .. } => true,
    };
    if allowed {
        return Ok(());
    }
    let operator = condition.operator();
    let feature = match operator {
        "=" | "!=" | "IN" => "equality",
        "<" | ">" | "<=" | ">=" | "TO" => "comparison",
        _ => "the appropriate filter operators",
    };
    Err(index_error(format!(
        "Filter operator `{operator}` is not allowed for the attribute `{name}`.\n  - Note: allowed operators: {}.\n  - Note: field `{name}` matched rule #{rule_index} in `filterableAttributes`\n  - Hint: enable {feature} in rule #{rule_index} by modifying the features.filter object\n  - Hint: prepend another rule matching `{name}` with appropriate filter features before rule #{rule_index}",
        features.allowed_operators().join(", ")
    )))
}
