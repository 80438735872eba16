//! The one error type of the filter layer, with Meilisearch's exact messages.
//!
//! Invariant: `message` is final text, position marker included; the server only maps `kind` to
//! an error code and, for [`FilterErrorKind::Index`], prefixes ``Index `{uid}`: ``.

use std::fmt;

/// Which family an error belongs to (the server picks the error code from it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterErrorKind {
    /// Syntax error or too deep a filter, found while parsing: the route's filter error code
    /// (`invalid_search_filter`, `invalid_document_filter`, …).
    InvalidFilter,
    /// The JSON `filter` was neither a string nor an array of strings / arrays of strings.
    InvalidType,
    /// The filter uses an operator behind an experimental feature that is off:
    /// `feature_not_enabled`.
    FeatureNotEnabled,
    /// Found while checking the filter against an index (attribute not filterable, operator not
    /// allowed, bad geo argument): Meilisearch prefixes ``Index `{uid}`: `` and answers
    /// `invalid_search_filter`.
    Index,
    /// A `_shard` condition the engine refuses (an unknown shard, an operator other than `=`,
    /// `!=`, `IN`): `invalid_search_filter` on every route, the document routes included
    /// (Meilisearch maps only its syntax errors to their own code), prefixed like
    /// [`FilterErrorKind::Index`] where the route prefixes engine errors.
    Shard,
}

/// A filter error: its family and its complete message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterError {
    pub kind: FilterErrorKind,
    pub message: String,
}

impl FilterError {
    pub(crate) fn new(kind: FilterErrorKind, message: String) -> Self {
        Self { kind, message }
    }
}

impl fmt::Display for FilterError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.message)
    }
}

impl std::error::Error for FilterError {}
