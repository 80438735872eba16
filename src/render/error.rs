//! The failures of `POST /render-template`, with Meilisearch 1.50's words and codes: finding
//! the template (`error while fetching template: …`), finding the input (`error while
//! fetching input: …`) and rendering (`error while rendering template: …`).
//!
//! Invariants: every message is Meilisearch's text (its quirks included: fragment paths
//! quoted twice, a search fragment's missing embedder reported as a missing *indexing*
//! fragment); a failure of the server's own state (a stored setting that cannot be read,
//! a shard that cannot answer) keeps its own code and message behind the prefix.

use std::fmt;

use super::parameters::Violation;
use super::request::{InputKind, TemplateKind};
use crate::embedders::TemplateError;
use crate::embedders::fragment::FragmentError;
use crate::errors::{Code, ResponseError};

/// The prefix of every failure to find the template.
const TEMPLATE_PREFIX: &str = "error while fetching template: ";
/// The prefix of every failure to find the input.
const INPUT_PREFIX: &str = "error while fetching input: ";
/// The prefix of every failure to render.
const RENDERING_PREFIX: &str = "error while rendering template: ";

/// Which fragments a missing fragment was looked for among.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FragmentKind {
    Indexing,
    Search,
}

impl fmt::Display for FragmentKind {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(match self {
            FragmentKind::Indexing => "indexing",
            FragmentKind::Search => "search",
        })
    }
}

/// Why the template could not be found.
#[derive(Debug, Clone, PartialEq)]
pub enum FetchTemplateError {
    /// A field the kind needs is missing, or one it refuses is given.
    Parameter {
        kind: TemplateKind,
        violation: Violation,
    },
    /// The experimental feature the kind needs is off (the gate's own error).
    Feature(ResponseError),
    IndexNotFound(String),
    MissingEmbedder {
        index: String,
        embedder: String,
    },
    MissingFragment {
        index: String,
        embedder: String,
        fragment: String,
        kind: FragmentKind,
    },
    NotAFragmentEmbedder {
        index: String,
        embedder: String,
    },
    NotADocumentTemplateEmbedder {
        index: String,
        embedder: String,
    },
    InlineTemplateNotAString,
    InlineTemplateParsing(TemplateError),
    InlineFragmentParsing(FragmentError),
    /// A stored setting that cannot be used.
    Stored(ResponseError),
}

/// `parameter `name` missing|disallowed for kind `kind``.
fn parameter_message(kind: &dyn fmt::Display, violation: Violation) -> String {
    match violation {
        Violation::Missing(name) => format!("parameter `{name}` missing for kind `{kind}`"),
        Violation::Disallowed(name) => format!("parameter `{name}` disallowed for kind `{kind}`"),
    }
}

impl fmt::Display for FetchTemplateError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        use FetchTemplateError::*;
        match self {
            Parameter { kind, violation } => {
                formatter.write_str(&parameter_message(kind, *violation))
            }
            Feature(error) | Stored(error) => formatter.write_str(&error.message),
            IndexNotFound(index) => {
                write!(
                    formatter,
                    "cannot open index `{index}`: Index `{index}` not found."
                )
            }
            MissingEmbedder { index, embedder } => {
                write!(
                    formatter,
                    "cannot find embedder `{embedder}` in index `{index}`"
                )
            }
            MissingFragment {
                index,
                embedder,
                fragment,
                kind,
            } => write!(
                formatter,
                "cannot find {kind} fragment `{fragment}` for embedder `{embedder}` in index `{index}`"
            ),
            NotAFragmentEmbedder { index, embedder } => write!(
                formatter,
                "embedder `{embedder}` in index `{index}` does not use fragments."
            ),
            NotADocumentTemplateEmbedder { index, embedder } => write!(
                formatter,
                "embedder `{embedder}` in index `{index}` does not use a document template."
            ),
            InlineTemplateNotAString => {
                formatter.write_str("inline document templates must be strings")
            }
            InlineTemplateParsing(error) => error.fmt(formatter),
            InlineFragmentParsing(error) => formatter.write_str(&error.parsing_error("")),
        }
    }
}

impl FetchTemplateError {
    fn code(&self) -> Code {
        use FetchTemplateError::*;
        match self {
            Parameter { .. }
            | MissingEmbedder { .. }
            | MissingFragment { .. }
            | NotAFragmentEmbedder { .. }
            | NotADocumentTemplateEmbedder { .. }
            | InlineTemplateNotAString => Code::InvalidRenderTemplate,
            InlineTemplateParsing(_) | InlineFragmentParsing(_) => Code::TemplateParsingError,
            IndexNotFound(_) => Code::IndexNotFound,
            Feature(error) | Stored(error) => error.code,
        }
    }
}

impl From<FetchTemplateError> for ResponseError {
    fn from(error: FetchTemplateError) -> Self {
        ResponseError::new(error.code(), format!("{TEMPLATE_PREFIX}{error}"))
    }
}

/// Why the input could not be found.
#[derive(Debug, Clone, PartialEq)]
pub enum FetchInputError {
    /// A field the kind needs is missing, or one it refuses is given.
    Parameter {
        kind: InputKind,
        violation: Violation,
    },
    /// The experimental feature the kind needs is off (the gate's own error).
    Feature(ResponseError),
    DocumentNotFound {
        index: String,
        id: String,
    },
    /// `inline` is no JSON object (serde's explanation).
    InlineDocumentNotAnObject(String),
    /// `inline` is no JSON object (serde's explanation).
    InlineSearchNotAnObject(String),
    SearchQueryNotAString,
    /// A shard that could not answer.
    Stored(ResponseError),
}

impl fmt::Display for FetchInputError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        use FetchInputError::*;
        match self {
            Parameter { kind, violation } => {
                formatter.write_str(&parameter_message(kind, *violation))
            }
            Feature(error) | Stored(error) => formatter.write_str(&error.message),
            DocumentNotFound { index, id } => {
                write!(formatter, "document `{id}` not found in `{index}`")
            }
            InlineDocumentNotAnObject(reason) => write!(
                formatter,
                "parsing inline document: {reason}\n  - Note: the inline document must be a JSON map"
            ),
            InlineSearchNotAnObject(reason) => write!(
                formatter,
                "parsing inline search: {reason}\n  - Note: the inline search query must be a JSON map containing `q` and/or `media`"
            ),
            SearchQueryNotAString => formatter.write_str("`q` is not a string"),
        }
    }
}

impl FetchInputError {
    fn code(&self) -> Code {
        use FetchInputError::*;
        match self {
            Parameter { .. }
            | InlineDocumentNotAnObject(_)
            | InlineSearchNotAnObject(_)
            | SearchQueryNotAString => Code::InvalidRenderInput,
            DocumentNotFound { .. } => Code::RenderDocumentNotFound,
            Feature(error) | Stored(error) => error.code,
        }
    }
}

impl From<FetchInputError> for ResponseError {
    fn from(error: FetchInputError) -> Self {
        ResponseError::new(error.code(), format!("{INPUT_PREFIX}{error}"))
    }
}

/// Why the template did not render with the input (`template_rendering_error`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RenderingError {
    Template(TemplateError),
    Fragment(FragmentError),
    /// A document template has no search query to render.
    TemplateWithSearch,
}

impl fmt::Display for RenderingError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RenderingError::Template(error) => error.fmt(formatter),
            RenderingError::Fragment(error) => formatter.write_str(&error.rendering_error("")),
            RenderingError::TemplateWithSearch => {
                formatter.write_str("cannot render a document template with a search query")
            }
        }
    }
}

impl From<RenderingError> for ResponseError {
    fn from(error: RenderingError) -> Self {
        ResponseError::new(
            Code::TemplateRenderingError,
            format!("{RENDERING_PREFIX}{error}"),
        )
    }
}

/// 404 `index_not_found` for an input's index (its own wording, without a prefix).
pub fn input_index_not_found(index: &str) -> ResponseError {
    ResponseError::new(
        Code::IndexNotFound,
        format!("Cannot open index `{index}`: Index `{index}` not found."),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_errors_read_as_meilisearch_writes_them() {
        let error = ResponseError::from(FetchTemplateError::Parameter {
            kind: TemplateKind::DocumentTemplate,
            violation: Violation::Missing("index_uid"),
        });
        assert_eq!(error.code, Code::InvalidRenderTemplate);
        assert_eq!(
            error.message,
            "error while fetching template: parameter `index_uid` missing for kind `documentTemplate`"
        );
        let error = ResponseError::from(FetchTemplateError::MissingFragment {
            index: "dogs".to_owned(),
            embedder: "rest".to_owned(),
            fragment: "bad".to_owned(),
            kind: FragmentKind::Search,
        });
        assert_eq!(
            error.message,
            "error while fetching template: cannot find search fragment `bad` for embedder `rest` in index `dogs`"
        );
        let error = ResponseError::from(FetchTemplateError::IndexNotFound("nope".to_owned()));
        assert_eq!((error.code, error.status()), (Code::IndexNotFound, 404));
        assert_eq!(
            error.message,
            "error while fetching template: cannot open index `nope`: Index `nope` not found."
        );
        let parse = TemplateError::Parse("liquid: x".to_owned());
        let error = ResponseError::from(FetchTemplateError::InlineTemplateParsing(parse));
        assert_eq!(
            (error.code, error.message.as_str()),
            (
                Code::TemplateParsingError,
                "error while fetching template: user error: cannot parse template: liquid: x"
            )
        );
    }

    #[test]
    fn input_and_rendering_errors_read_as_meilisearch_writes_them() {
        let error = ResponseError::from(FetchInputError::DocumentNotFound {
            index: "dogs".to_owned(),
            id: "9".to_owned(),
        });
        assert_eq!(
            (error.code, error.status(), error.message.as_str()),
            (
                Code::RenderDocumentNotFound,
                404,
                "error while fetching input: document `9` not found in `dogs`"
            )
        );
        let error = ResponseError::from(FetchInputError::Parameter {
            kind: InputKind::InlineDocument,
            violation: Violation::Disallowed("id"),
        });
        assert_eq!(
            error.message,
            "error while fetching input: parameter `id` disallowed for kind `inlineDocument`"
        );
        let error = ResponseError::from(RenderingError::TemplateWithSearch);
        assert_eq!(
            (error.code, error.message.as_str()),
            (
                Code::TemplateRenderingError,
                "error while rendering template: cannot render a document template with a search query"
            )
        );
        let error = input_index_not_found("ab");
        assert_eq!(
            error.message,
            "Cannot open index `ab`: Index `ab` not found."
        );
    }
}
