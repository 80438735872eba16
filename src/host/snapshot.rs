//! The shard side of a snapshot ([`SnapshotShard`]): the shard's page store written into the
//! snapshot's staging directory — compacted from a read snapshot of its last commit
//! (`storage_engine::ReadTransaction::copy_compacted`: live pages only, full leaves), or
//! copied byte for byte with `--experimental-no-snapshot-compaction` — and its vector files
//! (`<shard file>.vectors/`) copied beside it.
//!
//! Where: the read snapshot is taken on the shard's own core (where its page store is open),
//! and the copy runs on a background thread of low priority, so searches on the core never
//! wait for it.
//!
//! Consistency: the copy is the shard's last commit. A snapshot runs alone in its batch, so
//! no batch writes the shard while it is copied; even so the compacted copy reads its pinned
//! snapshot only, and the vector files are append-only with their committed record count in
//! the page store, so records written past it are ignored when the copy is opened. The
//! uncompacted copy relies on the batch being alone: it copies the file as it is.

use std::path::{Path, PathBuf};

use shards::shard::ShardError;
use shards::vectors::graphs::vector_directory;
use storage_engine::ReadTransaction;

use super::protocol::ShardRequest;
use super::{ShardAddress, ShardHost};
use crate::errors::{ResponseError, io_error, shard_error};

/// Write the shard's page store to `destination` (a new file) and its vector files into the
/// vector directory beside it.
#[derive(Debug)]
pub struct SnapshotShard {
    pub destination: PathBuf,
    /// Compact the page store (the default), or copy it as it is.
    pub compaction: bool,
}

/// What a shard wrote into the snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardSnapshotted {
    /// Bytes of the page store written.
    pub store_bytes: u64,
    /// Bytes of the vector files copied.
    pub vector_bytes: u64,
}

impl ShardRequest for SnapshotShard {
    type Answer = ShardSnapshotted;
    /// Background work: it runs in the indexing latency class, behind searches.
    const IS_WRITE: bool = true;

    async fn run(
        self,
        host: &ShardHost,
        address: ShardAddress,
    ) -> Result<ShardSnapshotted, ResponseError> {
        let shard = host.shard(&address)?;
        let source = address.path(&host.data_directory);
        let snapshot = shard.database().begin_read();
        crate::runtime::blocking::run_in_background("snapshot-shard", move || {
            copy_shard(&snapshot, &source, &self.destination, self.compaction)
        })
        .await
        .map_err(|error| io_error(&error))?
    }
}

/// Writes the page store and the vector files of the shard whose file is `source`.
fn copy_shard(
    snapshot: &ReadTransaction,
    source: &Path,
    destination: &Path,
    compaction: bool,
) -> Result<ShardSnapshotted, ResponseError> {
    let store_bytes = if compaction {
        snapshot
            .copy_compacted(destination)
            .map_err(|error| shard_error(ShardError::Storage(error)))?
            .file_bytes
    } else {
        std::fs::copy(source, destination).map_err(|error| io_error(&error))?
    };
    let vector_bytes = copy_vector_files(&vector_directory(source), &vector_directory(destination))
        .map_err(|error| io_error(&error))?;
    Ok(ShardSnapshotted {
        store_bytes,
        vector_bytes,
    })
}

/// Copies every file of the vector directory `source` (none when it does not exist) into
/// `destination`; answers the bytes copied.
fn copy_vector_files(source: &Path, destination: &Path) -> std::io::Result<u64> {
    let entries = match std::fs::read_dir(source) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(error) => return Err(error),
    };
    std::fs::create_dir_all(destination)?;
    let mut bytes = 0;
    for entry in entries {
        let entry = entry?;
        if entry.file_type()?.is_file() {
            bytes += std::fs::copy(entry.path(), destination.join(entry.file_name()))?;
        }
    }
    Ok(bytes)
}
