//! How many shards an index has: a new index starts with one, and grows as its documents
//! come, up to `--shards-per-index`, keeping at most `--documents-per-shard` documents per
//! shard where it can (the copy itself: `index_batch::growth`).
//!
//! Why: every shard costs a page store (an open file, a mapping, its caches) and a share of
//! every search's work whatever its size, so an index of five documents on sixteen shards
//! pays sixteen times for nothing; several shards pay off only when one would hold too many
//! documents for one indexing thread and one search thread.
//!
//! The rule: an index of `d` documents wants `ceil(d / documents_per_shard)` shards, rounded
//! up to a power of two and capped at its maximum. It grows only upward, when a batch leaves
//! it wanting more shards than it has; each growth copies every document once, and since
//! the count at least doubles, the copies an index ever makes add up to less than twice the
//! documents it ends with.
//!
//! Invariants: `documents_per_shard == 0` turns growth off (a new index gets its maximum at
//! once); an index's wanted shard count never exceeds its maximum nor goes below one.

use crate::coordinator::catalog::IndexRecord;

/// The rule new indexes are created with and grow by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardGrowth {
    /// The most shards of an index (`--shards-per-index`).
    pub shards_max: u32,
    /// Documents per shard before an index grows (`--documents-per-shard`; 0: never).
    pub documents_per_shard: u64,
}

impl ShardGrowth {
    /// The shard count and the maximum of a new index: one shard and room to grow, or the
    /// maximum at once when growth is off (or the maximum is one).
    pub fn new_index_shards(&self) -> (u32, Option<u32>) {
        let shards_max = self.shards_max.max(1);
        if self.documents_per_shard == 0 || shards_max == 1 {
            (shards_max, None)
        } else {
            (1, Some(shards_max))
        }
    }

    /// The shards `record` should grow to now that it holds `documents`, when more than it
    /// has (`None`: it stays as it is).
    pub fn grown_shards(&self, record: &IndexRecord, documents: u64) -> Option<u32> {
        let shards_max = record.shards_max?;
        if self.documents_per_shard == 0 {
            return None;
        }
        let wanted = wanted_shards(documents, self.documents_per_shard, shards_max);
        (wanted > record.shards).then_some(wanted)
    }
}

/// The shards an index of `documents` wants: enough for `documents_per_shard` each, rounded
/// up to a power of two, between one and `shards_max`.
pub fn wanted_shards(documents: u64, documents_per_shard: u64, shards_max: u32) -> u32 {
    assert!(documents_per_shard > 0, "growth is on");
    let needed = documents.div_ceil(documents_per_shard).max(1);
    let rounded = needed.checked_next_power_of_two().unwrap_or(u64::MAX);
    u32::try_from(rounded)
        .unwrap_or(u32::MAX)
        .clamp(1, shards_max.max(1))
}

#[cfg(test)]
mod tests {
    use time::OffsetDateTime;

    use super::*;

    fn record(shards: u32, shards_max: Option<u32>) -> IndexRecord {
        let mut record = IndexRecord::new(
            "books",
            "index-0".to_owned(),
            shards,
            None,
            OffsetDateTime::UNIX_EPOCH,
        );
        record.shards_max = shards_max;
        record
    }

    #[test]
    fn wanted_shards_round_up_to_powers_of_two_and_stop_at_the_maximum() {
        let cases = [
            (0, 1),
            (1, 1),
            (100, 1),
            (101, 2),
            (200, 2),
            (201, 4),
            (401, 8),
            (1_500, 16),
            (1_000_000, 16),
        ];
        for (documents, expected) in cases {
            assert_eq!(
                wanted_shards(documents, 100, 16),
                expected,
                "{documents} documents"
            );
        }
        assert_eq!(
            wanted_shards(1_000, 100, 12),
            12,
            "a maximum that is no power of two"
        );
        assert_eq!(wanted_shards(u64::MAX, 1, u32::MAX), u32::MAX);
    }

    #[test]
    fn a_new_index_starts_with_one_shard_unless_growth_is_off() {
        let growing = ShardGrowth {
            shards_max: 16,
            documents_per_shard: 100,
        };
        assert_eq!(growing.new_index_shards(), (1, Some(16)));
        let fixed = ShardGrowth {
            documents_per_shard: 0,
            ..growing
        };
        assert_eq!(fixed.new_index_shards(), (16, None));
        let single = ShardGrowth {
            shards_max: 1,
            ..growing
        };
        assert_eq!(single.new_index_shards(), (1, None));
    }

    #[test]
    fn an_index_grows_only_upward_and_only_with_room_to_grow() {
        let growth = ShardGrowth {
            shards_max: 16,
            documents_per_shard: 100,
        };
        assert_eq!(growth.grown_shards(&record(1, Some(16)), 100), None);
        assert_eq!(growth.grown_shards(&record(1, Some(16)), 101), Some(2));
        assert_eq!(growth.grown_shards(&record(1, Some(16)), 450), Some(8));
        assert_eq!(
            growth.grown_shards(&record(8, Some(16)), 10),
            None,
            "never shrinks"
        );
        assert_eq!(
            growth.grown_shards(&record(4, None), 10_000),
            None,
            "an index written before growth keeps its shards"
        );
        let off = ShardGrowth {
            documents_per_shard: 0,
            ..growth
        };
        assert_eq!(off.grown_shards(&record(1, Some(16)), 10_000), None);
    }
}
