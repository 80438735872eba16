//! The external document id: extraction from a document at its primary key and validation
//! (Meilisearch v1.41 `validate_document_id_str` and the new indexer's id visitors).
//!
//! Invariants:
//! - an id is a JSON string or an integer (signed or unsigned 64-bit); integers are turned into
//!   their decimal text, so `1` and `"1"` are the same document;
//! - a string id is non-empty, at most [`DOCUMENT_ID_BYTES_MAX`] bytes, made only of ASCII
//!   letters, digits, `-` and `_`; anything else (floats, booleans, null, arrays, objects, bad
//!   strings) is `invalid_document_id`, printed as compact JSON;
//! - a nested primary key `a.b` is looked up through every split of the path: the top-level field
//!   `a.b`, or field `b` of the object at `a` (recursively); a value that is not an object on the
//!   way is skipped; two matches are `invalid_document_id` ("too many matching"), none is
//!   `missing_document_id`; the first invalid match found is reported.

use serde_json::Value;

use super::Document;
use super::error::DocumentsError;
use super::primary_key::possible_level_names;

/// The longest accepted string document id, in bytes.
pub const DOCUMENT_ID_BYTES_MAX: usize = 511;

/// Whether `document_id` is a valid string document id.
pub fn is_valid_document_id(document_id: &str) -> bool {
    !document_id.is_empty()
        && document_id.len() <= DOCUMENT_ID_BYTES_MAX
        && document_id
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_')
}

/// The canonical external id of a primary key value.
pub fn document_id_from_value(value: &Value) -> Result<String, DocumentsError> {
    match value {
        Value::String(text) if is_valid_document_id(text) => Ok(text.clone()),
        Value::Number(number) if number.is_i64() || number.is_u64() => Ok(number.to_string()),
        other => Err(DocumentsError::InvalidDocumentId {
            document_id: other.clone(),
        }),
    }
}

/// Why looking for the id inside one value failed.
enum Lookup {
    /// An id value was found but is invalid.
    Invalid(DocumentsError),
    /// Two id values were found.
    TooMany,
}

/// The external id of `document` under `primary_key` (a field name or a dotted path).
pub fn extract_document_id(
    document: &Document,
    primary_key: &str,
) -> Result<String, DocumentsError> {
    match find_in_object(document, primary_key) {
        Ok(Some(document_id)) => Ok(document_id),
        Ok(None) => Err(DocumentsError::MissingDocumentId {
            primary_key: primary_key.to_string(),
            document: document.clone(),
        }),
        Err(Lookup::Invalid(error)) => Err(error),
        Err(Lookup::TooMany) => Err(DocumentsError::TooManyDocumentIds {
            primary_key: primary_key.to_string(),
            document: document.clone(),
        }),
    }
}

/// Looks for `path` among the fields of `object`, in field order.
fn find_in_object(object: &Document, path: &str) -> Result<Option<String>, Lookup> {
    let mut found = None;
    for (key, value) in object {
        let Some((_, rest)) = possible_level_names(path).find(|(level, _)| level == key) else {
            continue;
        };
        let matched = if rest.is_empty() {
            Some(document_id_from_value(value).map_err(Lookup::Invalid)?)
        } else {
            match value {
                Value::Object(inner) => find_in_object(inner, rest)?,
                _ => None,
            }
        };
        if let Some(matched) = matched {
            if found.replace(matched).is_some() {
                return Err(Lookup::TooMany);
            }
        }
    }
    Ok(found)
}
