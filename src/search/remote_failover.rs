//! Asking another owner when a remote fails (coresearch goes further than Meilisearch 1.41
//! here): a query that names other instances able to answer it (the other owners of a
//! network shard, see [`super::shard_partition`]) is sent to the next of them, in a new round,
//! when its remote fails; only when none is left does the failure reach `remoteErrors`.
//!
//! Invariants: a query is answered by at most one remote (a failed remote's answer is
//! discarded whole, so its hits never join the merge); a remote that failed once in a request
//! is not asked again in it; a failed remote is reported in `remoteErrors` exactly when one of
//! the queries it failed found no owner that answered, and then with its own error; a request
//! without fallbacks reports every failed remote, as Meilisearch does.

use std::collections::{BTreeMap, BTreeSet};

use super::remote::{RemoteQueries, RemoteQuery};
use crate::errors::ResponseError;

/// The failures of one federated search and the queries waiting for another owner.
#[derive(Debug, Default)]
pub struct Failover {
    /// Every remote that failed, with its (last) error.
    failures: BTreeMap<String, ResponseError>,
    /// The queries of failed remotes, for the next round.
    pending: Vec<RemoteQuery>,
    /// The remotes whose failure left a query unanswered.
    reported: BTreeSet<String>,
}

impl Failover {
    /// The remote `name` failed with `error`: its `queries` wait for the next round.
    pub fn failed(&mut self, name: String, queries: Vec<RemoteQuery>, error: ResponseError) {
        for mut query in queries {
            query.failed_by.push(name.clone());
            self.pending.push(query);
        }
        self.failures.insert(name, error);
    }

    /// The waiting queries by their next owner that has not failed; the others are lost,
    /// and the remotes that failed them will be reported.
    pub fn next_round(&mut self) -> RemoteQueries {
        let mut retries = RemoteQueries::default();
        for mut query in std::mem::take(&mut self.pending) {
            query
                .fallbacks
                .retain(|(name, _)| !self.failures.contains_key(name));
            if query.fallbacks.is_empty() {
                self.reported.extend(query.failed_by.iter().cloned());
                continue;
            }
            let (name, remote) = query.fallbacks.remove(0);
            retries.add(&name, &remote, query);
        }
        retries
    }

    /// `remoteErrors`: the reported remotes with their errors.
    pub fn errors(self) -> BTreeMap<String, ResponseError> {
        let reported = self.reported;
        self.failures
            .into_iter()
            .filter(|(name, _)| reported.contains(name))
            .collect()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::Map;

    use super::*;
    use crate::errors::Code;
    use crate::network::Remote;

    fn remote(name: &str) -> (String, Remote) {
        let remote = Remote {
            url: format!("http://{name}"),
            ..Remote::default()
        };
        (name.to_owned(), remote)
    }

    /// One query for `first`, with `fallbacks`, as the only query of `first`.
    fn queries_of(first: &str, fallbacks: &[&str]) -> Vec<RemoteQuery> {
        let mut queries = RemoteQueries::default();
        let (name, first) = remote(first);
        let fallbacks = fallbacks.iter().map(|name| remote(name)).collect();
        queries.push_with_fallbacks(&name, &first, Map::new(), (1.0, 0), fallbacks);
        queries.into_queries().remove(0).1
    }

    fn error() -> ResponseError {
        ResponseError::new(Code::RemoteCouldNotSendRequest, "down")
    }

    #[test]
    fn a_failed_query_goes_to_the_next_owner_and_the_failure_is_not_reported() {
        let mut failover = Failover::default();
        failover.failed("ms1".to_owned(), queries_of("ms1", &["ms2"]), error());
        let retries = failover.next_round().into_queries();
        assert_eq!(retries.len(), 1);
        assert_eq!(retries[0].0, "ms2");
        assert!(failover.next_round().is_empty());
        assert!(failover.errors().is_empty());
    }

    #[test]
    fn a_query_every_owner_failed_reports_them_all() {
        let mut failover = Failover::default();
        failover.failed("ms1".to_owned(), queries_of("ms1", &["ms2"]), error());
        let (name, queries) = failover.next_round().into_queries().remove(0);
        failover.failed(name, queries, error());
        assert!(failover.next_round().is_empty());
        let errors = failover.errors();
        assert_eq!(errors.keys().collect::<Vec<_>>(), ["ms1", "ms2"]);
    }

    #[test]
    fn a_remote_that_failed_is_not_asked_again() {
        let mut failover = Failover::default();
        failover.failed("ms1".to_owned(), queries_of("ms1", &["ms2"]), error());
        failover.failed("ms2".to_owned(), queries_of("ms2", &["ms1"]), error());
        assert!(failover.next_round().is_empty());
        assert_eq!(failover.errors().len(), 2);
    }
}
