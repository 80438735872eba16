//! Update payloads: JSON (an array of objects, or one object), NDJSON and CSV, read one document
//! at a time from any seekable byte source (the update file, a byte slice).
//!
//! Invariants:
//! - the payload is streamed: it is read in chunks of
//!   [`super::chunked_input::PAYLOAD_READ_CHUNK_BYTES`] and only the document being parsed (and
//!   the rest of its chunk) is in memory, whatever the payload's size;
//! - JSON and NDJSON documents are cut out of the stream by a string-and-nesting scan and parsed
//!   with simd-json ([`super::simd_document`]); serde_json judges whatever simd-json refuses;
//! - what is accepted is what Meilisearch v1.41 accepts: an array element or an NDJSON value
//!   needs valid syntax and string keys, its values are only scanned (a number out of range,
//!   a lone surrogate, a value nested too deep are accepted and fail the task when the document
//!   is built, see [`super::field_values`]); a JSON payload that is one object is read whole;
//! - the errors are Meilisearch v1.41's (`document_formats.rs`): a zero-byte payload is
//!   `missing_payload`; syntax errors are `malformed_payload` with serde's message and position
//!   *in the whole payload*; a JSON value that is neither an object nor an array is
//!   ``data are neither an object nor a list of objects``; an array element or NDJSON value that
//!   is not an object is the serde "invalid type" message (positioned in the element's own
//!   text) with code `internal` (Meilisearch classifies that serde error as I/O), a key that
//!   is no string (a lone surrogate) is `malformed_payload`, positioned likewise; CSV errors are the `csv` crate's messages, typed cells
//!   fail with ``Error parsing number "x" at line N: ...`` where N counts records from 1;
//! - like Meilisearch, bytes after the closing `]` of a JSON array are ignored;
//! - the fast path streams; when it meets any error it re-reads the payload from the start with
//!   serde_json, the way Meilisearch does ([`exact_json_error`], [`exact_ndjson_error`]), so the
//!   reported position and wording are exactly Meilisearch's. That second pass only happens on
//!   the error path.

use std::fmt;
use std::fs::File;
use std::io::{BufReader, Cursor, Read, Seek, SeekFrom};

use memmap2::Mmap;
use serde_json::error::Category;
use serde_json::value::RawValue;

use super::Document;
use super::chunked_input::ChunkedInput;
use super::document_id::extract_document_id;
use super::error::DocumentsError;
use super::field_values::{parse_fields_lossy, validate_object};
use super::id_scan::scan_top_level_id;
use super::payload_csv::CsvDocuments;
use super::payload_document::PayloadDocument;
use super::simd_document::SimdParser;

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

/// Where one JSON object of a payload lies: its first byte and its length, in bytes from the
/// payload's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DocumentSpan {
    pub offset: u64,
    pub length: u64,
}

/// An update file mapped into memory, read-only (for callers that already hold the bytes;
/// the server streams update files with [`documents_from`] instead).
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
    pub fn documents(&self, format: PayloadFormat) -> Result<SliceDocuments<'_>, DocumentsError> {
        documents(self.bytes(), format)
    }
}

/// The documents of a payload held in memory.
pub type SliceDocuments<'payload> = Documents<Cursor<&'payload [u8]>>;

/// The documents of `payload`, one at a time; `missing_payload` when it has zero bytes.
pub fn documents(
    payload: &[u8],
    format: PayloadFormat,
) -> Result<SliceDocuments<'_>, DocumentsError> {
    documents_from(Cursor::new(payload), format)
}

/// The documents of the payload `source` holds from its start, read in bounded chunks;
/// `missing_payload` when it has zero bytes.
pub fn documents_from<R: Read + Seek>(
    mut source: R,
    format: PayloadFormat,
) -> Result<Documents<R>, DocumentsError> {
    let length = source.seek(SeekFrom::End(0))?;
    source.seek(SeekFrom::Start(0))?;
    if length == 0 {
        return Err(DocumentsError::MissingPayload { format });
    }
    let source = match format {
        PayloadFormat::Json => Source::Json(JsonDocuments::new(source)),
        PayloadFormat::Ndjson => Source::Ndjson(NdjsonDocuments::new(source)),
        PayloadFormat::Csv { delimiter } => Source::Csv(CsvDocuments::new(source, delimiter)?),
    };
    Ok(Documents {
        source,
        failed: false,
    })
}

/// Validates the whole payload as Meilisearch does at upload and returns its document count
/// (`details.receivedDocuments`).
pub fn count_documents(payload: &[u8], format: PayloadFormat) -> Result<u64, DocumentsError> {
    count_documents_from(Cursor::new(payload), format)
}

/// [`count_documents`] of the payload `source` holds, streamed; JSON and NDJSON documents are
/// validated without being built.
pub fn count_documents_from<R: Read + Seek>(
    source: R,
    format: PayloadFormat,
) -> Result<u64, DocumentsError> {
    let mut documents = documents_from(source, format)?;
    let mut count = 0;
    while let Some(outcome) = documents.next_item(Mode::Validate) {
        outcome?;
        count += 1;
    }
    Ok(count)
}

/// An iterator over the documents of a payload. After the first error it yields nothing more.
pub struct Documents<R> {
    source: Source<R>,
    failed: bool,
}

enum Source<R> {
    Json(JsonDocuments<R>),
    Ndjson(NdjsonDocuments<R>),
    Csv(CsvDocuments<R>),
}

/// What a reader makes of the next document.
#[derive(Debug, Clone, Copy)]
enum Mode<'key> {
    /// Only check it: its syntax and keys (an element of an array, an NDJSON line).
    Validate,
    /// Only check it, values included (a JSON payload that is one object).
    ValidateWhole,
    /// Build it; a value that does not parse (accepted at upload, see
    /// [`super::field_values`]) reads as `null`: such a document fails its batch when it is
    /// built for its shard, which reads the text again.
    Build,
    /// Only its id under this primary key (the document is built only when the id needs the
    /// slow path: a dotted key, a missing or invalid id). The id is first looked for by a scan
    /// of the object's top level ([`scan_top_level_id`]), which trusts the text to be valid
    /// JSON: this mode reads only update files, which were validated when uploaded.
    Id(&'key str),
    /// Only its text (a CSV record is built).
    Text,
}

/// What a reader made of a document.
enum Parsed {
    Validated,
    Document(Document),
    Id(String),
    Text(Box<[u8]>),
}

/// One step of a reader: the parsed document, or the payload's (or the id's) error.
type Item = Result<Parsed, DocumentsError>;

impl<R: Read + Seek> Documents<R> {
    fn next_item(&mut self, mode: Mode<'_>) -> Option<Item> {
        if self.failed {
            return None;
        }
        let item = match &mut self.source {
            Source::Json(json) => json.next_item(mode),
            Source::Ndjson(ndjson) => ndjson.next_item(mode),
            Source::Csv(csv) => csv.next_document().map(|result| {
                let document = result?;
                match mode {
                    Mode::Id(primary_key) => {
                        extract_document_id(&document, primary_key).map(Parsed::Id)
                    }
                    // A CSV record is built as it is read: it goes on built.
                    _ => Ok(Parsed::Document(document)),
                }
            }),
        };
        if matches!(item, Some(Err(_))) {
            self.failed = true;
        }
        item
    }

    /// The next document as the payload holds it: the text of a JSON or NDJSON document,
    /// not parsed again (the batch's planning read and checked it), or a CSV record built.
    pub fn next_unparsed(&mut self) -> Option<Result<PayloadDocument, DocumentsError>> {
        Some(match self.next_item(Mode::Text)? {
            Ok(Parsed::Text(text)) => Ok(PayloadDocument::Text(text)),
            Ok(Parsed::Document(document)) => Ok(PayloadDocument::Built(document)),
            Ok(_) => Err(unexpected_parse()),
            Err(error) => Err(error),
        })
    }

    /// Where the document read last lies in the payload: `None` for a CSV record (not one
    /// JSON object) or before the first document.
    pub fn last_span(&self) -> Option<DocumentSpan> {
        match &self.source {
            Source::Json(json) => json.last_span,
            Source::Ndjson(ndjson) => ndjson.last_span,
            Source::Csv(_) => None,
        }
    }

    /// The id under `primary_key` of the next document, without building the document when
    /// the id can be read directly (a plain key holding a valid id); the errors are those of
    /// [`extract_document_id`] on the built document. For payloads validated before (update
    /// files): a malformed object may be given an id instead of failing here.
    pub fn next_id(&mut self, primary_key: &str) -> Option<Result<String, DocumentsError>> {
        Some(match self.next_item(Mode::Id(primary_key))? {
            Ok(Parsed::Id(id)) => Ok(id),
            Ok(Parsed::Document(document)) => extract_document_id(&document, primary_key),
            Ok(_) => Err(unexpected_parse()),
            Err(error) => Err(error),
        })
    }
}

fn unexpected_parse() -> DocumentsError {
    DocumentsError::Io {
        detail: "a payload reader answered another kind of parse".to_string(),
        os_error: None,
    }
}

impl<R: Read + Seek> Iterator for Documents<R> {
    type Item = Result<Document, DocumentsError>;

    fn next(&mut self) -> Option<Self::Item> {
        Some(match self.next_item(Mode::Build)? {
            Ok(Parsed::Document(document)) => Ok(document),
            Ok(_) => Err(unexpected_parse()),
            Err(error) => Err(error),
        })
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

/// Reads one JSON object from `input` and parses it as `mode` says; `None` when the object
/// does not close or does not parse (the caller then reports the payload's exact error).
fn read_object<R: Read>(
    input: &mut ChunkedInput<R>,
    parser: &mut SimdParser,
    mode: Mode<'_>,
    span: &mut Option<DocumentSpan>,
) -> Result<Option<Parsed>, DocumentsError> {
    let Some(length) = input.object_length()? else {
        return Ok(None);
    };
    *span = Some(DocumentSpan {
        offset: input.position(),
        length: length as u64,
    });
    let text = &input.window()[..length];
    let parsed = match mode {
        Mode::Validate => parser.validate(text).map(|()| Parsed::Validated),
        Mode::ValidateWhole => parser.validate_whole(text).map(|()| Parsed::Validated),
        Mode::Build => parser
            .parse(text)
            .or_else(|_| parse_fields_lossy(text))
            .map(Parsed::Document),
        Mode::Id(primary_key) => {
            match scan_top_level_id(text, primary_key).or_else(|| parser.id(text, primary_key)) {
                Some(id) => Ok(Parsed::Id(id)),
                None => parser
                    .parse(text)
                    .or_else(|_| parse_fields_lossy(text))
                    .map(Parsed::Document),
            }
        }
        Mode::Text => Ok(Parsed::Text(text.into())),
    };
    input.consume(length);
    Ok(parsed.ok())
}

struct JsonDocuments<R> {
    input: ChunkedInput<R>,
    parser: SimdParser,
    state: JsonState,
    /// Where the object read last lies.
    last_span: Option<DocumentSpan>,
}

impl<R: Read + Seek> JsonDocuments<R> {
    fn new(source: R) -> Self {
        Self {
            input: ChunkedInput::new(source),
            parser: SimdParser::new(),
            state: JsonState::Start,
            last_span: None,
        }
    }

    fn fail(&mut self) -> Option<Item> {
        self.state = JsonState::Done;
        Some(Err(exact_json_error(self.input.source_mut())))
    }

    fn next_item(&mut self, mode: Mode<'_>) -> Option<Item> {
        match self.step(mode) {
            Ok(Some(Some(item))) => Some(Ok(item)),
            Ok(Some(None)) => None,
            Ok(None) => self.fail(),
            Err(error) => {
                self.state = JsonState::Done;
                Some(Err(error))
            }
        }
    }

    /// `Some(Some(parsed))` for a document, `Some(None)` at the end, `None` on a payload error
    /// (to be reported exactly).
    fn step(&mut self, mode: Mode<'_>) -> Result<Option<Option<Parsed>>, DocumentsError> {
        match self.state {
            JsonState::Done => Ok(Some(None)),
            JsonState::Start => match self.input.skip_whitespace()? {
                Some(b'[') => {
                    self.input.consume(1);
                    self.state = JsonState::InArray { first: true };
                    self.step(mode)
                }
                Some(b'{') => {
                    self.state = JsonState::Done;
                    // Meilisearch reads a lone object whole, values included.
                    let mode = match mode {
                        Mode::Validate => Mode::ValidateWhole,
                        other => other,
                    };
                    let Some(document) =
                        read_object(&mut self.input, &mut self.parser, mode, &mut self.last_span)?
                    else {
                        return Ok(None);
                    };
                    match self.input.skip_whitespace()? {
                        None => Ok(Some(Some(document))),
                        Some(_) => Ok(None),
                    }
                }
                _ => Ok(None),
            },
            JsonState::InArray { first } => {
                match self.input.skip_whitespace()? {
                    Some(b']') => {
                        self.state = JsonState::Done;
                        return Ok(Some(None));
                    }
                    Some(b',') if !first => {
                        self.input.consume(1);
                        self.input.skip_whitespace()?;
                    }
                    Some(_) if first => {}
                    _ => return Ok(None),
                }
                if self.input.window().first() != Some(&b'{') {
                    return Ok(None);
                }
                let Some(document) =
                    read_object(&mut self.input, &mut self.parser, mode, &mut self.last_span)?
                else {
                    return Ok(None);
                };
                self.state = JsonState::InArray { first: false };
                Ok(Some(Some(document)))
            }
        }
    }
}

/// Re-reads `source` from its start with `read`; an I/O error becomes the payload's error.
fn reread<R: Read + Seek>(
    source: &mut R,
    read: impl FnOnce(BufReader<&mut R>) -> DocumentsError,
) -> DocumentsError {
    match source.seek(SeekFrom::Start(0)) {
        Ok(_) => read(BufReader::new(source)),
        Err(error) => error.into(),
    }
}

fn malformed_json_from_single(error: &serde_json::Error) -> DocumentsError {
    if error.is_io() {
        return DocumentsError::Io {
            detail: error.to_string(),
            os_error: None,
        };
    }
    let detail = match error.classify() {
        Category::Data => NEITHER_OBJECT_NOR_LIST.to_string(),
        _ => error.to_string(),
    };
    DocumentsError::MalformedJson {
        format: PayloadFormat::Json,
        detail,
    }
}

/// The error Meilisearch reports for a JSON payload the fast path refused: read it as a
/// sequence of values, each only scanned, then each checked as an object of string keys (see
/// [`validate_object`]); a non-sequence falls back to a single object, read whole.
pub fn exact_json_error<R: Read + Seek>(source: &mut R) -> DocumentsError {
    struct ElementsVisitor;
    impl<'de> serde::de::Visitor<'de> for ElementsVisitor {
        type Value = Option<serde_json::Error>;
        fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
            formatter.write_str("a nonempty sequence")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut sequence: A,
        ) -> Result<Self::Value, A::Error> {
            while let Some(element) = sequence.next_element::<Box<RawValue>>()? {
                if let Err(error) = validate_object(element.get().as_bytes()) {
                    return Ok(Some(error));
                }
            }
            Ok(None)
        }
    }
    let sequence = match source.seek(SeekFrom::Start(0)) {
        Ok(_) => {
            let mut deserializer =
                serde_json::Deserializer::from_reader(BufReader::new(&mut *source));
            serde::Deserializer::deserialize_seq(&mut deserializer, ElementsVisitor)
        }
        Err(error) => return error.into(),
    };
    match sequence {
        Ok(Some(error)) => element_error(&error, PayloadFormat::Json),
        Ok(None) => DocumentsError::MalformedJson {
            format: PayloadFormat::Json,
            detail: NEITHER_OBJECT_NOR_LIST.to_string(),
        },
        // Not a sequence: read whole as one object, from memory as Meilisearch reads it (a
        // reader positions some errors, a number out of range, one column further).
        Err(error) if error.classify() == Category::Data => reread(source, |mut reader| {
            let mut bytes = Vec::new();
            if let Err(error) = reader.read_to_end(&mut bytes) {
                return error.into();
            }
            match serde_json::from_slice::<Document>(&bytes) {
                Err(error) => malformed_json_from_single(&error),
                Ok(_) => DocumentsError::MalformedJson {
                    format: PayloadFormat::Json,
                    detail: NEITHER_OBJECT_NOR_LIST.to_string(),
                },
            }
        }),
        Err(error) if error.is_io() => DocumentsError::Io {
            detail: error.to_string(),
            os_error: None,
        },
        Err(error) => DocumentsError::MalformedJson {
            format: PayloadFormat::Json,
            detail: error.to_string(),
        },
    }
}

/// The error for an element (of a JSON array, or an NDJSON value) that is not an object of
/// string keys, positioned in the element's own text as in Meilisearch: a value of another
/// type is the I/O-classified serde error (code `internal`), anything else is malformed.
fn element_error(error: &serde_json::Error, format: PayloadFormat) -> DocumentsError {
    if error.classify() == Category::Data {
        DocumentsError::DocumentNotAnObject {
            detail: error.to_string(),
        }
    } else {
        DocumentsError::MalformedJson {
            format,
            detail: error.to_string(),
        }
    }
}

struct NdjsonDocuments<R> {
    input: ChunkedInput<R>,
    parser: SimdParser,
    done: bool,
    /// Where the object read last lies.
    last_span: Option<DocumentSpan>,
}

impl<R: Read + Seek> NdjsonDocuments<R> {
    fn new(source: R) -> Self {
        Self {
            input: ChunkedInput::new(source),
            parser: SimdParser::new(),
            done: false,
            last_span: None,
        }
    }

    fn next_item(&mut self, mode: Mode<'_>) -> Option<Item> {
        if self.done {
            return None;
        }
        let step = match self.input.skip_whitespace() {
            Ok(None) => return None,
            Ok(Some(b'{')) => {
                read_object(&mut self.input, &mut self.parser, mode, &mut self.last_span)
            }
            Ok(Some(_)) => Ok(None),
            Err(error) => Err(error.into()),
        };
        match step {
            Ok(Some(document)) => Some(Ok(document)),
            Ok(None) => {
                self.done = true;
                Some(Err(exact_ndjson_error(self.input.source_mut())))
            }
            Err(error) => {
                self.done = true;
                Some(Err(error))
            }
        }
    }
}

/// The error Meilisearch reports for an NDJSON payload the fast path refused: the first syntax
/// error of the stream (positions in the whole payload), or the first value that is not an
/// object.
pub fn exact_ndjson_error<R: Read + Seek>(source: &mut R) -> DocumentsError {
    reread(source, |reader| {
        for value in serde_json::Deserializer::from_reader(reader).into_iter::<Box<RawValue>>() {
            match value {
                Ok(value) => {
                    if let Err(error) = validate_object(value.get().as_bytes()) {
                        return element_error(&error, PayloadFormat::Ndjson);
                    }
                }
                Err(error) if error.is_io() => {
                    return DocumentsError::Io {
                        detail: error.to_string(),
                        os_error: None,
                    };
                }
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
    })
}
