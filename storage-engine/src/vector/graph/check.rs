//! The graph's structural invariants, checked in full (tests and the integrity checker).
//!
//! Checked: every link joins two distinct live nodes that both live on the link's layer (the
//! layer symmetry of links: an upper-layer link never points to a node below that layer); no
//! duplicates; lists within their caps; the entry point is a live node of the highest level
//! (and exists iff the graph has nodes); every live node is reachable from the entry point on
//! each of its layers.

use super::Links;
use super::reachability::reachable_from;
use crate::vector::error::VectorError;
use crate::vector::parameters::GraphParameters;
use std::collections::HashMap;

/// Returns a description of the first broken invariant, if any.
pub fn check_graph<L: Links>(
    links: &L,
    parameters: &GraphParameters,
) -> Result<Option<String>, VectorError> {
    let nodes = links.nodes()?;
    let levels: HashMap<u32, u8> = nodes.iter().copied().collect();
    let Some(entry_point) = links.entry_point() else {
        return Ok((!nodes.is_empty()).then(|| "nodes exist but no entry point".to_owned()));
    };
    let highest = nodes.iter().map(|(_, level)| *level).max();
    if levels.get(&entry_point.record) != Some(&entry_point.level)
        || highest != Some(entry_point.level)
    {
        return Ok(Some(format!(
            "entry point {entry_point:?} is not a highest live node"
        )));
    }
    let mut list = Vec::new();
    for &(record, level) in &nodes {
        for layer in 0..=level {
            links.neighbours(record, layer, &mut list)?;
            if list.len() > parameters.links_cap(layer) {
                return Ok(Some(format!("node {record} layer {layer} exceeds its cap")));
            }
            let mut sorted = list.clone();
            sorted.sort_unstable();
            sorted.dedup();
            if sorted.len() != list.len() {
                return Ok(Some(format!("node {record} layer {layer} has duplicates")));
            }
            for neighbour in &list {
                if *neighbour == record {
                    return Ok(Some(format!("node {record} links to itself")));
                }
                match levels.get(neighbour) {
                    None => return Ok(Some(format!("{record} -> {neighbour}: dangling link"))),
                    Some(target_level) if *target_level < layer => {
                        return Ok(Some(format!(
                            "{record} -> {neighbour} crosses layer {layer}"
                        )));
                    }
                    Some(_) => {}
                }
            }
        }
    }
    for layer in 0..=entry_point.level {
        let record_bound = nodes.last().map_or(0, |(record, _)| record + 1);
        let reached = reachable_from(links, entry_point.record, layer, record_bound)?;
        if let Some((orphan, _)) = nodes
            .iter()
            .find(|(record, level)| *level >= layer && !reached.contains(*record))
        {
            return Ok(Some(format!("node {orphan} unreachable on layer {layer}")));
        }
    }
    Ok(None)
}
