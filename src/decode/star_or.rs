//! Query parameters that accept `*` ("everything") besides ordinary values: a single value
//! ([`OptionStarOr`]) or a comma-separated list ([`OptionStarOrList`]).
//!
//! Invariants:
//! - a list is split on `,` and empty items are dropped (`a,,b` is `a`, `b`; `""` is the
//!   empty list); items are not trimmed;
//! - any item equal to `*` makes the whole list [`OptionStarOrList::Star`], but every other
//!   item must still parse;
//! - an item's error is located at `param[i]` (i counts non-empty items) when the list has
//!   more than one item, at `param` otherwise.

use deserr::{DeserializeError, Deserr, MergeWithError, ValuePointerRef};

use super::query::{FromQueryParameter, not_a_string};

/// The value meaning "every value".
const STAR: &str = "*";

/// An optional parameter that is absent, `*`, or one value.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum OptionStarOr<T> {
    #[default]
    None,
    Star,
    Other(T),
}

impl<T> OptionStarOr<T> {
    /// The value, if one was given (`*` and absence both mean no restriction).
    pub fn merge_star_and_none(self) -> Option<T> {
        match self {
            OptionStarOr::None | OptionStarOr::Star => None,
            OptionStarOr::Other(value) => Some(value),
        }
    }
}

impl<T, E> Deserr<E> for OptionStarOr<T>
where
    T: FromQueryParameter,
    E: DeserializeError + MergeWithError<T::Err>,
{
    fn deserialize_from_value<V: deserr::IntoValue>(
        value: deserr::Value<V>,
        location: ValuePointerRef,
    ) -> Result<Self, E> {
        match value {
            deserr::Value::String(text) if text == STAR => Ok(OptionStarOr::Star),
            deserr::Value::String(text) => T::from_query_parameter(&text)
                .map(OptionStarOr::Other)
                .map_err(|error| deserr::take_cf_content(E::merge(None, error, location))),
            other => Err(not_a_string(other, location)),
        }
    }
}

/// An optional parameter that is absent, contains `*`, or lists values.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub enum OptionStarOrList<T> {
    #[default]
    None,
    Star,
    List(Vec<T>),
}

impl<T> OptionStarOrList<T> {
    /// The listed values, if the parameter restricts anything.
    pub fn merge_star_and_none(self) -> Option<Vec<T>> {
        match self {
            OptionStarOrList::None | OptionStarOrList::Star => None,
            OptionStarOrList::List(values) => Some(values),
        }
    }
}

impl<T, E> Deserr<E> for OptionStarOrList<T>
where
    T: FromQueryParameter,
    E: DeserializeError + MergeWithError<T::Err>,
{
    fn deserialize_from_value<V: deserr::IntoValue>(
        value: deserr::Value<V>,
        location: ValuePointerRef,
    ) -> Result<Self, E> {
        match value {
            deserr::Value::String(text) => parse_list(&text, location),
            other => Err(not_a_string(other, location)),
        }
    }
}

fn parse_list<T, E>(text: &str, location: ValuePointerRef) -> Result<OptionStarOrList<T>, E>
where
    T: FromQueryParameter,
    E: DeserializeError + MergeWithError<T::Err>,
{
    let items: Vec<&str> = text.split(',').filter(|item| !item.is_empty()).collect();
    let mut is_star = false;
    let mut values = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        if *item == STAR {
            is_star = true;
            continue;
        }
        match T::from_query_parameter(item) {
            Ok(parsed) => values.push(parsed),
            Err(error) => {
                let item_location = location.push_index(index);
                let location = if items.len() > 1 {
                    item_location
                } else {
                    location
                };
                return Err(deserr::take_cf_content(E::merge(None, error, location)));
            }
        }
    }
    Ok(if is_star {
        OptionStarOrList::Star
    } else {
        OptionStarOrList::List(values)
    })
}
