//! Bringing a request's body to the decode layer: the HTTP layer's reading failures become
//! the errors Meilisearch answers for them.

use deserr::{DeserializeError, Deserr};

use crate::decode::json::{check_json_content_type, parse_json_body};
use crate::decode::payload::body_read_error;
use crate::decode::{BodyReadFailure, decode_json_request};
use crate::errors::{Code, ResponseError};
use crate::http::{BodyError, Request};

/// Decodes the JSON body of `request` into `T`, checking the content type first.
pub fn json<T, E>(request: &Request) -> Result<T, ResponseError>
where
    T: Deserr<E>,
    E: DeserializeError + Into<ResponseError>,
{
    let body = match &request.body {
        Ok(bytes) => Ok(bytes.as_slice()),
        Err(error) => Err(read_failure(error)?),
    };
    decode_json_request::<T, E>(request.headers.get("content-type"), body)
}

/// The JSON body of `request` read by plain serde into `T`, for the routes Meilisearch reads
/// that way: type errors are `Json deserialize error: <serde's message>`, positions included.
pub fn serde_json<T: serde::de::DeserializeOwned>(request: &Request) -> Result<T, ResponseError> {
    match &request.body {
        Ok(bytes) => {
            crate::decode::json::decode_serde_json_body(request.headers.get("content-type"), bytes)
        }
        Err(error) => {
            check_json_content_type(request.headers.get("content-type"))?;
            Err(body_read_error(read_failure(error)?))
        }
    }
}

/// The JSON body of `request` as a value, for routes that validate it themselves: the
/// content type, reading failures and syntax are checked in Meilisearch's order.
pub fn json_value(request: &Request) -> Result<serde_json::Value, ResponseError> {
    check_json_content_type(request.headers.get("content-type"))?;
    match &request.body {
        Ok(bytes) => parse_json_body(bytes),
        Err(error) => Err(body_read_error(read_failure(error)?)),
    }
}

/// The bytes of a JSON body, once its content type and its reading are checked, in
/// Meilisearch's order.
pub fn json_bytes(request: &Request) -> Result<&[u8], ResponseError> {
    check_json_content_type(request.headers.get("content-type"))?;
    match &request.body {
        Ok(bytes) => Ok(bytes),
        Err(error) => Err(body_read_error(read_failure(error)?)),
    }
}

/// Decodes the JSON body of `request` with serde, for the routes Meilisearch decodes with
/// serde: a type error is 400 `bad_request` `Json deserialize error: <serde's message>`.
pub fn serde_body<T: serde::de::DeserializeOwned>(request: &Request) -> Result<T, ResponseError> {
    serde_json::from_slice(json_bytes(request)?).map_err(crate::decode::json::json_syntax_error)
}

/// The decode layer's view of a body that could not be read, or the error to answer at
/// once for a body whose encoding is unusable.
pub fn read_failure(error: &BodyError) -> Result<BodyReadFailure, ResponseError> {
    match error {
        BodyError::TooLarge {
            content_length,
            limit,
        } => Ok(BodyReadFailure::TooLarge {
            content_length: *content_length,
            limit: *limit,
        }),
        BodyError::Incomplete => Ok(BodyReadFailure::Incomplete),
        // Meilisearch's words, with the decoder's error as Rust's `Debug` shows it.
        BodyError::MalformedEncoding(detail) => Err(ResponseError::new(
            Code::BadRequest,
            format!(
                "Error that occur during reading payload: payload reached EOF before completing: Some({detail})"
            ),
        )),
        BodyError::Sink { message, os_error } => Err(crate::errors::io_error(&match os_error {
            Some(code) => std::io::Error::from_raw_os_error(*code),
            None => std::io::Error::other(message.clone()),
        })),
    }
}
