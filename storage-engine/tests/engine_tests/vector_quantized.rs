//! Binary quantization with a float copy (centred 1-bit codes navigated by asymmetric
//! estimates, re-scored with full vectors): recall at default parameters on dense clusters,
//! the persisted graph against the in-memory model, and a crash before commit (centres and
//! codes written by the lost transaction never reach a reader).
#![allow(clippy::unwrap_used)]
// A test file is a test module: its scenario functions read top to bottom as one story, so the
// 70-line limit of the engine's own code does not apply here.
#![allow(clippy::too_many_lines)]

use crate::common;

use roaring::RoaringBitmap;
use storage_engine::vector::store::{Graph, GraphOptions, MemoryTrees};
use storage_engine::vector::synthetic::{brute_force, clustered_vectors, recall};
use storage_engine::vector::{
    GraphParameters, Hit, MemoryIndex, Metric, SearchRequest, SearchScratch,
};

use common::vector_files::Files;

/// Vectors of the recall test (raise with `VECTOR_QUANTIZED_VECTORS`).
const RECALL_VECTORS: usize = 20_000;
/// Clusters of the recall test: 1,000 vectors per cluster, as dense as 1M vectors in 1,024
/// clusters (the size where Hamming navigation fell to recall 0.41).
const RECALL_CLUSTERS: usize = 20;
const RECALL_QUERIES: usize = 100;

fn ids(hits: &[Hit]) -> Vec<u32> {
    hits.iter().map(|hit| hit.internal_id).collect()
}

fn quantized(metric: Metric, dimensions: usize) -> GraphParameters {
    let mut parameters = GraphParameters::new(metric, dimensions);
    parameters.binary_quantized = true;
    parameters
}

fn vector_count() -> usize {
    std::env::var("VECTOR_QUANTIZED_VECTORS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(RECALL_VECTORS)
}

/// Mean recall@10 of `index` (default beam width) with and without re-scoring.
fn recalls(
    index: &mut MemoryIndex,
    metric: Metric,
    vectors: &[f32],
    queries: &[f32],
    dimensions: usize,
) -> (f64, f64) {
    let (mut with, mut without) = (0.0, 0.0);
    let count = queries.len() / dimensions;
    for query in queries.chunks_exact(dimensions) {
        let truth = brute_force(metric, vectors, dimensions, query, 10, None);
        let mut request = SearchRequest::new(query, 10);
        with += recall(
            &ids(&index.search(&request).expect("search succeeds")),
            &truth,
        );
        request.rescore = false;
        without += recall(
            &ids(&index.search(&request).expect("search succeeds")),
            &truth,
        );
    }
    (with / count as f64, without / count as f64)
}

#[test]
fn quantized_search_with_rescoring_reaches_recall_095_at_default_parameters() {
    let seed = 71;
    println!("seed {seed}");
    let dimensions = 128;
    let count = vector_count();
    let vectors = clustered_vectors(count, dimensions, RECALL_CLUSTERS, 0.5, seed, seed);
    let queries = clustered_vectors(
        RECALL_QUERIES,
        dimensions,
        RECALL_CLUSTERS,
        0.5,
        seed,
        seed + 1,
    );
    for metric in [Metric::Cosine, Metric::Euclidean] {
        let mut index = MemoryIndex::new(quantized(metric, dimensions)).expect("new succeeds");
        for (row, vector) in vectors.chunks_exact(dimensions).enumerate() {
            index.insert(row as u32, vector).expect("insert succeeds");
        }
        index.merge().expect("merge succeeds");
        assert_eq!(index.check().expect("check succeeds"), None);
        let (with, without) = recalls(&mut index, metric, &vectors, &queries, dimensions);
        println!(
            "{metric:?} {count} x {dimensions}: recall@10 re-scored {with:.4}, estimates only {without:.4}"
        );
        assert!(with >= 0.95, "{metric:?}: re-scored recall@10 {with}");
    }
}

#[test]
fn persisted_quantized_graph_answers_exactly_like_the_memory_model() {
    let seed = 72;
    println!("seed {seed}");
    let dimensions = 64;
    let vectors = clustered_vectors(3_000, dimensions, 4, 0.5, seed, seed);
    let queries = clustered_vectors(20, dimensions, 4, 0.5, seed, seed + 1);
    for metric in [Metric::Cosine, Metric::DotProduct, Metric::Euclidean] {
        let mut parameters = quantized(metric, dimensions);
        parameters.merge_threshold_vectors = 500;
        let trees = MemoryTrees::new();
        let files = Files::new(&parameters, seed);
        let graph = Graph::create_with_backends(&trees, "bq", parameters, files.backends())
            .expect("create_with_backends succeeds");
        let mut model = MemoryIndex::new(parameters).expect("new succeeds");
        let mut writer = graph.writer(&trees).expect("writer succeeds");
        for (row, vector) in vectors.chunks_exact(dimensions).enumerate() {
            let persisted = writer.insert(row as u32, vector).expect("insert succeeds");
            assert_eq!(persisted, model.insert(row as u32, vector).expect("insert"));
        }
        let deleted: RoaringBitmap = (0..3_000).step_by(9).collect();
        writer.delete(&deleted).expect("delete succeeds");
        model.delete(&deleted).expect("delete succeeds");
        writer.finish().expect("finish succeeds");
        let reader = graph.reader(&trees).expect("reader succeeds");
        assert_eq!(reader.check().expect("check succeeds"), None);
        assert!(graph.centre_bytes() > 0, "{metric:?}: centres were made");
        let mut scratch = SearchScratch::new();
        for query in queries.chunks_exact(dimensions) {
            for rescore in [true, false] {
                let request = SearchRequest {
                    rescore,
                    ..SearchRequest::new(query, 10)
                };
                let hits = reader.search(&request, &mut scratch).expect("search");
                assert_eq!(hits, model.search(&request).expect("search"), "{metric:?}");
            }
        }
    }
}

/// Searches every query (with and without re-scoring) in `graph`'s snapshot `trees`.
fn answers(
    graph: &Graph,
    trees: &MemoryTrees,
    queries: &[f32],
    dimensions: usize,
) -> Vec<Vec<Hit>> {
    let reader = graph.reader(trees).expect("reader succeeds");
    assert_eq!(reader.check().expect("check succeeds"), None);
    let mut scratch = SearchScratch::new();
    let mut all = Vec::new();
    for query in queries.chunks_exact(dimensions) {
        for rescore in [true, false] {
            let request = SearchRequest {
                rescore,
                ..SearchRequest::new(query, 10)
            };
            all.push(reader.search(&request, &mut scratch).expect("search"));
        }
    }
    all
}

#[test]
fn a_quantized_graph_reopens_after_a_crash_with_its_committed_centres() {
    let seed = 73;
    println!("seed {seed}");
    let dimensions = 48;
    let vectors = clustered_vectors(2_400, dimensions, 6, 0.5, seed, seed);
    let other = clustered_vectors(1_200, dimensions, 6, 0.5, seed + 9, seed + 9);
    let queries = clustered_vectors(15, dimensions, 6, 0.5, seed, seed + 1);
    let mut parameters = quantized(Metric::Cosine, dimensions);
    parameters.merge_threshold_vectors = 400;
    let trees = MemoryTrees::new();
    let files = Files::new(&parameters, seed);
    let graph = Graph::create_with_backends(&trees, "bq", parameters, files.backends())
        .expect("create_with_backends succeeds");
    let mut writer = graph.writer(&trees).expect("writer succeeds");
    for (row, vector) in vectors.chunks_exact(dimensions).take(1_200).enumerate() {
        writer.insert(row as u32, vector).expect("insert succeeds");
    }
    writer.merge().expect("merge succeeds");
    writer.finish().expect("finish succeeds");
    let committed = trees.clone();
    let before = answers(&graph, &committed, &queries, dimensions);
    // A second transaction makes more centres and codes against them, then power is lost.
    let mut writer = graph.writer(&trees).expect("writer succeeds");
    for (row, vector) in vectors.chunks_exact(dimensions).enumerate().skip(1_200) {
        writer.insert(row as u32, vector).expect("insert succeeds");
    }
    writer.merge().expect("merge succeeds");
    writer.finish().expect("finish succeeds");
    // The same open graph, still serving the committed snapshot, answers as before.
    assert_eq!(answers(&graph, &committed, &queries, dimensions), before);
    let survivors = files.after_power_loss();
    drop(graph);
    let graph = Graph::open_with_backends(
        &committed,
        "bq",
        survivors.backends(),
        GraphOptions::default(),
    )
    .expect("open_with_backends succeeds");
    assert_eq!(answers(&graph, &committed, &queries, dimensions), before);
    // Writing other vectors reuses the lost record and centre numbers; a graph opened afresh
    // and the long-lived one agree (no centre of the lost transaction is served).
    let mut writer = graph.writer(&committed).expect("writer succeeds");
    for (row, vector) in other.chunks_exact(dimensions).enumerate() {
        writer
            .insert(5_000 + row as u32, vector)
            .expect("insert succeeds");
    }
    writer.merge().expect("merge succeeds");
    writer.finish().expect("finish succeeds");
    let after = answers(&graph, &committed, &queries, dimensions);
    let fresh = Graph::open_with_backends(
        &committed,
        "bq",
        survivors.backends(),
        GraphOptions::default(),
    )
    .expect("open_with_backends succeeds");
    assert_eq!(answers(&fresh, &committed, &queries, dimensions), after);
    // And the re-scored answers are exact distances of committed vectors.
    let live: Vec<f32> = vectors[..1_200 * dimensions]
        .iter()
        .chain(&other)
        .copied()
        .collect();
    let mut found = 0.0;
    for (query, hits) in queries
        .chunks_exact(dimensions)
        .zip(after.iter().step_by(2))
    {
        let truth: Vec<u32> = brute_force(Metric::Cosine, &live, dimensions, query, 10, None)
            .into_iter()
            .map(|row| {
                if row < 1_200 {
                    row
                } else {
                    5_000 + row - 1_200
                }
            })
            .collect();
        found += recall(&ids(hits), &truth);
    }
    let mean = found / 15.0;
    println!("recall@10 after the crash and more writes {mean:.3}");
    assert!(mean >= 0.9, "recall@10 {mean}");
}
