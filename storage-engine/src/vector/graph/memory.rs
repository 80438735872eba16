//! Node storage in memory: the reference implementation of `Links` used by the algorithm's
//! tests and by the in-memory insert buffer.
//!
//! Invariant: `nodes[record]` is `Some` exactly for live nodes, with `level + 1` lists.

use super::{EntryPoint, Links, LinksMut};
use crate::vector::error::VectorError;

#[derive(Debug, Clone)]
struct Node {
    layers: Vec<Vec<u32>>,
}

/// Nodes and links held in memory.
#[derive(Debug, Clone, Default)]
pub struct MemoryLinks {
    nodes: Vec<Option<Node>>,
    entry_point: Option<EntryPoint>,
    live: usize,
}

impl MemoryLinks {
    /// An empty graph.
    pub fn new() -> Self {
        Self::default()
    }

    /// Live nodes.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether no node is live.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Bytes the link lists would take stored as `u32`s with a count byte per layer.
    pub fn link_bytes(&self) -> usize {
        self.nodes
            .iter()
            .flatten()
            .map(|node| {
                node.layers
                    .iter()
                    .map(|layer| 1 + 4 * layer.len())
                    .sum::<usize>()
            })
            .sum()
    }
}

impl Links for MemoryLinks {
    fn entry_point(&self) -> Option<EntryPoint> {
        self.entry_point
    }

    fn level(&self, record: u32) -> Result<Option<u8>, VectorError> {
        Ok(self
            .nodes
            .get(record as usize)
            .and_then(Option::as_ref)
            .map(|node| (node.layers.len() - 1) as u8))
    }

    #[inline]
    fn neighbours(&self, record: u32, layer: u8, out: &mut Vec<u32>) -> Result<(), VectorError> {
        out.clear();
        let links = self
            .nodes
            .get(record as usize)
            .and_then(Option::as_ref)
            .and_then(|node| node.layers.get(usize::from(layer)));
        if let Some(links) = links {
            out.extend_from_slice(links);
        }
        Ok(())
    }

    fn nodes(&self) -> Result<Vec<(u32, u8)>, VectorError> {
        Ok(self
            .nodes
            .iter()
            .enumerate()
            .filter_map(|(record, node)| {
                node.as_ref()
                    .map(|node| (record as u32, (node.layers.len() - 1) as u8))
            })
            .collect())
    }
}

impl LinksMut for MemoryLinks {
    fn insert_node(&mut self, record: u32, level: u8) -> Result<(), VectorError> {
        let index = record as usize;
        if self.nodes.len() <= index {
            self.nodes.resize(index + 1, None);
        }
        if self.nodes[index].is_none() {
            self.live += 1;
        }
        self.nodes[index] = Some(Node {
            layers: vec![Vec::new(); usize::from(level) + 1],
        });
        Ok(())
    }

    fn set_neighbours(&mut self, record: u32, layer: u8, links: &[u32]) -> Result<(), VectorError> {
        let node = self
            .nodes
            .get_mut(record as usize)
            .and_then(Option::as_mut)
            .ok_or_else(|| VectorError::Corrupted(format!("no node {record}")))?;
        let list = node
            .layers
            .get_mut(usize::from(layer))
            .ok_or_else(|| VectorError::Corrupted(format!("node {record} has no layer {layer}")))?;
        list.clear();
        list.extend_from_slice(links);
        Ok(())
    }

    fn remove_node(&mut self, record: u32) -> Result<(), VectorError> {
        let removed = self.nodes.get_mut(record as usize).and_then(Option::take);
        if removed.is_some() {
            self.live -= 1;
        }
        Ok(())
    }

    fn set_entry_point(&mut self, entry_point: Option<EntryPoint>) -> Result<(), VectorError> {
        self.entry_point = entry_point;
        Ok(())
    }
}
