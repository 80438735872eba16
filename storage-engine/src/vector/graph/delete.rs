//! Deleting nodes without tombstones: every surviving node that links to a deleted node gets
//! the deleted node's own (surviving) neighbours as replacement candidates and is re-pruned
//! with the heuristic when that overflows its cap (FreshDiskANN's delete consolidation). The
//! deleted nodes are then removed, the entry point replaced if it was deleted, and
//! reachability restored.
//!
//! Invariant: afterwards no list names a deleted record, and the graph invariants hold.

use super::reachability::ensure_reachable;
use super::select::reselect;
use super::visited::SearchScratch;
use super::{EntryPoint, LinksMut};
use crate::vector::error::VectorError;
use crate::vector::parameters::GraphParameters;
use crate::vector::records::RecordStore;
use crate::vector::space::Space;
use roaring::RoaringBitmap;

/// Deletes the nodes whose record numbers are in `deleted` (absent ones are ignored);
/// records every surviving node whose links changed in `relinked`.
pub fn delete_nodes<L: LinksMut, R: RecordStore>(
    links: &mut L,
    space: &Space<'_, R>,
    parameters: &GraphParameters,
    deleted: &RoaringBitmap,
    scratch: &mut SearchScratch,
    relinked: &mut RoaringBitmap,
) -> Result<(), VectorError> {
    if deleted.is_empty() {
        return Ok(());
    }
    let nodes = links.nodes()?;
    let mut list = Vec::new();
    let mut replacement = Vec::new();
    for &(record, level) in &nodes {
        if deleted.contains(record) {
            continue;
        }
        for layer in 0..=level {
            links.neighbours(record, layer, &mut list)?;
            if !list.iter().any(|neighbour| deleted.contains(*neighbour)) {
                continue;
            }
            let mut candidates: Vec<u32> = list
                .iter()
                .copied()
                .filter(|n| !deleted.contains(*n))
                .collect();
            for removed in list.iter().filter(|n| deleted.contains(**n)) {
                links.neighbours(*removed, layer, &mut replacement)?;
                candidates.extend(
                    replacement
                        .iter()
                        .filter(|n| **n != record && !deleted.contains(**n)),
                );
            }
            candidates.sort_unstable();
            candidates.dedup();
            let cap = parameters.links_cap(layer);
            let kept = if candidates.len() <= cap {
                candidates
            } else {
                reselect(space, record, &candidates, cap)
            };
            links.set_neighbours(record, layer, &kept)?;
            relinked.insert(record);
        }
    }
    for &(record, _) in nodes.iter().filter(|(record, _)| deleted.contains(*record)) {
        links.remove_node(record)?;
    }
    replace_entry_point(links, &nodes, deleted)?;
    ensure_reachable(links, space, parameters, scratch, relinked)?;
    Ok(())
}

/// Chooses the surviving node of highest level as entry point if the old one was deleted.
fn replace_entry_point<L: LinksMut>(
    links: &mut L,
    nodes: &[(u32, u8)],
    deleted: &RoaringBitmap,
) -> Result<(), VectorError> {
    let Some(entry_point) = links.entry_point() else {
        return Ok(());
    };
    if !deleted.contains(entry_point.record) {
        return Ok(());
    }
    let survivor = nodes
        .iter()
        .filter(|(record, _)| !deleted.contains(*record))
        .max_by_key(|(record, level)| (*level, std::cmp::Reverse(*record)))
        .map(|&(record, level)| EntryPoint { record, level });
    links.set_entry_point(survivor)
}
