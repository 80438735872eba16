//! The open graphs of a shard, one per embedder slot, shared by its batches and snapshots.
//!
//! A graph's trees live in the shard's page store and its vector files in the shard's vector
//! directory (`<shard file>.vectors/`). A graph is opened once and kept: its caches (dense
//! links per links version, record ids, sketch) serve every later snapshot.
//!
//! Invariant: a batch that wrote a graph and did not commit forgets every graph it touched
//! ([`GraphSet::forget`]), so no cache of an uncommitted state outlives it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use storage_engine::vector::{Graph, GraphOptions, VectorError, vector_file_paths};
use storage_engine::{ReadTransaction, WriteTransaction};

use super::settings::EmbedderSlot;
use crate::error::{ShardError, ShardResult};

/// The directory of the vector files of the shard whose file is `shard_path`.
pub fn vector_directory(shard_path: &Path) -> PathBuf {
    let mut directory = shard_path.as_os_str().to_owned();
    directory.push(".vectors");
    PathBuf::from(directory)
}

/// A shard's graphs by slot.
pub struct GraphSet {
    directory: PathBuf,
    options: Mutex<GraphOptions>,
    open: Mutex<HashMap<u16, Arc<Graph>>>,
}

impl GraphSet {
    /// The graphs of the shard whose file is `shard_path`.
    pub fn new(shard_path: &Path) -> GraphSet {
        GraphSet {
            directory: vector_directory(shard_path),
            options: Mutex::new(GraphOptions::default()),
            open: Mutex::new(HashMap::new()),
        }
    }

    /// A set for a batch that never writes vectors (a rebuild of text or facets): it opens
    /// nothing.
    pub fn detached() -> GraphSet {
        GraphSet::new(Path::new(""))
    }

    /// Sets how graphs opened from now on are opened (`VECTORSTORE_READER_PREFETCH_MEMORY`).
    pub fn set_prefetch_memory(&self, prefetch: bool) {
        if let Ok(mut options) = self.options.lock() {
            options.prefetch_memory = prefetch;
        }
    }

    fn cached(&self, slot: u16) -> Option<Arc<Graph>> {
        self.open.lock().ok()?.get(&slot).cloned()
    }

    fn remember(&self, slot: u16, graph: Graph) -> Arc<Graph> {
        let graph = Arc::new(graph);
        if let Ok(mut open) = self.open.lock() {
            open.insert(slot, Arc::clone(&graph));
        }
        graph
    }

    /// The slot's graph in `transaction`, created when it does not exist yet.
    pub fn for_write(
        &self,
        transaction: &WriteTransaction,
        slot: &EmbedderSlot,
    ) -> ShardResult<Arc<Graph>> {
        if let Some(graph) = self.cached(slot.slot) {
            return Ok(graph);
        }
        std::fs::create_dir_all(&self.directory)
            .map_err(|error| ShardError::Vectors(VectorError::Io(error)))?;
        let graph = Graph::create(
            transaction,
            &self.directory,
            &slot.graph_name(),
            slot.graph_parameters(),
        )?;
        Ok(self.remember(slot.slot, graph))
    }

    /// The slot's graph as committed in `read`, if it holds one.
    pub fn for_read(
        &self,
        read: &ReadTransaction,
        slot: &EmbedderSlot,
    ) -> ShardResult<Option<Arc<Graph>>> {
        if let Some(graph) = self.cached(slot.slot) {
            return Ok(Some(graph));
        }
        let options = self
            .options
            .lock()
            .map(|options| *options)
            .unwrap_or_default();
        match Graph::open(read, &self.directory, &slot.graph_name(), options) {
            Ok(graph) => Ok(Some(self.remember(slot.slot, graph))),
            Err(VectorError::UnknownGraph(_)) => Ok(None),
            Err(error) => Err(error.into()),
        }
    }

    /// Forgets the open graphs of `slots` (after an aborted batch, or a dropped slot).
    pub fn forget(&self, slots: impl IntoIterator<Item = u16>) {
        if let Ok(mut open) = self.open.lock() {
            for slot in slots {
                open.remove(&slot);
            }
        }
    }

    /// Drops a slot's graph trees in `transaction`; its files go with [`GraphSet::remove_files`]
    /// once the transaction committed.
    pub fn drop_trees(
        &self,
        transaction: &WriteTransaction,
        slot: &EmbedderSlot,
    ) -> ShardResult<()> {
        Graph::drop_trees(transaction, &slot.graph_name())?;
        self.forget([slot.slot]);
        Ok(())
    }

    /// Bytes of a slot's vector files (navigation and full vectors), as their lengths say;
    /// a file not written yet counts 0.
    pub fn file_bytes(&self, slot: &EmbedderSlot) -> u64 {
        let (navigation, full) = vector_file_paths(
            &self.directory,
            &slot.graph_name(),
            &slot.graph_parameters(),
        );
        std::iter::once(navigation)
            .chain(full)
            .filter_map(|path| std::fs::metadata(path).ok())
            .map(|metadata| metadata.len())
            .sum()
    }

    /// Deletes the vector files of a dropped slot (best effort: a leftover file is only
    /// unused space, never read again since slot numbers are not reused).
    pub fn remove_files(&self, slot: &EmbedderSlot) {
        let (navigation, full) = vector_file_paths(
            &self.directory,
            &slot.graph_name(),
            &slot.graph_parameters(),
        );
        for path in std::iter::once(navigation).chain(full) {
            if let Err(error) = std::fs::remove_file(&path)
                && error.kind() != std::io::ErrorKind::NotFound
            {
                report_unremoved_file(&path, &error);
            }
        }
    }
}

/// The shards crate has no logger: a file that could not be removed is reported on stderr.
fn report_unremoved_file(path: &Path, error: &std::io::Error) {
    eprintln!(
        "could not remove the vector file {}: {error}",
        path.display()
    );
}
