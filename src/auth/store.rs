//! The key set: an immutable, versioned snapshot of every API key that each core reads
//! locally, and the key store on the control core that changes it durably.
//!
//! Invariants:
//! - a [`KeySet`] never changes; every change builds a new one with `version + 1`, and the
//!   control core broadcasts the `Arc<KeySet>` to every core (cheap to clone and to send);
//! - a change is persisted (through [`KeyPersistence`]) before the new snapshot replaces the
//!   old one: a failed write changes nothing;
//! - lookups by uid and by key string are O(1) hash lookups; a presented key string is
//!   hex-decoded (either case, as Meilisearch accepts) and compared to the stored secret in
//!   constant time;
//! - keys are kept in creation order; listings are newest first (`createdAt` descending,
//!   later creations first on equal timestamps);
//! - the four default keys are created whenever the store opens empty (first launch, or
//!   every key deleted), with or without a master key, as Meilisearch 1.41 does.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use serde::Serialize;
use subtle::ConstantTimeEq;
use time::OffsetDateTime;
use uuid::Uuid;

use super::actions::{Action, ActionSet};
use super::body::{CreateApiKey, PatchApiKey};
use super::key::{Key, KeySecret, KeyView, default_keys, derive_key_secret};
use super::persistence::{KeyPersistence, PersistenceError};
use crate::errors::{Code, ResponseError};

/// The default page size of `GET /keys`.
pub const KEY_LIST_LIMIT_DEFAULT: usize = 20;

/// A failure of a key-store operation.
#[derive(Debug)]
pub enum KeyStoreError {
    /// `API key `{0}` not found.` (the uid, hyphenated, or the key string as given).
    NotFound(String),
    /// A key with this uid exists already.
    AlreadyExists(Uuid),
    /// A key restricted to some indexes was asked with an instance-wide action
    /// ([`super::IndexScope::Global`]).
    IndexScopedGlobalAction(Action),
    /// The key set could not be read or written.
    Persistence(PersistenceError),
}

impl fmt::Display for KeyStoreError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyStoreError::NotFound(key) => write!(formatter, "API key `{key}` not found."),
            KeyStoreError::AlreadyExists(uid) => write!(
                formatter,
                "`uid` field value `{uid}` is already an existing API key."
            ),
            // The action is quoted as a JSON string inside the backticks, as Meilisearch
            // writes it.
            KeyStoreError::IndexScopedGlobalAction(action) => write!(
                formatter,
                "cannot create index-scoped API key with global action `\"{action}\"`\n  - Hint: \
                 remove action `\"{action}\"` from the action list, or remove `indexes` to make \
                 the key global"
            ),
            KeyStoreError::Persistence(error) => write!(formatter, "Internal error: {error}"),
        }
    }
}

impl std::error::Error for KeyStoreError {}

impl From<PersistenceError> for KeyStoreError {
    fn from(error: PersistenceError) -> Self {
        KeyStoreError::Persistence(error)
    }
}

impl KeyStoreError {
    /// The API error code.
    pub fn code(&self) -> Code {
        match self {
            KeyStoreError::NotFound(_) => Code::ApiKeyNotFound,
            KeyStoreError::AlreadyExists(_) => Code::ApiKeyAlreadyExists,
            KeyStoreError::IndexScopedGlobalAction(_) => Code::IndexScopedApiKeyWithGlobalAction,
            KeyStoreError::Persistence(_) => Code::Internal,
        }
    }
}

impl From<KeyStoreError> for ResponseError {
    fn from(error: KeyStoreError) -> Self {
        ResponseError::new(error.code(), error.to_string())
    }
}

/// One key with what authentication needs precomputed.
#[derive(Debug)]
struct KeyEntry {
    key: Key,
    granted: ActionSet,
    /// `None` without a master key (no key string exists then).
    secret: Option<KeySecret>,
}

impl KeyEntry {
    fn new(key: Key, master_key: Option<&str>) -> KeyEntry {
        KeyEntry {
            granted: key.granted_actions(),
            secret: master_key.map(|master_key| derive_key_secret(master_key, key.uid)),
            key,
        }
    }
}

/// A page of the key listing (`GET /keys`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeyPage {
    pub results: Vec<KeyView>,
    pub offset: usize,
    pub limit: usize,
    pub total: usize,
}

/// An immutable snapshot of the key set, with the master key it derives key strings from.
#[derive(Debug)]
pub struct KeySet {
    version: u64,
    master_key: Option<String>,
    /// In creation order.
    entries: Vec<Arc<KeyEntry>>,
    by_uid: HashMap<Uuid, usize>,
    by_secret: HashMap<KeySecret, usize>,
}

impl KeySet {
    fn build(version: u64, master_key: Option<String>, entries: Vec<Arc<KeyEntry>>) -> KeySet {
        let by_uid: HashMap<Uuid, usize> = entries
            .iter()
            .enumerate()
            .map(|(position, entry)| (entry.key.uid, position))
            .collect();
        assert_eq!(by_uid.len(), entries.len(), "key uids are unique");
        let by_secret = entries
            .iter()
            .enumerate()
            .filter_map(|(position, entry)| entry.secret.map(|secret| (secret, position)))
            .collect();
        KeySet {
            version,
            master_key,
            entries,
            by_uid,
            by_secret,
        }
    }

    /// A snapshot of `keys` (in creation order), version `version`.
    pub fn new(version: u64, master_key: Option<String>, keys: Vec<Key>) -> KeySet {
        let entries = keys
            .into_iter()
            .map(|key| Arc::new(KeyEntry::new(key, master_key.as_deref())))
            .collect();
        KeySet::build(version, master_key, entries)
    }

    /// The version: 0 when opened, +1 per change.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The master key, if one is set.
    pub fn master_key(&self) -> Option<&str> {
        self.master_key.as_deref()
    }

    /// The number of keys.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there is no key.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The keys, in creation order.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &Key> {
        self.entries.iter().map(|entry| &entry.key)
    }

    fn entry(&self, uid: Uuid) -> Option<&KeyEntry> {
        self.by_uid
            .get(&uid)
            .map(|&position| &*self.entries[position])
    }

    /// The key with this uid.
    pub fn get(&self, uid: Uuid) -> Option<&Key> {
        self.entry(uid).map(|entry| &entry.key)
    }

    /// The uid of the key whose key string is `key_string` (hex, either case); `None`
    /// without a master key.
    pub fn uid_for_key_string(&self, key_string: &str) -> Option<Uuid> {
        let decoded = hex::decode(key_string).ok()?;
        let presented: KeySecret = decoded.as_slice().try_into().ok()?;
        let &position = self.by_secret.get(&presented)?;
        let entry = &self.entries[position];
        let stored = entry.secret?;
        bool::from(stored.ct_eq(&presented)).then_some(entry.key.uid)
    }

    /// The key a `/keys/{key}` path names: a uid (any UUID form), else a key string.
    pub fn resolve(&self, uid_or_key: &str) -> Result<&Key, KeyStoreError> {
        let uid = match Uuid::parse_str(uid_or_key) {
            Ok(uid) => uid,
            Err(_) => self
                .uid_for_key_string(uid_or_key)
                .ok_or_else(|| KeyStoreError::NotFound(uid_or_key.to_string()))?,
        };
        self.get(uid)
            .ok_or_else(|| KeyStoreError::NotFound(uid.hyphenated().to_string()))
    }

    /// The key object of `key`.
    pub fn view(&self, key: &Key) -> KeyView {
        KeyView::new(key, self.master_key())
    }

    /// `GET /keys/{key}`.
    pub fn get_view(&self, uid_or_key: &str) -> Result<KeyView, KeyStoreError> {
        self.resolve(uid_or_key).map(|key| self.view(key))
    }

    /// `GET /keys`: newest first, `offset` skipped, at most `limit`.
    pub fn list(&self, offset: usize, limit: usize) -> KeyPage {
        let mut newest_first: Vec<&Key> = self.keys().rev().collect();
        // Stable: equal timestamps keep later creations first.
        newest_first.sort_by_key(|key| std::cmp::Reverse(key.created_at));
        KeyPage {
            total: newest_first.len(),
            results: newest_first
                .into_iter()
                .skip(offset)
                .take(limit)
                .map(|key| self.view(key))
                .collect(),
            offset,
            limit,
        }
    }

    /// Whether the key holds `action` and is unexpired at `now`, but its indexes do not cover
    /// every index: the key a route that needs every index refuses for that reason alone.
    pub fn is_index_restricted_holder(
        &self,
        uid: Uuid,
        action: Action,
        now: OffsetDateTime,
    ) -> bool {
        self.entry(uid).is_some_and(|entry| {
            entry.granted.contains(action)
                && !entry.key.is_expired(now)
                && !entry
                    .key
                    .indexes
                    .iter()
                    .any(|pattern| pattern.matches_all())
        })
    }

    /// Whether the key holds `action` and is unexpired at `now`, and its indexes allow the
    /// action: every action when they cover every index; with `index_uid`, the actions on
    /// that index when a pattern matches it; without, only the route-filtered actions
    /// ([`RouteFilters`](super::IndexScope::RouteFilters)), and only when the key names some index — the route
    /// then narrows its work to the key's indexes.
    pub fn is_key_authorized(
        &self,
        uid: Uuid,
        action: Action,
        index_uid: Option<&str>,
        now: OffsetDateTime,
    ) -> bool {
        let Some(entry) = self.entry(uid) else {
            return false;
        };
        if !entry.granted.contains(action) || entry.key.is_expired(now) {
            return false;
        }
        let patterns = &entry.key.indexes;
        if patterns.iter().any(|pattern| pattern.matches_all()) {
            return true;
        }
        match index_uid {
            Some(index_uid) => patterns.iter().any(|pattern| pattern.matches(index_uid)),
            None => action.is_route_filtered() && !patterns.is_empty(),
        }
    }
}

/// The key store of the control core: the current snapshot and its persistence.
pub struct KeyStore {
    persistence: Box<dyn KeyPersistence>,
    current: Arc<KeySet>,
}

impl KeyStore {
    /// Loads the keys; when there is none, creates and persists the default keys.
    pub fn open(
        mut persistence: Box<dyn KeyPersistence>,
        master_key: Option<String>,
        now: OffsetDateTime,
    ) -> Result<KeyStore, KeyStoreError> {
        let mut keys = persistence.load()?;
        if keys.is_empty() {
            keys = default_keys(now);
            persistence.store(&keys.iter().collect::<Vec<_>>())?;
        }
        Ok(KeyStore {
            persistence,
            current: Arc::new(KeySet::new(0, master_key, keys)),
        })
    }

    /// The current snapshot, to broadcast to every core.
    pub fn snapshot(&self) -> Arc<KeySet> {
        Arc::clone(&self.current)
    }

    /// Persists `entries` and makes them the next version.
    fn commit(&mut self, entries: Vec<Arc<KeyEntry>>) -> Result<(), KeyStoreError> {
        let keys: Vec<&Key> = entries.iter().map(|entry| &entry.key).collect();
        self.persistence.store(&keys)?;
        let master_key = self.current.master_key.clone();
        self.current = Arc::new(KeySet::build(self.current.version + 1, master_key, entries));
        Ok(())
    }

    /// `POST /keys`: creates the key at `now`.
    pub fn create(
        &mut self,
        request: CreateApiKey,
        now: OffsetDateTime,
    ) -> Result<KeyView, KeyStoreError> {
        refuse_index_scoped_global_action(&request)?;
        if self.current.get(request.uid).is_some() {
            return Err(KeyStoreError::AlreadyExists(request.uid));
        }
        let key = Key {
            uid: request.uid,
            name: request.name,
            description: request.description,
            actions: request.actions,
            indexes: request.indexes,
            expires_at: request.expires_at,
            created_at: now,
            updated_at: now,
        };
        let view = self.current.view(&key);
        let mut entries = self.current.entries.clone();
        entries.push(Arc::new(KeyEntry::new(key, self.current.master_key())));
        self.commit(entries)?;
        Ok(view)
    }

    /// `PATCH /keys/{key}`: changes name and description, bumps `updatedAt` to `now`.
    pub fn update(
        &mut self,
        uid_or_key: &str,
        patch: PatchApiKey,
        now: OffsetDateTime,
    ) -> Result<KeyView, KeyStoreError> {
        let mut key = self.current.resolve(uid_or_key)?.clone();
        key.name = patch.name.apply(key.name);
        key.description = patch.description.apply(key.description);
        key.updated_at = now;
        let view = self.current.view(&key);
        let position = self.current.by_uid[&key.uid];
        let mut entries = self.current.entries.clone();
        entries[position] = Arc::new(KeyEntry::new(key, self.current.master_key()));
        self.commit(entries)?;
        Ok(view)
    }

    /// Replaces every key by `keys` (creation order), as a dump import does. Duplicate uids
    /// keep the last one.
    pub fn replace_all(&mut self, keys: Vec<Key>) -> Result<(), KeyStoreError> {
        let mut deduplicated: Vec<Key> = Vec::with_capacity(keys.len());
        let mut positions: HashMap<Uuid, usize> = HashMap::with_capacity(keys.len());
        for key in keys {
            match positions.get(&key.uid) {
                Some(&position) => deduplicated[position] = key,
                None => {
                    positions.insert(key.uid, deduplicated.len());
                    deduplicated.push(key);
                }
            }
        }
        let master_key = self.current.master_key();
        let entries = deduplicated
            .into_iter()
            .map(|key| Arc::new(KeyEntry::new(key, master_key)))
            .collect();
        self.commit(entries)
    }

    /// `DELETE /keys/{key}`.
    pub fn delete(&mut self, uid_or_key: &str) -> Result<(), KeyStoreError> {
        let uid = self.current.resolve(uid_or_key)?.uid;
        let entries = self
            .current
            .entries
            .iter()
            .filter(|entry| entry.key.uid != uid)
            .cloned()
            .collect();
        self.commit(entries)
    }
}

/// A key restricted to some indexes (neither `*` nor an empty list) is never created with
/// an instance-wide action: it could never use it.
fn refuse_index_scoped_global_action(request: &CreateApiKey) -> Result<(), KeyStoreError> {
    let covers_every_index =
        request.indexes.is_empty() || request.indexes.iter().any(|pattern| pattern.matches_all());
    match request.actions.iter().find(|action| action.is_global()) {
        Some(&action) if !covers_every_index => Err(KeyStoreError::IndexScopedGlobalAction(action)),
        _ => Ok(()),
    }
}
