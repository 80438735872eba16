//! Query strings: split into a map of strings (`application/x-www-form-urlencoded`, the last
//! of repeated keys wins), then validated with `deserr` into a typed struct whose string
//! values are parsed by [`Param`] and the [`super::star_or`] types.
//!
//! Invariants:
//! - every value the typed step sees is a string (never a number, list or boolean);
//! - numbers and booleans are parsed exactly as Rust's `FromStr` does (`+5` is 5, `True` is
//!   not a boolean), and their failures use Meilisearch's `could not parse` wording.

use std::convert::Infallible;
use std::fmt;
use std::ops::Deref;

use deserr::{DeserializeError, Deserr, ErrorKind, MergeWithError, ValueKind, ValuePointerRef};

use crate::errors::{Code, ResponseError};

/// Splits a raw query string (without the `?`) into a JSON object of strings.
pub fn parse_query_string(query: &str) -> Result<serde_json::Value, ResponseError> {
    serde_urlencoded::from_str::<serde_json::Value>(query).map_err(|error| {
        ResponseError::new(
            Code::BadRequest,
            format!("Query deserialize error: {error}"),
        )
    })
}

/// Decodes a raw query string into `T` with error type `E` (usually [`super::QueryError`]).
pub fn decode_query<T, E>(query: &str) -> Result<T, ResponseError>
where
    T: Deserr<E>,
    E: DeserializeError + Into<ResponseError>,
{
    let value = parse_query_string(query)?;
    deserr::deserialize::<T, serde_json::Value, E>(value).map_err(Into::into)
}

/// A value parsed from the string of one query parameter.
pub trait FromQueryParameter: Sized {
    /// Why the string was refused; its `Display` follows `Invalid value in parameter `x`: `.
    type Err;

    /// Parses the parameter's string.
    fn from_query_parameter(text: &str) -> Result<Self, Self::Err>;
}

/// A field deserialized from a query parameter string with [`FromQueryParameter`].
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Param<T>(pub T);

impl<T> Param<T> {
    /// The parsed value.
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> Deref for Param<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T, E> Deserr<E> for Param<T>
where
    T: FromQueryParameter,
    E: DeserializeError + MergeWithError<T::Err>,
{
    fn deserialize_from_value<V: deserr::IntoValue>(
        value: deserr::Value<V>,
        location: ValuePointerRef,
    ) -> Result<Self, E> {
        match value {
            deserr::Value::String(text) => T::from_query_parameter(&text)
                .map(Param)
                .map_err(|error| deserr::take_cf_content(E::merge(None, error, location))),
            other => Err(not_a_string(other, location)),
        }
    }
}

/// The error for a parameter value that is not a string (only reachable from a map built
/// by hand, never from a parsed query string).
pub(crate) fn not_a_string<V: deserr::IntoValue, E: DeserializeError>(
    value: deserr::Value<V>,
    location: ValuePointerRef,
) -> E {
    deserr::take_cf_content(E::error::<V>(
        None,
        ErrorKind::IncorrectValueKind {
            actual: value,
            accepted: &[ValueKind::String],
        },
        location,
    ))
}

/// A parameter that should be a non-negative integer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseIntegerError(pub String);

impl fmt::Display for ParseIntegerError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "could not parse `{}` as a positive integer",
            self.0
        )
    }
}

impl std::error::Error for ParseIntegerError {}

/// A parameter that should be `true` or `false`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseBooleanError(pub String);

impl fmt::Display for ParseBooleanError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "could not parse `{}` as a boolean, expected either `true` or `false`",
            self.0
        )
    }
}

impl std::error::Error for ParseBooleanError {}

macro_rules! unsigned_query_parameter {
    ($($integer:ty),*) => {
        $(
            impl FromQueryParameter for $integer {
                type Err = ParseIntegerError;

                fn from_query_parameter(text: &str) -> Result<Self, ParseIntegerError> {
                    text.parse().map_err(|_| ParseIntegerError(text.to_owned()))
                }
            }
        )*
    };
}

unsigned_query_parameter!(u32, u64, usize);

impl FromQueryParameter for bool {
    type Err = ParseBooleanError;

    fn from_query_parameter(text: &str) -> Result<Self, ParseBooleanError> {
        text.parse().map_err(|_| ParseBooleanError(text.to_owned()))
    }
}

impl FromQueryParameter for String {
    type Err = Infallible;

    fn from_query_parameter(text: &str) -> Result<Self, Infallible> {
        Ok(text.to_owned())
    }
}
