//! The HNSW neighbour-selection heuristic (Malkov & Yashunin, algorithm 4, without filling
//! up with pruned candidates): walking candidates from the closest, keep one only if it is
//! closer to the base node than to every neighbour already kept. This spreads links over
//! directions instead of clustering them, which keeps the graph navigable.
//!
//! Invariant: the result is a subset of the candidates, in increasing distance, at most `cap`.

use super::Scored;
use crate::vector::records::RecordStore;
use crate::vector::space::Space;

/// Selects at most `cap` neighbours among `candidates` (sorted by increasing distance to the
/// base node, no duplicates).
pub fn select_neighbours<R: RecordStore>(
    space: &Space<'_, R>,
    candidates: &[Scored],
    cap: usize,
) -> Vec<Scored> {
    let mut selected: Vec<Scored> = Vec::with_capacity(cap);
    for candidate in candidates {
        if selected.len() >= cap {
            break;
        }
        let diverse = selected
            .iter()
            .all(|kept| space.between(candidate.record, kept.record) >= candidate.distance);
        if diverse {
            selected.push(*candidate);
        }
    }
    selected
}

/// Re-selects the list of `base` from `records` (any order, may contain duplicates or `base`)
/// by computing their distances to `base`.
pub fn reselect<R: RecordStore>(
    space: &Space<'_, R>,
    base: u32,
    records: &[u32],
    cap: usize,
) -> Vec<u32> {
    // The lists of other nodes are rarely in cache: start loading them all at once.
    records.iter().for_each(|&record| space.prefetch(record));
    let mut candidates: Vec<Scored> = records
        .iter()
        .filter(|record| **record != base)
        .map(|&record| Scored {
            distance: space.between(base, record),
            record,
        })
        .collect();
    candidates.sort_unstable();
    candidates.dedup_by_key(|scored| scored.record);
    select_neighbours(space, &candidates, cap)
        .iter()
        .map(|scored| scored.record)
        .collect()
}
