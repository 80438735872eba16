//! Readers' in-memory maps on the real page store: the id -> record array used by exact
//! filtered search (it must agree with the ids tree after random inserts, replacements and
//! deletes, for the newest and for older snapshots), and the distance sketch (a search with it
//! must return exactly what the search without it returns).
//! Knob: `VECTOR_MAPS_ROUNDS` (default 6) write transactions.

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]
#![allow(clippy::unwrap_used)]

use roaring::RoaringBitmap;
use std::collections::HashMap;
use storage_engine::vector::random::SplitMix64;
use storage_engine::vector::sketch::SKETCH_DIMENSIONS_MIN;
use storage_engine::vector::store::{Graph, GraphOptions, GraphReader};
use storage_engine::vector::synthetic::clustered_vectors;
use storage_engine::vector::{GraphParameters, Metric, SearchRequest, SearchScratch};
use storage_engine::{Database, Options};

const DIMENSIONS: usize = 24;
/// Internal ids are drawn from `0..ID_RANGE` (so inserts often replace a live id).
const ID_RANGE: u32 = 700;
const LIMIT: usize = 10;

fn environment_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

/// The live vectors of one committed snapshot, by internal id.
type Model = HashMap<u32, Vec<f32>>;

/// The `LIMIT` nearest live candidates by the scalar reference distance: (distance, id).
fn brute_force(model: &Model, query: &[f32], candidates: &RoaringBitmap) -> Vec<(f32, u32)> {
    let metric = Metric::Cosine;
    let mut prepared_query = query.to_vec();
    metric.prepare(&mut prepared_query);
    let mut scored: Vec<(f32, u32)> = model
        .iter()
        .filter(|(id, _)| candidates.contains(**id))
        .map(|(&id, vector)| {
            let mut prepared = vector.clone();
            metric.prepare(&mut prepared);
            (metric.reference_distance(&prepared_query, &prepared), id)
        })
        .collect();
    scored.sort_unstable_by(|left, right| left.0.total_cmp(&right.0).then(left.1.cmp(&right.1)));
    scored.truncate(LIMIT);
    scored
}

/// Exact filtered searches of `reader` equal brute force over `model`: same count, only live
/// candidates, and every hit within rounding of the brute-force `LIMIT`-th distance.
fn assert_exact_filtered_search(
    reader: &GraphReader<'_>,
    model: &Model,
    random: &mut SplitMix64,
    label: &str,
) {
    let mut scratch = SearchScratch::new();
    for round in 0..12 {
        // From a handful to most ids: every set is below the exact-search threshold.
        let keep = [0.02, 0.1, 0.5, 0.9][round % 4];
        let candidates: RoaringBitmap = (0..ID_RANGE + 50)
            .filter(|_| random.next_unit_f64() < keep)
            .collect();
        let query = clustered_vectors(1, DIMENSIONS, 6, 0.3, 3, random.next_u64());
        let request = SearchRequest {
            candidates: Some(&candidates),
            ..SearchRequest::new(&query, LIMIT)
        };
        let hits = reader
            .search(&request, &mut scratch)
            .expect("search succeeds");
        let truth = brute_force(model, &query, &candidates);
        assert_eq!(hits.len(), truth.len(), "{label} round {round}: hit count");
        let Some(&(last, _)) = truth.last() else {
            continue;
        };
        let mut prepared_query = query.clone();
        Metric::Cosine.prepare(&mut prepared_query);
        let mut seen = std::collections::HashSet::new();
        for hit in &hits {
            assert!(
                candidates.contains(hit.internal_id),
                "{label}: not a candidate"
            );
            let vector = model
                .get(&hit.internal_id)
                .unwrap_or_else(|| panic!("{label}: id {} is not live", hit.internal_id));
            let mut prepared = vector.clone();
            Metric::Cosine.prepare(&mut prepared);
            let reference = Metric::Cosine.reference_distance(&prepared_query, &prepared);
            assert!(
                reference <= last + 1e-5,
                "{label} round {round}: id {} at {reference} beyond brute force {last}",
                hit.internal_id
            );
            assert!(
                (reference - hit.distance).abs() <= 1e-5,
                "{label}: distance"
            );
            assert!(seen.insert(hit.internal_id), "{label}: duplicate hit");
        }
    }
}

#[test]
fn exact_filtered_search_equals_brute_force_after_random_inserts_replacements_and_deletes() {
    let seed = 61;
    println!("seed {seed}");
    let rounds = environment_number("VECTOR_MAPS_ROUNDS", 6);
    let mut random = SplitMix64::new(seed);
    let directory = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir_in succeeds");
    let options = Options {
        maximum_size_bytes: 1 << 30,
        ..Options::default()
    };
    let database =
        Database::open(&directory.path().join("shard.pages"), options).expect("open succeeds");
    let mut parameters = GraphParameters::new(Metric::Cosine, DIMENSIONS);
    parameters.merge_threshold_vectors = 64;
    let write = database.begin_write().expect("begin_write succeeds");
    let graph =
        Graph::create(&write, directory.path(), "default", parameters).expect("create succeeds");
    write.commit().expect("commit succeeds");
    let mut model = Model::new();
    let mut snapshots = Vec::new();
    for round in 0..rounds {
        let write = database.begin_write().expect("begin_write succeeds");
        let mut writer = graph.writer(&write).expect("writer succeeds");
        for _ in 0..150 {
            let id = (random.next_u64() % u64::from(ID_RANGE)) as u32;
            if random.next_u64() % 5 == 0 {
                writer
                    .delete(&RoaringBitmap::from_iter([id]))
                    .expect("delete succeeds");
                model.remove(&id);
            } else {
                let vector = clustered_vectors(1, DIMENSIONS, 6, 0.3, 3, random.next_u64());
                writer.insert(id, &vector).expect("insert succeeds");
                model.insert(id, vector);
            }
        }
        writer.finish().expect("finish succeeds");
        write.commit().expect("commit succeeds");
        let read = database.begin_read();
        {
            let reader = graph.reader(&read).expect("reader succeeds");
            assert_eq!(reader.check().expect("check succeeds"), None);
            assert_eq!(reader.len(), model.len() as u64);
            assert_exact_filtered_search(&reader, &model, &mut random, &format!("round {round}"));
        }
        snapshots.push((read, model.clone()));
    }
    // Older snapshots, searched after the shared maps cover the newest records: ids
    // re-inserted since must still map to each snapshot's own record.
    for (index, (read, model)) in snapshots.iter().enumerate() {
        let reader = graph.reader(read).expect("reader succeeds");
        assert_eq!(reader.check().expect("check succeeds"), None);
        assert_exact_filtered_search(&reader, model, &mut random, &format!("snapshot {index}"));
    }
    // A graph opened afresh on the newest snapshot builds its maps from it alone (a vector
    // file is open in one `Graph` at a time).
    drop(graph);
    let (read, model) = snapshots.last().expect("at least one round");
    let reopened = Graph::open(read, directory.path(), "default", GraphOptions::default())
        .expect("open succeeds");
    let reader = reopened.reader(read).expect("reader succeeds");
    assert_exact_filtered_search(&reader, model, &mut random, "reopened");
}

#[test]
fn searches_with_the_distance_sketch_return_exactly_what_searches_without_it_return() {
    let seed = 67;
    println!("seed {seed}");
    let directory = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir_in succeeds");
    let options = Options {
        maximum_size_bytes: 1 << 30,
        ..Options::default()
    };
    let database =
        Database::open(&directory.path().join("shard.pages"), options).expect("open succeeds");
    // Sketches exist from `SKETCH_DIMENSIONS_MIN` dimensions on.
    let dimensions = SKETCH_DIMENSIONS_MIN;
    let vectors = clustered_vectors(1_500, dimensions, 16, 0.3, seed, seed);
    let queries = clustered_vectors(30, dimensions, 16, 0.3, seed, seed + 1);
    for metric in [Metric::Cosine, Metric::DotProduct] {
        let name = format!("{metric:?}");
        let mut parameters = GraphParameters::new(metric, dimensions);
        parameters.merge_threshold_vectors = 512;
        let write = database.begin_write().expect("begin_write succeeds");
        let graph =
            Graph::create(&write, directory.path(), &name, parameters).expect("create succeeds");
        let mut writer = graph.writer(&write).expect("writer succeeds");
        for (row, vector) in vectors.chunks_exact(dimensions).enumerate() {
            writer.insert(row as u32, vector).expect("insert succeeds");
        }
        writer.merge().expect("merge succeeds");
        writer.finish().expect("finish succeeds");
        write.commit().expect("commit succeeds");
        drop(graph);
        let read = database.begin_read();
        // Every query at every ef, opened with or without the sketch (one open at a time: a
        // vector file is locked by the `Graph` that opens it).
        let hits_with = |distance_sketch: bool| {
            let graph = Graph::open(
                &read,
                directory.path(),
                &name,
                GraphOptions {
                    prefetch_memory: true,
                    distance_sketch,
                },
            )
            .expect("open succeeds");
            assert_eq!(graph.sketch_bytes() > 0, distance_sketch, "{name}");
            let reader = graph.reader(&read).expect("reader succeeds");
            let mut scratch = SearchScratch::new();
            let mut all = Vec::new();
            for ef in [10, 40, 200] {
                for query in queries.chunks_exact(dimensions) {
                    let request = SearchRequest {
                        ef: Some(ef),
                        ..SearchRequest::new(query, LIMIT)
                    };
                    let hits = reader
                        .search(&request, &mut scratch)
                        .expect("search succeeds");
                    all.push(
                        hits.iter()
                            .map(|hit| (hit.internal_id, hit.distance.to_bits()))
                            .collect::<Vec<_>>(),
                    );
                }
            }
            all
        };
        let sketched = hits_with(true);
        let plain = hits_with(false);
        assert_eq!(sketched.len(), plain.len());
        for (query, (left, right)) in sketched.iter().zip(&plain).enumerate() {
            assert_eq!(left, right, "{name}: query {query}");
        }
    }
}
