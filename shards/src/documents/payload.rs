//! Update payloads: JSON (an array of objects, or one object), NDJSON and CSV, read one document
//! at a time from the update file (memory-mapped) or from a byte slice.
//!
//! Invariants:
//! - no second copy of the payload is made: JSON and NDJSON documents are deserialized straight
//!   from the mapped bytes, CSV records are read by the `csv` crate from the same bytes;
//! - the errors are Meilisearch v1.41's (`document_formats.rs`): a zero-byte payload is
//!   `missing_payload`; syntax errors are `malformed_payload` with serde's message and position
//!   *in the whole payload*; a JSON value that is neither an object nor an array is
//!   ``data are neither an object nor a list of objects``; an array element or NDJSON value that
//!   is not an object is the serde "invalid type" message with code `internal` (Meilisearch
//!   classifies that serde error as I/O); CSV errors are the `csv` crate's messages, typed cells
//!   fail with ``Error parsing number "x" at line N: ...`` where N counts records from 1;
//! - like Meilisearch, bytes after the closing `]` of a JSON array are ignored;
//! - the fast path streams; when it meets any error it re-reads the payload from the start the
//!   way Meilisearch does ([`exact_json_error`], [`exact_ndjson_error`]) so the reported position
//!   and wording are exactly Meilisearch's. That second pass only happens on the error path.
//!
//! Why serde_json and not simd-json: simd-json parses a mutable copy of a whole buffer (it
//! rewrites strings in place), so streaming documents out of a read-only mapping would need a
//! per-document copy, and its error messages differ from serde_json's, which Meilisearch returns
//! verbatim. Measured on the 886,009-document PyPI NDJSON (release, 2 shared cores, see the
//! `payload_bench` binary, 139 MB payload): serde_json streaming from the mapping validates and
//! counts 357k documents/s and yields documents with id extraction at 372k documents/s, while
//! simd-json with a per-line mutable copy parses 274k documents/s; peak RSS 136 MiB, which is the
//! mapped payload's pages (no second copy). So serde_json is used.

use std::fmt;
use std::fs::File;

use memmap2::Mmap;
use serde_json::Value;
use serde_json::error::Category;

use super::Document;
use super::error::DocumentsError;
use super::payload_csv::CsvDocuments;

/// The CSV delimiter when the `csvDelimiter` parameter is absent.
pub const CSV_DELIMITER_DEFAULT: u8 = b',';

/// The detail Meilisearch reports for a JSON payload that is neither an object nor an array.
const NEITHER_OBJECT_NOR_LIST: &str = "data are neither an object nor a list of objects";

/// The format of an update payload, chosen from its `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadFormat {
    /// `application/json`: an array of objects, or a single object.
    Json,
    /// `application/x-ndjson`: objects separated by whitespace.
    Ndjson,
    /// `text/csv`: a header record then one record per document.
    Csv { delimiter: u8 },
}

impl fmt::Display for PayloadFormat {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(match self {
            Self::Json => "json",
            Self::Ndjson => "ndjson",
            Self::Csv { .. } => "csv",
        })
    }
}

/// Parses the `csvDelimiter` query parameter: exactly one ASCII character.
pub fn csv_delimiter_from_parameter(value: &str) -> Result<u8, DocumentsError> {
    let mut characters = value.chars();
    let (Some(character), None) = (characters.next(), characters.next()) else {
        let found = match value.chars().count() {
            0 => "an empty string".to_string(),
            count => format!("the following string of {count} characters: `{value}`"),
        };
        return Err(DocumentsError::InvalidCsvDelimiter {
            message: format!(
                "Invalid value in parameter `csvDelimiter`: expected a string of one character, but found {found}"
            ),
        });
    };
    if character.is_ascii() {
        Ok(character as u8)
    } else {
        Err(DocumentsError::InvalidCsvDelimiter {
            message: format!("csv delimiter must be an ascii character. Found: `{character}`"),
        })
    }
}

/// An update file mapped into memory, read-only.
pub struct PayloadFile {
    /// `None` for an empty file, which cannot be mapped.
    mapping: Option<Mmap>,
}

impl PayloadFile {
    /// Maps `file`. The caller (the server) owns the update file and never writes to it again
    /// once it is handed here.
    pub fn open(file: &File) -> Result<Self, DocumentsError> {
        if file.metadata()?.len() == 0 {
            return Ok(Self { mapping: None });
        }
        // SAFETY: the update file is written completely before it is mapped and is never
        // modified or truncated while a `PayloadFile` exists (the server persists it, then only
        // reads it until the task is done), so the mapped bytes stay valid and unchanged.
        let mapping = unsafe { Mmap::map(file)? };
        Ok(Self {
            mapping: Some(mapping),
        })
    }

    /// The payload bytes.
    pub fn bytes(&self) -> &[u8] {
        self.mapping.as_deref().unwrap_or(&[])
    }

    /// The documents of this payload, one at a time.
    pub fn documents(&self, format: PayloadFormat) -> Result<Documents<'_>, DocumentsError> {
        documents(self.bytes(), format)
    }
}

/// The documents of `payload`, one at a time; `missing_payload` when it has zero bytes.
pub fn documents(payload: &[u8], format: PayloadFormat) -> Result<Documents<'_>, DocumentsError> {
    if payload.is_empty() {
        return Err(DocumentsError::MissingPayload { format });
    }
    let source = match format {
        PayloadFormat::Json => Source::Json(JsonDocuments::new(payload)),
        PayloadFormat::Ndjson => Source::Ndjson(NdjsonDocuments {
            payload,
            position: 0,
        }),
        PayloadFormat::Csv { delimiter } => Source::Csv(CsvDocuments::new(payload, delimiter)?),
    };
    Ok(Documents {
        source,
        failed: false,
    })
}

/// Validates the whole payload as Meilisearch does at upload and returns its document count
/// (`details.receivedDocuments`).
pub fn count_documents(payload: &[u8], format: PayloadFormat) -> Result<u64, DocumentsError> {
    let mut count = 0;
    for document in documents(payload, format)? {
        document?;
        count += 1;
    }
    Ok(count)
}

/// An iterator over the documents of a payload. After the first error it yields nothing more.
pub struct Documents<'payload> {
    source: Source<'payload>,
    failed: bool,
}

enum Source<'payload> {
    Json(JsonDocuments<'payload>),
    Ndjson(NdjsonDocuments<'payload>),
    Csv(CsvDocuments<'payload>),
}

impl Iterator for Documents<'_> {
    type Item = Result<Document, DocumentsError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let item = match &mut self.source {
            Source::Json(json) => json.next_document(),
            Source::Ndjson(ndjson) => ndjson.next_document(),
            Source::Csv(csv) => csv.next_document(),
        };
        if matches!(item, Some(Err(_))) {
            self.failed = true;
        }
        item
    }
}

/// Where the JSON reader is in the payload.
enum JsonState {
    /// Nothing read yet.
    Start,
    /// Inside the top-level array; `first` until one element was read.
    InArray { first: bool },
    /// The array was closed, the single object was read, or an error was reported.
    Done,
}

struct JsonDocuments<'payload> {
    payload: &'payload [u8],
    position: usize,
    state: JsonState,
}

impl<'payload> JsonDocuments<'payload> {
    fn new(payload: &'payload [u8]) -> Self {
        Self {
            payload,
            position: 0,
            state: JsonState::Start,
        }
    }

    fn skip_whitespace(&mut self) {
        while let Some(byte) = self.payload.get(self.position) {
            if !matches!(byte, b' ' | b'\n' | b'\t' | b'\r') {
                break;
            }
            self.position += 1;
        }
    }

    fn fail(&mut self) -> Option<Result<Document, DocumentsError>> {
        self.state = JsonState::Done;
        Some(Err(exact_json_error(self.payload)))
    }

    fn next_document(&mut self) -> Option<Result<Document, DocumentsError>> {
        match self.state {
            JsonState::Done => None,
            JsonState::Start => {
                self.skip_whitespace();
                if self.payload.get(self.position) == Some(&b'[') {
                    self.position += 1;
                    self.state = JsonState::InArray { first: true };
                    self.next_document()
                } else {
                    self.state = JsonState::Done;
                    Some(single_json_object(self.payload))
                }
            }
            JsonState::InArray { first } => {
                self.skip_whitespace();
                match self.payload.get(self.position) {
                    Some(b']') => {
                        self.state = JsonState::Done;
                        return None;
                    }
                    Some(b',') if !first => {
                        self.position += 1;
                        self.skip_whitespace();
                    }
                    _ if first => {}
                    _ => return self.fail(),
                }
                self.read_array_element()
            }
        }
    }

    fn read_array_element(&mut self) -> Option<Result<Document, DocumentsError>> {
        let rest = &self.payload[self.position..];
        // A stream deserializer reports how many bytes the element took; objects are
        // self-delimiting, so it does not look past the closing brace.
        let mut stream = serde_json::Deserializer::from_slice(rest).into_iter::<Document>();
        match stream.next() {
            Some(Ok(document)) => {
                self.position += stream.byte_offset();
                self.state = JsonState::InArray { first: false };
                Some(Ok(document))
            }
            Some(Err(_)) | None => self.fail(),
        }
    }
}

/// A JSON payload that does not start with `[`: it must be exactly one object.
fn single_json_object(payload: &[u8]) -> Result<Document, DocumentsError> {
    serde_json::from_slice::<Document>(payload).map_err(|error| malformed_json_from_single(&error))
}

fn malformed_json_from_single(error: &serde_json::Error) -> DocumentsError {
    let detail = match error.classify() {
        Category::Data => NEITHER_OBJECT_NOR_LIST.to_string(),
        _ => error.to_string(),
    };
    DocumentsError::MalformedJson {
        format: PayloadFormat::Json,
        detail,
    }
}

/// The error Meilisearch reports for a JSON payload the fast path refused: read it as a sequence
/// of values; a non-sequence falls back to a single object; the first non-object element is
/// reported with the serde "invalid type" message of that element alone.
pub fn exact_json_error(payload: &[u8]) -> DocumentsError {
    struct ElementsVisitor;
    impl<'de> serde::de::Visitor<'de> for ElementsVisitor {
        type Value = Option<Value>;
        fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
            formatter.write_str("a nonempty sequence")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut sequence: A,
        ) -> Result<Self::Value, A::Error> {
            while let Some(element) = sequence.next_element::<Value>()? {
                if !element.is_object() {
                    return Ok(Some(element));
                }
            }
            Ok(None)
        }
    }
    let mut deserializer = serde_json::Deserializer::from_slice(payload);
    match serde::Deserializer::deserialize_seq(&mut deserializer, ElementsVisitor) {
        Ok(Some(element)) => not_an_object(&element),
        Ok(None) => DocumentsError::MalformedJson {
            format: PayloadFormat::Json,
            detail: NEITHER_OBJECT_NOR_LIST.to_string(),
        },
        Err(error) if error.classify() == Category::Data => match single_json_object(payload) {
            Err(error) => error,
            Ok(_) => DocumentsError::MalformedJson {
                format: PayloadFormat::Json,
                detail: NEITHER_OBJECT_NOR_LIST.to_string(),
            },
        },
        Err(error) => DocumentsError::MalformedJson {
            format: PayloadFormat::Json,
            detail: error.to_string(),
        },
    }
}

/// The error for a valid JSON value that is not an object: the message serde gives when that
/// value's own text is read as a map (positions relative to the value, as in Meilisearch).
fn not_an_object(value: &Value) -> DocumentsError {
    let text = value.to_string();
    let detail = match serde_json::from_str::<Document>(&text) {
        Err(error) => error.to_string(),
        Ok(_) => NEITHER_OBJECT_NOR_LIST.to_string(),
    };
    DocumentsError::DocumentNotAnObject { detail }
}

struct NdjsonDocuments<'payload> {
    payload: &'payload [u8],
    position: usize,
}

impl NdjsonDocuments<'_> {
    fn next_document(&mut self) -> Option<Result<Document, DocumentsError>> {
        let rest = &self.payload[self.position..];
        let mut stream = serde_json::Deserializer::from_slice(rest).into_iter::<Document>();
        match stream.next()? {
            Ok(document) => {
                self.position += stream.byte_offset();
                Some(Ok(document))
            }
            Err(_) => {
                self.position = self.payload.len();
                Some(Err(exact_ndjson_error(self.payload)))
            }
        }
    }
}

/// The error Meilisearch reports for an NDJSON payload the fast path refused: the first syntax
/// error of the stream (positions in the whole payload), or the first value that is not an
/// object.
pub fn exact_ndjson_error(payload: &[u8]) -> DocumentsError {
    for value in serde_json::Deserializer::from_slice(payload).into_iter::<Value>() {
        match value {
            Ok(value) if value.is_object() => {}
            Ok(value) => return not_an_object(&value),
            Err(error) => {
                return DocumentsError::MalformedJson {
                    format: PayloadFormat::Ndjson,
                    detail: error.to_string(),
                };
            }
        }
    }
    DocumentsError::MalformedJson {
        format: PayloadFormat::Ndjson,
        detail: NEITHER_OBJECT_NOR_LIST.to_string(),
    }
}
