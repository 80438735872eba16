//! The internal ids a batch's caller assigned to the documents the batch creates (see
//! [`super::apply::PreparedBatch::assign_ids`]), taken as the documents arrive.
//!
//! The caller assigns ids in the order the batch first meets each document id, which is the
//! order the documents reach the shard whenever every id of the batch appears once: then each
//! arriving document is the front of the queue, and taking its id costs one string
//! comparison, without hashing a user's id or missing the cache in a large map. The first
//! document that is not the front (an id met twice, an existing document) moves what is left
//! of the queue into a map, and every later take is a lookup.
//!
//! Invariants: an id is taken at most once; for assignments of distinct ids (what callers
//! give), what is taken is exactly what a map of every assigned id would answer, whatever the
//! arrival order.

use std::collections::{HashMap, VecDeque};

/// The assigned ids not taken yet.
#[derive(Debug, Default)]
pub(super) struct AssignedIds {
    /// In assignment order, while the documents arrive in it.
    queue: VecDeque<(String, u32)>,
    /// The rest, once a document arrived out of that order. The ids come from users: std's
    /// keyed hasher.
    scattered: HashMap<String, u32>,
}

impl AssignedIds {
    /// Adds assignments after those already held.
    pub fn extend(&mut self, assigned: impl IntoIterator<Item = (String, u32)>) {
        if self.scattered.is_empty() {
            self.queue.extend(assigned);
        } else {
            self.scattered.extend(assigned);
        }
    }

    /// Takes the internal id assigned to `external_id`, if any.
    pub fn take(&mut self, external_id: &str) -> Option<u32> {
        if let Some((front, _)) = self.queue.front()
            && front == external_id
        {
            return self.queue.pop_front().map(|(_, id)| id);
        }
        if !self.queue.is_empty() {
            self.scattered.extend(self.queue.drain(..));
        }
        self.scattered.remove(external_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assigned(pairs: &[(&str, u32)]) -> AssignedIds {
        let mut ids = AssignedIds::default();
        ids.extend(
            pairs
                .iter()
                .map(|(id, internal)| ((*id).to_owned(), *internal)),
        );
        ids
    }

    #[test]
    fn takes_in_order_and_out_of_order_answer_what_a_map_would() {
        let pairs = [("a", 1), ("b", 2), ("c", 3), ("d", 4)];
        let arrivals: [&[&str]; 4] = [
            &["a", "b", "c", "d"],
            &["b", "a", "d", "c"],
            &["a", "x", "b", "a", "d", "c"],
            &["d", "c", "b", "a", "a"],
        ];
        for arrival in arrivals {
            let mut ids = assigned(&pairs);
            let mut model: HashMap<&str, u32> = pairs.iter().copied().collect();
            for external_id in arrival {
                assert_eq!(
                    ids.take(external_id),
                    model.remove(external_id),
                    "{external_id} in {arrival:?}"
                );
            }
        }
    }

    #[test]
    fn assignments_added_after_a_scatter_are_found() {
        let mut ids = assigned(&[("a", 1), ("b", 2)]);
        assert_eq!(ids.take("b"), Some(2));
        ids.extend([("c".to_owned(), 3)]);
        assert_eq!(ids.take("c"), Some(3));
        assert_eq!(ids.take("a"), Some(1));
        assert_eq!(ids.take("a"), None);
    }
}
