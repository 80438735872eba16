//! The query string of `GET /keys`: `offset` (default 0) and `limit` (default
//! [`KEY_LIST_LIMIT_DEFAULT`]), with Meilisearch's codes and messages.
//!
//! Like [`super::body`], this is a stopgap until the shared decode layer parses query
//! strings for every route. Parameters are checked in the order given; the first problem
//! wins.

use super::json_messages::did_you_mean;
use super::store::KEY_LIST_LIMIT_DEFAULT;
use crate::errors::{Code, ResponseError};

/// The parameters `GET /keys` accepts, in declaration order.
pub const KEY_LIST_PARAMETERS: &[&str] = &["offset", "limit"];

/// A validated `GET /keys` query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyListQuery {
    pub offset: usize,
    pub limit: usize,
}

impl Default for KeyListQuery {
    fn default() -> Self {
        KeyListQuery {
            offset: 0,
            limit: KEY_LIST_LIMIT_DEFAULT,
        }
    }
}

fn parse_count(name: &str, value: &str, code: Code) -> Result<usize, ResponseError> {
    value.parse().map_err(|_| {
        ResponseError::new(
            code,
            format!("Invalid value in parameter `{name}`: could not parse `{value}` as a positive integer"),
        )
    })
}

/// Validates the decoded `(name, value)` pairs of the query string.
pub fn parse_key_list_query<'a>(
    parameters: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<KeyListQuery, ResponseError> {
    let mut query = KeyListQuery::default();
    for (name, value) in parameters {
        match name {
            "offset" => query.offset = parse_count(name, value, Code::InvalidApiKeyOffset)?,
            "limit" => query.limit = parse_count(name, value, Code::InvalidApiKeyLimit)?,
            unknown => {
                let expected = KEY_LIST_PARAMETERS
                    .iter()
                    .map(|parameter| format!("`{parameter}`"))
                    .collect::<Vec<_>>()
                    .join(", ");
                return Err(ResponseError::new(
                    Code::BadRequest,
                    format!(
                        "Unknown parameter `{unknown}`: {}expected one of {expected}",
                        did_you_mean(unknown, KEY_LIST_PARAMETERS)
                    ),
                ));
            }
        }
    }
    Ok(query)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_values() {
        assert_eq!(
            parse_key_list_query([]).expect("parse_key_list_query succeeds"),
            KeyListQuery {
                offset: 0,
                limit: 20
            }
        );
        let query = parse_key_list_query([("limit", "3"), ("offset", "7")])
            .expect("parse_key_list_query succeeds");
        assert_eq!(
            query,
            KeyListQuery {
                offset: 7,
                limit: 3
            }
        );
    }

    #[test]
    fn errors_are_worded_like_meilisearch() {
        let error = parse_key_list_query([("offset", "doggo")]).unwrap_err();
        assert_eq!(error.code, Code::InvalidApiKeyOffset);
        assert_eq!(
            error.message,
            "Invalid value in parameter `offset`: could not parse `doggo` as a positive integer"
        );
        let error = parse_key_list_query([("limit", "-1")]).unwrap_err();
        assert_eq!(error.code, Code::InvalidApiKeyLimit);
        assert_eq!(
            error.message,
            "Invalid value in parameter `limit`: could not parse `-1` as a positive integer"
        );
        let error = parse_key_list_query([("doggo", "no_limit")]).unwrap_err();
        assert_eq!(error.code, Code::BadRequest);
        assert_eq!(
            error.message,
            "Unknown parameter `doggo`: expected one of `offset`, `limit`"
        );
        let error = parse_key_list_query([("limits", "1")]).unwrap_err();
        assert_eq!(
            error.message,
            "Unknown parameter `limits`: did you mean `limit`? expected one of `offset`, `limit`"
        );
    }
}
