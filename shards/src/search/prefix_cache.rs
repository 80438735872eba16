//! Which prefix terms Meilisearch reads from its prefix cache, and what that changes for
//! proximity.
//!
//! Meilisearch keeps the documents of every prefix of at most [`PREFIX_CACHE_BYTES_MAX`]
//! bytes that starts at least [`PREFIX_CACHE_WORDS_MIN`] words of the index (the prefix itself
//! counted when it is a word). A query's prefix term in that cache is matched through it, and
//! its proximity to the word before it is read from the word pairs in both directions only for
//! the prefix as a whole word: a longer word it starts counts when it follows that word, never
//! when it stands before it. A prefix outside the cache is matched word by word, each word in
//! both directions.
//!
//! Invariant: the words counted are this shard's dictionary's, so a prefix close to the
//! threshold may be in the cache for one shard and not another (Meilisearch counts the
//! index's words); past the threshold in any shard it is past it in the index.

use crate::index::inverted::prefix_end;

use super::dictionary::Dictionary;
use super::terms::ResolvedTerm;

/// Longest prefix (in bytes) Meilisearch keeps in its prefix cache.
pub const PREFIX_CACHE_BYTES_MAX: usize = 4;
/// Fewest words a prefix must start to be kept in Meilisearch's prefix cache.
pub const PREFIX_CACHE_WORDS_MIN: usize = 100;

/// Whether `prefix` would be in Meilisearch's prefix cache, from `dictionary`'s words.
pub fn is_cached_prefix(dictionary: &Dictionary, prefix: &str) -> bool {
    if prefix.is_empty() || prefix.len() > PREFIX_CACHE_BYTES_MAX {
        return false;
    }
    let start = prefix.as_bytes();
    let end = prefix_end(start);
    dictionary.count_in(start, end.as_deref(), PREFIX_CACHE_WORDS_MIN) >= PREFIX_CACHE_WORDS_MIN
}

/// Per term, the alternative whose occurrences count for proximity only when they follow the
/// term before: the longer words of a prefix in the cache (see the module documentation).
pub fn forward_only_alternatives(
    dictionary: &Dictionary,
    resolved: &[ResolvedTerm],
) -> Vec<Option<u16>> {
    resolved
        .iter()
        .map(|term| {
            let (index, alternative) = term
                .alternatives
                .iter()
                .enumerate()
                .find(|(_, alternative)| alternative.prefix)?;
            let [Some(prefix)] = alternative.words.as_slice() else {
                return None;
            };
            if !is_cached_prefix(dictionary, prefix) {
                return None;
            }
            u16::try_from(index).ok()
        })
        .collect()
}
