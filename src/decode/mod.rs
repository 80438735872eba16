//! Request decoding shared by every route: JSON bodies and query strings turned into typed
//! values, or into the exact error Meilisearch answers for the same input.
//!
//! Flow of a JSON body (same order as Meilisearch, so the same error wins):
//! 1. [`json::check_json_content_type`]: 415 `missing_content_type` / `invalid_content_type`;
//! 2. body-reading failures ([`payload`]): a known `Content-Length` over the limit (500),
//!    a streamed body over the limit (413), a truncated body (400);
//! 3. [`json::parse_json_body`]: 400 `missing_payload` / `malformed_payload`;
//! 4. typed validation with `deserr` into a struct whose fields name their error codes.
//!
//! [`json::decode_json_request`] runs the four steps in that order.
//!
//! Query strings: [`query::decode_query`] splits the string into a map of strings, then
//! validates it the same way; [`query::Param`] and [`star_or`] parse the string values.
//!
//! Invariants:
//! - an error inside a field's value carries the code of the outermost field that declares
//!   one (its `error = JsonError<codes::X>` attribute); only problems of the top-level object
//!   itself (unknown or missing key, wrong root type) use the struct's own code;
//! - only the first problem found is reported, in body key order.

pub mod error;
pub mod json;
pub mod payload;
pub mod query;
pub mod star_or;

#[cfg(test)]
mod tests;

pub use error::{DecodeError, JsonError, JsonFormat, MessageFormat, QueryError, QueryFormat};
pub use json::{decode_json_body, decode_json_request, decode_json_value};
pub use payload::BodyReadFailure;
pub use query::{FromQueryParameter, Param, decode_query};
pub use star_or::{OptionStarOr, OptionStarOrList};
