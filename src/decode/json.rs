//! JSON request bodies: the `Content-Type` check, the raw parse into a `serde_json::Value`,
//! and the typed validation with `deserr`, each failing with Meilisearch's exact error.
//!
//! Invariants:
//! - a body is accepted when its parsed media type has subtype `json` or suffix `+json`
//!   (parameters allowed); the header is required;
//! - the raw parse sees the whole body; an empty body is `missing_payload`, any other
//!   syntax or end-of-input error is `malformed_payload` with serde_json's own message;
//! - the typed step never sees an unparsed body.

use deserr::{DeserializeError, Deserr};
use serde::de::DeserializeOwned;
use serde_json::error::Category;

use super::payload::{BodyReadFailure, body_read_error};
use crate::errors::{Code, ResponseError};

/// The only media type JSON routes name in their content-type errors.
pub const JSON_MEDIA_TYPE: &str = "application/json";

/// The header value shown when the raw `Content-Type` is not visible ASCII.
const UNREADABLE_CONTENT_TYPE: &str = "unknown";

/// Checks the `Content-Type` header of a JSON route; `content_type` is the raw header value.
pub fn check_json_content_type(content_type: Option<&[u8]>) -> Result<(), ResponseError> {
    let Some(raw) = content_type else {
        return Err(missing_content_type(&[JSON_MEDIA_TYPE]));
    };
    let shown = header_text(raw);
    let is_json = shown
        .and_then(|text| text.parse::<mime::Mime>().ok())
        .is_some_and(|media| media.subtype() == mime::JSON || media.suffix() == Some(mime::JSON));
    if is_json {
        Ok(())
    } else {
        Err(invalid_content_type(
            shown.unwrap_or(UNREADABLE_CONTENT_TYPE),
            &[JSON_MEDIA_TYPE],
        ))
    }
}

/// The header value as text when it is visible ASCII (tab allowed), as HTTP libraries read it.
fn header_text(raw: &[u8]) -> Option<&str> {
    let visible = raw
        .iter()
        .all(|&byte| (b' '..=b'~').contains(&byte) || byte == b'\t');
    if visible {
        std::str::from_utf8(raw).ok()
    } else {
        None
    }
}

/// 415 `missing_content_type`, listing the `accepted` media types.
pub fn missing_content_type(accepted: &[&str]) -> ResponseError {
    ResponseError::new(
        Code::MissingContentType,
        format!(
            "A Content-Type header is missing. Accepted values for the Content-Type header are: {}",
            super::error::backticked_list(accepted)
        ),
    )
}

/// 415 `invalid_content_type` for the header value `shown`, listing the `accepted` types.
pub fn invalid_content_type(shown: &str, accepted: &[&str]) -> ResponseError {
    ResponseError::new(
        Code::InvalidContentType,
        format!(
            "The Content-Type `{shown}` is invalid. Accepted values for the Content-Type header are: {}",
            super::error::backticked_list(accepted)
        ),
    )
}

/// Parses a whole JSON body into a value, with the errors of an untyped JSON route.
pub fn parse_json_body(body: &[u8]) -> Result<serde_json::Value, ResponseError> {
    serde_json::from_slice(body).map_err(json_syntax_error)
}

/// Maps a serde_json error from reading a body to the API error Meilisearch answers with.
pub fn json_syntax_error(error: serde_json::Error) -> ResponseError {
    let empty_body = error.classify() == Category::Eof && error.line() == 1 && error.column() == 0;
    if empty_body {
        ResponseError::new(Code::MissingPayload, "A json payload is missing.")
    } else if error.classify() == Category::Data {
        ResponseError::new(Code::BadRequest, format!("Json deserialize error: {error}"))
    } else {
        ResponseError::new(
            Code::MalformedPayload,
            format!("The json payload provided is malformed. `{error}`."),
        )
    }
}

/// Validates a parsed value into `T` with error type `E` (usually [`super::JsonError`]).
pub fn decode_json_value<T, E>(value: serde_json::Value) -> Result<T, ResponseError>
where
    T: Deserr<E>,
    E: DeserializeError + Into<ResponseError>,
{
    deserr::deserialize::<T, serde_json::Value, E>(value).map_err(Into::into)
}

/// A whole JSON body, already read: content type, raw parse, typed validation.
pub fn decode_json_body<T, E>(content_type: Option<&[u8]>, body: &[u8]) -> Result<T, ResponseError>
where
    T: Deserr<E>,
    E: DeserializeError + Into<ResponseError>,
{
    check_json_content_type(content_type)?;
    decode_json_value::<T, E>(parse_json_body(body)?)
}

/// A JSON request whose body read may have failed: the content type is checked first, then
/// the read failure, then the body, as Meilisearch orders them.
pub fn decode_json_request<T, E>(
    content_type: Option<&[u8]>,
    body: Result<&[u8], BodyReadFailure>,
) -> Result<T, ResponseError>
where
    T: Deserr<E>,
    E: DeserializeError + Into<ResponseError>,
{
    check_json_content_type(content_type)?;
    let body = body.map_err(body_read_error)?;
    decode_json_value::<T, E>(parse_json_body(body)?)
}

/// A JSON body for the few routes that use plain serde instead of `deserr`: type errors are
/// 400 `bad_request` `Json deserialize error: <serde message>`.
pub fn decode_serde_json_body<T: DeserializeOwned>(
    content_type: Option<&[u8]>,
    body: &[u8],
) -> Result<T, ResponseError> {
    check_json_content_type(content_type)?;
    serde_json::from_slice(body).map_err(json_syntax_error)
}
