//! What one shard's batch may hold in memory: the changed pages its write transaction keeps
//! and the pending word and facet changes, each a share of `--max-indexing-memory` split
//! between the cores.
//!
//! Invariant: with `max_indexing_memory` set, the bounds of all cores together stay within
//! a quarter (pages) and a half (pending changes) of it.

use shards::shard::PENDING_CHANGES_BYTES_DEFAULT;

/// Changed pages one shard's write transaction keeps in memory by default. A batch rewrites
/// leaves all over the word trees, so without a bound its transaction would hold most of the
/// shard file in memory until it commits. Measured on the 886k PyPI documents (two shards):
/// peak RSS after indexing 1,541-1,762 MiB unbounded; with 8, 16, 32 and 256 MiB, 689, 779,
/// 718 and 1,592 MiB; indexing time within the runs' noise (27-33 s for all).
pub const SHARD_WRITE_MEMORY_BYTES_DEFAULT: u64 = 32 << 20;

/// Share of `--max-indexing-memory` the write transactions of all cores may hold together;
/// the rest is for the batch's pending word changes, its plan and its payloads.
const WRITE_MEMORY_SHARE_OF_INDEXING_MEMORY: u64 = 4;

/// Share of `--max-indexing-memory` the pending word and facet changes of all cores' batches
/// may take together.
const PENDING_CHANGES_SHARE_OF_INDEXING_MEMORY: u64 = 2;

/// `default`, lowered so that one per core stays within `1 / share` of `max_indexing_memory`.
fn per_core_share(default: u64, max_indexing_memory: Option<u64>, share: u64, cores: usize) -> u64 {
    let cores = u64::try_from(cores.max(1)).unwrap_or(u64::MAX);
    match max_indexing_memory {
        Some(memory) => default.min(memory / share / cores),
        None => default,
    }
}

/// Changed pages one shard's write transaction keeps in memory at most: the default, lowered
/// so that one transaction per core stays within a quarter of `max_indexing_memory`.
pub fn shard_write_memory_bytes(max_indexing_memory: Option<u64>, cores: usize) -> u64 {
    per_core_share(
        SHARD_WRITE_MEMORY_BYTES_DEFAULT,
        max_indexing_memory,
        WRITE_MEMORY_SHARE_OF_INDEXING_MEMORY,
        cores,
    )
}

/// Heap bytes one shard's pending word and facet changes take at most between two writes to
/// its trees: the shards' default, lowered so that one batch per core stays within half of
/// `max_indexing_memory`.
pub fn shard_pending_changes_bytes(max_indexing_memory: Option<u64>, cores: usize) -> u64 {
    let default = u64::try_from(PENDING_CHANGES_BYTES_DEFAULT).unwrap_or(u64::MAX);
    per_core_share(
        default,
        max_indexing_memory,
        PENDING_CHANGES_SHARE_OF_INDEXING_MEMORY,
        cores,
    )
}

/// What one shard's batch may hold in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardMemory {
    /// Changed pages its write transaction keeps in memory at most (the page store writes the
    /// rest to the file before the commit).
    pub write_pages_bytes: u64,
    /// Heap bytes its pending word and facet changes take at most between two writes to the
    /// trees.
    pub pending_changes_bytes: u64,
    /// Load each vector graph into memory when it is opened
    /// (`VECTORSTORE_READER_PREFETCH_MEMORY`).
    pub prefetch_vectors: bool,
}

impl ShardMemory {
    /// The bounds for `cores` cores sharing `max_indexing_memory`.
    pub fn for_indexing_memory(max_indexing_memory: Option<u64>, cores: usize) -> ShardMemory {
        ShardMemory {
            write_pages_bytes: shard_write_memory_bytes(max_indexing_memory, cores),
            pending_changes_bytes: shard_pending_changes_bytes(max_indexing_memory, cores),
            prefetch_vectors: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_write_memory_of_a_shard_is_the_default_unless_indexing_memory_is_small() {
        assert_eq!(
            shard_write_memory_bytes(None, 2),
            SHARD_WRITE_MEMORY_BYTES_DEFAULT
        );
        assert_eq!(
            shard_write_memory_bytes(Some(16 << 30), 2),
            SHARD_WRITE_MEMORY_BYTES_DEFAULT
        );
        // A quarter of 64 MiB shared by two cores.
        assert_eq!(shard_write_memory_bytes(Some(64 << 20), 2), 8 << 20);
        assert_eq!(shard_write_memory_bytes(Some(64 << 20), 0), 16 << 20);
    }

    #[test]
    fn the_pending_changes_of_a_shard_take_the_default_unless_indexing_memory_is_small() {
        let default = u64::try_from(PENDING_CHANGES_BYTES_DEFAULT).expect("fits u64");
        assert_eq!(shard_pending_changes_bytes(None, 2), default);
        assert_eq!(shard_pending_changes_bytes(Some(16 << 30), 2), default);
        // Half of 64 MiB shared by two cores.
        assert_eq!(shard_pending_changes_bytes(Some(64 << 20), 2), 16 << 20);
        let memory = ShardMemory::for_indexing_memory(Some(64 << 20), 2);
        assert_eq!(memory.write_pages_bytes, 8 << 20);
        assert_eq!(memory.pending_changes_bytes, 16 << 20);
    }
}
