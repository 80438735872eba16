//! The persisted graph (trees + vector files) against the in-memory model: identical results,
//! reopening, a crash before commit, many graphs per store, binary quantization with
//! re-scoring from the vector file, and batched io_uring reads of non-resident vectors (with
//! cosine records' scales).

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]
#![allow(clippy::unwrap_used)]

use crate::common;

use roaring::RoaringBitmap;
use storage_engine::vector::store::graph::FileBackends;
use storage_engine::vector::store::{FileBackend, Graph, GraphOptions, MemoryTrees};
use storage_engine::vector::synthetic::{brute_force, clustered_vectors, recall};
use storage_engine::vector::{GraphParameters, MemoryIndex, Metric, SearchRequest, SearchScratch};

use common::vector_files::Files;

const DIMENSIONS: usize = 24;

fn parameters(metric: Metric) -> GraphParameters {
    let mut parameters = GraphParameters::new(metric, DIMENSIONS);
    parameters.merge_threshold_vectors = 300;
    parameters
}

#[test]
fn persisted_graph_answers_exactly_like_the_memory_model() {
    let seed = 41;
    println!("seed {seed}");
    let vectors = clustered_vectors(900, DIMENSIONS, 12, 0.3, seed, seed);
    let queries = clustered_vectors(20, DIMENSIONS, 12, 0.3, seed, seed + 1);
    let parameters = parameters(Metric::Cosine);
    let trees = MemoryTrees::new();
    let files = Files::new(&parameters, seed);
    let graph = Graph::create_with_backends(&trees, "default", parameters, files.backends())
        .expect("create_with_backends succeeds");
    let mut model = MemoryIndex::new(parameters).expect("new succeeds");
    let mut writer = graph.writer(&trees).expect("writer succeeds");
    for (row, vector) in vectors.chunks_exact(DIMENSIONS).enumerate() {
        let persisted = writer.insert(row as u32, vector).expect("insert succeeds");
        let modelled = model.insert(row as u32, vector).expect("insert succeeds");
        assert_eq!(persisted, modelled);
    }
    let deleted: RoaringBitmap = (0..900).step_by(7).collect();
    writer.delete(&deleted).expect("delete succeeds");
    model.delete(&deleted).expect("delete succeeds");
    writer.finish().expect("finish succeeds");
    let reader = graph.reader(&trees).expect("reader succeeds");
    assert_eq!(reader.check().expect("check succeeds"), None);
    assert_eq!(reader.len(), model.len() as u64);
    let mut scratch = SearchScratch::new();
    let mut total = 0.0;
    for query in queries.chunks_exact(DIMENSIONS) {
        let request = SearchRequest::new(query, 10);
        let hits = reader
            .search(&request, &mut scratch)
            .expect("search succeeds");
        assert_eq!(hits, model.search(&request).expect("search succeeds"));
        let live: RoaringBitmap = &(0..900).collect::<RoaringBitmap>() - &deleted;
        let truth = brute_force(Metric::Cosine, &vectors, DIMENSIONS, query, 10, Some(&live));
        total += recall(
            &hits.iter().map(|hit| hit.internal_id).collect::<Vec<_>>(),
            &truth,
        );
    }
    let mean = total / 20.0;
    println!("persisted recall@10 {mean:.3}");
    assert!(mean >= 0.95);
}

#[test]
fn a_crash_before_commit_reopens_to_the_last_commit() {
    let seed = 42;
    println!("seed {seed}");
    let vectors = clustered_vectors(700, DIMENSIONS, 8, 0.3, seed, seed);
    let parameters = parameters(Metric::Euclidean);
    let trees = MemoryTrees::new();
    let files = Files::new(&parameters, seed);
    let graph = Graph::create_with_backends(&trees, "default", parameters, files.backends())
        .expect("create_with_backends succeeds");
    let mut writer = graph.writer(&trees).expect("writer succeeds");
    for (row, vector) in vectors.chunks_exact(DIMENSIONS).take(400).enumerate() {
        writer.insert(row as u32, vector).expect("insert succeeds");
    }
    writer.finish().expect("finish succeeds");
    let committed = trees.clone();
    // A second transaction appends and merges, then the machine loses power before commit.
    let mut writer = graph.writer(&trees).expect("writer succeeds");
    for (row, vector) in vectors.chunks_exact(DIMENSIONS).enumerate().skip(400) {
        writer.insert(row as u32, vector).expect("insert succeeds");
    }
    writer.delete(&(0..50).collect()).expect("delete succeeds");
    drop(writer);
    let survivors = files.after_power_loss();
    drop(graph);
    let graph = Graph::open_with_backends(
        &committed,
        "default",
        survivors.backends(),
        GraphOptions::default(),
    )
    .expect("open_with_backends succeeds");
    let reader = graph.reader(&committed).expect("reader succeeds");
    assert_eq!(reader.check().expect("check succeeds"), None);
    assert_eq!(reader.len(), 400);
    let mut scratch = SearchScratch::new();
    let query = &vectors[10 * DIMENSIONS..11 * DIMENSIONS];
    assert_eq!(
        reader
            .search(&SearchRequest::new(query, 1), &mut scratch)
            .expect("search succeeds")[0]
            .internal_id,
        10
    );
    // Writing again reuses the record numbers past the committed count.
    let mut writer = graph.writer(&committed).expect("writer succeeds");
    writer
        .insert(600, &vectors[600 * DIMENSIONS..601 * DIMENSIONS])
        .expect("insert succeeds");
    writer.merge().expect("merge succeeds");
    writer.finish().expect("finish succeeds");
    let reader = graph.reader(&committed).expect("reader succeeds");
    assert_eq!(reader.check().expect("check succeeds"), None);
    assert_eq!(reader.record_count(), 401);
}

#[test]
fn many_graphs_share_one_store_and_old_readers_keep_their_snapshot() {
    let seed = 43;
    println!("seed {seed}");
    let trees = MemoryTrees::new();
    let first_parameters = parameters(Metric::Cosine);
    let mut second_parameters = GraphParameters::new(Metric::DotProduct, 8);
    second_parameters.m = 8;
    second_parameters.m0 = 16;
    let first_files = Files::new(&first_parameters, seed);
    let second_files = Files::new(&second_parameters, seed + 10);
    let first =
        Graph::create_with_backends(&trees, "first", first_parameters, first_files.backends())
            .expect("create_with_backends succeeds");
    let second =
        Graph::create_with_backends(&trees, "second", second_parameters, second_files.backends())
            .expect("create_with_backends succeeds");
    let first_vectors = clustered_vectors(200, DIMENSIONS, 4, 0.3, seed, seed);
    let second_vectors = clustered_vectors(100, 8, 4, 0.3, seed, seed);
    let mut writer = first.writer(&trees).expect("writer succeeds");
    for (row, vector) in first_vectors.chunks_exact(DIMENSIONS).enumerate() {
        writer.insert(row as u32, vector).expect("insert succeeds");
    }
    writer.merge().expect("merge succeeds");
    writer.finish().expect("finish succeeds");
    let mut writer = second.writer(&trees).expect("writer succeeds");
    for (row, vector) in second_vectors.chunks_exact(8).enumerate() {
        writer
            .insert(1_000 + row as u32, vector)
            .expect("insert succeeds");
    }
    writer.finish().expect("finish succeeds");
    let snapshot = trees.clone();
    let mut writer = first.writer(&trees).expect("writer succeeds");
    writer.delete(&(0..100).collect()).expect("delete succeeds");
    writer.finish().expect("finish succeeds");
    let old = first.reader(&snapshot).expect("reader succeeds");
    let new = first.reader(&trees).expect("reader succeeds");
    let other = second.reader(&trees).expect("reader succeeds");
    assert_eq!((old.len(), new.len(), other.len()), (200, 100, 100));
    assert_eq!(other.buffered(), 100);
    for reader in [&old, &new, &other] {
        assert_eq!(reader.check().expect("check succeeds"), None);
    }
    let mut scratch = SearchScratch::new();
    let query = &first_vectors[..DIMENSIONS];
    assert_eq!(
        old.search(&SearchRequest::new(query, 1), &mut scratch)
            .expect("search succeeds")[0]
            .internal_id,
        0
    );
    assert_ne!(
        new.search(&SearchRequest::new(query, 1), &mut scratch)
            .expect("search succeeds")[0]
            .internal_id,
        0
    );
    let hits = other
        .search(&SearchRequest::new(&second_vectors[..8], 5), &mut scratch)
        .expect("search succeeds");
    assert!(hits.iter().all(|hit| hit.internal_id >= 1_000));
    assert!(
        Graph::create_with_backends(
            &trees,
            "first",
            second_parameters,
            Files::new(&second_parameters, 0).backends()
        )
        .is_err()
    );
}

#[test]
fn quantized_graph_rescores_from_the_full_vector_file() {
    let seed = 44;
    println!("seed {seed}");
    let dimensions = 96;
    let vectors = clustered_vectors(800, dimensions, 10, 0.5, seed, seed);
    let queries = clustered_vectors(20, dimensions, 10, 0.5, seed, seed + 1);
    let mut parameters = GraphParameters::new(Metric::Cosine, dimensions);
    parameters.binary_quantized = true;
    let trees = MemoryTrees::new();
    let files = Files::new(&parameters, seed);
    let graph = Graph::create_with_backends(&trees, "bq", parameters, files.backends())
        .expect("create_with_backends succeeds");
    let mut writer = graph.writer(&trees).expect("writer succeeds");
    for (row, vector) in vectors.chunks_exact(dimensions).enumerate() {
        writer.insert(row as u32, vector).expect("insert succeeds");
    }
    writer.merge().expect("merge succeeds");
    writer.finish().expect("finish succeeds");
    let reader = graph.reader(&trees).expect("reader succeeds");
    let mut scratch = SearchScratch::new();
    let (mut with, mut without) = (0.0, 0.0);
    for query in queries.chunks_exact(dimensions) {
        let truth = brute_force(Metric::Cosine, &vectors, dimensions, query, 10, None);
        let mut request = SearchRequest::new(query, 10);
        let ids = |hits: Vec<storage_engine::vector::Hit>| {
            hits.iter().map(|hit| hit.internal_id).collect::<Vec<_>>()
        };
        with += recall(
            &ids(reader
                .search(&request, &mut scratch)
                .expect("search succeeds")),
            &truth,
        );
        request.rescore = false;
        without += recall(
            &ids(reader
                .search(&request, &mut scratch)
                .expect("search succeeds")),
            &truth,
        );
    }
    println!(
        "persisted BQ recall@10: with re-scoring {:.3}, without {:.3}",
        with / 20.0,
        without / 20.0
    );
    assert!(with / 20.0 >= 0.9 && with > without);
}

#[test]
fn non_resident_vectors_are_read_through_io_uring_with_the_same_distances() {
    read_non_resident_vectors_through_io_uring(Metric::Euclidean);
}

#[test]
fn non_resident_cosine_vectors_are_read_through_io_uring_with_their_scales() {
    read_non_resident_vectors_through_io_uring(Metric::Cosine);
}

/// Searches a binary-quantized graph whose full vectors were evicted from the page cache, so
/// that re-scoring reads them through io_uring, and checks the distances against brute force.
/// Cosine rows get norms from 0.01 to 100: a re-scoring that forgot the records' scales
/// (format 2 keeps cosine vectors as inserted) would get every distance wrong.
fn read_non_resident_vectors_through_io_uring(metric: Metric) {
    let seed = 45;
    println!("seed {seed}");
    let directory = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir_in succeeds");
    let dimensions = 256;
    let mut vectors = clustered_vectors(600, dimensions, 6, 0.4, seed, seed);
    if metric == Metric::Cosine {
        for (row, vector) in vectors.chunks_exact_mut(dimensions).enumerate() {
            let factor = [0.01, 1.0, 100.0][row % 3];
            vector.iter_mut().for_each(|value| *value *= factor);
        }
    }
    let mut parameters = GraphParameters::new(metric, dimensions);
    parameters.binary_quantized = true;
    let trees = MemoryTrees::new();
    let graph =
        Graph::create(&trees, directory.path(), "disk", parameters).expect("create succeeds");
    let mut writer = graph.writer(&trees).expect("writer succeeds");
    for (row, vector) in vectors.chunks_exact(dimensions).enumerate() {
        writer.insert(row as u32, vector).expect("insert succeeds");
    }
    writer.merge().expect("merge succeeds");
    writer.finish().expect("finish succeeds");
    drop(graph);
    let (_, full_path) =
        storage_engine::vector::store::vector_file_paths(directory.path(), "disk", &parameters);
    evict_from_page_cache(&full_path.expect("`full_path` holds a value"));
    let graph = Graph::open_with_backends(
        &trees,
        "disk",
        FileBackends {
            navigation: FileBackend::Path(
                storage_engine::vector::store::vector_file_paths(
                    directory.path(),
                    "disk",
                    &parameters,
                )
                .0,
            ),
            full: storage_engine::vector::store::vector_file_paths(
                directory.path(),
                "disk",
                &parameters,
            )
            .1
            .map(FileBackend::Path),
        },
        GraphOptions {
            prefetch_memory: true,
            ..GraphOptions::default()
        },
    )
    .expect("open_with_backends succeeds");
    assert!(graph.prefetched_bytes() > 0);
    let reader = graph.reader(&trees).expect("reader succeeds");
    let mut scratch = SearchScratch::new();
    let query = &vectors[33 * dimensions..34 * dimensions];
    let hits = reader
        .search(&SearchRequest::new(query, 5), &mut scratch)
        .expect("search succeeds");
    assert_eq!(hits[0].internal_id, 33);
    assert!(hits[0].distance.abs() < 1e-4);
    let truth = brute_force(metric, &vectors, dimensions, query, 5, None);
    let prepared = |vector: &[f32]| {
        let mut prepared = vector.to_vec();
        metric.prepare(&mut prepared);
        prepared
    };
    let exact: Vec<f32> = truth
        .iter()
        .map(|row| {
            let vector = prepared(&vectors[*row as usize * dimensions..][..dimensions]);
            let distance = metric.reference_distance(&prepared(query), &vector);
            metric.user_distance(distance, dimensions)
        })
        .collect();
    for (hit, expected) in hits.iter().zip(&exact) {
        assert!(
            (hit.distance - expected).abs() <= 1e-3 * expected.max(1.0),
            "{metric:?}: {} vs {expected}",
            hit.distance
        );
    }
    let batched = graph.full_file().expect("full_file succeeds").uring_reads();
    println!("records read through io_uring: {batched}");
    assert!(batched > 0, "evicted vectors must be read in batches");
}

fn evict_from_page_cache(path: &std::path::Path) {
    use std::os::fd::AsRawFd;
    let file = std::fs::File::open(path).expect("open succeeds");
    file.sync_all().expect("sync_all succeeds");
    // SAFETY: advice on a descriptor we own; no memory is involved.
    let outcome = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    assert_eq!(outcome, 0);
}

#[test]
fn damaged_links_are_reported_as_corruption_not_panics() {
    use storage_engine::vector::VectorError;
    use storage_engine::vector::store::WriteTrees;
    use storage_engine::vector::store::node_codec::encode_node;
    let seed = 46;
    println!("seed {seed}");
    let vectors = clustered_vectors(200, DIMENSIONS, 4, 0.3, seed, seed);
    let parameters = parameters(Metric::Euclidean);
    let trees = MemoryTrees::new();
    let files = Files::new(&parameters, seed);
    let graph = Graph::create_with_backends(&trees, "default", parameters, files.backends())
        .expect("create_with_backends succeeds");
    let mut writer = graph.writer(&trees).expect("writer succeeds");
    for (row, vector) in vectors.chunks_exact(DIMENSIONS).enumerate() {
        writer.insert(row as u32, vector).expect("insert succeeds");
    }
    writer.merge().expect("merge succeeds");
    writer.finish().expect("finish succeeds");
    let nodes = trees
        .open_write("vector.default.nodes")
        .expect("open_write succeeds");
    let mut keys = Vec::new();
    nodes
        .for_each(&mut |key, _| {
            keys.push(key.to_vec());
            Ok(())
        })
        .expect("for_each succeeds");
    for key in &keys {
        nodes
            .put(key, &encode_node(&[vec![9_999_999]]))
            .expect("put succeeds");
    }
    drop(nodes);
    // A freshly opened graph: the one above keeps the adjacency its writer published (read
    // before the damage), which a reader of the same links version would use instead of the
    // tree.
    let graph =
        Graph::open_with_backends(&trees, "default", files.backends(), GraphOptions::default())
            .expect("open_with_backends succeeds");
    let reader = graph.reader(&trees).expect("reader succeeds");
    let outcome = reader.search(
        &SearchRequest::new(&vectors[..DIMENSIONS], 3),
        &mut SearchScratch::new(),
    );
    assert!(
        matches!(outcome, Err(VectorError::Corrupted(_))),
        "{outcome:?}"
    );
    let checked = reader.check();
    assert!(
        matches!(checked, Err(VectorError::Corrupted(_)) | Ok(Some(_))),
        "the integrity check must report the damage: {checked:?}"
    );
}
