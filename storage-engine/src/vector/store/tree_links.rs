//! `Links` over a graph's node tree: zero-copy decoding for readers, and for the writer an
//! overlay of changed nodes that is written back once at the end of an operation (a node
//! relinked many times during a merge is encoded and stored once).
//!
//! Invariant: a `WriteLinks` reads its own changes (overlay first, then the tree), and after
//! `flush` the tree holds exactly the overlay's state.

use super::node_codec::{decode_layer, decode_level, decode_node, encode_node};
use super::trees::{TreeRead, TreeWrite};
use crate::vector::error::VectorError;
use crate::vector::graph::{EntryPoint, Links, LinksMut};
use std::collections::HashMap;

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

/// The writer's view of the nodes: the tree plus unflushed changes.
pub struct WriteLinks<'a> {
    tree: &'a dyn TreeWrite,
    overlay: HashMap<u32, Option<Vec<Vec<u32>>>>,
    entry_point: Option<EntryPoint>,
    record_count: u32,
}

impl<'a> WriteLinks<'a> {
    /// A view of `tree` whose entry point is `entry_point`, over records `0..record_count`.
    pub fn new(
        tree: &'a dyn TreeWrite,
        entry_point: Option<EntryPoint>,
        record_count: u32,
    ) -> Self {
        Self {
            tree,
            overlay: HashMap::new(),
            entry_point,
            record_count,
        }
    }

    fn read_view(&self) -> ReadLinks<'_> {
        ReadLinks {
            tree: self.tree,
            entry_point: None,
            record_count: self.record_count,
        }
    }

    /// Writes every changed node to the tree; returns how many were written or removed.
    pub fn flush(&mut self) -> Result<usize, VectorError> {
        let changed = self.overlay.len();
        let mut records: Vec<u32> = self.overlay.keys().copied().collect();
        records.sort_unstable();
        for record in records {
            match self.overlay.remove(&record).flatten() {
                Some(layers) => self.tree.put(&node_key(record), &encode_node(&layers))?,
                None => {
                    self.tree.delete(&node_key(record))?;
                }
            }
        }
        Ok(changed)
    }

    fn load(&mut self, record: u32) -> Result<&mut Vec<Vec<u32>>, VectorError> {
        if !self.overlay.contains_key(&record) {
            let value = self
                .tree
                .get(&node_key(record))?
                .ok_or_else(|| VectorError::Corrupted(format!("no node {record}")))?;
            let layers = decode_node(record, &value, self.record_count)?;
            self.overlay.insert(record, Some(layers));
        }
        self.overlay
            .get_mut(&record)
            .and_then(Option::as_mut)
            .ok_or_else(|| VectorError::Corrupted(format!("node {record} was removed")))
    }
}

impl Links for WriteLinks<'_> {
    fn entry_point(&self) -> Option<EntryPoint> {
        self.entry_point
    }

    fn level(&self, record: u32) -> Result<Option<u8>, VectorError> {
        match self.overlay.get(&record) {
            Some(Some(layers)) => Ok(Some((layers.len() - 1) as u8)),
            Some(None) => Ok(None),
            None => self.read_view().level(record),
        }
    }

    #[inline]
    fn neighbours(&self, record: u32, layer: u8, out: &mut Vec<u32>) -> Result<(), VectorError> {
        match self.overlay.get(&record) {
            Some(Some(layers)) => {
                out.clear();
                if let Some(list) = layers.get(usize::from(layer)) {
                    out.extend_from_slice(list);
                }
                Ok(())
            }
            Some(None) => {
                out.clear();
                Ok(())
            }
            None => self.read_view().neighbours(record, layer, out),
        }
    }

    fn nodes(&self) -> Result<Vec<(u32, u8)>, VectorError> {
        let mut nodes: HashMap<u32, u8> = scan_nodes(self.tree)?.into_iter().collect();
        for (record, layers) in &self.overlay {
            match layers {
                Some(layers) => nodes.insert(*record, (layers.len() - 1) as u8),
                None => nodes.remove(record),
            };
        }
        let mut nodes: Vec<(u32, u8)> = nodes.into_iter().collect();
        nodes.sort_unstable();
        Ok(nodes)
    }
}

impl LinksMut for WriteLinks<'_> {
    fn insert_node(&mut self, record: u32, level: u8) -> Result<(), VectorError> {
        self.overlay
            .insert(record, Some(vec![Vec::new(); usize::from(level) + 1]));
        Ok(())
    }

    fn set_neighbours(&mut self, record: u32, layer: u8, links: &[u32]) -> Result<(), VectorError> {
        let layers = self.load(record)?;
        let list = layers
            .get_mut(usize::from(layer))
            .ok_or_else(|| VectorError::Corrupted(format!("node {record} has no layer {layer}")))?;
        list.clear();
        list.extend_from_slice(links);
        Ok(())
    }

    fn remove_node(&mut self, record: u32) -> Result<(), VectorError> {
        self.overlay.insert(record, None);
        Ok(())
    }

    fn set_entry_point(&mut self, entry_point: Option<EntryPoint>) -> Result<(), VectorError> {
        self.entry_point = entry_point;
        Ok(())
    }
}
