//! `Links` over a graph's node tree: zero-copy decoding for readers; for the writer, loading
//! the tree into a dense in-memory adjacency (`graph::dense`) and writing back only the nodes
//! an operation changed (a node relinked many times during a merge is encoded and stored once).
//!
//! Invariant: after `flush_dense` the tree holds exactly the dense adjacency's nodes.

use super::node_codec::{decode_layer, decode_level, decode_node, encode_node_into};
use super::trees::{TreeRead, TreeWrite};
use crate::vector::error::VectorError;
use crate::vector::graph::dense::DenseLinks;
use crate::vector::graph::{EntryPoint, Links, LinksMut};
use crate::vector::parameters::GraphParameters;

/// Key of node `record` in the node tree (big-endian, so scans go by record number).
pub fn node_key(record: u32) -> [u8; 4] {
    record.to_be_bytes()
}

fn key_record(key: &[u8]) -> Result<u32, VectorError> {
    let bytes: [u8; 4] = key
        .try_into()
        .map_err(|_| VectorError::Corrupted("node key is not four bytes".into()))?;
    Ok(u32::from_be_bytes(bytes))
}

fn scan_nodes(tree: &dyn TreeRead) -> Result<Vec<(u32, u8)>, VectorError> {
    let mut nodes = Vec::new();
    tree.for_each(&mut |key, value| {
        let record = key_record(key)?;
        nodes.push((record, decode_level(record, value)?));
        Ok(())
    })?;
    Ok(nodes)
}

/// A reader's view of the nodes.
pub struct ReadLinks<'a> {
    /// The node tree.
    pub tree: &'a dyn TreeRead,
    /// The entry point of the snapshot.
    pub entry_point: Option<EntryPoint>,
    /// Records `0..record_count` exist; a link past them is `Corrupted`.
    pub record_count: u32,
}

impl Links for ReadLinks<'_> {
    fn entry_point(&self) -> Option<EntryPoint> {
        self.entry_point
    }

    fn level(&self, record: u32) -> Result<Option<u8>, VectorError> {
        match self.tree.get(&node_key(record))? {
            Some(value) => Ok(Some(decode_level(record, &value)?)),
            None => Ok(None),
        }
    }

    #[inline]
    fn neighbours(&self, record: u32, layer: u8, out: &mut Vec<u32>) -> Result<(), VectorError> {
        match self.tree.get(&node_key(record))? {
            Some(value) => decode_layer(record, &value, layer, self.record_count, out),
            None => {
                out.clear();
                Ok(())
            }
        }
    }

    fn nodes(&self) -> Result<Vec<(u32, u8)>, VectorError> {
        scan_nodes(self.tree)
    }
}

/// Reads every node of `tree` into a dense adjacency (the writer's working copy of the graph,
/// see `graph::dense`); a link past `record_count` or a list over its cap is `Corrupted`.
pub fn load_dense(
    tree: &dyn TreeRead,
    entry_point: Option<EntryPoint>,
    record_count: u32,
    parameters: &GraphParameters,
) -> Result<DenseLinks, VectorError> {
    let mut dense = DenseLinks::new(parameters.links_cap(0), parameters.links_cap(1));
    tree.for_each(&mut |key, value| {
        let record = key_record(key)?;
        if record >= record_count {
            return Err(VectorError::Corrupted(format!(
                "node {record} past the records"
            )));
        }
        dense.load_node(record, decode_node(record, value, record_count)?)
    })?;
    dense.set_entry_point(entry_point)?;
    Ok(dense)
}

/// Writes every node `dense` changed since the last flush to `tree` (removed nodes are
/// deleted), in record order; returns how many entries were written or deleted.
pub fn flush_dense(dense: &mut DenseLinks, tree: &dyn TreeWrite) -> Result<u64, VectorError> {
    let changed = dense.take_changed();
    let mut bytes = Vec::new();
    let mut layers: Vec<Vec<u32>> = Vec::new();
    for record in &changed {
        match dense.node_level(record) {
            Some(level) => {
                layers.resize_with(usize::from(level) + 1, Vec::new);
                layers.truncate(usize::from(level) + 1);
                for (layer, list) in layers.iter_mut().enumerate() {
                    list.clear();
                    list.extend_from_slice(dense.list(record, layer as u8));
                }
                bytes.clear();
                encode_node_into(&layers, &mut bytes);
                tree.put(&node_key(record), &bytes)?;
            }
            None => {
                tree.delete(&node_key(record))?;
            }
        }
    }
    Ok(changed.len())
}
