//! The shards of a network of instances (Meilisearch Enterprise's `network.shards`), as a
//! shard and a filter see them: their names, and which of them a document belongs to.
//!
//! A document belongs to the network shard that wins the rendezvous over the names for its
//! external id ([`crate::rendezvous`]), the same function Meilisearch Enterprise places
//! documents with. Which instances hold a shard is none of this type's business: the server
//! decides ownership, a shard only needs the names.
//!
//! Invariants: the names are sorted and without repeats (Meilisearch iterates its shards
//! sorted, and a tie of weights goes to the later name); a position is an index into them;
//! clones share one allocation, so comparing two views of the same network is one pointer
//! comparison.

use std::sync::Arc;

use crate::rendezvous::rendezvous_winner_position;

/// The sorted names of a network's shards.
#[derive(Debug, Clone)]
pub struct NetworkShards {
    names: Arc<[String]>,
}

impl PartialEq for NetworkShards {
    fn eq(&self, other: &NetworkShards) -> bool {
        Arc::ptr_eq(&self.names, &other.names) || self.names == other.names
    }
}

impl Eq for NetworkShards {}

impl NetworkShards {
    /// The shards named `names`, sorted and without repeats.
    pub fn new(names: impl IntoIterator<Item = String>) -> NetworkShards {
        let mut names: Vec<String> = names.into_iter().collect();
        names.sort_unstable();
        names.dedup();
        NetworkShards {
            names: names.into(),
        }
    }

    /// The names, sorted.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The position of the shard named `name`, `None` when the network has no such shard.
    pub fn position(&self, name: &str) -> Option<usize> {
        self.names
            .binary_search_by(|candidate| candidate.as_str().cmp(name))
            .ok()
    }

    /// The position of the shard `external_id` belongs to; `None` when there is no shard.
    /// One hash per shard.
    pub fn shard_of(&self, external_id: &str) -> Option<usize> {
        rendezvous_winner_position(&self.names, external_id)
    }
}

#[cfg(test)]
mod tests {
    use super::NetworkShards;

    fn shards(names: &[&str]) -> NetworkShards {
        NetworkShards::new(names.iter().map(|name| (*name).to_owned()))
    }

    #[test]
    fn names_are_sorted_without_repeats_and_found_by_name() {
        let shards = shards(&["ms2", "ms0", "ms1", "ms0"]);
        assert_eq!(shards.names(), ["ms0", "ms1", "ms2"]);
        assert_eq!(shards.position("ms1"), Some(1));
        assert_eq!(shards.position("ms3"), None);
    }

    #[test]
    fn documents_go_where_meilisearch_enterprise_puts_them() {
        // The order the names are given in does not matter: they are sorted.
        let shards = shards(&["ms2", "ms1", "ms0"]);
        let expected = [
            ("A", "ms1"),
            ("B", "ms1"),
            ("C", "ms2"),
            ("D", "ms0"),
            ("E", "ms2"),
            ("1", "ms1"),
            ("2", "ms0"),
            ("3", "ms1"),
        ];
        for (id, shard) in expected {
            let position = shards.shard_of(id).expect("three shards give an owner");
            assert_eq!(shards.names()[position], shard, "id {id}");
        }
        assert_eq!(NetworkShards::new(Vec::new()).shard_of("A"), None);
    }

    #[test]
    fn equal_names_are_equal_views() {
        assert_eq!(shards(&["a", "b"]), shards(&["b", "a"]));
        assert_ne!(shards(&["a", "b"]), shards(&["a"]));
    }
}
