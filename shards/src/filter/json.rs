//! The JSON forms of the `filter` parameter: a string, or an array of strings (AND-ed) and
//! arrays of strings (OR-ed inside, AND-ed with the rest).
//!
//! Invariants: blank strings are ignored; an array that yields nothing is no filter; a wrong JSON
//! type gives Meilisearch's "Invalid syntax for the filter parameter" message with the offending
//! value printed as compact JSON.

use serde_json::Value;

use super::{Expression, Filter, FilterError, FilterErrorKind, parse_source};

fn invalid_type(expected: &str, found: &Value) -> FilterError {
    FilterError::new(
        FilterErrorKind::InvalidType,
        format!("Invalid syntax for the filter parameter: `expected {expected}, found: {found}`."),
    )
}

pub(crate) fn filter_from_json(value: &Value) -> Result<Option<Filter>, FilterError> {
    match value {
        Value::Null => Ok(None),
        Value::String(text) => Filter::parse(text),
        Value::Array(elements) => filter_from_array(elements),
        other => Err(invalid_type("String, Array", other)),
    }
}

fn filter_from_array(elements: &[Value]) -> Result<Option<Filter>, FilterError> {
    // Types are checked before any string is parsed, as Meilisearch does.
    for element in elements {
        match element {
            Value::String(_) => {}
            Value::Array(inner) => {
                if let Some(wrong) = inner.iter().find(|value| !value.is_string()) {
                    return Err(invalid_type("String", wrong));
                }
            }
            other => return Err(invalid_type("String, [String]", other)),
        }
    }
    let mut sources = Vec::new();
    let mut conjuncts = Vec::new();
    for element in elements {
        match element {
            Value::String(text) => conjuncts.extend(parse_source(text, &mut sources)?),
            Value::Array(inner) => {
                let mut disjuncts = Vec::new();
                for text in inner.iter().filter_map(Value::as_str) {
                    disjuncts.extend(parse_source(text, &mut sources)?);
                }
                match disjuncts.len() {
                    0 => {}
                    1 => conjuncts.extend(disjuncts),
                    _ => conjuncts.push(Expression::Or(disjuncts)),
                }
            }
            _ => unreachable!("element types were checked above"),
        }
    }
    let expression = match conjuncts.len() {
        0 => return Ok(None),
        1 => conjuncts.remove(0),
        _ => Expression::And(conjuncts),
    };
    Ok(Some(Filter::checked_depth(expression, sources)?))
}
