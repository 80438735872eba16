//! What an authenticated request may reach: the indexes of its API key, the search rules
//! of its tenant token, and whether it may create indexes. Routes use it to filter index
//! listings (`/indexes`, `/stats`, `/tasks`, `/batches`), to refuse index creation, and to
//! add tenant-token filters to searches.
//!
//! Invariants: an index is authorized when the key's patterns AND (if any) the tenant
//! token's rules match it; the master key and open access (no master key) authorize every
//! index and may create indexes.

use uuid::Uuid;

use super::index_pattern::IndexUidPattern;
use super::tenant_token::{IndexSearchRules, SearchRules};

/// The outcome of a successful authentication.
#[derive(Debug, Clone, PartialEq)]
pub struct AuthContext {
    key_uid: Option<Uuid>,
    /// `None`: every index (master key or open access).
    key_indexes: Option<Vec<IndexUidPattern>>,
    search_rules: Option<SearchRules>,
    allow_index_creation: bool,
}

impl AuthContext {
    /// Full access: the master key, or any request when no master key is set.
    pub fn full_access() -> AuthContext {
        AuthContext {
            key_uid: None,
            key_indexes: None,
            search_rules: None,
            allow_index_creation: true,
        }
    }

    /// Access through the API key `key_uid`, maybe via a tenant token.
    pub fn for_key(
        key_uid: Uuid,
        key_indexes: Vec<IndexUidPattern>,
        search_rules: Option<SearchRules>,
        allow_index_creation: bool,
    ) -> AuthContext {
        AuthContext {
            key_uid: Some(key_uid),
            key_indexes: Some(key_indexes),
            search_rules,
            allow_index_creation,
        }
    }

    /// The uid of the API key used (the tenant token's parent key), `None` for full access.
    pub fn key_uid(&self) -> Option<Uuid> {
        self.key_uid
    }

    /// Whether a tenant token authenticated the request.
    pub fn is_tenant_token(&self) -> bool {
        self.search_rules.is_some()
    }

    /// The tenant token's search rules, if any.
    pub fn search_rules(&self) -> Option<&SearchRules> {
        self.search_rules.as_ref()
    }

    /// Whether the API key alone allows the index.
    pub fn api_key_allows_index(&self, index_uid: &str) -> bool {
        match &self.key_indexes {
            None => true,
            Some(patterns) => patterns.iter().any(|pattern| pattern.matches(index_uid)),
        }
    }

    /// Whether the tenant token alone allows the index (true without a tenant token).
    pub fn tenant_token_allows_index(&self, index_uid: &str) -> bool {
        self.search_rules
            .as_ref()
            .is_none_or(|rules| rules.is_index_authorized(index_uid))
    }

    /// Whether the request may reach the index.
    pub fn is_index_authorized(&self, index_uid: &str) -> bool {
        self.api_key_allows_index(index_uid) && self.tenant_token_allows_index(index_uid)
    }

    /// Whether every index is authorized (no listing filter needed).
    pub fn all_indexes_authorized(&self) -> bool {
        let key_all = self
            .key_indexes
            .as_ref()
            .is_none_or(|patterns| patterns.iter().any(IndexUidPattern::matches_all));
        key_all
            && self
                .search_rules
                .as_ref()
                .is_none_or(SearchRules::all_indexes_authorized)
    }

    /// Whether the request may create the index `index_uid` (the key holds
    /// `indexes.create` and the index is authorized).
    pub fn allow_index_creation(&self, index_uid: &str) -> bool {
        self.allow_index_creation && self.is_index_authorized(index_uid)
    }

    /// The rules a search on `index_uid` must follow; `None` when the index is not
    /// authorized. Without a tenant token the rules are empty.
    pub fn index_search_rules(&self, index_uid: &str) -> Option<IndexSearchRules> {
        if !self.is_index_authorized(index_uid) {
            return None;
        }
        match &self.search_rules {
            None => Some(IndexSearchRules::default()),
            Some(rules) => rules.index_search_rules(index_uid),
        }
    }

    /// The authorized items of a listing, in their order.
    pub fn filter_authorized<'a, T: 'a>(
        &'a self,
        items: impl IntoIterator<Item = T> + 'a,
        index_uid_of: impl Fn(&T) -> &str + 'a,
    ) -> impl Iterator<Item = T> + 'a {
        items
            .into_iter()
            .filter(move |item| self.is_index_authorized(index_uid_of(item)))
    }

    /// The key's index patterns, deduplicated and sorted, as the "authorized indexes are
    /// [...]" message lists them.
    pub fn sorted_key_patterns(&self) -> Vec<String> {
        let mut patterns: Vec<String> = match &self.key_indexes {
            None => vec!["*".to_string()],
            Some(patterns) => patterns.iter().map(ToString::to_string).collect(),
        };
        patterns.sort_unstable();
        patterns.dedup();
        patterns
    }
}
