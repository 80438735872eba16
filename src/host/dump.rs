//! The shard side of a dump ([`DumpDocuments`]): the shard writes every document of its last
//! commit as one line of JSON (with `_vectors` when the index has embedders, as an export
//! sends them) into a file of the dump's staging directory, in internal id order, and the
//! internal ids beside them, so the dump can list the index's documents in its order.
//!
//! Why on the shard's core: reading and serializing the documents is a dump's work, and each
//! shard does its share on its own core, in the indexing latency class (searches come
//! first), yielding every [`super::export::DOCUMENTS_PER_STEP`] documents; the file writes
//! run on the core's helper threads, [`DUMP_CHUNK_BYTES`] at a time.
//!
//! Invariants: the shard reads one snapshot (a dump runs alone in its batch, so no batch
//! changes the index meanwhile); a raised [`DumpProgress::stop`] stops the shard, which
//! says so ([`ShardDumped::stopped`]) and never claims a complete file.

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use shards::shard::ShardSnapshot;

use super::export::{DOCUMENTS_PER_STEP, document_line};
use super::protocol::ShardRequest;
use super::{ShardAddress, ShardHost};
use crate::errors::{ResponseError, io_error};

/// The JSON lines a shard gathers before handing them to a helper thread to write.
pub const DUMP_CHUNK_BYTES: usize = 1 << 20;

/// What the control core and the shards of one dump share.
#[derive(Debug, Default)]
pub struct DumpProgress {
    /// Documents written so far, over every shard.
    pub written: AtomicU64,
    /// Raised by a cancelation or a failing shard: every shard stops.
    pub stop: AtomicBool,
}

/// Write every document of the shard into the new file `path`, one line each in internal id
/// order, and each line's internal id (little-endian `u32`) into the new file `order_path`.
#[derive(Debug)]
pub struct DumpDocuments {
    pub path: PathBuf,
    pub order_path: PathBuf,
    pub progress: Arc<DumpProgress>,
}

/// What a shard did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardDumped {
    /// Documents written.
    pub documents: u64,
    /// Whether the shard stopped because [`DumpProgress::stop`] was raised.
    pub stopped: bool,
}

impl ShardRequest for DumpDocuments {
    type Answer = ShardDumped;
    /// Background work: it runs in the indexing latency class, behind searches.
    const IS_WRITE: bool = true;

    async fn run(
        self,
        host: &ShardHost,
        address: ShardAddress,
    ) -> Result<ShardDumped, ResponseError> {
        let outcome = match host.snapshot(&address) {
            Ok(snapshot) => self.write(&snapshot).await,
            Err(error) => Err(error),
        };
        if outcome.is_err() {
            self.progress.stop.store(true, Ordering::Relaxed);
        }
        outcome
    }
}

impl DumpDocuments {
    /// Writes the shard's documents, a chunk at a time.
    async fn write(&self, snapshot: &ShardSnapshot) -> Result<ShardDumped, ResponseError> {
        let (path, order_path) = (self.path.clone(), self.order_path.clone());
        let (mut file, mut order_file) = crate::runtime::blocking::run(move || {
            Ok::<_, std::io::Error>((File::create(path)?, File::create(order_path)?))
        })
        .await
        .map_err(|error| io_error(&error))?;
        let with_vectors = !snapshot.vector_settings().is_empty();
        let mut chunk = Vec::with_capacity(DUMP_CHUNK_BYTES);
        let mut order = Vec::new();
        let mut documents = 0;
        let mut reported = 0;
        for (position, id) in snapshot.document_ids().iter().enumerate() {
            if position % DOCUMENTS_PER_STEP == 0 {
                if self.progress.stop.load(Ordering::Relaxed) {
                    return Ok(ShardDumped {
                        documents,
                        stopped: true,
                    });
                }
                crate::runtime::yield_if_needed().await;
            }
            document_line(snapshot, id, with_vectors, &mut chunk)?;
            chunk.push(b'\n');
            order.extend_from_slice(&id.to_le_bytes());
            documents += 1;
            if chunk.len() >= DUMP_CHUNK_BYTES {
                file = write_chunk(file, std::mem::take(&mut chunk)).await?;
                order_file = write_chunk(order_file, std::mem::take(&mut order)).await?;
                self.progress
                    .written
                    .fetch_add(documents - reported, Ordering::Relaxed);
                reported = documents;
            }
        }
        write_chunk(file, chunk).await?;
        write_chunk(order_file, order).await?;
        self.progress
            .written
            .fetch_add(documents - reported, Ordering::Relaxed);
        Ok(ShardDumped {
            documents,
            stopped: false,
        })
    }
}

/// Appends `chunk` to `file` on a helper thread; the file comes back for the next chunk.
async fn write_chunk(mut file: File, chunk: Vec<u8>) -> Result<File, ResponseError> {
    crate::runtime::blocking::run(move || file.write_all(&chunk).map(|()| file))
        .await
        .map_err(|error| io_error(&error))
}
