//! [`SearchOutcome`]: what a search of one index found once its shards' answers are merged,
//! before the response is written; and the merge of the shards' matched words.
//!
//! Invariant: `hits` holds at most the window asked (`limit`), best first.

use super::facets::MergedFacets;
use crate::host::search::ShardSearchHit;

/// The merged answer of every shard.
#[derive(Debug, Default)]
pub struct SearchOutcome {
    /// The hits of the window, best first.
    pub hits: Vec<ShardSearchHit>,
    /// Documents matching the query in the whole index.
    pub total: u64,
    /// Whether the legacy `attribute` rule (rather than `attributeRank` + `wordPosition`) ranks.
    pub attribute_unified: bool,
    /// Per query term, every word it matched in any shard (for highlighting).
    pub query_words: Vec<Vec<String>>,
    /// The languages the shards analysed `q` in (the first shard's that used any: shards
    /// differ only when a localized field exists in some of them).
    pub query_languages: Vec<String>,
    /// The summed facet counts, when `facets` was given.
    pub facets: Option<MergedFacets>,
    /// Hits of the window that came from the semantic ranking (a `hybrid` search only).
    pub semantic_hit_count: Option<u32>,
    /// The vector the semantic ranking searched with.
    pub query_vector: Option<Vec<f32>>,
    /// With a distinct attribute, per shard, what the search counts (see
    /// [`super::distinct`]); a federated search counts and describes the same documents.
    pub distinct_narrowings: Option<Vec<shards::search::DistinctNarrowing>>,
}

/// Adds a shard's per-term words to the merged ones, each word once.
pub fn merge_query_words(merged: &mut Vec<Vec<String>>, shard: Vec<Vec<String>>) {
    if merged.len() < shard.len() {
        merged.resize(shard.len(), Vec::new());
    }
    for (words, shard_words) in merged.iter_mut().zip(shard) {
        for word in shard_words {
            if !words.contains(&word) {
                words.push(word);
            }
        }
    }
}
