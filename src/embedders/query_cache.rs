//! The query-embedding cache (`--experimental-embedding-cache-entries`): a search that
//! embeds a query text its embedder embedded recently takes the vector from here instead
//! of calling the embedder again.
//!
//! One cache per core (searches run on every core; nothing is shared, so nothing is
//! locked), and in it one least-recently-used map of at most the configured number of
//! entries per embedder — an embedder being an index's embedder name with its settings, so
//! a changed embedder never answers with the vectors of the one before.
//!
//! Invariants: with 0 entries (the default) nothing is cached and nothing is kept; the
//! capacity is set once, before the cores start; a cached vector is exactly what the
//! embedder answered for the same text.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::num::NonZeroUsize;
use std::sync::OnceLock;

use lru::LruCache;

/// Entries per embedder, from the configuration.
static ENTRIES_PER_EMBEDDER: OnceLock<usize> = OnceLock::new();

thread_local! {
    static CACHES: RefCell<HashMap<EmbedderKey, LruCache<String, Vec<f32>>>> =
        RefCell::new(HashMap::new());
}

/// One embedder: its index, its name, and a hash of its settings.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EmbedderKey {
    index_uid: String,
    embedder: String,
    settings_hash: u64,
}

impl EmbedderKey {
    /// The embedder `embedder` of `index_uid` with `settings` (its settings as stored).
    pub fn new(
        index_uid: &str,
        embedder: &str,
        settings: &serde_json::Map<String, serde_json::Value>,
    ) -> EmbedderKey {
        let mut hasher = DefaultHasher::new();
        serde_json::Value::Object(settings.clone())
            .to_string()
            .hash(&mut hasher);
        EmbedderKey {
            index_uid: index_uid.to_owned(),
            embedder: embedder.to_owned(),
            settings_hash: hasher.finish(),
        }
    }
}

/// Sets the number of entries per embedder (the first call wins).
pub fn set_entries_per_embedder(entries: usize) {
    let _ = ENTRIES_PER_EMBEDDER.set(entries);
}

/// Whether the cache keeps anything (`--experimental-embedding-cache-entries` above 0).
pub fn is_enabled() -> bool {
    capacity().is_some()
}

fn capacity() -> Option<NonZeroUsize> {
    NonZeroUsize::new(ENTRIES_PER_EMBEDDER.get().copied().unwrap_or(0))
}

/// The cached vector of `query` for `embedder`, if any.
pub fn get(embedder: &EmbedderKey, query: &str) -> Option<Vec<f32>> {
    capacity()?;
    CACHES.with(|caches| {
        caches
            .borrow_mut()
            .get_mut(embedder)
            .and_then(|cache| cache.get(query).cloned())
    })
}

/// Keeps `vector` as `embedder`'s vector of `query`.
pub fn put(embedder: &EmbedderKey, query: &str, vector: &[f32]) {
    let Some(capacity) = capacity() else {
        return;
    };
    CACHES.with(|caches| {
        caches
            .borrow_mut()
            .entry(embedder.clone())
            .or_insert_with(|| LruCache::new(capacity))
            .put(query.to_owned(), vector.to_vec());
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_used_entry_leaves_first_and_settings_separate_embedders() {
        set_entries_per_embedder(2);
        let settings = serde_json::Map::new();
        let key = EmbedderKey::new("movies", "default", &settings);
        put(&key, "a", &[1.0]);
        put(&key, "b", &[2.0]);
        assert_eq!(get(&key, "a"), Some(vec![1.0]));
        put(&key, "c", &[3.0]);
        assert_eq!(get(&key, "b"), None, "b was the least recently used");
        assert_eq!(get(&key, "a"), Some(vec![1.0]));
        let mut changed = serde_json::Map::new();
        changed.insert("source".into(), "rest".into());
        let other = EmbedderKey::new("movies", "default", &changed);
        assert_eq!(get(&other, "a"), None, "other settings, other embedder");
    }
}
