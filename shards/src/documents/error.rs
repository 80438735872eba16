//! The error type of the documents module: each variant knows its Meilisearch error code
//! (`code()`), and its `Display` is Meilisearch v1.41's exact message.
//!
//! Invariant: the messages are byte-for-byte those of Meilisearch v1.41 (verified against its
//! source and test snapshots); the HTTP edge maps `code()` through the project's code table.

use std::fmt;

use serde_json::Value;

use super::Document;
use super::payload::PayloadFormat;

/// Serde error messages longer than this many bytes are shortened (Meilisearch issue 2107).
const SERDE_MESSAGE_BYTES_MAX: usize =
    SERDE_MESSAGE_PREFIX_BYTES + SERDE_MESSAGE_SUFFIX_BYTES + ELLIPSIS.len();
/// Bytes kept at the start of a shortened serde error message.
const SERDE_MESSAGE_PREFIX_BYTES: usize = 50;
/// Bytes kept at the end of a shortened serde error message.
const SERDE_MESSAGE_SUFFIX_BYTES: usize = 85;
/// What replaces the middle of a shortened serde error message.
const ELLIPSIS: &str = "...";

/// Why a payload, a primary key or a document id was refused.
#[derive(Debug, Clone, PartialEq)]
pub enum DocumentsError {
    /// The payload had zero bytes (`missing_payload`).
    MissingPayload { format: PayloadFormat },
    /// A JSON or NDJSON payload that does not parse, or JSON that is neither an object nor an
    /// array (`malformed_payload`). `detail` is the serde message (or the "neither" text).
    MalformedJson {
        format: PayloadFormat,
        detail: String,
    },
    /// A CSV payload that does not parse, or a typed cell that does not convert
    /// (`malformed_payload`). `detail` is the csv crate's or the conversion's message.
    MalformedCsv { detail: String },
    /// An element of a JSON array or an NDJSON value that is valid JSON but not an object.
    /// Meilisearch reports this as an I/O-classified serde error, i.e. code `internal`.
    DocumentNotAnObject { detail: String },
    /// Reading the update file failed (`internal`, or `io_error`-family codes by errno).
    Io {
        detail: String,
        os_error: Option<i32>,
    },
    /// The `csvDelimiter` query parameter is not exactly one ASCII character.
    InvalidCsvDelimiter { message: String },
    /// The index has a primary key and the operation asked for another one.
    PrimaryKeyAlreadyExists { primary_key: String },
    /// No top-level field of the first document ends with `id`.
    NoPrimaryKeyCandidate,
    /// Several top-level fields of the first document end with `id` (sorted).
    MultiplePrimaryKeyCandidates { candidates: Vec<String> },
    /// The document id is not a valid string or integer.
    InvalidDocumentId { document_id: Value },
    /// The document has no value at the primary key.
    MissingDocumentId {
        primary_key: String,
        document: Document,
    },
    /// A nested primary key matched more than one value in the document.
    TooManyDocumentIds {
        primary_key: String,
        document: Document,
    },
}

impl DocumentsError {
    /// The Meilisearch error code (`code` field of the error object).
    pub fn code(&self) -> &'static str {
        match self {
            Self::MissingPayload { .. } => "missing_payload",
            Self::MalformedJson { .. } | Self::MalformedCsv { .. } => "malformed_payload",
            Self::DocumentNotAnObject { .. } => "internal",
            Self::Io { os_error, .. } => match os_error {
                Some(5) => "io_error",
                Some(24) => "too_many_open_files",
                Some(28) => "no_space_left_on_device",
                _ => "internal",
            },
            Self::InvalidCsvDelimiter { .. } => "invalid_document_csv_delimiter",
            Self::PrimaryKeyAlreadyExists { .. } => "index_primary_key_already_exists",
            Self::NoPrimaryKeyCandidate => "index_primary_key_no_candidate_found",
            Self::MultiplePrimaryKeyCandidates { .. } => {
                "index_primary_key_multiple_candidates_found"
            }
            Self::InvalidDocumentId { .. } | Self::TooManyDocumentIds { .. } => {
                "invalid_document_id"
            }
            Self::MissingDocumentId { .. } => "missing_document_id",
        }
    }

    /// Whether Meilisearch reports this error synchronously at upload (HTTP 400) rather than in a
    /// failed task.
    pub fn is_reported_at_upload(&self) -> bool {
        matches!(
            self,
            Self::MissingPayload { .. }
                | Self::MalformedJson { .. }
                | Self::MalformedCsv { .. }
                | Self::DocumentNotAnObject { .. }
                | Self::Io { .. }
                | Self::InvalidCsvDelimiter { .. }
        )
    }
}

impl From<std::io::Error> for DocumentsError {
    fn from(error: std::io::Error) -> Self {
        Self::Io {
            detail: error.to_string(),
            os_error: error.raw_os_error(),
        }
    }
}

/// Shortens a serde message the way Meilisearch does: past the limit, the middle is replaced by
/// `...`, keeping 50 bytes in front and 85 at the end (cut on character boundaries).
pub(crate) fn shorten_serde_message(message: &str) -> String {
    if message.len() <= SERDE_MESSAGE_BYTES_MAX {
        return message.to_string();
    }
    let mut prefix_end = SERDE_MESSAGE_PREFIX_BYTES;
    while !message.is_char_boundary(prefix_end) {
        prefix_end -= 1;
    }
    let mut suffix_start = message.len() - SERDE_MESSAGE_SUFFIX_BYTES;
    while !message.is_char_boundary(suffix_start) {
        suffix_start += 1;
    }
    format!(
        "{}{ELLIPSIS}{}",
        &message[..prefix_end],
        &message[suffix_start..]
    )
}

fn compact_json(document: &Document) -> String {
    serde_json::to_string(document).unwrap_or_default()
}

impl fmt::Display for DocumentsError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MissingPayload { format } => write!(formatter, "A {format} payload is missing."),
            Self::MalformedJson { format, detail } => write!(
                formatter,
                "The `{format}` payload provided is malformed. `Couldn't serialize document value: {}`.",
                shorten_serde_message(detail)
            ),
            Self::MalformedCsv { detail } => {
                write!(formatter, "The `csv` payload provided is malformed: `{detail}`.")
            }
            Self::DocumentNotAnObject { detail } | Self::Io { detail, .. } => {
                formatter.write_str(detail)
            }
            Self::InvalidCsvDelimiter { message } => formatter.write_str(message),
            Self::PrimaryKeyAlreadyExists { primary_key } => {
                write!(formatter, "Index already has a primary key: `{primary_key}`.")
            }
            Self::NoPrimaryKeyCandidate => formatter.write_str(
                "The primary key inference failed as the engine did not find any field ending with `id` in its name. Please specify the primary key manually using the `primaryKey` query parameter.",
            ),
            Self::MultiplePrimaryKeyCandidates { candidates } => write!(
                formatter,
                "The primary key inference failed as the engine found {} fields ending with `id` in their names: '{}' and '{}'. Please specify the primary key manually using the `primaryKey` query parameter.",
                candidates.len(),
                candidates.first().map_or("", String::as_str),
                candidates.get(1).map_or("", String::as_str),
            ),
            Self::InvalidDocumentId { document_id } => write!(
                formatter,
                "Document identifier `{document_id}` is invalid. A document identifier can be of type integer or string, only composed of alphanumeric characters (a-z A-Z 0-9), hyphens (-) and underscores (_), and can not be more than 511 bytes."
            ),
            Self::MissingDocumentId { primary_key, document } => write!(
                formatter,
                "Document doesn't have a `{primary_key}` attribute: `{}`.",
                compact_json(document)
            ),
            Self::TooManyDocumentIds { primary_key, document } => write!(
                formatter,
                "Document have too many matching `{primary_key}` attribute: `{}`.",
                compact_json(document)
            ),
        }
    }
}

impl std::error::Error for DocumentsError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_serde_messages_keep_fifty_bytes_in_front_and_eighty_five_at_the_end() {
        let message: String = (0..200)
            .map(|index| char::from(b'a' + (index % 26) as u8))
            .collect();
        let shortened = shorten_serde_message(&message);
        assert_eq!(shortened.len(), SERDE_MESSAGE_BYTES_MAX);
        assert_eq!(&shortened[..50], &message[..50]);
        assert_eq!(&shortened[50..53], "...");
        assert_eq!(&shortened[53..], &message[115..]);
        let exact = "x".repeat(SERDE_MESSAGE_BYTES_MAX);
        assert_eq!(shorten_serde_message(&exact), exact);
    }

    #[test]
    fn malformed_json_message_wraps_the_shortened_detail() {
        let error = DocumentsError::MalformedJson {
            format: PayloadFormat::Ndjson,
            detail: "expected value at line 1 column 1".to_string(),
        };
        assert_eq!(
            error.to_string(),
            "The `ndjson` payload provided is malformed. `Couldn't serialize document value: expected value at line 1 column 1`."
        );
    }
}
