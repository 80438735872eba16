//! The first check of a parsed filter against an index: every attribute used in a condition or
//! an `IN` must be filterable (`_vectors` and `_shard` are special and always allowed).
//!
//! Invariant: attributes are checked in reading order and the first one that is not filterable
//! is the error, pointing at its own characters.

use super::rules::FilterableRules;
use super::{CONDITION_DEPTH_MAX, Filter, FilterError, FilterErrorKind, SHARD_ATTRIBUTE};

/// The attribute that names vector filters.
pub(crate) const VECTORS_ATTRIBUTE: &str = "_vectors";

/// `Attribute `x` is not filterable. …` with the list of filterable patterns.
pub(crate) fn not_filterable_message(attribute: &str, rules: &FilterableRules) -> String {
    let patterns = rules.filterable_patterns();
    let mut message = format!("Attribute `{attribute}` is not filterable.");
    if patterns.is_empty() {
        message.push_str(" This index does not have configured filterable attributes.");
    } else {
        let listed: Vec<String> = patterns
            .iter()
            .map(|pattern| format!("`{pattern}`"))
            .collect();
        message.push_str(&format!(
            " Available filterable attribute patterns are: {}.",
            listed.join(", ")
        ));
    }
    message
}

/// Refuses the filter if it uses an attribute that `rules` do not make filterable.
pub fn check_filterable(filter: &Filter, rules: &FilterableRules) -> Result<(), FilterError> {
    let mut attributes = Vec::new();
    filter
        .expression()
        .attributes(CONDITION_DEPTH_MAX, &mut attributes);
    for token in attributes {
        let attribute = token.value.as_str();
        if rules.is_filterable(attribute)
            || attribute == VECTORS_ATTRIBUTE
            || attribute == SHARD_ATTRIBUTE
        {
            continue;
        }
        let message = not_filterable_message(attribute, rules);
        return Err(FilterError::new(
            FilterErrorKind::Index,
            filter.located(token, &message),
        ));
    }
    Ok(())
}
