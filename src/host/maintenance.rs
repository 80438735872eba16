//! A shard's file over its life: [`Remove`] (index deletion), [`ReleaseFreeSpace`] (idle
//! maintenance and `indexCompaction`) and [`UnusedBytes`] (what a compaction would give
//! back).
//!
//! Invariant: a removed shard is closed and its prepared batch dropped before its file goes;
//! a missing file is already removed.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use shards::shard::Repack;

use super::protocol::ShardRequest;
use super::{ShardAddress, ShardForStatistics, ShardHost};
use crate::errors::{ResponseError, shard_error};

/// Closes the shard and removes its file and its vector files.
#[derive(Debug)]
pub struct Remove;

impl ShardRequest for Remove {
    type Answer = ();
    const IS_WRITE: bool = true;

    async fn run(self, host: &ShardHost, address: ShardAddress) -> Result<(), ResponseError> {
        host.assert_owner(&address, "removes");
        host.prepared.borrow_mut().remove(&address);
        host.registry.remove(&address);
        let path = address.path(&host.data_directory);
        crate::runtime::blocking::run(move || {
            let vectors = shards::vectors::graphs::vector_directory(&path);
            match std::fs::remove_dir_all(&vectors) {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => return Err(error),
            }
            match std::fs::remove_file(&path) {
                Ok(()) => Ok(()),
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(error) => Err(error),
            }
        })
        .await
        .map_err(|error| crate::errors::io_error(&error))
    }
}

/// Gives the disk blocks of the shard file's free pages back to the file system when at
/// least `minimum_pages` are not given back yet (see
/// [`shards::shard::Shard::release_free_space`]), after rewriting the trees `repack`
/// selects in full pages (see [`shards::shard::Shard::repack`]): once the task queue is
/// idle (the sparse trees), and for an `indexCompaction` task (every tree, with no
/// minimum). Answers the blocks the file held before and after.
#[derive(Debug)]
pub struct ReleaseFreeSpace {
    pub minimum_pages: u64,
    pub repack: Repack,
    /// Set when a task arrives: stops the repack between two runs of entries.
    pub interrupt: Arc<AtomicBool>,
}

/// A file's allocated bytes before and after a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileSizes {
    pub before: u64,
    pub after: u64,
}

impl ShardRequest for ReleaseFreeSpace {
    type Answer = FileSizes;
    const IS_WRITE: bool = true;

    async fn run(
        self,
        host: &ShardHost,
        address: ShardAddress,
    ) -> Result<FileSizes, ResponseError> {
        let shard = host.shard(&address)?;
        let path = address.path(&host.data_directory);
        let ReleaseFreeSpace {
            minimum_pages,
            repack,
            interrupt,
        } = self;
        let work = move || {
            let before = allocated_bytes(&path)?;
            let outcome = shard.repack(repack, &interrupt).map_err(shard_error)?;
            if !outcome.repacked.is_empty() || outcome.interrupted {
                tracing::debug!(?outcome, "trees rewritten");
            }
            shard
                .release_free_space(minimum_pages, &interrupt)
                .map_err(shard_error)?;
            Ok::<_, ResponseError>(FileSizes {
                before,
                after: allocated_bytes(&path)?,
            })
        };
        match repack {
            // Idle maintenance writes the shard as a batch does, so it runs where batches
            // run: on the core's indexing thread, at its priority and in its turns.
            Repack::Sparse => crate::runtime::indexing_thread::run(work).await,
            Repack::Nothing | Repack::Everything => crate::runtime::blocking::run(work).await,
        }
    }
}

/// Bytes of the shard's file that hold no live data.
#[derive(Debug)]
pub struct UnusedBytes;

impl ShardRequest for UnusedBytes {
    type Answer = u64;
    const IS_WRITE: bool = false;

    async fn run(self, host: &ShardHost, address: ShardAddress) -> Result<u64, ResponseError> {
        match host.shard_for_statistics(&address)? {
            ShardForStatistics::Closed(closed) => Ok(closed.unused_bytes),
            ShardForStatistics::Open(shard) => Ok(shard.unused_bytes()),
        }
    }
}

/// The bytes of each part of the shard's files (its trees, free pages, embedders' graphs and
/// vector files): what `showInternalDatabaseSizes` shows. It opens a closed shard, as the
/// client asked for what only an open shard can measure.
#[derive(Debug)]
pub struct StoreSizes;

impl ShardRequest for StoreSizes {
    type Answer = shards::shard::StoreSizes;
    const IS_WRITE: bool = false;

    async fn run(
        self,
        host: &ShardHost,
        address: ShardAddress,
    ) -> Result<shards::shard::StoreSizes, ResponseError> {
        let shard = match host.registry.peek(&address) {
            Some(shard) => shard,
            None => host.shard(&address)?,
        };
        shard.store_sizes().map_err(shard_error)
    }
}

/// The bytes of disk blocks the file at `path` holds (what `du` counts, not its length: a
/// shard file's released free pages are holes).
fn allocated_bytes(path: &Path) -> Result<u64, ResponseError> {
    use std::os::unix::fs::MetadataExt;
    /// Bytes per unit of `st_blocks`, fixed by POSIX.
    const STAT_BLOCK_BYTES: u64 = 512;
    std::fs::metadata(path)
        .map(|metadata| metadata.blocks() * STAT_BLOCK_BYTES)
        .map_err(|error| crate::errors::io_error(&error))
}
