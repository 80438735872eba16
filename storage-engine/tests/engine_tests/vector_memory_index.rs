//! The HNSW algorithm in memory against brute force: recall at default parameters on random
//! and clustered data, binary quantization with and without re-scoring, filtered search, and
//! graph invariants after random inserts and deletes.

// Scenario tests read best as one sequence of steps; the length rule is for product code.
#![allow(clippy::too_many_lines)]
#![allow(clippy::unwrap_used)]

use roaring::RoaringBitmap;
use storage_engine::vector::random::SplitMix64;
use storage_engine::vector::synthetic::{brute_force, clustered_vectors, random_vectors, recall};
use storage_engine::vector::{GraphParameters, MemoryIndex, Metric, SearchRequest};

const DIMENSIONS: usize = 32;
const VECTORS: usize = 1_000;
const QUERIES: usize = 50;
const K: usize = 10;

fn build(parameters: GraphParameters, vectors: &[f32]) -> MemoryIndex {
    let mut index = MemoryIndex::new(parameters).expect("new succeeds");
    for (row, vector) in vectors.chunks_exact(parameters.dimensions).enumerate() {
        index.insert(row as u32, vector).expect("insert succeeds");
    }
    index.merge().expect("merge succeeds");
    assert_eq!(index.check().expect("check succeeds"), None);
    index
}

fn mean_recall(
    index: &mut MemoryIndex,
    vectors: &[f32],
    queries: &[f32],
    rescore: bool,
    candidates: Option<&RoaringBitmap>,
) -> f64 {
    let metric = index.parameters().metric;
    let dimensions = index.parameters().dimensions;
    let mut total = 0.0;
    for query in queries.chunks_exact(dimensions) {
        let truth = brute_force(metric, vectors, dimensions, query, K, candidates);
        let mut request = SearchRequest::new(query, K);
        request.rescore = rescore;
        request.candidates = candidates;
        let hits = index.search(&request).expect("search succeeds");
        if let Some(set) = candidates {
            assert!(
                hits.iter().all(|hit| set.contains(hit.internal_id)),
                "hit outside filter"
            );
        }
        assert!(
            hits.windows(2)
                .all(|pair| pair[0].distance <= pair[1].distance)
        );
        let found: Vec<u32> = hits.iter().map(|hit| hit.internal_id).collect();
        total += recall(&found, &truth);
    }
    total / (queries.len() / dimensions) as f64
}

#[test]
fn recall_at_default_parameters_reaches_095_on_random_data() {
    let seed = 21;
    println!("seed {seed}");
    for metric in [Metric::Cosine, Metric::Euclidean, Metric::DotProduct] {
        let vectors = random_vectors(VECTORS, DIMENSIONS, seed);
        let queries = random_vectors(QUERIES, DIMENSIONS, seed + 1);
        let mut index = build(GraphParameters::new(metric, DIMENSIONS), &vectors);
        let value = mean_recall(&mut index, &vectors, &queries, true, None);
        println!("{metric:?} recall@10 {value:.3}");
        assert!(value >= 0.95, "{metric:?} recall@10 {value}");
    }
}

#[test]
fn recall_at_default_parameters_reaches_095_on_clustered_data() {
    let seed = 22;
    println!("seed {seed}");
    let vectors = clustered_vectors(VECTORS, DIMENSIONS, 20, 0.3, seed, seed);
    let queries = clustered_vectors(QUERIES, DIMENSIONS, 20, 0.3, seed, seed + 1);
    let mut index = build(GraphParameters::new(Metric::Cosine, DIMENSIONS), &vectors);
    let value = mean_recall(&mut index, &vectors, &queries[..], true, None);
    println!("clustered recall@10 {value:.3}");
    assert!(value >= 0.95, "recall@10 {value}");
}

#[test]
fn binary_quantization_with_rescoring_beats_hamming_alone() {
    let seed = 23;
    println!("seed {seed}");
    let dimensions = 128;
    let vectors = clustered_vectors(VECTORS, dimensions, 20, 0.5, seed, seed);
    let queries = clustered_vectors(QUERIES, dimensions, 20, 0.5, seed, seed + 1);
    let mut parameters = GraphParameters::new(Metric::Cosine, dimensions);
    parameters.binary_quantized = true;
    let mut index = build(parameters, &vectors);
    let without = mean_recall(&mut index, &vectors, &queries, false, None);
    let with = mean_recall(&mut index, &vectors, &queries, true, None);
    println!("binary quantization recall@10: without re-scoring {without:.3}, with {with:.3}");
    assert!(with >= 0.9, "re-scored recall {with}");
    assert!(with > without, "re-scoring must help: {with} vs {without}");
}

#[test]
fn hamming_graph_finds_nearest_codes() {
    let seed = 24;
    println!("seed {seed}");
    let dimensions = 128;
    let vectors = random_vectors(VECTORS, dimensions, seed);
    let queries = random_vectors(QUERIES, dimensions, seed + 1);
    let mut index = build(GraphParameters::new(Metric::Hamming, dimensions), &vectors);
    // Hamming distances tie a lot: compare distances, not ids.
    for query in queries.chunks_exact(dimensions) {
        let truth = brute_force(Metric::Hamming, &vectors, dimensions, query, K, None);
        let hits = index
            .search(&SearchRequest::new(query, K))
            .expect("search succeeds");
        let worst_truth = Metric::Hamming.reference_distance(
            query,
            &vectors[truth[K - 1] as usize * dimensions..][..dimensions],
        ) / dimensions as f32;
        let worst_found = hits.last().expect("last finds a value").distance;
        assert!(
            worst_found <= worst_truth + 2.0 / dimensions as f32,
            "{worst_found} {worst_truth}"
        );
    }
}

fn every_nth(count: usize, step: usize, offset: usize) -> RoaringBitmap {
    (offset..count).step_by(step).map(|id| id as u32).collect()
}

#[test]
fn filtered_search_returns_only_matches_with_high_recall() {
    let seed = 25;
    println!("seed {seed}");
    let vectors = clustered_vectors(VECTORS * 3, DIMENSIONS, 30, 0.3, seed, seed);
    let queries = clustered_vectors(QUERIES, DIMENSIONS, 30, 0.3, seed, seed + 1);
    let mut parameters = GraphParameters::new(Metric::Euclidean, DIMENSIONS);
    // Force the filtered graph path (not the exact one) whenever the selectivity allows it.
    parameters.exact_search_candidates_min = 0;
    let mut index = build(parameters, &vectors);
    for (step, label) in [(100, "1%"), (10, "10%"), (3, "33%")] {
        let candidates = every_nth(VECTORS * 3, step, 3);
        let value = mean_recall(&mut index, &vectors, &queries, true, Some(&candidates));
        println!("filtered at {label}: recall@10 {value:.3}");
        assert!(value >= 0.95, "{label}: {value}");
    }
    let single = RoaringBitmap::from_iter([17_u32]);
    let hits = index
        .search(&SearchRequest {
            candidates: Some(&single),
            ..SearchRequest::new(&queries[..DIMENSIONS], K)
        })
        .expect("search succeeds");
    assert_eq!(
        hits.iter().map(|hit| hit.internal_id).collect::<Vec<_>>(),
        vec![17]
    );
}

#[test]
fn buffered_vectors_are_searchable_before_the_merge() {
    let seed = 26;
    println!("seed {seed}");
    let vectors = random_vectors(300, DIMENSIONS, seed);
    let mut parameters = GraphParameters::new(Metric::Cosine, DIMENSIONS);
    parameters.merge_threshold_vectors = 128;
    let mut index = MemoryIndex::new(parameters).expect("new succeeds");
    let mut merges = Vec::new();
    for (row, vector) in vectors.chunks_exact(DIMENSIONS).enumerate() {
        if let Some(report) = index.insert(row as u32, vector).expect("insert succeeds") {
            merges.push(report);
        }
    }
    assert_eq!(merges.len(), 2);
    assert_eq!(index.buffered(), 300 - 256);
    println!(
        "second merge re-linked {:.3} of the existing nodes",
        merges[1].relinked_fraction()
    );
    assert!(merges[1].relinked_existing > 0 && merges[1].relinked_fraction() <= 1.0);
    let last = &vectors[299 * DIMENSIONS..];
    let hits = index
        .search(&SearchRequest::new(last, 1))
        .expect("search succeeds");
    assert_eq!(hits[0].internal_id, 299);
    assert!(hits[0].distance.abs() < 1e-5);
}

#[test]
fn replacing_a_vector_moves_its_id() {
    let seed = 27;
    println!("seed {seed}");
    let vectors = random_vectors(400, DIMENSIONS, seed);
    let mut index = build(
        GraphParameters::new(Metric::Euclidean, DIMENSIONS),
        &vectors,
    );
    let target = &vectors[5 * DIMENSIONS..6 * DIMENSIONS];
    index.insert(7, target).expect("insert succeeds");
    index.merge().expect("merge succeeds");
    let hits = index
        .search(&SearchRequest::new(target, 2))
        .expect("search succeeds");
    let mut ids: Vec<u32> = hits.iter().map(|hit| hit.internal_id).collect();
    ids.sort_unstable();
    assert_eq!(ids, vec![5, 7]);
    assert_eq!(index.len(), 400);
    assert_eq!(index.check().expect("check succeeds"), None);
}

#[test]
fn queries_of_the_wrong_length_or_with_nan_are_rejected() {
    let mut index =
        MemoryIndex::new(GraphParameters::new(Metric::Cosine, 4)).expect("new succeeds");
    assert!(index.insert(1, &[1.0, 2.0]).is_err());
    assert!(index.insert(1, &[1.0, f32::NAN, 0.0, 0.0]).is_err());
    assert!(index.search(&SearchRequest::new(&[1.0; 3], 1)).is_err());
    assert!(
        index
            .search(&SearchRequest::new(&[1.0; 4], 1))
            .expect("search succeeds")
            .is_empty()
    );
}

#[test]
fn deleting_everything_empties_the_graph() {
    let seed = 28;
    println!("seed {seed}");
    let vectors = random_vectors(200, DIMENSIONS, seed);
    let mut index = build(GraphParameters::new(Metric::Cosine, DIMENSIONS), &vectors);
    let mut random = SplitMix64::new(seed);
    let half: RoaringBitmap = (0..200).filter(|_| random.next_below(2) == 0).collect();
    index.delete(&half).expect("delete succeeds");
    assert_eq!(index.check().expect("check succeeds"), None);
    index.delete(&(0..200).collect()).expect("delete succeeds");
    assert!(index.is_empty());
    assert_eq!(index.check().expect("check succeeds"), None);
    assert!(
        index
            .search(&SearchRequest::new(&vectors[..DIMENSIONS], 3))
            .expect("search succeeds")
            .is_empty()
    );
}
