//! Why the rerank service gave no order, worded and coded as Meilisearch 1.41 answers it.
//!
//! Invariants: every message starts with `Personalization service: ` and never carries the
//! API key (only the service's status and answer); a failure that the search's time budget
//! cut short is not an error of this type (the hits then keep their order, see
//! [`super::call`]).

use std::fmt;

use crate::errors::{Code, ResponseError};

/// A failure of the rerank service that the search answers as an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PersonalizationError {
    /// A success status whose body is not a rerank answer.
    Parse(String),
    /// A 4xx other than 400, 401 and 429, or an unexpected status.
    Api(String),
    /// 401: the service refused the key.
    Unauthorized,
    /// 429, still after the last retry.
    RateLimited,
    /// 400, with the service's answer.
    BadRequest(String),
    /// 5xx, still after the last retry.
    InternalServerError(String),
    /// No answer: resolving, connecting, sending or receiving failed.
    Network(String),
}

impl PersonalizationError {
    /// Meilisearch's code for the failure.
    pub fn code(&self) -> Code {
        match self {
            PersonalizationError::Unauthorized => Code::RemoteInvalidApiKey,
            PersonalizationError::RateLimited => Code::TooManySearchRequests,
            PersonalizationError::BadRequest(_) => Code::RemoteBadRequest,
            PersonalizationError::InternalServerError(_) => Code::RemoteRemoteError,
            PersonalizationError::Network(_) => Code::RemoteCouldNotSendRequest,
            PersonalizationError::Parse(_) | PersonalizationError::Api(_) => {
                Code::RemoteBadResponse
            }
        }
    }

    /// The error the search answers.
    pub fn into_response_error(self) -> ResponseError {
        ResponseError::new(self.code(), self.to_string())
    }
}

impl fmt::Display for PersonalizationError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("Personalization service: ")?;
        match self {
            PersonalizationError::Parse(detail) => {
                write!(formatter, "Failed to parse response: {detail}")
            }
            PersonalizationError::Api(detail) => write!(formatter, "Cohere API error: {detail}"),
            PersonalizationError::Unauthorized => {
                formatter.write_str("Unauthorized: invalid API key")
            }
            PersonalizationError::RateLimited => {
                formatter.write_str("Rate limited: too many requests")
            }
            PersonalizationError::BadRequest(detail) => write!(formatter, "Bad request: {detail}"),
            PersonalizationError::InternalServerError(detail) => {
                write!(formatter, "Internal server error: {detail}")
            }
            PersonalizationError::Network(detail) => write!(formatter, "Network error: {detail}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_failure_has_meilisearch_code_status_and_message() {
        let cases = [
            (
                PersonalizationError::Unauthorized,
                "remote_invalid_api_key",
                403,
                "Personalization service: Unauthorized: invalid API key",
            ),
            (
                PersonalizationError::RateLimited,
                "too_many_search_requests",
                503,
                "Personalization service: Rate limited: too many requests",
            ),
            (
                PersonalizationError::BadRequest("{\"message\":\"no\"}".to_owned()),
                "remote_bad_request",
                400,
                "Personalization service: Bad request: {\"message\":\"no\"}",
            ),
            (
                PersonalizationError::InternalServerError("Status 500: down".to_owned()),
                "remote_remote_error",
                502,
                "Personalization service: Internal server error: Status 500: down",
            ),
            (
                PersonalizationError::Api("Status 404: gone".to_owned()),
                "remote_bad_response",
                502,
                "Personalization service: Cohere API error: Status 404: gone",
            ),
            (
                PersonalizationError::Network("Network error: refused".to_owned()),
                "remote_could_not_send_request",
                502,
                "Personalization service: Network error: Network error: refused",
            ),
        ];
        for (error, code, status, message) in cases {
            let answered = error.into_response_error();
            assert_eq!(answered.code.name(), code);
            assert_eq!(answered.status(), status);
            assert_eq!(answered.message, message);
        }
    }
}
