//! Tenant tokens: JWTs (HS256, HS384 or HS512) signed with a parent API key's STRING, that
//! carry `apiKeyUid`, `searchRules` and an optional `exp`, and restrict search to some
//! indexes with extra filters.
//!
//! Decoding follows Meilisearch 1.41 step by step (the claims are read twice with the same
//! serde types, so `jsonwebtoken`'s and serde's messages come out identical):
//! 1. read the claims WITHOUT verification to learn `apiKeyUid`; a token that is not three
//!    dot-separated parts is "not a tenant token" (the caller retries it as an API key);
//!    any other problem is `Could not decode tenant token, <jsonwebtoken error>.`;
//! 2. derive the parent key string from the master key and that uid, verify the token with
//!    it (algorithm among HS256/384/512, signature, an `aud` claim is refused, `exp`/`nbf`
//!    are not checked by the library);
//! 3. `exp`, when present, must not be before now: ``Tenant token expired. Was valid up to
//!    `{exp}` and we're now `{now}`.``
//!
//! Whether the parent key exists, is unexpired, holds the action and covers the index is
//! checked by `authenticate`, not here.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde_json::Value;
use uuid::Uuid;

use super::index_pattern::IndexUidPattern;
use super::jwt_hmac;
use super::key::derive_key_string;

/// The rules a search on one index must follow.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct IndexSearchRules {
    /// A filter AND-ed with the query's filter, if any.
    pub filter: Option<Value>,
}

/// The `searchRules` claim: a list of index patterns, or patterns mapped to optional rules.
#[derive(Debug, Clone, PartialEq)]
pub enum SearchRules {
    Set(BTreeSet<IndexUidPattern>),
    Map(BTreeMap<IndexUidPattern, Option<IndexSearchRules>>),
}

impl SearchRules {
    fn patterns(&self) -> Box<dyn Iterator<Item = &IndexUidPattern> + '_> {
        match self {
            SearchRules::Set(set) => Box::new(set.iter()),
            SearchRules::Map(map) => Box::new(map.keys()),
        }
    }

    /// Whether any pattern matches the index.
    pub fn is_index_authorized(&self, index_uid: &str) -> bool {
        self.patterns().any(|pattern| pattern.matches(index_uid))
    }

    /// Whether the rules hold the `*` pattern.
    pub fn all_indexes_authorized(&self) -> bool {
        self.patterns().any(IndexUidPattern::matches_all)
    }

    /// The patterns, sorted, as the "allowed indexes are [...]" message lists them.
    pub fn sorted_patterns(&self) -> Vec<String> {
        self.patterns().map(ToString::to_string).collect()
    }

    /// The rules for a search on `index_uid`: `None` when no pattern matches. With a map,
    /// the most specific matching entry wins (an exact pattern, then the longest).
    pub fn index_search_rules(&self, index_uid: &str) -> Option<IndexSearchRules> {
        match self {
            SearchRules::Set(_) => self
                .is_index_authorized(index_uid)
                .then(IndexSearchRules::default),
            SearchRules::Map(map) => map
                .iter()
                .filter(|(pattern, _)| pattern.matches(index_uid))
                .max_by_key(|(pattern, _)| (pattern.is_exact(), pattern.as_str().len()))
                .map(|(_, rules)| rules.clone().unwrap_or_default()),
        }
    }
}

/// A token that is a valid tenant token signed by the key `api_key_uid` (which may not
/// exist: the caller checks).
#[derive(Debug, Clone, PartialEq)]
pub struct TenantToken {
    pub api_key_uid: Uuid,
    pub search_rules: SearchRules,
}

/// The outcome of reading a bearer token as a tenant token.
#[derive(Debug, Clone, PartialEq)]
pub enum TenantTokenOutcome {
    /// Not a JWT (or unusable as one): try the token as an API key.
    NotATenantToken,
    Valid(TenantToken),
}

/// A JWT that is rejected outright (403 `invalid_api_key` with this message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TenantTokenError {
    Expired { exp: i64, now: i64 },
    CouldNotDecode(String),
}

impl fmt::Display for TenantTokenError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TenantTokenError::Expired { exp, now } => write!(
                formatter,
                "Tenant token expired. Was valid up to `{exp}` and we're now `{now}`."
            ),
            TenantTokenError::CouldNotDecode(reason) => {
                write!(formatter, "Could not decode tenant token, {reason}.")
            }
        }
    }
}

impl std::error::Error for TenantTokenError {}

/// The claims exactly as Meilisearch declares them: field order and type names shape
/// serde's messages ("missing field `searchRules`", "untagged enum SearchRules").
mod claims {
    use std::collections::{BTreeMap, BTreeSet};

    use serde::Deserialize;
    use serde_json::Value;
    use uuid::Uuid;

    #[derive(Deserialize)]
    #[serde(untagged)]
    pub enum SearchRules {
        Set(BTreeSet<String>),
        Map(BTreeMap<String, Option<IndexSearchRules>>),
    }

    #[derive(Deserialize)]
    pub struct IndexSearchRules {
        pub filter: Option<Value>,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Claims {
        pub search_rules: SearchRules,
        pub exp: Option<i64>,
        #[serde(deserialize_with = "super::super::uuid_text::deserialize_uid")]
        pub api_key_uid: Uuid,
    }
}

impl From<claims::SearchRules> for SearchRules {
    fn from(raw: claims::SearchRules) -> SearchRules {
        match raw {
            claims::SearchRules::Set(set) => SearchRules::Set(
                set.into_iter()
                    .map(IndexUidPattern::new_unchecked)
                    .collect(),
            ),
            claims::SearchRules::Map(map) => SearchRules::Map(
                map.into_iter()
                    .map(|(pattern, rules)| {
                        let rules = rules.map(|rules| IndexSearchRules {
                            filter: rules.filter,
                        });
                        (IndexUidPattern::new_unchecked(pattern), rules)
                    })
                    .collect(),
            ),
        }
    }
}

/// The validation Meilisearch applies: HMAC algorithms, no required claim, no `exp` check
/// by the library (done by hand to word the message).
fn validation() -> Validation {
    let mut validation = Validation::default();
    validation.validate_exp = false;
    validation.required_spec_claims.remove("exp");
    validation.algorithms = vec![Algorithm::HS256, Algorithm::HS384, Algorithm::HS512];
    validation
}

/// Sorts a `jsonwebtoken` failure: "not a JWT" falls through to API-key lookup.
fn classify(error: jsonwebtoken::errors::Error) -> Result<TenantTokenOutcome, TenantTokenError> {
    match error.kind() {
        ErrorKind::InvalidToken => Ok(TenantTokenOutcome::NotATenantToken),
        _ => Err(TenantTokenError::CouldNotDecode(error.to_string())),
    }
}

/// Reads `token` as a tenant token under `master_key`, at `now_unix` (Unix seconds).
pub fn decode_tenant_token(
    token: &str,
    master_key: &str,
    now_unix: i64,
) -> Result<TenantTokenOutcome, TenantTokenError> {
    jwt_hmac::install();
    let unverified = match jsonwebtoken::dangerous::insecure_decode::<claims::Claims>(token) {
        Ok(data) => data.claims,
        Err(error) => return classify(error),
    };
    let parent_key = derive_key_string(master_key, unverified.api_key_uid);
    let decoding_key = DecodingKey::from_secret(parent_key.as_bytes());
    let verified = match jsonwebtoken::decode::<claims::Claims>(token, &decoding_key, &validation())
    {
        Ok(data) => data.claims,
        Err(error) => return classify(error),
    };
    if let Some(exp) = verified.exp
        && now_unix > exp
    {
        return Err(TenantTokenError::Expired { exp, now: now_unix });
    }
    Ok(TenantTokenOutcome::Valid(TenantToken {
        api_key_uid: unverified.api_key_uid,
        search_rules: verified.search_rules.into(),
    }))
}

/// Signs `claims` as a tenant token with the parent key string (what SDKs do client-side;
/// used by tests and tools). Only HS256, HS384 and HS512 are available.
pub fn sign_tenant_token(
    claims: &Value,
    parent_key: &str,
    algorithm: Algorithm,
) -> Result<String, jsonwebtoken::errors::Error> {
    jwt_hmac::install();
    jsonwebtoken::encode(
        &Header::new(algorithm),
        claims,
        &EncodingKey::from_secret(parent_key.as_bytes()),
    )
}

/// Combines a query's filter with a tenant-token rule's filter as Meilisearch does: each
/// side becomes an array (a non-array filter is wrapped in one), and the two arrays are
/// concatenated, query first — an AND of both. A missing side leaves the other unchanged.
pub fn merge_filters(query_filter: Option<Value>, rule_filter: Option<Value>) -> Option<Value> {
    match (query_filter, rule_filter) {
        (None, rule) => rule,
        (query, None) => query,
        (Some(query), Some(rule)) => {
            let mut merged = into_array(query);
            merged.extend(into_array(rule));
            Some(Value::Array(merged))
        }
    }
}

fn into_array(filter: Value) -> Vec<Value> {
    match filter {
        Value::Array(items) => items,
        other => vec![other],
    }
}
