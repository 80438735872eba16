//! The decision made on every request: may this `Authorization` header perform this action
//! (on this index)? Follows Meilisearch 1.41's authentication extractor step by step:
//!
//! 1. The header, if present, must be `Bearer <token>` (split once on a space): another
//!    scheme, or a value that is not visible ASCII, is 401 `missing_authorization_header`;
//!    `Bearer` with nothing after it is 403 `invalid_api_key`. Both apply even when no
//!    master key is set.
//! 2. No master key: every action is open except the `keys.*` actions, which answer 401
//!    `missing_master_key` (with or without a token).
//! 3. Master key set, no header: the request is judged with an empty token, and any
//!    refusal becomes 401 `missing_authorization_header`.
//! 4. The master key itself (compared in constant time) has full access.
//! 5. On `search` and `chatCompletions` the token is first read as a tenant token; a token
//!    that is not a JWT falls through to 6, any other JWT problem is refused.
//! 6. The token as an API key string (unknown → `The provided API key is invalid.`).
//! 7. With an index in the path: the tenant token must allow it, then the key must.
//! 8. The key must hold the action (for the index, or for some index) and be unexpired.
//!
//! Every refusal after step 1 is 403 `invalid_api_key`, with the messages of
//! [`AuthenticationError`].

use std::fmt;

use subtle::ConstantTimeEq;
use time::OffsetDateTime;

use super::actions::Action;
use super::context::AuthContext;
use super::store::KeySet;
use super::tenant_token::{TenantTokenError, TenantTokenOutcome, decode_tenant_token};
use crate::errors::{Code, ResponseError};

/// What a route asks of the authentication.
#[derive(Debug, Clone, Copy)]
pub struct AuthRequest<'a> {
    /// The raw value of the first `Authorization` header, if any.
    pub authorization: Option<&'a [u8]>,
    /// The action the route requires.
    pub action: Action,
    /// The `{index_uid}` path parameter, if the route has one (not yet validated).
    pub index_uid: Option<&'a str>,
}

/// A refused request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthenticationError {
    MissingAuthorizationHeader,
    MissingMasterKey,
    InvalidApiKey,
    TenantToken(TenantTokenError),
    TenantTokenIndexNotAllowed { index: String, allowed: Vec<String> },
    TenantTokenParentKeyIndexNotAllowed { index: String },
    ApiKeyIndexNotAllowed { index: String, allowed: Vec<String> },
}

impl fmt::Display for AuthenticationError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        use AuthenticationError::*;
        match self {
            MissingAuthorizationHeader => formatter.write_str(
                "The Authorization header is missing. It must use the bearer authorization method.",
            ),
            MissingMasterKey => formatter.write_str(
                "Meilisearch is running without a master key. To access this API endpoint, you \
                 must have set a master key at launch.",
            ),
            InvalidApiKey => formatter.write_str("The provided API key is invalid."),
            TenantToken(error) => error.fmt(formatter),
            // "acces" is Meilisearch's spelling; clients may match on it.
            TenantTokenIndexNotAllowed { index, allowed } => write!(
                formatter,
                "The provided tenant token cannot acces the index `{index}`, allowed indexes are \
                 {allowed:?}."
            ),
            TenantTokenParentKeyIndexNotAllowed { index } => write!(
                formatter,
                "The API key used to generate this tenant token cannot acces the index `{index}`."
            ),
            ApiKeyIndexNotAllowed { index, allowed } => write!(
                formatter,
                "The API key cannot acces the index `{index}`, authorized indexes are {allowed:?}."
            ),
        }
    }
}

impl std::error::Error for AuthenticationError {}

impl AuthenticationError {
    /// The API error code.
    pub fn code(&self) -> Code {
        match self {
            AuthenticationError::MissingAuthorizationHeader => Code::MissingAuthorizationHeader,
            AuthenticationError::MissingMasterKey => Code::MissingMasterKey,
            _ => Code::InvalidApiKey,
        }
    }
}

impl From<AuthenticationError> for ResponseError {
    fn from(error: AuthenticationError) -> Self {
        ResponseError::new(error.code(), error.to_string())
    }
}

/// Whether a header byte is one `HeaderValue::to_str` accepts (visible ASCII or tab).
fn is_header_text(byte: u8) -> bool {
    byte == b'\t' || (0x20..0x7f).contains(&byte)
}

/// Step 1: the bearer token of the header (`None`: no header).
pub fn bearer_token(authorization: Option<&[u8]>) -> Result<Option<&str>, AuthenticationError> {
    let Some(raw) = authorization else {
        return Ok(None);
    };
    // A value that is not header text reads as "", which is not `Bearer`.
    let text = if raw.iter().all(|&byte| is_header_text(byte)) {
        std::str::from_utf8(raw).unwrap_or_default()
    } else {
        ""
    };
    let mut parts = text.splitn(2, ' ');
    match parts.next() {
        Some("Bearer") => parts
            .next()
            .map(Some)
            .ok_or(AuthenticationError::InvalidApiKey),
        _ => Err(AuthenticationError::MissingAuthorizationHeader),
    }
}

fn is_keys_action(action: Action) -> bool {
    matches!(
        action,
        Action::KeysGet | Action::KeysCreate | Action::KeysUpdate | Action::KeysDelete
    )
}

fn is_master_key(master_key: &str, token: &str) -> bool {
    bool::from(master_key.as_bytes().ct_eq(token.as_bytes()))
}

/// Authenticates a request against the key set snapshot `keys` (which carries the master
/// key) at `now`.
pub fn authenticate(
    keys: &KeySet,
    request: &AuthRequest<'_>,
    now: OffsetDateTime,
) -> Result<AuthContext, AuthenticationError> {
    let no_master_key = keys.master_key().is_none();
    match bearer_token(request.authorization)? {
        Some(token) => {
            decide(keys, token, request.action, request.index_uid, now).map_err(|error| {
                if no_master_key {
                    AuthenticationError::MissingMasterKey
                } else {
                    error
                }
            })
        }
        None => decide(keys, "", request.action, None, now).map_err(|_| {
            if no_master_key {
                AuthenticationError::MissingMasterKey
            } else {
                AuthenticationError::MissingAuthorizationHeader
            }
        }),
    }
}

/// Steps 2 to 8 for one token.
fn decide(
    keys: &KeySet,
    token: &str,
    action: Action,
    index_uid: Option<&str>,
    now: OffsetDateTime,
) -> Result<AuthContext, AuthenticationError> {
    let master_key = match keys.master_key() {
        None if !is_keys_action(action) => return Ok(AuthContext::full_access()),
        None => return Err(AuthenticationError::InvalidApiKey),
        Some(master_key) if is_master_key(master_key, token) => {
            return Ok(AuthContext::full_access());
        }
        Some(master_key) => master_key,
    };
    let (key_uid, search_rules) = if matches!(action, Action::Search | Action::ChatCompletions) {
        match decode_tenant_token(token, master_key, now.unix_timestamp()) {
            Ok(TenantTokenOutcome::Valid(tenant_token)) => {
                (tenant_token.api_key_uid, Some(tenant_token.search_rules))
            }
            Ok(TenantTokenOutcome::NotATenantToken) => (api_key_uid(keys, token)?, None),
            Err(error) => return Err(AuthenticationError::TenantToken(error)),
        }
    } else {
        (api_key_uid(keys, token)?, None)
    };
    let key = keys
        .get(key_uid)
        .ok_or(AuthenticationError::InvalidApiKey)?;
    let allow_index_creation = keys.is_key_authorized(key_uid, Action::IndexesCreate, None, now);
    let context = AuthContext::for_key(
        key_uid,
        key.indexes.clone(),
        search_rules,
        allow_index_creation,
    );
    if let Some(index) = index_uid {
        check_index(&context, index)?;
    }
    if keys.is_key_authorized(key_uid, action, index_uid, now) {
        Ok(context)
    } else {
        Err(AuthenticationError::InvalidApiKey)
    }
}

/// Whether the `Authorization` header bears an API key that holds `action`, unexpired, but
/// is restricted to some indexes: the key a route needing every index refuses only for that
/// (Meilisearch words that refusal on `/metrics`).
pub fn is_index_restricted_key(
    keys: &KeySet,
    authorization: Option<&[u8]>,
    action: Action,
    now: OffsetDateTime,
) -> bool {
    let Ok(Some(token)) = bearer_token(authorization) else {
        return false;
    };
    keys.master_key().is_some()
        && keys
            .uid_for_key_string(token)
            .is_some_and(|uid| keys.is_index_restricted_holder(uid, action, now))
}

fn api_key_uid(keys: &KeySet, token: &str) -> Result<uuid::Uuid, AuthenticationError> {
    keys.uid_for_key_string(token)
        .ok_or(AuthenticationError::InvalidApiKey)
}

/// Step 7: the tenant token's rules first (public to the token holder), then the key's.
fn check_index(context: &AuthContext, index: &str) -> Result<(), AuthenticationError> {
    if !context.tenant_token_allows_index(index) {
        let allowed = context
            .search_rules()
            .map(|rules| rules.sorted_patterns())
            .unwrap_or_default();
        return Err(AuthenticationError::TenantTokenIndexNotAllowed {
            index: index.to_string(),
            allowed,
        });
    }
    if !context.api_key_allows_index(index) {
        return Err(if context.is_tenant_token() {
            // The parent key's indexes are not the token holder's business.
            AuthenticationError::TenantTokenParentKeyIndexNotAllowed {
                index: index.to_string(),
            }
        } else {
            AuthenticationError::ApiKeyIndexNotAllowed {
                index: index.to_string(),
                allowed: context.sorted_key_patterns(),
            }
        });
    }
    Ok(())
}
