//! The HNSW algorithm, over any node storage that implements `Links` / `LinksMut`.
//!
//! Nodes are identified by their *record number* in the graph's vector file: a neighbour's
//! vector is found from its number alone, so following a link costs no lookup. Layers follow
//! the usual exponential level distribution (factor `1 / ln(m)`); search descends greedily from
//! the entry point (a node of the highest level) and runs a beam search of width `ef` on
//! layer 0, which holds every node, seeded with both the descent's end and the entry point
//! (links are directed: only reachability from the entry point is kept). Neighbours are
//! chosen with the HNSW heuristic.
//!
//! Storages: `memory::MemoryLinks` (the reference), `dense::DenseLinks` (the writer's and
//! readers' compact adjacency: lists borrowed in place, `Links::borrowed_neighbours`), and
//! the persisted node tree (`store::tree_links`).
//!
//! Invariants kept by every operation here (and checked by `check::check_graph`):
//! - a link `a -> b` on layer `l` joins two distinct live nodes whose levels are `>= l`;
//! - no list holds a duplicate, and the list of layer `l` holds at most `links_cap(l)` ids;
//! - the entry point is a live node of the highest level, present iff the graph is not empty;
//! - every live node is reachable from the entry point on every layer it lives on.

pub mod centres;
pub mod check;
pub mod delete;
pub mod dense;
pub mod insert;
pub mod memory;
pub mod reachability;
pub mod search;
pub mod select;
pub mod visited;

use super::error::VectorError;

/// A graph node reached from the top: its record number and level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryPoint {
    /// Record number of the node.
    pub record: u32,
    /// Its level (the graph's highest).
    pub level: u8,
}

/// A record paired with its distance to something; ordered by distance, then record.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scored {
    /// The ordering distance.
    pub distance: f32,
    /// The record number.
    pub record: u32,
}

impl Eq for Scored {}

impl PartialOrd for Scored {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Scored {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.distance
            .total_cmp(&other.distance)
            .then(self.record.cmp(&other.record))
    }
}

/// Read access to a graph's nodes.
pub trait Links {
    /// The entry point, `None` when the graph is empty.
    fn entry_point(&self) -> Option<EntryPoint>;
    /// The level of node `record`, `None` when it is not in the graph.
    fn level(&self, record: u32) -> Result<Option<u8>, VectorError>;
    /// Replaces `out` with the neighbours of `record` on `layer` (empty if absent).
    fn neighbours(&self, record: u32, layer: u8, out: &mut Vec<u32>) -> Result<(), VectorError>;
    /// Every node of the graph with its level, by increasing record number.
    fn nodes(&self) -> Result<Vec<(u32, u8)>, VectorError>;
    /// The neighbours of `record` on `layer` borrowed in place, when the storage holds them as
    /// a `u32` list (then a search reads them without copying); `None` otherwise.
    #[inline]
    fn borrowed_neighbours(&self, _record: u32, _layer: u8) -> Option<&[u32]> {
        None
    }
    /// Hints that the list of `record` on `layer` is about to be read (no effect by default).
    #[inline]
    fn prefetch_neighbours(&self, _record: u32, _layer: u8) {}
}

/// Write access to a graph's nodes.
pub trait LinksMut: Links {
    /// Adds node `record` at `level` with empty neighbour lists.
    fn insert_node(&mut self, record: u32, level: u8) -> Result<(), VectorError>;
    /// Replaces the neighbours of `record` on `layer`.
    fn set_neighbours(&mut self, record: u32, layer: u8, links: &[u32]) -> Result<(), VectorError>;
    /// Removes node `record` and its lists.
    fn remove_node(&mut self, record: u32) -> Result<(), VectorError>;
    /// Sets the entry point.
    fn set_entry_point(&mut self, entry_point: Option<EntryPoint>) -> Result<(), VectorError>;
}
