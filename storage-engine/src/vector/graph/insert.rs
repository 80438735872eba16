//! Inserting one node: sample its level, descend greedily to it, then on each of its layers
//! run a beam search of width `ef_construction`, link it to the heuristic's selection and link
//! those neighbours back (re-selecting a neighbour's list when it overflows its cap).
//!
//! Invariant: after `insert_node` returns, the graph invariants of `graph` hold again, except
//! reachability, which `reachability::ensure_reachable` restores at the end of a merge.

use super::search::{greedy_descent, search_layer};
use super::select::{reselect, select_neighbours};
use super::visited::SearchScratch;
use super::{EntryPoint, LinksMut, Scored};
use crate::vector::error::VectorError;
use crate::vector::parameters::GraphParameters;
use crate::vector::random::SplitMix64;
use crate::vector::records::{PayloadKind, RecordStore};
use crate::vector::space::{Query, Space};
use roaring::RoaringBitmap;

/// The highest level a node may get (the exponential distribution makes it unreachable in
/// practice: at m = 2 it needs about 2^15 nodes per extra level).
pub const LEVEL_MAX: u8 = 15;

/// Draws a level from the exponential distribution of factor `level_factor`.
pub fn random_level(random: &mut SplitMix64, level_factor: f64) -> u8 {
    let level = (-random.next_unit_f64().ln() * level_factor).floor();
    if level >= f64::from(LEVEL_MAX) {
        LEVEL_MAX
    } else {
        level as u8
    }
}

/// The query that finds the neighbours of record `record` (a float record's vector prepared
/// like any query: normalised for cosine).
pub fn record_query<R: RecordStore>(space: &Space<'_, R>, record: u32) -> Query {
    match space.records.layout().kind {
        PayloadKind::Floats => Query::Floats(space.prepared_floats(record)),
        PayloadKind::Codes => Query::Codes(space.records.codes(record).to_vec()),
        PayloadKind::CentredCodes => space.prepare_query(&space.reconstruct(record)),
    }
}

/// Inserts record `record` at `level`; records every pre-existing node whose links changed in
/// `relinked`. Returns the candidates the layer-0 beam search found, closest first (empty for
/// the first node), from which binary-quantized graphs make centres (`estimator`).
pub fn insert_node<L: LinksMut, R: RecordStore>(
    links: &mut L,
    space: &Space<'_, R>,
    parameters: &GraphParameters,
    record: u32,
    level: u8,
    scratch: &mut SearchScratch,
    relinked: &mut RoaringBitmap,
) -> Result<Vec<Scored>, VectorError> {
    let Some(entry_point) = links.entry_point() else {
        links.insert_node(record, level)?;
        links.set_entry_point(Some(EntryPoint { record, level }))?;
        return Ok(Vec::new());
    };
    let query = record_query(space, record);
    let closest = greedy_descent(links, space, &query, entry_point, level, scratch)?;
    links.insert_node(record, level)?;
    let mut seeds = vec![closest];
    for layer in (0..=level.min(entry_point.level)).rev() {
        let found = search_layer(
            links,
            space,
            &query,
            &seeds,
            parameters.ef_construction,
            layer,
            None,
            scratch,
        )?;
        let cap = parameters.links_cap(layer);
        let selected = select_neighbours(space, &found, cap);
        let selected_records: Vec<u32> = selected.iter().map(|scored| scored.record).collect();
        links.set_neighbours(record, layer, &selected_records)?;
        for neighbour in &selected {
            link_back(links, space, *neighbour, record, layer, cap, scratch)?;
            relinked.insert(neighbour.record);
        }
        seeds = found;
    }
    if level > entry_point.level {
        links.set_entry_point(Some(EntryPoint { record, level }))?;
    }
    Ok(seeds)
}

/// Adds `record` to the list of `neighbour` on `layer`, re-selecting when the list is full.
fn link_back<L: LinksMut, R: RecordStore>(
    links: &mut L,
    space: &Space<'_, R>,
    neighbour: Scored,
    record: u32,
    layer: u8,
    cap: usize,
    scratch: &mut SearchScratch,
) -> Result<(), VectorError> {
    let list = &mut scratch.neighbours;
    links.neighbours(neighbour.record, layer, list)?;
    if list.contains(&record) {
        return Ok(());
    }
    list.push(record);
    if list.len() <= cap {
        return links.set_neighbours(neighbour.record, layer, list);
    }
    let kept = reselect(space, neighbour.record, list, cap);
    links.set_neighbours(neighbour.record, layer, &kept)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vector::distance::Metric;
    use crate::vector::records::{MemoryRecords, RecordLayout};

    #[test]
    fn a_cosine_record_queries_with_its_normalised_vector() {
        let mut records = MemoryRecords::new(RecordLayout {
            kind: PayloadKind::Floats,
            dimensions: 2,
        });
        let vector = [30.0, -40.0];
        records.push(0, Metric::Cosine.stored_scale(&vector), &vector);
        for (metric, expected) in [
            (Metric::Cosine, [0.6, -0.8]),
            (Metric::Euclidean, vector),
            (Metric::DotProduct, vector),
        ] {
            let space = Space::new(&records, metric);
            let Query::Floats(query) = record_query(&space, 0) else {
                panic!("float records make float queries");
            };
            for (value, expected) in query.iter().zip(expected) {
                assert!((value - expected).abs() < 1e-6, "{metric:?}: {query:?}");
            }
        }
    }
}
