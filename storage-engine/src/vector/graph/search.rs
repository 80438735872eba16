//! Graph search: greedy descent through the upper layers and beam search on one layer,
//! optionally restricted to records accepted by a filter.
//!
//! Filtered beam search only *returns* accepted records and only *expands* accepted records
//! (plus the seeds it starts from). When a neighbour is rejected, its own neighbours are
//! examined instead (two hops, as in ACORN-1), so the search keeps moving toward matches
//! through rejected nodes without expanding them.
//!
//! Memory: a search is bound by loading vectors it has not seen. The unvisited neighbours of
//! an expanded node are marked first, then scored in list order while the whole records of
//! the neighbours `PREFETCH_AHEAD_RECORDS` places ahead are being loaded. The list of the node
//! expanded next is loaded a whole expansion ahead: the closest remaining candidate's as an
//! expansion starts, and a newly admitted neighbour's the moment it becomes the closest
//! candidate (hot searches at 1M x 128 ran 6-17 % faster than when the list was prefetched
//! only after the expansion). Lists are read in place when the storage allows it, and the
//! visited set is a bit set reused across searches (`visited`), so a warmed-up search
//! allocates only its result.
//!
//! Distances: every entry point here picks the query's scorer once (`scorer::dispatch`: the
//! metric, the kernel and the record addressing), and the loops below are compiled for that
//! scorer, so scoring a neighbour is one direct kernel call.
//!
//! Bounds: with a scorer that has lower bounds (a sketch, see `sketch`), an unfiltered
//! expansion that already holds `ef` results first drops the unvisited neighbours whose lower
//! bound is at or above the farthest result's distance (reading only their sketch rows, a few
//! ahead prefetched), then scores the rest; the greedy descent likewise drops neighbours whose
//! bound is at or above the current node's distance. A dropped neighbour could not have been
//! admitted or moved to (its distance is at least its bound, and admission needs a distance
//! below the farthest result, which only decreases), so the results are exactly those of the
//! search without bounds.
//!
//! Invariant: results are sorted by increasing distance, hold at most `ef` records, and with a
//! filter hold accepted records only.

use super::visited::SearchScratch;
use super::{EntryPoint, Links, Scored};
use crate::vector::error::VectorError;
use crate::vector::records::RecordStore;
use crate::vector::scorer::{Scorer, ScorerTask, dispatch};
use crate::vector::space::{Query, Space};
use std::cmp::Reverse;

/// A filtered expansion stops gathering accepted records at `list length / this`.
pub const FILTERED_GATHER_DIVISOR: usize = 2;
/// How many neighbours ahead of the one being scored their records are prefetched (enough
/// to keep several memory loads in flight, few enough that they are still cached when used).
pub const PREFETCH_AHEAD_RECORDS: usize = 3;
/// How many neighbours ahead of the one being bounded their sketch rows are prefetched.
pub const PREFETCH_AHEAD_BOUNDS: usize = 4;

/// A filter on record numbers: only accepted records are returned.
pub type RecordFilter<'a> = Option<&'a dyn Fn(u32) -> bool>;

/// Walks down from `start` (on layer `start_layer`) to layer `stop_layer`, greedily moving to
/// the closest neighbour on each layer above `stop_layer`; returns the closest node found.
pub fn greedy_descent<L: Links, R: RecordStore>(
    links: &L,
    space: &Space<'_, R>,
    query: &Query,
    start: EntryPoint,
    stop_layer: u8,
    scratch: &mut SearchScratch,
) -> Result<Scored, VectorError> {
    struct Descent<'a, L> {
        links: &'a L,
        start: EntryPoint,
        stop_layer: u8,
        scratch: &'a mut SearchScratch,
    }
    impl<L: Links> ScorerTask for Descent<'_, L> {
        type Output = Result<Scored, VectorError>;
        fn run<S: Scorer>(self, scorer: &S) -> Self::Output {
            descend(
                self.links,
                scorer,
                self.start,
                self.stop_layer,
                self.scratch,
            )
        }
    }
    dispatch(
        space,
        query,
        Descent {
            links,
            start,
            stop_layer,
            scratch,
        },
    )
}

/// `greedy_descent` with the query's scorer.
fn descend<L: Links, S: Scorer>(
    links: &L,
    scorer: &S,
    start: EntryPoint,
    stop_layer: u8,
    scratch: &mut SearchScratch,
) -> Result<Scored, VectorError> {
    let mut current = Scored {
        distance: scorer.score(start.record),
        record: start.record,
    };
    let mut copied = std::mem::take(&mut scratch.neighbours);
    let mut survivors = std::mem::take(&mut scratch.fresh);
    let mut layer = start.level;
    while layer > stop_layer {
        let mut moved = true;
        while moved {
            moved = false;
            let list: &[u32] = match links.borrowed_neighbours(current.record, layer) {
                Some(list) => list,
                None => {
                    if let Err(error) = links.neighbours(current.record, layer, &mut copied) {
                        scratch.neighbours = copied;
                        scratch.fresh = survivors;
                        return Err(error);
                    }
                    &copied
                }
            };
            // With bounds, only neighbours that might be closer than the current node are
            // loaded (a neighbour moved to is closer than every earlier one, so a bound at or
            // above the distance at the start of the list rules it out).
            let list: &[u32] = if S::BOUNDED {
                survivors.clear();
                survivors.extend_from_slice(list);
                retain_below(scorer, &mut survivors, current.distance);
                &survivors
            } else {
                list
            };
            for &neighbour in list.iter().take(PREFETCH_AHEAD_RECORDS) {
                scorer.prefetch(neighbour);
            }
            for (position, &neighbour) in list.iter().enumerate() {
                if let Some(&ahead) = list.get(position + PREFETCH_AHEAD_RECORDS) {
                    scorer.prefetch(ahead);
                }
                let distance = scorer.score(neighbour);
                if distance < current.distance {
                    current = Scored {
                        distance,
                        record: neighbour,
                    };
                    moved = true;
                }
            }
        }
        layer -= 1;
    }
    scratch.neighbours = copied;
    scratch.fresh = survivors;
    Ok(current)
}

/// Beam search of width `ef` on `layer` from `seeds`; see the module documentation.
#[allow(clippy::too_many_arguments)]
pub fn search_layer<L: Links, R: RecordStore>(
    links: &L,
    space: &Space<'_, R>,
    query: &Query,
    seeds: &[Scored],
    ef: usize,
    layer: u8,
    filter: RecordFilter<'_>,
    scratch: &mut SearchScratch,
) -> Result<Vec<Scored>, VectorError> {
    struct LayerSearch<'a, L> {
        links: &'a L,
        record_count: u32,
        seeds: &'a [Scored],
        ef: usize,
        layer: u8,
        filter: RecordFilter<'a>,
        scratch: &'a mut SearchScratch,
    }
    impl<L: Links> ScorerTask for LayerSearch<'_, L> {
        type Output = Result<Vec<Scored>, VectorError>;
        fn run<S: Scorer>(self, scorer: &S) -> Self::Output {
            beam_search(
                self.links,
                scorer,
                self.record_count,
                self.seeds,
                self.ef,
                self.layer,
                self.filter,
                self.scratch,
            )
        }
    }
    dispatch(
        space,
        query,
        LayerSearch {
            links,
            record_count: space.records.record_count(),
            seeds,
            ef,
            layer,
            filter,
            scratch,
        },
    )
}

/// `search_layer` with the query's scorer.
#[allow(clippy::too_many_arguments)]
fn beam_search<L: Links, S: Scorer>(
    links: &L,
    scorer: &S,
    record_count: u32,
    seeds: &[Scored],
    ef: usize,
    layer: u8,
    filter: RecordFilter<'_>,
    scratch: &mut SearchScratch,
) -> Result<Vec<Scored>, VectorError> {
    scratch.begin(record_count);
    for seed in seeds {
        if scratch.visit(seed.record) {
            scratch.candidates.push(Reverse(*seed));
            if filter.is_none_or(|accept| accept(seed.record)) {
                push_result(scratch, *seed, ef);
            }
        }
    }
    let mut neighbours = std::mem::take(&mut scratch.neighbours);
    let mut second_hop = std::mem::take(&mut scratch.second_hop);
    let outcome = expand_until_done(
        links,
        scorer,
        ef,
        layer,
        filter,
        scratch,
        &mut neighbours,
        &mut second_hop,
    );
    scratch.neighbours = neighbours;
    scratch.second_hop = second_hop;
    outcome?;
    let mut results: Vec<Scored> = scratch.results.drain().collect();
    results.sort_unstable();
    Ok(results)
}

#[allow(clippy::too_many_arguments)]
#[inline]
fn expand_until_done<L: Links, S: Scorer>(
    links: &L,
    scorer: &S,
    ef: usize,
    layer: u8,
    filter: RecordFilter<'_>,
    scratch: &mut SearchScratch,
    neighbours: &mut Vec<u32>,
    second_hop: &mut Vec<u32>,
) -> Result<(), VectorError> {
    while let Some(Reverse(closest)) = scratch.candidates.pop() {
        if scratch.results.len() >= ef
            && scratch
                .results
                .peek()
                .is_some_and(|farthest| closest.distance > farthest.distance)
        {
            break;
        }
        // The closest remaining candidate is expanded next unless this expansion admits a
        // closer one (whose list `consider` then prefetches): start loading its list now, a
        // whole expansion ahead.
        if let Some(Reverse(next)) = scratch.candidates.peek() {
            links.prefetch_neighbours(next.record, layer);
        }
        let list: &[u32] = match links.borrowed_neighbours(closest.record, layer) {
            Some(list) => list,
            None => {
                links.neighbours(closest.record, layer, neighbours)?;
                neighbours
            }
        };
        match filter {
            None => expand_unfiltered(links, layer, scorer, list, ef, scratch),
            Some(accept) => {
                expand_filtered(links, scorer, list, second_hop, ef, layer, accept, scratch)?;
            }
        }
    }
    Ok(())
}

/// Scores every unvisited neighbour: marks them visited first, then scores them in list
/// order while the records `PREFETCH_AHEAD_RECORDS` places ahead are being loaded.
#[inline]
fn expand_unfiltered<L: Links, S: Scorer>(
    links: &L,
    layer: u8,
    scorer: &S,
    neighbours: &[u32],
    ef: usize,
    scratch: &mut SearchScratch,
) {
    let mut fresh = std::mem::take(&mut scratch.fresh);
    fresh.clear();
    for &neighbour in neighbours {
        if scratch.visit(neighbour) {
            fresh.push(neighbour);
        }
    }
    drop_unadmittable(scorer, &mut fresh, ef, scratch);
    score_prefetching(links, layer, scorer, &fresh, ef, scratch);
    scratch.fresh = fresh;
}

/// With a bounded scorer and `ef` results held: drops the records whose lower bound is at or
/// above the farthest result's distance (they cannot be admitted; see the module doc).
#[inline]
fn drop_unadmittable<S: Scorer>(
    scorer: &S,
    records: &mut Vec<u32>,
    ef: usize,
    scratch: &SearchScratch,
) {
    if S::BOUNDED && scratch.results.len() >= ef {
        if let Some(farthest) = scratch.results.peek() {
            retain_below(scorer, records, farthest.distance);
        }
    }
}

/// Keeps, in order, the records whose lower bound is below `farthest`, with the sketch rows
/// `PREFETCH_AHEAD_BOUNDS` places ahead being loaded.
#[inline]
fn retain_below<S: Scorer>(scorer: &S, records: &mut Vec<u32>, farthest: f32) {
    for &record in records.iter().take(PREFETCH_AHEAD_BOUNDS) {
        scorer.prefetch_bound(record);
    }
    let mut kept = 0;
    for position in 0..records.len() {
        if let Some(&ahead) = records.get(position + PREFETCH_AHEAD_BOUNDS) {
            scorer.prefetch_bound(ahead);
        }
        let record = records[position];
        if scorer.lower_bound(record) < farthest {
            records[kept] = record;
            kept += 1;
        }
    }
    records.truncate(kept);
}

/// Considers `records` in order, prefetching ahead.
#[inline]
fn score_prefetching<L: Links, S: Scorer>(
    links: &L,
    layer: u8,
    scorer: &S,
    records: &[u32],
    ef: usize,
    scratch: &mut SearchScratch,
) {
    for &record in records.iter().take(PREFETCH_AHEAD_RECORDS) {
        scorer.prefetch(record);
    }
    for (position, &record) in records.iter().enumerate() {
        if let Some(&ahead) = records.get(position + PREFETCH_AHEAD_RECORDS) {
            scorer.prefetch(ahead);
        }
        consider(links, layer, scorer, record, ef, scratch);
    }
}

/// Scores the accepted unvisited neighbours, then looks through rejected neighbours' lists
/// (two hops) for accepted records, until half as many accepted records as the list is long
/// have been gathered (ACORN-1's truncation keeps the cost per expansion bounded).
#[allow(clippy::too_many_arguments)]
#[inline]
fn expand_filtered<L: Links, S: Scorer>(
    links: &L,
    scorer: &S,
    neighbours: &[u32],
    second_hop: &mut Vec<u32>,
    ef: usize,
    layer: u8,
    accept: &dyn Fn(u32) -> bool,
    scratch: &mut SearchScratch,
) -> Result<(), VectorError> {
    let budget = neighbours.len().div_ceil(FILTERED_GATHER_DIVISOR);
    let mut rejected = std::mem::take(&mut scratch.rejected);
    let mut fresh = std::mem::take(&mut scratch.fresh);
    rejected.clear();
    fresh.clear();
    for &neighbour in neighbours {
        if !scratch.visit(neighbour) {
            continue;
        }
        if accept(neighbour) {
            fresh.push(neighbour);
        } else {
            rejected.push(neighbour);
        }
    }
    let mut outcome = Ok(());
    for &through in &rejected {
        if fresh.len() >= budget {
            break;
        }
        if let Err(error) = links.neighbours(through, layer, second_hop) {
            outcome = Err(error);
            break;
        }
        for &hop in second_hop.iter() {
            // Accept first: a rejected record must stay unvisited, or its own list could
            // never be searched through when it later shows up as a direct neighbour.
            if fresh.len() < budget && accept(hop) && scratch.visit(hop) {
                fresh.push(hop);
            }
        }
    }
    // Scoring never changes what is visited or accepted, so scoring after gathering gives
    // the same results as scoring along the way, with the records prefetched. (Bounds are
    // not used here: measured no faster on filtered searches, 2026-11-22.)
    score_prefetching(links, layer, scorer, &fresh, ef, scratch);
    scratch.fresh = fresh;
    scratch.rejected = rejected;
    outcome
}

/// The distances from `query` to `records`, in order, with the records
/// `PREFETCH_AHEAD_RECORDS` places ahead being loaded (exact search over a candidate list).
pub fn score_records<R: RecordStore>(
    space: &Space<'_, R>,
    query: &Query,
    records: &[u32],
) -> Vec<Scored> {
    struct ScoreAll<'a> {
        records: &'a [u32],
    }
    impl ScorerTask for ScoreAll<'_> {
        type Output = Vec<Scored>;
        fn run<S: Scorer>(self, scorer: &S) -> Vec<Scored> {
            for &record in self.records.iter().take(PREFETCH_AHEAD_RECORDS) {
                scorer.prefetch(record);
            }
            self.records
                .iter()
                .enumerate()
                .map(|(position, &record)| {
                    if let Some(&ahead) = self.records.get(position + PREFETCH_AHEAD_RECORDS) {
                        scorer.prefetch(ahead);
                    }
                    Scored {
                        distance: scorer.score(record),
                        record,
                    }
                })
                .collect()
        }
    }
    dispatch(space, query, ScoreAll { records })
}

#[inline]
fn consider<L: Links, S: Scorer>(
    links: &L,
    layer: u8,
    scorer: &S,
    record: u32,
    ef: usize,
    scratch: &mut SearchScratch,
) {
    let distance = scorer.score(record);
    let admitted = scratch.results.len() < ef
        || scratch
            .results
            .peek()
            .is_some_and(|farthest| distance < farthest.distance);
    if admitted {
        let scored = Scored { distance, record };
        scratch.candidates.push(Reverse(scored));
        // Now the closest candidate, so expanded next: start loading its list.
        if scratch
            .candidates
            .peek()
            .is_some_and(|Reverse(closest)| closest.record == record)
        {
            links.prefetch_neighbours(record, layer);
        }
        if scratch.results.len() < ef {
            scratch.results.push(scored);
        } else if let Some(mut farthest) = scratch.results.peek_mut() {
            // Full, and `scored` is closer than the farthest result (it was admitted): it
            // replaces that result with one sift instead of a push and a pop.
            *farthest = scored;
        }
    }
}

#[inline]
fn push_result(scratch: &mut SearchScratch, scored: Scored, ef: usize) {
    scratch.results.push(scored);
    if scratch.results.len() > ef {
        scratch.results.pop();
    }
}

/// The `ef` closest nodes to `query` on layer 0: greedy descent, then beam search seeded with
/// both the node the descent reached and the entry point.
///
/// Links are directed, so a node reachable from the entry point (the invariant the graph
/// keeps and `check::check_graph` verifies) need not be reachable from the descent's end:
/// pruning can leave a cluster whose layer-0 lists all point inside it, and a descent that
/// lands there could never leave. Seeding the entry point too makes the checked invariant
/// sufficient: without a filter and with `ef` at least the number of nodes, the beam search
/// visits every node.
/// Far from the query, the extra seed costs one distance and leaves the results unchanged.
pub fn search<L: Links, R: RecordStore>(
    links: &L,
    space: &Space<'_, R>,
    query: &Query,
    ef: usize,
    filter: RecordFilter<'_>,
    scratch: &mut SearchScratch,
) -> Result<Vec<Scored>, VectorError> {
    struct FullSearch<'a, L> {
        links: &'a L,
        record_count: u32,
        ef: usize,
        filter: RecordFilter<'a>,
        scratch: &'a mut SearchScratch,
    }
    impl<L: Links> ScorerTask for FullSearch<'_, L> {
        type Output = Result<Vec<Scored>, VectorError>;
        fn run<S: Scorer>(self, scorer: &S) -> Self::Output {
            let Some(entry_point) = self.links.entry_point() else {
                return Ok(Vec::new());
            };
            let closest = descend(self.links, scorer, entry_point, 0, self.scratch)?;
            let entry = Scored {
                distance: scorer.score(entry_point.record),
                record: entry_point.record,
            };
            beam_search(
                self.links,
                scorer,
                self.record_count,
                &[closest, entry],
                self.ef,
                0,
                self.filter,
                self.scratch,
            )
        }
    }
    dispatch(
        space,
        query,
        FullSearch {
            links,
            record_count: space.records.record_count(),
            ef,
            filter,
            scratch,
        },
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::vector::distance::Metric;
    use crate::vector::graph::LinksMut;
    use crate::vector::graph::check::check_graph;
    use crate::vector::graph::memory::MemoryLinks;
    use crate::vector::parameters::GraphParameters;
    use crate::vector::records::{MemoryRecords, PayloadKind, RecordLayout};

    /// Entry point 0 reaches every node, but the trap {1, 2} has no link out on layer 0, and
    /// the upper layer leads a query for record 3 into it.
    fn graph_with_a_trap() -> (MemoryLinks, MemoryRecords) {
        let mut records = MemoryRecords::new(RecordLayout {
            kind: PayloadKind::Floats,
            dimensions: 2,
        });
        for point in [[0.0, 0.0], [6.0, 0.0], [7.0, 0.0], [4.0, 3.0]] {
            records.push(0, 0, &point);
        }
        let mut links = MemoryLinks::new();
        for (record, level) in [(0, 1), (1, 1), (2, 0), (3, 0)] {
            links
                .insert_node(record, level)
                .expect("insert_node succeeds");
        }
        links
            .set_neighbours(0, 1, &[1])
            .expect("set_neighbours succeeds");
        links
            .set_neighbours(1, 1, &[0])
            .expect("set_neighbours succeeds");
        links
            .set_neighbours(0, 0, &[1, 3])
            .expect("set_neighbours succeeds");
        links
            .set_neighbours(1, 0, &[2])
            .expect("set_neighbours succeeds");
        links
            .set_neighbours(2, 0, &[1])
            .expect("set_neighbours succeeds");
        links
            .set_neighbours(3, 0, &[0])
            .expect("set_neighbours succeeds");
        links
            .set_entry_point(Some(EntryPoint {
                record: 0,
                level: 1,
            }))
            .expect("the call succeeds");
        (links, records)
    }

    #[test]
    fn a_node_reachable_from_the_entry_point_is_found_even_when_the_descent_ends_in_a_trap() {
        let (links, records) = graph_with_a_trap();
        let parameters = GraphParameters::new(Metric::Euclidean, 2);
        assert_eq!(
            check_graph(&links, &parameters).expect("check_graph succeeds"),
            None
        );
        let space = Space::new(&records, Metric::Euclidean);
        let query = space.prepare_query(&[4.0, 3.0]);
        let mut scratch = SearchScratch::new();
        let entry_point = links.entry_point().expect("entry_point succeeds");
        let descended = greedy_descent(&links, &space, &query, entry_point, 0, &mut scratch)
            .expect("greedy_descent succeeds");
        assert_eq!(descended.record, 1, "the descent lands in the trap");
        let found = search(&links, &space, &query, 4, None, &mut scratch).expect("search succeeds");
        let records_found: Vec<u32> = found.iter().map(|scored| scored.record).collect();
        assert_eq!(records_found, [3, 1, 2, 0]);
        assert!(found[0].distance < 1e-6);
    }
}
