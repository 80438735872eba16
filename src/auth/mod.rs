//! API keys, request authentication and tenant tokens, reproducing Meilisearch 1.41's
//! security model.
//!
//! How a route uses this module (authorize → decode body → call → serialize):
//! ```text
//! let context = auth::authenticate(&key_set, &AuthRequest { authorization, action, index_uid }, now)?;
//! // /keys routes only:
//! let body = auth::parse_create_api_key(&json, now)?;          // or parse_patch_api_key
//! let view = key_store.create(body, now)?;                       // control core; then broadcast
//! respond(201, view.to_json());                                  // key_store.snapshot()
//! ```
//! Every error converts into [`crate::errors::ResponseError`] with Meilisearch's code and
//! message.
//!
//! Layout: `actions` (action names and wildcard expansion), `index_pattern` (index uid
//! patterns), `key` (key model, key-string derivation, key object, default keys),
//! `expiration` (`expiresAt` formats), `body` (the `/keys` request bodies), `list_query` (the
//! `GET /keys` query string), `masked_secret` (the one rule by which a secret is shown),
//! `json_messages` (deserr-worded messages until the shared decode layer lands), `store`
//! (the immutable versioned key set and the control core's key store), `persistence`
//! (durable storage of the key set), `authenticate` (the per-request decision), `context`
//! (what an authenticated request may reach), `tenant_token` (JWT tenant tokens and filter
//! merging), `uuid_text` (uid parsing with Meilisearch's messages), `jwt_hmac` (the HMAC-only crypto backend of `jsonwebtoken`),
//! `rate_limit` (token buckets per API key and per tenant token, one set per core).
//!
//! Invariants: key secrets are derived, never stored; every secret comparison is
//! constant-time; the key set seen by requests is an immutable snapshot replaced whole.

pub mod actions;
pub mod authenticate;
pub mod body;
pub mod context;
pub mod expiration;
pub mod index_pattern;
pub mod index_scope;
pub mod json_messages;
mod jwt_hmac;
pub mod key;
pub mod list_query;
pub mod masked_secret;
pub mod persistence;
pub mod rate_limit;
pub mod store;
pub mod tenant_token;
pub mod uuid_text;

pub use actions::{Action, ActionSet};
pub use authenticate::{AuthRequest, AuthenticationError, authenticate, is_index_restricted_key};
pub use body::{CreateApiKey, FieldChange, PatchApiKey, parse_create_api_key, parse_patch_api_key};
pub use context::AuthContext;
pub use index_pattern::{IndexUidPattern, is_valid_index_uid};
pub use index_scope::IndexScope;
pub use key::{Key, KeyView, derive_key_string};
pub use list_query::{KeyListQuery, parse_key_list_query};
pub use persistence::{
    JsonFileKeyPersistence, KeyPersistence, MemoryKeyPersistence, PersistenceError,
};
pub use store::{KEY_LIST_LIMIT_DEFAULT, KeyPage, KeySet, KeyStore, KeyStoreError};
pub use tenant_token::{IndexSearchRules, SearchRules, merge_filters};
