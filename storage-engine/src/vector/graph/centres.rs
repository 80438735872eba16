//! Centres through the graph: which centre a new vector is coded against, and the centre a
//! node of a high level makes when it joins (see `estimator` for what centres are for).
//!
//! `estimator` is arithmetic over the centres it is given; this file adds the two steps that
//! need the graph: the nearest centre found by a greedy descent from the entry point
//! (`nearest_centre`), and the local mean of a new node's nearest layer-0 candidates
//! (`local_centre`).
//!
//! Invariants: `nearest_centre` answers a centre of `centres` or `NO_CENTRE` (no centre exists,
//! or none is at a finite distance), never a number past the last centre; `local_centre`
//! answers a vector of the graph's dimensions, a mean of prepared (for cosine, normalised)
//! vectors like the vectors it is compared with.

use crate::vector::error::VectorError;
use crate::vector::estimator::{CENTRE_NEIGHBOURS, Centres, NO_CENTRE, mean};
use crate::vector::graph::search::greedy_descent;
use crate::vector::graph::visited::SearchScratch;
use crate::vector::graph::{Links, Scored};
use crate::vector::records::RecordStore;
use crate::vector::space::{Query, Space};

/// The centre to code the prepared `vector` against: through the graph `links` (whose nodes'
/// full vectors `space` holds), the nearest of the centres of the layer-1 node a greedy
/// descent reaches and of its layer-1 neighbours; by brute force when none of them has one.
pub fn nearest_centre<L: Links, R: RecordStore>(
    links: &L,
    space: &Space<'_, R>,
    centres: &Centres,
    vector: &[f32],
    scratch: &mut SearchScratch,
) -> Result<u32, VectorError> {
    let Some(entry_point) = links.entry_point() else {
        return Ok(centres.nearest(vector));
    };
    if centres.is_empty() {
        return Ok(NO_CENTRE);
    }
    let query = Query::Floats(vector.to_vec());
    let closest = greedy_descent(links, space, &query, entry_point, 0, scratch)?;
    let mut nodes = Vec::new();
    if entry_point.level >= 1 {
        links.neighbours(closest.record, 1, &mut nodes)?;
    }
    nodes.push(closest.record);
    let candidates: Vec<u32> = nodes
        .iter()
        .filter_map(|&record| centres.of_record(record))
        .collect();
    let centre = if candidates.is_empty() {
        centres.nearest(vector)
    } else {
        centres.nearest_of(vector, candidates)
    };
    debug_assert!(
        centre == NO_CENTRE || centre < centres.len(),
        "the nearest centre is one of the centres"
    );
    Ok(centre)
}

/// The centre made when `record` (a node of level `CENTRE_LEVEL_MIN` or more) joins the graph:
/// the mean of its prepared float vector and those of its `CENTRE_NEIGHBOURS` closest layer-0
/// candidates `found` (closest first), all read from the float records of `space`.
pub fn local_centre<R: RecordStore>(
    space: &Space<'_, R>,
    record: u32,
    found: &[Scored],
) -> Vec<f32> {
    let neighbours = found.iter().take(CENTRE_NEIGHBOURS);
    let dimensions = space.records.layout().dimensions;
    let vectors: Vec<Vec<f32>> = std::iter::once(record)
        .chain(neighbours.map(|scored| scored.record))
        .map(|member| space.prepared_floats(member))
        .collect();
    let centre = mean(dimensions, vectors.iter().map(Vec::as_slice));
    debug_assert_eq!(
        centre.len(),
        dimensions,
        "a centre has the graph's dimensions"
    );
    centre
}
