//! Tests of the one-copy property of persisted graphs: float files of format 2 give every
//! vector back exactly as inserted (`Graph::holds_originals`, `original`) while searches
//! still rank by the metric of the prepared vectors, and format-1 files (cosine vectors
//! normalised, written before format 2) still open, search and take inserts in their format.
//!
//! Vectors here have norms spread over six orders of magnitude, so that a distance that
//! forgot a record's scale would rank them by norm and fail the recall and distance checks.

use super::graph::{FileBackend, FileBackends, Graph, GraphOptions, layouts};
use super::trees::MemoryTrees;
use super::vector_file::{FORMAT_VERSION, FORMAT_VERSION_NORMALISED, VectorFile};
use crate::io::{PageIo, SimulatedIo};
use crate::vector::distance::Metric;
use crate::vector::parameters::GraphParameters;
use crate::vector::records::{RecordStore, encode_record};
use crate::vector::searching::SearchRequest;
use crate::vector::synthetic::{brute_force, clustered_vectors, recall};
use crate::vector::{GraphReader, GraphWriter, SearchScratch};
use roaring::RoaringBitmap;

/// Bytes each simulated vector file may grow to.
const SIMULATED_FILE_BYTES: usize = 16 << 20;
/// Inserts that trigger a merge in these tests (small, so that tests cross several merges).
const MERGE_THRESHOLD_VECTORS: usize = 100;
/// Factors the rows are scaled by, in turn (row `r` by `NORM_FACTORS[r % len]`).
const NORM_FACTORS: [f32; 5] = [1e-3, 0.5, 1.0, 37.0, 1e3];

/// The simulated files of one graph (clones share the same bytes).
struct Files {
    navigation: SimulatedIo,
    full: Option<SimulatedIo>,
}

impl Files {
    fn new(parameters: &GraphParameters) -> Self {
        let full = (parameters.binary_quantized && parameters.keeps_full_vectors())
            .then(|| SimulatedIo::new(SIMULATED_FILE_BYTES, 2));
        Self {
            navigation: SimulatedIo::new(SIMULATED_FILE_BYTES, 1),
            full,
        }
    }

    fn backends(&self) -> FileBackends {
        let backend = |io: &SimulatedIo| FileBackend::Io(Box::new(io.clone()) as Box<dyn PageIo>);
        FileBackends {
            navigation: backend(&self.navigation),
            full: self.full.as_ref().map(backend),
        }
    }
}

fn parameters(metric: Metric, dimensions: usize, binary_quantized: bool) -> GraphParameters {
    let mut parameters = GraphParameters::new(metric, dimensions);
    parameters.binary_quantized = binary_quantized;
    parameters.merge_threshold_vectors = MERGE_THRESHOLD_VECTORS;
    parameters
}

/// Clustered rows scaled by `NORM_FACTORS`; row 5 is all zeros and row 6 holds a negative
/// zero and a subnormal value (bits a copy must keep).
fn spread_rows(count: usize, dimensions: usize, seed: u64) -> Vec<f32> {
    let mut rows = clustered_vectors(count, dimensions, 8, 0.3, seed, seed + 1);
    for (row, vector) in rows.chunks_exact_mut(dimensions).enumerate() {
        let factor = NORM_FACTORS[row % NORM_FACTORS.len()];
        vector.iter_mut().for_each(|value| *value *= factor);
    }
    if count > 6 {
        rows[5 * dimensions..6 * dimensions].fill(0.0);
        rows[6 * dimensions] = -0.0;
        rows[6 * dimensions + 1] = f32::from_bits(1);
    }
    rows
}

fn row(rows: &[f32], dimensions: usize, id: u32) -> &[f32] {
    &rows[id as usize * dimensions..][..dimensions]
}

fn bits(vector: &[f32]) -> Vec<u32> {
    vector.iter().map(|value| value.to_bits()).collect()
}

/// Every id of `ids` comes back from `original` with the bits of its row of `rows`.
fn assert_originals(
    original: &dyn Fn(u32) -> Option<Vec<f32>>,
    rows: &[f32],
    dimensions: usize,
    ids: impl Iterator<Item = u32>,
    context: &str,
) {
    for id in ids {
        let stored = original(id).unwrap_or_else(|| panic!("{context}: id {id} has a vector"));
        assert_eq!(
            bits(&stored),
            bits(row(rows, dimensions, id)),
            "{context}: id {id}"
        );
    }
}

fn writer_original<'a>(writer: &'a GraphWriter<'_>) -> impl Fn(u32) -> Option<Vec<f32>> + 'a {
    |id| writer.original(id).expect("original reads")
}

fn reader_original<'a>(reader: &'a GraphReader<'_>) -> impl Fn(u32) -> Option<Vec<f32>> + 'a {
    |id| reader.original(id).expect("original reads")
}

#[test]
fn originals_come_back_bit_for_bit_from_the_buffer_the_graph_and_after_reopening() {
    let seed = 71;
    println!("seed {seed}");
    let dimensions = 24;
    let count = 2 * MERGE_THRESHOLD_VECTORS + 30;
    let rows = spread_rows(count + 1, dimensions, seed);
    // Id 7 is inserted again with row `count`: the last vector given is the one kept.
    let mut expected = rows.clone();
    expected.copy_within(count * dimensions.., 7 * dimensions);
    expected.truncate(count * dimensions);
    for metric in [Metric::Cosine, Metric::Euclidean, Metric::DotProduct] {
        for binary_quantized in [false, true] {
            let context = format!("{metric:?}, binary quantization {binary_quantized}");
            check_originals(
                metric,
                binary_quantized,
                &rows,
                &expected,
                dimensions,
                &context,
            );
        }
    }
}

/// Inserts the rows of `rows` but the last, then the last again as id 7, into a new graph and
/// checks every id's vector is its row of `expected`, bit for bit: from the writer (merged and
/// buffered), from a reader, after reopening, and after a merge of the buffer.
fn check_originals(
    metric: Metric,
    binary_quantized: bool,
    rows: &[f32],
    expected: &[f32],
    dimensions: usize,
    context: &str,
) {
    let count = expected.len() / dimensions;
    let ids = || 0..count as u32;
    let parameters = parameters(metric, dimensions, binary_quantized);
    let trees = MemoryTrees::new();
    let files = Files::new(&parameters);
    let graph = Graph::create_with_backends(&trees, "g", parameters, files.backends())
        .expect("the graph is created");
    assert!(graph.holds_originals(), "{context}");
    let mut writer = graph.writer(&trees).expect("writer");
    for id in ids() {
        writer
            .insert(id, row(rows, dimensions, id))
            .expect("insert");
    }
    writer
        .insert(7, row(rows, dimensions, count as u32))
        .expect("insert");
    assert!(writer.buffered() > 0, "some vectors wait in the buffer");
    assert_originals(
        &writer_original(&writer),
        expected,
        dimensions,
        ids(),
        context,
    );
    assert_eq!(writer.original(count as u32 + 5).expect("reads"), None);
    writer.finish().expect("finish");
    let reader = graph.reader(&trees).expect("reader");
    assert_eq!(reader.check().expect("check"), None, "{context}");
    assert_originals(
        &reader_original(&reader),
        expected,
        dimensions,
        ids(),
        context,
    );
    drop(reader);
    drop(graph);
    let graph = Graph::open_with_backends(&trees, "g", files.backends(), GraphOptions::default())
        .expect("the graph reopens");
    assert!(graph.holds_originals(), "{context} after reopening");
    let reader = graph.reader(&trees).expect("reader");
    assert_originals(
        &reader_original(&reader),
        expected,
        dimensions,
        ids(),
        context,
    );
    // A merge of the buffered vectors leaves every vector as it was.
    let mut writer = graph.writer(&trees).expect("writer");
    writer.merge().expect("merge");
    assert_eq!(writer.buffered(), 0);
    assert_originals(
        &writer_original(&writer),
        expected,
        dimensions,
        ids(),
        context,
    );
}

#[test]
fn a_graph_of_codes_without_floats_holds_no_originals() {
    let parameters = parameters(Metric::Hamming, 64, true);
    let trees = MemoryTrees::new();
    let files = Files::new(&parameters);
    let graph = Graph::create_with_backends(&trees, "g", parameters, files.backends())
        .expect("the graph is created");
    assert!(!graph.holds_originals());
    let mut writer = graph.writer(&trees).expect("writer");
    writer.insert(1, &[0.5; 64]).expect("insert");
    assert_eq!(writer.original(1).expect("reads"), None);
}

/// The mean recall@10 of `reader` against brute force over `rows` (normalised for cosine by
/// `brute_force`), and checks every hit's distance against the reference distance.
fn checked_recall(
    reader: &GraphReader<'_>,
    metric: Metric,
    rows: &[f32],
    queries: &[f32],
    dimensions: usize,
    candidates: Option<&RoaringBitmap>,
) -> f64 {
    let mut scratch = SearchScratch::new();
    let mut total = 0.0;
    for query in queries.chunks_exact(dimensions) {
        let mut request = SearchRequest::new(query, 10);
        request.candidates = candidates;
        let hits = reader.search(&request, &mut scratch).expect("search");
        let truth = brute_force(metric, rows, dimensions, query, 10, candidates);
        let found: Vec<u32> = hits.iter().map(|hit| hit.internal_id).collect();
        total += recall(&found, &truth);
        let mut prepared_query = query.to_vec();
        metric.prepare(&mut prepared_query);
        for hit in &hits {
            let mut prepared = row(rows, dimensions, hit.internal_id).to_vec();
            metric.prepare(&mut prepared);
            let expected = metric.reference_distance(&prepared_query, &prepared);
            assert!(
                (hit.distance - expected).abs() <= 1e-4,
                "id {}: {} vs {expected}",
                hit.internal_id,
                hit.distance
            );
        }
    }
    total / (queries.len() / dimensions) as f64
}

#[test]
fn cosine_searches_rank_like_brute_force_over_the_normalised_vectors() {
    let seed = 73;
    println!("seed {seed}");
    let count = 600;
    // 256 dimensions: full-precision readers search with a distance sketch too.
    for (dimensions, binary_quantized) in [(32, false), (256, false), (32, true)] {
        let rows = spread_rows(count, dimensions, seed);
        let queries = spread_rows(20, dimensions, seed + 7);
        let parameters = parameters(Metric::Cosine, dimensions, binary_quantized);
        let trees = MemoryTrees::new();
        let files = Files::new(&parameters);
        let graph = Graph::create_with_backends(&trees, "g", parameters, files.backends())
            .expect("the graph is created");
        let mut writer = graph.writer(&trees).expect("writer");
        for (id, vector) in rows.chunks_exact(dimensions).enumerate() {
            writer.insert(id as u32, vector).expect("insert");
        }
        writer.finish().expect("finish");
        let reader = graph.reader(&trees).expect("reader");
        // `check` builds the dense adjacency, so searches use it (and the sketch).
        assert_eq!(reader.check().expect("check"), None);
        let context = format!("{dimensions} dimensions, binary quantization {binary_quantized}");
        let graph_recall =
            checked_recall(&reader, Metric::Cosine, &rows, &queries, dimensions, None);
        println!("{context}: recall@10 {graph_recall:.3}");
        assert!(graph_recall >= 0.95, "{context}: {graph_recall}");
        // A filter this selective makes the search exact (a scan of the candidates).
        let candidates: RoaringBitmap = (0..count as u32).step_by(9).collect();
        let exact = checked_recall(
            &reader,
            Metric::Cosine,
            &rows,
            &queries,
            dimensions,
            Some(&candidates),
        );
        assert!(exact >= 0.999, "{context}: exact recall {exact}");
    }
}

/// Creates an empty format-1 vector file in `io`, as versions before format 2 wrote them.
fn create_format_1_file(io: &SimulatedIo, parameters: &GraphParameters, full: bool) {
    let graph_layouts = layouts(parameters);
    let layout = if full {
        graph_layouts.1.expect("a full vector file")
    } else {
        graph_layouts.0
    };
    let file = VectorFile::open_io_normalised(Box::new(io.clone()), layout)
        .expect("a format-1 file is created");
    assert_eq!(file.format_version(), FORMAT_VERSION_NORMALISED);
}

#[test]
fn a_format_1_file_opens_searches_takes_inserts_in_its_format_and_holds_no_originals() {
    let seed = 79;
    println!("seed {seed}");
    let dimensions = 32;
    let count = 400;
    let rows = spread_rows(count, dimensions, seed);
    let queries = spread_rows(20, dimensions, seed + 7);
    // Full precision (the navigation file holds floats), and binary quantization whose full
    // vectors are in a format-1 file beside a new codes file.
    for binary_quantized in [false, true] {
        let parameters = parameters(Metric::Cosine, dimensions, binary_quantized);
        let files = Files::new(&parameters);
        let float_io = files.full.as_ref().unwrap_or(&files.navigation);
        create_format_1_file(float_io, &parameters, binary_quantized);
        let trees = MemoryTrees::new();
        let graph = Graph::create_with_backends(&trees, "g", parameters, files.backends())
            .expect("the graph opens the format-1 file");
        let float_file = graph.full_file().unwrap_or(graph.navigation_file());
        assert_eq!(float_file.format_version(), FORMAT_VERSION_NORMALISED);
        assert_eq!(
            graph.navigation_file().format_version() == FORMAT_VERSION,
            binary_quantized
        );
        assert!(!graph.holds_originals());
        let mut writer = graph.writer(&trees).expect("writer");
        for (id, vector) in rows.chunks_exact(dimensions).enumerate() {
            writer.insert(id as u32, vector).expect("insert");
        }
        writer.finish().expect("finish");
        drop(graph);
        let graph =
            Graph::open_with_backends(&trees, "g", files.backends(), GraphOptions::default())
                .expect("the graph reopens");
        assert!(!graph.holds_originals());
        let float_file = graph.full_file().unwrap_or(graph.navigation_file());
        let records = float_file.records(count as u32);
        let reader = graph.reader(&trees).expect("reader");
        // Each record is what format 1 holds: the normalised vector and a 0 scale word.
        let mut expected = Vec::new();
        for record in 0..count as u32 {
            let id = records.internal_id(record);
            let mut prepared = row(&rows, dimensions, id).to_vec();
            Metric::Cosine.prepare(&mut prepared);
            expected.clear();
            encode_record(records.layout(), id, 0, &prepared, &mut expected);
            assert_eq!(
                records.record_bytes(record),
                expected.as_slice(),
                "record {record}"
            );
            let stored = reader.original(id).expect("reads").expect("a vector");
            assert_eq!(bits(&stored), bits(&prepared), "id {id}");
        }
        assert_eq!(reader.check().expect("check"), None);
        let found = checked_recall(&reader, Metric::Cosine, &rows, &queries, dimensions, None);
        println!("format 1, binary quantization {binary_quantized}: recall@10 {found:.3}");
        assert!(found >= 0.95, "{found}");
    }
}
