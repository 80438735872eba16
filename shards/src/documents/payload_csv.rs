//! CSV payloads: the first record is the header, each further record one flat document.
//!
//! Invariants (Meilisearch v1.41 `read_csv`):
//! - a header `name:type` is typed when the text after its **last** `:` is `string`, `number` or
//!   `boolean`; otherwise the whole header is the field name of a string column;
//! - string cells are kept untrimmed, an empty cell is `null`;
//! - number and boolean cells are trimmed; empty is `null`; numbers are `i64` when they parse as
//!   one, else `f64` (a non-finite float becomes `null`), else the cell fails with
//!   ``Error parsing number "<cell>" at line <record>: <reason>`` (records count from 1, the
//!   header excluded; the cell is quoted with Rust's debug escaping);
//! - every document has every header field, in header order (a repeated header keeps its first
//!   position and the value of its last column);
//! - reader settings are the `csv` crate defaults (quotes, doubled quotes, equal record lengths).

use serde_json::Value;

use super::Document;
use super::error::DocumentsError;

/// The declared type of a CSV column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnType {
    /// Raw text (the default).
    String,
    /// `i64`, else `f64`.
    Number,
    /// `true` or `false`.
    Boolean,
}

/// Splits a header into its field name and column type.
pub fn parse_header(header: &str) -> (&str, ColumnType) {
    match header.rsplit_once(':') {
        Some((name, "string")) => (name, ColumnType::String),
        Some((name, "number")) => (name, ColumnType::Number),
        Some((name, "boolean")) => (name, ColumnType::Boolean),
        _ => (header, ColumnType::String),
    }
}

/// Reads the documents of a CSV payload one record at a time.
pub struct CsvDocuments<R> {
    reader: csv::Reader<R>,
    columns: Vec<(String, ColumnType)>,
    record: csv::StringRecord,
    /// The number of the record being converted, counting data records from 1.
    record_number: usize,
}

impl<R: std::io::Read> CsvDocuments<R> {
    /// Reads the header of `payload` (the `csv` crate reads it through its own buffer, so the
    /// payload streams).
    pub fn new(payload: R, delimiter: u8) -> Result<Self, DocumentsError> {
        let mut reader = csv::ReaderBuilder::new()
            .delimiter(delimiter)
            .from_reader(payload);
        let headers = reader.headers().map_err(malformed)?;
        let columns = headers
            .iter()
            .map(|header| {
                let (name, column_type) = parse_header(header);
                (name.to_string(), column_type)
            })
            .collect();
        Ok(Self {
            reader,
            columns,
            record: csv::StringRecord::new(),
            record_number: 0,
        })
    }

    /// The next document, `None` at the end of the payload.
    pub fn next_document(&mut self) -> Option<Result<Document, DocumentsError>> {
        match self.reader.read_record(&mut self.record) {
            Ok(false) => None,
            Ok(true) => {
                self.record_number += 1;
                Some(self.convert_record())
            }
            Err(error) => Some(Err(malformed(error))),
        }
    }

    fn convert_record(&self) -> Result<Document, DocumentsError> {
        let mut document = Document::new();
        for ((name, column_type), cell) in self.columns.iter().zip(self.record.iter()) {
            let value = convert_cell(cell, *column_type, self.record_number)?;
            document.insert(name.clone(), value);
        }
        Ok(document)
    }
}

/// Converts one cell of a record numbered `record_number` to its JSON value.
pub fn convert_cell(
    cell: &str,
    column_type: ColumnType,
    record_number: usize,
) -> Result<Value, DocumentsError> {
    let trimmed = cell.trim();
    match column_type {
        ColumnType::String if cell.is_empty() => Ok(Value::Null),
        ColumnType::String => Ok(Value::from(cell)),
        ColumnType::Number | ColumnType::Boolean if trimmed.is_empty() => Ok(Value::Null),
        ColumnType::Number => match trimmed.parse::<i64>() {
            Ok(integer) => Ok(Value::from(integer)),
            Err(_) => match trimmed.parse::<f64>() {
                Ok(float) => Ok(Value::from(float)),
                Err(error) => Err(DocumentsError::MalformedCsv {
                    detail: format!(
                        "Error parsing number {cell:?} at line {record_number}: {error}"
                    ),
                }),
            },
        },
        ColumnType::Boolean => match trimmed.parse::<bool>() {
            Ok(boolean) => Ok(Value::from(boolean)),
            Err(error) => Err(DocumentsError::MalformedCsv {
                detail: format!("Error parsing boolean {cell:?} at line {record_number}: {error}"),
            }),
        },
    }
}

fn malformed(error: csv::Error) -> DocumentsError {
    match error.kind() {
        csv::ErrorKind::Io(io_error) => DocumentsError::Io {
            detail: io_error.to_string(),
            os_error: io_error.raw_os_error(),
        },
        _ => DocumentsError::MalformedCsv {
            detail: error.to_string(),
        },
    }
}
