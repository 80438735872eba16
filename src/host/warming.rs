//! The searches a shard replays on a batch's new commit before readers see it (see
//! `shards::shard::Shard::commit_warmed`), so that the first searches after a commit find
//! ready what they would otherwise build: the commit's word dictionary, the query words'
//! derivations, prefix unions and words, facet columns, filter range unions. On the same
//! principle as Solr's searcher warming: the new commit is served only once warmed.
//!
//! Each shard remembers its last distinct keyword searches ([`RECENT_SEARCHES_MAX`]); once
//! that many are known, only one search in [`REMEMBER_EVERY`] is taken in (a search's
//! identity is the hash of its whole request printed, about 1 % of a query's CPU when every
//! search paid it; under a steady load the sample still renews the set within seconds). A
//! commit builds the dictionary and replays them, the most recent first, on the core's
//! indexing thread (so at the indexing thread's low priority, never in a search's way), for
//! at most [`WARMING_TIME_MAX`], and drops their answers. A commit is warmed when a search
//! ran on the shard since the commit before, or when no other task waits for the index (the
//! last batch of an import: the commit searches will read next); a run of batches nobody
//! searches pays nothing.
//!
//! Invariants: a remembered search has no deadline (a replay ranks as the search did before
//! its deadline; the deadline's instant would be past anyway); two searches that differ
//! only in their page (`offset`, `limit`) are one; semantic searches are not remembered
//! (what they build lives in the vector store, not in the commit's view); a replay that
//! fails is skipped — warming changes no answer, only when its cost is paid.

use std::collections::VecDeque;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::time::{Duration, Instant};

use shards::shard::ShardSnapshot;

use super::search::{ShardSearchRequest, resolved_query};

/// Distinct searches a shard remembers for warming.
pub const RECENT_SEARCHES_MAX: usize = 32;

/// Once [`RECENT_SEARCHES_MAX`] searches are known, one search in this many is remembered.
pub const REMEMBER_EVERY: u64 = 8;

/// Longest a commit's warming replays searches for (a replay started before it ends runs to
/// its end).
pub const WARMING_TIME_MAX: Duration = Duration::from_millis(100);

/// One shard's last distinct keyword searches, the most recent first.
#[derive(Debug, Default)]
pub struct RecentSearches {
    searches: VecDeque<(u64, ShardSearchRequest)>,
    /// Whether a search ran since the last commit took the searches to replay: a shard
    /// nobody searches warms nothing (indexing alone pays nothing for warming).
    searched_since_commit: bool,
    /// Searches offered once the memory was full (the sampling clock of [`REMEMBER_EVERY`]).
    offered_when_full: u64,
}

/// A search made ready to remember, outside any lock: its request without deadline or page,
/// and its identity.
pub struct RememberedSearch {
    identity: u64,
    request: ShardSearchRequest,
}

impl RememberedSearch {
    /// `request` made ready to remember: cloned, its deadline and page cleared, hashed.
    pub fn of(request: &ShardSearchRequest) -> RememberedSearch {
        let mut kept = request.clone();
        kept.query.deadline = None;
        kept.query.offset = 0;
        // The page size is no part of the identity; set aside rather than cloned again.
        let limit = std::mem::replace(&mut kept.query.limit, 0);
        let identity = identity_of(&kept);
        kept.query.limit = limit;
        RememberedSearch {
            identity,
            request: kept,
        }
    }
}

impl RecentSearches {
    /// Notes that `request` ran; answers whether to remember it (a semantic search is not
    /// kept; once the memory is full, one search in [`REMEMBER_EVERY`]). The caller then
    /// makes it ready with [`RememberedSearch::of`] and hands it to [`Self::keep`], so that
    /// a memory shared by the cores is locked only to count and to insert.
    pub fn offer(&mut self, request: &ShardSearchRequest) -> bool {
        if request.vector.is_some() {
            return false;
        }
        self.searched_since_commit = true;
        if self.searches.len() < RECENT_SEARCHES_MAX {
            return true;
        }
        self.offered_when_full += 1;
        self.offered_when_full % REMEMBER_EVERY == 1
    }

    /// Remembers `search` as the most recent one (an equal one moves to the front; the
    /// oldest goes past [`RECENT_SEARCHES_MAX`]).
    pub fn keep(&mut self, search: RememberedSearch) {
        self.searches.retain(|(known, _)| *known != search.identity);
        if self.searches.len() == RECENT_SEARCHES_MAX {
            self.searches.pop_back();
        }
        self.searches.push_front((search.identity, search.request));
    }

    /// [`Self::offer`], then [`Self::keep`] when taken in.
    #[cfg(test)]
    fn remember(&mut self, request: &ShardSearchRequest) {
        if self.offer(request) {
            self.keep(RememberedSearch::of(request));
        }
    }

    /// The searches a commit replays, the most recent first; `None` when no search ran since
    /// the last commit asked (the commit is then not warmed at all).
    pub fn take_replay(&mut self) -> Option<Vec<ShardSearchRequest>> {
        if !std::mem::take(&mut self.searched_since_commit) {
            return None;
        }
        Some(
            self.searches
                .iter()
                .map(|(_, request)| request.clone())
                .collect(),
        )
    }
}

/// What makes two remembered searches one: everything in `unpaged` (its page already
/// cleared by the caller).
fn identity_of(unpaged: &ShardSearchRequest) -> u64 {
    let mut hasher = DefaultHasher::new();
    format!("{unpaged:?}").hash(&mut hasher);
    hasher.finish()
}

/// Builds `snapshot`'s word dictionary (every keyword search needs it; merged already when
/// the commit before had one), then replays `searches` on it within [`WARMING_TIME_MAX`],
/// answers dropped.
pub fn warm(snapshot: &ShardSnapshot, searches: &[ShardSearchRequest]) {
    snapshot.dictionary().ok();
    let started = Instant::now();
    for request in searches {
        turns::checkpoint();
        if started.elapsed() >= WARMING_TIME_MAX {
            return;
        }
        let Ok(query) = resolved_query(snapshot, request) else {
            continue;
        };
        let Ok(found) = snapshot.search(&query) else {
            continue;
        };
        if let Some(facets) = &request.facets {
            snapshot.facet_counts(facets, &found.matching).ok();
        }
    }
}

#[cfg(test)]
mod tests {
    use shards::search::SearchQuery;

    use super::{RECENT_SEARCHES_MAX, REMEMBER_EVERY, RecentSearches, ShardSearchRequest};

    fn request(q: &str, limit: usize) -> ShardSearchRequest {
        ShardSearchRequest {
            query: SearchQuery {
                q: Some(q.to_owned()),
                limit,
                deadline: Some(std::time::Instant::now()),
                ..SearchQuery::default()
            },
            filter: None,
            facets: None,
            vector: None,
            retrieve_vectors: false,
            pinned_documents: None,
        }
    }

    fn replayed_words(recent: &mut RecentSearches) -> Vec<String> {
        recent
            .take_replay()
            .unwrap_or_default()
            .into_iter()
            .map(|request| request.query.q.unwrap_or_default())
            .collect()
    }

    #[test]
    fn searches_are_replayed_most_recent_first_once_each_page_size_aside() {
        let mut recent = RecentSearches::default();
        recent.remember(&request("alpha", 10));
        recent.remember(&request("beta", 10));
        recent.remember(&request("alpha", 20));
        let replayed = recent.take_replay().expect("searches ran");
        assert!(
            replayed
                .iter()
                .all(|request| request.query.deadline.is_none())
        );
        let words: Vec<_> = replayed
            .iter()
            .map(|request| request.query.q.clone())
            .collect();
        assert_eq!(words, [Some("alpha".to_owned()), Some("beta".to_owned())]);
        assert!(recent.take_replay().is_none(), "nothing ran since");
        recent.remember(&request("gamma", 10));
        assert_eq!(replayed_words(&mut recent), ["gamma", "alpha", "beta"]);
    }

    #[test]
    fn the_oldest_search_goes_past_the_bound() {
        let mut recent = RecentSearches::default();
        for index in 0..=RECENT_SEARCHES_MAX {
            recent.remember(&request(&format!("word{index}"), 10));
        }
        let replayed = replayed_words(&mut recent);
        assert_eq!(replayed.len(), RECENT_SEARCHES_MAX);
        assert_eq!(replayed[0], format!("word{RECENT_SEARCHES_MAX}"));
        assert!(!replayed.contains(&"word0".to_owned()));
    }

    #[test]
    fn a_full_memory_takes_one_search_in_remember_every() {
        let mut recent = RecentSearches::default();
        for index in 0..RECENT_SEARCHES_MAX {
            recent.remember(&request(&format!("word{index}"), 10));
        }
        let offered = 3 * REMEMBER_EVERY;
        for index in 0..offered {
            recent.remember(&request(&format!("later{index}"), 10));
        }
        let replayed = replayed_words(&mut recent);
        let later: Vec<&String> = replayed
            .iter()
            .filter(|word| word.starts_with("later"))
            .collect();
        let mut expected: Vec<String> = (0..offered)
            .filter(|index| index % REMEMBER_EVERY == 0)
            .map(|index| format!("later{index}"))
            .collect();
        expected.reverse();
        assert_eq!(later, expected.iter().collect::<Vec<_>>());
        // The next one offered is taken in; the one after it is not, and still marks the
        // commit as searched.
        recent.remember(&request("taken", 10));
        assert_eq!(replayed_words(&mut recent)[0], "taken");
        recent.remember(&request("skipped", 10));
        let replayed = replayed_words(&mut recent);
        assert_eq!(replayed[0], "taken", "a skipped search is not remembered");
        assert!(!replayed.contains(&"skipped".to_owned()));
    }
}
