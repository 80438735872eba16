//! Restoring reachability: every live node must be reachable from the entry point on every
//! layer it lives on, or searches can never return it.
//!
//! Pruning (on insert and on delete) can cut the last link into a node. For each layer, a
//! breadth-first walk from the entry point finds the unreachable nodes; each is attached to
//! the closest reachable nodes found by a beam search:
//! 1. into a reachable node's list that still has room; else
//! 2. in place of a link `c -> w` where the orphan already links to `w` (`c -> u -> w` keeps
//!    `w` reachable); else
//! 3. in place of the closest node's farthest link `c -> w`, adding `u -> w` (possibly
//!    dropping `u`'s farthest link, which the next round repairs).
//!
//! Why a whole walk after every merge and not an incremental check: every node that becomes
//! unreachable lies in a part of the graph that contains a node which lost an in-link (a list
//! pruned by the heuristic) or is new — the path it used to be reached by lost an edge, and the
//! first such edge leads to such a node. So only those nodes need checking, but whether one of
//! them is still reachable is a question about the whole graph: answering it locally needs
//! the reverse links, which the graph does not store (links are directed, one list a node).
//! Instead the walk is made cheap: it runs over the writer's dense adjacency (`dense`: a list
//! is an index computation) and marks nodes in a bitset (`ReachedSet`), so it costs one
//! sequential pass over the links — milliseconds per 100k nodes, a small share of a merge
//! that inserts thousands of vectors with a beam search each. It stays on in release builds:
//! the invariant is what makes every live node findable, and no proof covers the pruning.
//!
//! Invariant: on success every live node is reachable on each of its layers.

use super::search::search_layer;
use super::visited::SearchScratch;
use super::{EntryPoint, Links, LinksMut, Scored};
use crate::vector::error::VectorError;
use crate::vector::graph::insert::record_query;
use crate::vector::parameters::GraphParameters;
use crate::vector::records::RecordStore;
use crate::vector::space::Space;
use roaring::RoaringBitmap;

/// Repair rounds per layer before giving up (each round reattaches every orphan found).
pub const REACHABILITY_REPAIR_ROUNDS_MAX: usize = 64;

/// Reattaches every unreachable node; returns how many attachments were made.
pub fn ensure_reachable<L: LinksMut, R: RecordStore>(
    links: &mut L,
    space: &Space<'_, R>,
    parameters: &GraphParameters,
    scratch: &mut SearchScratch,
    relinked: &mut RoaringBitmap,
) -> Result<usize, VectorError> {
    let Some(entry_point) = links.entry_point() else {
        return Ok(0);
    };
    let nodes = links.nodes()?;
    let record_bound = nodes.last().map_or(0, |(record, _)| record + 1);
    let mut attachments = 0;
    for layer in (0..=entry_point.level).rev() {
        let layer_nodes: Vec<u32> = nodes
            .iter()
            .filter(|(_, level)| *level >= layer)
            .map(|(record, _)| *record)
            .collect();
        let mut rounds = 0;
        loop {
            let reached = reachable_from(links, entry_point.record, layer, record_bound)?;
            let orphans: Vec<u32> = layer_nodes
                .iter()
                .copied()
                .filter(|record| !reached.contains(*record))
                .collect();
            if orphans.is_empty() {
                break;
            }
            rounds += 1;
            if rounds > REACHABILITY_REPAIR_ROUNDS_MAX {
                return Err(VectorError::Corrupted(format!(
                    "{} nodes stay unreachable on layer {layer}",
                    orphans.len()
                )));
            }
            for orphan in orphans {
                attach(
                    links,
                    space,
                    parameters,
                    entry_point,
                    orphan,
                    layer,
                    scratch,
                )?;
                relinked.insert(orphan);
                attachments += 1;
            }
        }
    }
    Ok(attachments)
}

/// A set of record numbers as a growable bitset: one bit per record, O(1) insert and test
/// without hashing (a breadth-first walk marks every node of a layer).
#[derive(Debug, Clone, Default)]
pub struct ReachedSet {
    words: Vec<u64>,
    count: usize,
}

impl ReachedSet {
    /// An empty set with room for records `0..record_bound`.
    pub fn with_bound(record_bound: u32) -> Self {
        Self {
            words: vec![0; (record_bound as usize).div_ceil(64)],
            count: 0,
        }
    }

    /// Adds `record`; whether it was new.
    #[inline]
    pub fn insert(&mut self, record: u32) -> bool {
        let word = record as usize / 64;
        if word >= self.words.len() {
            self.words.resize(word + 1, 0);
        }
        let bit = 1_u64 << (record % 64);
        let new = self.words[word] & bit == 0;
        self.words[word] |= bit;
        self.count += usize::from(new);
        new
    }

    /// Whether `record` is in the set.
    #[inline]
    pub fn contains(&self, record: u32) -> bool {
        self.words
            .get(record as usize / 64)
            .is_some_and(|word| word & (1_u64 << (record % 64)) != 0)
    }

    /// Records in the set.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

/// Records reachable from `start` on `layer` (breadth first, one list read per node reached).
pub fn reachable_from<L: Links>(
    links: &L,
    start: u32,
    layer: u8,
    record_bound: u32,
) -> Result<ReachedSet, VectorError> {
    let mut reached = ReachedSet::with_bound(record_bound);
    let mut queue = vec![start];
    reached.insert(start);
    let mut list = Vec::new();
    let mut next = 0;
    while let Some(&record) = queue.get(next) {
        next += 1;
        links.neighbours(record, layer, &mut list)?;
        for &neighbour in &list {
            if reached.insert(neighbour) {
                queue.push(neighbour);
            }
        }
    }
    Ok(reached)
}

/// Links one orphan from the reachable part of `layer` (see the module documentation).
fn attach<L: LinksMut, R: RecordStore>(
    links: &mut L,
    space: &Space<'_, R>,
    parameters: &GraphParameters,
    entry_point: EntryPoint,
    orphan: u32,
    layer: u8,
    scratch: &mut SearchScratch,
) -> Result<(), VectorError> {
    let query = record_query(space, orphan);
    // Start on this layer from the entry point itself: a greedy descent through the upper
    // layers could land in the very component that is unreachable on this layer.
    let start = Scored {
        distance: space.to_query(&query, entry_point.record),
        record: entry_point.record,
    };
    let found = search_layer(
        links,
        space,
        &query,
        &[start],
        parameters.ef_construction,
        layer,
        None,
        scratch,
    )?;
    let cap = parameters.links_cap(layer);
    let mut orphan_links = Vec::new();
    links.neighbours(orphan, layer, &mut orphan_links)?;
    let mut list = Vec::new();
    for candidate in found.iter().filter(|scored| scored.record != orphan) {
        links.neighbours(candidate.record, layer, &mut list)?;
        if list.contains(&orphan) {
            return Ok(());
        }
        if list.len() < cap {
            list.push(orphan);
            return links.set_neighbours(candidate.record, layer, &list);
        }
    }
    for candidate in found.iter().filter(|scored| scored.record != orphan) {
        links.neighbours(candidate.record, layer, &mut list)?;
        if let Some(position) = list.iter().position(|w| orphan_links.contains(w)) {
            list[position] = orphan;
            return links.set_neighbours(candidate.record, layer, &list);
        }
    }
    let host = found
        .iter()
        .find(|scored| scored.record != orphan)
        .map_or(entry_point.record, |scored| scored.record);
    links.neighbours(host, layer, &mut list)?;
    let farthest = farthest_of(space, host, &list)
        .ok_or_else(|| VectorError::Corrupted(format!("full list of {host} is empty")))?;
    let displaced = list[farthest];
    list[farthest] = orphan;
    links.set_neighbours(host, layer, &list)?;
    if orphan_links.len() < cap {
        orphan_links.push(displaced);
    } else if let Some(position) = farthest_of(space, orphan, &orphan_links) {
        orphan_links[position] = displaced;
    }
    links.set_neighbours(orphan, layer, &orphan_links)
}

/// Position of the record of `list` farthest from `base`.
fn farthest_of<R: RecordStore>(space: &Space<'_, R>, base: u32, list: &[u32]) -> Option<usize> {
    list.iter()
        .enumerate()
        .map(|(position, record)| (space.between(base, *record), position))
        .max_by(|left, right| left.0.total_cmp(&right.0))
        .map(|(_, position)| position)
}
