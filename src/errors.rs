//! The one error table of the HTTP API: every error code with its HTTP status and error
//! type, and the error object every failure leaves as.
//!
//! Invariants:
//! - a [`Code`] maps to exactly one status, one type and one snake_case name;
//! - the error object's keys are `message`, `code`, `type`, `link`, in that order, and
//!   `link` is `https://docs.meilisearch.com/errors#<code>`.

use std::fmt;

/// The kind of an error, as the `type` field of the error object names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorType {
    InvalidRequest,
    Internal,
    Auth,
    System,
}

impl ErrorType {
    /// The wire name of the type.
    pub fn name(self) -> &'static str {
        match self {
            ErrorType::InvalidRequest => "invalid_request",
            ErrorType::Internal => "internal",
            ErrorType::Auth => "auth",
            ErrorType::System => "system",
        }
    }
}

/// Declares the code table: variant, wire name, HTTP status, error type.
macro_rules! error_codes {
    ($($variant:ident => $name:literal, $status:literal, $kind:ident;)*) => {
        /// Every error code the API can answer with.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Code {
            $($variant,)*
        }

        impl Code {
            /// Every code, in table order.
            pub const ALL: &'static [Code] = &[$(Code::$variant,)*];

            /// The snake_case wire name of the code.
            pub fn name(self) -> &'static str {
                match self {
                    $(Code::$variant => $name,)*
                }
            }

            /// The HTTP status an error with this code is answered with.
            pub fn status(self) -> u16 {
                match self {
                    $(Code::$variant => $status,)*
                }
            }

            /// The error type of this code.
            pub fn error_type(self) -> ErrorType {
                match self {
                    $(Code::$variant => ErrorType::$kind,)*
                }
            }
        }
    };
}

error_codes! {
    ApiKeyAlreadyExists => "api_key_already_exists", 409, InvalidRequest;
    ApiKeyNotFound => "api_key_not_found", 404, InvalidRequest;
    BadRequest => "bad_request", 400, InvalidRequest;
    FeatureNotEnabled => "feature_not_enabled", 400, InvalidRequest;
    ImmutableApiKeyActions => "immutable_api_key_actions", 400, InvalidRequest;
    ImmutableApiKeyCreatedAt => "immutable_api_key_created_at", 400, InvalidRequest;
    ImmutableApiKeyExpiresAt => "immutable_api_key_expires_at", 400, InvalidRequest;
    ImmutableApiKeyIndexes => "immutable_api_key_indexes", 400, InvalidRequest;
    ImmutableApiKeyKey => "immutable_api_key_key", 400, InvalidRequest;
    ImmutableApiKeyUid => "immutable_api_key_uid", 400, InvalidRequest;
    ImmutableApiKeyUpdatedAt => "immutable_api_key_updated_at", 400, InvalidRequest;
    Internal => "internal", 500, Internal;
    InvalidApiKey => "invalid_api_key", 403, Auth;
    InvalidApiKeyActions => "invalid_api_key_actions", 400, InvalidRequest;
    InvalidApiKeyDescription => "invalid_api_key_description", 400, InvalidRequest;
    InvalidApiKeyExpiresAt => "invalid_api_key_expires_at", 400, InvalidRequest;
    InvalidApiKeyIndexes => "invalid_api_key_indexes", 400, InvalidRequest;
    InvalidApiKeyLimit => "invalid_api_key_limit", 400, InvalidRequest;
    InvalidApiKeyName => "invalid_api_key_name", 400, InvalidRequest;
    InvalidApiKeyOffset => "invalid_api_key_offset", 400, InvalidRequest;
    InvalidApiKeyUid => "invalid_api_key_uid", 400, InvalidRequest;
    InvalidContentType => "invalid_content_type", 415, InvalidRequest;
    MalformedPayload => "malformed_payload", 400, InvalidRequest;
    MissingApiKeyActions => "missing_api_key_actions", 400, InvalidRequest;
    MissingApiKeyExpiresAt => "missing_api_key_expires_at", 400, InvalidRequest;
    MissingApiKeyIndexes => "missing_api_key_indexes", 400, InvalidRequest;
    MissingAuthorizationHeader => "missing_authorization_header", 401, Auth;
    MissingContentType => "missing_content_type", 415, InvalidRequest;
    MissingMasterKey => "missing_master_key", 401, Auth;
    MissingPayload => "missing_payload", 400, InvalidRequest;
    PayloadTooLarge => "payload_too_large", 413, InvalidRequest;
}

impl Code {
    /// The documentation link of the code.
    pub fn link(self) -> String {
        format!("https://docs.meilisearch.com/errors#{}", self.name())
    }
}

/// An error as the API answers it: a code and a human message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseError {
    pub code: Code,
    pub message: String,
}

impl ResponseError {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        ResponseError {
            code,
            message: message.into(),
        }
    }

    /// The HTTP status of this error.
    pub fn status(&self) -> u16 {
        self.code.status()
    }

    /// The error object, serialized with its keys in wire order.
    pub fn to_json(&self) -> String {
        let object = ErrorObject {
            message: &self.message,
            code: self.code.name(),
            error_type: self.code.error_type().name(),
            link: self.code.link(),
        };
        serde_json::to_string(&object).expect("an error object always serializes")
    }
}

impl fmt::Display for ResponseError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{} ({})", self.message, self.code.name())
    }
}

impl std::error::Error for ResponseError {}

#[derive(serde::Serialize)]
struct ErrorObject<'a> {
    message: &'a str,
    code: &'static str,
    #[serde(rename = "type")]
    error_type: &'static str,
    link: String,
}
