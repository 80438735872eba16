//! Rendezvous (highest-random-weight) hashing: which shard a document belongs to.
//!
//! The weight of a candidate for an object is XXH3-64 with seed 0 over the bytes
//! `candidate ‖ 0xFF ‖ object ‖ 0xFF` (what Rust's `Hash` writes for a `(&str, &str)` tuple),
//! compared as an unsigned 64-bit integer; the candidate with the highest weight wins.
//!
//! Invariants, all chosen to agree with Meilisearch Enterprise's network sharding:
//! - the byte layout above is hashed in one shot; it equals the streaming hash Meilisearch computes;
//! - on a tie of weights the candidate that comes **last** in iteration order wins (the behaviour of
//!   `Iterator::max_by_key`); callers that iterate sorted names therefore get the greatest name;
//! - no candidate means no owner (`None`), never a panic.
//!
//! The same function assigns documents to the local shards of an index and to network shards, and
//! chooses which old owner of a shard ships it to a new owner (candidate = remote, object = shard).

use smallvec::SmallVec;
use xxhash_rust::xxh3::xxh3_64;

/// The byte that terminates each string in the hashed layout (Rust's `Hash` for `str`).
const STRING_TERMINATOR_BYTE: u8 = 0xFF;

/// The longest hashed layout laid out on the stack; a longer one is laid out on the heap. Every
/// call of a batch's planning weighs one document id, so the usual id costs no allocation.
const STACK_LAYOUT_BYTES_MAX: usize = 256;

/// The weight of `candidate` for `object`: XXH3-64, seed 0, of `candidate ‖ 0xFF ‖ object ‖ 0xFF`.
pub fn rendezvous_weight(candidate: &str, object: &str) -> u64 {
    let mut bytes: SmallVec<[u8; STACK_LAYOUT_BYTES_MAX]> = SmallVec::new();
    bytes.extend_from_slice(candidate.as_bytes());
    bytes.push(STRING_TERMINATOR_BYTE);
    bytes.extend_from_slice(object.as_bytes());
    bytes.push(STRING_TERMINATOR_BYTE);
    xxh3_64(&bytes)
}

/// The winning candidate for `object` together with its weight; `None` when there is no candidate.
///
/// Ties go to the candidate that comes last in iteration order.
pub fn rendezvous_winner_with_weight<'candidate>(
    candidates: impl IntoIterator<Item = &'candidate str>,
    object: &str,
) -> Option<(&'candidate str, u64)> {
    let mut best: Option<(&'candidate str, u64)> = None;
    for candidate in candidates {
        let weight = rendezvous_weight(candidate, object);
        match best {
            // `>=` so that a later candidate with an equal weight replaces the earlier one.
            Some((_, best_weight)) if weight < best_weight => {}
            _ => best = Some((candidate, weight)),
        }
    }
    best
}

/// The candidate (shard name, remote name…) that owns `object` (a document id, a shard name…).
pub fn rendezvous_winner<'candidate>(
    candidates: impl IntoIterator<Item = &'candidate str>,
    object: &str,
) -> Option<&'candidate str> {
    rendezvous_winner_with_weight(candidates, object).map(|(candidate, _)| candidate)
}

/// The position in `candidates` of the owner of `object` (for shards kept in a list); `None`
/// when the list is empty. Ties go to the later position.
pub fn rendezvous_winner_position(candidates: &[impl AsRef<str>], object: &str) -> Option<usize> {
    let mut best: Option<(usize, u64)> = None;
    for (position, candidate) in candidates.iter().enumerate() {
        let weight = rendezvous_weight(candidate.as_ref(), object);
        match best {
            Some((_, best_weight)) if weight < best_weight => {}
            _ => best = Some((position, weight)),
        }
    }
    best.map(|(position, _)| position)
}

/// Where a document goes when the set of shards changes from `existing` to `existing ∪ added`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resharding<'candidate> {
    /// Neither set has a candidate.
    Unsharded,
    /// The document stays on (or, when only one set is non-empty, goes to) this shard.
    Sharded { shard: &'candidate str },
    /// The best added shard beats the best existing shard strictly: the document moves.
    Resharded {
        previous: &'candidate str,
        new: &'candidate str,
    },
}

/// Compares the best existing shard with the best added shard for `object`; the document moves
/// only when the added shard's weight is strictly greater.
pub fn reshard<'candidate>(
    existing: impl IntoIterator<Item = &'candidate str>,
    added: impl IntoIterator<Item = &'candidate str>,
    object: &str,
) -> Resharding<'candidate> {
    match (
        rendezvous_winner_with_weight(existing, object),
        rendezvous_winner_with_weight(added, object),
    ) {
        (None, None) => Resharding::Unsharded,
        (Some((shard, _)), None) | (None, Some((shard, _))) => Resharding::Sharded { shard },
        (Some((previous, losing)), Some((new, winning))) if winning > losing => {
            Resharding::Resharded { previous, new }
        }
        (Some((shard, _)), Some(_)) => Resharding::Sharded { shard },
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::hash::{BuildHasher, BuildHasherDefault};

    use super::*;

    /// Meilisearch's way: the standard `Hash` of a `(&str, &str)` tuple fed to twox-hash's
    /// streaming XXH3-64 hasher. An independent computation of the same weight.
    fn weight_as_meilisearch_computes_it(candidate: &str, object: &str) -> u64 {
        let hasher = BuildHasherDefault::<twox_hash::XxHash3_64>::default();
        hasher.hash_one((candidate, object))
    }

    /// The winner computed naively from independently computed weights.
    fn naive_winner<'a>(candidates: &[&'a str], object: &str) -> Option<&'a str> {
        let mut best: Option<(&'a str, u64)> = None;
        for candidate in candidates {
            let weight = weight_as_meilisearch_computes_it(candidate, object);
            if best.is_none_or(|(_, best_weight)| weight >= best_weight) {
                best = Some((candidate, weight));
            }
        }
        best.map(|(candidate, _)| candidate)
    }

    #[test]
    fn weights_match_golden_values() {
        assert_eq!(rendezvous_weight("ms0", "1"), 0x087a_75ea_6d3f_2e14);
        assert_eq!(rendezvous_weight("ms1", "1"), 0xa869_01dc_bef9_69ff);
        assert_eq!(rendezvous_weight("ms2", "1"), 0x8027_ce7d_f62e_3d58);
        assert_eq!(
            rendezvous_weight("shard-a", "doc-42"),
            0x0e79_27ed_68bf_cad0
        );
        assert_eq!(rendezvous_weight("", ""), 0xb258_05c5_94de_c06b);
    }

    #[test]
    fn winners_match_golden_assignment_of_meilisearch_network_tests() {
        let shards = ["ms0", "ms1", "ms2"];
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
        for (document_id, shard) in expected {
            assert_eq!(
                rendezvous_winner(shards, document_id),
                Some(shard),
                "id {document_id}"
            );
        }
    }

    #[test]
    fn weight_equals_streaming_hash_of_the_string_tuple() {
        let long = "x".repeat(300);
        let samples = [
            "",
            "a",
            "ms0",
            "shard-😀",
            "ünïcode",
            "with\u{ff}byte",
            long.as_str(),
        ];
        for candidate in samples {
            for object in samples {
                assert_eq!(
                    rendezvous_weight(candidate, object),
                    weight_as_meilisearch_computes_it(candidate, object),
                    "candidate {candidate:?} object {object:?}"
                );
            }
        }
    }

    #[test]
    fn winner_table_matches_independent_computation() {
        let shard_sets: [&[&str]; 4] = [
            &["a"],
            &["ms0", "ms1", "ms2"],
            &["alpha", "beta", "gamma", "delta"],
            &["s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7"],
        ];
        for shards in shard_sets {
            for number in 0..500u32 {
                let document_id = format!("doc-{number}");
                assert_eq!(
                    rendezvous_winner(shards.iter().copied(), &document_id),
                    naive_winner(shards, &document_id),
                    "shards {shards:?} id {document_id}"
                );
            }
        }
    }

    #[test]
    fn winner_does_not_depend_on_candidate_order_without_ties() {
        let sorted = ["s0", "s1", "s2", "s3"];
        let shuffled = ["s2", "s0", "s3", "s1"];
        for number in 0..200u32 {
            let document_id = number.to_string();
            assert_eq!(
                rendezvous_winner(sorted, &document_id),
                rendezvous_winner(shuffled, &document_id)
            );
        }
    }

    #[test]
    fn tie_goes_to_the_last_candidate() {
        // Equal names have equal weights: the last one in iteration order must win.
        let first = String::from("same");
        let second = String::from("same");
        let winner = rendezvous_winner([first.as_str(), second.as_str()], "doc")
            .expect("rendezvous_winner succeeds");
        assert!(std::ptr::eq(winner.as_ptr(), second.as_ptr()));
    }

    #[test]
    fn winner_position_points_at_the_winner() {
        let shards = vec!["ms0".to_owned(), "ms1".to_owned(), "ms2".to_owned()];
        for number in 0..100u32 {
            let document_id = number.to_string();
            let position = rendezvous_winner_position(&shards, &document_id)
                .expect("rendezvous_winner_position succeeds");
            assert_eq!(
                Some(shards[position].as_str()),
                rendezvous_winner(shards.iter().map(String::as_str), &document_id)
            );
        }
        assert_eq!(
            rendezvous_winner_position(&["same", "same"], "doc"),
            Some(1)
        );
        let no_shards: [&str; 0] = [];
        assert_eq!(rendezvous_winner_position(&no_shards, "doc"), None);
    }

    #[test]
    fn no_candidate_means_no_owner() {
        assert_eq!(rendezvous_winner(std::iter::empty(), "doc"), None);
        assert_eq!(
            reshard(std::iter::empty(), std::iter::empty(), "doc"),
            Resharding::Unsharded
        );
    }

    #[test]
    fn resharding_moves_a_document_only_to_a_strictly_better_added_shard() {
        let existing = ["ms0", "ms1"];
        let added = ["ms2"];
        let mut moved = 0;
        for number in 0..300u32 {
            let document_id = number.to_string();
            let all_winner = rendezvous_winner(["ms0", "ms1", "ms2"], &document_id)
                .expect("rendezvous_winner succeeds");
            match reshard(existing, added, &document_id) {
                Resharding::Resharded { previous, new } => {
                    moved += 1;
                    assert_eq!(new, "ms2");
                    assert_eq!(all_winner, "ms2");
                    assert_eq!(Some(previous), rendezvous_winner(existing, &document_id));
                }
                Resharding::Sharded { shard } => assert_eq!(shard, all_winner),
                Resharding::Unsharded => panic!("two sets of candidates cannot be unsharded"),
            }
        }
        assert!(moved > 0, "some documents must move to the added shard");
        assert_eq!(
            reshard(std::iter::empty(), added, "7"),
            Resharding::Sharded { shard: "ms2" }
        );
    }
}
