//! The error of typed request validation: a message rendered with Meilisearch's templates
//! and the code of the field it belongs to.
//!
//! [`DecodeError<F, C>`] is generic over the message format `F` (JSON body or query string)
//! and a default code `C` (a marker of [`crate::errors::codes`]): a problem detected while
//! deserializing a value with error type `DecodeError<F, C>` gets the code `C`. When an error
//! of a field (with its own type, e.g. `JsonError<codes::InvalidSearchLimit>`) is merged into
//! the error of the enclosing struct, it keeps its own code and message. That is how every
//! error inside a top-level field reports the field's code, while problems of the struct
//! itself report the struct's code.
//!
//! Invariants: only the first error is kept (every merge stops deserialization); the code of
//! an error never changes once it is built.

use std::fmt;
use std::marker::PhantomData;
use std::ops::ControlFlow;

use deserr::errors::{JsonError as JsonMessage, QueryParamError as QueryMessage};
use deserr::{DeserializeError, ErrorKind, IntoValue, MergeWithError, ValuePointerRef};

use crate::errors::{Code, CodeMarker, ResponseError, codes};

/// How a deserialization problem is worded for one request format.
pub trait MessageFormat {
    /// The message for `kind` found at `location`.
    fn render<V: IntoValue>(kind: ErrorKind<V>, location: ValuePointerRef) -> String;
}

/// The wording of JSON bodies: locations like `` at `.a.b[2]` ``, found values as
/// `` a string: `"doggo"` ``.
#[derive(Debug, Clone, Copy)]
pub struct JsonFormat;

/// The wording of query strings: locations like `` parameter `limit` ``, values are strings.
#[derive(Debug, Clone, Copy)]
pub struct QueryFormat;

impl MessageFormat for JsonFormat {
    fn render<V: IntoValue>(kind: ErrorKind<V>, location: ValuePointerRef) -> String {
        deserr::take_cf_content(JsonMessage::error(None, kind, location)).to_string()
    }
}

impl MessageFormat for QueryFormat {
    fn render<V: IntoValue>(kind: ErrorKind<V>, location: ValuePointerRef) -> String {
        deserr::take_cf_content(QueryMessage::error(None, kind, location)).to_string()
    }
}

/// A validation error of a request, in format `F`, with default code `C`.
pub struct DecodeError<F, C = codes::BadRequest> {
    message: String,
    code: Code,
    marker: PhantomData<fn() -> (F, C)>,
}

/// The error of a JSON body field (or struct) whose default code is `C`.
pub type JsonError<C = codes::BadRequest> = DecodeError<JsonFormat, C>;

/// The error of a query parameter (or query struct) whose default code is `C`.
pub type QueryError<C = codes::BadRequest> = DecodeError<QueryFormat, C>;

impl<F, C> DecodeError<F, C> {
    /// An error with an explicit message and code.
    pub fn new(message: impl Into<String>, code: Code) -> Self {
        DecodeError {
            message: message.into(),
            code,
            marker: PhantomData,
        }
    }

    /// The code the error is answered with.
    pub fn code(&self) -> Code {
        self.code
    }

    /// The rendered message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The API error this validation error is answered with.
    pub fn into_response_error(self) -> ResponseError {
        ResponseError::new(self.code, self.message)
    }

    /// ``Immutable field `uid`: expected one of `description`, `name` `` with `code` (one of
    /// the `immutable_*` codes), for bodies that reject keys that cannot change.
    pub fn immutable_field(field: &str, accepted: &[&str], code: Code) -> Self {
        Self::new(
            format!(
                "Immutable field `{field}`: expected one of {}",
                backticked_list(accepted)
            ),
            code,
        )
    }
}

impl<F: MessageFormat, C: CodeMarker> DecodeError<F, C> {
    /// The standard missing-field message with code `C`; usable as a field's
    /// `missing_field_error` to give a required field a dedicated `missing_*` code.
    pub fn missing_field(field: &str, location: ValuePointerRef) -> Self {
        let kind: ErrorKind<'_, serde_json::Value> = ErrorKind::MissingField { field };
        Self::new(F::render(kind, location), C::CODE)
    }
}

/// `` `a`, `b`, `c` ``.
pub(crate) fn backticked_list(items: &[&str]) -> String {
    items
        .iter()
        .map(|item| format!("`{item}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl<F, C> fmt::Debug for DecodeError<F, C> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("DecodeError")
            .field("message", &self.message)
            .field("code", &self.code)
            .finish()
    }
}

impl<F, C> fmt::Display for DecodeError<F, C> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.message)
    }
}

impl<F, C> From<DecodeError<F, C>> for ResponseError {
    fn from(error: DecodeError<F, C>) -> Self {
        error.into_response_error()
    }
}

impl<F: MessageFormat, C: CodeMarker> DeserializeError for DecodeError<F, C> {
    fn error<V: IntoValue>(
        _previous: Option<Self>,
        kind: ErrorKind<V>,
        location: ValuePointerRef,
    ) -> ControlFlow<Self, Self> {
        ControlFlow::Break(Self::new(F::render(kind, location), C::CODE))
    }
}

/// A field's error merged into its struct's error keeps the field's message and code.
impl<F, Outer, Inner> MergeWithError<DecodeError<F, Inner>> for DecodeError<F, Outer> {
    fn merge(
        _previous: Option<Self>,
        other: DecodeError<F, Inner>,
        _merge_location: ValuePointerRef,
    ) -> ControlFlow<Self, Self> {
        ControlFlow::Break(DecodeError::new(other.message, other.code))
    }
}

/// A custom validation failure (any `std::error::Error`, e.g. a `try_from` function's error)
/// becomes ``Invalid value at `<location>`: <its Display>`` with the default code `C`.
impl<F: MessageFormat, C: CodeMarker, E: std::error::Error> MergeWithError<E>
    for DecodeError<F, C>
{
    fn merge(
        _previous: Option<Self>,
        other: E,
        merge_location: ValuePointerRef,
    ) -> ControlFlow<Self, Self> {
        let kind: ErrorKind<'_, serde_json::Value> = ErrorKind::Unexpected {
            msg: other.to_string(),
        };
        ControlFlow::Break(Self::new(F::render(kind, merge_location), C::CODE))
    }
}

#[cfg(test)]
mod tests {
    use deserr::ValueKind;

    use super::*;

    fn wrong_kind<F: MessageFormat>(accepted: &[ValueKind], location: ValuePointerRef) -> String {
        let actual: deserr::Value<serde_json::Value> = deserr::Value::Boolean(true);
        F::render(ErrorKind::IncorrectValueKind { actual, accepted }, location)
    }

    #[test]
    fn several_accepted_kinds_are_joined_with_or() {
        let root = ValuePointerRef::Origin;
        let location = root.push_key("distinct");
        assert_eq!(
            wrong_kind::<JsonFormat>(&[ValueKind::String, ValueKind::Null], location),
            "Invalid value type at `.distinct`: expected null or a string, but found a boolean: `true`"
        );
        assert_eq!(
            wrong_kind::<JsonFormat>(
                &[
                    ValueKind::Float,
                    ValueKind::Integer,
                    ValueKind::NegativeInteger,
                    ValueKind::Boolean,
                    ValueKind::Null,
                ],
                location
            ),
            "Invalid value type at `.distinct`: expected null, a boolean, or a number, but found a boolean: `true`"
        );
        assert_eq!(
            wrong_kind::<JsonFormat>(&[ValueKind::Integer, ValueKind::NegativeInteger], root),
            "Invalid value type: expected an integer, but found a boolean: `true`"
        );
    }

    #[test]
    fn query_locations_are_bare_parameter_names() {
        let root = ValuePointerRef::Origin;
        let parameter = root.push_key("uids");
        let item = parameter.push_index(2);
        let kind: ErrorKind<'_, serde_json::Value> = ErrorKind::Unexpected {
            msg: "boom".to_owned(),
        };
        assert_eq!(
            QueryFormat::render(kind, item),
            "Invalid value in parameter `uids[2]`: boom"
        );
        assert_eq!(
            wrong_kind::<QueryFormat>(&[ValueKind::String], parameter),
            "Invalid value type for parameter `uids`: expected a string, but found a boolean: `true`"
        );
    }

    #[test]
    fn merged_field_error_keeps_its_code_and_message() {
        let inner =
            JsonError::<codes::InvalidSearchLimit>::missing_field("limit", ValuePointerRef::Origin);
        let merged = deserr::take_cf_content(<JsonError as MergeWithError<_>>::merge(
            None,
            inner,
            ValuePointerRef::Origin,
        ));
        assert_eq!(merged.code(), Code::InvalidSearchLimit);
        assert_eq!(merged.message(), "Missing field `limit`");
    }
}
